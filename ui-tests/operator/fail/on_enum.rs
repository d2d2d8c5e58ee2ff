// Asserts: `#[operator]` on an enum is an error at `enum`, saying it goes on a struct.
use cameleon::prelude::*;

#[operator(id = "choice")]
pub enum Choice {
    Left,
    Right,
}

fn main() {}
