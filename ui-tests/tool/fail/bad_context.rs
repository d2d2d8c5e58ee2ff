// Asserts: with two parameters, the first must be `&ToolContext`; and the arguments struct is
// taken by value — each reported at its type.
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

#[tool]
fn wrong_context(_cx: String, _args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

#[tool]
fn by_reference(_args: &Args) -> Result<u8, ToolError> {
    Ok(0)
}

fn main() {}
