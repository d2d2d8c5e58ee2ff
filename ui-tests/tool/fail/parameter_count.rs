// Asserts: a tool with no parameter, or with three, is an error saying what it takes.
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

#[tool]
fn none() -> Result<u8, ToolError> {
    Ok(0)
}

#[tool]
fn three(_cx: &ToolContext, _a: Args, _b: Args) -> Result<u8, ToolError> {
    Ok(0)
}

fn main() {}
