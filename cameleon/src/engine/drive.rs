//! **The** drive routine: every forward step — [`step`](Cvm::step), [`step_async`](Cvm::step_async),
//! [`refire`](Cvm::refire), [`fire_op`](Cvm::fire_op), [`run`](Cvm::run), a maximal step of
//! parallel mode — goes through the same stages (docs/architecture.md, "the life of a firing"):
//!
//! 1. **begin** ([`Cvm::begin`]): replay the next recorded step, if the history has one and
//!    the caller does not ask for a step anew (docs/semantics.md §5); else **choose** the
//!    firings — the first enabled operator (sequential mode, docs/semantics.md §4), every
//!    enabled one (parallel mode, §7), or the one asked for — stopping at an end state, a limit
//!    (§4.7) or a cancellation; and **plan** what each reads — its inputs and what it will
//!    consume, at the start of the step — saving its operator's state;
//! 2. **fire** them through the firing routine (`attempt.rs`): one after the other on the
//!    calling thread when none needs a future ([`Cvm::fire_here`]), else concurrently
//!    ([`Cvm::fire_step`], `firings.rs`);
//! 3. **settle** ([`Cvm::settle`]): if every firing succeeded, **commit** the step — one history
//!    node, each firing applied through the one apply path ([`LiveMarking::apply`]), the
//!    recorder told — else **discard** it (operators' states restored, successful firings
//!    rolled back).
//!
//! [`Cvm::drive`] runs the stages on the calling thread (a sequential step of inline firings
//! without any future: the hot path; other firings on Caméléon's runtime), [`Cvm::drive_async`]
//! awaits the firings.
//!
//! [`LiveMarking::apply`]: super::marking::LiveMarking::apply

use tracing::Span;

use super::attempt::{FiringCx, FiringOutcome, fire_now};
use super::firings::{StepCx, failed_at, fire_inline, inline_outcome, run_firings};
use super::marking::NewFiring;
use super::{Advance, Cvm, EndState, Event, StepError};
use crate::net::{Mode, OpNode};
use crate::operator::{InputSet, OpError, OpState};
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

/// How a step began: already over (a replay, an end state, a failure), or its firings chosen
/// and planned as step `step`.
enum Begun {
    Over(Result<Advance, StepError>),
    Step(u32),
}

/// The step's shared context, from the engine's parts (a macro, so that the firings can borrow
/// the net's operators and the observer mutably beside it).
macro_rules! step_cx {
    ($cvm:ident, $step:expr, $spans:expr) => {
        StepCx {
            step: $step,
            branch: $cvm.scratch.branch,
            ops: &$cvm.scratch.ops,
            plan: &$cvm.scratch.plan,
            tokens: &$cvm.marking.tokens,
            topo: &$cvm.operators.topo,
            execution: &$cvm.operators.execution,
            settings: &$cvm.operators.settings,
            run: &$cvm.context.run_id,
            caps: &$cvm.context.capabilities,
            parallel: $cvm.context.mode == Mode::Parallel,
            partial: $cvm.context.partial.as_ref(),
            timed: $cvm.observer.is_some() || !$spans.is_empty(),
            spans: $spans,
            reuse: $cvm.context.reuse.as_deref(),
        }
    };
}

impl Cvm {
    /// **The** drive routine, on the calling thread: [`begin`](Self::begin), fire, settle. A
    /// sequential step of inline firings runs here without a future (the hot path); any other
    /// step's firings run on Caméléon's runtime.
    #[inline]
    pub(super) fn drive(&mut self, how: Forward) -> Result<Advance, StepError> {
        let step = match self.begin(how) {
            Begun::Over(advanced) => return advanced,
            Begun::Step(step) => step,
        };
        // Sequential mode: one firing (`choose`), inline unless its operator is guarded.
        let cancelled = if self.context.mode == Mode::Sequential {
            let o = self.scratch.ops[0];
            if !self.operators.guarded[o] {
                return self.drive_one(step, o);
            }
            block_on(self.fire_step(step))
        } else if self.inline_step() {
            self.fire_here(step);
            false
        } else {
            block_on(self.fire_step(step))
        };
        self.settle(step, cancelled)
    }

