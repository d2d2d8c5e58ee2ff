// Asserts: an operator without `impl Run` is an error at its name that says what to write.
use cameleon::prelude::*;

#[operator(id = "idle")]
pub struct Idle {
    #[input]
    in_data: In<DataString>,
}

fn main() {}
