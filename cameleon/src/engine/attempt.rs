//! The firing routine: how one operator fires, in every mode (docs/semantics.md §4, §7).
//!
//! One routine with two drivers:
//!
//! - [`fire`], a future: each attempt runs as the operator's [`Execution`] says — inline on the
//!   engine's task, lent to tokio's blocking pool, or awaited (so a timeout or a cancellation
//!   drops it) — and failed attempts are retried after their backoff;
//! - [`fire_now`], a plain call for a firing that needs no future (no timeout, no retries, not
//!   async): the operator runs on the calling thread. Sequential mode's hot path and a maximal
//!   step of inline firings use it.
//!
//! Both end every attempt in [`settle`]: a panic is an error, the emissions are checked against
//! the ports, a failed attempt leaves nothing behind (its emissions dropped, the operator's
//! internal state restored), it is retried while the settings allow, and a final failure is
//! caught on the operator's `error: DataError` output when it has one (docs/semantics.md §4).
//! So every mode reports the same [`FiringOutcome`]: the emissions or the error, how many attempts,
//! and (when asked) the wall-clock time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Event;
use super::firings::StepCx;
use super::loan::Loan;
use crate::net::Topo;
use crate::operator::{
    Execution, Firing, FiringInfo, FiringParts, InputSlot, OpError, OpSettings, OpSpec, OpState,
    Operator, TypeRef,
};
use crate::runtime::{CatchPanic, Panic, catch_panic};
use crate::types::{DataError, Value};

/// Emissions of a firing: (output port index, value), in emission order.
pub(super) type Emissions = Vec<(u16, Value)>;

/// What one firing needs besides its operator: its place in the step, whose shared context
/// ([`StepCx`]) it reads. How it executes and its settings are read from the step's context
/// when needed ([`kind`](Self::kind), [`settings`](Self::settings)), not copied per firing.
pub(super) struct FiringCx<'a> {
    /// What every firing of the step shares.
    pub(super) shared: &'a StepCx<'a>,
    /// The firing's index in the step.
    pub(super) j: usize,
    /// The operator's index in the net.
    pub(super) o: usize,
    /// Its instance name.
    pub(super) name: &'a str,
    /// Set when the firing's result is no longer wanted: do not retry.
    pub(super) stop: Option<&'a AtomicBool>,
    /// Where retry events go (when somebody observes).
    pub(super) events: Option<&'a Mutex<Vec<Event>>>,
}

impl<'a> FiringCx<'a> {
    /// The context of the step's `j`-th firing, operator `name`'s.
    #[inline(always)]
    pub(super) fn new(
        shared: &'a StepCx<'a>,
        j: usize,
        name: &'a str,
        stop: Option<&'a AtomicBool>,
        events: Option<&'a Mutex<Vec<Event>>>,
    ) -> Self {
        FiringCx {
            shared,
            j,
            o: shared.ops[j],
            name,
            stop,
            events,
        }
    }

    /// How each attempt runs (ignored by [`fire_now`], which runs the operator in place).
    #[inline]
    fn kind(&self) -> Execution {
        self.shared.execution[self.o]
    }

