// Asserts: a tool that does not return `Result<…>` is an error at its return type, and one
// without a return type at its name.
use cameleon::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {}

#[tool]
fn plain(_args: Args) -> String {
    String::new()
}

#[tool]
fn nothing(_args: Args) {}

fn main() {}
