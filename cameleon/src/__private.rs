//! Support for generated code (`#[operator]`, `#[tool]`, `pipeline!`): the paths they emit,
//! `::cameleon::__private::…`, and the checks that put a user's mistake on the user's token
//! (`#[diagnostic::on_unimplemented]`). Not a public API: nothing here is stable.

pub use inventory;
pub use serde_json;

// For `pipeline!` (and `#[operator]`'s `HasPorts` impls).
pub use crate::dsl::{
    Endpoint, HasPorts, InputDecl, add, build_net, check_source, check_target, check_wiring,
    ports_of,
};
pub use crate::net::{Mode, Net, NetBuilder, NetConfig};

// For `#[operator]`.
pub use crate::catalogue::{
    BuildContext, CatalogueEntry, Catalogued, FromContext, ParamInfo, ParamReader, ParamType,
    PortDoc,
};
pub use crate::connection::ConnState;
pub use crate::operator::{
    AnyInPort, CanFire, Emitted, Execution, FiniteControl, Firing, InPort, InputSet, OpError,
    OpFuture, OpSettings, OpSpec, OpState, Operator, OutPort, ParamError, Params, Retry, Run,
    RunAsync, StateCodec, TypeRef, run_async_blocking, run_async_boxed,
};
pub use crate::policy::{Enabling, Family, Policy};
pub use crate::types::{Any, PortType, Value};
pub use ::core::clone::Clone;
pub use ::core::default::Default;
pub use ::core::marker::PhantomData;
pub use ::core::option::Option::{self, None, Some};
pub use ::core::result::Result::{self, Err, Ok};
pub use ::std::any::Any as StdAny;
pub use ::std::borrow::ToOwned;
pub use ::std::boxed::Box;
pub use ::std::string::String;
pub use ::std::vec::Vec;

// For `#[tool]`.
pub use crate::operator::capability::CapFuture;
pub use crate::tools::{Effect, ToolContext, ToolEntry, ToolError, ToolFn};

/// What the arguments of a `#[tool]` must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the arguments of a `#[tool]`",
    label = "the arguments struct of this tool",
    note = "derive `serde::Deserialize` and `schemars::JsonSchema` on it: the gate checks a call's arguments against its JSON Schema, then reads them into it"
)]
pub trait ToolArgs: serde::de::DeserializeOwned + schemars::JsonSchema {}
impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolArgs for T {}

/// How generated code reads a tool's arguments and gives their schema. Every use goes
/// through [`args_of`], so arguments that are not [`ToolArgs`] are reported once.
#[allow(missing_debug_implementations)] // function pointers, for generated code only
pub struct ArgsOf<T> {
    /// Reads a call's arguments (already checked against the schema) into the struct.
    pub read: fn(&str, serde_json::Value) -> Result<T, ToolError>,
    /// The JSON Schema of the arguments (JSON Schema 2020-12).
    pub schema: fn() -> serde_json::Value,
}

/// The argument operations of `T`.
pub const fn args_of<T: ToolArgs>() -> ArgsOf<T> {
    ArgsOf {
        read: read_args::<T>,
        schema: schema_of::<T>,
    }
}

fn read_args<T: ToolArgs>(tool: &str, args: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::invalid_args(format!("invalid arguments for `{tool}`: {e}")))
}

/// The JSON Schema of a type (JSON Schema 2020-12).
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
        .into_root_schema_for::<T>()
        .to_value()
}

/// What a `#[tool]` function must return.
#[diagnostic::on_unimplemented(
    message = "a `#[tool]` returns `Result<T, ToolError>` with `T: Serialize`, not `{Self}`",
    label = "this return type",
    note = "write `-> Result<MyOutput, ToolError>` (or `Result<impl Serialize, ToolError>`); errors convert with `ToolError::new(…)` or `?` on I/O and JSON errors"
)]
pub trait ToolReturn {
    /// The result as JSON.
    fn into_json(self) -> Result<serde_json::Value, ToolError>;
}

impl<T: serde::Serialize, E: Into<ToolError>> ToolReturn for Result<T, E> {
    fn into_json(self) -> Result<serde_json::Value, ToolError> {
        let value = self.map_err(Into::into)?;
        serde_json::to_value(value).map_err(|e| {
            ToolError::new(format!("the tool's result cannot be written as JSON: {e}"))
        })
    }
}

/// A tool function's result as JSON.
pub fn tool_output<R: ToolReturn>(r: R) -> Result<serde_json::Value, ToolError> {
    r.into_json()
}

