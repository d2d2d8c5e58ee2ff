//! Test operators and helpers shared by the parallel-mode tests.
#![allow(dead_code)] // each test binary uses its own subset of the helpers

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use cameleon::connection::ConnId;
use cameleon::operator::{OpFuture, OpState};
use cameleon::policy::Policy;
use cameleon::prelude::*;
use cameleon::{OpSettings, Params};

/// A configurable behavioral test operator. Each firing counts a call, optionally fails or
/// panics, waits, bumps its internal state, and emits on every output a string naming itself,
/// its state and a hash of its inputs (values and which were NEW).
pub struct Probe {
    pub n_in: usize,
    pub n_out: usize,
    pub policy: Policy,
    pub kind: Execution,
    /// Wait per firing (ms). With `jitter`, a random wait in `0..=sleep_ms` instead.
    pub sleep_ms: u64,
    pub jitter: Option<Arc<AtomicU64>>,
    pub calls: Arc<AtomicUsize>,
    pub rollbacks: Arc<AtomicUsize>,
    /// The first `fail_first` calls fail.
    pub fail_first: usize,
    /// This call (1-based) fails, if any.
    pub fail_at: Option<usize>,
    /// Declares an `error: DataError` output, where the engine puts its failures
    /// (docs/semantics.md §4.9).
    pub catching: bool,
    pub panics: bool,
    pub declared: OpSettings,
    /// Internal state: firings applied.
    pub state: u64,
    /// Async firings add 100 to the state before waiting (a change a dropped firing leaves).
    pub dirty_before_wait: bool,
}

impl Probe {
    pub fn new(n_in: usize, n_out: usize, kind: Execution) -> Self {
        Probe {
            n_in,
            n_out,
            policy: Policy::Any,
            kind,
            sleep_ms: 0,
            jitter: None,
            calls: Arc::default(),
            rollbacks: Arc::default(),
            fail_first: 0,
            fail_at: None,
            catching: false,
            panics: false,
            declared: OpSettings::NONE,
            state: 0,
            dirty_before_wait: false,
        }
    }
    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = p;
        self
    }
    pub fn sleep(mut self, ms: u64) -> Self {
        self.sleep_ms = ms;
        self
    }
    pub fn jitter(mut self, rng: Arc<AtomicU64>) -> Self {
        self.jitter = Some(rng);
        self
    }
    pub fn failing(mut self, first: usize) -> Self {
        self.fail_first = first;
        self
    }
    pub fn failing_at(mut self, call: usize) -> Self {
        self.fail_at = Some(call);
        self
    }
    pub fn catching(mut self) -> Self {
        self.catching = true;
        self
    }
    pub fn panicking(mut self) -> Self {
        self.panics = true;
        self
    }
    pub fn counting(mut self, calls: &Arc<AtomicUsize>) -> Self {
        self.calls = Arc::clone(calls);
        self
    }

    fn wait(&self) -> Duration {
        let ms = match &self.jitter {
            Some(rng) if self.sleep_ms > 0 => next_random(rng) % (self.sleep_ms + 1),
            _ => self.sleep_ms,
        };
        Duration::from_millis(ms)
    }

    fn compute(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call <= self.fail_first {
            return Err(OpError::new(format!("transient failure #{call}")));
        }
        if self.fail_at == Some(call) {
            return Err(OpError::new(format!("failure of call #{call}")));
        }
        if self.panics {
            panic!("boom");
        }
        self.state += 1;
        let mut h = DefaultHasher::new();
        for i in 0..cx.input_count() {
            cx.value_at(i).map(|v| v.to_json().to_string()).hash(&mut h);
            (cx.state_at(i) == ConnState::New).hash(&mut h);
        }
        let out = format!("{}#{}:{:x}", cx.instance(), self.state, h.finish() & 0xffff);
        for p in 0..self.n_out {
            cx.emit_at(p, DataString(out.clone()));
        }
        Ok(())
    }
}

impl Operator for Probe {
    fn spec(&self) -> OpSpec {
        let mut s = OpSpec::new("probe", "Probe", Family::Behavioral, self.policy);
        for i in 0..self.n_in {
            s = s.input(format!("in_{i}"), TypeRef::of::<Any>());
        }
        for i in 0..self.n_out {
            s = s.output(format!("out_{i}"), TypeRef::of::<DataString>());
        }
        if self.catching {
            s = s.output("error", TypeRef::of::<cameleon::types::DataError>());
        }
        s
    }
    fn params(&self) -> Params {
        Params::new()
    }
    fn execution(&self) -> Execution {
        self.kind
    }
    fn settings(&self) -> OpSettings {
        self.declared
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.state))
    }
    fn restore_state(&mut self, s: &OpState) {
        if let Some(v) = s.get::<u64>() {
            self.state = *v;
        }
    }
    fn rollback(&mut self, before: Option<&OpState>, _emitted: &[(u16, Value)]) {
        self.rollbacks.fetch_add(1, Ordering::SeqCst);
        if let Some(s) = before {
            self.restore_state(s);
        }
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        std::thread::sleep(self.wait());
        self.compute(cx)
    }
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        Box::pin(async move {
            if self.dirty_before_wait {
                self.state += 100;
            }
            tokio::time::sleep(self.wait()).await;
            self.compute(cx)
        })
    }
}

/// The next number of the seeded generator whose state `state` holds, shared by the probes of
/// one run.
pub fn next_random(state: &AtomicU64) -> u64 {
    let mut r = test_support::Rng::new(state.load(Ordering::Relaxed));
    let x = r.next_u64();
    state.store(r.state(), Ordering::Relaxed);
    x
}

