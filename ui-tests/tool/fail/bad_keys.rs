// Asserts: an unknown key (with a did-you-mean), a duplicate key, a name models cannot call,
// an effect that does not exist (with a did-you-mean) and a value given to `idempotent` are
// errors at their tokens.
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

#[tool(nmae = "x")]
fn typo(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

#[tool(name = "a", name = "b")]
fn twice(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

#[tool(name = "has space")]
fn spaced(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

#[tool(name = "sender", effects = extrenal)]
fn sender(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

#[tool(name = "upsert", effects = write, idempotent = true)]
fn upsert(_args: Args) -> Result<u8, ToolError> {
    Ok(0)
}

fn main() {}