/// Finds the JSON Schema of a tool's result type when it has one (autoref specialisation:
/// [`ToolSchemaOf`] applies to types with a schema, [`ToolSchemaAny`] to the others).
#[derive(Debug)]
pub struct SchemaProbe<T: ?Sized>(PhantomData<fn() -> Box<T>>);

impl<T: ?Sized> SchemaProbe<T> {
    /// The probe.
    pub fn new() -> Self {
        SchemaProbe(PhantomData)
    }
}

impl<T: ?Sized> Default for SchemaProbe<T> {
    fn default() -> Self {
        SchemaProbe::new()
    }
}

/// The schema of a result type that has one.
pub trait ToolSchemaOf {
    /// Its JSON Schema.
    fn tool_output_schema(&self) -> serde_json::Value;
}

impl<T: schemars::JsonSchema> ToolSchemaOf for SchemaProbe<T> {
    fn tool_output_schema(&self) -> serde_json::Value {
        schema_of::<T>()
    }
}

/// The schema of a result type without one: any JSON (`true`).
pub trait ToolSchemaAny {
    /// `true`.
    fn tool_output_schema(&self) -> serde_json::Value;
}

impl<T: ?Sized> ToolSchemaAny for &SchemaProbe<T> {
    fn tool_output_schema(&self) -> serde_json::Value {
        serde_json::Value::Bool(true)
    }
}

/// Most ports a variadic port group (`in_a`, `in_b`, …) can have.
pub const MAX_VARIADIC: usize = 26;

/// The name of port `i` of a variadic group: `in_a`, `in_b`, … `in_z`.
pub fn letter_port(prefix: &str, i: usize) -> ::std::string::String {
    crate::ops::letter_port(prefix, i)
}

/// The number of ports of a variadic group whose size param is `n`, at most
/// [`MAX_VARIADIC`].
pub fn variadic_count(n: usize) -> usize {
    n.min(MAX_VARIADIC)
}

