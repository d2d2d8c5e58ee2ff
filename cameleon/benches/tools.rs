//! Tool gate benchmark: the cost of one local tool call through the gate — policy,
//! registry lookup, argument check against the JSON Schema, context, timing, result — beside the
//! same tool called directly (its JSON glue included), and calls through the `tool` operator.
//!
//! `cargo bench -p cameleon --bench tools`

use std::hint::black_box;
use std::sync::Arc;

use cameleon::net::ToolPolicy;
use cameleon::operator::capability::ToolCall;
use cameleon::prelude::*;
use cameleon::tool;
use cameleon::tools::{ToolContext, ToolGate, ToolRegistry};
use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of the benchmark tool.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A number.
    n: i64,
}

/// Returns its argument: a tool that does nothing, so the gate's cost shows.
#[tool(name = "bench_echo")]
fn echo(args: Args) -> Result<i64, ToolError> {
    Ok(args.n)
}

fn gate_overhead(c: &mut Criterion) {
    let registry = Arc::clone(ToolRegistry::global());
    let gate = ToolGate::new(
        Arc::clone(&registry),
        Some(&ToolPolicy::allow(["bench_echo"])),
        ".",
    );
    let args = json!({"n": 7});
    // Warm the validator (compiled on first use).
    assert!(
        gate.call_blocking(ToolCall::new("bench_echo", args.clone()))
            .is_ok()
    );
    let tool = Arc::clone(registry.get("bench_echo").expect("registered"));
    let cx = ToolContext::new(".");

    let mut g = c.benchmark_group("tool_call");
    g.bench_function("direct (tool + JSON glue)", |b| {
        b.iter(|| match tool.call(&cx, black_box(args.clone())) {
            cameleon::tools::ToolOutput::Ready(r) => black_box(r),
            cameleon::tools::ToolOutput::Pending(_) => unreachable!("a sync tool"),
        })
    });
    g.bench_function("through the gate", |b| {
        b.iter(|| {
            black_box(gate.call_blocking(ToolCall::new("bench_echo", black_box(args.clone()))))
        })
    });
    g.bench_function("denied by the gate", |b| {
        b.iter(|| black_box(gate.call_blocking(ToolCall::new("calc", black_box(args.clone())))))
    });
    g.bench_function("calc `2 + 3 * 4` through the gate", |b| {
        let gate = ToolGate::new(
            Arc::clone(&registry),
            Some(&ToolPolicy::allow(["calc"])),
            ".",
        );
        let args = json!({"expr": "2 + 3 * 4"});
        b.iter(|| black_box(gate.call_blocking(ToolCall::new("calc", black_box(args.clone())))))
    });
    g.finish();
}

criterion_group!(benches, gate_overhead);
criterion_main!(benches);
