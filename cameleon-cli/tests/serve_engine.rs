//! `cameleon serve` keeps answering while its engine works (docs/cli.md, "serve"): a firing
//! held by the test — a model call the local OpenAI-compatible server does not answer until
//! released — holds the engine, never the server: the state, Pause, the page's files, the
//! source, the drawing and Check answer meanwhile. And a huge token costs the page a preview:
//! the state of a 50 MiB `Binary` is small, and the server's memory grows by the value alone.

use serde_json::{Value, json};
use test_support::openai::{Reply, Server};
use test_support::{Bin, Serve, TempDir, WAIT_TIMEOUT, wait_until};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// A folder with `ask.cm` — a question, a chat model (the test server's), a sink — and its
/// capabilities file; the server serving it, with `--capabilities`.
fn served(tag: &str, model: &Server) -> (TempDir, Serve) {
    let dir = TempDir::new(tag);
    let caps = dir.join("models.yaml");
    std::fs::write(
        &caps,
        format!(
            "chat:\n  default: {{ kind: openai, base_url: \"{}\", model: \"m\" }}\n",
            model.base_url()
        ),
    )
    .unwrap();
    let file = dir.join("ask.cm");
    std::fs::write(
        &file,
        "name: ask\noperators:\n  - {id: question, type: source, params: {value: \"Why?\"}}\n  - {id: answer, type: llm}\n  - {id: out, type: sink}\nconnections:\n  - {from: question.out_data, to: answer.in_prompt}\n  - {from: answer.out_text, to: out.in_data}\n",
    )
    .unwrap();
    let server = Serve::start(CAMELEON, &file, &["--capabilities", caps.to_str().unwrap()]);
    (dir, server)
}

/// While the engine is held: every read and the page's files answer; the state says the
/// model's firing is under way.
fn everything_answers(server: &Serve, cookie: &str) -> Value {
    let (code, state) = server.get("/api/state");
    assert_eq!(code, 200, "{state}");
    assert_eq!(state["firing"], json!(["answer"]), "{state}");
    assert_eq!(state["busy"], true, "{state}");
    for path in [
        "/",
        "/page.js",
        "/page.css",
        "/results.js",
        "/api/source",
        "/api/svg",
    ] {
        let (code, body) =
            test_support::serve::request(server.addr(), "GET", path, &[("Cookie", cookie)], "");
        assert_eq!(code, 200, "GET {path} while a firing is held: {body}");
    }
    let (code, c) = server.post(
        "/api/check",
        &json!({"text": "operators: []\n"}).to_string(),
    );
    assert_eq!((code, &c["valid"]), (200, &json!(true)), "{c}");
    state
}

#[test]
fn a_held_step_holds_the_engine_and_not_the_server() {
    let model = Server::start();
    model.script([Reply::chat("the held answer").held()]);
    let (_dir, server) = served("serve-engine-step", &model);
    let (cookie, _) = server.cookie();
    let mut events = server.events();
    events.wait_for_state(0);
    assert_eq!(server.post("/api/step", "").0, 200); // the question
    std::thread::scope(|sc| {
        let stepper = sc.spawn(|| server.post("/api/step", ""));
        wait_until("the model call in flight", WAIT_TIMEOUT, || {
            model.count() == 1
        });
        // The firing's start reaches the page while it is held…
        loop {
            let e = events.next_event();
            if e.data["event"] == "firing_started" && e.data["op"] == "answer" {
                break;
            }
        }
        // …and everything answers, the state saying the engine is busy.
        let state = everything_answers(&server, &cookie);
        assert_eq!(state["step"], 1, "the state before the held step: {state}");
        assert_eq!(state["fireable"], json!(["answer"]));
        assert!(
            !stepper.is_finished(),
            "all of that answered while the firing was held"
        );
        model.release();
        let (code, s) = stepper.join().unwrap();
        assert_eq!(
            (code, &s["step"], &s["busy"]),
            (200, &json!(2), &json!(false)),
            "{s}"
        );
    });
    let (_, o) = server.get("/api/outputs");
    assert_eq!(o["sinks"][0]["count"], 0);
    assert_eq!(server.post("/api/step", "").0, 200);
    let (_, o) = server.get("/api/outputs");
    assert_eq!(o["sinks"][0]["values"][0]["json"], "\"the held answer\"");
}