/// How generated code calls an async operator's [`RunAsync`](crate::RunAsync) methods: the
/// `Operator` glue of `exec = async` (`run` is [`run_async_blocking`], `run_async` is
/// [`run_async_boxed`]). Every use goes through [`async_ops`], so an operator declared
/// `exec = async` without `impl RunAsync` is reported once.
#[allow(missing_debug_implementations)] // function pointers, for generated code only
pub struct AsyncOps<O> {
    /// [`Operator::run`]: drives `RunAsync::run` to completion.
    pub run: fn(&mut O, &mut Firing<'_>) -> Result<(), OpError>,
    /// [`Operator::run_async`]: `RunAsync::run`, boxed.
    pub run_async: for<'a, 'f> fn(&'a mut O, &'a mut Firing<'f>) -> OpFuture<'a>,
    /// `RunAsync::consumes`.
    pub consumes: fn(&O, &[ConnState]) -> InputSet,
    /// `RunAsync::control`.
    pub control: fn(&O) -> Option<&dyn FiniteControl>,
    /// `RunAsync::rollback`.
    pub rollback: fn(&mut O, &Emitted<'_, O>),
    /// `RunAsync::replay`.
    pub replay: fn(&mut O, &Emitted<'_, O>),
    /// `RunAsync::validate`.
    pub validate: fn(&O) -> Result<(), ParamError>,
    /// `RunAsync::refine_spec`.
    pub refine_spec: fn(&O, OpSpec) -> OpSpec,
}

/// The async operations of `O`.
pub fn async_ops<O: RunAsync>() -> AsyncOps<O> {
    AsyncOps {
        run: run_async_blocking::<O>,
        run_async: |op, cx| run_async_boxed(op, cx),
        consumes: O::consumes,
        control: O::control,
        rollback: O::rollback,
        replay: O::replay,
        validate: O::validate,
        refine_spec: O::refine_spec,
    }
}

/// How generated code saves, initialises and journals an internal-state field of type `T`.
/// Every use goes through [`state`], so a field that is not [`State`] (or not
/// [`JournalState`]) is reported once, at the field.
#[derive(Debug)]
pub struct StateOf<T> {
    /// A copy of the field, taken before and after each firing.
    pub save: fn(&T) -> T,
    /// The field's value when the catalogue builds the operator.
    pub initial: fn() -> T,
    /// The field's JSON form, for the journal.
    pub to_json: fn(&T) -> Result<serde_json::Value, ::std::string::String>,
    /// The field read back from its JSON form.
    pub from_json: fn(serde_json::Value) -> Result<T, ::std::string::String>,
}

fn state_to_json<T: JournalState>(v: &T) -> Result<serde_json::Value, ::std::string::String> {
    serde_json::to_value(v).map_err(|e| e.to_string())
}

fn state_from_json<T: JournalState>(v: serde_json::Value) -> Result<T, ::std::string::String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The state operations of `T`.
pub fn state<T: State + JournalState>() -> StateOf<T> {
    StateOf {
        save: T::clone,
        initial: T::default,
        to_json: state_to_json::<T>,
        from_json: state_from_json::<T>,
    }
}

/// The `n` fields of a saved state's JSON form (an array, one element per state field). A
/// shorter array — saved before the operator type gained a field at the end — leaves the
/// missing fields to be read from `null` (an `Option` or a log that was empty then).
pub fn state_fields(
    v: serde_json::Value,
    n: usize,
) -> Result<::std::vec::IntoIter<serde_json::Value>, ::std::string::String> {
    match v {
        serde_json::Value::Array(a) if a.len() <= n => Ok(a.into_iter()),
        other => Err(format!(
            "expected the {n} internal-state fields as a JSON array, found {other}"
        )),
    }
}

/// The state field read by `read`, or the error naming the field.
pub fn state_field<T>(
    v: Option<serde_json::Value>,
    field: &str,
    read: fn(serde_json::Value) -> Result<T, ::std::string::String>,
) -> Result<T, ::std::string::String> {
    read(v.unwrap_or_default()).map_err(|e| format!("internal state `{field}`: {e}"))
}

/// How generated code reads, writes and names a `#[param]` of type `T`. Every use goes
/// through [`param`], so a type that is not [`ParamType`] is reported once.
#[derive(Debug)]
pub struct ParamOf<T> {
    /// The type's name in the catalogue.
    pub name: &'static str,
    /// The default of a param declared without one.
    pub implicit_default: Option<&'static str>,
    /// Reads the param from `.cm` params.
    pub read: for<'r, 'n> fn(&ParamReader<'r>, &'n str) -> Result<T, ParamError>,
    /// Writes the param back.
    pub write: fn(&T) -> serde_json::Value,
}

fn read_param<T: ParamType>(r: &ParamReader<'_>, name: &str) -> Result<T, ParamError> {
    r.read(name)
}

/// The param operations of `T`.
pub const fn param<T: ParamType>() -> ParamOf<T> {
    ParamOf {
        name: T::NAME,
        implicit_default: T::IMPLICIT_DEFAULT,
        read: read_param::<T>,
        write: T::to_param,
    }
}

/// What an internal-state field must be: cloned for rollback, defaulted when the catalogue
/// builds the operator, moved across threads.
#[diagnostic::on_unimplemented(
    message = "internal state `{Self}` must be `Clone + Default + Send + 'static`",
    label = "a field without `#[param]`, `#[input]`, `#[output]` or `#[context]` is internal state",
    note = "internal state is cloned before each firing so a backward step restores it exactly, and defaulted when the operator is built from `.cm`; wrap it (`Arc<Mutex<…>>`) or make it a `#[param]` or a `#[context]` field"
)]
pub trait State: Clone + Default + Send + 'static {}
impl<T: Clone + Default + Send + 'static> State for T {}

/// What an internal-state field must also be: written to the journal of a durable run and
/// read back when the run resumes.
#[diagnostic::on_unimplemented(
    message = "internal state `{Self}` must be `Serialize + Deserialize` (serde)",
    label = "internal state is written to the journal of a durable run",
    note = "a journaled run records each operator's internal state before and after every firing, so a crashed run resumes exactly: derive `serde::Serialize` and `serde::Deserialize` for it, or make it a `#[param]` or a `#[context]` field"
)]
pub trait JournalState: serde::Serialize + serde::de::DeserializeOwned {}
impl<T: serde::Serialize + serde::de::DeserializeOwned> JournalState for T {}

#[cfg(test)]
mod tests {
    use super::{state_field, state_fields};

    #[test]
    fn a_state_saved_before_a_field_was_added_at_the_end_reads_it_from_null() {
        let mut it = state_fields(serde_json::json!([true]), 2).unwrap();
        let first: Option<bool> = state_field(it.next(), "approval", |v| {
            serde_json::from_value(v).map_err(|e| e.to_string())
        })
        .unwrap();
        let second: Option<String> = state_field(it.next(), "log", |v| {
            serde_json::from_value(v).map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!((first, second), (Some(true), None));
        // More fields than the type has is not its state.
        assert!(state_fields(serde_json::json!([1, 2, 3]), 2).is_err());
        assert!(state_fields(serde_json::json!({"a": 1}), 2).is_err());
    }
}
