// Asserts: an arguments struct without `JsonSchema` is an error at its type, saying what to
// derive.
use cameleon::prelude::*;

#[derive(serde::Deserialize)]
struct Args {}

#[tool]
fn no_schema(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

fn main() {}
