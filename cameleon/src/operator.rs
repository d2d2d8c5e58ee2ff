//! Operators (Petri transitions): their description, their firing rule, `run` and `rollback`
//! (SPEC §3–§5).
//!
//! [`Operator`] is the object-safe trait the engine calls. Users normally declare operators with
//! `#[operator]` and implement [`Run`]; the macro writes the `Operator` glue.

use std::any::Any as StdAny;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::connection::{ConnState, Token};
use crate::policy::{Enabling, Family, Policy};
use crate::types::{DataType, PortType, TypeInfo, Value};

/// An operator's parameters as written in `.cm` `params:` (declaration order kept).
pub type Params = serde_json::Map<String, serde_json::Value>;

/// The declared type of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// A fixed type. `Any` on a behavioral input accepts every type.
    Is(&'static TypeInfo),
    /// A type variable of a structural operator (SPEC §1): every port of the operator with the
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
}

impl PortSpec {
    /// A required port.
    pub fn new(name: impl Into<Cow<'static, str>>, ty: TypeRef) -> Self {
        PortSpec {
            name: name.into(),
            ty,
            optional: false,
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
    /// Declared emission sets (output port indices), for the verifier (SPEC §8). Empty means
    /// the one set "every output".
    pub emits: Vec<Vec<u16>>,
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

/// Saved internal state of an operator, for rollback and replay.
pub struct OpState(pub Box<dyn StdAny + Send>);

impl OpState {
    /// Wraps a state value.
    pub fn new<S: StdAny + Send>(s: S) -> Self {
        OpState(Box::new(s))
    }

    /// The state as an `S`, if it is one.
    pub fn get<S: StdAny>(&self) -> Option<&S> {
        self.0.downcast_ref()
    }
}

impl fmt::Debug for OpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OpState(..)")
    }
}

/// A set of input ports, as a bit mask (ports 0..64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InputSet(pub u64);

impl InputSet {
    /// Every input that is NEW: the default consumption (SPEC §4.4).
    pub fn new_inputs(states: &[ConnState]) -> Self {
        let mut m = 0u64;
        for (i, s) in states.iter().enumerate().take(64) {
            if *s == ConnState::New {
                m |= 1 << i;
            }
        }
        InputSet(m)
    }

    /// Only the first NEW input in port order (Merge).
    pub fn first_new(states: &[ConnState]) -> Self {
        states
            .iter()
            .take(64)
            .position(|s| *s == ConnState::New)
            .map_or(InputSet(0), |i| InputSet(1 << i))
    }

    /// Whether port `i` is in the set.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1 << i) != 0
    }
}

/// How parallel mode runs an operator's firings (SPEC §7). Sequential mode calls
/// [`Operator::run`] on the engine's thread whatever the kind.
///
/// Structural operators always run inline, whatever they declare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// `run` is quick and never blocks: it runs on the engine's task, while the step's blocking
    /// and async firings proceed concurrently.
    Inline,
    /// `run` may block (CPU work, blocking I/O): it runs on tokio's blocking pool, concurrently
    /// with the step's other firings. The default for behavioral operators.
    #[default]
    Blocking,
    /// The operator is async: [`Operator::run_async`] is awaited concurrently with the step's
    /// other firings, and can be cut short by a timeout or a cancellation.
    Async,
}

impl Execution {
    /// `inline`, `blocking` or `async`.
    pub fn as_str(self) -> &'static str {
        match self {
            Execution::Inline => "inline",
            Execution::Blocking => "blocking",
            Execution::Async => "async",
        }
    }
}

/// The future of one firing of an async operator, as [`Operator::run_async`] returns it.
pub type OpFuture<'a> = Pin<Box<dyn Future<Output = Result<(), OpError>> + Send + 'a>>;

