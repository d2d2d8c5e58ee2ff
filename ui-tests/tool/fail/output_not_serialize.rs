// Asserts: a result type that is not `Serialize` is an error at the return type.
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

struct Opaque;

#[tool]
fn opaque(_args: Args) -> Result<Opaque, ToolError> {
    Ok(Opaque)
}

fn main() {}
