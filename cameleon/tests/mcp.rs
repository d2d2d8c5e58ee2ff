//! MCP servers' tools through the gate, against the reference server
//! `@modelcontextprotocol/server-everything` (npm; `scripts/packages` installs it): its tools
//! as `everything.TOOL` with their manifests and effects, calls from a `.cm` file, a tool
//! error, a server that dies mid-call (started again once, then failing clearly), streamable
//! HTTP, and a server's life bound to its capability generation (docs/mcp.md).
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use cameleon::capabilities::Runtime;
use cameleon::cm::Loader;
use cameleon::engine::EndState;
use cameleon::net::ToolPolicy;
use cameleon::operator::capability::{ToolCall, ToolStatus};
use cameleon::tools::{Effect, ToolGate};
use serde_json::json;
use test_support::TempDir;
use test_support::mcp::{alive, everything, processes_with, state};

/// A generous cap on waits for processes to come and go: it only turns a hang into a failure.
const CAP: Duration = Duration::from_secs(60);

/// A capabilities file (in `dir`) with the reference server over stdio as `everything`; its
/// command line carries `marker`, so the test finds its process.
fn caps(dir: &TempDir, marker: &str, extra: &str) -> std::path::PathBuf {
    let js = everything();
    let path = dir.path().join("caps.yaml");
    std::fs::write(
        &path,
        format!(
            "mcp:\n  everything: {{command: node, args: [{:?}, stdio, {marker:?}]{extra}}}\n",
            js.display().to_string()
        ),
    )
    .unwrap();
    path
}

fn gate(rt: &Runtime, allow: &[&str]) -> ToolGate {
    let g = rt.current();
    g.for_run(Some(&ToolPolicy::allow(allow.iter().copied())), ".")
        .gate()
        .clone()
}

/// The one process of the server carrying `marker` (waiting for it to appear).
fn server_pid(marker: &str) -> u32 {
    test_support::wait_for("the MCP server's process", CAP, || {
        let p = processes_with(marker);
        (p.len() == 1).then(|| p[0])
    })
}

/// How many bytes process `pid` has read so far (`rchar` of `/proc/PID/io`).
fn bytes_read(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("rchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

#[test]
fn the_reference_servers_tools_join_the_gate_as_server_dot_tool_with_their_manifests() {
    let dir = TempDir::new("mcp-list");
    let marker = format!("server-list-{}", std::process::id());
    let rt = Runtime::builder()
        .config_file(caps(&dir, &marker, ""))
        .build()
        .unwrap();
    // Nothing is started until a tool is needed.
    assert!(processes_with(&marker).is_empty());
    let g = rt.current();
    let names: Vec<String> = g.tools().names().map(str::to_owned).collect();
    for t in ["everything.echo", "everything.get-sum", "calc"] {
        assert!(names.contains(&t.to_owned()), "{t} missing from {names:?}");
    }
    let echo = g.tools().get("everything.echo").unwrap().manifest().clone();
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    // `readOnlyHint: true`, from a trusted file (given in code).
    assert_eq!(echo.effects, Effect::Read);
    assert_eq!(
        g.tools().get("everything.echo").unwrap().origin(),
        "mcp:everything"
    );
    assert_eq!(processes_with(&marker).len(), 1, "one server, started once");
}

#[test]
fn echo_and_sum_run_from_a_cm_file_and_a_tool_error_carries_the_servers_text() {
    let dir = TempDir::new("mcp-cm");
    let marker = format!("server-cm-{}", std::process::id());
    let rt = Runtime::builder()
        .config_file(caps(&dir, &marker, ""))
        .build()
        .unwrap();
    let net = Loader::new()
        .load_str(
            r#"cameleon: 1
name: mcp
tools:
  allow: [everything.echo, everything.get-sum]
operators:
  - {id: say, type: const, params: {value: {message: "bonjour"}}}
  - {id: echo, type: tool, params: {name: everything.echo}}
  - {id: nums, type: const, params: {value: {a: 2, b: 40}}}
  - {id: sum, type: tool, params: {name: everything.get-sum}}
  - {id: out, type: sink}
  - {id: total, type: sink}
connections:
  - {from: say.out_data, to: echo.in_args}
  - {from: echo.out_result, to: out.in_data}
  - {from: nums.out_data, to: sum.in_args}
  - {from: sum.out_result, to: total.in_data}
"#,
        )
        .unwrap();
    let mut cvm = rt.cvm(net, dir.path()).build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!("Echo: bonjour"));
    assert_eq!(
        cvm.received("total")[0].to_json(),
        json!("The sum of 2 and 40 is 42.")
    );

    // `isError`: status `error` with the server's text. The tool is not read-only, so it
    // needs the user's grant under `allow:`.
    let gate = gate(&rt, &["everything.gzip-file-as-resource"])
        .grants(["everything.gzip-file-as-resource"]);
    let r = gate.call_blocking(ToolCall::new(
        "everything.gzip-file-as-resource",
        json!({"name": "x.gz", "data": "ftp://example.invalid/x"}),
    ));
    assert_eq!(r.status, ToolStatus::Error, "{r:?}");
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("Unsupported URL protocol"),
        "{r:?}"
    );
    assert_eq!(r.meta.origin, "mcp:everything");
    // Ungranted, that `external` tool does not run unasked.
    let r = gate_without_grant(&rt).call_blocking(ToolCall::new(
        "everything.gzip-file-as-resource",
        json!({"name": "x.gz", "data": "ftp://example.invalid/x"}),
    ));
    assert_eq!(r.status, ToolStatus::Denied, "{r:?}");
    assert!(
        r.error
            .unwrap()
            .contains("--grant everything.gzip-file-as-resource")
    );
}

