//! Saved internal state, and sets of input ports.

use std::any::Any as StdAny;
use std::fmt;

use crate::connection::ConnState;

/// Saved internal state of an operator, for rollback and replay.
pub struct OpState(pub Box<dyn StdAny + Send>);

impl OpState {
    /// Wraps a state value.
    pub fn new<S: StdAny + Send>(s: S) -> Self {
        OpState(Box::new(s))
    }

    /// The state as an `S`, if it is one.
    pub fn get<S: StdAny>(&self) -> Option<&S> {
        self.0.downcast_ref()
    }
}

impl fmt::Debug for OpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OpState(..)")
    }
}

/// A set of input ports, as a bit mask (ports 0..64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InputSet(pub u64);

impl InputSet {
    /// Every input that is NEW: the default consumption (docs/semantics.md §4.4).
    pub fn new_inputs(states: &[ConnState]) -> Self {
        let mut m = 0u64;
        for (i, s) in states.iter().enumerate().take(64) {
            if *s == ConnState::New {
                m |= 1 << i;
            }
        }
        InputSet(m)
    }

    /// Only the first NEW input in port order (Merge).
    pub fn first_new(states: &[ConnState]) -> Self {
        states
            .iter()
            .take(64)
            .position(|s| *s == ConnState::New)
            .map_or(InputSet(0), |i| InputSet(1 << i))
    }

    /// Whether port `i` is in the set.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1 << i) != 0
    }
}