    /// A sequential step of one inline firing, operator `o`'s: fired on the calling thread,
    /// then committed (or discarded). The hot path: when nobody watches (no observer, no
    /// span), the firing is neither timed nor looped over.
    #[inline(always)]
    fn drive_one(&mut self, step: u32, o: usize) -> Result<Advance, StepError> {
        if self.context.traced || self.observer.is_some() {
            self.fire_here(step); // timed, with its span and events
            return self.settle(step, false);
        }
        let shared = step_cx!(self, step, &[] as &[Span]);
        // The state saved by `plan_step`, if the operator has one (the only entry).
        let before = self
            .scratch
            .interrupted
            .first()
            .and_then(|(_, s)| s.as_ref());
        let OpNode { meta, op } = &mut self.net.ops[o];
        let cx = FiringCx::new(&shared, 0, &meta.name, None, None);
        let emitted = &mut self.scratch.emitted[0];
        let (result, attempts) = fire_now(&mut **op, &meta.spec, &cx, before, emitted);
        if let Err(error) = result {
            failed_at(
                &mut self.scratch.outcomes,
                0,
                inline_outcome(Err(error), attempts, None),
                1,
            );
            return self.discard_step(step, false, 0);
        }
        let node = self.open_node();
        let before = self.scratch.interrupted.pop().and_then(|(_, b)| b);
        self.commit_firing(0, o, step, before);
        self.close_node(node, step)
    }

    /// The drive routine, awaiting the step's firings (the async API, parallel runs).
    pub(super) async fn drive_async(&mut self, how: Forward) -> Result<Advance, StepError> {
        let step = match self.begin(how) {
            Begun::Over(advanced) => return advanced,
            Begun::Step(step) => step,
        };
        let cancelled = self.fire_step(step).await;
        self.settle(step, cancelled)
    }

    /// The start of every step: states of an interrupted step restored; the next recorded
    /// step replayed (for [`Forward::Next`]), or the firings chosen and planned — unless the
    /// run ends here (nothing enabled, a limit, a cancellation).
    #[inline(always)]
    fn begin(&mut self, how: Forward) -> Begun {
        if !self.scratch.interrupted.is_empty() {
            self.restore_interrupted();
        }
        if how == Forward::Next
            && let Some(&node) = self.history.redo.last()
        {
            return Begun::Over(self.replay_step(node).and_then(|advanced| {
                self.record_move()?;
                Ok(advanced)
            }));
        }
        if let Some(end) = self.choose(how) {
            return Begun::Over(Ok(Advance::Ended(end)));
        }
        if self.context.cancel.take() {
            return Begun::Over(Ok(Advance::Ended(EndState::Cancelled)));
        }
        let step = self.history.path.len() as u32 + 1;
        self.scratch.branch = self.history.next_branch();
        self.plan_step();
        if self.observer.is_some() {
            self.notify_started(step);
        }
        Begun::Step(step)
    }

    /// Whether every firing of the chosen step runs on the calling thread.
    #[inline(always)]
    fn inline_step(&self) -> bool {
        let mode = self.context.mode;
        if let [o] = self.scratch.ops[..] {
            return self.operators.runs_inline(o, mode); // one firing: no iterator
        }
        self.scratch
            .ops
            .iter()
            .all(|&o| self.operators.runs_inline(o, mode))
    }

    /// Opens the `tracing` spans of the step's firings into `scratch.spans` when a subscriber
    /// listens (else it stays empty: nothing to build or drop on the hot path). For a step
    /// fired on the calling thread, which cannot be dropped mid-way.
    #[inline(always)]
    fn open_firing_spans(&mut self, step: u32) {
        if self.context.traced {
            self.scratch.spans = self.firing_spans(step);
        }
    }

    /// The `tracing` spans of the step's firings.
    #[cold]
    fn firing_spans(&self, step: u32) -> Vec<Span> {
        let step_span = self.step_span(step, &self.scratch.ops);
        self.scratch
            .ops
            .iter()
            .map(|&o| self.firing_span(&step_span, o, step))
            .collect()
    }

    /// Closes the step's firing spans (they end with the firings, not with the next step).
    #[inline(always)]
    fn close_firing_spans(&mut self) {
        if !self.scratch.spans.is_empty() {
            self.scratch.spans.clear();
        }
    }

