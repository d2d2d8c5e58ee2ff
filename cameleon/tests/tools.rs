//! The tool gate: one policy, one result shape, and a call that is not allowed never runs;
//! the standard tools and their confinement; the `tool` operator in a run (replay and back
//! never call a tool again).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cameleon::capabilities::Runtime;
use cameleon::net::ToolPolicy;
use cameleon::operator::capability::{CapFuture, ToolCall, ToolStatus};
use cameleon::ops::{CallTool, Const, Sink};
use cameleon::prelude::*;
use cameleon::tool;
use cameleon::tools::{Approval, Approver, ToolGate, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value as Json, json};

// ---------------------------------------------------------------------------------------------
// Test tools: each counts its executions under the key it is called with, so tests running in
// parallel do not see each other's calls.

static RUNS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

fn ran(key: &str) {
    let mut m = RUNS.lock().unwrap();
    *m.get_or_insert_with(HashMap::new)
        .entry(key.to_owned())
        .or_default() += 1;
}

fn runs(key: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(key).copied())
        .unwrap_or(0)
}

/// Arguments of the test tools.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Key {
    /// The counter to bump.
    key: String,
}

/// Counts a call and returns the key.
#[tool(name = "test_count", effects = none)]
fn count(args: Key) -> Result<String, ToolError> {
    ran(&args.key);
    Ok(args.key)
}

/// Counts a call, then panics.
#[tool(name = "test_panic", effects = none)]
fn panics(args: Key) -> Result<String, ToolError> {
    ran(&args.key);
    panic!("boom in {}", args.key);
}

/// Counts a call, asynchronously.
#[tool(name = "test_async", effects = none)]
async fn count_async(args: Key) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    ran(&args.key);
    Ok(format!("async {}", args.key))
}

/// Sleeps longer than its limit.
#[tool(name = "test_slow", timeout_ms = 20, effects = none)]
async fn slow(args: Key) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    ran(&args.key);
    Ok(args.key)
}

/// Reads the context: the base folder it is confined to and who asks.
#[tool(name = "test_context", effects = none)]
fn context(cx: &ToolContext, args: Key) -> Result<Json, ToolError> {
    ran(&args.key);
    Ok(json!({"base": cx.base_dir().display().to_string(), "principal": cx.principal}))
}

/// Counts a call; says nothing of its effects, so it is taken to act on the outside world.
#[tool(name = "test_send")]
fn send(args: Key) -> Result<String, ToolError> {
    ran(&args.key);
    Ok(args.key)
}

fn registry() -> Arc<ToolRegistry> {
    Arc::clone(ToolRegistry::global())
}

fn gate(allow: &[&str]) -> ToolGate {
    ToolGate::new(
        registry(),
        Some(&ToolPolicy::allow(allow.iter().copied())),
        ".",
    )
}

fn call(tool: &str, key: &str) -> ToolCall {
    ToolCall::new(tool, json!({ "key": key }))
}

// ---------------------------------------------------------------------------------------------
// The policy

#[test]
fn an_allowed_call_runs_once_and_returns_ok_with_meta() {
    let r = gate(&["test_count"]).call_blocking(call("test_count", "allowed"));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.content, json!("allowed"));
    assert_eq!(r.error, None);
    assert_eq!(r.meta.tool, "test_count");
    assert_eq!(r.meta.origin, "local");
    assert_eq!(r.meta.attempts, 1);
    assert_eq!(runs("allowed"), 1);
    let shape = serde_json::to_value(&r).unwrap();
    assert_eq!(
        shape.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["status", "content", "error", "meta"]
    );
    assert_eq!(
        shape["meta"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["tool", "origin", "duration_ms", "attempts"]
    );
}

#[test]
fn without_a_tools_key_every_call_is_denied_and_never_runs() {
    let g = ToolGate::new(registry(), None, ".");
    let r = g.call_blocking(call("test_count", "no-policy"));
    assert_eq!(r.status, ToolStatus::Denied);
    assert!(
        r.error.as_deref().unwrap().contains("no `tools:` key"),
        "{r:?}"
    );
    assert_eq!(r.meta.attempts, 0);
    assert_eq!(runs("no-policy"), 0, "a denied call never runs");
}

