//! Parallel (maximal-step) mode, the async API, timeouts, retries and cancellation (SPEC §7).
//!
//! A step picks its operators — every enabled one in parallel mode, the first in sequential
//! mode — and snapshots what each reads: its inputs at the start of the step and the inputs it
//! will consume (SPEC §7: "each reading the marking at the start of the step"). The firings then
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
//! another (its producer would be blocked by back-pressure, SPEC §3.2), and a connection written
//! by one firing is never consumed by another (consumption is decided on the start marking, so
//! only connections already NEW are consumed), so applying firing by firing equals "every
//! consumption, then every emission". If any firing failed, the step is discarded (operators'
//! states restored, successful firings rolled back) and the error names the first failing
//! operator **in declaration order** — firings declared after a failure are cancelled, firings
//! declared before it are waited for, so which operator is named never depends on timing.

use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{
    Advance, Cvm, EndState, Event, Observer, RunError, Step, StepError, Topo, caught_failure,
    check_emissions, input_slot, panic_message, run_outcome,
};
use crate::connection::Token;
use crate::net::{Mode, OpNode};
use crate::operator::{
    Execution, Firing, InputSet, InputSlot, OpError, OpSettings, OpSpec, Operator,
};
use crate::policy::{Family, Policy};
use crate::types::Value;

// ---------------------------------------------------------------------------------------------
// Cancellation

/// Cancels a run from anywhere: another task, another thread, a Ctrl-C handler. Cheap to clone;
/// every clone is the same token.
///
/// A cancelled run ends in [`EndState::Cancelled`] with the marking of its last committed step:
/// a step in flight is discarded (its async firings are dropped at once; a blocking or inline
/// `run` cannot be interrupted, so the step waits for it, then discards it). The cancellation is
/// consumed by the run (or step) that reports it, so the engine can be run again afterwards.
/// Cancelling while no run is going on cancels the next one.
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Delay, Sink, Source};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut b = Net::builder("slow");
/// b.add("src", Source::new("x"));
/// b.add("wait", Delay::new(60_000));
/// b.add("out", Sink::new());
/// b.connect("src.out_data", "wait.in_data").connect("wait.out_data", "out.in_data");
/// let mut cvm = Cvm::builder(b.build()?).mode(Mode::Parallel).build();
///
/// let token = cvm.cancel_token();
/// tokio::spawn(async move {
///     tokio::time::sleep(std::time::Duration::from_millis(20)).await;
///     token.cancel();
/// });
/// assert_eq!(cvm.run_async().await?, EndState::Cancelled);
/// assert_eq!(cvm.depth(), 1); // `src` committed; the delay's step was discarded
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<CancelInner>);

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels the current run (or the next one).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether a cancellation is pending.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Consumes a pending cancellation: whether there was one.
    #[inline]
    pub(super) fn take(&self) -> bool {
        self.0.cancelled.load(Ordering::Relaxed) && self.0.cancelled.swap(false, Ordering::SeqCst)
    }

    /// Resolves once the token is cancelled.
    async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The async API

