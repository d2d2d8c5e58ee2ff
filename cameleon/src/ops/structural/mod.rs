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

mod accumulator;
mod join;

pub use accumulator::Accumulator;
pub use join::{Join, MAX_PARTIAL_ARITY};

use std::marker::PhantomData;

use super::test_expr::Test;
use crate::connection::ConnState;
use crate::operator;
use crate::operator::ParamError;
use crate::operator::{CanFire, Firing, In, InputSet, OpError, Out, Run};
use crate::policy::Enabling;
use crate::types::{Any, DataBool, PortType, Value};

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
    /// the value to copy
    #[input]
    in_data: In<T>,
    /// a copy of the value, one per output (`arity` adds `out_c`, `out_d`, …)
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
    /// a branch (or a loop's entry and back edge); whichever is NEW goes on (`arity` adds `in_c`, …)
    #[input(variadic = arity)]
    in_a: In<T>,
    /// the value of the input that fired
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
    /// the value to route
    #[input]
    in_data: In<T>,
    /// where to route it: true to `out_true`, false to `out_false` (e.g. from `predicate`)
    #[input]
    in_condition: In<DataBool>,
    /// the value, when the condition is true
    #[output]
    out_true: Out<T>,
    /// the value, when the condition is false
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
    /// a value to synchronise; passed to `out_a`
    #[input]
    in_a: In<A>,
    /// a value to synchronise; passed to `out_b`
    #[input]
    in_b: In<B>,
    /// more values to synchronise (`arity` adds `in_c`, `in_d`, …), each passed to the output of its letter
    #[input(variadic = arity)]
    in_c: In<Any>,
    /// `in_a`'s value, once every input has arrived
    #[output]
    out_a: Out<A>,
    /// `in_b`'s value, once every input has arrived
    #[output]
    out_b: Out<B>,
    /// the value of the input of the same letter
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
    /// the value to test (typically the loop's current value)
    #[input]
    in_data: In<T>,
    /// the value, while `continue_if` holds: connect it back into the loop
    #[output]
    out_continue: Out<T>,
    /// the value, once `continue_if` fails: the loop's exit
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::Operator;
    use crate::types::DataJSON;

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