#[test]
fn a_tool_not_listed_is_denied_and_never_runs() {
    let r = gate(&["calc"]).call_blocking(call("test_count", "not-listed"));
    assert_eq!(r.status, ToolStatus::Denied);
    assert_eq!(runs("not-listed"), 0);
    // The async entry point applies the same policy.
    let r =
        cameleon::runtime::block_on(gate(&["calc"]).call(call("test_async", "not-listed-async")));
    assert_eq!(r.status, ToolStatus::Denied);
    assert_eq!(runs("not-listed-async"), 0);
}

#[derive(Debug)]
struct Person {
    says_yes: bool,
    asked: Mutex<Vec<String>>,
}

impl Approver for Person {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> CapFuture<'a, Approval> {
        self.asked.lock().unwrap().push(call.tool.clone());
        let a = if self.says_yes {
            Approval::Approved
        } else {
            Approval::Refused("no".into())
        };
        Box::pin(std::future::ready(a))
    }
}

#[test]
fn an_approve_tool_without_anyone_to_ask_is_denied_saying_approval_is_needed() {
    let policy = ToolPolicy::allow(Vec::<String>::new()).approve(["test_count"]);
    let g = ToolGate::new(registry(), Some(&policy), ".");
    let r = g.call_blocking(call("test_count", "approve-nobody"));
    assert_eq!(r.status, ToolStatus::Denied);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("needs a person's approval"),
        "{r:?}"
    );
    assert_eq!(runs("approve-nobody"), 0);
}

#[test]
fn an_approve_tool_runs_only_when_the_approver_says_yes() {
    let policy = ToolPolicy::allow(Vec::<String>::new()).approve(["test_count"]);
    for yes in [false, true] {
        let person = Arc::new(Person {
            says_yes: yes,
            asked: Mutex::new(Vec::new()),
        });
        let g = ToolGate::new(registry(), Some(&policy), ".").approver(person.clone());
        let key = format!("approve-{yes}");
        let r = g.call_blocking(call("test_count", &key));
        assert_eq!(*person.asked.lock().unwrap(), ["test_count"]);
        if yes {
            assert_eq!(r.status, ToolStatus::Ok);
            assert_eq!(runs(&key), 1);
        } else {
            assert_eq!(r.status, ToolStatus::Denied);
            assert_eq!(runs(&key), 0);
        }
    }
}

