//! Steps that need a future: parallel (maximal-step) mode, the async API, firings with a timeout,
//! retries or an async operator, and cancellation (docs/semantics.md §7).
//!
//! A step picks its operators — every enabled one in parallel mode, the first in sequential
//! mode — and snapshots what each reads: its inputs at the start of the step and the inputs it
//! will consume (docs/semantics.md §7: "each reading the marking at the start of the step"). The firings then
//! run concurrently:
//!
//! - structural operators and [`Execution::Inline`] ones on the engine's task, in declaration
//!   order;
//! - [`Execution::Blocking`] ones on tokio's blocking pool (the operator is lent to the pool
//!   thread and handed back, see [`Loan`]);
//! - [`Execution::Async`] ones as futures polled by the step, so a timeout or a cancellation
//!   simply drops them.
//!
//! Nothing touches the marking or the history until every firing has finished. Then, if all
//! succeeded, the step commits: one history node holding every firing, applied in declaration
//! order. Within a maximal step a connection consumed by one firing is never written by
//! another (its producer would be blocked by back-pressure, docs/semantics.md §3.2), and a connection written
//! by one firing is never consumed by another (consumption is decided on the start marking, so
//! only connections already NEW are consumed), so applying firing by firing equals "every
//! consumption, then every emission". If any firing failed, the step is discarded (operators'
//! states restored, successful firings rolled back) and the error names the first failing
//! operator **in declaration order** — firings declared after a failure are cancelled, firings
//! declared before it are waited for, so which operator is named never depends on timing.

use tracing::{Instrument, Span};

use super::attempt::{FiringCx, Outcome, fire_now};
use super::firings::{Ran, StepFirings, StepPlan, run_firings};
use super::spans::finish;
use super::step::run_outcome;
use super::{Advance, CancelToken, Cvm, EndState, Event, RunError, Step, StepError, input_slot};
use crate::net::{Mode, OpNode};
use crate::operator::{Execution, InputSet, OpError, OpSettings};

impl Cvm {
    /// The token that cancels this engine's runs (see [`CancelToken`]).
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// Uses `token` to cancel this engine's runs from now on (as
    /// [`CvmBuilder::cancel_token`](super::CvmBuilder::cancel_token) does at build time).
    pub fn set_cancel_token(&mut self, token: CancelToken) {
        self.cancel = token;
    }

    /// Fires one step forward, asynchronously: replays the next recorded step if the history has
    /// one, else executes one step — every enabled operator (parallel mode) or the first one
    /// (sequential mode) — awaiting async operators instead of blocking on them.
    ///
    /// Returns [`Step::Ended`] when nothing can fire, or with [`EndState::Cancelled`] when the
    /// [`cancel_token`](Self::cancel_token) was cancelled before or during the step. On `Err` and
    /// on cancellation, nothing changed: marking, history and operator states are as before.
    ///
    /// Must be polled inside a tokio runtime with timers enabled (`#[tokio::main]`,
    /// `#[tokio::test]`). Dropping the future before it finishes (a `select!`, a
    /// `tokio::time::timeout`) discards the step: marking and history are untouched, a blocking
    /// firing in flight is waited for (its thread cannot be interrupted) so its operator is
    /// back in the net when the drop returns, and the internal states of the step's operators
    /// are restored by the engine's next `step`, `refire` or `back` (until then
    /// [`net`](Self::net) may show a half-fired operator's state). Prefer the
    /// [`cancel_token`](Self::cancel_token), which restores everything before returning.
    pub async fn step_async(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        let advanced = self.advance_async().await;
        if self.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        Ok(self.describe(advanced?))
    }

