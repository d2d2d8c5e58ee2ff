// Asserts: `#[tool]` accepts a sync and an async function, with or without a `&ToolContext`
// first, returning a concrete type (output schema from its `JsonSchema`) or `impl Serialize`
// (output schema `true`); keys `name`, `timeout_ms` and `effects` (`external` when unsaid); the
// functions stay callable; each tool is in the global registry with its manifest; generated
// code is warning-free.
#![deny(warnings)]

use cameleon::prelude::*;
use cameleon::tools::ToolRegistry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Args {
    /// A number.
    pub n: i64,
}

/// Doubles `n`.
#[tool(name = "ui_double", timeout_ms = 1000, effects = none)]
fn double(args: Args) -> Result<i64, ToolError> {
    Ok(args.n * 2)
}

/// Says where it runs.
#[tool]
fn ui_where(cx: &ToolContext, args: Args) -> Result<impl Serialize, ToolError> {
    Ok((cx.base_dir().display().to_string(), args.n))
}

/// Waits, then answers.
#[tool(name = "ui_async", effects = write)]
async fn later(cx: &ToolContext, args: Args) -> Result<String, ToolError> {
    std::future::ready(()).await;
    Ok(format!("{} in {}", args.n, cx.base_dir().display()))
}

fn main() {
    assert_eq!(double(Args { n: 2 }).ok(), Some(4));
    let tools = ToolRegistry::global();
    let d = tools.get("ui_double").unwrap();
    assert_eq!(d.manifest().description, "Doubles `n`.");
    assert_eq!(d.manifest().output_schema["type"], "integer");
    assert_eq!(d.timeout_ms(), Some(1000));
    assert_eq!(tools.get("ui_where").unwrap().manifest().output_schema, serde_json::json!(true));
    assert!(tools.get("ui_async").is_some());
    use cameleon::tools::Effect;
    assert_eq!(d.manifest().effects, Effect::None);
    assert_eq!(tools.get("ui_where").unwrap().manifest().effects, Effect::External);
    assert_eq!(tools.get("ui_async").unwrap().manifest().effects, Effect::Write);
}