fn gate_without_grant(rt: &Runtime) -> ToolGate {
    gate(rt, &["everything.gzip-file-as-resource"])
}

#[test]
fn a_server_that_dies_mid_call_fails_that_call_is_started_again_once_then_fails_clearly() {
    let dir = TempDir::new("mcp-die");
    let marker = format!("server-die-{}", std::process::id());
    let rt = Runtime::builder()
        .config_file(caps(&dir, &marker, ""))
        .build()
        .unwrap();
    let gate = Arc::new(gate(
        &rt,
        &[
            "everything.echo",
            "everything.trigger-long-running-operation",
        ],
    ));
    let long = || {
        let gate = Arc::clone(&gate);
        std::thread::spawn(move || {
            gate.call_blocking(ToolCall::new(
                "everything.trigger-long-running-operation",
                json!({"duration": 600, "steps": 600}),
            ))
        })
    };
    // Started, and idle.
    let r = gate.call_blocking(ToolCall::new("everything.echo", json!({"message": "up"})));
    assert!(r.is_ok(), "{r:?}");
    let first = server_pid(&marker);
    let read = bytes_read(first);
    let call = long();
    // Killed once it has read the long call's request.
    test_support::wait_until("the server to read the call", CAP, || {
        bytes_read(first) > read
    });
    kill(first);
    let r = call.join().unwrap();
    assert_eq!(r.status, ToolStatus::Error, "{r:?}");
    let e = r.error.unwrap();
    assert!(
        e.contains("MCP server `everything`")
            && e.contains("stopped during the call")
            && e.contains("started again at the next call"),
        "{e}"
    );

    // Started again, once: the next call works on a new process.
    let r = gate.call_blocking(ToolCall::new(
        "everything.echo",
        json!({"message": "again"}),
    ));
    assert_eq!(r.content, json!("Echo: again"), "{r:?}");
    let second = server_pid(&marker);
    assert_ne!(first, second);

    // It dies again: its calls now fail, saying so.
    kill(second);
    test_support::wait_until("the second server to die", CAP, || !alive(second));
    // The call that finds it dead says it is not started again (the request may have gone out
    // before the exit was seen: then the call itself failed), and so do the calls after it.
    for _ in 0..2 {
        let r = gate.call_blocking(ToolCall::new("everything.echo", json!({"message": "x"})));
        assert_eq!(r.status, ToolStatus::Error, "{r:?}");
        let e = r.error.unwrap();
        assert!(
            e.contains("was started again once; it stopped again")
                || e.contains("was started again once already"),
            "{e}"
        );
    }
    let r = gate.call_blocking(ToolCall::new("everything.echo", json!({"message": "x"})));
    assert!(
        r.error
            .unwrap()
            .contains("was started again once; it stopped again")
    );
    assert!(
        processes_with(&marker).is_empty(),
        "not started a third time"
    );
}

