//! What an operator instance is: its ports and their types, its policy, its emission sets.

use std::borrow::Cow;

#[cfg(doc)]
use super::Operator;
use crate::policy::{Family, Policy};
use crate::types::{PortType, TypeInfo};

/// The declared type of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// A fixed type. `Any` on a behavioral input accepts every type.
    Is(&'static TypeInfo),
    /// A type variable of a structural operator (docs/semantics.md §1): every port of the operator with the
    /// same variable has the same type, bound by its connections.
    Var(u8),
}

impl TypeRef {
    /// The fixed type `T`.
    pub fn of<T: PortType>() -> Self {
        TypeRef::Is(T::INFO)
    }

    /// For a generic structural operator: `T` itself, or the type variable `var` when `T` is
    /// [`Any`](crate::types::Any) (the operator was built without a concrete type, as the `.cm` loader does).
    pub fn var_or<T: PortType>(var: u8) -> Self {
        if T::INFO.is_any() {
            TypeRef::Var(var)
        } else {
            TypeRef::Is(T::INFO)
        }
    }

    /// The name shown in errors and the catalogue: the type's name, or `T0`, `T1`… for a variable.
    pub fn display_name(&self) -> Cow<'static, str> {
        match self {
            TypeRef::Is(t) => Cow::Borrowed(t.name),
            TypeRef::Var(v) => Cow::Owned(format!("T{v}")),
        }
    }
}

impl From<&'static TypeInfo> for TypeRef {
    fn from(t: &'static TypeInfo) -> Self {
        TypeRef::Is(t)
    }
}

/// A port's declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    /// The port's name (`in_data`, `out_true`).
    pub name: Cow<'static, str>,
    /// Its declared type.
    pub ty: TypeRef,
    /// An optional input may stay unconnected; it then counts as permanently OLD with no data.
    pub optional: bool,
    /// Where the port's type comes from, when it is not the operator type's own declaration: a
    /// sub-net's port says which operator of the inner net types it. Validation adds it to a
    /// type mismatch on the port.
    pub origin: Option<Cow<'static, str>>,
}

impl PortSpec {
    /// A required port.
    pub fn new(name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        PortSpec {
            name: name.into(),
            ty,
            optional: false,
            origin: None,
        }
    }

    /// An optional input port.
    pub fn optional(name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        PortSpec {
            optional: true,
            ..PortSpec::new(name, ty)
        }
    }
}

/// The operators a cancellation withdraws the tokens of (docs/semantics.md §10.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// These operators (by instance name): every connection into them.
    Ops(Vec<String>),
    /// Every connection of the net (`terminate`).
    Net,
}

/// A cancellation an operator's firing performs (docs/semantics.md §10.4): besides its own
/// inputs, the firing consumes (NEW → OLD) every NEW connection of its region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancels {
    /// What is cancelled.
    pub region: Region,
    /// The output port whose emission triggers the cancellation; `None`: every firing cancels.
    pub when: Option<u16>,
}

/// What an operator instance is: the facts the engine, the loader and the verifier need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpSpec {
    /// Catalogue id (the `type:` of a `.cm` operator), e.g. `chunker`.
    pub type_id: Cow<'static, str>,
    /// Human label, e.g. `Chunker`.
    pub label: Cow<'static, str>,
    /// Structural or behavioral.
    pub family: Family,
    /// Firing policy (the default of [`Operator::can_fire`]).
    pub policy: Policy,
    /// Input ports, in order.
    pub inputs: Vec<PortSpec>,
    /// Output ports, in order.
    pub outputs: Vec<PortSpec>,
    /// Declared emission sets (output port indices), for the verifier (docs/semantics.md §8). Empty means
    /// the one set "every output".
    pub emits: Vec<Vec<u16>>,
    /// The cancellation its firings perform, if any (docs/semantics.md §10.4).
    pub cancels: Option<Cancels>,
}

impl OpSpec {
    /// A spec with no ports; add them with [`input`](Self::input) and [`output`](Self::output).
    pub fn new(
        type_id: impl Into<Cow<'static, str>>,
        label: impl Into<Cow<'static, str>>,
        family: Family,
        policy: Policy,
    ) -> Self {
        OpSpec {
            type_id: type_id.into(),
            label: label.into(),
            family,
            policy,
            inputs: Vec::new(),
            outputs: Vec::new(),
            emits: Vec::new(),
            cancels: None,
        }
    }

    /// Adds an input port.
    pub fn input(mut self, name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        self.inputs.push(PortSpec::new(name, ty));
        self
    }

    /// Adds an optional input port.
    pub fn optional_input(mut self, name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        self.inputs.push(PortSpec::optional(name, ty));
        self
    }

    /// Adds an output port.
    pub fn output(mut self, name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        self.outputs.push(PortSpec::new(name, ty));
        self
    }

    /// Declares the emission sets by output port name. Unknown names are ignored by the engine
    /// and reported by net validation.
    pub fn emits(mut self, sets: &[&[&str]]) -> Self {
        self.emits = sets
            .iter()
            .map(|set| {
                set.iter()
                    .filter_map(|n| self.output_index(n))
                    .map(|i| i as u16)
                    .collect()
            })
            .collect();
        self
    }

    /// Declares a cancellation (docs/semantics.md §10.4): a firing consumes every NEW
    /// connection of `region` — every firing, or with `when`, a firing that emits on that
    /// output.
    pub fn cancels(mut self, region: Region, when: Option<&str>) -> Self {
        let when = when.and_then(|n| self.output_index(n)).map(|i| i as u16);
        self.cancels = Some(Cancels { region, when });
        self
    }

    /// Index of the input named `name`.
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.inputs.iter().position(|p| p.name == name)
    }

    /// Index of the output named `name`.
    pub fn output_index(&self, name: &str) -> Option<usize> {
        self.outputs.iter().position(|p| p.name == name)
    }

    /// The emission sets, with the default (all outputs) made explicit.
    pub fn emission_sets(&self) -> Vec<Vec<u16>> {
        if self.emits.is_empty() {
            vec![(0..self.outputs.len() as u16).collect()]
        } else {
            self.emits.clone()
        }
    }
}