/// Retries of a failed firing (`retry: {max, backoff_ms}`), applied before the failure counts
/// (SPEC §4).
///
/// A firing is attempted at most `1 + max` times. Before the `k`-th retry the engine waits
/// `backoff_ms × 2^(k-1)` milliseconds (exponential backoff; `0` retries at once) and restores
/// the operator's internal state to what it was before the first attempt. A retry never
/// changes the result's place in the trace: the step still commits in declaration order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// How many times a failed firing is tried again.
    pub max: u32,
    /// The wait before the first retry, in milliseconds; it doubles at each further retry.
    #[serde(default)]
    pub backoff_ms: u64,
}

impl Retry {
    /// The wait before retry number `k` (1-based).
    pub fn backoff(&self, k: u32) -> Duration {
        let factor = 1u64 << k.saturating_sub(1).min(20);
        Duration::from_millis(self.backoff_ms.saturating_mul(factor))
    }
}

/// Per-operator run settings: a timeout and retries. An operator type declares defaults with
/// [`Operator::settings`]; an instance in a net overrides them field by field
/// ([`OpMeta::settings`](crate::net::OpMeta::settings), `.cm` keys `timeout_ms:` and `retry:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSettings {
    /// A firing that has not finished after this many milliseconds fails with `timed out`.
    /// An async firing is cut short at the deadline; an inline or blocking `run` cannot be
    /// interrupted, so it fails when it returns late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries of a failed firing (a timeout counts as a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
}

impl OpSettings {
    /// No timeout, no retry.
    pub const NONE: OpSettings = OpSettings {
        timeout_ms: None,
        retry: None,
    };

    /// These settings, with each field left unset taken from `fallback`.
    pub fn or(self, fallback: OpSettings) -> OpSettings {
        OpSettings {
            timeout_ms: self.timeout_ms.or(fallback.timeout_ms),
            retry: self.retry.or(fallback.retry),
        }
    }

    /// Whether nothing is set.
    pub fn is_none(&self) -> bool {
        self.timeout_ms.is_none() && self.retry.is_none()
    }

    /// The timeout as a duration.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}

/// The object-safe operator interface the engine calls. See [`Run`] for the
/// user-facing typed form.
///
/// The engine knows nothing of any particular operator: it asks [`can_fire`](Self::can_fire),
/// calls [`run`](Self::run), and on a backward step calls [`rollback`](Self::rollback).
pub trait Operator: StdAny + Send {
    /// The operator's ports, policy and identity. Called once, when the operator is added to a
    /// net.
    fn spec(&self) -> OpSpec;

    /// The parameters this instance was built from, as `.cm` writes them.
    fn params(&self) -> Params {
        Params::new()
    }

    /// The firing rule (SPEC §3.1). The default applies the declared policy; an operator with
    /// the `Custom` policy overrides it. May read the operator's own internal state.
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.policy_allows()
    }

    /// Which inputs a firing consumes, given the input states. Default: every NEW input.
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// The finite control state this operator declares to the verifier (SPEC §8), if its firing
    /// rule or its emissions depend on an internal state that is finite and independent of data
    /// (a counter modulo n, a phase). Default: none — the verifier then asks
    /// [`can_fire`](Self::can_fire) on the operator as built and explores every declared emission
    /// set. See [`FiniteControl`](crate::verify::FiniteControl).
    fn control(&self) -> Option<&dyn crate::verify::FiniteControl> {
        None
    }

    /// Fires: read inputs from `cx`, emit outputs to it. An error (or a panic) applies nothing.
    ///
    /// An async operator implements this by driving [`run_async`](Self::run_async) to
    /// completion ([`run_async_blocking`] does it), so that sequential mode's synchronous API
    /// can call it.
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError>;

    /// How parallel mode runs this operator's firings. Default: [`Execution::Blocking`]
    /// (ignored for structural operators, which always run inline).
    fn execution(&self) -> Execution {
        Execution::Blocking
    }