impl Cvm {
    /// The token that cancels this engine's runs (see [`CancelToken`]).
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
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
        let advanced = self.advance_async().await?;
        Ok(self.describe(advanced))
    }

    async fn advance_async(&mut self) -> Result<Advance, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        if let Some(&node) = self.hist.redo.last() {
            return self.replay_next(node);
        }
        self.execute_step().await
    }

    /// [`refire`](Self::refire), asynchronously: executes the next step anew even if the
    /// history has one recorded here, which stays as a branch.
    pub async fn refire_async(&mut self) -> Result<Step, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let redo = std::mem::take(&mut self.hist.redo);
        let advanced = self.execute_step().await;
        if !matches!(advanced, Ok(Advance::Fired { .. })) {
            self.hist.redo = redo; // nothing fired: keep the future as it was
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
        let end = loop {
            if self.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.advance_async().await)? {
                break end;
            }
        };
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
            Mode::Parallel => self.enabled.iter().collect(),
            Mode::Sequential => self.enabled.first().into_iter().collect(),
        };
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
        if self.observed() {
            self.notify_started(&ops, step);
        }
        let names = if self.observed() {
            self.names(ops.iter().copied())
        } else {
            Vec::new()
        };
        if ops
            .iter()
            .all(|&o| self.exec[o] == Execution::Inline && !self.guarded[o])
        {
            // Nothing to wait for: run the firings one after the other, without futures.
            let ran = self.run_inline(step, &ops, &plan, &names);
            return self.finish_step(step, &ops, &plan, ran);
        }
        let Cvm {
            net,
            tokens,
            topo,
            exec,
            settings,
            observer,
            cancel,
            ..
        } = self;
        let ran = run_firings(
            Batch {
                ops: &ops,
                plan: &plan,
                tokens,
                topo,
                exec,
                settings,
                step,
                names: &names,
            },
            &mut net.ops,
            cancel,
            observer,
        )
        .await;
        self.finish_step(step, &ops, &plan, ran)
    }

    /// Runs a step whose firings are all inline, in declaration order, up to the first failure
    /// (later firings are not needed: the step is discarded).
    fn run_inline(&mut self, step: u32, ops: &[usize], plan: &Plan, names: &[String]) -> Ran {
        let Cvm {
            net,
            tokens,
            topo,
            observer,
            ..
        } = self;
        let stop = AtomicBool::new(false);
        let mut outcomes = Vec::with_capacity(ops.len());
        for (j, &o) in ops.iter().enumerate() {
            let t0 = observer.is_some().then(Instant::now);
            let cx = FiringCx {
                o,
                kind: Execution::Inline,
                settings: OpSettings::NONE,
                inputs: &plan.slots[plan.slot_start[j]..plan.slot_start[j + 1]],
                tokens,
                topo,
                n_outputs: topo.n_outputs(o) as u16,
                step,
                stop: &stop,
                events: None,
                name_for_events: "",
            };
            let OpNode { meta, op } = &mut net.ops[o];
            let (name, spec) = (&meta.name, &meta.spec);
            let result = attempt_inline(&mut **op, name, &cx).and_then(|e| checked(e, &cx, spec));
            let failed = result.is_err();
            let out = Outcome {
                result,
                attempts: 1,
                elapsed: t0.map(|t| t.elapsed()).unwrap_or_default(),
            };
            if let Some(obs) = observer.as_mut() {
                obs(&finished(step, names.get(j), &out));
            }
            outcomes.push(Some(out));
            if failed {
                break;
            }
        }
        outcomes.resize_with(ops.len(), || None);
        Ran {
            outcomes,
            cancelled: false,
        }
    }

    /// What each firing of the step reads: its inputs and what it consumes, at the start.
    fn plan(&mut self, ops: &[usize]) -> Plan {
        let mut plan = Plan::default();
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
        plan: &Plan,
        ran: Ran,
    ) -> Result<Advance, StepError> {
        let pending = std::mem::take(&mut self.pending);
        self.update_slow();
        let failed = ran
            .outcomes
            .iter()
            .position(|r| matches!(r, Some(Outcome { result: Err(_), .. })));
        if ran.cancelled || failed.is_some() {
            for ((o, before), out) in pending.into_iter().zip(&ran.outcomes) {
                let op = &mut self.net.ops[o as usize].op;
                match out {
                    Some(Outcome {
                        result: Ok(emitted),
                        ..
                    }) => op.rollback(before.as_ref(), emitted),
                    _ => {
                        if let Some(b) = &before {
                            op.restore_state(b);
                        }
                    }
                }
            }
            let reason = if ran.cancelled { "CANCELLED" } else { "ERROR" };
            self.notify(|_| Event::StepDiscarded {
                step,
                reason: reason.into(),
            });
            if ran.cancelled {
                self.cancel.take();
                return Ok(Advance::Ended(EndState::Cancelled));
            }
            let j = failed.unwrap_or_default();
            let error = match ran.outcomes.into_iter().nth(j).flatten() {
                Some(Outcome { result: Err(e), .. }) => e,
                _ => OpError::new("failed"), // unreachable: `j` is a failure
            };
            return Err(StepError::Operator {
                op: self.net.ops[ops[j]].name.clone(),
                error,
            });
        }
        let node = self.hist.open_node();
        for (j, ((o, before), out)) in pending.into_iter().zip(ran.outcomes).enumerate() {
            let o = o as usize;
            let emitted = match out {
                Some(Outcome {
                    result: Ok(emitted),
                    ..
                }) => emitted,
                _ => Vec::new(), // unreachable: every firing succeeded
            };
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

// ---------------------------------------------------------------------------------------------
// Running the firings of one step

/// What the firings of a step read, per firing (in the order of the step's operators).
#[derive(Default)]
struct Plan {
    slot_start: Vec<usize>,
    slots: Vec<InputSlot>,
    consumes: Vec<InputSet>,
}

/// The read-only context of a step's firings.
struct Batch<'a> {
    ops: &'a [usize],
    plan: &'a Plan,
    tokens: &'a [Token],
    topo: &'a Topo,
    exec: &'a [Execution],
    settings: &'a [OpSettings],
    step: u32,
    /// Operator names, for events (empty when nobody observes).
    names: &'a [String],
}

/// How one firing ended: its emissions or its error.
struct Outcome {
    result: Result<Vec<(u16, Value)>, OpError>,
    attempts: u32,
    elapsed: Duration,
}

/// How the firings of a step ended: one outcome per firing (`None`: cancelled before the end).
struct Ran {
    outcomes: Vec<Option<Outcome>>,
    cancelled: bool,
}

type FiringFuture<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// What one firing needs besides its operator.
struct FiringCx<'a> {
    o: usize,
    kind: Execution,
    settings: OpSettings,
    inputs: &'a [InputSlot],
    tokens: &'a [Token],
    topo: &'a Topo,
    n_outputs: u16,
    step: u32,
    /// Set when the firing's result is no longer wanted: do not retry.
    stop: &'a AtomicBool,
    /// Where retry events go (when somebody observes).
    events: Option<&'a Mutex<Vec<Event>>>,
    name_for_events: &'a str,
}

