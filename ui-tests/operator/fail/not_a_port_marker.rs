// Asserts: an `#[input]` field not declared `In<T>` (here a plain type, and an `Out<T>`) is an
// error at its type saying how to declare it.
use cameleon::prelude::*;

#[operator(id = "unmarked")]
pub struct Unmarked {
    #[input]
    text: DataString,
    #[input]
    other: Out<DataString>,
}

impl Run for Unmarked {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
