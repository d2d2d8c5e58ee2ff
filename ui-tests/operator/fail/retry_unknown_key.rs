// Asserts: an unknown key inside `retry(…)` is an error at that key, with a "did you mean" and
// the keys of `retry`.
use cameleon::prelude::*;

#[operator(id = "patient", retry(max = 3, backof_ms = 100))]
pub struct Patient {
    #[input]
    in_data: In<DataString>,
}

impl Run for Patient {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