    /// The operator's timeout and retries.
    #[inline]
    fn settings(&self) -> &'a OpSettings {
        &self.shared.settings[self.o]
    }

    /// What the firing reads: its inputs at the start of the step.
    #[inline]
    fn inputs(&self) -> &'a [InputSlot] {
        self.shared.plan.inputs(self.j)
    }

    /// The parts of the context `run` sees.
    #[inline(always)]
    fn parts(&self) -> FiringParts<'a> {
        FiringParts {
            tokens: self.shared.tokens,
            inputs: self.inputs(),
            n_outputs: self.shared.topo.n_outputs(self.o) as u16,
            step: self.shared.step,
            name: self.name,
            run: self.shared.run,
            branch: self.shared.branch,
            caps: self.shared.caps,
            info: FiringInfo {
                connected: self.shared.topo.out_connected[self.o],
                parallel: self.shared.parallel,
                partial: self.shared.partial.cloned(),
            },
        }
    }

    /// The context `run` sees, writing into `emitted`.
    #[inline]
    fn firing<'e>(&'e self, emitted: &'e mut Emissions) -> Firing<'e> {
        Firing::new(self.parts(), emitted)
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

/// How one firing ended. The emissions are in the vector the firing was given.
#[derive(Debug)]
pub(super) struct FiringOutcome {
    /// `Ok`: the emissions are ready to apply (a caught failure is an emission on `error`).
    pub(super) result: Result<(), OpError>,
    /// How many attempts it took (1 without retries).
    pub(super) attempts: u32,
    /// Wall-clock time, retries and backoffs included (zero unless the firing was timed).
    pub(super) elapsed: Duration,
    /// The recorded firing applied instead of calling the operator, if it was reused.
    pub(super) reused: Option<crate::history::ReusedFrom>,
    /// The firing's reuse key, when the hook computed it (`reuse.rs`).
    pub(super) key: Option<super::reuse::FiringKey>,
}

impl FiringOutcome {
    /// The `FiringFinished` event of this outcome.
    pub(super) fn event(&self, step: u32, op: &str) -> Event {
        Event::FiringFinished {
            step,
            op: op.to_owned(),
            error: self.result.as_ref().err().map(ToString::to_string),
            attempts: self.attempts,
            elapsed_ms: self.elapsed.as_millis() as u64,
        }
    }
}

/// What follows an attempt.
enum Next {
    /// The firing is over.
    Done(Result<(), OpError>),
    /// Try again after this backoff.
    Retry(Duration),
}

/// Fires `op` on the calling thread, without a future, then [`settle`]: the result and the
/// number of attempts. The engine only calls this for firings without settings
/// (`Operators::runs_inline`): no timeout to check, and one attempt (retries, if a firing had
/// any, would sleep the thread). `before` is the operator's state saved before the firing,
/// restored if it fails. The caller times the firing when somebody watches: the firing itself
/// builds no [`FiringOutcome`] (the sequential hot path).
#[inline(always)]
pub(super) fn fire_now(
    op: &mut dyn Operator,
    spec: &OpSpec,
    cx: &FiringCx<'_>,
    before: Option<&OpState>,
    emitted: &mut Emissions,
) -> (Result<(), OpError>, u32) {
    debug_assert!(cx.settings().is_none(), "an inline firing has no settings");
    let mut attempts = 0;
    loop {
        attempts += 1;
        emitted.clear();
        let result = attempt_inline(op, cx, &OpSettings::NONE, emitted);
        match settle(op, spec, cx, before, emitted, result, attempts) {
            Next::Done(r) => return (r, attempts),
            Next::Retry(backoff) => std::thread::sleep(backoff),
        }
    }
}

/// Fires the operator in `slot` as its execution kind says, with its timeout and retries.
///
/// The operator's state is saved first and restored after a failed attempt, so every attempt
/// starts from the same state and a failure leaves none behind.
pub(super) async fn fire(
    slot: &mut Box<dyn Operator>,
    spec: &OpSpec,
    cx: FiringCx<'_>,
    emitted: &mut Emissions,
) -> FiringOutcome {
    // A recorded firing with the same key, applied instead of calling the operator.
    let key = match super::reuse::reused(slot, spec, &cx, emitted) {
        Ok(Some(out)) => return out,
        Ok(None) => None,
        Err(key) => key,
    };
    let started = cx.shared.timed.then(Instant::now);
    // Owned (a borrowed state could not be held across an await by a `Send` future).
    let before = slot.save_state();
    let mut attempts = 0;
    let result = loop {
        attempts += 1;
        emitted.clear();
        let result = match cx.kind() {
            Execution::Inline => attempt_inline(&mut **slot, &cx, cx.settings(), emitted),
            Execution::Async => attempt_async(&mut **slot, &cx, emitted).await,
            Execution::Blocking => attempt_blocking(slot, &cx, emitted).await,
        };
        match settle(
            &mut **slot,
            spec,
            &cx,
            before.as_ref(),
            emitted,
            result,
            attempts,
        ) {
            Next::Done(r) => break r,
            Next::Retry(backoff) => tokio::time::sleep(backoff).await,
        }
    };
    FiringOutcome {
        result,
        attempts,
        elapsed: started.map(|t| t.elapsed()).unwrap_or_default(),
        reused: None,
        key,
    }
}

/// The end of an attempt, the same in every mode: checks the emissions; on failure drops them,
/// restores `before`, and either asks for a retry or ends the firing — caught on the `error`
/// output if the operator has one.
#[inline(always)]
fn settle(
    op: &mut dyn Operator,
    spec: &OpSpec,
    cx: &FiringCx<'_>,
    before: Option<&OpState>,
    emitted: &mut Emissions,
    result: Result<(), OpError>,
    attempt: u32,
) -> Next {
    let error = match result.and_then(|()| check_emissions(emitted, cx.shared.topo, cx.o, spec)) {
        Ok(()) => return Next::Done(Ok(())),
        Err(e) => e,
    };
    settle_failure(op, spec, cx, before, emitted, error, attempt)
}

#[cold]
#[inline(never)]
fn settle_failure(
    op: &mut dyn Operator,
    spec: &OpSpec,
    cx: &FiringCx<'_>,
    before: Option<&OpState>,
    emitted: &mut Emissions,
    error: OpError,
    attempt: u32,
) -> Next {
    emitted.clear();
    if let Some(s) = before {
        op.restore_state(s);
    }
    // A request the run's budget refused is neither retried nor caught: the run stops in
    // BUDGET (docs/semantics.md §4.7).
    if cx.shared.caps.meter().is_some_and(|m| m.stopped()) {
        return Next::Done(Err(error));
    }
    if let Some(r) = cx.settings().retry
        && attempt <= r.max
        && !cx.stopped()
    {
        let backoff = r.backoff(attempt);
        if let Some(q) = cx.events {
            q.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Event::FiringRetrying {
                    step: cx.shared.step,
                    op: cx.name.to_owned(),
                    attempt,
                    error: error.to_string(),
                    backoff_ms: backoff.as_millis() as u64,
                });
        }
        return Next::Retry(backoff);
    }
    match caught_failure(spec, cx, &error) {
        Some(emission) => {
            emitted.push(emission);
            Next::Done(Ok(()))
        }
        None => Next::Done(Err(error)),
    }
}

