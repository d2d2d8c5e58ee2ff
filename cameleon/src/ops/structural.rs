//! `std-struct`: flow control. These operators move references; their ports are type variables
//! (docs/semantics.md §1): in Rust, type parameters (`Fork<T>`), which `pipeline!` infers from the
//! connections; built from `.cm`, `Any` (`Fork<Any>`, the default), whose ports the net binds by
//! unification.
//!
//! The n-ary operators (`fork`, `join`, `merge`, `barrier`) have an `arity` param (2..=26):
//! `arity` ports `in_a`, `in_b`, … (or `out_a`, …). In Rust their handles exist for every
//! letter (`Fork::out_c`); a handle past the instance's arity names a port the instance does
//! not have, which building the net reports. `Fork<T>` and `Merge<T>` type all their ports with
//! `T`; `Join<T>` types `in_a` and `out_data` with `T` and accepts any type on `in_b`, …;
//! `Barrier<A, B>` types the pairs `a` and `b`, and its pairs from `c` on are untyped in Rust
//! (`Any`): connect them to `Any` inputs, or build the net from `.cm`, where every pair is a
//! type variable.

use std::marker::PhantomData;

use super::test_expr::Test;
use crate::connection::ConnState;
use crate::operator;
use crate::operator::FiniteControl;
use crate::operator::ParamError;
use crate::operator::{CanFire, Firing, In, InputSet, OpError, OpSpec, Out, Region, Run};
use crate::policy::{Enabling, Policy};
use crate::types::{Any, DataBool, DataJSON, PortType, Value};

/// Most ports an n-ary operator (`fork`, `join`, `merge`, `barrier`) can have.
pub const MAX_ARITY: usize = 26;

/// The name of the `i`-th n-ary port: `in_a`, `in_b`, … `in_z`.
pub fn letter_port(prefix: &str, i: usize) -> String {
    format!("{prefix}_{}", (b'a' + i.min(25) as u8) as char)
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

fn validate_arity(arity: usize) -> Result<(), ParamError> {
    check_arity(arity).map_err(|e| ParamError::new("arity".to_owned(), e))
}

fn value_at<'a, O: ?Sized>(cx: &Firing<'a, O>, i: usize, port: &str) -> Result<&'a Value, OpError> {
    cx.value_at(i)
        .ok_or_else(|| OpError::new(format!("input `{port}` has no value")))
}

/// AND-split: copies `in_data` to every output `out_a`, `out_b`, … (same type as the input).
#[operator(id = "fork", label = "Fork", family = structural)]
#[derive(Clone, Debug)]
pub struct Fork<T: PortType = Any> {
    /// number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …
    #[param(default = 2)]
    arity: usize,
    #[input]
    in_data: In<T>,
    #[output(variadic = arity)]
    out_a: Out<T>,
}

impl<T: PortType> Fork<T> {
    /// A fork with `arity` outputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Fork {
            arity,
            __cameleon_ports: PhantomData,
        })
    }
}

