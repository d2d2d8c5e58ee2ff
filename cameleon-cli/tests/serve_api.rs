//! `cameleon serve`'s JSON API over HTTP (no browser): the routes and keys of docs/cli.md, the
//! JSON content type, malformed requests, an invalid served file, Save, events to every
//! subscriber, and what the page shows of results (outputs, the inspector). Every request
//! carries the token the server printed (docs/cli.md, "serve"; the guards are tested in
//! `serve_guard.rs`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::serve::request;
use test_support::{Bin, Serve, Signal, TempDir, WAIT_TIMEOUT};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

#[test]
fn the_state_and_the_controls_follow_the_engine() {
    let server = Serve::start(CAMELEON, &examples().join("fork_join.cm"), &[]);
    let (code, s) = server.get("/api/state");
    assert_eq!(code, 200);
    assert_eq!(s["step"], 0);
    assert_eq!(s["end"], Value::Null);
    assert_eq!(s["fireable"], json!(["word", "status"]));
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "EMPTY");
    assert_eq!(s["waiting"], json!([]));
    let (_, s) = server.post("/api/step", "");
    assert_eq!(s["step"], 1);
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "NEW");
    let (_, s) = server.post("/api/step", "{}");
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "OLD");
    let (_, s) = server.post("/api/back", "");
    assert_eq!(s["step"], 1);
    assert_eq!(s["connections"]["word.out_data -> copy.in_data"], "NEW");
    let (_, s) = server.post("/api/run", "");
    assert_eq!(s["end"], "COMPLETED");
    assert_eq!(s["step"], 9);
    let (_, h) = server.get("/api/history");
    assert_eq!(h["entries"].as_array().unwrap().len(), 9);
    assert_eq!(h["entries"][0], json!({"step": 1, "ops": ["word"]}));
    let (_, s) = server.post("/api/goto", r#"{"step": 3}"#);
    assert_eq!(s["step"], 3);
    assert_eq!(s["redo"], 6);
    let (_, s) = server.post("/api/refire", "");
    assert_eq!(
        s["branches"], 2,
        "re-firing from step 3 left the old future as a branch"
    );
    let (_, s) = server.post("/api/reset", "");
    assert_eq!(s["step"], 0);
    assert_eq!(s["redo"], 0);
}

#[test]
fn malformed_requests_get_a_400_with_a_json_error() {
    let server = Serve::start(CAMELEON, &examples().join("ask.cm"), &[]);
    let bearer = format!("Bearer {}", server.token().expect("a token"));
    let auth = ("Authorization", bearer.as_str());
    let (code, e) = request(server.addr(), "POST", "/api/step", &[auth], "");
    assert_eq!(code, 415, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("Content-Type: application/json")
    );
    let (code, e) = request(
        server.addr(),
        "POST",
        "/api/step",
        &[auth, ("Content-Type", "text/plain")],
        "x",
    );
    assert_eq!(code, 415, "{e}");
    let (code, e) = server.post("/api/step", "{not json");
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed request"),
        "{e}"
    );
    let (code, e) = server.post("/api/provide/approve", r#"{"answer": true}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("expected a JSON body {\"value\": …}"),
        "{e}"
    );
    let (code, e) = server.post("/api/goto", r#"{"step": "three"}"#);
    assert_eq!(code, 400, "{e}");
    let (code, e) = server.get("/api/nothing");
    assert_eq!(code, 404);
    assert!(e["error"].is_string());
}

