// Asserts: a generic tool is an error at its generics (its arguments need one schema).
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

#[tool]
fn generic<T: Default>(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

fn main() {}
