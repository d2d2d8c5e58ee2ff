//! `std-struct`: flow control. These operators move references; their `Any` ports are type
//! variables (SPEC §1).

use serde_json::json;

use super::io::{is_new, params};
use super::test_expr::Test;
use crate::connection::ConnState;
use crate::operator::{Firing, InputSet, OpError, OpSpec, OpState, Operator, Params, TypeRef};
use crate::policy::{Enabling, Family, Policy};
use crate::types::{Any, DataBool, DataJSON, Value};
use crate::verify::FiniteControl;

/// Most ports an n-ary operator (`fork`, `join`, `merge`, `barrier`) can have.
pub const MAX_ARITY: usize = 26;

/// The name of the `i`-th n-ary port: `in_a`, `in_b`, … `in_z`.
pub fn letter_port(prefix: &str, i: usize) -> String {
    format!("{prefix}_{}", (b'a' + i as u8) as char)
}

fn check_arity(arity: usize) -> Result<(), String> {
    if (2..=MAX_ARITY).contains(&arity) {
        Ok(())
    } else {
        Err(format!(
            "arity must be between 2 and {MAX_ARITY}, not {arity}"
        ))
    }
}

fn value_at<'a>(cx: &Firing<'a>, i: usize, port: &str) -> Result<&'a Value, OpError> {
    cx.value_at(i)
        .ok_or_else(|| OpError::new(format!("input `{port}` has no value")))
}

/// AND-split: copies its input to every output (`fork.in_data → out_a, out_b, …`).
#[derive(Clone, Debug, PartialEq)]
pub struct Fork {
    arity: usize,
}

impl Fork {
    /// A fork with `arity` outputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Fork { arity })
    }
}

impl Default for Fork {
    fn default() -> Self {
        Fork { arity: 2 }
    }
}

impl Operator for Fork {
    fn spec(&self) -> OpSpec {
        let mut s = OpSpec::new("fork", "Fork", Family::Structural, Policy::Any)
            .input("in_data", TypeRef::Var(0));
        for i in 0..self.arity {
            s = s.output(letter_port("out", i), TypeRef::Var(0));
        }
        s
    }
    fn params(&self) -> Params {
        params([("arity", json!(self.arity))])
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = value_at(cx, 0, "in_data")?.clone();
        for i in 0..self.arity {
            cx.emit_at(i, v.clone());
        }
        Ok(())
    }
}

/// AND-join: waits for every input, passes `in_a` through (`join.in_a, in_b, … → out_data`).
#[derive(Clone, Debug, PartialEq)]
pub struct Join {
    arity: usize,
}

impl Join {
    /// A join of `arity` inputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Join { arity })
    }
}

impl Default for Join {
    fn default() -> Self {
        Join { arity: 2 }
    }
}

impl Operator for Join {
    fn spec(&self) -> OpSpec {
        let mut s = OpSpec::new("join", "Join", Family::Structural, Policy::All);
        for i in 0..self.arity {
            s = s.input(letter_port("in", i), TypeRef::Var(i as u8));
        }
        s.output("out_data", TypeRef::Var(0))
    }
    fn params(&self) -> Params {
        params([("arity", json!(self.arity))])
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = value_at(cx, 0, "in_a")?.clone();
        cx.emit_at(0, v);
        Ok(())
    }
}

/// XOR-join: forwards the first NEW input and consumes only it; another NEW input stays NEW for
/// the next firing (`merge.in_a, in_b, … → out_data`). Fires with EMPTY inputs (a loop entry).
#[derive(Clone, Debug, PartialEq)]
pub struct Merge {
    arity: usize,
}

impl Merge {
    /// A merge of `arity` inputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Merge { arity })
    }
}

impl Default for Merge {
    fn default() -> Self {
        Merge { arity: 2 }
    }
}

impl Operator for Merge {
    fn spec(&self) -> OpSpec {
        let mut s = OpSpec::new("merge", "Merge", Family::Structural, Policy::AnyNoGuard);
        for i in 0..self.arity {
            s = s.input(letter_port("in", i), TypeRef::Var(0));
        }
        s.output("out_data", TypeRef::Var(0))
    }
    fn params(&self) -> Params {
        params([("arity", json!(self.arity))])
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::first_new(inputs)
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let i = (0..cx.input_count())
            .find(|&i| is_new(cx, i))
            .ok_or_else(|| OpError::new("no NEW input"))?;
        let v = value_at(cx, i, "in")?.clone();
        cx.emit_at(0, v);
        Ok(())
    }
}

/// XOR-split: routes `in_data` to `out_true` or `out_false` by the `DataBool` on
/// `in_condition`. Fires when `in_data` is NEW and `in_condition` is not EMPTY (a kept condition
/// is re-used). Alias: `switch`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gate;

impl Operator for Gate {
    fn spec(&self) -> OpSpec {
        OpSpec::new("gate", "Gate", Family::Structural, Policy::Custom)
            .input("in_data", TypeRef::Var(0))
            .input("in_condition", TypeRef::of::<DataBool>())
            .output("out_true", TypeRef::Var(0))
            .output("out_false", TypeRef::Var(0))
            .emits(&[&["out_true"], &["out_false"]])
    }
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs[0] == ConnState::New && e.inputs[1] != ConnState::Empty
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let cond = value_at(cx, 1, "in_condition")?
            .downcast_ref::<DataBool>()
            .ok_or_else(|| OpError::new("`in_condition` is not a DataBool"))?
            .0;
        let v = value_at(cx, 0, "in_data")?.clone();
        cx.emit_at(if cond { 0 } else { 1 }, v);
        Ok(())
    }
}

