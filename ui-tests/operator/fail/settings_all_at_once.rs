// Asserts: the mistakes in `exec`, `timeout_ms` and `retry(…)` are reported in one go with the
// others, each at its own token — an unknown exec kind, a zero timeout, a duplicate key inside
// `retry`, an unknown key inside `retry`, a second `timeout_ms`, a second `retry` — and nothing
// else follows from them.
use cameleon::prelude::*;

#[operator(
    id = "fussy",
    exec = asinc,
    timeout_ms = 0,
    retry(max = 1, max = 2, wait_ms = 5),
    timeout_ms = 10,
    retry(max = 1)
)]
pub struct Fussy {
    #[input]
    in_data: In<DataString>,
}

impl Run for Fussy {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {}
