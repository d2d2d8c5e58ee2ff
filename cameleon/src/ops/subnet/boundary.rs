//! `input` and `output`: a net's boundary, the ports it has as a sub-net (docs/semantics.md
//! §10.1).

use std::marker::PhantomData;

use crate::operator;
use crate::operator::{Firing, In, OpError, OpSpec, Operator, Out, ParamError, Run, TypeRef};
use crate::types::{Any, DataJSON, PortType, TypeInfo, TypedValue, Value, all_types, type_by_name};
use crate::util::did_you_mean;

/// The data type named by an `input`'s or `output`'s `type` param.
fn named_type(name: &Option<String>) -> Result<Option<&'static TypeInfo>, ParamError> {
    let Some(name) = name else { return Ok(None) };
    type_by_name(name).map(Some).ok_or_else(|| {
        let names: Vec<&str> = all_types().iter().map(|t| t.name).collect();
        let hint = did_you_mean(name, names.iter().copied())
            .map(|s| format!("did you mean `{s}`?"))
            .unwrap_or_else(|| format!("the data types are: {}", names.join(", ")));
        ParamError::new("type".to_owned(), format!("unknown data type `{name}`")).with_hint(hint)
    })
}

/// A boundary name becomes a port name (`in_NAME`, `out_NAME`): letters, digits, `_`.
fn check_name(name: &str) -> Result<(), ParamError> {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(ParamError::new(
            "name".to_owned(),
            format!("boundary name `{name}` is not a port name"),
        )
        .with_hint("use letters, digits and `_`: the sub-net's port is `in_NAME` or `out_NAME`"))
    }
}

/// A sub-net's input (its port `in_NAME`): emits, once, the value the parent passes in.
///
/// (`SubnetInput` in Rust, `input` in `.cm` files and the catalogue.)
///
/// Param `name` names the port. The value's type is that of what the input feeds, or `type`.
/// Run on its own (not as a sub-net), the net's input emits its `value` param — of type `type`,
/// `DataJSON` by default — and fails without one.
#[operator(id = "input", label = "Input", family = structural)]
#[derive(Clone, Debug)]
pub struct SubnetInput<T: PortType = Any> {
    /// the boundary name: the sub-net's port is `in_NAME`
    #[param]
    name: String,
    /// the data type (a type name), when what the input feeds does not fix it
    #[param(name = "type")]
    ty: Option<String>,
    /// the value emitted when the net runs on its own, not as a sub-net
    #[param]
    value: Option<serde_json::Value>,
    /// The value its parent passes in for the current run.
    given: Option<TypedValue>,
    /// the value the parent passes in on `in_NAME` (or `value` when the net runs on its own)
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> SubnetInput<T> {
    /// The input `name` (its sub-net's port `in_NAME`).
    pub fn new(name: impl Into<String>) -> Self {
        SubnetInput {
            name: name.into(),
            ty: None,
            value: None,
            given: None,
            __cameleon_ports: PhantomData,
        }
    }

    /// Its boundary name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A copy in its initial state: the same params, given nothing.
    pub(crate) fn fresh_copy(&self) -> Self {
        SubnetInput {
            name: self.name.clone(),
            ty: self.ty.clone(),
            value: self.value.clone(),
            given: None,
            __cameleon_ports: PhantomData,
        }
    }

    /// Back in its initial state (as [`fresh_copy`](Self::fresh_copy) makes it): given nothing.
    pub(crate) fn renew(&mut self) {
        self.given = None;
    }

    /// Passes `value` in: what the next firing emits.
    pub(crate) fn give(&mut self, value: Value) {
        self.given = Some(TypedValue(value));
    }

    fn value_type(&self) -> Option<&'static TypeInfo> {
        named_type(&self.ty)
            .ok()
            .flatten()
            .or_else(|| self.value.as_ref().map(|_| <DataJSON as PortType>::INFO))
    }
}