    /// Fires asynchronously. The engine calls it instead of [`run`](Self::run) when
    /// [`execution`](Self::execution) is [`Execution::Async`] and it is driving the net
    /// asynchronously (parallel mode, [`Cvm::step_async`](crate::Cvm::step_async)). Default:
    /// `run`, already finished.
    ///
    /// Users write `impl RunAsync for MyOp { async fn run(…) }` and let `#[operator]` (or
    /// [`run_async_boxed`]) write this method.
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        let result = self.run(cx);
        Box::pin(std::future::ready(result))
    }

    /// The operator type's default timeout and retries; a net's instance settings override
    /// them field by field. Default: none.
    fn settings(&self) -> OpSettings {
        OpSettings::NONE
    }

    /// A copy of the internal state, taken before and after each firing of a stateful operator,
    /// so a backward step restores it and a replay re-applies it. Default: `None` (stateless).
    fn save_state(&self) -> Option<OpState> {
        None
    }

    /// Restores a state produced by [`save_state`](Self::save_state).
    fn restore_state(&mut self, _state: &OpState) {}

    /// Undoes a firing on a backward step: compensation for side effects. `before` is the state
    /// saved before the firing; `emitted` what it emitted. Default: restore `before`.
    fn rollback(&mut self, before: Option<&OpState>, _emitted: &[(u16, Value)]) {
        if let Some(s) = before {
            self.restore_state(s);
        }
    }

    /// Re-applies a recorded firing on a forward step after a backward one, without running:
    /// `after` is the state saved after the original firing. Default: restore `after`.
    fn replay(&mut self, after: Option<&OpState>, _emitted: &[(u16, Value)]) {
        if let Some(s) = after {
            self.restore_state(s);
        }
    }
}

/// The user-facing form of an **async** operator: the counterpart of [`Run`] whose `run` is an
/// `async fn`. In parallel mode (and in [`Cvm::step_async`](crate::Cvm::step_async)) the engine
/// awaits it concurrently with the step's other firings; a timeout or a cancellation drops it.
/// Sequential mode's synchronous API drives it to completion with
/// [`block_on`](crate::engine::block_on).
///
/// The optional methods mean what they mean on [`Run`].
///
/// ```
/// use cameleon::prelude::*;
///
/// /// Waits, then passes its input on.
/// struct Pause;
///
/// impl RunAsync for Pause {
///     async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
///         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///         let v = cx.value_at(0).cloned().ok_or("no input")?;
///         cx.emit_at(0, v);
///         Ok(())
///     }
/// }
/// ```
///
/// # What `#[operator(…, exec = async)]` generates
///
/// An operator declared `exec = async` (or `exec = "async"`) implements `RunAsync` instead of
/// [`Run`]. The macro writes the same `impl Operator` as for a sync one, with `RunAsync`'s
/// methods in place of `Run`'s for `consumes`, `control`, `rollback` and the factory's
/// `validate`, and these three methods instead of `run`:
///
/// ```ignore
/// fn execution(&self) -> Execution { Execution::Async }
/// fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
///     run_async_blocking(self, cx)
/// }
/// fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
///     run_async_boxed(self, cx)
/// }
/// ```
///
/// (Every one of these calls goes through one table of function pointers,
/// `::cameleon::__private::async_ops::<Self>()`, so that a missing `impl RunAsync` is one
/// compile error, at the `async` of `exec = async`.)
///
/// [`ops::Delay`](crate::ops::Delay) is declared so. A sync operator may also say how parallel
/// mode runs it: `exec = inline` (quick and non-blocking: stays on the engine's task, no thread
/// hand-off) or `exec = blocking` (the default: tokio's blocking pool) generate
/// `fn execution(&self) -> Execution { … }`. Per-type timeouts and retries (`timeout_ms = 5000`,
/// `retry(max = 3, backoff_ms = 200)`) generate `fn settings(&self) -> OpSettings { … }`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is declared async with `#[operator]` but does not implement `RunAsync`",
    label = "`exec = async` needs `impl RunAsync`",
    note = "add `impl RunAsync for {Self} {{ async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {{ … }} }}`",
    note = "an operator declared `exec = async` implements `RunAsync`, not `Run`; remove `exec = async` to keep a sync `impl Run`"
)]
pub trait RunAsync: Send {
    /// Fires: read inputs from `cx`, await what you need, emit outputs to `cx`. An error (or a
    /// panic) applies nothing: the marking and the internal state stay as they were.
    fn run(
        &mut self,
        cx: &mut Firing<'_, Self>,
    ) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Compensation for side effects when a firing is undone (see [`Run::rollback`]).
    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        let _ = emitted;
    }

    /// Which inputs a firing consumes (see [`Run::consumes`]). Default: every NEW input.
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// Checks an instance built from `.cm` params (see [`Run::validate`]).
    fn validate(&self) -> Result<(), crate::catalogue::ParamError> {
        Ok(())
    }

    /// The finite control state the operator declares to the verifier (see [`Run::control`]).
    /// Default: none.
    fn control(&self) -> Option<&dyn crate::verify::FiniteControl> {
        None
    }
}

