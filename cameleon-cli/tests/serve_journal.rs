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

/// Explores `fork_join.cm` served with `--journal journal`: runs it to its end, goes back to
/// step 3 (a checkout of an earlier position), re-fires there (a second branch), steps twice
/// and backs once, then checks the first branch out at step 5. Returns the run id, the page's
/// history and the last state; Reset then lets go of the run (its lease, on JetStream) and the
/// server is killed.
fn explore(journal: &str) -> (String, Value, Value) {
    let server = Serve::start(
        CAMELEON,
        &examples().join("fork_join.cm"),
        &["--journal", journal],
    );
    let id = get(&server, "/api/state")["run_id"]
        .as_str()
        .expect("a journaled run has an id")
        .to_owned();
    assert_eq!(post(&server, "/api/run", "")["end"], "COMPLETED");
    assert_eq!(post(&server, "/api/goto", r#"{"step": 3}"#)["step"], 3);
    let s = post(&server, "/api/refire", "");
    assert_eq!(s["branches"], 2, "{s}");
    post(&server, "/api/step", "");
    post(&server, "/api/step", "");
    let s = post(&server, "/api/back", "");
    assert_eq!(s["redo"], 1, "{s}");
    let page = get(&server, "/api/history");
    let other = page["branches"]
        .as_array()
        .unwrap()
        .iter()
        .position(|b| b["current"] == false)
        .expect("the branch re-firing left");
    let state = post(
        &server,
        "/api/goto",
        &format!(r#"{{"branch": {other}, "step": 5}}"#),
    );
    assert_eq!(state["step"], 5, "{state}");
    let page = get(&server, "/api/history");
    post(&server, "/api/reset", "");
    drop(server);
    (id, page, state)
}

/// Back, re-fire and checkout through `serve` are journaled on JetStream as in a journal file:
/// `history` shows the same tree (both branches, the same one current), the page's history is
/// the same, and `resume` goes on from the checked-out position with the same trace and end.
#[test]
fn back_refire_and_checkout_are_journaled_on_jetstream_as_in_a_file() {
    let dir = TempDir::new("serve-journal-tree");
    let nats = cameleon_nats::NatsServer::start_with(&["-js", "-sd", s(&dir.join("store"))])
        .unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();
    let db = dir.join("runs.db");
    let (file_id, file_page, file_state) = explore(s(&db));
    let (bus_id, bus_page, bus_state) = explore(&url);
    assert_eq!(bus_page, file_page);
    let without_id = |mut v: Value| {
        v.as_object_mut().unwrap().remove("run_id");
        v
    };
    assert_eq!(without_id(bus_state), without_id(file_state));

    let history = |store: &str, id: &str| {
        let o = CAMELEON.run(&["history", store, id, "--json"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        json_out(&o)
    };
    let (h_file, h_bus) = (history(s(&db), &file_id), history(&url, &bus_id));
    assert_eq!(h_bus, h_file);
    let branches = h_bus["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{h_bus}");
    assert_eq!(
        branches.iter().filter(|b| b["current"] == true).count(),
        1,
        "{h_bus}"
    );
    // The text listing too.
    let text = |store: &str, id: &str| {
        let o = CAMELEON.run(&["history", store, id]);
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(text(&url, &bus_id), text(s(&db), &file_id));

    // Resumed from the checked-out position: the same steps, sinks and trace.
    let base = examples();
    let resume = |store: &str, id: &str, trace: &Path| {
        let o = CAMELEON.run(&[
            "resume",
            store,
            id,
            "--json",
            "--trace",
            s(trace),
            "--base",
            s(&base),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        without_id(json_out(&o))
    };
    let (t_file, t_bus) = (dir.join("file.jsonl"), dir.join("bus.jsonl"));
    let r_file = resume(s(&db), &file_id, &t_file);
    let r_bus = resume(&url, &bus_id, &t_bus);
    assert_eq!(r_bus, r_file);
    assert_eq!(r_bus["end"], "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(&t_bus).unwrap(),
        std::fs::read_to_string(&t_file).unwrap()
    );
    assert_eq!(history(&url, &bus_id), history(s(&db), &file_id));
}