#[test]
fn a_server_lives_with_its_generation_and_leaves_no_process_behind() {
    let dir = TempDir::new("mcp-gen");
    let marker = format!("server-gen-{}", std::process::id());
    let rt = Runtime::builder()
        .config_file(caps(&dir, &marker, ""))
        .build()
        .unwrap();
    let first = rt.current(); // what a run in flight holds
    let call = |g: &Arc<cameleon::capabilities::Generation>| {
        g.for_run(Some(&ToolPolicy::allow(["everything.echo"])), ".")
            .gate()
            .call_blocking(ToolCall::new("everything.echo", json!({"message": "hi"})))
    };
    assert!(call(&first).is_ok());
    let one = server_pid(&marker);
    // A reload starts nothing; the run in flight keeps its server.
    let second = rt.reload().unwrap();
    assert_eq!(processes_with(&marker), vec![one]);
    assert!(call(&second).is_ok(), "generation 2 starts its own server");
    let both = processes_with(&marker);
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(call(&first).is_ok(), "generation 1 still calls its own");
    // The run ends: generation 1 is dropped, and its server is gone — reaped, not a zombie.
    drop(first);
    test_support::wait_until("generation 1's server to be gone", CAP, || {
        state(one).is_none()
    });
    assert!(alive(both.iter().copied().find(|p| *p != one).unwrap()));
    drop(second);
    drop(rt);
    for pid in both {
        test_support::wait_until("every server to be gone", CAP, || state(pid).is_none());
    }
}

/// A runtime with the Python SDK's test server as `py`.
fn python_server(dir: &TempDir) -> Runtime {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/meta_server.py");
    let py = test_support::mcp::python();
    let path = dir.path().join("caps.yaml");
    std::fs::write(
        &path,
        format!(
            "mcp:\n  py: {{command: {:?}, args: [{:?}]}}\n",
            py.display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
    Runtime::builder().config_file(&path).build().unwrap()
}

#[test]
fn a_recorded_mcp_call_is_never_made_again_by_back_and_replay() {
    let dir = TempDir::new("mcp-replay");
    let rt = python_server(&dir);
    let net = Loader::new()
        .load_str(
            r#"cameleon: 1
name: once
tools:
  allow: [py.count]
operators:
  - {id: go, type: const, params: {value: {}}}
  - {id: count, type: tool, params: {name: py.count}}
  - {id: out, type: sink}
connections:
  - {from: go.out_data, to: count.in_args}
  - {from: count.out_result, to: out.in_data}
"#,
        )
        .unwrap();
    let mut cvm = rt.cvm(net, dir.path()).build();
    // `count` is external (the annotations say nothing): granted here, as `--grant` does.
    let caps = rt.current().for_run(cvm.net().tool_policy(), dir.path());
    let gate = caps.gate().clone().grants(["py.count"]);
    let caps: Arc<dyn cameleon::operator::capability::Capabilities> = caps.with_gate(gate.clone());
    cvm.set_capabilities(caps);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!({"result": 1}));
    while cvm.back().is_ok() {}
    assert_eq!(cvm.run().unwrap(), EndState::Completed, "replayed");
    assert_eq!(cvm.received("out")[0].to_json(), json!({"result": 1}));
    // The server counted one call: the replay made none.
    let r = gate.call_blocking(ToolCall::new("py.count", json!({})));
    assert_eq!(r.content, json!({"result": 2}), "{r:?}");
}

#[test]
fn the_idempotency_key_travels_in_the_requests_meta() {
    let dir = TempDir::new("mcp-meta");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/meta_server.py");
    let py = test_support::mcp::python();
    let path = dir.path().join("caps.yaml");
    std::fs::write(
        &path,
        format!(
            "mcp:\n  py: {{command: {:?}, args: [{:?}]}}\n",
            py.display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
    let rt = Runtime::builder().config_file(&path).build().unwrap();
    let gate = gate(&rt, &["py.meta"]).grants(["py.meta"]);
    let r =
        gate.call_blocking(ToolCall::new("py.meta", json!({})).idempotency_key("run-1/step-3/op"));
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.content, json!({"result": "run-1/step-3/op"}), "{r:?}");
}

#[test]
fn the_reference_server_answers_over_streamable_http() {
    let js = everything();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = test_support::Cmd::new("node")
        .arg(&js)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .spawn();
    server.wait_stderr("listening on port", test_support::WAIT_TIMEOUT, |t| {
        t.contains("listening on port")
    });
    let dir = TempDir::new("mcp-http");
    let path = dir.path().join("caps.yaml");
    std::fs::write(
        &path,
        format!("mcp:\n  web: {{url: \"http://127.0.0.1:{port}/mcp\"}}\n"),
    )
    .unwrap();
    let rt = Runtime::builder().config_file(&path).build().unwrap();
    let r = gate(&rt, &["web.get-sum"])
        .call_blocking(ToolCall::new("web.get-sum", json!({"a": 1, "b": 2})));
    assert_eq!(r.content, json!("The sum of 1 and 2 is 3."), "{r:?}");
}
