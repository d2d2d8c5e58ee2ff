//! The `std-ai` operators against a real OpenAI-compatible HTTP server (started by the test on
//! 127.0.0.1) and against the offline models: one request per firing, the API key, retries
//! and their budget, bad answers, tool calls, and no request at all on back and replay.

use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use cameleon::capabilities::{CapabilitiesBuilder, CodeSource, Runtime};
use cameleon::models::{FlatMemory, OpenAiChat, OpenAiConfig, OpenAiEmbedder};
use cameleon::operator::capability::{Capabilities, MemoryItem, ToolManifest};
use cameleon::ops::ai::ModelCall;
use cameleon::ops::{Agent, Embed, Index, Llm, LlmJson, Passages, Retrieve, Sink, Source};
use cameleon::prelude::*;
use cameleon::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use test_support::openai::{Reply, Server, Structured};

/// Settings for the test server: quick retries, short timeouts.
fn config(server: &Server) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(server.base_url(), "test-model");
    c.backoff_ms = 1;
    c.max_backoff_ms = 5_000;
    c.timeout_ms = 5_000;
    c
}

/// A capability runtime whose generations hold what `f` registers, beside the built-in
/// defaults and the program's tools.
fn runtime(f: impl Fn(&mut CapabilitiesBuilder) + Send + Sync + 'static) -> Runtime {
    Runtime::builder()
        .source(CodeSource::new("the test", move |b| {
            f(b);
            Ok(())
        }))
        .build()
        .expect("capabilities")
}

/// A runtime with an `openai` chat model named `name`.
fn chat_runtime(name: &str, c: &OpenAiConfig) -> Runtime {
    let model =
        Arc::new(OpenAiChat::new(c, &format!("chat model `{name}`")).expect("valid settings"));
    let name = name.to_owned();
    runtime(move |b| {
        b.chat(name.clone(), model.clone());
    })
}

/// An engine for `net` with `rt`'s current generation pinned.
fn engine(rt: &Runtime, net: Net) -> Cvm {
    rt.cvm(net, ".").build()
}

/// `question` (a source) → `op` → `out` (a sink).
fn one_op_net(prompt: &str, op: impl Operator, input: &str, output: &str) -> Net {
    let mut b = Net::builder("one-op");
    b.add("question", Source::new(prompt));
    b.add("ask", op);
    b.add("out", Sink::new());
    b.connect("question.out_data", format!("ask.{input}"))
        .connect(format!("ask.{output}"), "out.in_data");
    b.build().expect("a valid net")
}

fn llm_net(model: &str) -> Net {
    one_op_net(
        "What is a chameleon?",
        Llm::new().model(model).system("Be brief."),
        "in_prompt",
        "out_text",
    )
}

fn out(cvm: &Cvm) -> Vec<Value> {
    cvm.received("out").iter().map(|v| v.to_json()).collect()
}

fn error_of(end: &EndState) -> String {
    match end {
        EndState::Error { error, .. } => error.clone(),
        other => panic!("expected ERROR, got {other:?}"),
    }
}

fn llm_log(cvm: &Cvm) -> cameleon::ops::ai::FiringLog {
    let id = cvm.net().op_id("ask").expect("an op named ask");
    let node = cvm.net().op(id);
    let log = if let Some(l) = node.downcast_ref::<Llm>() {
        l.log().clone()
    } else if let Some(l) = node.downcast_ref::<LlmJson>() {
        l.log().clone()
    } else if let Some(l) = node.downcast_ref::<Agent>() {
        l.log().clone()
    } else {
        panic!("`ask` is not a std-ai operator")
    };
    log.last().cloned().expect("the operator fired")
}

// ---------------------------------------------------------------------------------------------
// One request per firing, the request's shape, the record in history

#[test]
fn llm_sends_one_request_per_firing_and_records_it_with_its_usage() {
    let server = Server::start();
    let rt = chat_runtime("t_one", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_one"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "one firing, one request");
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].authorization, None,
        "no api_key_env: no Authorization header"
    );
    assert_eq!(reqs[0].body["model"], "test-model");
    assert_eq!(
        reqs[0].body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is a chameleon?"}])
    );
    assert_eq!(out(&cvm), [json!("echo: What is a chameleon?")]);

    let log = llm_log(&cvm);
    assert_eq!(
        log.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((11, 5))
    );
    match &log.calls[..] {
        [
            ModelCall::Chat {
                model,
                kind,
                request,
                reply,
                quoted,
            },
        ] => {
            assert_eq!((model.as_str(), kind.as_str()), ("t_one", "openai"));
            assert!(!quoted, "an OpenAI-compatible model is generative");
            assert_eq!(request.messages[1].content, "What is a chameleon?");
            assert_eq!(reply.text, "echo: What is a chameleon?");
        }
        other => panic!("one chat call expected, got {other:?}"),
    }
}

#[test]
fn context_passages_are_sent_before_the_question() {
    let server = Server::start();
    let rt = chat_runtime("t_ctx", &config(&server));
    let mut b = Net::builder("ctx");
    b.add("question", Source::new("Why?"));
    b.add("doc", Source::new("Because it is. Nothing else."));
    b.add("split", Passages::new(15));
    b.add("ask", Llm::new().model("t_ctx"));
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("doc.out_data", "split.in_data")
        .connect("split.out_data", "ask.in_context")
        .connect("ask.out_text", "out.in_data");
    let mut cvm = engine(&rt, b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let body = &server.requests()[0].body;
    let content = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        content.ends_with("[1] Because it is.\n[2] Nothing else.\n\nQuestion: Why?"),
        "{content}"
    );
}

