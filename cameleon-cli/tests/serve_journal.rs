//! `cameleon serve --journal DB` (docs/cli.md, "serve"): the served run is journaled — steps,
//! answers, Back — so `history` shows what the page showed and `resume` finishes it without
//! running any operator again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn scratch(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("serve-journal")
        .join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `cameleon serve FILE --port 0 ARGS…`: the process, `host:port`, and the first line of stderr.
fn serve(file: &Path, args: &[&str]) -> (Proc, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args(["serve", file.to_str().unwrap(), "--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cameleon serve starts");
    let mut err = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut err)
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}; stderr {err:?}"))
        .to_owned();
    (Proc(child), addr, err)
}

fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status: u16 = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())),
    )
}

fn post(addr: &str, path: &str, body: &str) -> Value {
    let (code, v) = request(addr, "POST", path, body);
    assert_eq!(code, 200, "POST {path}: {v}");
    v
}

fn get(addr: &str, path: &str) -> Value {
    let (code, v) = request(addr, "GET", path, "");
    assert_eq!(code, 200, "GET {path}: {v}");
    v
}

fn cameleon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_served_run_is_journaled_and_resume_finishes_it_without_running_an_operator_again() {
    let dir = scratch("resume");
    let db = dir.join("runs.db");
    let file = examples().join("ask.cm");
    let (server, addr, err) = serve(&file, &["--journal", s(&db)]);
    let state = get(&addr, "/api/state");
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
    assert_eq!(post(&addr, "/api/run", "")["end"], "WAITING");
    post(&addr, "/api/provide/approve", r#"{"value": true}"#);
    post(&addr, "/api/provide/reviewer", r#"{"value": "Ada"}"#);
    let waited = get(&addr, "/api/state")["step"].as_u64().unwrap();
    for _ in 0..4 {
        post(&addr, "/api/step", "");
    }
    let s_back = post(&addr, "/api/back", "");
    assert_eq!(s_back["step"].as_u64().unwrap(), waited + 3);
    assert_eq!(s_back["redo"], 1);
    let page = get(&addr, "/api/history");
    drop(server); // killed: no chance to flush anything on the way out

    // `history` shows what the page showed: the applied steps, then the one Back undid.
    let o = cameleon(&["history", s(&db), &id, "--json"]);
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
    let runs = json_out(&cameleon(&["runs", s(&db), "--json"]));
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
    let o = cameleon(&["resume", s(&db), &id, "--json", "--trace", s(&trace)]);
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
    let o = cameleon(&["run", s(&file), "--journal", s(&db2)]);
    assert_eq!(o.status.code(), Some(6));
    let trace2 = dir.join("cli.jsonl");
    let o = cameleon(&[
        "resume",
        s(&db2),
        "--answer",
        "approve=yes",
        "--answer",
        "reviewer=Ada",
        "--trace",
        s(&trace2),
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
    let dir = scratch("reset");
    let db = dir.join("runs.db");
    let (_server, addr, _) = serve(&examples().join("fork_join.cm"), &["--journal", s(&db)]);
    let first = get(&addr, "/api/state")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    post(&addr, "/api/step", "");
    post(&addr, "/api/step", "");
    let after = post(&addr, "/api/reset", "");
    let second = after["run_id"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(after["step"], 0);
    let end = post(&addr, "/api/run", "");
    assert_eq!(end["end"], "COMPLETED");
    let runs = json_out(&cameleon(&["runs", s(&db), "--json"]));
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
    let o = cameleon(&["resume", s(&db), &first, "--json"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json_out(&o)["steps"], end["step"]);
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_at_start() {
    // `--journal` names a file that is not a journal: exit 2, the file untouched.
    let dir = scratch("refused");
    let db = dir.join("not-a-journal.db");
    std::fs::write(&db, "hello").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args([
            "serve",
            s(&examples().join("linear.cm")),
            "--port",
            "0",
            "--journal",
            s(&db),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a Caméléon journal"), "{err}");
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "hello");
}
