//! `cameleon serve --journal DB` (docs/cli.md, "serve"): the served run is journaled — steps,
//! answers, Back — so `history` shows what the page showed and `resume` finishes it without
//! running any operator again.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Bin, Serve, TempDir, json as json_out};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// `POST path` on the server, which must answer 200; the body.
fn post(server: &Serve, path: &str, body: &str) -> Value {
    let (code, v) = server.post(path, body);
    assert_eq!(code, 200, "POST {path}: {v}");
    v
}

/// `GET path` on the server, which must answer 200; the body.
fn get(server: &Serve, path: &str) -> Value {
    let (code, v) = server.get(path);
    assert_eq!(code, 200, "GET {path}: {v}");
    v
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_served_run_is_journaled_and_resume_finishes_it_without_running_an_operator_again() {
    let dir = TempDir::new("serve-journal-resume");
    let db = dir.join("runs.db");
    let file = examples().join("ask.cm");
    let server = Serve::start(CAMELEON, &file, &["--journal", s(&db)]);
    let err = server.stderr_line(1);
    let state = get(&server, "/api/state");
    let id = state["run_id"]
        .as_str()
        .expect("a journaled run has an id")
        .to_owned();
    assert_eq!(
        err.trim_end(),
        format!("run {id}"),
        "the first line on stderr"
    );

    // Run to WAITING, answer both questions through the API, step until both `ask`s have fired
    // (an answer is journaled with the firing that uses it), and back once over the last.
    assert_eq!(post(&server, "/api/run", "")["end"], "WAITING");
    post(&server, "/api/provide/approve", r#"{"value": true}"#);
    post(&server, "/api/provide/reviewer", r#"{"value": "Ada"}"#);
    let waited = get(&server, "/api/state")["step"].as_u64().unwrap();
    for _ in 0..4 {
        post(&server, "/api/step", "");
    }
    let s_back = post(&server, "/api/back", "");
    assert_eq!(s_back["step"].as_u64().unwrap(), waited + 3);
    assert_eq!(s_back["redo"], 1);
    let page = get(&server, "/api/history");
    drop(server); // killed: no chance to flush anything on the way out

    // `history` shows what the page showed: the applied steps, then the one Back undid.
    let o = CAMELEON.run(&["history", s(&db), &id, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let h = json_out(&o);
    let on_disk: Vec<Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"step": e["step"], "ops": e["ops"]}))
        .collect();
    let mut shown: Vec<Value> = page["entries"].as_array().unwrap().clone();
    shown.extend(page["redo"].as_array().unwrap().iter().cloned());
    assert_eq!(on_disk, shown);
    assert_eq!(h["branches"].as_array().unwrap().len(), 1);
    let runs = json_out(&CAMELEON.run(&["runs", s(&db), "--json"]));
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(runs[0]["status"], "RUNNING");
    assert_eq!(runs[0]["steps"].as_u64().unwrap(), waited + 3);
    let fired: Vec<&Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["ops"].as_array().unwrap())
        .collect();
    assert!(
        fired.contains(&&json!("approve")) && fired.contains(&&json!("reviewer")),
        "{h}"
    );

    // Resume without any answer: had an `ask` fired again, the run would stop WAITING (exit 6).
    let trace = dir.join("resumed.jsonl");
    // The journal is not kept beside the net: the user names its folder.
    let base = examples();
    let o = CAMELEON.run(&[
        "resume",
        s(&db),
        &id,
        "--json",
        "--trace",
        s(&trace),
        "--base",
        s(&base),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = json_out(&o);
    assert_eq!(r["end"], "COMPLETED");
    assert_eq!(r["sinks"]["reviewers"], json!(["Ada"]));
    assert_eq!(
        r["sinks"]["sent"],
        json!(["Dear Grace, the pipeline is ready."])
    );

    // The same run driven by the CLI (WAITING, then resumed with the answers) has the same trace.
    let db2 = dir.join("cli.db");
    let o = CAMELEON.run(&["run", s(&file), "--journal", s(&db2)]);
    assert_eq!(o.status.code(), Some(6));
    let trace2 = dir.join("cli.jsonl");
    let o = CAMELEON.run(&[
        "resume",
        s(&db2),
        "--answer",
        "approve=yes",
        "--answer",
        "reviewer=Ada",
        "--trace",
        s(&trace2),
        "--base",
        s(&base),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        std::fs::read_to_string(&trace2).unwrap()
    );
}

#[test]
fn reset_starts_a_new_journaled_run_and_the_old_one_stays_resumable() {
    let dir = TempDir::new("serve-journal-reset");
    let db = dir.join("runs.db");
    let server = Serve::start(
        CAMELEON,
        &examples().join("fork_join.cm"),
        &["--journal", s(&db)],
    );
    let first = get(&server, "/api/state")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    post(&server, "/api/step", "");
    post(&server, "/api/step", "");
    let after = post(&server, "/api/reset", "");
    let second = after["run_id"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(after["step"], 0);
    let end = post(&server, "/api/run", "");
    assert_eq!(end["end"], "COMPLETED");
    let runs = json_out(&CAMELEON.run(&["runs", s(&db), "--json"]));
    let status = |id: &str| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| (r["status"].clone(), r["steps"].clone()))
            .unwrap()
    };
    assert_eq!(status(&first), (json!("RUNNING"), json!(2)));
    assert_eq!(status(&second), (json!("COMPLETED"), end["step"].clone()));
    let base = examples();
    let o = CAMELEON.run(&["resume", s(&db), &first, "--json", "--base", s(&base)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json_out(&o)["steps"], end["step"]);
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_at_start() {
    // `--journal` names a file that is not a journal: exit 2, the file untouched.
    let dir = TempDir::new("serve-journal-refused");
    let db = dir.join("not-a-journal.db");
    std::fs::write(&db, "hello").unwrap();
    let o = CAMELEON.run(&[
        "serve",
        s(&examples().join("linear.cm")),
        "--port",
        "0",
        "--journal",
        s(&db),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a Caméléon journal"), "{err}");
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "hello");
}

/// `serve --journal nats://…`: the served run is journaled on JetStream (a real `nats-server
/// -js` on a free loopback port): its lease is held while it is served (a `resume` is refused,
/// naming the holder), the bus's history is the page's, and once Reset lets go of it, `resume`
/// finishes it as a plain run ends.
#[test]
fn a_run_served_on_jetstream_is_journaled_there_and_resumed_once_let_go() {
    let dir = TempDir::new("serve-journal-js");
    let nats = cameleon_nats::NatsServer::start_with(&["-js", "-sd", s(&dir.join("store"))])
        .unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();
    let file = examples().join("fork_join.cm");
    let server = Serve::start(CAMELEON, &file, &["--journal", &url]);
    let err = server.stderr_line(1);
    let first = get(&server, "/api/state")["run_id"]
        .as_str()
        .expect("a journaled run has an id")
        .to_owned();
    assert_eq!(err.trim_end(), format!("run {first}"));
    for _ in 0..3 {
        post(&server, "/api/step", "");
    }
    assert_eq!(post(&server, "/api/back", "")["redo"], 1);
    let page = get(&server, "/api/history");
    let base = examples();

    // Served: its lease is held.
    let o = CAMELEON.run(&["resume", &url, &first, "--base", s(&base)]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(e.contains("is being resumed by process"), "{e}");

    // The bus holds what the page showed: the applied steps, then the one Back undid.
    let o = CAMELEON.run(&["history", &url, &first, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let h = json_out(&o);
    let on_bus: Vec<Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!({"step": e["step"], "ops": e["ops"]}))
        .collect();
    let mut shown: Vec<Value> = page["entries"].as_array().unwrap().clone();
    shown.extend(page["redo"].as_array().unwrap().iter().cloned());
    assert_eq!(on_bus, shown);
    assert_eq!(on_bus.len(), 3);

    // Reset starts a new run and lets go of the first: `resume` finishes it.
    let second = post(&server, "/api/reset", "")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);
    let plain = json_out(&CAMELEON.run(&["run", s(&file), "--json"]));
    let o = CAMELEON.run(&["resume", &url, &first, "--json", "--base", s(&base)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = json_out(&o);
    assert_eq!(r["end"], "COMPLETED");
    assert!(plain["steps"].as_u64().unwrap() > 3, "{plain}");
    assert_eq!(r["steps"], plain["steps"]);
    assert_eq!(r["sinks"], plain["sinks"]);
    let runs = json_out(&CAMELEON.run(&["runs", &url, "--json"]));
    let status = |id: &str| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].clone())
            .unwrap()
    };
    assert_eq!(status(&first), json!("COMPLETED"));
    assert_eq!(status(&second), json!("RUNNING"));
}

#[test]
fn a_nats_journal_that_cannot_be_reached_is_refused_at_start() {
    let file = examples().join("fork_join.cm");
    let o = CAMELEON.run(&[
        "serve",
        s(&file),
        "--port",
        "0",
        "--journal",
        "nats://127.0.0.1:9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(e.contains("cannot connect to NATS"), "{e}");
}