/// The applied history as text: one line per firing (step, operator, consumed connections,
/// written connections with the value, the token's step and emitter), then the end state.
pub fn trace(cvm: &Cvm, end: &EndState) -> Vec<String> {
    let net = cvm.net();
    let mut lines = Vec::new();
    for e in cvm.history().entries() {
        for f in &e.firings {
            let consumed: Vec<&str> = f
                .consumed
                .iter()
                .map(|c| net.connections()[c.index()].name.as_str())
                .collect();
            let written: Vec<String> = f
                .written
                .iter()
                .map(|(c, t)| {
                    let tok = cvm.token(*t).expect("written token");
                    format!(
                        "{}={}@{}/{}",
                        net.connections()[c.index()].name,
                        tok.value.to_json(),
                        tok.step,
                        net.op(tok.op).name
                    )
                })
                .collect();
            lines.push(format!(
                "{} {} consumed={:?} written={:?}",
                e.step,
                net.op(f.op).name,
                consumed,
                written
            ));
        }
    }
    lines.push(format!("end {end:?}"));
    lines
}

/// Each connection's state and value (as JSON), for comparing markings across engines.
pub fn marking_json(cvm: &Cvm) -> Vec<(String, ConnState, Option<serde_json::Value>)> {
    (0..cvm.net().connections().len())
        .map(|c| {
            let v = cvm.conn(ConnId(c as u32));
            (
                cvm.net().connections()[c].name.clone(),
                v.state,
                v.value().map(Value::to_json),
            )
        })
        .collect()
}

/// Passes its input through, but only once `n` firings of the operators sharing its meeting
/// point are in flight at the same moment: a firing that runs alone gives up after a generous
/// wait and fails, naming how many it met. Concurrency is asserted by behaviour, not by time.
pub struct Rendezvous {
    pub meeting: Arc<Meeting>,
    pub kind: Execution,
}

/// The shared meeting point of [`Rendezvous`] operators.
#[derive(Default)]
pub struct Meeting {
    pub arrived: std::sync::Mutex<usize>,
    pub all_here: std::sync::Condvar,
    pub expected: usize,
}

impl Meeting {
    pub fn new(expected: usize) -> Arc<Self> {
        Arc::new(Meeting {
            expected,
            ..Meeting::default()
        })
    }

    /// Blocks until `expected` have arrived (or gives up after 30 s).
    fn meet_blocking(&self) -> Result<(), OpError> {
        let mut n = self.arrived.lock().unwrap();
        *n += 1;
        self.all_here.notify_all();
        let (n, timeout) = self
            .all_here
            .wait_timeout_while(n, Duration::from_secs(30), |n| *n < self.expected)
            .unwrap();
        if timeout.timed_out() {
            return Err(OpError::new(format!(
                "met only {} of {}",
                *n, self.expected
            )));
        }
        Ok(())
    }

    /// Waits without blocking the thread until `expected` have arrived (or 30 s).
    async fn meet_async(&self) -> Result<(), OpError> {
        *self.arrived.lock().unwrap() += 1;
        for _ in 0..30_000 {
            if *self.arrived.lock().unwrap() >= self.expected {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Err(OpError::new(format!(
            "met only {} of {}",
            *self.arrived.lock().unwrap(),
            self.expected
        )))
    }
}

impl Operator for Rendezvous {
    fn spec(&self) -> OpSpec {
        OpSpec::new("rendezvous", "Rendezvous", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        self.kind
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.meeting.meet_blocking()?;
        cx.emit_at(0, DataString("met".into()));
        Ok(())
    }
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        let meeting = Arc::clone(&self.meeting);
        Box::pin(async move {
            meeting.meet_async().await?;
            cx.emit_at(0, DataString("met".into()));
            Ok(())
        })
    }
}

/// A blocking operator that holds its firing until the test lets it go: `run` records that it
/// entered (and bumps its internal state), then waits on its [`Gate`] before emitting. The test
/// decides what happens while a firing is in flight — by order, not by timing.
pub struct Held {
    pub gate: Arc<Gate>,
    /// Internal state: firings entered (restored when the step is discarded).
    pub state: u64,
}

/// Where a [`Held`] operator reports that it entered `run`, and waits to be released.
#[derive(Default)]
pub struct Gate {
    inner: std::sync::Mutex<(usize, bool)>,
    changed: std::sync::Condvar,
}

impl Gate {
    pub fn new() -> Arc<Self> {
        Arc::new(Gate::default())
    }

    /// Blocks until some `run` has entered (or 30 s: then the test fails on what it finds).
    pub fn wait_entered(&self) -> usize {
        let g = self.inner.lock().unwrap();
        let (g, _) = self
            .changed
            .wait_timeout_while(g, Duration::from_secs(30), |(entered, _)| *entered == 0)
            .unwrap();
        g.0
    }

    /// Lets every held `run` go on.
    pub fn release(&self) {
        self.inner.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    /// How many `run`s entered.
    pub fn entered(&self) -> usize {
        self.inner.lock().unwrap().0
    }

    fn enter_and_wait(&self) -> Result<(), OpError> {
        let mut g = self.inner.lock().unwrap();
        g.0 += 1;
        self.changed.notify_all();
        let (g, timeout) = self
            .changed
            .wait_timeout_while(g, Duration::from_secs(30), |(_, released)| !*released)
            .unwrap();
        drop(g);
        if timeout.timed_out() {
            return Err(OpError::new("never released"));
        }
        Ok(())
    }
}

impl Operator for Held {
    fn spec(&self) -> OpSpec {
        OpSpec::new("held", "Held", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        Execution::Blocking
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.state))
    }
    fn restore_state(&mut self, s: &OpState) {
        if let Some(v) = s.get::<u64>() {
            self.state = *v;
        }
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.state += 1;
        self.gate.enter_and_wait()?;
        cx.emit_at(0, DataString("released".into()));
        Ok(())
    }
}