#[test]
fn cli_style_gate_allows_the_named_tool_alone() {
    let g = ToolGate::allow_only(registry(), "test_count", ".");
    assert_eq!(
        g.call_blocking(call("test_count", "only")).status,
        ToolStatus::Ok
    );
    assert_eq!(
        g.call_blocking(call("test_async", "only-other")).status,
        ToolStatus::Denied
    );
    assert_eq!(runs("only-other"), 0);
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
#[cfg(feature = "json-schema")]
fn arguments_that_do_not_fit_the_schema_are_an_error_naming_the_schema_path() {
    let g = gate(&["test_count", "calc"]);
    let r = g.call_blocking(ToolCall::new("test_count", json!({"key": 7})));
    assert_eq!(r.status, ToolStatus::Error);
    let e = r.error.unwrap();
    assert!(
        e.contains("`/key`") && e.contains("/properties/key/type"),
        "{e}"
    );
    assert!(e.contains("expected string"), "{e}");
    let r = g.call_blocking(ToolCall::new("test_count", json!({"key": "x", "extra": 1})));
    assert!(r.error.unwrap().contains("unexpected property `extra`"));
    let r = g.call_blocking(ToolCall::new("calc", json!({})));
    assert!(
        r.error
            .unwrap()
            .contains("missing required property \"expr\"")
    );
    assert_eq!(r.meta.attempts, 0);
}

/// Without the `json-schema` feature the gate checks no schema: a `#[tool]` still refuses
/// what it cannot read into its arguments, before running.
#[test]
#[cfg(not(feature = "json-schema"))]
fn without_json_schema_a_tool_refuses_arguments_it_cannot_read() {
    let g = gate(&["test_count", "calc"]);
    let r = g.call_blocking(ToolCall::new("test_count", json!({"key": 7})));
    assert_eq!(r.status, ToolStatus::Error);
    let e = r.error.unwrap();
    assert!(e.contains("invalid arguments for `test_count`"), "{e}");
    assert_eq!(runs("7"), 0, "the tool did not run");
    let r = g.call_blocking(ToolCall::new("calc", json!({})));
    let e = r.error.unwrap();
    assert!(e.contains("missing field `expr`"), "{e}");
}

#[test]
fn a_secret_in_bad_arguments_is_never_quoted() {
    let r = gate(&["test_count"]).call_blocking(ToolCall::new(
        "test_count",
        json!({"key": ["hunter2-secret"]}),
    ));
    assert_eq!(r.status, ToolStatus::Error);
    assert!(!r.error.unwrap().contains("hunter2"));
}

#[test]
fn an_unknown_allowed_tool_is_an_error_with_a_did_you_mean() {
    let r = gate(&["cal"]).call_blocking(ToolCall::new("cal", json!({})));
    assert_eq!(r.status, ToolStatus::Error);
    assert!(r.error.unwrap().contains("did you mean `calc`?"));
}

#[test]
fn a_panicking_tool_is_an_error_not_a_crash() {
    let r = gate(&["test_panic"]).call_blocking(call("test_panic", "panic"));
    assert_eq!(r.status, ToolStatus::Error);
    assert!(
        r.error
            .unwrap()
            .contains("the tool panicked: boom in panic")
    );
    assert_eq!(runs("panic"), 1);
}

#[test]
fn an_async_tool_runs_through_both_entry_points() {
    let g = gate(&["test_async"]);
    assert_eq!(
        g.call_blocking(call("test_async", "a1")).content,
        json!("async a1")
    );
    let r = cameleon::runtime::block_on(g.call(call("test_async", "a2")));
    assert_eq!(r.content, json!("async a2"));
    assert_eq!((runs("a1"), runs("a2")), (1, 1));
}

#[test]
fn a_tool_past_its_time_limit_times_out() {
    let r = gate(&["test_slow"]).call_blocking(call("test_slow", "slow"));
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    assert_eq!(r.error.as_deref(), Some("timed out after 20 ms"));
    assert!(r.meta.duration_ms >= 20);
    assert_eq!(runs("slow"), 0, "cut short before it finished");
}

#[test]
fn a_tool_sees_its_base_folder_and_who_asks() {
    let g = ToolGate::new(
        registry(),
        Some(&ToolPolicy::allow(["test_context"])),
        "some/folder",
    );
    let r = g.call_blocking(call("test_context", "cx").principal("op1"));
    assert_eq!(
        r.content,
        json!({"base": "some/folder", "principal": "op1"})
    );
}

// ---------------------------------------------------------------------------------------------
// Standard tools

/// The file tools allowed, `write_file` granted (as `--grant write_file` does).
fn fs_gate(base: &Path) -> ToolGate {
    ToolGate::new(
        registry(),
        Some(&ToolPolicy::allow(["read_file", "list_dir", "write_file"])),
        base,
    )
    .grants(["write_file"])
}

#[test]
fn file_tools_read_list_and_write_inside_the_base_folder() {
    let base = test_support::TempDir::new("tools-fs");
    let g = fs_gate(&base);
    let w = g.call_blocking(ToolCall::new(
        "write_file",
        json!({"path": "sub/note.txt", "content": "hello"}),
    ));
    assert_eq!(w.status, ToolStatus::Ok, "{w:?}");
    assert_eq!(w.content, json!({"path": "sub/note.txt", "bytes": 5}));
    let r = g.call_blocking(ToolCall::new("read_file", json!({"path": "sub/note.txt"})));
    assert_eq!(r.content, json!("hello"));
    let l = g.call_blocking(ToolCall::new("list_dir", json!({"path": "."})));
    assert_eq!(
        l.content,
        json!([{"name": "sub", "kind": "dir", "size": 0}])
    );
    let l = g.call_blocking(ToolCall::new("list_dir", json!({"path": "sub"})));
    assert_eq!(
        l.content,
        json!([{"name": "note.txt", "kind": "file", "size": 5}])
    );
}

#[test]
fn file_tools_refuse_parent_dirs_absolute_paths_and_links_out_without_leaking_content() {
    let root = test_support::TempDir::new("tools-confine");
    let base = root.join("base");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(root.join("secret.txt"), "TOP-SECRET-CONTENT").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("secret.txt"), base.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&root, base.join("up")).unwrap();
    }
    let g = fs_gate(&base);
    let secret = root.join("secret.txt").display().to_string();
    let mut refused = vec![
        ToolCall::new("read_file", json!({"path": "../secret.txt"})),
        ToolCall::new("read_file", json!({"path": secret})),
        ToolCall::new("list_dir", json!({"path": ".."})),
        ToolCall::new(
            "write_file",
            json!({"path": "../x.txt", "content": "TOP-SECRET-CONTENT"}),
        ),
        ToolCall::new(
            "write_file",
            json!({"path": "/tmp/x.txt", "content": "TOP-SECRET-CONTENT"}),
        ),
    ];
    if cfg!(unix) {
        refused.extend([
            ToolCall::new("read_file", json!({"path": "link.txt"})),
            ToolCall::new("read_file", json!({"path": "up/secret.txt"})),
            ToolCall::new("list_dir", json!({"path": "up"})),
            ToolCall::new(
                "write_file",
                json!({"path": "link.txt", "content": "TOP-SECRET-CONTENT"}),
            ),
            ToolCall::new(
                "write_file",
                json!({"path": "up/new.txt", "content": "TOP-SECRET-CONTENT"}),
            ),
        ]);
    }
    for c in refused {
        let what = format!("{} {}", c.tool, c.args);
        let r = g.call_blocking(c);
        assert_eq!(r.status, ToolStatus::Error, "{what}: {r:?}");
        let e = r.error.unwrap();
        assert!(
            e.contains("leaves the base folder")
                || e.contains("absolute")
                || e.contains("leads out"),
            "{what}: {e}"
        );
        assert!(!e.contains("TOP-SECRET"), "{what} leaked: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join("secret.txt")).unwrap(),
        "TOP-SECRET-CONTENT"
    );
    assert!(!root.join("x.txt").exists() && !root.join("new.txt").exists());
}