#[test]
fn pause_answers_at_once_while_a_run_waits_on_a_held_firing() {
    let model = Server::start();
    model.script([Reply::chat("late").held()]);
    let (_dir, server) = served("serve-engine-run", &model);
    let (cookie, _) = server.cookie();
    std::thread::scope(|sc| {
        let runner = sc.spawn(|| server.post("/api/run", ""));
        wait_until("the model call in flight", WAIT_TIMEOUT, || {
            model.count() == 1
        });
        let state = everything_answers(&server, &cookie);
        assert_eq!(state["running"], true);
        let (code, paused) = server.post("/api/pause", "");
        assert_eq!(code, 200, "{paused}");
        assert_eq!(
            paused["running"], true,
            "answered before the run could stop: {paused}"
        );
        assert!(
            !runner.is_finished(),
            "Pause answered while the firing was held"
        );
        model.release();
        let (code, s) = runner.join().unwrap();
        assert_eq!(code, 200, "{s}");
        // The held step completed, then the run stopped before the sink's step.
        assert_eq!(
            (&s["running"], &s["step"], &s["end"]),
            (&json!(false), &json!(2), &Value::Null),
            "{s}"
        );
    });
}

/// Peak resident memory of process `pid`, in KiB (`VmHWM` of /proc/PID/status).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

