//! Forward: sequential steps (docs/semantics.md §4), replay after a backward step (§5), and
//! applying a firing to the marking and the history.

use super::attempt::{FiringCx, Outcome, fire_now};
use super::{Advance, Cvm, EndState, Event, RunError, Step, StepError, input_slot, set_state};
use crate::connection::{ConnState, NONE, OpId, Token};
use crate::history::{FiringRec, SavedStates, Written};
use crate::net::{Mode, NO_PORT, OpNode};
use crate::operator::{Execution, InputSet, OpSettings, OpState};
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
        let advanced = self.advance();
        if self.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        if self.traced {
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
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let redo = std::mem::take(&mut self.hist.redo);
        let advanced = if self.slow {
            self.execute_next_slow()
        } else {
            self.execute_next()
        };
        if !matches!(advanced, Ok(Advance::Fired { .. })) {
            self.hist.redo = redo; // nothing fired: keep the future as it was
        }
        if self.recorder.is_some() {
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
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let o = op.index();
        if o >= self.net.ops.len() || !self.enabled.get(o) {
            return Err(StepError::ReplayDiverged {
                step: self.hist.path.len() as u32 + 1,
                op: self
                    .net
                    .ops
                    .get(o)
                    .map_or_else(|| format!("#{o}"), |n| n.name.clone()),
            });
        }
        if let Some(end) = self.limit_before(o) {
            return Ok(Step::Ended(end));
        }
        let redo = std::mem::take(&mut self.hist.redo);
        let advanced = block_on(self.execute_ops(vec![o]));
        if !matches!(advanced, Ok(Advance::Fired { .. })) {
            self.hist.redo = redo; // nothing fired: keep the future as it was
        }
        Ok(self.describe(advanced?))
    }

    /// Runs forward until an end state: [`EndState::Error`] when an operator fails (its firing
    /// not applied), [`EndState::Cancelled`] when the [`cancel_token`](Self::cancel_token) is
    /// cancelled (checked between steps, and during a parallel step).
    ///
    /// In parallel mode this drives [`run_async`](Self::run_async) on Caméléon's runtime.
    pub fn run(&mut self) -> Result<EndState, RunError> {
        if self.mode == Mode::Parallel {
            return block_on(self.run_async());
        }
        self.check_traced();
        let span = self.run_span();
        let entered = span.enter();
        let end = loop {
            if self.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.advance())? {
                break end;
            }
        };
        drop(entered);
        if self.traced {
            self.close_run_span(end.name());
        }
        self.record_end(&end)?;
        self.notify(|_| Event::Ended { end: end.clone() });
        Ok(end)
    }

    /// One step forward, without building the public description (the hot path of `run`).
    #[inline]
    fn advance(&mut self) -> Result<Advance, StepError> {
        if self.slow {
            return self.advance_slow();
        }
        if let Some(&node) = self.hist.redo.last() {
            return self.replay_next(node);
        }
        self.execute_next()
    }

    /// [`advance`](Self::advance) when [`slow`](Self::update_slow).
    #[inline(never)]
    fn advance_slow(&mut self) -> Result<Advance, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        if let Some(&node) = self.hist.redo.last() {
            let advanced = self.replay_next(node)?;
            self.record_move()?;
            return Ok(advanced);
        }
        self.execute_next_slow()
    }

    pub(super) fn describe(&self, a: Advance) -> Step {
        match a {
            Advance::Ended(end) => Step::Ended(end),
            Advance::Fired { replayed } => {
                let node = self.hist.path.last().copied().unwrap_or(NONE);
                Step::Fired {
                    ops: self
                        .hist
                        .firing_range(node)
                        .map(|f| OpId(self.hist.firings[f].op))
                        .collect(),
                    step: self.hist.path.len() as u32,
                    replayed,
                }
            }
        }
    }

    /// The end state that stops the run before `o` fires, if any: the step budget, or `o`'s
    /// loop bound (docs/semantics.md §4.7).
    pub(super) fn limit_before(&self, o: usize) -> Option<EndState> {
        if let Some(limit) = self.max_steps
            && self.hist.path.len() as u64 >= limit
        {
            return Some(EndState::StepLimit { limit });
        }
        if self.fire_count[o] >= self.max_loop {
            return Some(EndState::LoopLimit {
                op: self.net.ops[o].name.clone(),
                limit: self.max_loop,
            });
        }
        None
    }

    /// A sequential step: fires the first enabled operator (docs/semantics.md §4).
    fn execute_next(&mut self) -> Result<Advance, StepError> {
        let Some(o) = self.enabled.first() else {
            return Ok(Advance::Ended(
                self.terminal_state().unwrap_or(EndState::Completed),
            ));
        };
        if let Some(end) = self.limit_before(o) {
            return Ok(Advance::Ended(end));
        }
        let step = self.hist.path.len() as u32 + 1;
        self.fire_one(o, step, false, false, false)
    }

    /// [`execute_next`](Self::execute_next) when [`slow`](Self::update_slow): a parallel step,
    /// an operator that needs a future (a timeout, retries, or an async operator), or events.
    fn execute_next_slow(&mut self) -> Result<Advance, StepError> {
        if self.mode == Mode::Parallel {
            return block_on(self.execute_step());
        }
        let Some(o) = self.enabled.first() else {
            return Ok(Advance::Ended(
                self.terminal_state().unwrap_or(EndState::Completed),
            ));
        };
        if let Some(end) = self.limit_before(o) {
            return Ok(Advance::Ended(end));
        }
        if self.guarded[o] {
            // The firing routine's future implements timeouts, retries and async operators.
            return block_on(self.execute_step());
        }
        let step = self.hist.path.len() as u32 + 1;
        let observed = self.observed();
        if observed {
            self.notify_started(&[o], step);
        }
        let recording = self.recorder.is_some();
        let span = self.step_span(step, &[o]);
        let _step = span.enter();
        self.fire_one(o, step, observed, self.traced, recording)
    }

    /// Fires operator `o` alone, on this thread, through the firing routine
    /// ([`fire_now`]), and commits it as step `step`. `observed`: send its events; `traced`:
    /// open its `tracing` span; `recording`: tell the recorder.
    // Always inlined: it is the sequential hot path (see benches/engine.rs), where every flag
    // is the constant `false`.
    #[inline(always)]
    fn fire_one(
        &mut self,
        o: usize,
        step: u32,
        observed: bool,
        traced: bool,
        recording: bool,
    ) -> Result<Advance, StepError> {
        let branch = self.hist.next_branch();
        let span = if traced {
            Some(self.firing_span(&tracing::Span::current(), o, step))
        } else {
            None
        };
        let Cvm {
            net,
            topo,
            state,
            tok,
            tokens,
            s,
            run_id,
            caps,
            ports,
            partial,
            ..
        } = self;
        s.slots.clear();
        for &c in topo.ins(o) {
            s.slots.push(input_slot(state, tok, c)); // a loop: `extend` costs 5× more here
        }
        let OpNode { meta, op } = &mut net.ops[o];
        // What the firing consumes is decided on the input states before it runs, by the
        // operator in the state it fires in (docs/semantics.md §4.4), as a maximal step does.
        let consumes = op.consumes(&ports.inputs[topo.in_range(o)]);
        let before = op.save_state();
        let cx = FiringCx {
            o,
            name: &meta.name,
            kind: Execution::Inline,
            settings: OpSettings::NONE,
            inputs: &s.slots,
            tokens,
            topo,
            step,
            run: run_id,
            branch,
            stop: None,
            events: None,
            timed: observed || traced,
            caps,
            parallel: false,
            partial: partial.as_ref(),
            reuse: None,
        };
        let entered = span.as_ref().map(tracing::Span::enter);
        let out = fire_now(&mut **op, &meta.spec, &cx, before.as_ref(), &mut s.emitted);
        drop(entered);
        if let Some(span) = &span {
            super::spans::finish(span, &out);
        }
        if observed {
            self.notify_finished(o, step, &out);
        }
        if let Err(error) = out.result {
            let budget = super::outcome::budget_stop(&self.caps, &self.net.ops[o].name);
            if observed {
                let reason = if budget.is_some() { "BUDGET" } else { "ERROR" };
                self.notify(|_| Event::StepDiscarded {
                    step,
                    reason: reason.into(),
                });
            }
            if let Some(end) = budget {
                return Ok(Advance::Ended(end));
            }
            return Err(StepError::Operator {
                op: self.net.ops[o].name.clone(),
                error,
            });
        }
        let op = &self.net.ops[o].op;
        let after = if before.is_some() {
            op.save_state()
        } else {
            None
        };
        let node = self.hist.open_node(self.tokens.len() as u32);
        self.apply_firing(o, step, before, after, consumes);
        self.hist.path.push(node);
        if recording {
            self.record_commit(node, step, observed)?;
        }
        if observed {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: vec![cvm.net.ops[o].name.clone()],
                replayed: false,
            });
        }
        Ok(Advance::Fired { replayed: false })
    }

    #[cold]
    pub(super) fn notify_started(&mut self, ops: &[usize], step: u32) {
        self.notify(|cvm| Event::StepStarted {
            step,
            ops: cvm.names(ops.iter().copied()),
        });
        for &o in ops {
            self.notify(|cvm| Event::FiringStarted {
                step,
                op: cvm.net.ops[o].name.clone(),
            });
        }
    }

    #[cold]
    fn notify_finished(&mut self, o: usize, step: u32, out: &Outcome) {
        self.notify(|cvm| out.event(step, &cvm.net.ops[o].name));
    }

    /// Applies a firing of `o` that consumes the NEW inputs in `consumes` and emits
    /// `self.s.emitted`, and records it in the open node (docs/semantics.md §4.5–§4.6).
    // Always inlined: it is the sequential hot path (see benches/engine.rs).
    #[inline(always)]
    pub(super) fn apply_firing(
        &mut self,
        o: usize,
        step: u32,
        before: Option<OpState>,
        after: Option<OpState>,
        consumes: InputSet,
    ) {
        let firing = self.hist.firings.len() as u32;
        self.hist.firings.push(FiringRec {
            op: o as u32,
            consumed_start: self.hist.consumed.len() as u32,
            written_start: self.hist.written.len() as u32,
        });
        if before.is_some() || after.is_some() {
            self.hist.states.push(SavedStates {
                firing,
                before,
                after,
            });
        }
        // Consumption first (NEW -> OLD) ...
        for (p, &c) in self.topo.ins(o).iter().enumerate() {
            if c != NONE && consumes.contains(p) && self.state[c as usize] == ConnState::New {
                set_state(
                    &mut self.state,
                    &mut self.ports,
                    &self.topo,
                    c as usize,
                    ConnState::Old,
                );
                self.hist.consumed.push(c);
            }
        }
        // ... a cancellation's region among the consumed (docs/semantics.md §10.4) ...
        if self.topo.any_cancel && self.topo.cancel_start[o] != self.topo.cancel_start[o + 1] {
            self.cancel_region(o);
        }
        // ... then emission (-> NEW), one shared token per emitted port.
        for (port, value) in self.s.emitted.drain(..) {
            let t = self.tokens.len() as u32;
            self.tokens.push(Token {
                value,
                step,
                op: OpId(o as u32),
            });
            for &c in self.topo.port_conns(o, port as usize) {
                self.hist.written.push(Written {
                    conn: c,
                    prior_tok: self.tok[c as usize],
                    new_tok: t,
                });
                set_state(
                    &mut self.state,
                    &mut self.ports,
                    &self.topo,
                    c as usize,
                    ConnState::New,
                );
                self.tok[c as usize] = t;
            }
        }
        self.fire_count[o] += 1;
        self.refresh_around(firing as usize);
    }

    /// Consumes, as part of the firing of `o` being applied, every NEW connection of its
    /// cancellation region, when this firing triggers it (docs/semantics.md §10.4): every
    /// firing, or one that emits on the declared output. Recorded among the firing's consumed
    /// connections, so `back` and replay treat them as any other.
    #[cold]
    #[inline(never)]
    fn cancel_region(&mut self, o: usize) {
        let on = self.topo.cancel_on[o];
        if on != NO_PORT && !self.s.emitted.iter().any(|(p, _)| *p == on) {
            return;
        }
        let range = self.topo.cancel_start[o] as usize..self.topo.cancel_start[o + 1] as usize;
        for i in range {
            let c = self.topo.cancel_conns[i];
            if self.state[c as usize] == ConnState::New {
                set_state(
                    &mut self.state,
                    &mut self.ports,
                    &self.topo,
                    c as usize,
                    ConnState::Old,
                );
                self.hist.consumed.push(c);
            }
        }
    }

    /// Re-evaluates every operator whose enabling firing `f` may have changed: the operator
    /// itself, the producers of what it consumed (back-pressure relieved), the consumers of
    /// what it consumed for another operator (a cancellation, docs/semantics.md §10.4) and the
    /// consumers of what it wrote. Nothing else can change (docs/semantics.md §3 reads only an
    /// operator's own ports).
    pub(super) fn refresh_around(&mut self, f: usize) {
        let o = self.hist.firings[f].op;
        self.refresh(o as usize);
        let cancels = self.topo.any_cancel;
        for i in self.hist.consumed_range(f) {
            let c = self.hist.consumed[i] as usize;
            self.refresh(self.topo.producer[c] as usize);
            // Only a cancellation consumes another operator's input (its consumer changes).
            if cancels {
                let k = self.topo.consumer[c];
                if k != o {
                    self.refresh(k as usize);
                }
            }
        }
        for i in self.hist.written_range(f) {
            let c = self.hist.written[i].conn as usize;
            self.refresh(self.topo.consumer[c] as usize);
        }
    }

    /// Replays recorded step `node` (docs/semantics.md §5): re-applies its firings without
    /// running their operators.
    pub(super) fn replay_next(&mut self, node: u32) -> Result<Advance, StepError> {
        let range = self.hist.firing_range(node);
        let step = self.hist.path.len() as u32 + 1;
        for f in range.clone() {
            let o = self.hist.firings[f].op as usize;
            if let Some(end) = self.limit_before(o) {
                return Ok(Advance::Ended(end));
            }
            // A recorded firing of an operator with a question replays with its recorded
            // answer, even where the operator holds none now (a restored run's).
            if !(self.enabled.get(o) || (self.any_asks && self.waiting.get(o))) {
                return Err(StepError::ReplayDiverged {
                    step,
                    op: self.net.ops[o].name.clone(),
                });
            }
        }
        self.hist.redo.pop();
        for f in range {
            self.redo_firing(f);
        }
        self.hist.path.push(node);
        if self.observed() {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: cvm.names(
                    cvm.hist
                        .firing_range(node)
                        .map(|f| cvm.hist.firings[f].op as usize),
                ),
                replayed: true,
            });
        }
        Ok(Advance::Fired { replayed: true })
    }

    pub(super) fn redo_firing(&mut self, f: usize) {
        let o = self.hist.firings[f].op as usize;
        for i in self.hist.consumed_range(f) {
            let c = self.hist.consumed[i] as usize;
            self.set(c, ConnState::Old);
        }
        for i in self.hist.written_range(f) {
            let w = self.hist.written[i];
            self.set(w.conn as usize, ConnState::New);
            self.tok[w.conn as usize] = w.new_tok;
        }
        self.collect_emitted(f);
        let saved = self.hist.saved(f);
        let after = saved.and_then(|s| s.after.as_ref());
        let op = &mut self.net.ops[o].op;
        let emitted = &self.s.emitted;
        crate::operator::capability::applying_if(saved.is_some(), &self.caps, || {
            op.replay(after, emitted)
        });
        self.s.emitted.clear();
        self.fire_count[o] += 1;
        self.refresh_around(f);
    }

    /// Collects firing `f`'s emissions (port, value) into `self.s.emitted`.
    pub(super) fn collect_emitted(&mut self, f: usize) {
        self.s.emitted.clear();
        let mut last = NONE;
        for i in self.hist.written_range(f) {
            let w = self.hist.written[i];
            if w.new_tok != last {
                last = w.new_tok;
                let port = self.net.conns[w.conn as usize].from.port;
                self.s
                    .emitted
                    .push((port, self.tokens[w.new_tok as usize].value.clone()));
            }
        }
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
