//! `cameleon run --otlp ENDPOINT` exports the run's spans to an OpenTelemetry collector: a
//! local OTLP/HTTP receiver started by the test on 127.0.0.1 decodes what it receives. A net
//! with a model (the local OpenAI-compatible test server) and a tool (`calc`, through an
//! `agent`): the spans' names, their parent links, the GenAI attributes, and the API key in
//! none of them. `OTEL_EXPORTER_OTLP_ENDPOINT` works as `--otlp` does; a bad endpoint is exit 2.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;
use test_support::openai::{Reply, Server};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

const SECRET: &str = "sk-otlp-planted-secret-4242";

/// A request the receiver got.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// An OTLP/HTTP receiver on 127.0.0.1: answers every POST 200 and keeps it. It stops with the
/// test process (its thread only accepts).
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().unwrap();
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let keep = got.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(sock) = sock else { continue };
                let keep = keep.clone();
                std::thread::spawn(move || serve_connection(sock, &keep));
            }
        });
        Receiver { addr, got }
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Every span received, decoded.
    fn spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        for r in self.received() {
            let req = ExportTraceServiceRequest::decode(r.body.as_slice())
                .expect("an OTLP protobuf trace export");
            for rs in req.resource_spans {
                for ss in rs.scope_spans {
                    out.extend(ss.spans);
                }
            }
        }
        out
    }
}

/// Reads HTTP/1.1 requests (Content-Length bodies) off one connection until it closes.
fn serve_connection(sock: std::net::TcpStream, keep: &Mutex<Vec<Received>>) {
    let mut w = sock.try_clone().expect("a second handle");
    let mut r = BufReader::new(sock);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        keep.lock().unwrap().push(Received {
            path,
            headers,
            body,
        });
        let _ = w.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a AnyValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn attr_str(span: &Span, key: &str) -> Option<String> {
    match attr(span, key)? {
        AnyValue::StringValue(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    }
}

fn attr_int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key)? {
        AnyValue::IntValue(i) => Some(*i),
        AnyValue::StringValue(s) => s.parse().ok(),
        _ => None,
    }
}

/// A folder with an agent net (a question, an `agent` that may use `calc`, a sink) and a
/// capabilities file pointing its model at `model`, with an API key from `OTLP_TEST_KEY`.
fn agent_net(tag: &str, model: &Server) -> (TempDir, String, String) {
    let dir = TempDir::new(tag);
    let caps = dir.join("models.yaml");
    std::fs::write(
        &caps,
        format!(
            "chat:\n  default: {{ kind: openai, base_url: \"{}\", model: \"gpt-test\", api_key_env: OTLP_TEST_KEY }}\n",
            model.base_url()
        ),
    )
    .unwrap();
    let file = dir.join("agent.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: agent\ntools:\n  allow: [calc]\noperators:\n  - {id: question, type: source, params: {value: \"What is 2 + 3?\"}}\n  - {id: assistant, type: agent, params: {tools: [calc]}}\n  - {id: out, type: sink}\nconnections:\n  - {from: question.out_data, to: assistant.in_prompt}\n  - {from: assistant.out_text, to: out.in_data}\n",
    )
    .unwrap();
    (dir, file.display().to_string(), caps.display().to_string())
}