#[test]
fn calc_and_json_query_through_the_gate() {
    let g = gate(&["calc", "json_query"]);
    let c = |expr: &str| g.call_blocking(ToolCall::new("calc", json!({ "expr": expr })));
    assert_eq!(c("2 + 3 * 4").content, json!(14));
    assert_eq!(c("2 ^ 3 ^ 2").content, json!(512));
    assert_eq!(c("-2 ^ 2").content, json!(-4));
    assert_eq!(c("7 / 2").content, json!(3.5));
    assert_eq!(c("(1 + 2) % 2").content, json!(1));
    let e = c("1 / (2 - 2)");
    assert_eq!(e.status, ToolStatus::Error);
    assert!(e.error.unwrap().contains("division by zero"));
    let e = c("2 * (3");
    assert!(e.error.unwrap().contains("syntax error at column 5"));

    let q = |v: Json, p: &str| {
        g.call_blocking(ToolCall::new("json_query", json!({"value": v, "path": p})))
    };
    let doc = json!({"items": [{"name": "a"}, {"name": "b"}]});
    assert_eq!(q(doc.clone(), "/items/1/name").content, json!("b"));
    assert_eq!(q(doc.clone(), "").content, doc);
    let miss = q(doc.clone(), "/items/5/name");
    assert_eq!(miss.status, ToolStatus::Error);
    assert!(miss.error.unwrap().contains("`/items` has no `5`"));
    assert!(
        q(doc, "items")
            .error
            .unwrap()
            .contains("is not a JSON Pointer")
    );
}