/// [`Operator::run_async`] for an operator implementing [`RunAsync`]: its `run`, boxed.
pub fn run_async_boxed<'a, O: RunAsync + 'a>(
    op: &'a mut O,
    cx: &'a mut Firing<'_>,
) -> OpFuture<'a> {
    Box::pin(async move {
        let mut typed = cx.typed::<O>();
        RunAsync::run(op, &mut typed).await
    })
}

/// [`Operator::run`] for an operator implementing [`RunAsync`]: drives its `run` to completion
/// on the engine's runtime (see [`block_on`](crate::engine::block_on)).
pub fn run_async_blocking<O: RunAsync>(op: &mut O, cx: &mut Firing<'_>) -> Result<(), OpError> {
    crate::engine::block_on(run_async_boxed(op, cx))
}

/// Why a firing failed. `Display` is the operator's message.
#[derive(Debug)]
pub struct OpError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl OpError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        OpError {
            message: message.into(),
            source: None,
        }
    }

    /// Wraps another error (its message becomes this one's).
    pub fn from_err(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        OpError {
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for OpError {
    fn from(s: String) -> Self {
        OpError::new(s)
    }
}
impl From<&str> for OpError {
    fn from(s: &str) -> Self {
        OpError::new(s)
    }
}
impl From<serde_json::Error> for OpError {
    fn from(e: serde_json::Error) -> Self {
        OpError::from_err(e)
    }
}
impl From<std::io::Error> for OpError {
    fn from(e: std::io::Error) -> Self {
        OpError::from_err(e)
    }
}

// ---------------------------------------------------------------------------------------------
// Port handles

/// A typed handle on input port `index` of operator type `O`, of data type `T`
/// (`Chunker::text`). `#[operator]` generates one per `#[input]` field.
pub struct InPort<O: ?Sized, T: ?Sized> {
    /// The port's index among the operator's inputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

/// A typed handle on output port `index` of operator type `O`, of data type `T`.
pub struct OutPort<O: ?Sized, T: ?Sized> {
    /// The port's index among the operator's outputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

macro_rules! port_handle_impls {
    ($($h:ident),*) => {$(
        impl<O: ?Sized, T: ?Sized> $h<O, T> {
            /// A handle on port `index` named `name`.
            pub const fn new(index: u16, name: &'static str) -> Self {
                $h { index, name, _p: PhantomData }
            }
        }
        impl<O: ?Sized, T: ?Sized> Clone for $h<O, T> {
            fn clone(&self) -> Self { *self }
        }
        impl<O: ?Sized, T: ?Sized> Copy for $h<O, T> {}
        impl<O: ?Sized, T: ?Sized> fmt::Debug for $h<O, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({} #{})", stringify!($h), self.name, self.index)
            }
        }
    )*};
}
/// A typed handle on an input port of operator type `O` that accepts every type (a behavioral
/// operator's `In<Any>`). A distinct type from [`InPort`], so `pipeline!` can infer the type
/// parameters of generic operators from their typed ports.
pub struct AnyInPort<O: ?Sized, T: ?Sized = crate::types::Any> {
    /// The port's index among the operator's inputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

port_handle_impls!(InPort, OutPort, AnyInPort);

/// An input port handle of operator type `O`: [`InPort`] or [`AnyInPort`].
pub trait InputHandle<O: ?Sized>: Copy {
    /// The port's index among the operator's inputs.
    fn index(self) -> usize;
    /// The port's name.
    fn name(self) -> &'static str;
}

impl<O: ?Sized, T: ?Sized> InputHandle<O> for InPort<O, T> {
    fn index(self) -> usize {
        self.index as usize
    }
    fn name(self) -> &'static str {
        self.name
    }
}

impl<O: ?Sized> InputHandle<O> for AnyInPort<O> {
    fn index(self) -> usize {
        self.index as usize
    }
    fn name(self) -> &'static str {
        self.name
    }
}

/// Field marker of an input port in an `#[operator]` struct: `#[input] text: In<DataString>`.
/// The macro removes the field; it is a declaration, not state.
pub struct In<T: PortType>(PhantomData<T>);
/// Field marker of an output port in an `#[operator]` struct: `#[output] chunks: Out<DataChunk>`.
pub struct Out<T: PortType>(PhantomData<T>);

impl<T: PortType> fmt::Debug for In<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "In<{}>", T::INFO.name)
    }
}
impl<T: PortType> fmt::Debug for Out<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Out<{}>", T::INFO.name)
    }
}

