//! Forward, synchronously: [`Cvm::step`], [`Cvm::refire`], [`Cvm::fire_op`], [`Cvm::run`]
//! (docs/semantics.md §4), each through the drive routine (`drive.rs`); and the replay of a
//! recorded step (§5).

use super::drive::Forward;
use super::{Advance, Cvm, EndState, Event, RunError, Step, StepError};
use crate::connection::{NONE, OpId};
use crate::net::Mode;
use crate::runtime::block_on;

impl Cvm {
    /// Fires one step forward: replays the next recorded step if the history has one (after a
    /// backward step), else executes the first enabled operator (sequential mode) or every
    /// enabled operator (parallel mode, on Caméléon's runtime; from async code prefer
    /// [`step_async`](Self::step_async)).
    ///
    /// Returns [`Step::Ended`] when nothing can fire. On `Err`, nothing changed.
    pub fn step(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        let advanced = self.drive(Forward::Next);
        if self.context.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        if self.context.traced {
            self.close_run_span_if_ended(&advanced);
        }
        Ok(self.describe(advanced?))
    }

    /// Closes the run's span when a step ended the run.
    #[cold]
    pub(super) fn close_run_span_if_ended(&mut self, advanced: &Result<Advance, StepError>) {
        match advanced {
            Ok(Advance::Ended(end)) => self.close_run_span(end.name()),
            Err(StepError::Operator { .. }) => self.close_run_span("ERROR"),
            _ => {}
        }
    }

    /// Executes the next step anew (as [`step`](Self::step) would without history), even if the
    /// history has a recorded step here. The recorded future is kept as a branch (see
    /// [`branches`](Self::branches)). If nothing fires (an end state, or the operator fails),
    /// the recorded future stays as it was.
    pub fn refire(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        let advanced = self.drive(Forward::Anew);
        if self.context.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        Ok(self.describe(advanced?))
    }

    /// Fires operator `op` now, alone, whatever comes first in declaration order: the firing a
    /// sequential step would make if `op` were first (docs/semantics.md §4), through the same
    /// routine. It drives the engine along a firing sequence chosen elsewhere, such as a
    /// verifier witness (docs/semantics.md §8.3). A recorded future is kept as a branch, as
    /// [`refire`](Self::refire) keeps it.
    ///
    /// `Err(StepError::ReplayDiverged)` if `op` is not enabled (nothing changes);
    /// [`Step::Ended`] if a limit (§4.7) stops the run before it fires.
    pub fn fire_op(&mut self, op: OpId) -> Result<Step, StepError> {
        let o = op.index();
        if o >= self.net.ops.len() || !self.marking.enabled.get(o) {
            return Err(StepError::ReplayDiverged {
                step: self.history.path.len() as u32 + 1,
                op: self
                    .net
                    .ops
                    .get(o)
                    .map_or_else(|| format!("#{o}"), |n| n.name.clone()),
            });
        }
        let advanced = self.drive(Forward::Op(o));
        Ok(self.describe(advanced?))
    }

    /// Runs forward until an end state: [`EndState::Error`] when an operator fails (its firing
    /// not applied), [`EndState::Cancelled`] when the [`cancel_token`](Self::cancel_token) is
    /// cancelled (checked between steps, and during a parallel step).
    ///
    /// In parallel mode this drives [`run_async`](Self::run_async) on Caméléon's runtime.
    pub fn run(&mut self) -> Result<EndState, RunError> {
        if self.context.mode == Mode::Parallel {
            return block_on(self.run_async());
        }
        self.check_traced();
        let span = self.run_span();
        let entered = span.enter();
        let end = loop {
            if self.context.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.drive(Forward::Next))? {
                break end;
            }
        };
        drop(entered);
        if self.context.traced {
            self.close_run_span(end.name());
        }
        self.record_end(&end)?;
        self.notify(|_| Event::Ended { end: end.clone() });
        Ok(end)
    }

    pub(super) fn describe(&self, a: Advance) -> Step {
        match a {
            Advance::Ended(end) => Step::Ended(end),
            Advance::Fired { replayed } => {
                let node = self.history.path.last().copied().unwrap_or(NONE);
                Step::Fired {
                    ops: self
                        .history
                        .firing_range(node)
                        .map(|f| OpId(self.history.firings[f].op))
                        .collect(),
                    step: self.history.path.len() as u32,
                    replayed,
                }
            }
        }
    }

    /// Replays recorded step `node` (docs/semantics.md §5): re-applies its firings without
    /// running their operators.
    pub(super) fn replay_step(&mut self, node: u32) -> Result<Advance, StepError> {
        let range = self.history.firing_range(node);
        let step = self.history.path.len() as u32 + 1;
        for f in range.clone() {
            let o = self.history.firings[f].op as usize;
            if let Some(end) = self.limit_before(o) {
                return Ok(Advance::Ended(end));
            }
            // A recorded firing of an operator with a question replays with its recorded
            // answer, even where the operator holds none now (a restored run's).
            if !(self.marking.enabled.get(o)
                || (self.operators.any_asks && self.marking.waiting.get(o)))
            {
                return Err(StepError::ReplayDiverged {
                    step,
                    op: self.net.ops[o].name.clone(),
                });
            }
        }
        self.history.redo.pop();
        for f in range {
            self.redo_firing(f);
        }
        self.history.path.push(node);
        if self.observer.is_some() {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: cvm.names(
                    cvm.history
                        .firing_range(node)
                        .map(|f| cvm.history.firings[f].op as usize),
                ),
                replayed: true,
            });
        }
        Ok(Advance::Fired { replayed: true })
    }

    /// Re-applies recorded firing `f`: the marking, then its operator's `replay` with the
    /// state saved after it and what it emitted.
    pub(super) fn redo_firing(&mut self, f: usize) {
        let o = self.history.firings[f].op as usize;
        self.marking.redo(&self.operators.topo, &self.history, f);
        let emitted = &mut self.scratch.replayed;
        self.marking
            .emitted_by(&self.net, &self.history, f, emitted);
        let saved = self.history.saved(f);
        let after = saved.and_then(|s| s.after.as_ref());
        let op = &mut self.net.ops[o].op;
        crate::operator::capability::applying_if(
            saved.is_some(),
            &self.context.capabilities,
            || op.replay(after, emitted),
        );
        emitted.clear();
        self.marking
            .refresh_around(&self.net, &self.operators, &self.history, f);
    }
}

/// What a run does with one step's result: go on (`None`) or stop in an end state; an operator's
/// failure is the end state `ERROR` (its firing not applied).
#[inline]
pub(super) fn run_outcome(r: Result<Advance, StepError>) -> Result<Option<EndState>, RunError> {
    match r {
        Ok(Advance::Fired { .. }) => Ok(None),
        Ok(Advance::Ended(end)) => Ok(Some(end)),
        Err(StepError::Operator { op, error }) => Ok(Some(EndState::Error {
            op,
            error: error.to_string(),
        })),
        Err(e) => Err(e.into()),
    }
}
