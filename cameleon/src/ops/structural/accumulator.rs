//! The accumulator: collects values into a list, emitted after `n` of them or on `in_done`.

use crate::connection::ConnState;
use crate::operator;
use crate::operator::FiniteControl;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{Any, DataJSON};

/// Collects values of `in_data` into a list (DataJSON) emitted on `out_data` after `n` values, or when optional `in_done` receives a token.
///
/// With `n: 0` only `in_done` ends a list; then a new list starts. The list being collected is
/// internal state: a backward step restores it exactly.
#[operator(
    id = "accumulator",
    label = "Accumulator",
    family = behavioral,
    firing = any_no_guard,
    emits = [[], [out_data]],
    exec = inline
)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulator {
    /// values per list; 0 waits for `in_done`
    #[param(default = 0)]
    pub n: usize,
    /// The values collected so far (internal state).
    items: Vec<serde_json::Value>,
    /// a value to collect (any type)
    #[input]
    in_data: In<Any>,
    /// optional: a token here ends the list being collected and emits it
    #[input(optional)]
    in_done: In<Any>,
    /// the collected values as a JSON list
    #[output]
    out_data: Out<DataJSON>,
}

impl Accumulator {
    /// An accumulator of `n` values.
    pub fn new(n: usize) -> Self {
        Accumulator {
            n,
            items: Vec::new(),
        }
    }
}

impl Run for Accumulator {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if cx.is_new(Self::in_data) {
            let v = cx
                .value(Self::in_data)
                .ok_or_else(|| OpError::new("input `in_data` has no value"))?;
            self.items.push(v.to_json());
        }
        let full = self.n > 0 && self.items.len() >= self.n;
        if full || cx.is_new(Self::in_done) {
            let list = std::mem::take(&mut self.items);
            cx.emit(Self::out_data, DataJSON(serde_json::Value::Array(list)));
        }
        Ok(())
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        // Tracked exactly up to a bound; a larger `n` falls back to the emission sets.
        (self.n <= Accumulator::MAX_TRACKED).then_some(self as &dyn FiniteControl)
    }
}

impl Accumulator {
    /// Largest `n` whose fill level the verifier tracks exactly (docs/semantics.md §8).
    pub const MAX_TRACKED: usize = 1024;
}

/// The verifier tracks the fill level (values held, modulo `n`): the accumulator emits exactly
/// when the `n`-th value arrives or `in_done` is NEW.
impl FiniteControl for Accumulator {
    fn count(&self) -> u32 {
        self.n.clamp(1, Accumulator::MAX_TRACKED) as u32
    }
    fn initial(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            (self.items.len() % self.n) as u32
        }
    }
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        let data = inputs.first() == Some(&ConnState::New);
        let done = inputs.get(1) == Some(&ConnState::New);
        let held = if self.n == 0 { 0 } else { q + u32::from(data) };
        if done || (self.n > 0 && held as usize >= self.n) {
            vec![(1, 0)] // emission set 1: {out_data}; the list starts again
        } else {
            vec![(0, held)] // emission set 0: nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::operator::Operator;

    #[test]
    fn accumulator_rollback_restores_the_collected_items() {
        let mut acc = Accumulator::new(3);
        acc.items = vec![json!(1)];
        let before = acc.save_state();
        acc.items.push(json!(2));
        let after = acc.save_state();
        Operator::rollback(&mut acc, before.as_ref(), &[]);
        assert_eq!(acc.items, [json!(1)]);
        Operator::replay(&mut acc, after.as_ref(), &[]);
        assert_eq!(acc.items, [json!(1), json!(2)]);
    }
}
