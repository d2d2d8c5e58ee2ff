// Asserts: a field without a role attribute is internal state, and one that cannot be cloned
// is an error at its type explaining why state must be `Clone + Default + Send`.
use cameleon::prelude::*;

pub struct Handle;

#[operator(id = "stateful")]
pub struct Stateful {
    handle: Handle,
    #[input]
    in_data: In<DataString>,
}

impl Run for Stateful {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let _ = &self.handle;
        Ok(())
    }
}

fn main() {}