// ---------------------------------------------------------------------------------------------
// Firing context

/// The untyped marker for [`Firing`] as the engine hands it to [`Operator::run`].
#[derive(Debug)]
pub enum Untyped {}

/// One input as a firing sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputSlot {
    pub(crate) state: ConnState,
    /// Token index in the engine's arena, or `u32::MAX` for none.
    pub(crate) token: u32,
}

/// What `run` works with: the inputs (value and state of each port) and the outputs it emits.
///
/// `O` is the operator type, for the typed accessors taking port handles
/// ([`get`](Self::get), [`emit`](Self::emit)); the engine passes `Firing<'_, Untyped>`, which
/// [`typed`](Self::typed) turns into the operator's own.
pub struct Firing<'a, O: ?Sized = Untyped> {
    pub(crate) tokens: &'a [Token],
    pub(crate) inputs: &'a [InputSlot],
    pub(crate) emitted: &'a mut Vec<(u16, Value)>,
    pub(crate) n_outputs: u16,
    pub(crate) step: u32,
    pub(crate) name: &'a str,
    pub(crate) _op: PhantomData<fn(&O)>,
}

impl<O: ?Sized> fmt::Debug for Firing<'_, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Firing")
            .field("operator", &self.name)
            .field("step", &self.step)
            .field("inputs", &self.inputs.len())
            .field("emitted", &self.emitted.len())
            .finish()
    }
}

