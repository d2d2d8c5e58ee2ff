//! The user-facing traits `#[operator]` builds on: [`Run`], [`RunAsync`], [`CanFire`], and
//! what a firing emitted ([`Emitted`]).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

#[cfg(doc)]
use super::Operator;
use super::{FiniteControl, Firing, InputSet, OpError, OpFuture, OpSpec, OutPort, ParamError};
use crate::connection::ConnState;
use crate::policy::Enabling;
use crate::types::{DataType, Value};

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

    /// Re-applies side effects when a recorded firing is replayed instead of run (a forward
    /// step after a backward one, a resumed run): the counterpart of
    /// [`rollback`](Self::rollback). `emitted` is what the firing emitted. Called *after* the
    /// internal state is restored to what the firing left (so it sees that state). The
    /// restoration itself is automatic. Default: nothing to re-apply.
    fn replay(&mut self, emitted: &Emitted<'_, Self>) {
        let _ = emitted;
    }

    /// Which inputs a firing consumes, given the input states. Default: every NEW input
    /// (docs/semantics.md §4.4); a Merge consumes only the first ([`InputSet::first_new`]).
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// Checks an instance built from `.cm` params, beyond each param's type (`overlap < size`,
    /// say). Called by the catalogue's factory. Default: every instance is valid.
    fn validate(&self) -> Result<(), ParamError> {
        Ok(())
    }

    /// The finite control state the operator declares to the verifier (docs/semantics.md §8); see
    /// [`Operator::control`]. Default: none.
    fn control(&self) -> Option<&dyn FiniteControl> {
        None
    }

    /// This instance's spec, refined from the one its declaration gives, when the instance's
    /// params change it: a port's type, the firing policy, the emission sets, a cancellation
    /// (a `join` with a `quorum` fires by a rule of its own, docs/semantics.md §10.5). Called
    /// once, when the operator is added to a net. Default: the declared spec.
    ///
    /// A refined policy of `custom` fires by the operator's declared
    /// [`control`](Self::control) ([`Operator::can_fire`]'s default).
    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        spec
    }

    /// The tool the operator calls on each firing, when its params name one (see
    /// [`Operator::calls_tool`]: under a policy that lists it in `approve:`, the operator asks
    /// for a person's approval first). Default: none.
    fn calls_tool(&self) -> Option<&str> {
        None
    }

    /// Whether the operator holds the answer its next firing needs (see
    /// [`Operator::has_answer`]). Default: `true`.
    fn has_answer(&self) -> bool {
        true
    }

    /// Receives an answer to the operator's question (see [`Operator::answer`]); keep it in an
    /// internal-state field. Default: ignored.
    fn answer(&mut self, value: Value) {
        let _ = value;
    }
}

/// The firing rule of an operator declared with `firing = custom` (docs/semantics.md §3.1). It may read the
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
    /// back-pressure on top (docs/semantics.md §3.2).
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

    /// The capabilities of the run whose backward step or replay calls
    /// [`Run::rollback`] or [`Run::replay`] — the generation the engine holds now, which on a
    /// resumed run is the one pinned when it resumed: where an operator that wrote into a
    /// memory finds it to take its writes out, or to put them back (docs/semantics.md §5.8).
    /// Set for operators with internal state (what they wrote is recorded there); for a
    /// stateless operator, and outside a backward step or a replay,
    /// `<dyn Capabilities>::none()`.
    pub fn capabilities(&self) -> std::sync::Arc<dyn super::capability::Capabilities> {
        super::capability::applying_now()
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

/// The user-facing form of an **async** operator: the counterpart of [`Run`] whose `run` is an
/// `async fn`. In parallel mode (and in [`Cvm::step_async`](crate::Cvm::step_async)) the engine
/// awaits it concurrently with the step's other firings; a timeout or a cancellation drops it.
/// Sequential mode's synchronous API drives it to completion with
/// [`block_on`](crate::runtime::block_on).
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

    /// Re-application of side effects when a firing is replayed (see [`Run::replay`]).
    fn replay(&mut self, emitted: &Emitted<'_, Self>) {
        let _ = emitted;
    }

    /// Which inputs a firing consumes (see [`Run::consumes`]). Default: every NEW input.
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// Checks an instance built from `.cm` params (see [`Run::validate`]).
    fn validate(&self) -> Result<(), ParamError> {
        Ok(())
    }

    /// The finite control state the operator declares to the verifier (see [`Run::control`]).
    /// Default: none.
    fn control(&self) -> Option<&dyn FiniteControl> {
        None
    }

    /// This instance's spec, refined from its declaration's (see [`Run::refine_spec`]).
    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        spec
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
/// on the engine's runtime (see [`block_on`](crate::runtime::block_on)).
pub fn run_async_blocking<O: RunAsync>(op: &mut O, cx: &mut Firing<'_>) -> Result<(), OpError> {
    crate::runtime::block_on(run_async_boxed(op, cx))
}