/// Runs the step's firings concurrently until all have finished, the first failure in
/// declaration order is known, or the run is cancelled.
async fn run_firings(
    b: Batch<'_>,
    nodes: &mut [OpNode],
    cancel: &CancelToken,
    observer: &mut Option<Observer>,
) -> Ran {
    let n = b.ops.len();
    let stops: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let queue: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    let observed = observer.is_some();
    let kinds: Vec<Execution> = b.ops.iter().map(|&o| b.exec[o]).collect();

    let mut futures: Vec<Option<FiringFuture<'_>>> = Vec::with_capacity(n);
    let mut wanted = b.ops.iter().copied().enumerate().peekable();
    for (o, node) in nodes.iter_mut().enumerate() {
        let Some(&(j, next)) = wanted.peek() else {
            break;
        };
        if next != o {
            continue;
        }
        wanted.next();
        let cx = FiringCx {
            o,
            kind: kinds[j],
            settings: b.settings[o],
            inputs: &b.plan.slots[b.plan.slot_start[j]..b.plan.slot_start[j + 1]],
            tokens: b.tokens,
            topo: b.topo,
            n_outputs: b.topo.n_outputs(o) as u16,
            step: b.step,
            stop: &stops[j],
            events: observed.then_some(&queue),
            name_for_events: b.names.get(j).map_or("", String::as_str),
        };
        futures.push(Some(Box::pin(fire(node, cx))));
    }

    let mut outcomes: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
    let mut cancelled = false;
    // Index of the first failure (declaration order) seen so far; firings after it are not
    // needed and are cancelled.
    let mut cut = n;
    let mut cancel_wait = std::pin::pin!(cancel.cancelled());
    let drop_after = |futures: &mut [Option<FiringFuture<'_>>], from: usize| {
        for k in from..n {
            stops[k].store(true, Ordering::SeqCst);
            // A blocking firing cannot be interrupted: it is polled until its operator is back.
            if kinds[k] != Execution::Blocking {
                futures[k] = None;
            }
        }
    };
    poll_fn(|cx: &mut Context<'_>| {
        if !cancelled && cancel_wait.as_mut().poll(cx).is_ready() {
            cancelled = true;
            drop_after(&mut futures, 0);
        }
        // Blocking and async firings first, so they are under way while inline ones run.
        for inline in [false, true] {
            for j in 0..n {
                if (kinds[j] == Execution::Inline) != inline {
                    continue;
                }
                let Some(f) = futures[j].as_mut() else {
                    continue;
                };
                let Poll::Ready(out) = f.as_mut().poll(cx) else {
                    continue;
                };
                futures[j] = None;
                if out.result.is_err() && j < cut && !cancelled {
                    cut = j;
                    drop_after(&mut futures, j + 1);
                }
                if let Some(obs) = observer.as_mut() {
                    obs(&finished(b.step, b.names.get(j), &out));
                }
                outcomes[j] = Some(out);
            }
        }
        if let Some(obs) = observer.as_mut() {
            let events = std::mem::take(&mut *queue.lock().unwrap_or_else(PoisonError::into_inner));
            for e in &events {
                obs(e);
            }
        }
        if futures.iter().all(Option::is_none) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    Ran {
        outcomes,
        cancelled,
    }
}

fn finished(step: u32, name: Option<&String>, out: &Outcome) -> Event {
    Event::FiringFinished {
        step,
        op: name.cloned().unwrap_or_default(),
        error: out.result.as_ref().err().map(ToString::to_string),
        attempts: out.attempts,
        elapsed_ms: out.elapsed.as_millis() as u64,
    }
}

/// One firing: attempts (with retries) until success, final failure, or `stop`.
async fn fire(node: &mut OpNode, cx: FiringCx<'_>) -> Outcome {
    let OpNode { meta, op } = node;
    let (name, spec) = (&meta.name, &meta.spec);
    let started = Instant::now();
    let retry = cx.settings.retry;
    // Restored before each retry, so every attempt starts from the same state.
    let initial = if retry.is_some() {
        op.save_state()
    } else {
        None
    };
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let result = match cx.kind {
            Execution::Inline => attempt_inline(&mut **op, name, &cx),
            Execution::Async => attempt_async(&mut **op, name, &cx).await,
            Execution::Blocking => attempt_blocking(op, name, &cx).await,
        };
        let error = match result.and_then(|emitted| checked(emitted, &cx, spec)) {
            Ok(emitted) => {
                return Outcome {
                    result: Ok(emitted),
                    attempts: attempt,
                    elapsed: started.elapsed(),
                };
            }
            Err(e) => e,
        };
        if let Some(s) = &initial {
            op.restore_state(s);
        }
        let again = retry.filter(|r| attempt <= r.max && !cx.stop.load(Ordering::SeqCst));
        let Some(r) = again else {
            // An operator with an `error: DataError` output catches its final failure there.
            let result = match caught_failure(spec, name, &error) {
                Some(emission) => Ok(vec![emission]),
                None => Err(error),
            };
            return Outcome {
                result,
                attempts: attempt,
                elapsed: started.elapsed(),
            };
        };
        let backoff = r.backoff(attempt);
        if let Some(q) = cx.events {
            q.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Event::FiringRetrying {
                    step: cx.step,
                    op: cx.name_for_events.to_owned(),
                    attempt,
                    error: error.to_string(),
                    backoff_ms: backoff.as_millis() as u64,
                });
        }
        tokio::time::sleep(backoff).await;
    }
}

