//! The finite control state an operator may declare to the verifier (docs/semantics.md §8).

use super::InputSet;
use crate::connection::ConnState;
use crate::policy::Enabling;

/// A finite control state an operator declares to the verifier (docs/semantics.md §8), through
/// [`Operator::control`](crate::Operator::control).
///
/// Declare one when an operator's firing rule or its choice of outputs depends on an internal
/// state that is finite and does not depend on data: the verifier then tracks the state exactly
/// instead of exploring every emission set. States are `0..count()`. The standard
/// [`Accumulator`](crate::ops::Accumulator) declares its fill level (how many values it holds,
/// modulo `n`), so the verifier knows it emits exactly on the `n`-th value.
pub trait FiniteControl {
    /// How many control states (at least 1). With 1 there is no state to track, but
    /// [`fire`](Self::fire) still decides the emission set.
    fn count(&self) -> u32;

    /// The control state the operator is in now (for a freshly built operator, its initial one).
    fn initial(&self) -> u32;

    /// The firing rule in control state `q`. Default: the declared policy's rule.
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        let _ = q;
        e.policy_allows()
    }

    /// Which inputs a firing in control state `q` consumes, when that depends on the state (a
    /// partial join does not consume a second token on an input it has already counted this
    /// round, docs/semantics.md §10.5). Default: `None`, the operator's own
    /// [`consumes`](crate::Operator::consumes). It must agree with what the operator's
    /// `consumes` answers in that state.
    fn consumes(&self, q: u32, inputs: &[ConnState]) -> Option<InputSet> {
        let _ = (q, inputs);
        None
    }

    /// What a firing in control state `q` may do, given the input states: each possibility is
    /// (index into the operator's [emission sets](crate::OpSpec::emission_sets), next control
    /// state). Out-of-range entries are ignored. Several entries mean the choice depends on data.
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)>;
}
