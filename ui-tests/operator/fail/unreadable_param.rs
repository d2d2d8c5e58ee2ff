// Asserts: a param whose type cannot be read from `.cm` is an error at that type, listing the
// readable types.
use cameleon::prelude::*;

#[operator(id = "timed")]
pub struct Timed {
    /// when to stop
    #[param]
    deadline: std::time::Instant,
    #[input]
    in_data: In<DataString>,
}

impl Run for Timed {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let _ = self.deadline;
        Ok(())
    }
}

fn main() {}
