// Asserts: `timeout_ms = 0`, which would fail every firing, is an error at the `0`.
use cameleon::prelude::*;

#[operator(id = "hasty", timeout_ms = 0)]
pub struct Hasty {
    #[input]
    in_data: In<DataString>,
}

impl Run for Hasty {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