/// docs/semantics.md §4.9, §4.11: an operator that declares an output named `error` of type
/// [`DataError`], and whose `error` output is connected, catches its own failure: instead of
/// stopping the run in ERROR, the firing emits the failure there (and nothing else). Returns
/// that emission, or `None` when the operator has no such output or nothing is connected to it.
fn caught_failure(spec: &OpSpec, cx: &FiringCx<'_>, error: &OpError) -> Option<(u16, Value)> {
    let port = spec
        .outputs
        .iter()
        .position(|p| p.name == "error" && p.ty == TypeRef::of::<DataError>())?;
    if cx.shared.topo.port_conns(cx.o, port).is_empty() {
        return None;
    }
    let data = DataError {
        operator: cx.name.to_owned(),
        message: error.to_string(),
    };
    Some((port as u16, Value::new(data)))
}

/// Checks what a firing emitted: existing ports, at most once each, values of the port's type.
#[inline(always)]
pub(super) fn check_emissions(
    emitted: &[(u16, Value)],
    topo: &Topo,
    o: usize,
    spec: &OpSpec,
) -> Result<(), OpError> {
    let n = topo.n_outputs(o);
    let types = &topo.port_type[topo.out_start[o] as usize..][..n];
    let mut seen = 0u64;
    for (port, value) in emitted {
        let p = *port as usize;
        if p >= n {
            return Err(bad_emission(spec, p, BadEmission::NoSuchPort(n)));
        }
        if p < 64 {
            if seen & (1 << p) != 0 {
                return Err(bad_emission(spec, p, BadEmission::Twice));
            }
            seen |= 1 << p;
        }
        if let Some(ty) = types[p]
            && ty != value.type_info()
        {
            return Err(bad_emission(spec, p, BadEmission::Type(ty.name, value)));
        }
    }
    Ok(())
}

enum BadEmission<'v> {
    NoSuchPort(usize),
    Twice,
    Type(&'static str, &'v Value),
}

