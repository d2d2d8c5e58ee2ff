//! **The** drive routine: every forward step — [`step`](Cvm::step), [`step_async`](Cvm::step_async),
//! [`refire`](Cvm::refire), [`fire_op`](Cvm::fire_op), [`run`](Cvm::run), a maximal step of
//! parallel mode — goes through [`Cvm::drive`] (docs/architecture.md, "the life of a firing"):
//!
//! 1. **replay** the next recorded step, if the history has one and the caller does not ask
//!    for a step anew (docs/semantics.md §5);
//! 2. else **choose** the firings: the first enabled operator (sequential mode,
//!    docs/semantics.md §4), every enabled one (parallel mode, §7), or the one asked for; stop
//!    at an end state or a limit (§4.7) or a cancellation;
//! 3. **plan** what each reads — its inputs and what it will consume, at the start of the step
//!    — and save its operator's state;
//! 4. **fire** them through the firing routine (`attempt.rs`): one after the other on the
//!    calling thread when none needs a future, else concurrently (`firings.rs`);
//! 5. **settle** the step: if every firing succeeded, **commit** it — one history node, each
//!    firing applied through the one apply path ([`LiveMarking::apply`]), the recorder told —
//!    else **discard** it (operators' states restored, successful firings rolled back).
//!
//! The routine is a future; [`Cvm::drive_now`] runs it to completion on the calling thread:
//! polled once when no firing of the step needs a runtime (the sequential hot path never
//! waits), else on Caméléon's runtime.
//!
//! [`LiveMarking::apply`]: super::marking::LiveMarking::apply

use std::future::Future;
use std::task::{Context, Poll, Waker};

use tracing::Span;

use super::attempt::FiringOutcome;
use super::firings::{StepCx, fire_inline, run_firings};
use super::marking::NewFiring;
use super::{Advance, Cvm, EndState, Event, StepError};
use crate::net::Mode;
use crate::operator::{InputSet, OpError};
use crate::runtime::block_on;

/// What a forward step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Forward {
    /// Replay the next recorded step if there is one, else execute a step anew.
    Next,
    /// Execute a step anew even where a recorded one waits (which stays as a branch).
    Anew,
    /// Fire this operator alone, anew.
    Op(usize),
}

