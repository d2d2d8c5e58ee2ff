// Asserts: `retry` takes its settings in parentheses with a required `max`: `retry = 3`, a bare
// `retry` and `retry(backoff_ms = 10)` are errors at the offending tokens, and so is a `max`
// that is not a `u32`.
use cameleon::prelude::*;

#[operator(id = "eager", retry = 3)]
pub struct Eager {
    #[input]
    in_data: In<DataString>,
}

impl Run for Eager {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

#[operator(id = "bare", retry)]
pub struct Bare {
    #[input]
    in_data: In<DataString>,
}

impl Run for Bare {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

#[operator(id = "maxless", retry(backoff_ms = 10))]
pub struct Maxless {
    #[input]
    in_data: In<DataString>,
}

impl Run for Maxless {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

#[operator(id = "relentless", retry(max = 5000000000))]
pub struct Relentless {
    #[input]
    in_data: In<DataString>,
}

impl Run for Relentless {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