/// Synchronisation barrier: waits for every input, then passes each to its paired output
/// (`barrier.in_a, in_b, … → out_a, out_b, …`). Alias: `sync`.
#[derive(Clone, Debug, PartialEq)]
pub struct Barrier {
    arity: usize,
}

impl Barrier {
    /// A barrier of `arity` pairs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Barrier { arity })
    }
}

impl Default for Barrier {
    fn default() -> Self {
        Barrier { arity: 2 }
    }
}

impl Operator for Barrier {
    fn spec(&self) -> OpSpec {
        let mut s = OpSpec::new("barrier", "Barrier", Family::Structural, Policy::All);
        for i in 0..self.arity {
            s = s.input(letter_port("in", i), TypeRef::Var(i as u8));
        }
        for i in 0..self.arity {
            s = s.output(letter_port("out", i), TypeRef::Var(i as u8));
        }
        s
    }
    fn params(&self) -> Params {
        params([("arity", json!(self.arity))])
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        for i in 0..self.arity {
            let v = value_at(cx, i, "in")?.clone();
            cx.emit_at(i, v);
        }
        Ok(())
    }
}

/// Loop exit: emits its input on `out_continue` while `continue_if` holds, else on `out_exit`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guard {
    /// The test deciding whether the loop goes on.
    pub continue_if: Test,
}

impl Guard {
    /// A guard with the given test.
    pub fn new(continue_if: Test) -> Self {
        Guard { continue_if }
    }
}

impl Operator for Guard {
    fn spec(&self) -> OpSpec {
        OpSpec::new("guard", "Guard", Family::Structural, Policy::Any)
            .input("in_data", TypeRef::Var(0))
            .output("out_continue", TypeRef::Var(0))
            .output("out_exit", TypeRef::Var(0))
            .emits(&[&["out_continue"], &["out_exit"]])
    }
    fn params(&self) -> Params {
        params([("continue_if", self.continue_if.to_json())])
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = value_at(cx, 0, "in_data")?.clone();
        let go_on = self.continue_if.eval(&v.to_json()).map_err(OpError::new)?;
        cx.emit_at(if go_on { 0 } else { 1 }, v);
        Ok(())
    }
}

/// Collects values into a list: emits the list (`DataJSON` array) on `out_data` after `n`
/// values, or when `in_done` receives a token (`n: 0` waits for `in_done` only); then starts a
/// new list. `in_done` is optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulator {
    /// How many values make a list (0: only `in_done` ends a list).
    pub n: usize,
    items: Vec<serde_json::Value>,
}

impl Accumulator {
    /// An accumulator of `n` values.
    pub fn new(n: usize) -> Self {
        Accumulator {
            n,
            items: Vec::new(),
        }
    }
}

impl Operator for Accumulator {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "accumulator",
            "Accumulator",
            Family::Behavioral,
            Policy::AnyNoGuard,
        )
        .input("in_data", TypeRef::of::<Any>())
        .optional_input("in_done", TypeRef::of::<Any>())
        .output("out_data", TypeRef::of::<DataJSON>())
        .emits(&[&[], &["out_data"]])
    }
    fn params(&self) -> Params {
        params([("n", json!(self.n))])
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        if is_new(cx, 0) {
            let v = value_at(cx, 0, "in_data")?;
            self.items.push(v.to_json());
        }
        let full = self.n > 0 && self.items.len() >= self.n;
        if full || is_new(cx, 1) {
            let list = std::mem::take(&mut self.items);
            cx.emit_at(0, DataJSON(serde_json::Value::Array(list)));
        }
        Ok(())
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.items.clone()))
    }
    fn restore_state(&mut self, state: &OpState) {
        if let Some(items) = state.get::<Vec<serde_json::Value>>() {
            self.items.clone_from(items);
        }
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        // Tracked exactly up to a bound; a larger `n` falls back to the emission sets.
        (self.n <= Accumulator::MAX_TRACKED).then_some(self as &dyn FiniteControl)
    }
}

impl Accumulator {
    /// Largest `n` whose fill level the verifier tracks exactly (SPEC §8).
    pub const MAX_TRACKED: usize = 1024;
}

/// The verifier tracks the fill level (values held, modulo `n`): the accumulator emits exactly
/// when the `n`-th value arrives or `in_done` is NEW.
impl FiniteControl for Accumulator {
    fn count(&self) -> u32 {
        self.n.clamp(1, Accumulator::MAX_TRACKED) as u32
    }
    fn initial(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            (self.items.len() % self.n) as u32
        }
    }
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        let data = inputs.first() == Some(&ConnState::New);
        let done = inputs.get(1) == Some(&ConnState::New);
        let held = if self.n == 0 { 0 } else { q + u32::from(data) };
        if done || (self.n > 0 && held as usize >= self.n) {
            vec![(1, 0)] // emission set 1: {out_data}; the list starts again
        } else {
            vec![(0, held)] // emission set 0: nothing
        }
    }
}
