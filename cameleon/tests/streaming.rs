//! Model answers streaming as they are written: the `openai` provider asks with `stream: true`
//! (server-sent events, tool calls included) when the run's output is watched, the offline
//! `extractive` model streams word by word, each piece is an `Event::Partial` between the
//! firing's start and finish, nothing of it is recorded, back and replay never stream, and a
//! cancellation ends the streaming request without waiting for the next piece.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use cameleon::Event;
use cameleon::capabilities::{CodeSource, Runtime};
use cameleon::models::{OpenAiChat, OpenAiConfig};
use cameleon::operator::capability::ToolManifest;
use cameleon::ops::{Agent, Llm, Passages, Sink, Source};
use cameleon::prelude::*;
use cameleon::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use test_support::openai::{Reply, Server};

/// Long enough that no test passes because of a timeout.
const HANG_GUARD: Duration = Duration::from_secs(20);

fn config(base_url: String) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(base_url, "test-model");
    c.backoff_ms = 1;
    // Far longer than the hang guard: a request ended before it was ended by the client.
    c.timeout_ms = 120_000;
    c
}

fn runtime_with(model: OpenAiChat, tool: Option<Arc<dyn Tool>>) -> Runtime {
    let model = Arc::new(model);
    Runtime::builder()
        .source(CodeSource::new("the test", move |b| {
            b.chat("m", model.clone());
            if let Some(t) = &tool {
                b.tool(t.clone());
            }
            Ok(())
        }))
        .build()
        .expect("capabilities")
}

fn llm_net() -> Net {
    let mut b = Net::builder("ask");
    b.add("question", Source::new("What is a chameleon?"));
    b.add("ask", Llm::new().model("m"));
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("ask.out_text", "out.in_data");
    b.build().expect("a valid net")
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// The partial pieces of operator `op`, in order.
fn pieces(events: &[Event], op: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Partial { op: o, text, .. } if o == op => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn out(cvm: &Cvm) -> Vec<Value> {
    cvm.received("out").iter().map(|v| v.to_json()).collect()
}

#[test]
fn an_openai_answer_streams_as_partial_events_between_the_firings_start_and_finish() {
    let server = Server::start();
    server.script([Reply::chat("Chameleons are lizards that change colour.")]);
    let rt = runtime_with(
        OpenAiChat::new(&config(server.base_url()), "chat model `m`").unwrap(),
        None,
    );
    let mut cvm = rt.cvm(llm_net(), ".").build();
    let mut rx = cvm.events();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let events = drain(&mut rx);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].body["stream"], true, "watched: asked to stream");
    assert_eq!(reqs[0].body["stream_options"]["include_usage"], true);

    let got = pieces(&events, "ask");
    assert_eq!(
        got,
        [
            "Chameleons",
            " are",
            " lizards",
            " that",
            " change",
            " colour."
        ]
    );
    assert_eq!(
        out(&cvm),
        [json!("Chameleons are lizards that change colour.")]
    );
    // Every piece lies between the firing's start and its finish.
    let at = |want: &dyn Fn(&Event) -> bool| events.iter().position(want).unwrap();
    let started = at(&|e| matches!(e, Event::FiringStarted { op, .. } if op == "ask"));
    let finished = at(&|e| matches!(e, Event::FiringFinished { op, .. } if op == "ask"));
    for (i, e) in events.iter().enumerate() {
        if matches!(e, Event::Partial { .. }) {
            assert!(
                started < i && i < finished,
                "piece {i} outside {started}..{finished}"
            );
            assert!(matches!(e, Event::Partial { step: 2, .. }), "{e:?}");
        }
    }
    // Usage comes from the stream's last chunk.
    let usage = cvm
        .history()
        .state_after(2, 0)
        .and_then(cameleon::ops::ai::usage_in);
    assert_eq!(
        usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((11, 5))
    );
}