fn checked(
    emitted: Vec<(u16, Value)>,
    cx: &FiringCx<'_>,
    spec: &OpSpec,
) -> Result<Vec<(u16, Value)>, OpError> {
    match check_emissions(&emitted, cx.topo, cx.o, spec) {
        Some(e) => Err(e),
        None => Ok(emitted),
    }
}

fn firing<'a>(cx: &FiringCx<'a>, name: &'a str, emitted: &'a mut Vec<(u16, Value)>) -> Firing<'a> {
    Firing {
        tokens: cx.tokens,
        inputs: cx.inputs,
        emitted,
        n_outputs: cx.n_outputs,
        step: cx.step,
        name,
        _op: PhantomData,
    }
}

fn settle(r: std::thread::Result<Result<(), OpError>>) -> Result<(), OpError> {
    match r {
        Ok(r) => r,
        Err(panic) => Err(OpError::new(format!(
            "panicked: {}",
            panic_message(&*panic)
        ))),
    }
}

/// The error of a firing that outlived its timeout.
fn late(limit: Duration, ran: Duration, interruptible: bool) -> OpError {
    let ms = limit.as_millis();
    if interruptible {
        OpError::new(format!("timed out after {ms} ms (timeout_ms: {ms})"))
    } else {
        OpError::new(format!(
            "timed out: ran for {} ms, over its timeout of {ms} ms (a synchronous run cannot be interrupted)",
            ran.as_millis()
        ))
    }
}