    /// Fires the step's firings one after the other on the calling thread.
    #[inline(always)]
    fn fire_here(&mut self, step: u32) {
        self.open_firing_spans(step);
        let shared = step_cx!(self, step, &self.scratch.spans);
        let n = self.scratch.ops.len();
        fire_inline(
            &shared,
            &mut self.net.ops,
            &self.scratch.interrupted,
            &mut self.scratch.emitted[..n],
            &mut self.scratch.outcomes,
            &mut self.observer,
        );
        self.close_firing_spans();
    }

    /// Fires the step's firings: on this task when all are inline, else concurrently.
    /// `true`: the run was cancelled during the step.
    async fn fire_step(&mut self, step: u32) -> bool {
        if self.inline_step() {
            self.fire_here(step);
            return false;
        }
        // Held by the future (not in `scratch`): a dropped step's spans close with it.
        let spans = if self.context.traced {
            self.firing_spans(step)
        } else {
            Vec::new()
        };
        let shared = step_cx!(self, step, &spans);
        let n = self.scratch.ops.len();
        run_firings(
            &shared,
            &mut self.net.ops,
            &mut self.scratch.emitted[..n],
            &mut self.scratch.outcomes,
            &self.context.cancel,
            &mut self.observer,
        )
        .await
    }

    /// The end of every step anew: committed if every firing succeeded, else discarded.
    #[inline(always)]
    fn settle(&mut self, step: u32, cancelled: bool) -> Result<Advance, StepError> {
        // No outcomes: a step of inline firings that all succeeded (`firings::fire_inline`).
        if !cancelled && self.scratch.outcomes.is_empty() {
            return self.commit_step(step);
        }
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
    #[inline(always)]
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
            _ => {
                if let Some(o) = self.marking.enabled.first() {
                    self.scratch.ops.push(o);
                }
            }
        }
        if self.scratch.ops.is_empty() {
            return Some(self.terminal_state().unwrap_or(EndState::Completed));
        }
        if let [o] = self.scratch.ops[..] {
            return self.limit_before(o); // one firing: no iterator on the hot path
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
    /// writes is not NEW now, and stays NEW after the step). Saves the state of each operator
    /// that has one in `scratch.interrupted` (a stateless operator's step saves nothing): if
    /// the step's future is dropped mid-way, the next step restores them.
    #[inline(always)]
    fn plan_step(&mut self) {
        let plan = &mut self.scratch.plan;
        plan.clear();
        debug_assert!(
            self.scratch.interrupted.is_empty(),
            "`begin` restores an interrupted step first"
        );
        let n = self.scratch.ops.len();
        if let [o] = self.scratch.ops[..] {
            // One firing (every sequential step): it reads every slot (no `slot_start`), and
            // nothing is applied between now and its own apply, which consumes only what is
            // NEW then — no mask.
            let op = &self.net.ops[o].op;
            // Decided by the operator in the state it fires in (docs/semantics.md §4.4).
            plan.consumes
                .push(op.consumes(&self.marking.ports.inputs[self.operators.topo.in_range(o)]));
            for &c in self.operators.topo.ins(o) {
                plan.slots.push(self.marking.slot(c)); // a loop: `extend` costs more here
            }
            if let Some(state) = op.save_state() {
                self.scratch.interrupted.push((o as u32, Some(state)));
            }
        } else {
            self.plan_many();
        }
        // Each firing clears its emissions before every attempt (`attempt.rs`), a committed step
        // drains them and a discarded one clears them: they are empty here, no loop.
        if self.scratch.emitted.len() < n {
            self.scratch.emitted.resize_with(n, Vec::new);
        }
        if !self.scratch.outcomes.is_empty() {
            self.scratch.outcomes.clear();
        }
    }

    /// [`plan_step`](Self::plan_step) for a step of several firings (parallel mode): each
    /// consumes only the inputs NEW now (a connection another firing of the step writes is not
    /// NEW now, and stays NEW after the step), and reads its own range of `plan.slots`.
    fn plan_many(&mut self) {
        let plan = &mut self.scratch.plan;
        for &o in &self.scratch.ops {
            let ins = &self.marking.ports.inputs[self.operators.topo.in_range(o)];
            let op = &self.net.ops[o].op;
            // Decided by the operator in the state it fires in (docs/semantics.md §4.4).
            let consumes = op.consumes(ins);
            plan.consumes
                .push(InputSet(consumes.0 & InputSet::new_inputs(ins).0));
            plan.slot_start.push(plan.slots.len());
            for &c in self.operators.topo.ins(o) {
                plan.slots.push(self.marking.slot(c));
            }
            if let Some(state) = op.save_state() {
                self.scratch.interrupted.push((o as u32, Some(state)));
            }
        }
        plan.slot_start.push(plan.slots.len());
    }

    /// Commits the step whose firings all succeeded: one history node, each firing applied
    /// in declaration order through the one apply path; the recorded future, if any, becomes a
    /// branch; the recorder is told (its failure undoes the step).
    #[inline(always)]
    fn commit_step(&mut self, step: u32) -> Result<Advance, StepError> {
        let node = self.open_node();
        let mut saved = 0; // the next state in `scratch.interrupted` (in the step's order)
        let kept = !self.scratch.outcomes.is_empty(); // else no firing has anything to keep
        for j in 0..self.scratch.ops.len() {
            let o = self.scratch.ops[j];
            let before = match self.scratch.interrupted.get_mut(saved) {
                Some((s, before)) if *s as usize == o => {
                    saved += 1;
                    before.take()
                }
                _ => None, // a stateless operator: nothing saved
            };
            if kept && let Some(out) = self.scratch.outcomes.get_mut(j).and_then(Option::as_mut) {
                super::reuse::keep(&mut self.history, out);
            }
            self.commit_firing(j, o, step, before);
        }
        if saved > 0 {
            self.scratch.interrupted.clear(); // every saved state was taken above
        }
        self.close_node(node, step)
    }

    /// Opens the history node of the step being committed.
    #[inline(always)]
    fn open_node(&mut self) -> u32 {
        self.history
            .open_node_on(self.scratch.branch, self.marking.tokens.len() as u32)
    }

    /// Applies the step's `j`-th firing, operator `o`'s, through the one apply path, with the
    /// operator's state `before` it (`None`: stateless) and after it.
    #[inline(always)]
    fn commit_firing(&mut self, j: usize, o: usize, step: u32, before: Option<OpState>) {
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

    /// Ends the committed step's node: on the applied path; the recorded future, if any, a
    /// branch now; the recorder and the observer told.
    #[inline(always)]
    fn close_node(&mut self, node: u32, step: u32) -> Result<Advance, StepError> {
        self.history.path.push(node);
        if !self.history.redo.is_empty() || self.context.recorder.is_some() {
            self.end_future(node, step)?;
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

    /// After a committed step: the recorded future, if any, is a branch now; the recorder is
    /// told, and if it fails the step is undone and the future is as it was. Not cold: it runs
    /// on every step of a journaled run; out of line so the unjournaled step stays small.
    #[inline(never)]
    fn end_future(&mut self, node: u32, step: u32) -> Result<(), StepError> {
        let future = std::mem::take(&mut self.history.redo);
        if self.context.recorder.is_some()
            && let Err(e) = self.record_commit(node, step)
        {
            self.history.redo = future; // the step was undone: the future is as it was
            return Err(e);
        }
        Ok(())
    }

    /// Discards the step: every operator back in its state before it (a successful firing
    /// rolled back, a failed one restored), and says why — the cancellation, the run's budget
    /// (`BUDGET`), or the first failure in declaration order, firing `j`.
    #[cold]
    #[inline(never)]
    fn discard_step(&mut self, step: u32, cancelled: bool, j: usize) -> Result<Advance, StepError> {
        let mut saved = std::mem::take(&mut self.scratch.interrupted)
            .into_iter()
            .peekable();
        for (k, &o) in self.scratch.ops.iter().enumerate() {
            let before = saved
                .next_if(|(s, _)| *s as usize == o)
                .and_then(|(_, before)| before);
            let op = &mut self.net.ops[o].op;
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
        for e in &mut self.scratch.emitted {
            e.clear(); // the discarded firings' emissions (the values they hold) go now
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
        for (o, before) in std::mem::take(&mut self.scratch.interrupted) {
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
