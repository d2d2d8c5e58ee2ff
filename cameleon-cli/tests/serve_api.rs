//! `cameleon serve`'s JSON API over HTTP (no browser): the routes and keys of docs/cli.md, the
//! token, the JSON content type, malformed requests, an invalid served file, Save, and events
//! to every subscriber.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
        .join("serve-api")
        .join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `cameleon serve FILE --port 0 ARGS…`: the process and `host:port`.
fn serve(file: &Path, args: &[&str]) -> (Proc, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args(["serve", file.to_str().unwrap(), "--port", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cameleon serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (Proc(child), addr)
}

/// One HTTP/1.1 request; the status and the body (parsed as JSON when it is).
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
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

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn post(addr: &str, path: &str, body: &str) -> (u16, Value) {
    request(addr, "POST", path, &[JSON], body)
}

fn get(addr: &str, path: &str) -> (u16, Value) {
    request(addr, "GET", path, &[], "")
}

#[test]
fn the_state_and_the_controls_follow_the_engine() {
    let (_p, addr) = serve(&examples().join("fork_join.cm"), &[]);
    let (code, s) = get(&addr, "/api/state");
    assert_eq!(code, 200);
    assert_eq!(s["step"], 0);
    assert_eq!(s["end"], Value::Null);
    assert_eq!(s["fireable"], json!(["word", "status"]));
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "EMPTY");
    assert_eq!(s["waiting"], json!([]));
    let (_, s) = post(&addr, "/api/step", "");
    assert_eq!(s["step"], 1);
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "NEW");
    let (_, s) = post(&addr, "/api/step", "{}");
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "OLD");
    let (_, s) = post(&addr, "/api/back", "");
    assert_eq!(s["step"], 1);
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "NEW");
    let (_, s) = post(&addr, "/api/run", "");
    assert_eq!(s["end"], "COMPLETED");
    assert_eq!(s["step"], 9);
    let (_, h) = get(&addr, "/api/history");
    assert_eq!(h["entries"].as_array().unwrap().len(), 9);
    assert_eq!(h["entries"][0], json!({"step": 1, "ops": ["word"]}));
    let (_, s) = post(&addr, "/api/goto", r#"{"step": 3}"#);
    assert_eq!(s["step"], 3);
    assert_eq!(s["redo"], 6);
    let (_, s) = post(&addr, "/api/refire", "");
    assert_eq!(
        s["branches"], 2,
        "re-firing from step 3 left the old future as a branch"
    );
    let (_, s) = post(&addr, "/api/reset", "");
    assert_eq!(s["step"], 0);
    assert_eq!(s["redo"], 0);
}

#[test]
fn malformed_requests_get_a_400_with_a_json_error() {
    let (_p, addr) = serve(&examples().join("ask.cm"), &[]);
    let (code, e) = request(&addr, "POST", "/api/step", &[], "");
    assert_eq!(code, 415, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("Content-Type: application/json")
    );
    let (code, e) = request(
        &addr,
        "POST",
        "/api/step",
        &[("Content-Type", "text/plain")],
        "x",
    );
    assert_eq!(code, 415, "{e}");
    let (code, e) = post(&addr, "/api/step", "{not json");
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed request"),
        "{e}"
    );
    let (code, e) = post(&addr, "/api/provide/approve", r#"{"answer": true}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("expected a JSON body {\"value\": …}"),
        "{e}"
    );
    let (code, e) = post(&addr, "/api/goto", r#"{"step": "three"}"#);
    assert_eq!(code, 400, "{e}");
    let (code, e) = get(&addr, "/api/nothing");
    assert_eq!(code, 404);
    assert!(e["error"].is_string());
}