fn attempt_inline(
    op: &mut dyn Operator,
    name: &str,
    cx: &FiringCx<'_>,
) -> Result<Vec<(u16, Value)>, OpError> {
    let t0 = Instant::now();
    let mut emitted = Vec::new();
    let result = {
        let mut f = firing(cx, name, &mut emitted);
        catch_unwind(AssertUnwindSafe(|| op.run(&mut f)))
    };
    settle(result)?;
    if let Some(limit) = cx.settings.timeout()
        && t0.elapsed() > limit
    {
        return Err(late(limit, t0.elapsed(), false));
    }
    Ok(emitted)
}

async fn attempt_async(
    op: &mut dyn Operator,
    name: &str,
    cx: &FiringCx<'_>,
) -> Result<Vec<(u16, Value)>, OpError> {
    let mut emitted = Vec::new();
    let result = {
        let mut f = firing(cx, name, &mut emitted);
        let run = CatchUnwind(op.run_async(&mut f));
        match cx.settings.timeout() {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(r) => r,
                Err(_) => Err(late(limit, limit, true)),
            },
            None => run.await,
        }
    };
    result?;
    Ok(emitted)
}

async fn attempt_blocking(
    slot: &mut Box<dyn Operator>,
    name: &str,
    cx: &FiringCx<'_>,
) -> Result<Vec<(u16, Value)>, OpError> {
    // The pool thread needs owned data: copies of the input tokens (shared values, not deep
    // copies) and the operator itself, lent for the call.
    let mut tokens = Vec::with_capacity(cx.inputs.len());
    let slots: Vec<InputSlot> = cx
        .inputs
        .iter()
        .map(|s| match cx.tokens.get(s.token as usize) {
            Some(t) => {
                tokens.push(t.clone());
                InputSlot {
                    state: s.state,
                    token: (tokens.len() - 1) as u32,
                }
            }
            None => *s,
        })
        .collect();
    let name = name.to_owned();
    let (n_outputs, step) = (cx.n_outputs, cx.step);
    let t0 = Instant::now();
    let (mut loan, carrier) = Loan::new(slot);
    let mut handle = tokio::task::spawn_blocking(move || {
        carrier.run(|op| {
            let mut emitted = Vec::new();
            let result = {
                let mut f = Firing {
                    tokens: &tokens,
                    inputs: &slots,
                    emitted: &mut emitted,
                    n_outputs,
                    step,
                    name: &name,
                    _op: PhantomData,
                };
                catch_unwind(AssertUnwindSafe(|| op.run(&mut f)))
            };
            settle(result).map(|()| emitted)
        });
    });
    let mut timed_out = None;
    match cx.settings.timeout() {
        Some(limit) => {
            if tokio::time::timeout(limit, &mut handle).await.is_err() {
                timed_out = Some(limit);
                let _ = (&mut handle).await; // the operator comes back when `run` returns
            }
        }
        None => {
            let _ = (&mut handle).await; // a panic is caught inside; the result is in the loan
        }
    }
    let result = loan.take_back();
    match timed_out {
        Some(limit) => Err(late(limit, t0.elapsed(), false)),
        None => result,
    }
}

