// Asserts: `#[tool]` on a struct is an error saying it goes on a function.
use cameleon::prelude::*;

#[tool]
struct NotAFunction;

fn main() {}