impl<T: PortType> Default for Fork<T> {
    fn default() -> Self {
        Fork {
            arity: 2,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Fork<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = cx
            .value(Self::in_data)
            .ok_or_else(|| OpError::new("input `in_data` has no value"))?
            .clone();
        for i in 0..self.arity {
            cx.emit_at(i, v.clone());
        }
        Ok(())
    }
    fn validate(&self) -> Result<(), ParamError> {
        validate_arity(self.arity)
    }
}

/// AND-join: waits until every input `in_a`, `in_b`, … is NEW, then passes `in_a` to `out_data`. With `quorum: m`, a partial join: passes on once m inputs have arrived, then waits for the others before it resets; with `cancel`, withdraws the tokens of the operators listed as soon as it passes on, and resets.
///
/// A partial join (docs/semantics.md §10.5) counts each input once per round: a second token on
/// an input already counted waits for the next round (it is blocking). Its inputs all carry
/// `in_a`'s type; it passes on the value of the first input, in port order, of the firing that
/// reaches the quorum. `quorum: 1` is the discriminator. A partial join has at most 16 inputs.
#[operator(id = "join", label = "Join", family = structural, firing = all)]
#[derive(Clone, Debug)]
pub struct Join<T: PortType = Any> {
    /// number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …
    #[param(default = 2)]
    arity: usize,
    /// inputs that must arrive before it passes on (1..=arity); null: every input (the AND-join)
    #[param]
    quorum: Option<usize>,
    /// operators whose tokens it withdraws when it passes on (docs/semantics.md §10.4)
    #[param(default = [])]
    cancel: Vec<String>,
    /// Partial join: the inputs counted in the current round (bit per input).
    seen: u64,
    #[input]
    in_a: In<T>,
    #[input(variadic = arity)]
    in_b: In<Any>,
    #[output]
    out_data: Out<T>,
}

/// Most inputs of a partial join: its control state is the set of inputs counted so far.
pub const MAX_PARTIAL_ARITY: usize = 16;

impl<T: PortType> Join<T> {
    /// A join of `arity` inputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Join {
            arity,
            quorum: None,
            cancel: Vec::new(),
            seen: 0,
            __cameleon_ports: PhantomData,
        })
    }

    /// A partial join (docs/semantics.md §10.5): passes on once `quorum` of its `arity` inputs
    /// have arrived (`quorum` 1: a discriminator), then waits for the others before it resets.
    pub fn partial(arity: usize, quorum: usize) -> Result<Self, String> {
        let join = Join {
            quorum: Some(quorum),
            ..Join::new(arity)?
        };
        join.check_quorum()?;
        Ok(join)
    }

    /// Withdraws the tokens of the operators `region` (by instance name) when it passes on
    /// (docs/semantics.md §10.4): a cancelling join or discriminator, which then resets.
    pub fn cancelling<S: Into<String>>(mut self, region: impl IntoIterator<Item = S>) -> Self {
        self.cancel = region.into_iter().map(Into::into).collect();
        self
    }

    /// The quorum of a partial join; `None` for an AND-join.
    pub fn quorum(&self) -> Option<usize> {
        self.quorum.filter(|&m| m < self.arity)
    }

    fn check_quorum(&self) -> Result<(), String> {
        match self.quorum {
            Some(m) if m == 0 || m > self.arity => Err(format!(
                "quorum must be between 1 and the arity ({}), not {m}",
                self.arity
            )),
            Some(m) if m < self.arity && self.arity > MAX_PARTIAL_ARITY => Err(format!(
                "a partial join has at most {MAX_PARTIAL_ARITY} inputs, not {}",
                self.arity
            )),
            _ => Ok(()),
        }
    }

    fn full(&self) -> u64 {
        (1u64 << self.arity.min(63)) - 1
    }

    /// The inputs a partial join consumes in control state `seen`: the NEW ones not counted yet.
    fn fresh_inputs(seen: u64, inputs: &[ConnState]) -> InputSet {
        InputSet(InputSet::new_inputs(inputs).0 & !seen)
    }

    /// A partial join's firing in state `seen` with `consumed`: whether it passes on, and the
    /// next state.
    fn partial_step(&self, seen: u64, consumed: u64) -> (bool, u64) {
        let m = self.quorum().unwrap_or(self.arity) as u32;
        let after = seen | consumed;
        let emit = seen.count_ones() < m && after.count_ones() >= m;
        let reset = after == self.full() || (emit && !self.cancel.is_empty());
        (emit, if reset { 0 } else { after })
    }
}

impl<T: PortType> Default for Join<T> {
    fn default() -> Self {
        Join {
            arity: 2,
            quorum: None,
            cancel: Vec::new(),
            seen: 0,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Join<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if self.quorum().is_none() {
            return cx.forward(Self::in_a, Self::out_data);
        }
        let states: Vec<ConnState> = (0..cx.input_count()).map(|i| cx.state_at(i)).collect();
        let consumed = Self::fresh_inputs(self.seen, &states).0;
        let (emit, next) = self.partial_step(self.seen, consumed);
        if emit {
            let first = consumed.trailing_zeros() as usize;
            let v = value_at(cx, first, &letter_port("in", first))?.clone();
            cx.emit_value(Self::out_data, v);
        }
        self.seen = next;
        Ok(())
    }

    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        match self.quorum() {
            Some(_) => Self::fresh_inputs(self.seen, inputs),
            None => InputSet::new_inputs(inputs),
        }
    }

    fn validate(&self) -> Result<(), ParamError> {
        validate_arity(self.arity)?;
        self.check_quorum()
            .map_err(|e| ParamError::new("quorum".to_owned(), e))
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        self.quorum().map(|_| self as &dyn FiniteControl)
    }

    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        let mut spec = if self.cancel.is_empty() {
            spec
        } else {
            spec.cancels(Region::Ops(self.cancel.clone()), Some("out_data"))
        };
        if self.quorum().is_some() {
            // Every input carries `in_a`'s type: the one passed on may be any of them.
            let ty = spec.inputs[0].ty;
            for p in &mut spec.inputs {
                p.ty = ty;
            }
            spec.policy = Policy::Custom;
            spec = spec.emits(&[&[], &["out_data"]]);
        }
        spec
    }
}

