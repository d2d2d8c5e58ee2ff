// Asserts: a key given twice is reported at its second occurrence.
use cameleon::prelude::*;

#[operator(id = "first", label = "Twice", id = "second")]
pub struct Twice {
    #[input]
    in_data: In<DataString>,
}

impl Run for Twice {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
