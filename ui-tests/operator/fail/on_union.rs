// Asserts: `#[operator]` on a union is an error at `union`, saying it goes on a struct.
use cameleon::prelude::*;

#[operator(id = "bits")]
pub union Bits {
    a: u32,
    b: f32,
}

fn main() {}
