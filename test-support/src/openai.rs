//! A small OpenAI-compatible server for tests: `POST /v1/chat/completions` and
//! `POST /v1/embeddings` on 127.0.0.1 (a free port), on a runtime of its own. It records every
//! request (path, `Authorization` header, JSON body, arrival time) and answers from a script of
//! replies, then with a default answer; a held reply waits until the test releases it.
//! A request asking for `stream: true` gets its chat completion as server-sent events: the
//! text word by word, each tool call's arguments in two pieces, the usage in a last chunk,
//! then `data: [DONE]`. Dropping it stops it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `/v1/chat/completions` or `/v1/embeddings`.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body, parsed (`null` if it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

/// A scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The body, sent as is.
    pub body: String,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// A wait before answering.
    pub delay: Duration,
    /// Answer only once the test opens the server's gate ([`Server::release`]).
    pub held: bool,
    /// Streamed (`stream: true`): send this many events at once, the rest only once the test
    /// opens the gate.
    pub held_after: Option<usize>,
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(v: Value) -> Self {
        Reply::raw(200, v.to_string())
    }

    /// A status with a raw body.
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Reply {
            status,
            body: body.into(),
            headers: Vec::new(),
            delay: Duration::ZERO,
            held: false,
            held_after: None,
        }
    }

    /// An error of the OpenAI shape.
    pub fn error(status: u16, message: &str) -> Self {
        Reply::raw(
            status,
            json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string(),
        )
    }

    /// A chat completion answering `text`, with usage.
    pub fn chat(text: &str) -> Self {
        Reply::json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
        }))
    }

    /// A chat completion asking for tool calls `(id, name, arguments)`.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        Reply::json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}
        }))
    }

    /// The same with a header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The same, after a wait.
    pub fn after(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    /// The same, streamed to a request asking `stream: true` up to its `n`th event, the rest
    /// held until the test calls [`Server::release`]: the answer is partly written.
    pub fn held_after(mut self, n: usize) -> Self {
        self.held_after = Some(n);
        self
    }

    /// The same, held until the test calls [`Server::release`]: the request stays in flight
    /// (the caller waits for its answer) as long as the test needs.
    pub fn held(mut self) -> Self {
        self.held = true;
        self
    }
}

/// Which forms of structured output (`response_format`) the server takes, like a real one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Structured {
    /// Every form (the default).
    #[default]
    Any,
    /// As OpenAI does: `json_schema` taken; `json_object` with a `schema` refused (a 400
    /// naming the unknown parameter).
    OpenAi,
    /// As llama-cpp-python's server does: `json_schema` refused with a 500 whose body names
    /// `response_format`; `json_object` (with a `schema`) taken.
    LlamaCpp,
    /// No `response_format` at all: a 400 naming it.
    NoFormat,
}

struct State {
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Reply>>,
    /// Answer every request with this once the script is used up.
    always: Mutex<Option<Reply>>,
    /// Opened by [`Server::release`]: held replies go out.
    gate: tokio::sync::watch::Sender<bool>,
    structured: Mutex<Structured>,
}