#[test]
fn back_and_replay_never_call_the_model_again() {
    let server = Server::start();
    let rt = chat_runtime("t_replay", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_replay"));
    cvm.run().unwrap();
    let first = out(&cvm);
    let steps = cvm.depth();
    assert_eq!(server.count(), 1);

    cvm.rewind();
    assert_eq!(cvm.depth(), 0);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.depth(), steps);
    assert_eq!(out(&cvm), first, "the replay gives the recorded answer");
    for _ in 0..2 {
        cvm.back().unwrap();
    }
    cvm.step().unwrap();
    cvm.step().unwrap();
    assert_eq!(server.count(), 1, "no request after back and replay");
    assert_eq!(
        llm_log(&cvm).calls.len(),
        1,
        "the replayed firing's record is back"
    );

    // Executing anew (a new branch) does call it again: the count above can move.
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    assert_eq!(server.count(), 2);
}

// ---------------------------------------------------------------------------------------------
// Retries, budgets, bad answers

#[test]
fn a_429_is_retried_after_its_retry_after_then_succeeds() {
    let server = Server::start();
    server.script([
        Reply::error(429, "slow down").header("retry-after", "1"),
        Reply::chat("fine now"),
    ]);
    let rt = chat_runtime("t_429", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_429"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!("fine now")]);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].at.duration_since(reqs[0].at);
    assert!(
        waited >= Duration::from_millis(1000),
        "Retry-After: 1 means a second, not the 1 ms backoff: waited {waited:?}"
    );
}

#[test]
fn a_500_is_retried_until_the_budget_ends_in_error() {
    let server = Server::start();
    server.always(Reply::error(500, "the GPU caught fire"));
    let mut c = config(&server);
    c.max_retries = 2;
    let rt = chat_runtime("t_500", &c);
    let mut cvm = engine(&rt, llm_net("t_500"));
    let end = cvm.run().unwrap();
    let e = error_of(&end);
    assert_eq!(server.count(), 3, "one try and two retries");
    assert!(
        e.contains("500") && e.contains("the GPU caught fire"),
        "{e}"
    );
    assert!(e.contains("gave up after 3 attempts"), "{e}");
    assert!(e.contains("chat model `t_500` (openai)"), "{e}");
    assert!(out(&cvm).is_empty());
}

#[test]
fn a_4xx_fails_at_once_with_the_servers_message_and_a_hint() {
    let server = Server::start();
    server.always(Reply::error(404, "model `test-model` not found"));
    let rt = chat_runtime("t_404", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_404"));
    let e = error_of(&cvm.run().unwrap());
    assert_eq!(server.count(), 1, "a 4xx is not retried");
    assert!(
        e.contains("404") && e.contains("model `test-model` not found"),
        "{e}"
    );
    assert!(e.contains("check base_url"), "{e}");
}

#[test]
fn malformed_json_from_the_server_is_a_clear_error() {
    let server = Server::start();
    server.always(Reply::raw(200, "{\"choices\": [oops"));
    let rt = chat_runtime("t_bad_json", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_bad_json"));
    let e = error_of(&cvm.run().unwrap());
    assert_eq!(server.count(), 1, "a malformed answer is not retried");
    assert!(e.contains("not a chat completion"), "{e}");
    assert!(e.contains("it began: {\"choices\": [oops"), "{e}");
}

#[test]
fn a_server_that_does_not_answer_in_time_is_a_timeout() {
    let server = Server::start();
    server.always(Reply::chat("late").after(Duration::from_secs(3)));
    let mut c = config(&server);
    c.timeout_ms = 200;
    c.max_retries = 0;
    let rt = chat_runtime("t_timeout", &c);
    let mut cvm = engine(&rt, llm_net("t_timeout"));
    let e = error_of(&cvm.run().unwrap());
    assert!(
        e.contains("no answer from") && e.contains("within 200 ms"),
        "{e}"
    );
}

#[test]
fn an_unreachable_endpoint_says_so() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    c.max_retries = 1;
    c.backoff_ms = 1;
    let rt = chat_runtime("t_unreachable", &c);
    let e = error_of(&engine(&rt, llm_net("t_unreachable")).run().unwrap());
    assert!(e.contains("cannot connect to"), "{e}");
    assert!(e.contains("gave up after 2 attempts"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// The API key

const CHILD: &str = "CAMELEON_MODELS_TEST_CHILD";
const KEY_VAR: &str = "CAMELEON_TEST_API_KEY";
/// With characters that change under percent-encoding and base64, so every form differs.
const PLANTED: &str = "sk-planted/7f3c+9e21=d4b8%a650&";

/// Runs test `name` of this binary again in a child process whose environment holds the
/// planted key (a test cannot set its own environment without `unsafe`).
fn run_in_child(name: &str) -> Output {
    test_support::Cmd::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env(KEY_VAR, PLANTED)
        .run()
}

/// In the parent: runs the test in a child and checks that it passed and that nothing it
/// printed holds the key. Returns true in the child, where the test body runs.
fn in_child_with_key(name: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let o = run_in_child(name);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the child ran the test:\n{stdout}"
    );
    test_support::secrets::assert_absent(PLANTED, "the child's stdout", stdout.as_bytes());
    test_support::secrets::assert_absent(PLANTED, "the child's stderr", stderr.as_bytes());
    false
}

#[test]
fn the_key_is_read_at_call_time_so_a_missing_variable_fails_the_call_without_a_request() {
    let server = Server::start();
    let c = config(&server).api_key_env("CAMELEON_TEST_KEY_THAT_IS_NOT_SET");
    // Building the model does not need the key…
    let rt = chat_runtime("t_nokey", &c);
    // …calling it does, and sends nothing without it.
    let e = error_of(&engine(&rt, llm_net("t_nokey")).run().unwrap());
    assert_eq!(server.count(), 0);
    assert!(
        e.contains("the environment variable `CAMELEON_TEST_KEY_THAT_IS_NOT_SET`")
            && e.contains("is not set"),
        "{e}"
    );
}

#[test]
fn the_key_is_sent_as_a_bearer_token_and_appears_in_no_output() {
    if !in_child_with_key("the_key_is_sent_as_a_bearer_token_and_appears_in_no_output") {
        return;
    }
    // In the child, with the planted key in the environment.
    let server = Server::start();
    // The second request is refused, and the server quotes the key back in its message (as
    // OpenAI does, partly masked): the error must not repeat it.
    server.script([
        Reply::chat("hello"),
        Reply::error(401, &format!("Incorrect API key provided: {PLANTED}")),
    ]);
    let c = config(&server).api_key_env(KEY_VAR);
    let rt = chat_runtime("t_key", &c);
    let mut cvm = engine(&rt, llm_net("t_key"));
    let mut events = Vec::new();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let auth = server.requests()[0].authorization.clone();
    assert!(
        auth.as_deref() == Some(&format!("Bearer {PLANTED}")[..]),
        "the Authorization header is `Bearer <key>`"
    );
    // Everything a run shows: values, the operator's record (its journaled state), the net
    // as .cm, the model's debug form.
    for e in cvm.history().entries() {
        for f in &e.firings {
            for (_, t) in &f.written {
                events.push(
                    cvm.token(*t)
                        .map(|t| t.value.to_json().to_string())
                        .unwrap_or_default(),
                );
            }
        }
    }
    events.push(serde_json::to_string(&llm_log(&cvm)).unwrap());
    events.push(cvm.net().to_cm());
    let caps = rt.pin(cvm.net(), ".");
    events.push(format!("{:?}", caps.chat("t_key").unwrap()));
    events.push(format!("{c:?} {}", serde_json::to_string(&c).unwrap()));

    let mut failing = engine(&rt, llm_net("t_key"));
    let end = failing.run().unwrap();
    let e = error_of(&end);
    assert!(
        e.contains("401") && e.contains("[redacted]"),
        "the server's message, redacted: {e}"
    );
    events.push(e);
    events.push(format!("{end:?}"));

    for (i, text) in events.iter().enumerate() {
        // Printed so the parent greps it too.
        println!("output {i}: {text}");
        test_support::secrets::assert_absent(PLANTED, &format!("output {i}"), text.as_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// llm_json

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

#[test]
fn llm_json_sends_an_invalid_answer_back_and_accepts_the_corrected_one() {
    let server = Server::start();
    server.script([
        Reply::chat("Sure! Here it is: n = 1"),
        Reply::chat("{\"n\": \"one\"}"),
        Reply::chat("```json\n{\"n\": 1}\n```"),
    ]);
    let rt = chat_runtime("t_json_ok", &config(&server));
    let net = one_op_net(
        "Count.",
        LlmJson::new(schema()).model("t_json_ok"),
        "in_prompt",
        "out_data",
    );
    let mut cvm = engine(&rt, net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!({"n": 1})]);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema()}})
    );
    let msgs = reqs[2].body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap()["content"].as_str().unwrap();
    assert!(
        last.starts_with("That answer is invalid: at `/n`:"),
        "{last}"
    );
    assert_eq!(llm_log(&cvm).calls.len(), 3, "every attempt is recorded");
}

#[test]
fn llm_json_fails_after_its_retries_naming_the_problem() {
    let server = Server::start();
    server.always(Reply::chat("{\"m\": 2}"));
    let rt = chat_runtime("t_json_bad", &config(&server));
    let mut op = LlmJson::new(schema()).model("t_json_bad");
    op.retries = 1;
    let mut cvm = engine(&rt, one_op_net("Count.", op, "in_prompt", "out_data"));
    let e = error_of(&cvm.run().unwrap());
    assert_eq!(server.count(), 2, "one try and one retry");
    assert!(
        e.contains("no valid answer in 2 attempts") && e.contains("\"n\""),
        "{e}"
    );
}

#[test]
fn llm_json_refuses_a_schema_that_is_not_one_when_built_from_cm() {
    let e = Net::from_cm(
        "cameleon: 1\nname: bad\noperators:\n  - id: q\n    type: source\n    params: {value: x}\n  - id: j\n    type: llm_json\n    params:\n      schema: {type: 12}\n  - id: out\n    type: sink\nconnections:\n  - {from: q.out_data, to: j.in_prompt}\n  - {from: j.out_data, to: out.in_data}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("schema") && e.contains("not a valid JSON Schema"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Structured output on every OpenAI-compatible server

/// `question` → two `llm_json` (`ask`, `ask2`) of chat model `model` → `out`, `out2`.
fn two_json_net(model: &str) -> Net {
    let mut b = Net::builder("two-json");
    b.add("question", Source::new("Count."));
    b.add("ask", LlmJson::new(schema()).model(model));
    b.add("ask2", LlmJson::new(schema()).model(model));
    b.add("out", Sink::new());
    b.add("out2", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("question.out_data", "ask2.in_prompt")
        .connect("ask.out_data", "out.in_data")
        .connect("ask2.out_data", "out2.in_data");
    b.build().expect("a valid net")
}

/// The `response_format` of each request the server received (`null` for none).
fn formats(server: &Server) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(|r| {
            r.body
                .get("response_format")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect()
}

#[test]
fn a_llama_cpp_server_gets_json_object_after_refusing_json_schema_once_per_provider() {
    let server = Server::start();
    server.structured(Structured::LlamaCpp).script([
        Reply::chat("{\"n\": \"one\"}"),
        Reply::chat("{\"n\": 1}"),
        Reply::chat("{\"n\": 2}"),
    ]);
    let rt = chat_runtime("t_llama", &config(&server));
    let mut cvm = engine(&rt, two_json_net("t_llama"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!({"n": 1})]);
    let out2: Vec<Value> = cvm.received("out2").iter().map(|v| v.to_json()).collect();
    assert_eq!(out2, [json!({"n": 2})]);
    // 1: json_schema, refused with a 500 naming response_format — not retried as an outage
    // (max_retries is 3); 2: json_object, an answer that breaks the schema, checked here and
    // sent back; 3: the corrected one; 4: the second firing goes straight to json_object.
    let object = json!({"type": "json_object", "schema": schema()});
    let f = formats(&server);
    assert_eq!(f.len(), 4, "{f:?}");
    assert_eq!(f[0]["type"], "json_schema");
    assert_eq!(&f[1..], [object.clone(), object.clone(), object]);
}

#[test]
fn an_openai_server_gets_json_schema_and_nothing_else() {
    let server = Server::start();
    server
        .structured(Structured::OpenAi)
        .script([Reply::chat("{\"n\": 1}"), Reply::chat("{\"n\": 2}")]);
    let rt = chat_runtime("t_oai", &config(&server));
    let mut cvm = engine(&rt, two_json_net("t_oai"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let f = formats(&server);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f.iter().all(|f| f["type"] == "json_schema"), "{f:?}");
}

#[test]
fn a_server_taking_no_response_format_gets_the_schema_in_the_prompt() {
    let server = Server::start();
    server
        .structured(Structured::NoFormat)
        .script([Reply::chat("{\"n\": 1}"), Reply::chat("{\"n\": 2}")]);
    let rt = chat_runtime("t_plain", &config(&server));
    let mut cvm = engine(&rt, two_json_net("t_plain"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let f = formats(&server);
    assert_eq!(f.len(), 4, "two refusals, then the prompt, twice: {f:?}");
    assert_eq!(
        (&f[0]["type"], &f[1]["type"]),
        (&json!("json_schema"), &json!("json_object"))
    );
    assert_eq!(&f[2..], [Value::Null, Value::Null]);
    // The schema is in the prompt (llm_json's system message), once.
    let reqs = server.requests();
    let system = reqs[2].body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(system.matches(&schema().to_string()).count(), 1, "{system}");
}

#[test]
fn structured_output_pinned_in_the_capabilities_file_is_the_only_form_tried() {
    let dir = std::env::temp_dir().join(format!("cameleon-structured-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let caps = |server: &Server, form: &str| {
        let path = dir.join(format!("{form}.yaml"));
        std::fs::write(
            &path,
            format!(
                "chat:\n  t_pin: {{kind: openai, base_url: \"{}\", model: m, backoff_ms: 1, structured_output: {form}}}\n",
                server.base_url()
            ),
        )
        .unwrap();
        Runtime::builder()
            .config_file(path)
            .build()
            .expect("a valid file")
    };
    // `prompt`, on a server that would take json_schema: no response_format is sent.
    let server = Server::start();
    server
        .structured(Structured::OpenAi)
        .script([Reply::chat("{\"n\": 1}")]);
    let mut cvm = engine(
        &caps(&server, "prompt"),
        one_op_net(
            "Count.",
            LlmJson::new(schema()).model("t_pin"),
            "in_prompt",
            "out_data",
        ),
    );
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(formats(&server), [Value::Null]);
    // `json_schema`, on a server that refuses it: one request, an error naming the setting.
    let server = Server::start();
    server.structured(Structured::LlamaCpp);
    let mut cvm = engine(
        &caps(&server, "json_schema"),
        one_op_net(
            "Count.",
            LlmJson::new(schema()).model("t_pin"),
            "in_prompt",
            "out_data",
        ),
    );
    let e = error_of(&cvm.run().unwrap());
    assert_eq!(server.count(), 1, "neither retried nor another form: {e}");
    assert!(e.contains("500") && e.contains("response_format"), "{e}");
    assert!(e.contains("pins `structured_output: json_schema`"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_structured_output_is_refused_at_its_value() {
    let e = cameleon::capabilities::load_config_str(
        "caps.yaml",
        "chat:\n  default: {kind: openai, model: m, structured_output: json_shema}\n",
    )
    .unwrap_err();
    let p = &e.problems()[0];
    assert_eq!((p.line, p.column), (2, 56), "{e}");
    assert!(
        p.message.contains(
            "`structured_output` is one of json_schema, json_object, prompt, not \"json_shema\""
        ),
        "{e}"
    );
    assert_eq!(p.hint.as_deref(), Some("did you mean `json_schema`?"));
    // A chat setting: an embedder has no such key.
    let e = cameleon::capabilities::load_config_str(
        "caps.yaml",
        "embedders:\n  default: {kind: openai, model: m, structured_output: prompt}\n",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown setting `structured_output`"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// agent: tool calls through the gate

/// A call as a tool sees it: its arguments, principal and idempotency key.
type SeenCall = (Value, Option<String>, Option<String>);

/// A tool `add {a, b}` that records the calls the gate passes it (with their principal and
/// idempotency key).
#[derive(Debug)]
struct Add {
    manifest: ToolManifest,
    calls: std::sync::Mutex<Vec<SeenCall>>,
}

impl Add {
    fn new() -> Arc<Add> {
        Arc::new(Add {
            manifest: ToolManifest {
                name: "add".into(),
                description: "Adds two numbers.".into(),
                effects: cameleon::tools::Effect::None,
                input_schema: json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                output_schema: json!({"type": "number"}),
                idempotent: false,
            },
            calls: std::sync::Mutex::default(),
        })
    }

    fn calls(&self) -> Vec<SeenCall> {
        self.calls.lock().unwrap().clone()
    }
}

impl Tool for Add {
    fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }
    fn call<'a>(&'a self, cx: &'a ToolContext, args: Value) -> ToolOutput<'a> {
        self.calls.lock().unwrap().push((
            args.clone(),
            cx.principal.clone(),
            cx.idempotency_key.clone(),
        ));
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        ToolOutput::Ready(Ok(json!(sum)))
    }
}

/// A runtime with chat model `name` and the tool `add`.
fn agent_runtime(name: &str, c: &OpenAiConfig, add: &Arc<Add>) -> Runtime {
    let model =
        Arc::new(OpenAiChat::new(c, &format!("chat model `{name}`")).expect("valid settings"));
    let (name, add) = (name.to_owned(), add.clone());
    runtime(move |b| {
        b.chat(name.clone(), model.clone());
        b.tool(add.clone());
    })
}

/// `question` → `agent` (named `ask`) → `out`, under tool policy `allow`.
fn agent_net(agent: Agent, allow: &[&str]) -> Net {
    let mut b = Net::builder("agent");
    b.add("question", Source::new("What is 2 + 3?"));
    b.add("ask", agent);
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("ask.out_text", "out.in_data");
    b.tools(cameleon::net::ToolPolicy::allow(allow.iter().copied()));
    b.build().expect("a valid net")
}

#[test]
fn agent_calls_a_tool_through_the_gate_then_answers() {
    let server = Server::start();
    server.script([
        Reply::tool_calls(&[("call_1", "add", json!({"a": 2, "b": 3}))]),
        Reply::chat("2 + 3 = 5"),
    ]);
    let add = Add::new();
    let rt = agent_runtime("t_agent", &config(&server), &add);
    let mut cvm = engine(
        &rt,
        agent_net(Agent::new().model("t_agent").tools(["add"]), &["add"]),
    );
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!("2 + 3 = 5")]);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "two turns");
    assert_eq!(
        reqs[0].body["tools"],
        json!([{"type": "function", "function": {"name": "add", "description": "Adds two numbers.", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}])
    );
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["tool_calls"][0]["function"]["name"], "add");
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["tool_call_id"], "call_1");
    let result: Value = serde_json::from_str(msgs[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({"status": "ok", "content": 5.0, "error": null})
    );

    // Through the gate, with the firing's idempotency key, the turn and the call's rank.
    let calls = add.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, json!({"a": 2, "b": 3}));
    assert_eq!(calls[0].1.as_deref(), Some("agent:ask"));
    let key = format!("{}/1/2/ask/turn/1/call/1", cvm.run_id());
    assert_eq!(calls[0].2.as_deref(), Some(key.as_str()));

    let log = llm_log(&cvm);
    assert!(matches!(
        &log.calls[..],
        [
            ModelCall::Chat { .. },
            ModelCall::Tool { .. },
            ModelCall::Chat { .. }
        ]
    ));
    assert_eq!(
        log.usage.map(|u| u.prompt_tokens),
        Some(20 + 11),
        "usage summed over turns"
    );

    // Back and replay: neither the model nor the tool runs again.
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.run().unwrap();
    assert_eq!((server.count(), add.calls().len()), (2, 1));
}

#[test]
fn agent_tool_calls_the_policy_denies_never_run() {
    let server = Server::start();
    server.script([
        Reply::tool_calls(&[("call_1", "add", json!({"a": 2, "b": 3}))]),
        Reply::chat("I may not add."),
    ]);
    let add = Add::new();
    let rt = agent_runtime("t_agent_denied", &config(&server), &add);
    // The net allows no tool: the gate denies `add`.
    let mut cvm = engine(&rt, agent_net(Agent::new().model("t_agent_denied"), &[]));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(add.calls().is_empty(), "a denied call never runs");
    let msgs = server.requests()[1].body["messages"].clone();
    let result: Value = serde_json::from_str(msgs[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["status"], "denied", "{result}");
}

#[test]
fn agent_fails_after_max_turns_of_tool_calls() {
    let server = Server::start();
    server.always(Reply::tool_calls(&[("c", "add", json!({"a": 1, "b": 1}))]));
    let add = Add::new();
    let rt = agent_runtime("t_agent_loop", &config(&server), &add);
    // Whatever the gate answers, the model asks again.
    let net = agent_net(Agent::new().model("t_agent_loop").max_turns(3), &["add"]);
    let mut cvm = engine(&rt, net);
    let e = error_of(&cvm.run().unwrap());
    assert_eq!(server.count(), 3);
    assert_eq!(
        add.calls().len(),
        3,
        "one call per turn, each through the gate"
    );
    assert!(e.contains("no final answer in 3 turns (max_turns)"), "{e}");
    assert!(out(&cvm).is_empty(), "a failed firing emits nothing");
}

// ---------------------------------------------------------------------------------------------
// Embeddings and retrieval

#[test]
fn embed_batches_requests_and_keeps_the_input_order() {
    let server = Server::start();
    let mut c = config(&server);
    c.batch_size = 2;
    let e = Arc::new(OpenAiEmbedder::new(&c, "embedder `t_emb`").unwrap());
    let rt = runtime(move |b| {
        b.embedder("t_emb", e.clone());
    });
    let mut b = Net::builder("emb");
    b.add("doc", Source::new("One. Two two. Three three three."));
    b.add("split", Passages::new(1));
    b.add("emb", Embed::new().model("t_emb"));
    b.add("out", Sink::new());
    b.connect("doc.out_data", "split.in_data")
        .connect("split.out_data", "emb.in_data")
        .connect("emb.out_data", "out.in_data");
    let mut cvm = engine(&rt, b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "3 texts in batches of 2");
    assert_eq!(reqs[0].path, "/v1/embeddings");
    assert_eq!(
        reqs[0].body,
        json!({"model": "test-model", "input": ["One.", "Two two."]})
    );
    let got = &out(&cvm)[0];
    assert_eq!(
        got["texts"],
        json!(["One.", "Two two.", "Three three three."])
    );
    assert_eq!(
        got["vectors"],
        json!([[4.0, 1.0, 1.0], [8.0, 2.0, 1.0], [18.0, 3.0, 1.0]])
    );
    let id = cvm.net().op_id("emb").unwrap();
    let log = cvm
        .net()
        .op(id)
        .downcast_ref::<Embed>()
        .unwrap()
        .log()
        .clone();
    assert_eq!(log.usage().map(|u| u.prompt_tokens), Some(4 + 2));
}

/// doc → passages → embed → index → retrieve (after index) → out; question → retrieve.
fn retrieval_net(memory: &str) -> Net {
    let mut b = Net::builder("retrieval");
    b.add("doc", Source::new(
        "Chameleons change colour to signal their mood. Their tongues are longer than their bodies. \
         They live in Africa and Madagascar.",
    ));
    b.add("split", Passages::new(1));
    b.add("emb", Embed::new());
    b.add("idx", Index::new().memory(memory));
    b.add("question", Source::new("Are their tongues long?"));
    b.add("find", Retrieve::new(1).memory(memory));
    b.add("out", Sink::new());
    b.connect("doc.out_data", "split.in_data")
        .connect("split.out_data", "emb.in_data")
        .connect("emb.out_data", "idx.in_data")
        .connect("idx.out_data", "find.in_after")
        .connect("question.out_data", "find.in_query")
        .connect("find.out_data", "out.in_data");
    b.build().unwrap()
}

#[test]
fn retrieve_waits_for_the_index_and_finds_the_closest_passage_offline() {
    // No source: the built-in defaults (`hash` embedder, a `flat` memory per name).
    let rt = runtime(|b| {
        b.memory("t_retrieve", Arc::new(FlatMemory::new()));
    });
    let mut cvm = engine(&rt, retrieval_net("t_retrieve"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        out(&cvm),
        [json!(["Their tongues are longer than their bodies."])]
    );
    let fired: Vec<&str> = cvm
        .history()
        .entries()
        .iter()
        .flat_map(|e| {
            e.firings
                .iter()
                .map(|f| cvm.net().op(f.op).name.as_str())
                .collect::<Vec<_>>()
        })
        .collect();
    let pos = |n: &str| fired.iter().position(|f| *f == n).unwrap();
    assert!(
        pos("find") > pos("idx"),
        "retrieve fires after index: {fired:?}"
    );
}

#[test]
fn an_engine_built_without_capabilities_has_the_offline_defaults_and_a_memory_of_its_own() {
    // `Cvm::new` alone: generation 0 offers `default` chat, embedder and memory, offline.
    let mut cvm = Cvm::new(retrieval_net("default"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        out(&cvm),
        [json!(["Their tongues are longer than their bodies."])]
    );
    let mut chat = Cvm::new(llm_net("default"));
    assert_eq!(chat.run().unwrap(), EndState::Completed);
    assert_eq!(out(&chat).len(), 1);
    // The offline models are named by their kinds too.
    let mut named = Cvm::new(llm_net("extractive"));
    assert_eq!(named.run().unwrap(), EndState::Completed);
    assert_eq!(out(&named), out(&chat));
    let mut b = Net::builder("hashed");
    b.add("question", Source::new("Are their tongues long?"));
    b.add("split", Passages::new(100));
    b.add("embed", Embed::new().model("hash"));
    b.add("out", Sink::new());
    b.connect("question.out_data", "split.in_data")
        .connect("split.out_data", "embed.in_data")
        .connect("embed.out_data", "out.in_data");
    let mut hashed = Cvm::new(b.build().unwrap());
    assert_eq!(
        hashed.run().unwrap(),
        EndState::Completed,
        "`model: hash` in generation 0"
    );

    // A second engine does not see what the first indexed: its `default` memory is its own.
    let mut b = Net::builder("lookup");
    b.add("question", Source::new("Are their tongues long?"));
    b.add("find", Retrieve::new(1));
    b.add("out", Sink::new());
    b.connect("question.out_data", "find.in_query")
        .connect("find.out_data", "out.in_data");
    let mut other = Cvm::new(b.build().unwrap());
    assert_eq!(other.run().unwrap(), EndState::Completed);
    assert_eq!(out(&other), [json!([])]);

    // Any other name is missing in generation 0, and the error says how to configure it.
    let e = error_of(&Cvm::new(llm_net("big")).run().unwrap());
    assert!(
        e.contains("no chat model `big` in capability generation 0"),
        "{e}"
    );
    assert!(e.contains("cameleon.yaml"), "{e}");
}

#[test]
fn back_over_index_empties_the_memory_and_the_replay_fills_it_again() {
    let memory = Arc::new(FlatMemory::new());
    let m = memory.clone();
    let rt = runtime(move |b| {
        b.memory("t_undo", m.clone());
    });
    let mut cvm = engine(&rt, retrieval_net("t_undo"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(memory.count(), 3);
    let rows = memory.rows();

    // Back to before `idx` fired.
    let idx = cvm.net().op_id("idx").unwrap();
    while cvm.fire_count(idx) > 0 {
        cvm.back().unwrap();
    }
    assert_eq!(memory.count(), 0, "the backward step took the items out");
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(memory.rows(), rows, "the replay put them back");
    assert_eq!(
        out(&cvm),
        [json!(["Their tongues are longer than their bodies."])]
    );
}

#[test]
fn indexing_a_text_again_replaces_it_and_back_restores_the_old_item() {
    let memory = Arc::new(FlatMemory::new());
    let m = memory.clone();
    let rt = runtime(move |b| {
        b.memory("t_replace", m.clone());
    });
    let old = MemoryItem {
        id: Index::id_of("Their tongues are longer than their bodies."),
        text: "Their tongues are longer than their bodies.".into(),
        vector: vec![1.0; 384],
        meta: json!({"from": "before"}),
    };
    memory.insert(vec![old.clone()]).unwrap();
    let mut cvm = engine(&rt, retrieval_net("t_replace"));
    cvm.run().unwrap();
    assert_eq!(memory.count(), 3, "the same text is one item");
    let idx = cvm.net().op_id("idx").unwrap();
    while cvm.fire_count(idx) > 0 {
        cvm.back().unwrap();
    }
    assert_eq!(
        memory.rows(),
        vec![old],
        "the replaced item is back as it was"
    );
}

// ---------------------------------------------------------------------------------------------
// index: back, replay and resume reach the memory, never the embedder

/// The `hash` embedder, counting the calls it gets.
#[derive(Debug)]
struct Counting {
    inner: cameleon::models::HashEmbedder,
    calls: std::sync::atomic::AtomicUsize,
}

impl Counting {
    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl cameleon::operator::capability::Embedder for Counting {
    fn kind(&self) -> &str {
        "counting"
    }
    fn dim(&self) -> usize {
        cameleon::operator::capability::Embedder::dim(&self.inner)
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> cameleon::operator::capability::CapFuture<
        'a,
        Result<Vec<Vec<f32>>, cameleon::operator::capability::CapabilityError>,
    > {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        cameleon::operator::capability::Embedder::embed(&self.inner, texts)
    }
}

/// A runtime whose `default` embedder counts its calls and whose `default` memory is `memory`
/// (a fresh process: a fresh, empty memory).
fn counted_runtime() -> (Runtime, Arc<Counting>, Arc<FlatMemory>) {
    let (e, m) = (
        Arc::new(Counting {
            inner: cameleon::models::HashEmbedder::new(384),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }),
        Arc::new(FlatMemory::new()),
    );
    let (e2, m2) = (e.clone(), m.clone());
    let rt = runtime(move |b| {
        b.embedder("default", e2.clone());
        b.memory("default", m2.clone());
    });
    (rt, e, m)
}

#[test]
fn back_and_replay_over_index_never_call_the_embedder_and_the_memory_follows() {
    let (rt, embedder, memory) = counted_runtime();
    let mut cvm = engine(&rt, retrieval_net("default"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(embedder.calls(), 2, "embed once, the question once");
    assert_eq!(memory.count(), 3);
    let rows = memory.rows();

    cvm.rewind();
    assert_eq!(memory.count(), 0, "back over index took its items out");
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(memory.rows(), rows, "the replay put them back");
    assert_eq!(embedder.calls(), 2, "no embedding on back or replay");
    assert_eq!(
        out(&cvm),
        [json!(["Their tongues are longer than their bodies."])]
    );
}

#[test]
fn a_resumed_run_finds_its_index_without_embedding_again() {
    let dir = test_support::TempDir::new("models-resume-index");
    let db = dir.join("resume-index.db");
    let journal = cameleon::journal::Journal::create(&db).unwrap();

    // The first process: runs until `idx` has fired, then stops (as if killed).
    let (rt, embedder, memory) = counted_runtime();
    let mut cvm = engine(&rt, retrieval_net("default"));
    let id = journal
        .start(&mut cvm, &cameleon::journal::RunOptions::default())
        .unwrap();
    let idx = cvm.net().op_id("idx").unwrap();
    while cvm.fire_count(idx) == 0 {
        cvm.step().unwrap();
    }
    assert_eq!((embedder.calls(), memory.count()), (1, 3));
    drop(cvm);

    // A second process: fresh capabilities, an empty memory.
    let (rt2, embedder2, memory2) = counted_runtime();
    assert_eq!(memory2.count(), 0);
    let resumed = journal
        .resume_with(Some(&id), |net, base| rt2.pin(net, base))
        .unwrap();
    assert_eq!(
        memory2.rows(),
        memory.rows(),
        "the journal's entries put the index back"
    );
    assert_eq!(embedder2.calls(), 0, "restoring embeds nothing");
    let mut cvm = resumed.cvm;
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(embedder2.calls(), 1, "only the question, after the resume");
    assert_eq!(
        out(&cvm),
        [json!(["Their tongues are longer than their bodies."])]
    );
    std::fs::remove_file(&db).ok();
}

#[test]
fn a_missing_model_names_itself_the_generation_and_where_to_configure_it() {
    let rt = runtime(|_| {});
    let mut cvm = engine(&rt, llm_net("gpt"));
    let e = error_of(&cvm.run().unwrap());
    assert!(
        e.contains("no chat model `gpt` in capability generation 1"),
        "{e}"
    );
    assert!(e.contains("it has `default`"), "{e}");
    assert!(e.contains("under `chat:`"), "{e}");

    // With nothing configured at all, `default` is the offline extractive model.
    let mut cvm = engine(&Runtime::default(), llm_net("default"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let kinds: Vec<(String, String)> = Runtime::default()
        .current()
        .entries()
        .into_iter()
        .map(|(s, n, k, _)| (format!("{s}.{n}"), k.to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("chat.default".to_owned(), "extractive".to_owned()),
            ("chat.extractive".to_owned(), "extractive".to_owned()),
            ("embedders.default".to_owned(), "hash".to_owned()),
            ("embedders.hash".to_owned(), "hash".to_owned()),
            ("memories.default".to_owned(), "flat".to_owned()),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Models that are not generative: quoted, never asked to invent

/// A user's provider that says it is not generative: it echoes its prompt.
#[derive(Debug)]
struct Echo;

impl cameleon::operator::capability::ChatModel for Echo {
    fn kind(&self) -> &str {
        "t_echo"
    }
    fn generative(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        r: &'a cameleon::operator::capability::ChatRequest,
    ) -> cameleon::operator::capability::CapFuture<
        'a,
        Result<
            cameleon::operator::capability::ChatReply,
            cameleon::operator::capability::CapabilityError,
        >,
    > {
        let text = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Box::pin(async move {
            Ok(cameleon::operator::capability::ChatReply {
                text: format!("{{\"n\": 42, \"echo\": {text:?}}}"),
                ..Default::default()
            })
        })
    }
}

#[test]
fn llm_json_refuses_a_model_that_is_not_generative_and_invents_nothing() {
    // The offline default, and a user's provider that says `generative() == false`: the
    // firing fails before asking (the echo would have answered schema-valid JSON).
    let rt = runtime(|b| {
        b.chat("t_echo", Arc::new(Echo));
    });
    for (model, kind) in [
        ("default", "extractive"),
        ("extractive", "extractive"),
        ("t_echo", "t_echo"),
    ] {
        let net = one_op_net(
            "Order 42: 3 apples for Alice",
            LlmJson::new(schema()).model(model),
            "in_prompt",
            "out_data",
        );
        let mut cvm = engine(&rt, net);
        let e = error_of(&cvm.run().unwrap());
        assert!(
            e.starts_with(&format!(
                "chat model `{model}` ({kind}) is not generative: it only quotes sentences of its context, so it cannot fill a JSON Schema"
            )),
            "{e}"
        );
        assert!(
            e.contains("kind: openai") && e.contains("cameleon.yaml"),
            "{e}"
        );
        assert!(out(&cvm).is_empty());
    }
}

#[test]
fn an_agent_offered_tools_refuses_a_model_that_is_not_generative_one_without_quotes() {
    let add = Add::new();
    let rt = runtime({
        let add = add.clone();
        move |b| {
            b.tool(add.clone());
        }
    });
    let mut cvm = engine(&rt, agent_net(Agent::new().tools(["add"]), &["add"]));
    let e = error_of(&cvm.run().unwrap());
    assert!(
        e.contains("chat model `default` (extractive) is not generative")
            && e.contains("cannot decide to call tools (it is offered add)"),
        "{e}"
    );
    assert!(add.calls().is_empty(), "no tool ran");

    // Generation 0 has no tool: nothing is offered, and the agent's answer is a quotation,
    // recorded as one.
    let mut b = Net::builder("agent");
    b.add("question", Source::new("Chameleons change colour. Why?"));
    b.add("ask", Agent::new());
    b.add("out", Sink::new());
    b.connect("question.out_data", "ask.in_prompt")
        .connect("ask.out_text", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!("Chameleons change colour.")]);
    assert!(matches!(
        &llm_log(&cvm).calls[..],
        [ModelCall::Chat { quoted: true, .. }]
    ));
}

#[test]
fn llm_with_a_model_that_is_not_generative_records_its_answer_as_quoted() {
    let mut cvm = Cvm::new(llm_net("extractive"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!("What is a chameleon?")]);
    let id = cvm.net().op_id("ask").unwrap();
    let history = cvm.history();
    let state = history.state_after(2, 0).expect("the llm's state");
    assert_eq!(history.entries()[1].firings[0].op, id);
    assert_eq!(
        cameleon::ops::ai::quoted_in(state),
        [("extractive".to_owned(), "extractive".to_owned())]
    );
    // An `openai` model's answer is not a quotation.
    let server = Server::start();
    let rt = chat_runtime("t_gen", &config(&server));
    let mut cvm = engine(&rt, llm_net("t_gen"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let history = cvm.history();
    assert!(cameleon::ops::ai::quoted_in(history.state_after(2, 0).unwrap()).is_empty());
}

#[test]
fn a_map_s_inner_runs_use_the_capabilities_of_the_firing_that_starts_them() {
    // One question per item, each asked of chat model `t_map` (the test server) by an `llm`
    // inside the map's net.
    let server = Server::start();
    let rt = chat_runtime("t_map", &config(&server));
    let inner = Net::from_cm(
        "cameleon: 1
name: ask_each
operators:
  - {id: item, type: input, params: {name: item}}
  - {id: text, type: source, params: {value: '{{q}}'}}
  - {id: fill, type: template}
  - {id: ask, type: llm, params: {model: t_map}}
  - {id: result, type: output, params: {name: result}}
connections:
  - {from: item.out_data, to: fill.in_data}
  - {from: text.out_data, to: fill.in_template}
  - {from: fill.out_data, to: ask.in_prompt}
  - {from: ask.out_text, to: result.in_data}
",
    )
    .unwrap();
    let mut b = Net::builder("map-llm");
    b.add(
        "items",
        cameleon::ops::Const::new(json!([{"q": "one?"}, {"q": "two?"}])),
    );
    b.add("each", cameleon::ops::Map::new(inner).unwrap());
    b.add("out", Sink::new());
    b.connect("items.out_data", "each.in_items")
        .connect("each.out_results", "out.in_data");
    let mut cvm = engine(&rt, b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(out(&cvm), [json!(["echo: one?", "echo: two?"])]);
    assert_eq!(server.count(), 2);
}