#[test]
fn a_50_mib_token_costs_the_page_a_preview_and_the_server_the_value_alone() {
    const SIZE: usize = 50 << 20;
    let dir = TempDir::new("serve-engine-big");
    std::fs::write(dir.join("big.bin"), vec![0xabu8; SIZE]).unwrap();
    let file = dir.join("big.cm");
    std::fs::write(
        &file,
        "name: big\noperators:\n  - {id: load, type: file_loader, params: {path: big.bin}}\n  - {id: out, type: sink}\nconnections:\n  - {from: load.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let mut events = server.events();
    events.wait_for_state(0);
    let before = peak_kib(server.pid());
    let (code, s) = server.post("/api/step", "");
    assert_eq!(code, 200, "{s}");
    // The state, at every flush, holds a preview of the value, not the value.
    let conn = "load.out_data -> out.in_data";
    let tip = s["values"][conn].as_str().unwrap();
    assert!(tip.starts_with("[171,171,") && tip.ends_with('…'), "{tip}");
    assert!(tip.len() <= 512 + '…'.len_utf8(), "{} bytes", tip.len());
    for _ in 0..5 {
        // Flushes come and go; each sends the state again.
        server.post("/api/back", "");
        server.post("/api/step", "");
    }
    events.wait_for_state(1);
    let (_, state) = server.get("/api/state");
    assert!(
        state.to_string().len() < 4096,
        "the state is small: {state}"
    );
    let (_, c) = server.get("/api/inspect?conn=load.out_data%20-%3E%20out.in_data");
    assert_eq!(
        (c["value"]["type"].as_str(), c["value"]["bytes"].as_u64()),
        (Some("Binary"), Some(SIZE as u64))
    );
    assert_eq!(c["value"]["truncated"], true);
    assert!(c["value"]["json"].as_str().unwrap().len() <= 16 * 1024);
    server.post("/api/step", "");
    let (_, o) = server.get("/api/outputs");
    assert_eq!(o["sinks"][0]["count"], 1);
    assert!(o.to_string().len() < 32 * 1024, "outputs are previews");
    // The server held the value once: its peak memory grew by about the value, not by copies
    // or a JSON text of it (50 M numbers).
    let grown = peak_kib(server.pid()) - before;
    eprintln!(
        "figure: peak memory grew by {grown} KiB for a {} KiB value",
        SIZE >> 10
    );
    assert!(
        grown < (SIZE as u64 >> 10) + 24 * 1024,
        "peak memory grew by {grown} KiB for a {} KiB value",
        SIZE >> 10
    );
}

#[test]
fn a_streaming_answer_reaches_the_page_while_it_is_written_coalesced_per_flush() {
    let model = Server::start();
    let answer = "Chameleons change colour to signal mood.";
    model.script([Reply::chat(answer).held_after(3)]);
    let (_dir, server) = served("serve-engine-stream", &model);
    let mut events = server.events();
    events.wait_for_state(0);
    assert_eq!(server.post("/api/step", "").0, 200); // the question
    std::thread::scope(|sc| {
        let stepper = sc.spawn(|| server.post("/api/step", ""));
        // The first two words, streamed, reach the page while the rest is held: the firing
        // has not finished.
        let mut text = String::new();
        while text != "Chameleons change" {
            let e = events.next_event();
            let finished = e.data["event"] == "firing_finished" && e.data["op"] == "answer";
            assert!(
                !finished,
                "the answer finished before it streamed: {text:?}"
            );
            if e.data["event"] == "partial" {
                assert_eq!(
                    (&e.data["step"], &e.data["op"]),
                    (&json!(2), &json!("answer"))
                );
                text.push_str(e.data["text"].as_str().unwrap());
            }
        }
        assert!(!stepper.is_finished(), "the step is still under way");
        model.release();
        // The rest: coalesced, fewer events than pieces.
        let mut partials = 0;
        loop {
            let e = events.next_event();
            if e.data["event"] == "partial" {
                partials += 1;
                text.push_str(e.data["text"].as_str().unwrap());
            }
            if e.data["event"] == "step_committed" {
                break;
            }
        }
        assert_eq!(text, answer);
        // Four pieces arrive in one burst: one event (two if a flush fell inside the burst).
        assert!(partials <= 2, "4 pieces in {partials} events");
        assert_eq!(stepper.join().unwrap().0, 200);
    });
    assert_eq!(server.post("/api/step", "").0, 200); // the sink
    let (_, o) = server.get("/api/outputs");
    assert_eq!(
        o["sinks"][0]["values"][0]["json"],
        json!(answer).to_string(),
        "{o}"
    );
    assert_eq!(model.requests()[0].body["stream"], true);
}

#[test]
fn reset_cuts_an_answer_streaming_in_without_waiting_for_the_rest() {
    let model = Server::start();
    model.script([Reply::chat("Chameleons change colour to signal mood.").held_after(2)]);
    let (_dir, server) = served("serve-engine-reset", &model);
    let mut events = server.events();
    events.wait_for_state(0);
    std::thread::scope(|sc| {
        let runner = sc.spawn(|| server.post("/api/run", ""));
        // The first word is shown; the rest is held by the model server.
        loop {
            let e = events.next_event();
            if e.data["event"] == "partial" {
                break;
            }
        }
        let (code, s) = server.post("/api/reset", "");
        assert_eq!(code, 200, "{s}");
        assert_eq!(
            (&s["step"], &s["running"]),
            (&json!(0), &json!(false)),
            "{s}"
        );
        // The model still holds the rest of its answer: the step in flight was cancelled, not
        // waited for (a wait would end in the model's timeout, an ERROR).
        loop {
            let e = events.next_event();
            if e.data["event"] == "step_discarded" {
                assert_eq!(
                    (&e.data["step"], &e.data["reason"]),
                    (&json!(2), &json!("CANCELLED"))
                );
                break;
            }
        }
        assert_eq!(runner.join().unwrap().0, 200);
    });
    model.release();
    let (_, o) = server.get("/api/outputs");
    assert_eq!(o["sinks"][0]["count"], 0, "{o}");
}