// ---------------------------------------------------------------------------------------------
// The `tool` operator in a run

fn tool_net(tool: &str, key: &str, policy: Option<ToolPolicy>, catch: bool) -> Net {
    let mut b = Net::builder("tool-run");
    b.add("args", Const::new(json!({ "key": key })));
    b.add("call", CallTool::new(tool));
    b.add("out", Sink::new());
    b.connect("args.out_data", "call.in_args")
        .connect("call.out_result", "out.in_data");
    if catch {
        b.add("failures", Sink::new());
        b.connect("call.error", "failures.in_data");
    }
    if let Some(p) = policy {
        b.tools(p);
    }
    b.build().unwrap()
}

fn run_net(net: Net) -> Cvm {
    let rt = Runtime::default();
    let mut cvm = rt.cvm(net, ".").build();
    cvm.run().unwrap();
    cvm
}

#[test]
fn the_tool_operator_emits_the_content_and_replay_and_back_never_call_again() {
    let net = tool_net(
        "test_count",
        "op-replay",
        Some(ToolPolicy::allow(["test_count"])),
        false,
    );
    let mut cvm = run_net(net);
    assert_eq!(cvm.received("out")[0].to_json(), json!("op-replay"));
    assert_eq!(runs("op-replay"), 1);
    // Back to the start and forward again: replayed from history, the tool is not called.
    while cvm.depth() > 0 {
        cvm.back().unwrap();
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!("op-replay"));
    assert_eq!(runs("op-replay"), 1, "replay never calls the tool again");
    // Refiring the tool's step does call it: that is a new firing.
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    assert_eq!(runs("op-replay"), 2);
}

#[test]
fn a_denied_call_ends_the_run_in_error_naming_the_tool_and_status() {
    let mut cvm = Runtime::default()
        .cvm(tool_net("test_count", "op-denied", None, false), ".")
        .build();
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "call");
            assert!(error.starts_with("tool `test_count` denied:"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runs("op-denied"), 0);
    // The marking is intact: the arguments still wait on the tool's input.
    assert_eq!(
        cvm.state_of("args.out_data -> call.in_args").unwrap().state,
        ConnState::New
    );
}

#[test]
fn with_error_connected_a_failed_call_is_data() {
    let net = tool_net(
        "test_panic",
        "op-caught",
        Some(ToolPolicy::allow(["test_panic"])),
        true,
    );
    let cvm = run_net(net);
    let failures = cvm.received("failures");
    assert_eq!(failures.len(), 1);
    let f = failures[0].to_json();
    assert_eq!(f["operator"], "call");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("tool `test_panic` error: the tool panicked"),
        "{f}"
    );
    assert!(cvm.received("out").is_empty());
}

