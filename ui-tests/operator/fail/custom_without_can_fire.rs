// Asserts: `firing = custom` without an `impl CanFire` is an error at the `custom` token that
// says what to implement.
use cameleon::prelude::*;

#[operator(id = "picky", firing = custom)]
pub struct Picky {
    #[input]
    in_data: In<DataString>,
}

impl Run for Picky {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
