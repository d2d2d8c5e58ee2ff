// Asserts: `timeout_ms` takes a whole number of milliseconds: a string, a float or a number
// past `u64::MAX` is an error at the value, each reported.
use cameleon::prelude::*;

#[operator(id = "vague", timeout_ms = "5s")]
pub struct Vague {
    #[input]
    in_data: In<DataString>,
}

impl Run for Vague {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

#[operator(id = "fractional", timeout_ms = 1.5)]
pub struct Fractional {
    #[input]
    in_data: In<DataString>,
}

impl Run for Fractional {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

#[operator(id = "eternal", timeout_ms = 100000000000000000000)]
pub struct Eternal {
    #[input]
    in_data: In<DataString>,
}

impl Run for Eternal {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