impl<T: PortType> Run for SubnetInput<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if let Some(TypedValue(v)) = &self.given {
            cx.emit_value(Self::out_data, v.clone());
            return Ok(());
        }
        let Some(json) = &self.value else {
            return Err(OpError::new(format!(
                "input `{}` received no value: this net is a sub-net (run it through a `subnet` or a `map`), or give the input a `value` to run it on its own",
                self.name
            )));
        };
        let ty = self.value_type().unwrap_or(<DataJSON as PortType>::INFO);
        let v = (ty.from_json)(json.clone()).map_err(|e| {
            OpError::new(format!(
                "input `{}`: `value` is not a {}: {e}",
                self.name, ty.name
            ))
        })?;
        cx.emit_value(Self::out_data, v);
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        check_name(&self.name)?;
        named_type(&self.ty).map(|_| ())
    }

    fn refine_spec(&self, mut spec: OpSpec) -> OpSpec {
        if let Some(t) = self.value_type() {
            spec.outputs[0].ty = TypeRef::Is(t);
        }
        spec
    }
}

/// A sub-net's output (its port `out_NAME`): what it receives is passed out to the parent.
///
/// (`SubnetOutput` in Rust, `output` in `.cm` files and the catalogue.)
///
/// Param `name` names the port; its type is that of what it receives, or `type`. A sub-net
/// run emits on `out_NAME` when the output received a value, and fails when it received more
/// than one.
#[operator(id = "output", label = "Output", family = structural)]
#[derive(Clone, Debug)]
pub struct SubnetOutput<T: PortType = Any> {
    /// the boundary name: the sub-net's port is `out_NAME`
    #[param]
    name: String,
    /// the data type (a type name), when what the output receives does not fix it
    #[param(name = "type")]
    ty: Option<String>,
    /// the value the parent receives on `out_NAME`
    #[input]
    in_data: In<T>,
}

impl<T: PortType> SubnetOutput<T> {
    /// The output `name` (its sub-net's port `out_NAME`).
    pub fn new(name: impl Into<String>) -> Self {
        SubnetOutput {
            name: name.into(),
            ty: None,
            __cameleon_ports: PhantomData,
        }
    }

    /// Its boundary name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A copy (it has no state).
    pub(crate) fn fresh_copy(&self) -> Self {
        SubnetOutput {
            name: self.name.clone(),
            ty: self.ty.clone(),
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for SubnetOutput<T> {
    fn run(&mut self, _cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        check_name(&self.name)?;
        named_type(&self.ty).map(|_| ())
    }

    fn refine_spec(&self, mut spec: OpSpec) -> OpSpec {
        if let Ok(Some(t)) = named_type(&self.ty) {
            spec.inputs[0].ty = TypeRef::Is(t);
        }
        spec
    }
}

/// A fresh instance of a boundary operator (`input`, `output`) of a sub-net's inner net, without
/// a round trip through its params and the catalogue: a copy of the template's own (which never
/// runs), given nothing. `None` for any other operator.
pub(super) fn fresh_boundary(op: &dyn Operator) -> Option<Box<dyn Operator>> {
    let any: &dyn std::any::Any = op;
    if let Some(input) = any.downcast_ref::<SubnetInput<Any>>() {
        return Some(Box::new(input.fresh_copy()));
    }
    any.downcast_ref::<SubnetOutput<Any>>()
        .map(|output| Box::new(output.fresh_copy()) as Box<dyn Operator>)
}

/// Puts `op`, a boundary operator (`input`, `output`) of an instance of a sub-net's inner net, back
/// in its initial state, where it is: as [`fresh_boundary`] would make it. `false` for any other
/// operator.
pub(super) fn renew_boundary(op: &mut dyn Operator) -> bool {
    let any: &mut dyn std::any::Any = op;
    if let Some(input) = any.downcast_mut::<SubnetInput<Any>>() {
        input.renew();
        return true;
    }
    // An output has no state.
    any.is::<SubnetOutput<Any>>()
}
