// Asserts: a port whose type is not a data type is an error at that type, saying how to declare
// one (`data_type!`) — and only that error.
use cameleon::prelude::*;

#[operator(id = "raw")]
pub struct Raw {
    #[input]
    in_data: In<String>,
    #[output]
    out_data: Out<DataString>,
}

impl Run for Raw {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