/// Catches a panic of the wrapped future, as an [`OpError`].
struct CatchUnwind<F>(F);

impl<F: Future<Output = Result<(), OpError>> + Unpin> Future for CatchUnwind<F> {
    type Output = Result<(), OpError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(p) => p,
            Err(panic) => Poll::Ready(settle(Err(panic))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lending an operator to the blocking pool

type BlockingResult = Result<Vec<(u16, Value)>, OpError>;

/// Where a lent operator comes back, with its result.
#[derive(Default)]
struct Returned {
    slot: Mutex<Option<(Box<dyn Operator>, BlockingResult)>>,
    ready: Condvar,
}

impl Returned {
    fn put(&self, op: Box<dyn Operator>, r: BlockingResult) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((op, r));
        self.ready.notify_all();
    }
}

/// The engine's side of a lent operator: its place in the net holds a placeholder until
/// [`take_back`](Self::take_back). If the step's future is dropped while the operator is out,
/// dropping the loan waits for it, so the net is never left without its operator.
struct Loan<'a> {
    slot: &'a mut Box<dyn Operator>,
    back: Arc<Returned>,
    out: bool,
}

/// The pool thread's side: carries the operator there and always sends it back, even if the
/// task is dropped unrun (runtime shutdown) or unwinds.
struct Carrier {
    op: Option<Box<dyn Operator>>,
    back: Arc<Returned>,
}

impl<'a> Loan<'a> {
    fn new(slot: &'a mut Box<dyn Operator>) -> (Self, Carrier) {
        let op = std::mem::replace(slot, Box::new(Lent));
        let back = Arc::new(Returned::default());
        let carrier = Carrier {
            op: Some(op),
            back: Arc::clone(&back),
        };
        (
            Loan {
                slot,
                back,
                out: true,
            },
            carrier,
        )
    }

    /// Puts the operator back in the net (waiting for it if it is still out) and returns its
    /// result.
    fn take_back(&mut self) -> BlockingResult {
        let mut g = self
            .back
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some((op, r)) = g.take() {
                *self.slot = op;
                self.out = false;
                return r;
            }
            g = self
                .back
                .ready
                .wait(g)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if self.out {
            let _ = self.take_back();
        }
    }
}

impl Carrier {
    fn run(mut self, f: impl FnOnce(&mut dyn Operator) -> BlockingResult) {
        let Some(op) = self.op.as_deref_mut() else {
            return;
        };
        let r = f(op);
        if let Some(op) = self.op.take() {
            self.back.put(op, r);
        }
    }
}

impl Drop for Carrier {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            self.back.put(
                op,
                Err(OpError::new(
                    "not run: the runtime shut down before the firing started",
                )),
            );
        }
    }
}

/// Stands in the net for an operator lent to the blocking pool. Never fired: the engine does
/// not look at the operator's place until it is back.
struct Lent;

impl Operator for Lent {
    fn spec(&self) -> OpSpec {
        OpSpec::new("lent", "Lent", Family::Behavioral, Policy::Custom)
    }
    fn can_fire(&self, _e: &crate::policy::Enabling<'_>) -> bool {
        false
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new("the operator is running on the blocking pool"))
    }
}