#[test]
fn nobody_watching_means_no_streaming_and_the_same_record() {
    let answer = "Small lizards.";
    let run = |watch: bool| {
        let server = Server::start();
        server.script([Reply::chat(answer)]);
        let rt = runtime_with(
            OpenAiChat::new(&config(server.base_url()), "chat model `m`").unwrap(),
            None,
        );
        let mut cvm = rt.cvm(llm_net(), ".").build();
        let rx = watch.then(|| cvm.events());
        assert_eq!(cvm.run().unwrap(), EndState::Completed);
        let asked = server.requests()[0].body.get("stream").cloned();
        drop(rx);
        let state = cvm
            .history()
            .state_after(2, 0)
            .and_then(|s| s.get::<(cameleon::ops::ai::ModelLog,)>())
            .map(|(log,)| log.clone());
        (asked, out(&cvm), state)
    };
    let (asked_quiet, out_quiet, state_quiet) = run(false);
    let (asked_watched, out_watched, state_watched) = run(true);
    assert_eq!(asked_quiet, None, "nobody watches: a plain request");
    assert_eq!(asked_watched, Some(json!(true)));
    assert_eq!(out_quiet, out_watched);
    // The history records the answer and its usage, never the pieces: the firing's record
    // is the same whether it streamed or not.
    assert!(state_quiet.is_some());
    assert_eq!(state_quiet, state_watched);
}

#[test]
fn back_and_replay_apply_the_recorded_answer_without_streaming_again() {
    let server = Server::start();
    server.script([Reply::chat("Lizards of the Old World.")]);
    let rt = runtime_with(
        OpenAiChat::new(&config(server.base_url()), "chat model `m`").unwrap(),
        None,
    );
    let mut cvm = rt.cvm(llm_net(), ".").build();
    let mut rx = cvm.events();
    cvm.run().unwrap();
    assert!(!pieces(&drain(&mut rx), "ask").is_empty());

    cvm.back().unwrap();
    cvm.back().unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let events = drain(&mut rx);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::StepCommitted { replayed: true, .. })),
        "{events:?}"
    );
    assert_eq!(
        pieces(&events, "ask"),
        Vec::<String>::new(),
        "a replay never streams"
    );
    assert_eq!(server.count(), 1, "nor asks the model");
    assert_eq!(out(&cvm), [json!("Lizards of the Old World.")]);
}

#[test]
fn the_offline_extractive_model_streams_word_by_word() {
    let mut b = Net::builder("offline");
    b.add("question", Source::new("Why do chameleons change colour?"));
    b.add(
        "doc",
        Source::new("Chameleons change colour to signal their mood. Cats sleep a lot."),
    );
    b.add("split", Passages::new(60));
    b.add("ask", Llm::new());
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("doc.out_data", "split.in_data")
        .connect("split.out_data", "ask.in_context")
        .connect("ask.out_text", "out.in_data");
    let rt = Runtime::default();
    let mut cvm = rt.cvm(b.build().unwrap(), ".").build();
    let mut rx = cvm.events();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let got = pieces(&drain(&mut rx), "ask");
    let answer = out(&cvm)[0].as_str().unwrap().to_owned();
    assert!(got.len() > 3, "{got:?}");
    assert_eq!(got.len(), answer.split_whitespace().count());
    assert_eq!(got.concat(), answer);
}

#[derive(Debug)]
struct Add(ToolManifest);

impl Tool for Add {
    fn manifest(&self) -> &ToolManifest {
        &self.0
    }
    fn call<'a>(&'a self, _cx: &'a ToolContext, args: Value) -> ToolOutput<'a> {
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        ToolOutput::Ready(Ok(json!(sum)))
    }
}

#[test]
fn an_agent_streams_its_turns_and_takes_tool_calls_from_the_stream() {
    let server = Server::start();
    server.script([
        Reply::tool_calls(&[("call_1", "add", json!({"a": 2, "b": 3}))]),
        Reply::chat("2 + 3 = 5"),
    ]);
    let add: Arc<dyn Tool> = Arc::new(Add(ToolManifest {
        name: "add".into(),
        description: "Adds two numbers.".into(),
        effects: cameleon::tools::Effect::None,
        input_schema: json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        output_schema: json!({"type": "number"}),
        idempotent: false,
    }));
    let rt = runtime_with(
        OpenAiChat::new(&config(server.base_url()), "chat model `m`").unwrap(),
        Some(add),
    );
    let mut b = Net::builder("agent");
    b.add("question", Source::new("What is 2 + 3?"));
    b.add("ask", Agent::new().model("m").tools(["add"]));
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("ask.out_text", "out.in_data");
    b.tools(cameleon::net::ToolPolicy::allow(["add"]));
    let mut cvm = rt.cvm(b.build().unwrap(), ".").build();
    let mut rx = cvm.events();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.body["stream"] == true));
    // The tool call put together from its streamed pieces went to the tool with its arguments.
    let tool_msg = &reqs[1].body["messages"][2];
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    let result: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["content"], json!(5.0));
    assert_eq!(
        reqs[1].body["messages"][1]["tool_calls"][0]["function"]["arguments"],
        json!({"a": 2, "b": 3}).to_string()
    );
    assert_eq!(
        pieces(&drain(&mut rx), "ask"),
        ["2", " +", " 3", " =", " 5"]
    );
    assert_eq!(out(&cvm), [json!("2 + 3 = 5")]);
}