/// The running server.
pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a server on 127.0.0.1, on a free port.
    pub fn start() -> Server {
        let state = Arc::new(State {
            requests: Mutex::default(),
            script: Mutex::default(),
            always: Mutex::default(),
            gate: tokio::sync::watch::Sender::new(false),
            structured: Mutex::default(),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for the test server");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a free port on 127.0.0.1");
                addr_tx
                    .send(listener.local_addr().expect("its address"))
                    .expect("the test waits for the address");
                let app =
                    Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
                        let st = st.clone();
                        async move { answer(&st, uri, headers, body).await }
                    });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await
                    .expect("the test server runs");
            });
        });
        let addr = addr_rx.recv().expect("the server starts");
        Server {
            addr,
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues answers, in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.state.script.lock().unwrap().extend(replies);
        self
    }

    /// Answers every request with `reply` once the script is used up.
    pub fn always(&self, reply: Reply) -> &Self {
        *self.state.always.lock().unwrap() = Some(reply);
        self
    }

    /// Takes structured output as `s` says; a refused request gets the refusal and leaves the
    /// script as it is.
    pub fn structured(&self, s: Structured) -> &Self {
        *self.state.structured.lock().unwrap() = s;
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// How many requests it received.
    pub fn count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// Lets every held reply ([`Reply::held`]) go out, now and from now on.
    pub fn release(&self) {
        self.state.gate.send_replace(true);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn answer(st: &State, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let recorded = Recorded {
        path: uri.path().to_owned(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    };
    st.requests.lock().unwrap().push(recorded.clone());
    let form = recorded.body["response_format"]["type"].as_str();
    let structured = *st.structured.lock().unwrap();
    if let Some(refusal) = refusal(structured, form) {
        return (
            StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [("content-type", "application/json")],
            refusal.body,
        )
            .into_response();
    }
    let scripted = st.script.lock().unwrap().pop_front();
    let reply = scripted
        .or_else(|| st.always.lock().unwrap().clone())
        .unwrap_or_else(|| default_reply(&recorded));
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if reply.held {
        let mut open = st.gate.subscribe();
        // Bounded: a test that never releases fails on its own timeout, the server goes on.
        let _ = tokio::time::timeout(crate::WAIT_TIMEOUT * 5, open.wait_for(|open| *open)).await;
    }
    let streamed = recorded.body["stream"] == true && reply.status == 200;
    let events = if streamed { sse_of(&reply.body) } else { None };
    let is_events = events.is_some();
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = match (events, reply.held_after) {
        (Some(events), Some(n)) => {
            // The first `n` events now, the rest when the gate opens.
            let cut = events
                .match_indices("\n\n")
                .nth(n.saturating_sub(1))
                .map_or(0, |(i, _)| i + 2);
            let (now, later) = events.split_at(if n == 0 { 0 } else { cut });
            let (now, later) = (now.to_owned(), later.to_owned());
            let open = st.gate.subscribe();
            let body = futures_util::stream::unfold(
                (Some(now), Some(later), open),
                |(now, later, mut open)| async move {
                    if let Some(n) = now {
                        return Some((Ok::<_, std::io::Error>(n), (None, later, open)));
                    }
                    let later = later?;
                    let _ =
                        tokio::time::timeout(crate::WAIT_TIMEOUT * 5, open.wait_for(|o| *o)).await;
                    Some((Ok(later), (None, None, open)))
                },
            );
            (status, axum::body::Body::from_stream(body)).into_response()
        }
        (events, _) => (status, events.unwrap_or(reply.body)).into_response(),
    };
    resp.headers_mut().insert(
        "content-type",
        if is_events {
            "text/event-stream"
        } else {
            "application/json"
        }
        .parse()
        .expect("a header value"),
    );
    for (k, v) in reply.headers {
        resp.headers_mut()
            .insert(k, v.parse().expect("a header value"));
    }
    resp
}

/// A chat completion's body as the events of a streamed one (`None`: not a chat completion,
/// sent as is).
fn sse_of(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let message = v["choices"].get(0)?.get("message")?;
    let mut chunks: Vec<Value> = Vec::new();
    let delta = |d: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]});
    chunks.push(delta(json!({"role": "assistant", "content": ""})));
    let text = message["content"].as_str().unwrap_or_default();
    let mut rest = text;
    while !rest.is_empty() {
        let word = rest.trim_start();
        let start = rest.len() - word.len();
        let end = start + word.find(char::is_whitespace).unwrap_or(word.len());
        let (piece, after) = rest.split_at(end);
        chunks.push(delta(json!({"content": piece})));
        rest = after;
    }
    for (i, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let args = call["function"]["arguments"].as_str().unwrap_or_default();
        let (a, b) = args.split_at(args.len() / 2);
        chunks.push(delta(json!({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": a}}]})));
        chunks.push(delta(
            json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}),
        ));
    }
    if !v["usage"].is_null() {
        chunks.push(json!({"object": "chat.completion.chunk", "choices": [], "usage": v["usage"]}));
    }
    let mut out = String::new();
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    Some(out)
}

/// How a server taking structured output as `s` refuses `response_format` type `form`.
fn refusal(s: Structured, form: Option<&str>) -> Option<Reply> {
    match (s, form?) {
        (Structured::LlamaCpp, "json_schema") => Some(Reply::raw(
            500,
            json!({"error": {
                "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]",
                "type": "internal_server_error",
                "param": null,
                "code": null
            }})
            .to_string(),
        )),
        (Structured::OpenAi, "json_object") => Some(Reply::error(
            400,
            "Unknown parameter: 'response_format.schema'.",
        )),
        (Structured::NoFormat, _) => Some(Reply::error(
            400,
            "Unrecognized request argument supplied: response_format",
        )),
        _ => None,
    }
}

/// Without a script: a chat completion echoing the last user message, or embeddings of
/// `[characters, words, 1]` per input.
fn default_reply(r: &Recorded) -> Reply {
    if r.path.ends_with("/embeddings") {
        let inputs = r.body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let t = t.as_str().unwrap_or_default();
                json!({"object": "embedding", "index": i, "embedding": [t.chars().count() as f32, t.split_whitespace().count() as f32, 1.0]})
            })
            .collect();
        return Reply::json(
            json!({"object": "list", "data": data, "usage": {"prompt_tokens": inputs.len() * 2, "total_tokens": inputs.len() * 2}}),
        );
    }
    let last = r.body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    Reply::chat(&format!("echo: {last}"))
}