/// A partial join's control state is the set of inputs counted in the current round
/// (docs/semantics.md §10.5).
impl<T: PortType> FiniteControl for Join<T> {
    fn count(&self) -> u32 {
        1 << self.arity.min(MAX_PARTIAL_ARITY)
    }
    fn initial(&self) -> u32 {
        self.seen as u32
    }
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        Self::fresh_inputs(q as u64, e.inputs).0 != 0
    }
    fn consumes(&self, q: u32, inputs: &[ConnState]) -> Option<InputSet> {
        Some(Self::fresh_inputs(q as u64, inputs))
    }
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        let consumed = Self::fresh_inputs(q as u64, inputs).0;
        let (emit, next) = self.partial_step(q as u64, consumed);
        vec![(usize::from(emit), next as u32)]
    }
}

/// XOR-join: forwards the first NEW input to `out_data`; other NEW inputs wait their turn. The loop entry.
///
/// It consumes only the input it forwards; another NEW input stays NEW for the next firing. It
/// fires with EMPTY inputs (`any_no_guard`), so a loop's back edge may still be EMPTY.
#[operator(id = "merge", label = "Merge", family = structural, firing = any_no_guard)]
#[derive(Clone, Debug)]
pub struct Merge<T: PortType = Any> {
    /// number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …
    #[param(default = 2)]
    arity: usize,
    #[input(variadic = arity)]
    in_a: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Merge<T> {
    /// A merge of `arity` inputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Merge {
            arity,
            __cameleon_ports: PhantomData,
        })
    }
}

impl<T: PortType> Default for Merge<T> {
    fn default() -> Self {
        Merge {
            arity: 2,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Merge<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let i = (0..cx.input_count())
            .find(|&i| cx.state_at(i) == ConnState::New)
            .ok_or_else(|| OpError::new("no NEW input"))?;
        let v = value_at(cx, i, "in")?.clone();
        cx.emit_value(Self::out_data, v);
        Ok(())
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::first_new(inputs)
    }
    fn validate(&self) -> Result<(), ParamError> {
        validate_arity(self.arity)
    }
}

/// XOR-split: routes `in_data` to `out_true` or `out_false` by the DataBool on `in_condition`; fires when `in_data` is NEW and `in_condition` is not EMPTY.
///
/// A kept (OLD) condition is re-used. Alias: `switch`.
#[operator(
    id = "gate",
    label = "Gate",
    aliases = ["switch"],
    family = structural,
    firing = custom,
    emits = [[out_true], [out_false]]
)]
#[derive(Clone, Debug)]
pub struct Gate<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[input]
    in_condition: In<DataBool>,
    #[output]
    out_true: Out<T>,
    #[output]
    out_false: Out<T>,
}

impl<T: PortType> Gate<T> {
    /// A gate.
    pub fn new() -> Self {
        Gate {
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Default for Gate<T> {
    fn default() -> Self {
        Gate::new()
    }
}

impl<T: PortType> CanFire for Gate<T> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs[0] == ConnState::New && e.inputs[1] != ConnState::Empty
    }
}

impl<T: PortType> Run for Gate<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let cond = cx.get(Self::in_condition)?.0;
        let out = if cond {
            Self::out_true
        } else {
            Self::out_false
        };
        cx.forward(Self::in_data, out)
    }
}

/// Synchronisation: waits until every input is NEW, then passes `in_a` to `out_a`, `in_b` to `out_b`, ….
///
/// Alias: `sync`.
#[operator(
    id = "barrier",
    label = "Barrier",
    aliases = ["sync"],
    family = structural,
    firing = all
)]
#[derive(Clone, Debug)]
pub struct Barrier<A: PortType = Any, B: PortType = Any> {
    /// number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …
    #[param(default = 2)]
    arity: usize,
    #[input]
    in_a: In<A>,
    #[input]
    in_b: In<B>,
    #[input(variadic = arity)]
    in_c: In<Any>,
    #[output]
    out_a: Out<A>,
    #[output]
    out_b: Out<B>,
    #[output(variadic = arity)]
    out_c: Out<Any>,
}

impl<A: PortType, B: PortType> Barrier<A, B> {
    /// A barrier of `arity` pairs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Barrier {
            arity,
            __cameleon_ports: PhantomData,
        })
    }
}

