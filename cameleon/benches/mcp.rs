//! MCP benchmark: one call of the reference server's `echo` tool over stdio through the gate
//! (policy, lookup, argument check against the tool's schema, the hop to Caméléon's runtime,
//! the `_meta`, the result's conversion), beside the same call made with rmcp directly on a
//! second instance of the server — the server's own time and the pipe's. The difference is
//! what the gate adds (docs/mcp.md; goal ≤ 50 µs).
//!
//! Needs the reference server: `scripts/packages` installs it into `target/node`
//! (`CAMELEON_NODE=DIR` elsewhere).
//!
//! `cargo bench -p cameleon --bench mcp`

use std::path::PathBuf;
use std::process::Stdio;

use cameleon::capabilities::{CodeSource, Runtime};
use cameleon::mcp::{McpServerConfig, McpTransport};
use cameleon::net::ToolPolicy;
use cameleon::operator::capability::ToolCall;
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

fn server_js() -> PathBuf {
    let dir = std::env::var_os("CAMELEON_NODE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/node"),
        PathBuf::from,
    );
    let js = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "the MCP benchmark needs the reference server: run scripts/packages (it installs it into {})",
        dir.display()
    );
    js
}

fn mcp_call(c: &mut Criterion) {
    let js = server_js();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    // Through the gate.
    let config = McpServerConfig {
        name: "everything".into(),
        transport: McpTransport::Stdio {
            command: "node".into(),
            args: vec![js.display().to_string(), "stdio".into()],
            cwd: PathBuf::from("."),
        },
        timeout_ms: None,
        trusted: true,
        from: "the benchmark".into(),
    };
    let rt = Runtime::builder()
        .source(CodeSource::new("bench", move |b| {
            b.mcp_server(config.clone());
            Ok(())
        }))
        .build()
        .unwrap();
    let caps = rt
        .current()
        .for_run(Some(&ToolPolicy::allow(["everything.echo"])), ".");
    let gate = caps.gate().clone();
    let args = json!({"message": "hi"});
    let warm = gate.call_blocking(ToolCall::new("everything.echo", args.clone()));
    assert!(warm.is_ok(), "{warm:?}");

    let mut group = c.benchmark_group("mcp_stdio_echo");
    group.bench_function("through_the_gate", |b| {
        b.iter(|| {
            let r = tokio.block_on(gate.call(
                ToolCall::new("everything.echo", args.clone()).idempotency_key("bench/1/echo"),
            ));
            assert!(r.is_ok());
        });
    });

    // Directly with rmcp, on a server of its own.
    let client = tokio.block_on(async {
        let mut child = tokio::process::Command::new("node")
            .arg(&js)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (out, inp) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let service = ().serve((out, inp)).await.unwrap();
        (service, child)
    });
    let peer = client.0.peer().clone();
    group.bench_function("rmcp_directly", |b| {
        b.iter(|| {
            let mut p = CallToolRequestParams::new("echo");
            p.arguments = args.as_object().cloned();
            let r = tokio.block_on(peer.call_tool(p)).unwrap();
            assert!(r.is_error != Some(true));
        });
    });
    group.finish();
    drop(client);
}

criterion_group!(benches, mcp_call);
criterion_main!(benches);
