// Asserts: an unknown `exec` kind is an error at the value, with a "did you mean" and the
// kinds there are.
use cameleon::prelude::*;

#[operator(id = "slow", exec = blockng)]
pub struct Slow {
    #[input]
    in_data: In<DataString>,
}

impl Run for Slow {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