// ---------------------------------------------------------------------------------------------
// Cancellation mid-stream: a server whose every event the test releases.

/// A streaming chat endpoint on 127.0.0.1 answering one request with server-sent events, one
/// per text the test releases, and reporting when the client closed the connection.
struct HeldStream {
    addr: SocketAddr,
    release: mpsc::Sender<String>,
    /// Receives `released` (how many events had been sent) when the client closes.
    closed: mpsc::Receiver<usize>,
}

impl HeldStream {
    fn start() -> HeldStream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().unwrap();
        let (release, pieces) = mpsc::channel::<String>();
        let (closed_tx, closed) = mpsc::channel();
        std::thread::spawn(move || {
            let Ok((mut sock, _)) = listener.accept() else {
                return;
            };
            // The request: headers, then the body its Content-Length announces.
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            let body_len = loop {
                let n = sock.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    break end + 4 + len;
                }
            };
            while got.len() < body_len {
                let n = sock.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let _ = sock.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            // A reader thread sees the close; this one writes what the test releases.
            let mut reader = sock.try_clone().expect("a second handle on the socket");
            let released = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let seen = released.clone();
            std::thread::spawn(move || {
                let mut b = [0u8; 64];
                while matches!(reader.read(&mut b), Ok(n) if n > 0) {}
                let _ = closed_tx.send(seen.load(std::sync::atomic::Ordering::SeqCst));
            });
            for piece in pieces {
                let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}}]});
                if sock
                    .write_all(format!("data: {chunk}\n\n").as_bytes())
                    .is_err()
                {
                    return;
                }
                released.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        HeldStream {
            addr,
            release,
            closed,
        }
    }
}

#[test]
fn a_cancellation_ends_the_streaming_request_without_waiting_for_the_next_piece() {
    let server = HeldStream::start();
    let rt = runtime_with(
        OpenAiChat::new(
            &config(format!("http://{}/v1", server.addr)),
            "chat model `m`",
        )
        .unwrap(),
        None,
    );
    let mut cvm = rt.cvm(llm_net(), ".").build();
    let mut rx = cvm.events();
    let token = cvm.cancel_token();
    let run = std::thread::spawn(move || {
        let end = cvm.run();
        (end, cvm)
    });
    let next_piece = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>| -> String {
        let deadline = std::time::Instant::now() + HANG_GUARD;
        loop {
            match rx.try_recv() {
                Ok(Event::Partial { text, .. }) => return text,
                Ok(_) => {}
                Err(_) if std::time::Instant::now() > deadline => panic!("no piece came"),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    };
    server.release.send("Chameleons".into()).unwrap();
    assert_eq!(next_piece(&mut rx), "Chameleons");
    server.release.send(" are".into()).unwrap();
    assert_eq!(next_piece(&mut rx), " are");

    token.cancel();
    // The next piece is never released before the server sees the connection closed: only
    // the cancellation can have ended the request.
    let released = server
        .closed
        .recv_timeout(HANG_GUARD)
        .expect("the client closed the streaming connection after the cancellation");
    assert_eq!(released, 2, "closed before any further piece was sent");
    let (end, cvm) = run.join().unwrap();
    assert_eq!(end.unwrap(), EndState::Cancelled);
    assert_eq!(
        cvm.depth(),
        1,
        "nothing of the cancelled firing is recorded"
    );
    assert!(cvm.received("out").is_empty());
    let _ = server.release.send(" lizards".into()); // too late: nobody reads it
}
