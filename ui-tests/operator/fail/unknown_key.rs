// Asserts: an unknown key in `#[operator]` is an error at that key, with a "did you mean" and
// the list of keys.
use cameleon::prelude::*;

#[operator(id = "typo", lable = "Typo")]
pub struct Typo {
    #[input]
    in_data: In<DataString>,
}

impl Run for Typo {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