#[test]
fn an_answer_through_the_api_and_a_wrong_one() {
    let (_p, addr) = serve(&examples().join("ask.cm"), &[]);
    let (_, s) = post(&addr, "/api/run", "");
    assert_eq!(s["end"], "WAITING");
    assert_eq!(s["waiting"][0]["op"], "approve");
    assert_eq!(s["waiting"][0]["prompt"], "Send this letter?");
    assert_eq!(s["waiting"][0]["type"], "DataBool");
    assert_eq!(
        s["waiting"][0]["context"],
        "\"Dear Grace, the pipeline is ready.\""
    );
    let (code, e) = post(&addr, "/api/provide/approve", r#"{"value": "yes"}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("is not a DataBool"),
        "{e}"
    );
    assert_eq!(
        get(&addr, "/api/state").1["end"],
        "WAITING",
        "still waiting"
    );
    let (code, e) = post(&addr, "/api/provide/draft", r#"{"value": "x"}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("asks no question"),
        "{e}"
    );
    assert_eq!(
        post(&addr, "/api/provide/approve", r#"{"value": false}"#).0,
        200
    );
    assert_eq!(
        post(&addr, "/api/provide/reviewer", r#"{"value": "Ada"}"#).0,
        200
    );
    let (_, s) = post(&addr, "/api/run", "");
    assert_eq!(s["end"], "COMPLETED");
    assert_eq!(
        s["values"]["send.out_false -> kept.in_data"],
        "\"Dear Grace, the pipeline is ready.\""
    );
}

#[test]
fn a_token_is_required_on_every_request_when_given() {
    let (_p, addr) = serve(&examples().join("fork_join.cm"), &["--token", "s3cret"]);
    assert_eq!(get(&addr, "/api/state").0, 401);
    assert_eq!(get(&addr, "/").0, 401);
    assert_eq!(
        request(
            &addr,
            "GET",
            "/api/state",
            &[("Authorization", "Bearer wrong!")],
            ""
        )
        .0,
        401
    );
    assert_eq!(
        request(
            &addr,
            "GET",
            "/api/state",
            &[("Authorization", "Bearer s3cret")],
            ""
        )
        .0,
        200
    );
    assert_eq!(get(&addr, "/api/state?token=s3cret").0, 200);
    assert_eq!(get(&addr, "/?token=s3cret").0, 200);
    let (code, _) = request(
        &addr,
        "POST",
        "/api/step",
        &[JSON, ("Authorization", "Bearer s3cret")],
        "",
    );
    assert_eq!(code, 200);
}

#[test]
fn binding_beyond_loopback_requires_a_token() {
    let o = Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args([
            "serve",
            examples().join("fork_join.cm").to_str().unwrap(),
            "--bind",
            "0.0.0.0",
            "--port",
            "0",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("give a secret with --token"), "{err}");
}

#[test]
fn an_invalid_file_opens_with_its_problems_and_save_writes_only_a_valid_canonical_net() {
    let dir = scratch("invalid");
    let file = dir.join("net.cm");
    let bad = "# a comment kept by Save\noperators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: b, type: sink}\nconnections:\n  - {from: a.out_dat, to: b.in_data}\n";
    std::fs::write(&file, bad).unwrap();
    let (_p, addr) = serve(&file, &[]);
    let (_, src) = get(&addr, "/api/source");
    assert_eq!(src["text"], bad);
    let at_6: Vec<&Value> = src["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["line"] == 6)
        .collect();
    assert_eq!(at_6.len(), 1, "{src}");
    assert!(
        at_6[0]["message"]
            .as_str()
            .unwrap()
            .contains("no output `out_dat`"),
        "{src}"
    );
    // The Visual view shows what could be read: both operators, not the broken connection.
    let (code, svg) = get(&addr, "/api/svg");
    assert_eq!(code, 200);
    let svg = svg.as_str().unwrap();
    assert!(
        svg.contains("<g data-op=\"a\">") && svg.contains("<g data-op=\"b\">"),
        "{svg}"
    );
    assert!(!svg.contains("data-conn"), "{svg}");
    let (_, s) = get(&addr, "/api/state");
    assert_eq!(s["valid"], false);
    assert_eq!(post(&addr, "/api/step", "").0, 409);

    // Check while typing: problems with their lines, nothing written.
    let (_, c) = post(
        &addr,
        "/api/check",
        &json!({"text": "operators: [}"}).to_string(),
    );
    assert_eq!(c["valid"], false);
    assert!(c["problems"][0]["line"].as_u64().is_some());
    // Save refuses an invalid text and leaves the file alone.
    let (code, e) = post(&addr, "/api/save", &json!({"text": bad}).to_string());
    assert_eq!(code, 400);
    assert!(
        e["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["line"] == 6),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
    // A valid text is saved in canonical form, comment block kept, and served.
    let good = bad.replace("out_dat,", "out_data,");
    let (code, r) = post(&addr, "/api/save", &json!({"text": good}).to_string());
    assert!(
        get(&addr, "/api/svg")
            .1
            .as_str()
            .unwrap()
            .contains("data-conn=\"a.out_data -&gt; b.in_data\"")
    );
    assert_eq!(code, 200, "{r}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(r["text"], written.as_str());
    assert!(
        written.starts_with("# a comment kept by Save\n"),
        "{written}"
    );
    assert!(
        written.contains("  - from: a.out_data\n    to: b.in_data\n"),
        "canonical: {written}"
    );
    assert_eq!(r["state"]["valid"], true);
    assert_eq!(get(&addr, "/api/svg").0, 200);
    assert_eq!(post(&addr, "/api/run", "").1["end"], "COMPLETED");
    // Only the served file is ever written.
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["net.cm"]);
}

/// Reads an event stream until it has seen a `state` event with `"step":n`; returns the engine
/// events (their `event` names) seen before it.
fn wait_for_state(stream: &mut BufReader<TcpStream>, n: u64) -> Vec<String> {
    let mut seen = Vec::new();
    let (mut name, mut data) = (None::<String>, None::<String>);
    let mut line = String::new();
    loop {
        line.clear();
        if stream.read_line(&mut line).unwrap() == 0 {
            panic!("the event stream ended; saw {seen:?}");
        }
        let l = line.trim_end();
        if let Some(d) = l.strip_prefix("data: ") {
            data = Some(d.to_owned());
        } else if let Some(e) = l.strip_prefix("event: ") {
            name = Some(e.to_owned());
        } else if l.is_empty() {
            // The end of an event (or of a chunk of the chunked response).
            if let Some(d) = data.take() {
                let v: Value = serde_json::from_str(&d).unwrap();
                match name.take().as_deref() {
                    Some("state") if v["step"] == n => return seen,
                    Some("state") => {}
                    _ => seen.push(v["event"].as_str().unwrap_or("").to_owned()),
                }
            }
        }
    }
}

fn subscribe(addr: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    r
}

#[test]
fn every_subscriber_gets_the_engine_events_and_the_state() {
    let (_p, addr) = serve(&examples().join("fork_join.cm"), &[]);
    let mut first = subscribe(&addr);
    let mut second = subscribe(&addr);
    wait_for_state(&mut first, 0);
    wait_for_state(&mut second, 0);
    post(&addr, "/api/step", "");
    for s in [&mut first, &mut second] {
        let events = wait_for_state(s, 1);
        assert_eq!(
            events,
            [
                "step_started",
                "firing_started",
                "firing_finished",
                "step_committed"
            ],
            "each subscriber sees the step's engine events, then the state"
        );
    }
}

#[test]
fn a_file_that_is_not_even_yaml_has_nothing_to_draw() {
    let dir = scratch("not-yaml");
    let file = dir.join("net.cm");
    std::fs::write(&file, "operators: [\n").unwrap();
    let (_p, addr) = serve(&file, &[]);
    let (code, e) = get(&addr, "/api/svg");
    assert_eq!(code, 409);
    assert!(
        e["error"].as_str().unwrap().contains("nothing to draw"),
        "{e}"
    );
    assert!(
        !get(&addr, "/api/source").1["problems"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn pause_stops_a_run_where_it_is() {
    let dir = scratch("pause");
    let file = dir.join("spin.cm");
    std::fs::write(
        &file,
        "name: spin\nconfig: {max_loop_iterations: 100000000}\noperators:\n  - {id: zero, type: const, params: {value: 0}}\n  - {id: loop, type: merge}\n  - {id: inc, type: counter}\n  - {id: check, type: guard, params: {continue_if: {lt: 100000000}}}\n  - {id: done, type: sink}\nconnections:\n  - {from: zero.out_data, to: loop.in_a}\n  - {from: check.out_continue, to: loop.in_b}\n  - {from: loop.out_data, to: inc.in_data}\n  - {from: inc.out_data, to: check.in_data}\n  - {from: check.out_exit, to: done.in_data}\n",
    )
    .unwrap();
    let (_p, addr) = serve(&file, &[]);
    let runner = {
        let addr = addr.clone();
        std::thread::spawn(move || post(&addr, "/api/run", ""))
    };
    // Wait until the run is under way (a state that says so), then pause it.
    loop {
        let (_, s) = get(&addr, "/api/state");
        if s["running"] == true && s["step"].as_u64().unwrap() > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        post(&addr, "/api/step", "").0,
        409,
        "no step while a run is in progress"
    );
    assert_eq!(post(&addr, "/api/pause", "").0, 200);
    let (code, s) = runner.join().unwrap();
    assert_eq!(code, 200);
    assert_eq!(s["running"], false);
    assert_eq!(s["end"], Value::Null, "paused, not ended: {s}");
    let paused_at = s["step"].as_u64().unwrap();
    assert!(paused_at > 0);
    // Nothing moves while paused; a step goes on from there.
    assert_eq!(get(&addr, "/api/state").1["step"], paused_at);
    assert_eq!(post(&addr, "/api/step", "").1["step"], paused_at + 1);
}

#[test]
fn serve_has_help_with_examples() {
    let o = Command::new(env!("CARGO_BIN_EXE_cameleon"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Examples:\n  cameleon serve "), "{out}");
    assert!(out.contains("--token"), "{out}");
}

#[test]
fn ctrl_c_stops_the_server_even_with_an_event_stream_open() {
    let (mut p, addr) = serve(&examples().join("fork_join.cm"), &[]);
    let mut stream = subscribe(&addr);
    wait_for_state(&mut stream, 0);
    let pid = p.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = p.0.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = status.expect("the server stopped after Ctrl-C");
    assert_eq!(status.code(), Some(0));
    drop(stream);
    p.0 = Command::new("true").spawn().unwrap(); // nothing left to kill
}

#[test]
fn a_served_model_pipeline_runs_with_the_capabilities_of_its_folder() {
    // No cameleon.yaml in examples/: the offline defaults (extractive, hash, flat).
    let (_p, addr) = serve(&examples().join("rag.cm"), &[]);
    let (_, s) = post(&addr, "/api/run", "");
    assert_eq!(s["end"], "COMPLETED", "{s}");
}
