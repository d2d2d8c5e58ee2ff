// Asserts: two ports with one name (here an input renamed to an output's name) are an error at
// the second, saying port names are unique across inputs and outputs.
use cameleon::prelude::*;

#[operator(id = "clash")]
pub struct Clash {
    #[input(name = "data")]
    input: In<DataString>,
    #[output]
    data: Out<DataString>,
}

impl Run for Clash {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
