// Asserts: an unknown key in a field attribute (`#[input(optinal)]`) is an error at that key,
// with a "did you mean".
use cameleon::prelude::*;

#[operator(id = "typo_field")]
pub struct TypoField {
    #[input(optinal)]
    in_data: In<DataString>,
}

impl Run for TypoField {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