impl<'a, O: ?Sized> Firing<'a, O> {
    /// The same firing, seen through operator type `P`'s port handles.
    pub fn typed<P: ?Sized>(&mut self) -> Firing<'_, P> {
        Firing {
            tokens: self.tokens,
            inputs: self.inputs,
            emitted: &mut *self.emitted,
            n_outputs: self.n_outputs,
            step: self.step,
            name: self.name,
            _op: PhantomData,
        }
    }

    /// The logical step of this firing (1-based).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The instance name of the firing operator.
    pub fn instance(&self) -> &str {
        self.name
    }

    /// Number of input ports.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// State of input port `i` (an unconnected optional input is OLD). Out of range: EMPTY.
    pub fn state_at(&self, i: usize) -> ConnState {
        self.inputs.get(i).map_or(ConnState::Empty, |s| s.state)
    }

    /// Value of input port `i`, NEW or OLD; `None` if it has none (EMPTY, or optional and
    /// unconnected).
    pub fn value_at(&self, i: usize) -> Option<&'a Value> {
        let slot = self.inputs.get(i)?;
        self.tokens.get(slot.token as usize).map(|t| &t.value)
    }

    /// Emits `value` on output port `i`. Emitting twice on one port in a firing is an error the
    /// engine reports when `run` returns.
    pub fn emit_at(&mut self, i: usize, value: impl Into<Value>) {
        let i = u16::try_from(i).unwrap_or(u16::MAX);
        self.emitted.push((i, value.into()));
    }

    /// Number of output ports.
    pub fn output_count(&self) -> usize {
        self.n_outputs as usize
    }

    /// Input `port`'s value as a `T`. Errors when the input has no value.
    pub fn get<T: DataType>(&self, port: InPort<O, T>) -> Result<&'a T, OpError> {
        let v = self
            .value_at(port.index as usize)
            .ok_or_else(|| OpError::new(format!("input `{}` has no value", port.name)))?;
        v.downcast_ref::<T>().ok_or_else(|| {
            OpError::new(format!(
                "input `{}` holds a {}, expected {}",
                port.name,
                v.type_name(),
                T::INFO.name
            ))
        })
    }

    /// Input `port`'s value as a `T`, if it has one.
    pub fn try_get<T: DataType>(&self, port: InPort<O, T>) -> Option<&'a T> {
        self.value_at(port.index as usize)?.downcast_ref()
    }

    /// Input `port`'s value, untyped (for `Any` and type-variable ports).
    pub fn value(&self, port: impl InputHandle<O>) -> Option<&'a Value> {
        self.value_at(port.index())
    }

    /// Input `port`'s state.
    pub fn state(&self, port: impl InputHandle<O>) -> ConnState {
        self.state_at(port.index())
    }

    /// Whether input `port` is NEW (fresh) in this firing.
    pub fn is_new(&self, port: impl InputHandle<O>) -> bool {
        self.state(port) == ConnState::New
    }

    /// Emits `value` on output `port`.
    pub fn emit<T: DataType>(&mut self, port: OutPort<O, T>, value: T) {
        self.emit_at(port.index as usize, Value::new(value));
    }

    /// Emits an already-built value on output `port` (for `Any` and type-variable ports).
    pub fn emit_value<T: ?Sized>(&mut self, port: OutPort<O, T>, value: Value) {
        self.emit_at(port.index as usize, value);
    }

    /// Passes input `from`'s value to output `to` as a shared reference (structural operators).
    pub fn forward<T: ?Sized>(
        &mut self,
        from: InPort<O, T>,
        to: OutPort<O, T>,
    ) -> Result<(), OpError> {
        let v = self
            .value_at(from.index as usize)
            .ok_or_else(|| OpError::new(format!("input `{}` has no value", from.name)))?
            .clone();
        self.emit_at(to.index as usize, v);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The user-facing traits of `#[operator]`

/// What an operator declared with `#[operator]` does when it fires: the typed counterpart of
/// [`Operator::run`]. The macro writes the [`Operator`] glue around it.
///
/// ```
/// use cameleon::prelude::*;
///
/// /// Upper-cases a text.
/// #[operator(id = "upper", label = "Upper")]
/// pub struct Upper {
///     #[input] in_data: In<DataString>,
///     #[output] out_data: Out<DataString>,
/// }
///
/// impl Run for Upper {
///     fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
///         let text = cx.get(Self::in_data)?;
///         cx.emit(Self::out_data, DataString(text.0.to_uppercase()));
///         Ok(())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is declared with `#[operator]` but does not implement `Run`",
    label = "this operator has no `run`",
    note = "add `impl Run for {Self} {{ fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {{ … }} }}`",
    note = "an async operator (`impl RunAsync`) is declared with `exec = async`"
)]
pub trait Run {
    /// Fires: read inputs from `cx` through the port handles (`cx.get(Self::in_data)`), emit
    /// outputs (`cx.emit(Self::out_data, v)`). An error (or a panic) applies nothing: the
    /// marking and the internal state stay as they were.
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError>;

