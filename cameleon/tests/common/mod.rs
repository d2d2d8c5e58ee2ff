//! Test-only operators and helpers shared by the engine's integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cameleon::operator::OpState;
use cameleon::prelude::*;
use cameleon::{InputSet, Params};

/// Emits a configured `DataBool` once.
#[derive(Debug)]
pub struct BoolSource(pub bool);

impl Operator for BoolSource {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "bool_source",
            "Bool source",
            Family::Behavioral,
            Policy::Source,
        )
        .output("out_data", TypeRef::of::<DataBool>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataBool(self.0));
        Ok(())
    }
}

/// Passes a `DataString` through, recording what it saw (value and state of its input).
#[derive(Debug, Default)]
pub struct Probe {
    pub seen: Vec<(String, ConnState)>,
}

impl Operator for Probe {
    fn spec(&self) -> OpSpec {
        OpSpec::new("probe", "Probe", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<DataString>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = cx.value_at(0).cloned().ok_or("no input")?;
        let s = v
            .downcast_ref::<DataString>()
            .map(|s| s.0.clone())
            .unwrap_or_default();
        self.seen.push((s, cx.state_at(0)));
        cx.emit_at(0, v);
        Ok(())
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.seen.clone()))
    }
    fn restore_state(&mut self, s: &OpState) {
        if let Some(v) = s.get::<Vec<(String, ConnState)>>() {
            self.seen.clone_from(v);
        }
    }
}

/// Two `DataString` inputs with a chosen policy; records the states it was fired with and
/// emits `in_a`'s value.
#[derive(Debug)]
pub struct Pair {
    pub policy: Policy,
    pub log: Arc<std::sync::Mutex<Vec<[ConnState; 2]>>>,
}

impl Pair {
    pub fn new(policy: Policy) -> Self {
        Pair {
            policy,
            log: Arc::default(),
        }
    }
}

impl Operator for Pair {
    fn spec(&self) -> OpSpec {
        OpSpec::new("pair", "Pair", Family::Behavioral, self.policy)
            .input("in_a", TypeRef::of::<DataString>())
            .input("in_b", TypeRef::of::<DataString>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.log
            .lock()
            .unwrap()
            .push([cx.state_at(0), cx.state_at(1)]);
        let v = cx
            .value_at(0)
            .or(cx.value_at(1))
            .cloned()
            .ok_or("no input")?;
        cx.emit_at(0, v);
        Ok(())
    }
}

/// Fails (or panics) when it fires.
#[derive(Debug)]
pub struct Failing {
    pub panic: bool,
}

impl Operator for Failing {
    fn spec(&self) -> OpSpec {
        OpSpec::new("failing", "Failing", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        if self.panic {
            panic!("boom (expected by the test)");
        }
        Err(OpError::new("the model is unavailable"))
    }
}

/// Emits a `DataBool` on a `DataString` port: a bug the engine must catch.
#[derive(Debug)]
pub struct WrongType;

impl Operator for WrongType {
    fn spec(&self) -> OpSpec {
        OpSpec::new("wrong_type", "Wrong type", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataBool(true));
        Ok(())
    }
}

/// A countdown on a self-loop: `in_start` (a JSON number n) starts it; each firing on
/// `in_self` emits n-1 back on `out_self` (its own input) until 0, which goes to `out_done`.
#[derive(Debug)]
pub struct Countdown;

impl Operator for Countdown {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "countdown",
            "Countdown",
            Family::Behavioral,
            Policy::AnyNoGuard,
        )
        .input("in_start", TypeRef::of::<DataJSON>())
        .input("in_self", TypeRef::of::<DataJSON>())
        .output("out_self", TypeRef::of::<DataJSON>())
        .output("out_done", TypeRef::of::<DataJSON>())
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::first_new(inputs)
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let i = if cx.state_at(0) == ConnState::New {
            0
        } else {
            1
        };
        let n = cx
            .value_at(i)
            .and_then(|v| v.to_json().as_i64())
            .ok_or("no number")?;
        if n > 0 {
            cx.emit_at(0, DataJSON((n - 1).into()));
        } else {
            cx.emit_at(1, DataJSON(n.into()));
        }
        Ok(())
    }
}

/// Wraps an operator and counts its `run` calls.
pub struct Counting {
    pub inner: Box<dyn Operator>,
    pub calls: Arc<AtomicUsize>,
}

impl Counting {
    pub fn wrap(inner: impl Operator, calls: &Arc<AtomicUsize>) -> Self {
        Counting {
            inner: Box::new(inner),
            calls: calls.clone(),
        }
    }
}

impl Operator for Counting {
    fn spec(&self) -> OpSpec {
        self.inner.spec()
    }
    fn params(&self) -> Params {
        self.inner.params()
    }
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        self.inner.can_fire(e)
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        self.inner.consumes(inputs)
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.run(cx)
    }
    fn save_state(&self) -> Option<OpState> {
        self.inner.save_state()
    }
    fn restore_state(&mut self, s: &OpState) {
        self.inner.restore_state(s)
    }
    fn rollback(&mut self, before: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.rollback(before, emitted)
    }
    fn replay(&mut self, after: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.replay(after, emitted)
    }
}

/// The names of the operators fired along the current history, in order.
pub fn fired(cvm: &Cvm) -> Vec<String> {
    cvm.history()
        .entries()
        .iter()
        .flat_map(|e| e.firings.iter().map(|f| cvm.net().op(f.op).name.clone()))
        .collect()
}

/// The JSON values a sink received.
pub fn received(cvm: &Cvm, sink: &str) -> Vec<serde_json::Value> {
    cvm.received(sink).into_iter().map(Value::to_json).collect()
}

/// The state of a connection (panics if the test names a wrong one).
pub fn st(cvm: &Cvm, conn: &str) -> ConnState {
    cvm.state_of(conn)
        .unwrap_or_else(|| panic!("no connection `{conn}`"))
        .state
}

/// Fails on every firing, but declares an `error` output of type `DataError`, where the engine
/// puts the failure instead of stopping the run (docs/semantics.md §4).
#[derive(Debug)]
pub struct Fragile;

impl Operator for Fragile {
    fn spec(&self) -> OpSpec {
        OpSpec::new("fragile", "Fragile", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
            .output("error", TypeRef::of::<DataError>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataString("half done".into())); // discarded with the failure
        Err(OpError::new("the model is unavailable"))
    }
}