/// The error of an emission that breaks the operator's declaration. Port names are only looked
/// up here: the spec lives off the hot path.
#[cold]
#[inline(never)]
fn bad_emission(spec: &OpSpec, p: usize, what: BadEmission<'_>) -> OpError {
    match what {
        BadEmission::NoSuchPort(n) => OpError::new(format!(
            "emitted on output #{p}, but the operator has {n} output(s)"
        )),
        BadEmission::Twice => OpError::new(format!(
            "emitted twice on `{}` in one firing",
            spec.outputs[p].name
        )),
        BadEmission::Type(expected, value) => OpError::new(format!(
            "emitted a {} on `{}`, which carries {expected}",
            value.type_info().name,
            spec.outputs[p].name,
        )),
    }
}

/// A panic caught while running an operator, as an error.
#[inline(always)]
fn caught_panic(r: Result<Result<(), OpError>, Panic>) -> Result<(), OpError> {
    match r {
        Ok(r) => r,
        Err(panic) => Err(OpError::panicked(&panic)),
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

/// One attempt on the calling thread: `run`, a panic caught; an inline or blocking `run` cannot
/// be interrupted, so a timeout is checked when it returns.
#[inline(always)]
fn attempt_inline(
    op: &mut dyn Operator,
    cx: &FiringCx<'_>,
    settings: &OpSettings,
    emitted: &mut Emissions,
) -> Result<(), OpError> {
    let t0 = settings.timeout_ms.is_some().then(Instant::now);
    let result = {
        let mut f = cx.firing(emitted);
        catch_panic(|| op.run(&mut f))
    };
    caught_panic(result)?;
    if let (Some(t0), Some(limit)) = (t0, settings.timeout())
        && t0.elapsed() > limit
    {
        return Err(late(limit, t0.elapsed(), false));
    }
    Ok(())
}

/// One attempt of an async operator: its future, cut short at the timeout.
async fn attempt_async(
    op: &mut dyn Operator,
    cx: &FiringCx<'_>,
    emitted: &mut Emissions,
) -> Result<(), OpError> {
    let mut f = cx.firing(emitted);
    let run = async { caught_panic(CatchPanic::new(op.run_async(&mut f)).await) };
    match cx.settings().timeout() {
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(r) => r,
            Err(_) => Err(late(limit, limit, true)),
        },
        None => run.await,
    }
}

/// One attempt on tokio's blocking pool: the operator is lent to a pool thread with copies of
/// its input tokens (shared values, not deep copies) and comes back when `run` returns.
async fn attempt_blocking(
    slot: &mut Box<dyn Operator>,
    cx: &FiringCx<'_>,
    emitted: &mut Emissions,
) -> Result<(), OpError> {
    let mut parts = cx.parts();
    let mut tokens = Vec::with_capacity(parts.inputs.len());
    let slots: Vec<InputSlot> = parts
        .inputs
        .iter()
        .map(|s| match parts.tokens.get(s.token as usize) {
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
    let name = cx.name.to_owned();
    let run = cx.shared.run.clone();
    let caps = Arc::clone(parts.caps);
    let info = std::mem::take(&mut parts.info);
    let (n_outputs, step, branch) = (parts.n_outputs, parts.step, parts.branch);
    let t0 = Instant::now();
    let (mut loan, carrier) = Loan::new(slot);
    let mut handle = tokio::task::spawn_blocking(move || {
        carrier.run(|op| {
            let mut out = Vec::new();
            let result = {
                let parts = FiringParts {
                    tokens: &tokens,
                    inputs: &slots,
                    n_outputs,
                    step,
                    name: &name,
                    run: &run,
                    branch,
                    caps: &caps,
                    info,
                };
                let mut f = Firing::new(parts, &mut out);
                catch_panic(|| op.run(&mut f))
            };
            caught_panic(result).map(|()| out)
        });
    });
    let mut timed_out = None;
    match cx.settings().timeout() {
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
    if let Some(limit) = timed_out {
        return Err(late(limit, t0.elapsed(), false));
    }
    emitted.extend(result?);
    Ok(())
}