#[test]
fn a_run_exports_its_spans_with_genai_attributes_and_parent_links_and_no_key() {
    let collector = Receiver::start();
    let model = Server::start();
    model.script([
        Reply::tool_calls(&[("call_1", "calc", json!({"expr": "2+3"}))]),
        Reply::chat("2 + 3 = 5"),
    ]);
    let (_dir, file, caps) = agent_net("cli-otlp", &model);
    let o = CAMELEON
        .cmd()
        .args([
            "run",
            &file,
            "--capabilities",
            &caps,
            "--otlp",
            &format!("http://{}", collector.addr),
        ])
        .env("OTLP_TEST_KEY", SECRET)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .run();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("2 + 3 = 5"), "{}", stdout(&o));

    let received = collector.received();
    assert!(!received.is_empty(), "the exporter sent nothing");
    for r in &received {
        assert_eq!(r.path, "/v1/traces");
        assert_eq!(
            r.headers.get("content-type").map(String::as_str),
            Some("application/x-protobuf")
        );
        // The key is in no span, attribute or header sent to the collector.
        test_support::secrets::assert_absent(SECRET, "the OTLP export", &r.body);
        for v in r.headers.values() {
            test_support::secrets::assert_absent(SECRET, "an OTLP header", v.as_bytes());
        }
    }
    let spans = collector.spans();
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let parent = |s: &Span| by_id.get(&s.parent_span_id).copied();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };

    // The run, its steps, their firings.
    let runs = named("run");
    assert_eq!(
        runs.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let run = runs[0];
    assert_eq!(attr_str(run, "net").as_deref(), Some("agent"));
    assert_eq!(attr_str(run, "end").as_deref(), Some("COMPLETED"));
    let firings = named("firing");
    assert_eq!(firings.len(), 3, "question, assistant, out");
    for f in &firings {
        let step = parent(f).expect("a firing's parent is exported");
        assert_eq!(step.name, "step");
        assert_eq!(
            parent(step).map(|r| r.span_id.clone()),
            Some(run.span_id.clone())
        );
        assert_eq!(f.trace_id, run.trace_id, "one trace per run");
    }
    let agent = firings
        .iter()
        .find(|f| attr_str(f, "op").as_deref() == Some("assistant"))
        .expect("the agent's firing");
    assert_eq!(attr_str(agent, "type").as_deref(), Some("agent"));
    assert_eq!(attr_int(agent, "step"), Some(2));

    // Two chat calls and one tool call, children of the agent's firing.
    let chats = named("chat gpt-test");
    assert_eq!(chats.len(), 2, "two turns");
    for c in &chats {
        assert_eq!(
            parent(c).map(|p| p.span_id.clone()),
            Some(agent.span_id.clone())
        );
        assert_eq!(
            attr_str(c, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert_eq!(
            attr_str(c, "gen_ai.request.model").as_deref(),
            Some("gpt-test")
        );
        assert_eq!(
            attr_str(c, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
    }
    assert_eq!(attr_int(chats[0], "gen_ai.usage.input_tokens"), Some(20));
    assert_eq!(attr_int(chats[0], "gen_ai.usage.output_tokens"), Some(7));
    assert_eq!(attr_int(chats[1], "gen_ai.usage.input_tokens"), Some(11));
    assert_eq!(attr_int(chats[1], "gen_ai.usage.output_tokens"), Some(5));
    let tools = named("execute_tool calc");
    assert_eq!(tools.len(), 1);
    let tool = tools[0];
    assert_eq!(
        parent(tool).map(|p| p.span_id.clone()),
        Some(agent.span_id.clone())
    );
    assert_eq!(
        attr_str(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr_str(tool, "gen_ai.tool.name").as_deref(), Some("calc"));
    assert_eq!(attr_str(tool, "status").as_deref(), Some("ok"));
}

#[test]
fn the_endpoint_variable_works_as_the_flag_and_a_bad_endpoint_is_refused() {
    let collector = Receiver::start();
    let dir = TempDir::new("cli-otlp-env");
    let file = dir.join("one.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: one\noperators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: out, type: sink}\nconnections:\n  - {from: a.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let o = CAMELEON
        .cmd()
        .args(["run", &file])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://{}", collector.addr),
        )
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let names: Vec<String> = collector.spans().into_iter().map(|s| s.name).collect();
    assert!(names.iter().any(|n| n == "run"), "{names:?}");

    let o = CAMELEON.run(&["run", &file, "--otlp", "ftp://127.0.0.1:1"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("not an http(s) URL"), "{}", stderr(&o));
    let o = CAMELEON
        .cmd()
        .args([
            "run",
            &file,
            "--otlp",
            "http://127.0.0.1:1",
            "--otlp-header",
            "x-key=OTLP_SURELY_UNSET",
        ])
        .env_remove("OTLP_SURELY_UNSET")
        .run();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`OTLP_SURELY_UNSET` is not set"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_header_is_sent_with_the_value_of_the_variable_it_names() {
    let collector = Receiver::start();
    let dir = TempDir::new("cli-otlp-header");
    let file = dir.join("one.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: one\noperators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: out, type: sink}\nconnections:\n  - {from: a.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let o = CAMELEON
        .cmd()
        .args([
            "run",
            &file.display().to_string(),
            "--otlp",
            &format!("http://{}/", collector.addr),
            "--otlp-header",
            "x-honeycomb-team=OTLP_TEST_TEAM_KEY",
        ])
        .env("OTLP_TEST_TEAM_KEY", "team-key-123")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = collector.received();
    assert!(!got.is_empty());
    assert!(got.iter().all(|r| r.path == "/v1/traces"));
    assert!(
        got.iter()
            .all(|r| r.headers.get("x-honeycomb-team").map(String::as_str) == Some("team-key-123"))
    );
    // The value appears in no output.
    assert!(!stderr(&o).contains("team-key-123") && !stdout(&o).contains("team-key-123"));
}