impl Cvm {
    /// Runs [`drive`](Self::drive) to completion on the calling thread.
    #[inline]
    pub(super) fn drive_now(&mut self, how: Forward) -> Result<Advance, StepError> {
        if self.needs_runtime(how) {
            return block_on(self.drive(how));
        }
        let mut step = std::pin::pin!(self.drive(how));
        match step.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(advanced) => advanced,
            // Unreachable: nothing in a step of inline firings waits.
            Poll::Pending => block_on(step),
        }
    }

    /// Whether the step `how` asks for runs a firing that needs Caméléon's runtime: parallel
    /// mode, or an operator with a timeout, retries, or async.
    #[inline]
    fn needs_runtime(&self, how: Forward) -> bool {
        if !self.context.slow {
            return false;
        }
        let mode = self.context.mode;
        match how {
            Forward::Next if !self.history.redo.is_empty() => false,
            Forward::Op(o) => mode == Mode::Parallel || !self.operators.runs_inline(o, mode),
            _ if mode == Mode::Parallel => true,
            _ => self
                .marking
                .enabled
                .first()
                .is_some_and(|o| !self.operators.runs_inline(o, mode)),
        }
    }

    /// **The** drive routine: one step forward, as `how` asks (see the module's doc).
    pub(super) async fn drive(&mut self, how: Forward) -> Result<Advance, StepError> {
        if !self.operators.interrupted.is_empty() {
            self.restore_interrupted();
        }
        if how == Forward::Next
            && let Some(&node) = self.history.redo.last()
        {
            let advanced = self.replay_step(node)?;
            self.record_move()?;
            return Ok(advanced);
        }
        if let Some(end) = self.choose(how) {
            return Ok(Advance::Ended(end));
        }
        if self.context.cancel.take() {
            return Ok(Advance::Ended(EndState::Cancelled));
        }
        let step = self.history.path.len() as u32 + 1;
        self.plan_step();
        let observed = self.observer.is_some();
        if observed {
            self.notify_started(step);
        }
        let spans: Vec<Span> = if self.context.traced {
            let step_span = self.step_span(step, &self.scratch.ops);
            self.scratch
                .ops
                .iter()
                .map(|&o| self.firing_span(&step_span, o, step))
                .collect()
        } else {
            Vec::new()
        };
        let mode = self.context.mode;
        let n = self.scratch.ops.len();
        let inline = self
            .scratch
            .ops
            .iter()
            .all(|&o| self.operators.runs_inline(o, mode));
        let shared = StepCx {
            step,
            branch: self.history.next_branch(),
            ops: &self.scratch.ops,
            plan: &self.scratch.plan,
            tokens: &self.marking.tokens,
            topo: &self.operators.topo,
            execution: &self.operators.execution,
            settings: &self.operators.settings,
            run: &self.context.run_id,
            caps: &self.context.capabilities,
            parallel: mode == Mode::Parallel,
            partial: self.context.partial.as_ref(),
            timed: observed || !spans.is_empty(),
            spans: &spans,
        };
        let emitted = &mut self.scratch.emitted[..n];
        let cancelled = if inline {
            fire_inline(
                &shared,
                &mut self.net.ops,
                &self.operators.interrupted,
                emitted,
                &mut self.scratch.outcomes,
                &mut self.observer,
            );
            false
        } else {
            run_firings(
                &shared,
                &mut self.net.ops,
                emitted,
                &mut self.scratch.outcomes,
                &self.context.cancel,
                &mut self.observer,
            )
            .await
        };
        let failed = self
            .scratch
            .outcomes
            .iter()
            .position(|r| matches!(r, Some(FiringOutcome { result: Err(_), .. })));
        if cancelled || failed.is_some() {
            return self.discard_step(step, cancelled, failed.unwrap_or_default());
        }
        self.commit_step(step)
    }

    /// Chooses the operators of a step anew into `scratch.ops`, or the end state that stops
    /// the run before it: nothing enabled, or a limit (docs/semantics.md §4.7).
    #[inline]
    fn choose(&mut self, how: Forward) -> Option<EndState> {
        self.scratch.ops.clear();
        match how {
            Forward::Op(o) => self.scratch.ops.push(o),
            _ if self.context.mode == Mode::Parallel => {
                if self.operators.topo.any_cancel {
                    let ops = self.without_cancelled();
                    self.scratch.ops.extend(ops);
                } else {
                    self.scratch.ops.extend(self.marking.enabled.iter());
                }
            }
            _ => self.scratch.ops.extend(self.marking.enabled.first()),
        }
        if self.scratch.ops.is_empty() {
            return Some(self.terminal_state().unwrap_or(EndState::Completed));
        }
        self.scratch.ops.iter().find_map(|&o| self.limit_before(o))
    }

    /// The end state that stops the run before `o` fires, if any: the step budget, or `o`'s
    /// loop bound (docs/semantics.md §4.7).
    #[inline]
    pub(super) fn limit_before(&self, o: usize) -> Option<EndState> {
        if let Some(limit) = self.context.max_steps
            && self.history.path.len() as u64 >= limit
        {
            return Some(EndState::StepLimit { limit });
        }
        if self.marking.fire_count[o] >= self.context.max_loop {
            return Some(EndState::LoopLimit {
                op: self.net.ops[o].name.clone(),
                limit: self.context.max_loop,
            });
        }
        None
    }

    /// What each firing of the step reads: its inputs and what it consumes, at the start of
    /// the step (only inputs NEW now are consumed: a connection another firing of the step
    /// writes is not NEW now, and stays NEW after the step). Saves each operator's state in
    /// `operators.interrupted`: if the step's future is dropped mid-way, the next step restores
    /// them.
    #[inline]
    fn plan_step(&mut self) {
        let plan = &mut self.scratch.plan;
        plan.clear();
        self.operators.interrupted.clear();
        for &o in &self.scratch.ops {
            let ins = &self.marking.ports.inputs[self.operators.topo.in_range(o)];
            let op = &self.net.ops[o].op;
            // Decided by the operator in the state it fires in (docs/semantics.md §4.4).
            let consumes = op.consumes(ins);
            plan.consumes
                .push(InputSet(consumes.0 & InputSet::new_inputs(ins).0));
            plan.slot_start.push(plan.slots.len());
            for &c in self.operators.topo.ins(o) {
                plan.slots.push(self.marking.slot(c)); // a loop: `extend` costs more here
            }
            self.operators.interrupted.push((o as u32, op.save_state()));
        }
        plan.slot_start.push(plan.slots.len());
        let n = self.scratch.ops.len();
        if self.scratch.emitted.len() < n {
            self.scratch.emitted.resize_with(n, Vec::new);
        }
        for e in &mut self.scratch.emitted[..n] {
            e.clear();
        }
        self.scratch.outcomes.clear();
    }

    /// Commits the step whose firings all succeeded: one history node, each firing applied
    /// in declaration order through the one apply path; the recorded future, if any, becomes a
    /// branch; the recorder is told (its failure undoes the step).
    #[inline(always)]
    fn commit_step(&mut self, step: u32) -> Result<Advance, StepError> {
        let node = self.history.open_node(self.marking.tokens.len() as u32);
        for j in 0..self.scratch.ops.len() {
            let o = self.scratch.ops[j];
            let before = self.operators.interrupted[j].1.take();
            let after = if before.is_some() {
                self.net.ops[o].op.save_state()
            } else {
                None
            };
            let firing = NewFiring {
                o,
                step,
                consumes: self.scratch.plan.consumes[j],
                before,
                after,
            };
            self.marking.apply(
                &self.net,
                &self.operators,
                &mut self.history,
                firing,
                &mut self.scratch.emitted[j],
            );
        }
        self.operators.interrupted.clear();
        self.history.path.push(node);
        let future = std::mem::take(&mut self.history.redo);
        if self.context.recorder.is_some()
            && let Err(e) = self.record_commit(node, step)
        {
            self.history.redo = future; // the step was undone: the future is as it was
            return Err(e);
        }
        if self.observer.is_some() {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: cvm.names(cvm.scratch.ops.iter().copied()),
                replayed: false,
            });
        }
        Ok(Advance::Fired { replayed: false })
    }

    /// Discards the step: every operator back in its state before it (a successful firing
    /// rolled back, a failed one restored), and says why — the cancellation, the run's budget
    /// (`BUDGET`), or the first failure in declaration order, firing `j`.
    #[cold]
    #[inline(never)]
    fn discard_step(&mut self, step: u32, cancelled: bool, j: usize) -> Result<Advance, StepError> {
        let interrupted = std::mem::take(&mut self.operators.interrupted);
        for (k, (o, before)) in interrupted.into_iter().enumerate() {
            let op = &mut self.net.ops[o as usize].op;
            match &self.scratch.outcomes[k] {
                Some(FiringOutcome { result: Ok(()), .. }) => {
                    let emitted = &self.scratch.emitted[k];
                    crate::operator::capability::applying_if(
                        before.is_some(),
                        &self.context.capabilities,
                        || op.rollback(before.as_ref(), emitted),
                    )
                }
                _ => {
                    if let Some(b) = &before {
                        op.restore_state(b);
                    }
                }
            }
        }
        let name = self.net.ops[self.scratch.ops[j]].name.clone();
        let budget = (!cancelled)
            .then(|| super::outcome::budget_stop(&self.context.capabilities, &name))
            .flatten();
        let reason = match (cancelled, &budget) {
            (true, _) => "CANCELLED",
            (false, Some(_)) => "BUDGET",
            (false, None) => "ERROR",
        };
        self.notify(|_| Event::StepDiscarded {
            step,
            reason: reason.into(),
        });
        if cancelled {
            self.context.cancel.take();
            return Ok(Advance::Ended(EndState::Cancelled));
        }
        if let Some(end) = budget {
            return Ok(Advance::Ended(end));
        }
        let error = match self.scratch.outcomes.get_mut(j).and_then(Option::take) {
            Some(FiringOutcome { result: Err(e), .. }) => e,
            _ => OpError::new("failed"), // unreachable: `j` is a failure
        };
        Err(StepError::Operator { op: name, error })
    }

    /// Restores the operators of a step whose future was dropped mid-way.
    pub(super) fn restore_interrupted(&mut self) {
        for (o, before) in std::mem::take(&mut self.operators.interrupted) {
            if let Some(s) = &before {
                self.net.ops[o as usize].op.restore_state(s);
            }
        }
    }

    #[cold]
    fn notify_started(&mut self, step: u32) {
        self.notify(|cvm| Event::StepStarted {
            step,
            ops: cvm.names(cvm.scratch.ops.iter().copied()),
        });
        for j in 0..self.scratch.ops.len() {
            self.notify(|cvm| Event::FiringStarted {
                step,
                op: cvm.net.ops[cvm.scratch.ops[j]].name.clone(),
            });
        }
    }
}
