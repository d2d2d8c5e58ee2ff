// Asserts: an operator declared `exec = async` without an `impl RunAsync` is an error at the
// `async` token that says what to implement — even when it implements the sync `Run`.
use cameleon::prelude::*;

#[operator(id = "sleepy", exec = async)]
pub struct Sleepy {
    #[input]
    in_data: In<DataString>,
}

impl Run for Sleepy {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