#[test]
fn without_capabilities_a_run_denies_every_tool() {
    let net = tool_net(
        "test_count",
        "op-none",
        Some(ToolPolicy::allow(["test_count"])),
        false,
    );
    let mut cvm = Cvm::new(net);
    match cvm.run().unwrap() {
        EndState::Error { error, .. } => assert!(error.contains("without capabilities"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(runs("op-none"), 0);
}

#[test]
fn the_tool_operator_runs_in_parallel_mode_too() {
    let mut net = tool_net(
        "test_async",
        "op-parallel",
        Some(ToolPolicy::allow(["test_async"])),
        false,
    );
    net.config_mut().mode = Mode::Parallel;
    let cvm = run_net(net);
    assert_eq!(cvm.received("out")[0].to_json(), json!("async op-parallel"));
}

// ---------------------------------------------------------------------------------------------
// Approval: a tool under `approve:` asks a person through the `ask` mechanism (WAITING)

fn approve_policy(tool: &str) -> Option<ToolPolicy> {
    Some(ToolPolicy::allow(Vec::<String>::new()).approve([tool]))
}

#[test]
fn a_tool_under_approve_waits_for_a_person_and_a_yes_calls_it_once() {
    let net = tool_net("test_count", "ap-yes", approve_policy("test_count"), false);
    let mut cvm = Runtime::default().cvm(net, ".").build();
    match cvm.run().unwrap() {
        EndState::Waiting { waiting } => {
            assert_eq!(waiting.len(), 1);
            assert_eq!(waiting[0].op, "call");
            assert_eq!(
                waiting[0].prompt,
                r#"allow tool `test_count` with args {"key":"ap-yes"}?"#
            );
            assert_eq!(waiting[0].ty.name, "DataBool");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runs("ap-yes"), 0, "nothing runs before the answer");
    assert!(
        cvm.provide_json("call", json!("yes")).is_err(),
        "a DataBool"
    );
    cvm.provide_text("call", "yes").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(runs("ap-yes"), 1);
    assert_eq!(cvm.received("out")[0].to_json(), json!("ap-yes"));
    // Back over everything and forward again: replayed, neither asked nor called again.
    cvm.rewind();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(runs("ap-yes"), 1);
}

#[test]
fn a_no_gives_a_denied_result_and_the_tool_never_runs() {
    let net = tool_net("test_count", "ap-no", approve_policy("test_count"), false);
    let mut cvm = Runtime::default().cvm(net, ".").build();
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    cvm.provide_text("call", "no").unwrap();
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "call");
            assert!(error.starts_with("tool `test_count` denied:"), "{error}");
            assert!(error.contains("a person denied the call"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runs("ap-no"), 0);

    // Caught on `error`: the denial is data, and the answer is spent.
    let net = tool_net(
        "test_count",
        "ap-no-caught",
        approve_policy("test_count"),
        true,
    );
    let mut cvm = Runtime::default().cvm(net, ".").build();
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    cvm.provide_text("call", "no").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let f = cvm.received("failures")[0].to_json();
    assert_eq!(f["operator"], "call");
    assert!(f["message"].as_str().unwrap().contains("denied"), "{f}");
    assert_eq!(runs("ap-no-caught"), 0);
}

#[test]
fn each_call_is_asked_for_and_an_answer_serves_one_firing() {
    let net = Net::from_cm(
        "tools: {approve: [test_count]}\noperators:\n  - {id: a, type: const, params: {value: {key: ap-each}}}\n  - {id: b, type: const, params: {value: {key: ap-each}}}\n  - {id: m, type: merge}\n  - {id: call, type: tool, params: {name: test_count}}\n  - {id: out, type: sink}\n  - {id: failures, type: sink}\nconnections:\n  - {from: a.out_data, to: m.in_a}\n  - {from: b.out_data, to: m.in_b}\n  - {from: m.out_data, to: call.in_args}\n  - {from: call.out_result, to: out.in_data}\n  - {from: call.error, to: failures.in_data}\n",
    )
    .unwrap();
    let mut cvm = Runtime::default().cvm(net, ".").build();
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    cvm.provide_text("call", "no").unwrap();
    assert_eq!(
        cvm.run().unwrap().name(),
        "WAITING",
        "the second call is asked again"
    );
    assert_eq!(cvm.received("failures").len(), 1);
    cvm.provide_text("call", "yes").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(runs("ap-each"), 1);
    assert_eq!(cvm.received("out").len(), 1);
}

#[test]
#[cfg(feature = "journal")]
fn a_journaled_run_waits_for_the_approval_and_resumes_with_it() {
    use cameleon::journal::{Journal, RunOptions};
    let dir = test_support::TempDir::new("tools-approve-journal");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let rt = Runtime::default();
    let net = tool_net(
        "test_count",
        "ap-journal",
        approve_policy("test_count"),
        false,
    );
    let mut cvm = rt.cvm(net, ".").build();
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    drop(cvm);
    assert_eq!(journal.runs().unwrap()[0].status, "WAITING");
    let r = journal.resume(Some(&id)).unwrap();
    let mut cvm = r.cvm;
    cvm.set_capabilities(rt.pin(cvm.net(), "."));
    cvm.provide_text("call", "yes").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(runs("ap-journal"), 1);
    drop(cvm);
    // Resumed again (finished): restored, nothing asked or called.
    let r = journal.resume(Some(&id));
    assert!(
        matches!(
            &r,
            Err(cameleon::journal::JournalError::NothingToResume { .. })
        ) || r.as_ref().is_ok_and(|r| r.is_finished()),
        "{r:?}"
    );
    let again = journal.open_run(&id).unwrap();
    assert_eq!(again.cvm.received("out")[0].to_json(), json!("ap-journal"));
    assert_eq!(runs("ap-journal"), 1);
}

// ---------------------------------------------------------------------------------------------
// Effects and grants: a `.cm` file's `allow:` lets only `none` and `read` tools run unasked

#[test]
fn a_tool_that_says_nothing_of_its_effects_is_external_and_std_tools_say_theirs() {
    use cameleon::tools::Effect;
    let effects = |n: &str| registry().get(n).unwrap().manifest().effects;
    assert_eq!(effects("test_send"), Effect::External);
    assert_eq!(effects("test_count"), Effect::None);
    assert_eq!(effects("calc"), Effect::None);
    assert_eq!(effects("json_query"), Effect::None);
    assert_eq!(effects("read_file"), Effect::Read);
    assert_eq!(effects("list_dir"), Effect::Read);
    assert_eq!(effects("write_file"), Effect::Write);
    // A manifest without `effects` (an older satellite's) reads as `external`.
    let m: cameleon::tools::ToolManifest = serde_json::from_value(
        json!({"name": "x", "description": "", "input_schema": {}, "output_schema": true}),
    )
    .unwrap();
    assert_eq!(m.effects, Effect::External);
}

#[test]
fn an_ungranted_external_tool_under_allow_is_denied_naming_grant_and_never_runs() {
    let r = gate(&["test_send"]).call_blocking(call("test_send", "eff-1"));
    assert_eq!(r.status, ToolStatus::Denied, "{r:?}");
    let why = r.error.unwrap();
    assert!(why.contains("acts on the outside world"), "{why}");
    assert!(why.contains("--grant test_send"), "{why}");
    assert_eq!(runs("eff-1"), 0);
    // Granted, it runs.
    let r = gate(&["test_send"])
        .grants(["test_send"])
        .call_blocking(call("test_send", "eff-2"));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(runs("eff-2"), 1);
    // A grant lets in no tool the net does not list, nor one it lists under `approve:`.
    let r = gate(&["test_count"])
        .grants(["test_send"])
        .call_blocking(call("test_send", "eff-3"));
    assert_eq!(r.status, ToolStatus::Denied);
    let approve = ToolPolicy::allow(Vec::<String>::new()).approve(["test_send"]);
    let r = ToolGate::new(registry(), Some(&approve), ".")
        .grants(["test_send"])
        .call_blocking(call("test_send", "eff-4"));
    assert_eq!(r.status, ToolStatus::Denied);
    assert_eq!(runs("eff-3") + runs("eff-4"), 0);
    // An approved call runs (what the `tool` operator sends once a person said yes).
    let r = gate(&["test_send"]).call_blocking(call("test_send", "eff-5").approved_by("Ada"));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
}

#[test]
fn the_tool_operator_asks_before_an_ungranted_external_tool_and_a_grant_lets_it_run() {
    let net = || {
        tool_net(
            "test_send",
            "eff-op",
            Some(ToolPolicy::allow(["test_send"])),
            false,
        )
    };
    let mut cvm = Runtime::default().cvm(net(), ".").build();
    match cvm.run().unwrap() {
        EndState::Waiting { waiting } => {
            assert_eq!(waiting[0].op, "call");
            assert!(
                waiting[0].prompt.contains("--grant test_send"),
                "{}",
                waiting[0].prompt
            );
        }
        other => panic!("expected WAITING, got {other:?}"),
    }
    assert_eq!(runs("eff-op"), 0);
    let rt = Runtime::builder()
        .source(cameleon::capabilities::Grants::new(
            ["test_send"],
            "--grant",
        ))
        .build()
        .unwrap();
    let mut cvm = rt.cvm(net(), ".").build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(runs("eff-op"), 1);
}