    async fn advance_async(&mut self) -> Result<Advance, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        if let Some(&node) = self.hist.redo.last() {
            let advanced = self.replay_next(node)?;
            self.record_move()?;
            return Ok(advanced);
        }
        self.execute_step().await
    }

    /// [`refire`](Self::refire), asynchronously: executes the next step anew even if the
    /// history has one recorded here, which stays as a branch.
    pub async fn refire_async(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let redo = std::mem::take(&mut self.hist.redo);
        let advanced = self.execute_step().await;
        if !matches!(advanced, Ok(Advance::Fired { .. })) {
            self.hist.redo = redo; // nothing fired: keep the future as it was
        }
        if self.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        Ok(self.describe(advanced?))
    }

    /// Runs forward to an end state, asynchronously (see [`step_async`](Self::step_async)): the
    /// way to run parallel mode from async code.
    ///
    /// ```
    /// use cameleon::prelude::*;
    /// use cameleon::ops::{Delay, Fork, Join, Sink, Source};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut b = Net::builder("fan-out");
    /// b.add("src", Source::new("hi"));
    /// b.add("fork", Fork::<Any>::new(2)?);
    /// b.add("slow", Delay::new(30));
    /// b.add("slower", Delay::new(40));
    /// b.add("join", Join::<Any>::new(2)?);
    /// b.add("out", Sink::new());
    /// b.connect("src.out_data", "fork.in_data")
    ///     .connect("fork.out_a", "slow.in_data")
    ///     .connect("fork.out_b", "slower.in_data")
    ///     .connect("slow.out_data", "join.in_a")
    ///     .connect("slower.out_data", "join.in_b")
    ///     .connect("join.out_data", "out.in_data");
    /// let mut cvm = Cvm::builder(b.build()?).mode(Mode::Parallel).build();
    ///
    /// assert_eq!(cvm.run_async().await?, EndState::Completed);
    /// assert_eq!(cvm.depth(), 5); // src, fork, both delays in one step, join, out
    /// assert_eq!(cvm.received("out")[0].to_json(), "hi");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_async(&mut self) -> Result<EndState, RunError> {
        self.check_traced();
        let span = self.run_span();
        let end = self.run_async_loop().instrument(span).await;
        if self.traced {
            let name = match &end {
                Ok(end) => end.name(),
                Err(_) => "ERROR",
            };
            self.close_run_span(name);
        }
        end
    }

    async fn run_async_loop(&mut self) -> Result<EndState, RunError> {
        let end = loop {
            if self.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.advance_async().await)? {
                break end;
            }
        };
        self.record_end(&end)?;
        self.notify(|_| Event::Ended { end: end.clone() });
        Ok(end)
    }

    /// Restores the operators of a step whose future was dropped mid-way.
    pub(super) fn restore_pending(&mut self) {
        for (o, before) in std::mem::take(&mut self.pending) {
            if let Some(s) = &before {
                self.net.ops[o as usize].op.restore_state(s);
            }
        }
        self.update_slow();
    }

    /// Executes one step anew: every enabled operator (parallel) or the first (sequential).
    pub(super) async fn execute_step(&mut self) -> Result<Advance, StepError> {
        let ops: Vec<usize> = match self.mode {
            Mode::Parallel if self.topo.any_cancel => self.without_cancelled(),
            Mode::Parallel => self.enabled.iter().collect(),
            Mode::Sequential => self.enabled.first().into_iter().collect(),
        };
        self.execute_ops(ops).await
    }

    /// Fires `ops` (enabled operators, in declaration order) as one step.
    pub(super) async fn execute_ops(&mut self, ops: Vec<usize>) -> Result<Advance, StepError> {
        if ops.is_empty() {
            return Ok(Advance::Ended(
                self.terminal_state().unwrap_or(EndState::Completed),
            ));
        }
        if let Some(end) = ops.iter().find_map(|&o| self.limit_before(o)) {
            return Ok(Advance::Ended(end));
        }
        if self.cancel.take() {
            return Ok(Advance::Ended(EndState::Cancelled));
        }
        let step = self.hist.path.len() as u32 + 1;
        let plan = self.plan(&ops);
        // Saved before anything runs; if this future is dropped mid-step, the next call
        // restores them (`restore_pending`).
        self.pending = ops
            .iter()
            .map(|&o| (o as u32, self.net.ops[o].op.save_state()))
            .collect();
        self.slow = true; // until the step is finished (see `restore_pending`)
        let observed = self.observed();
        if observed {
            self.notify_started(&ops, step);
        }
        let spans: Vec<Span> = if self.traced {
            let step_span = self.step_span(step, &ops);
            ops.iter()
                .map(|&o| self.firing_span(&step_span, o, step))
                .collect()
        } else {
            Vec::new()
        };
        let ran = if ops
            .iter()
            .all(|&o| self.exec[o] == Execution::Inline && !self.guarded[o])
        {
            // Nothing to wait for: the firings one after the other, without futures.
            self.run_inline(step, &ops, &plan, &spans)
        } else {
            let branch = self.hist.next_branch();
            let Cvm {
                net,
                tokens,
                topo,
                exec,
                settings,
                observer,
                cancel,
                run_id,
                caps,
                mode,
                partial,
                reuse,
                ..
            } = self;
            run_firings(
                StepFirings {
                    ops: &ops,
                    plan: &plan,
                    tokens,
                    topo,
                    exec,
                    settings,
                    step,
                    run: run_id,
                    branch,
                    caps,
                    spans: &spans,
                    parallel: *mode == Mode::Parallel,
                    partial: partial.as_ref(),
                    reuse: reuse.as_deref(),
                },
                &mut net.ops,
                cancel,
                observer,
            )
            .await
        };
        self.finish_step(step, &ops, &plan, ran)
    }

    /// The operators of a maximal step when some operator declares a cancellation
    /// (docs/semantics.md §10.4): every enabled operator in declaration order, except those a
    /// cancellation of the step may withdraw — the consumers of a connection in the region of
    /// an enabled operator not itself held back. They wait for a later step, if still enabled.
    fn without_cancelled(&self) -> Vec<usize> {
        let mut held = vec![false; self.net.ops.len()];
        // Cancellers first, in declaration order: one held by an earlier one holds nothing.
        for o in self.enabled.iter() {
            if held[o] {
                continue;
            }
            for &c in self.topo.cancels(o) {
                let k = self.topo.consumer[c as usize] as usize;
                if k != o {
                    held[k] = true;
                }
            }
        }
        self.enabled.iter().filter(|&o| !held[o]).collect()
    }

    /// Runs a step whose firings are all inline and without settings, in declaration order,
    /// through [`fire_now`], up to the first failure (later firings are not needed: the step is
    /// discarded).
    fn run_inline(&mut self, step: u32, ops: &[usize], plan: &StepPlan, spans: &[Span]) -> Ran {
        let branch = self.hist.next_branch();
        let Cvm {
            net,
            tokens,
            topo,
            observer,
            pending,
            run_id,
            caps,
            mode,
            partial,
            ..
        } = self;
        let mut outcomes = Vec::with_capacity(ops.len());
        let mut emitted = Vec::with_capacity(ops.len());
        for (j, &o) in ops.iter().enumerate() {
            let OpNode { meta, op } = &mut net.ops[o];
            let cx = FiringCx {
                o,
                name: &meta.name,
                kind: Execution::Inline,
                settings: OpSettings::NONE,
                inputs: plan.inputs(j),
                tokens,
                topo,
                step,
                run: run_id,
                branch,
                stop: None,
                events: None,
                timed: observer.is_some() || !spans.is_empty(),
                caps,
                parallel: *mode == Mode::Parallel,
                partial: partial.as_ref(),
                reuse: None,
            };
            let mut out_emitted = Vec::new();
            let entered = spans.get(j).map(Span::enter);
            let out = fire_now(
                &mut **op,
                &meta.spec,
                &cx,
                pending[j].1.as_ref(),
                &mut out_emitted,
            );
            drop(entered);
            if let Some(span) = spans.get(j) {
                finish(span, &out);
            }
            if let Some(obs) = observer.as_mut() {
                obs(&out.event(step, &meta.name));
            }
            let failed = out.result.is_err();
            outcomes.push(Some(out));
            emitted.push(out_emitted);
            if failed {
                break;
            }
        }
        outcomes.resize_with(ops.len(), || None);
        emitted.resize_with(ops.len(), Vec::new);
        Ran {
            outcomes,
            emitted,
            cancelled: false,
        }
    }

    /// What each firing of the step reads: its inputs and what it consumes, at the start.
    fn plan(&mut self, ops: &[usize]) -> StepPlan {
        let mut plan = StepPlan::default();
        for &o in ops {
            // Only inputs NEW now are consumed: a connection another firing of the step writes
            // is not NEW now, and must stay NEW after the step.
            let ins = &self.ports.inputs[self.topo.in_range(o)];
            let new = InputSet::new_inputs(ins);
            let consumes = self.net.ops[o].op.consumes(ins);
            plan.consumes.push(InputSet(consumes.0 & new.0));
            plan.slot_start.push(plan.slots.len());
            plan.slots.extend(
                self.topo
                    .ins(o)
                    .iter()
                    .map(|&c| input_slot(&self.state, &self.tok, c)),
            );
        }
        plan.slot_start.push(plan.slots.len());
        plan
    }

    /// Commits the step if every firing succeeded, else discards it.
    fn finish_step(
        &mut self,
        step: u32,
        ops: &[usize],
        plan: &StepPlan,
        ran: Ran,
    ) -> Result<Advance, StepError> {
        let pending = std::mem::take(&mut self.pending);
        self.update_slow();
        let failed = ran
            .outcomes
            .iter()
            .position(|r| matches!(r, Some(Outcome { result: Err(_), .. })));
        if ran.cancelled || failed.is_some() {
            for (((o, before), out), emitted) in
                pending.into_iter().zip(&ran.outcomes).zip(&ran.emitted)
            {
                let op = &mut self.net.ops[o as usize].op;
                match out {
                    Some(Outcome { result: Ok(()), .. }) => {
                        crate::operator::capability::applying_if(
                            before.is_some(),
                            &self.caps,
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
            let j = failed.unwrap_or_default();
            let budget = (!ran.cancelled)
                .then(|| super::outcome::budget_stop(&self.caps, &self.net.ops[ops[j]].name))
                .flatten();
            let reason = match (ran.cancelled, &budget) {
                (true, _) => "CANCELLED",
                (false, Some(_)) => "BUDGET",
                (false, None) => "ERROR",
            };
            self.notify(|_| Event::StepDiscarded {
                step,
                reason: reason.into(),
            });
            if ran.cancelled {
                self.cancel.take();
                return Ok(Advance::Ended(EndState::Cancelled));
            }
            if let Some(end) = budget {
                return Ok(Advance::Ended(end));
            }
            let error = match ran.outcomes.into_iter().nth(j).flatten() {
                Some(Outcome { result: Err(e), .. }) => e,
                _ => OpError::new("failed"), // unreachable: `j` is a failure
            };
            return Err(StepError::Operator {
                op: self.net.ops[ops[j]].name.clone(),
                error,
            });
        }
        let node = self.hist.open_node(self.tokens.len() as u32);
        let mut outcomes = ran.outcomes;
        for (j, ((o, before), emitted)) in pending.into_iter().zip(ran.emitted).enumerate() {
            let o = o as usize;
            let firing = self.hist.firings.len() as u32;
            if let Some(out) = outcomes[j].as_mut() {
                if let Some(from) = out.reused.take() {
                    self.hist.reused.push((firing, from));
                }
                if let Some(k) = out.key {
                    self.hist.keys.push((firing, k));
                }
            }
            let after = if before.is_some() {
                self.net.ops[o].op.save_state()
            } else {
                None
            };
            self.s.emitted.clear();
            self.s.emitted.extend(emitted);
            self.apply_firing(o, step, before, after, plan.consumes[j]);
        }
        self.hist.path.push(node);
        if self.recorder.is_some() {
            let observed = self.observed();
            self.record_commit(node, step, observed)?;
        }
        if self.observed() {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: cvm.names(ops.iter().copied()),
                replayed: false,
            });
        }
        Ok(Advance::Fired { replayed: false })
    }
}