#[test]
fn an_answer_through_the_api_and_a_wrong_one() {
    let server = Serve::start(CAMELEON, &examples().join("ask.cm"), &[]);
    let (_, s) = server.post("/api/run", "");
    assert_eq!(s["end"], "WAITING");
    assert_eq!(s["waiting"][0]["op"], "approve");
    assert_eq!(s["waiting"][0]["prompt"], "Send this letter?");
    assert_eq!(s["waiting"][0]["type"], "DataBool");
    assert_eq!(
        s["waiting"][0]["context"],
        "\"Dear Grace, the pipeline is ready.\""
    );
    let (code, e) = server.post("/api/provide/approve", r#"{"value": "yes"}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("is not a DataBool"),
        "{e}"
    );
    assert_eq!(
        server.get("/api/state").1["end"],
        "WAITING",
        "still waiting"
    );
    let (code, e) = server.post("/api/provide/draft", r#"{"value": "x"}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("asks no question"),
        "{e}"
    );
    assert_eq!(
        server.post("/api/provide/approve", r#"{"value": false}"#).0,
        200
    );
    assert_eq!(
        server
            .post("/api/provide/reviewer", r#"{"value": "Ada"}"#)
            .0,
        200
    );
    let (_, s) = server.post("/api/run", "");
    assert_eq!(s["end"], "COMPLETED");
    assert_eq!(
        s["values"]["send.out_false -> kept.in_data"],
        "\"Dear Grace, the pipeline is ready.\""
    );
}

#[test]
fn an_invalid_file_opens_with_its_problems_and_save_writes_only_a_valid_canonical_net() {
    let dir = TempDir::new("serve-api-invalid");
    let file = dir.join("net.cm");
    let bad = "# a comment kept by Save\noperators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: b, type: sink}\nconnections:\n  - {from: a.out_dat, to: b.in_data}\n";
    std::fs::write(&file, bad).unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let (_, src) = server.get("/api/source");
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
    let (code, svg) = server.get("/api/svg");
    assert_eq!(code, 200);
    let svg = svg.as_str().unwrap();
    assert!(
        svg.contains("<g data-op=\"a\">") && svg.contains("<g data-op=\"b\">"),
        "{svg}"
    );
    assert!(!svg.contains("data-conn"), "{svg}");
    let (_, s) = server.get("/api/state");
    assert_eq!(s["valid"], false);
    assert_eq!(server.post("/api/step", "").0, 409);

    // Check while typing: problems with their lines, nothing written.
    let (_, c) = server.post("/api/check", &json!({"text": "operators: [}"}).to_string());
    assert_eq!(c["valid"], false);
    assert!(c["problems"][0]["line"].as_u64().is_some());
    // Save refuses an invalid text and leaves the file alone.
    let (code, e) = server.post("/api/save", &json!({"text": bad}).to_string());
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
    let (code, r) = server.post("/api/save", &json!({"text": good}).to_string());
    assert!(
        server
            .get("/api/svg")
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
    assert_eq!(server.get("/api/svg").0, 200);
    assert_eq!(server.post("/api/run", "").1["end"], "COMPLETED");
    // Only the served file is ever written.
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["net.cm"]);
}

#[test]
fn every_subscriber_gets_the_engine_events_and_the_state() {
    let server = Serve::start(CAMELEON, &examples().join("fork_join.cm"), &[]);
    let mut first = server.events();
    let mut second = server.events();
    first.wait_for_state(0);
    second.wait_for_state(0);
    server.post("/api/step", "");
    for s in [&mut first, &mut second] {
        let events = s.wait_for_state(1);
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
    let dir = TempDir::new("serve-api-not-yaml");
    let file = dir.join("net.cm");
    std::fs::write(&file, "operators: [\n").unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let (code, e) = server.get("/api/svg");
    assert_eq!(code, 409);
    assert!(
        e["error"].as_str().unwrap().contains("nothing to draw"),
        "{e}"
    );
    assert!(
        !server.get("/api/source").1["problems"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn pause_stops_a_run_where_it_is() {
    let dir = TempDir::new("serve-api-pause");
    let file = dir.join("spin.cm");
    std::fs::write(
        &file,
        "name: spin\nconfig: {max_loop_iterations: 100000000}\noperators:\n  - {id: zero, type: const, params: {value: 0}}\n  - {id: loop, type: merge}\n  - {id: inc, type: counter}\n  - {id: check, type: guard, params: {continue_if: {lt: 100000000}}}\n  - {id: done, type: sink}\nconnections:\n  - {from: zero.out_data, to: loop.in_a}\n  - {from: check.out_continue, to: loop.in_b}\n  - {from: loop.out_data, to: inc.in_data}\n  - {from: inc.out_data, to: check.in_data}\n  - {from: check.out_exit, to: done.in_data}\n",
    )
    .unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let (code, s) = std::thread::scope(|sc| {
        let runner = sc.spawn(|| server.post("/api/run", ""));
        // Wait until the run is under way (a state that says so), then pause it.
        test_support::wait_until("the run under way", WAIT_TIMEOUT, || {
            let (_, s) = server.get("/api/state");
            s["running"] == true && s["step"].as_u64().unwrap_or(0) > 0
        });
        assert_eq!(
            server.post("/api/step", "").0,
            409,
            "no step while a run is in progress"
        );
        assert_eq!(server.post("/api/pause", "").0, 200);
        runner.join().unwrap()
    });
    assert_eq!(code, 200);
    assert_eq!(s["running"], false);
    assert_eq!(s["end"], Value::Null, "paused, not ended: {s}");
    let paused_at = s["step"].as_u64().unwrap();
    assert!(paused_at > 0);
    // Nothing moves while paused; a step goes on from there.
    assert_eq!(server.get("/api/state").1["step"], paused_at);
    assert_eq!(server.post("/api/step", "").1["step"], paused_at + 1);
}

#[test]
fn serve_has_help_with_examples() {
    let o = CAMELEON.run(&["serve", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Examples:\n  cameleon serve "), "{out}");
    assert!(out.contains("--token"), "{out}");
}

#[test]
fn ctrl_c_stops_the_server_even_with_an_event_stream_open() {
    let mut server = Serve::start(CAMELEON, &examples().join("fork_join.cm"), &[]);
    let mut stream = server.events();
    stream.wait_for_state(0);
    server.proc().signal(Signal::Int);
    let status = server.proc().wait(WAIT_TIMEOUT);
    assert_eq!(status.code(), Some(0), "the server stopped after Ctrl-C");
    drop(stream);
}

#[test]
fn a_served_model_pipeline_runs_with_the_capabilities_of_its_folder() {
    // No cameleon.yaml in examples/: the offline defaults (extractive, hash, flat).
    let server = Serve::start(CAMELEON, &examples().join("rag.cm"), &[]);
    let (_, s) = server.post("/api/run", "");
    assert_eq!(s["end"], "COMPLETED", "{s}");
}

#[test]
fn outputs_and_the_inspector_show_each_sinks_values_and_a_model_firings_prompt_and_answer() {
    let rag = examples().join("rag.cm");
    let server = Serve::start(CAMELEON, &rag, &[]);
    let (code, o) = server.get("/api/outputs");
    assert_eq!(code, 200, "{o}");
    assert_eq!(
        o["sinks"],
        json!([{"op": "out", "label": "Answer", "count": 0, "values": []}])
    );
    assert_eq!(o["usage"], Value::Null);
    assert_eq!(server.post("/api/run", "").1["end"], "COMPLETED");

    // The answer `run` prints is the one the Outputs panel shows, with the run's tokens.
    let expected = test_support::json(&CAMELEON.run(&["run", rag.to_str().unwrap(), "--json"]));
    let answer = expected["sinks"]["out"][0].as_str().unwrap().to_owned();
    assert!(!answer.is_empty());
    let (_, o) = server.get("/api/outputs");
    let out = &o["sinks"][0];
    assert_eq!(
        (out["op"].as_str(), out["count"].as_u64()),
        (Some("out"), Some(1))
    );
    assert_eq!(out["values"][0]["type"], "DataString");
    assert_eq!(out["values"][0]["json"], json!(answer).to_string());
    assert_eq!(out["values"][0]["truncated"], false);
    assert_eq!(
        o["usage"]["prompt_tokens"],
        expected["usage"]["prompt_tokens"]
    );
    assert_eq!(
        o["usage"]["completion_tokens"],
        expected["usage"]["completion_tokens"]
    );
    assert!(o["usage"]["completion_tokens"].as_u64().unwrap() > 0, "{o}");

    // The model firing: its prompt (system, question, passages), its answer, its tokens.
    let (code, a) = server.get("/api/inspect?op=answer");
    assert_eq!(code, 200, "{a}");
    assert_eq!(
        (a["kind"].as_str(), a["type"].as_str()),
        (Some("operator"), Some("llm"))
    );
    assert_eq!(a["fired"], 1);
    let call = &a["last_call"]["calls"][0];
    assert_eq!(
        (call["call"].as_str(), call["kind"].as_str()),
        (Some("chat"), Some("extractive"))
    );
    assert_eq!(call["quoted"], true);
    let messages: Vec<(&str, &str)> = call["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        messages.contains(&(
            "system",
            "Answer from the context only, in one or two sentences."
        )),
        "{messages:?}"
    );
    assert!(
        messages.contains(&("user", "Why do chameleons change colour?")),
        "{messages:?}"
    );
    assert_eq!(
        call["context"].as_array().unwrap().len(),
        3,
        "k: 3 passages"
    );
    assert_eq!(call["answer"]["text"], answer.as_str());
    assert_eq!(a["last_call"]["usage"], call["usage"]);
    assert_eq!(a["inputs"][0]["port"], "in_prompt");
    assert_eq!(a["outputs"][0]["value"]["json"], json!(answer).to_string());

    // A connection: its type, state and value.
    let (code, c) = server.get("/api/inspect?conn=answer.out_text%20-%3E%20out.in_data");
    assert_eq!(code, 200, "{c}");
    assert_eq!(c["kind"], "connection");
    assert_eq!(
        (c["type"].as_str(), c["state"].as_str()),
        (Some("DataString"), Some("OLD"))
    );
    assert_eq!(c["value"]["json"], json!(answer).to_string());
    // What is not there, or not asked well.
    let (code, e) = server.get("/api/inspect?op=nobody");
    assert_eq!(code, 404, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("no operator `nobody`"),
        "{e}"
    );
    assert_eq!(server.get("/api/inspect").0, 400);
    assert_eq!(server.get("/api/inspect?op=answer&conn=x").0, 400);
}