    /// Compensation for side effects when a firing is undone by a backward step; `emitted` is
    /// what the firing emitted. Called *before* the internal state is restored to what it was
    /// before the firing (so it still sees the state the firing left). The restoration itself
    /// is automatic. Default: nothing to compensate.
    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        let _ = emitted;
    }

    /// Which inputs a firing consumes, given the input states. Default: every NEW input
    /// (SPEC §4.4); a Merge consumes only the first ([`InputSet::first_new`]).
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// Checks an instance built from `.cm` params, beyond each param's type (`overlap < size`,
    /// say). Called by the catalogue's factory. Default: every instance is valid.
    fn validate(&self) -> Result<(), crate::catalogue::ParamError> {
        Ok(())
    }

    /// The finite control state the operator declares to the verifier (SPEC §8); see
    /// [`Operator::control`]. Default: none.
    fn control(&self) -> Option<&dyn crate::verify::FiniteControl> {
        None
    }
}

/// The firing rule of an operator declared with `firing = custom` (SPEC §3.1). It may read the
/// operator's own internal state.
///
/// ```
/// use cameleon::prelude::*;
///
/// /// Passes `in_data` through once `in_go` has been seen, even if `in_go` is OLD.
/// #[operator(id = "latch", label = "Latch", firing = custom)]
/// pub struct Latch {
///     #[input] in_data: In<DataString>,
///     #[input] in_go: In<DataBool>,
///     #[output] out_data: Out<DataString>,
/// }
///
/// impl CanFire for Latch {
///     fn can_fire(&self, e: &Enabling<'_>) -> bool {
///         e.inputs[0] == ConnState::New && e.inputs[1] != ConnState::Empty
///     }
/// }
///
/// impl Run for Latch {
///     fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
///         cx.forward(Self::in_data, Self::out_data)
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` declares `firing = custom` but does not implement `CanFire`",
    label = "`firing = custom` needs a firing rule",
    note = "add `impl CanFire for {Self} {{ fn can_fire(&self, e: &Enabling<'_>) -> bool {{ … }} }}`, or pick a built-in policy: `firing = any | all | any_no_guard | source`"
)]
pub trait CanFire {
    /// Whether the operator may fire, given its input and output states. The engine adds
    /// back-pressure on top (SPEC §3.2).
    fn can_fire(&self, e: &Enabling<'_>) -> bool;
}

/// What a firing emitted, seen through operator type `O`'s output handles (for
/// [`Run::rollback`]).
pub struct Emitted<'a, O: ?Sized> {
    items: &'a [(u16, Value)],
    _op: PhantomData<fn(&O)>,
}

impl<'a, O: ?Sized> Emitted<'a, O> {
    /// A view of `(output port index, value)` pairs.
    pub fn new(items: &'a [(u16, Value)]) -> Self {
        Emitted {
            items,
            _op: PhantomData,
        }
    }

    /// The value emitted on `port`, if any.
    pub fn value<T: ?Sized>(&self, port: OutPort<O, T>) -> Option<&'a Value> {
        self.items
            .iter()
            .find(|(i, _)| *i == port.index)
            .map(|(_, v)| v)
    }

    /// The value emitted on `port` as a `T`, if any.
    pub fn get<T: DataType>(&self, port: OutPort<O, T>) -> Option<&'a T> {
        self.value(port)?.downcast_ref()
    }

    /// Every `(output port index, value)` pair, in emission order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &'a Value)> + '_ {
        self.items.iter().map(|(i, v)| (*i as usize, v))
    }

    /// Number of values emitted.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the firing emitted nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<O: ?Sized> fmt::Debug for Emitted<'_, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

impl<O: ?Sized> Clone for Emitted<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O: ?Sized> Copy for Emitted<'_, O> {}