impl<A: PortType, B: PortType> Default for Barrier<A, B> {
    fn default() -> Self {
        Barrier {
            arity: 2,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<A: PortType, B: PortType> Run for Barrier<A, B> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        for i in 0..self.arity {
            let v = value_at(cx, i, &letter_port("in", i))?.clone();
            cx.emit_at(i, v);
        }
        Ok(())
    }
    fn validate(&self) -> Result<(), ParamError> {
        validate_arity(self.arity)
    }
}

/// Loop exit: emits `in_data` on `out_continue` while the test `continue_if` holds on its JSON value, else on `out_exit`.
#[operator(
    id = "guard",
    label = "Guard",
    family = structural,
    emits = [[out_continue], [out_exit]]
)]
#[derive(Clone, Debug)]
pub struct Guard<T: PortType = Any> {
    /// test on the value: {lt: 10}, {eq: "stop"}, {not: {…}}, {all: […]}, {any: […]}, …
    #[param]
    pub continue_if: Test,
    #[input]
    in_data: In<T>,
    #[output]
    out_continue: Out<T>,
    #[output]
    out_exit: Out<T>,
}

impl<T: PortType> Guard<T> {
    /// A guard with the given test.
    pub fn new(continue_if: Test) -> Self {
        Guard {
            continue_if,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Guard<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = cx
            .value(Self::in_data)
            .ok_or_else(|| OpError::new("input `in_data` has no value"))?;
        let go_on = self.continue_if.eval(&v.to_json()).map_err(OpError::new)?;
        let out = if go_on {
            Self::out_continue
        } else {
            Self::out_exit
        };
        cx.forward(Self::in_data, out)
    }
}

/// Collects values of `in_data` into a list (DataJSON) emitted on `out_data` after `n` values, or when optional `in_done` receives a token.
///
/// With `n: 0` only `in_done` ends a list; then a new list starts. The list being collected is
/// internal state: a backward step restores it exactly.
#[operator(
    id = "accumulator",
    label = "Accumulator",
    family = behavioral,
    firing = any_no_guard,
    emits = [[], [out_data]],
    exec = inline
)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulator {
    /// values per list; 0 waits for `in_done`
    #[param(default = 0)]
    pub n: usize,
    /// The values collected so far (internal state).
    items: Vec<serde_json::Value>,
    #[input]
    in_data: In<Any>,
    #[input(optional)]
    in_done: In<Any>,
    #[output]
    out_data: Out<DataJSON>,
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

impl Run for Accumulator {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if cx.is_new(Self::in_data) {
            let v = cx
                .value(Self::in_data)
                .ok_or_else(|| OpError::new("input `in_data` has no value"))?;
            self.items.push(v.to_json());
        }
        let full = self.n > 0 && self.items.len() >= self.n;
        if full || cx.is_new(Self::in_done) {
            let list = std::mem::take(&mut self.items);
            cx.emit(Self::out_data, DataJSON(serde_json::Value::Array(list)));
        }
        Ok(())
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        // Tracked exactly up to a bound; a larger `n` falls back to the emission sets.
        (self.n <= Accumulator::MAX_TRACKED).then_some(self as &dyn FiniteControl)
    }
}

impl Accumulator {
    /// Largest `n` whose fill level the verifier tracks exactly (docs/semantics.md §8).
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::operator::Operator;

    #[test]
    fn accumulator_rollback_restores_the_collected_items() {
        let mut acc = Accumulator::new(3);
        acc.items = vec![json!(1)];
        let before = acc.save_state();
        acc.items.push(json!(2));
        let after = acc.save_state();
        Operator::rollback(&mut acc, before.as_ref(), &[]);
        assert_eq!(acc.items, [json!(1)]);
        Operator::replay(&mut acc, after.as_ref(), &[]);
        assert_eq!(acc.items, [json!(1), json!(2)]);
    }

    #[test]
    fn stateless_structural_operators_save_nothing() {
        assert!(Fork::<Any>::default().save_state().is_none());
        assert!(Merge::<DataBool>::default().save_state().is_none());
    }

    #[test]
    fn typed_instances_keep_their_types_and_untyped_ones_are_variables() {
        use crate::operator::TypeRef;
        let typed = Barrier::<DataBool, DataJSON>::new(3).unwrap().spec();
        assert_eq!(typed.inputs[0].ty, TypeRef::of::<DataBool>());
        assert_eq!(typed.outputs[1].ty, TypeRef::of::<DataJSON>());
        assert_eq!(typed.outputs[2].ty, TypeRef::Var(2));
        let untyped = Gate::<Any>::new().spec();
        assert_eq!(untyped.inputs[0].ty, TypeRef::Var(0));
        assert_eq!(untyped.inputs[1].ty, TypeRef::of::<DataBool>());
        assert!(Join::<Any>::new(1).is_err());
    }
}
