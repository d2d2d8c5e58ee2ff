//! The operator contract (Petri transitions): what an operator declares, its firing rule, `run`
//! and `rollback` (docs/semantics.md §3–§5).
//!
//! [`Operator`] is the object-safe trait the engine calls. Users normally declare operators with
//! `#[operator]` and implement [`Run`]; the macro writes the `Operator` glue.
//!
//! | module | holds |
//! |---|---|
//! | `spec` | [`OpSpec`], [`PortSpec`], [`TypeRef`]: ports, types, policy, emission sets |
//! | `settings` | [`Execution`], [`OpSettings`], [`Retry`] |
//! | `state` | [`OpState`], [`InputSet`] |
//! | `firing` | [`Firing`]: what `run` reads and emits |
//! | `ports` | typed port handles ([`InPort`], [`OutPort`], [`AnyInPort`]), field markers [`In`], [`Out`] |
//! | `typed` | [`Run`], [`RunAsync`], [`CanFire`], [`Emitted`] |
//! | `control` | [`FiniteControl`]: finite control state declared to the verifier |
//! | `question` | [`Question`]: what an operator waiting for an outside value asks |
//! | `error` | [`OpError`], [`ParamError`] |
//! | [`capability`] | what a firing receives: [`Capabilities`](capability::Capabilities) (models, embedders, memories, tools, observer) |

use std::any::Any as StdAny;

use crate::connection::ConnState;
use crate::policy::Enabling;
use crate::types::Value;

pub mod capability;
mod control;
mod error;
pub(crate) mod firing;
mod partial;
mod ports;
mod question;
mod settings;
mod spec;
mod state;
mod typed;

pub use control::FiniteControl;
pub use error::{OpError, ParamError};
pub use firing::{DetachedInputs, Firing, Untyped};
pub(crate) use firing::{FiringInfo, FiringParts, InputSlot};
pub(crate) use partial::PartialSink;
pub use partial::Partials;
pub use ports::{AnyInPort, In, InPort, InputHandle, Out, OutPort};
pub use question::{AnswerError, Question};
pub use settings::{Execution, OpFuture, OpSettings, Retry};
pub use spec::{Cancels, OpSpec, PortSpec, Region, TypeRef};
pub use state::{InputSet, OpState, StateCodec, StateError, read_state};
pub use typed::{CanFire, Emitted, Run, RunAsync, run_async_blocking, run_async_boxed};

/// An operator's parameters as written in `.cm` `params:` (declaration order kept).
pub type Params = serde_json::Map<String, serde_json::Value>;

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

    /// The firing rule of an operator whose policy is [`Policy::Custom`](crate::policy::Policy::Custom)
    /// (docs/semantics.md §3.1). May read the operator's own internal state.
    ///
    /// The engine and the verifier evaluate a built-in policy (`Any`, `All`, `AnyNoGuard`,
    /// `Source`) themselves and call this method only for `Custom`: declare `Custom` in
    /// [`spec`](Self::spec) to give an operator a rule of its own. The default applies the
    /// declared policy, for callers that ask an operator directly.
    ///
    /// An operator whose policy is `Custom` and which declares a [`FiniteControl`] fires, by
    /// default, by its control's rule in its current control state
    /// ([`FiniteControl::can_fire`] at [`FiniteControl::initial`]): the engine and the verifier
    /// then share one rule (docs/semantics.md §10.9).
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        match self.control() {
            Some(c) if e.policy == crate::policy::Policy::Custom => c.can_fire(c.initial(), e),
            _ => e.policy_allows(),
        }
    }

    /// A new instance of this operator in its initial state, as built from its params, for a
    /// sub-net run on each firing of its parent (docs/semantics.md §10.2). Default: `None`, and
    /// the instance is rebuilt from the catalogue with its [`params`](Self::params).
    /// `#[operator]` writes it for an operator without params or context: its internal state
    /// at its initial value, checked by `validate` as the catalogue's build checks it.
    fn fresh(&self) -> Option<Box<dyn Operator>> {
        None
    }

    /// Which inputs a firing consumes, given the input states. Default: every NEW input.
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        InputSet::new_inputs(inputs)
    }

    /// The finite control state this operator declares to the verifier (docs/semantics.md §8), if its firing
    /// rule or its emissions depend on an internal state that is finite and independent of data
    /// (a counter modulo n, a phase). Default: none — the verifier then asks
    /// [`can_fire`](Self::can_fire) on the operator as built and explores every declared emission
    /// set. See [`FiniteControl`].
    fn control(&self) -> Option<&dyn FiniteControl> {
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

    /// The question this operator asks before each firing, if it needs a value from outside the
    /// net — a person's answer, an external event (docs/semantics.md §6.1). Default: none.
    ///
    /// While such an operator's firing rule holds but it [has no answer](Self::has_answer),
    /// the engine does not fire it; a run that can only go on through it stops in `WAITING`
    /// until [`Cvm::provide`](crate::Cvm::provide) hands it an answer. Asked once when the
    /// operator is added to a net: the answer is what changes, not the question.
    fn question(&self) -> Option<Question> {
        None
    }

    /// Whether the operator holds an answer to its [question](Self::question) now. Default:
    /// `true` (an operator without a question never waits).
    fn has_answer(&self) -> bool {
        true
    }

    /// Receives an answer to its [question](Self::question), already checked to be of the
    /// question's type; the next firing uses it. Keep it in the internal state
    /// ([`save_state`](Self::save_state)), so that a backward step gives the answer back and a
    /// replay never asks again. Default: ignored.
    fn answer(&mut self, value: Value) {
        let _ = value;
    }

    /// The tool this operator calls through the run's tool gate on each firing, when its params
    /// name one (the standard `tool` operator's `name`). Default: none.
    ///
    /// When the net's `tools:` policy lists that tool under `approve:`, the engine gives the
    /// operator a `DataBool` question — `allow tool `NAME` with args …?` — asked before each
    /// firing (docs/semantics.md §6.1): the operator waits, like an `ask`, until a person's
    /// answer reaches it through [`answer`](Self::answer), and must say so through
    /// [`has_answer`](Self::has_answer) and use the answer in its next firing (`true`: call
    /// the tool, marking the call approved; `false`: do not call it, the result is `denied`).
    fn calls_tool(&self) -> Option<&str> {
        None
    }

    /// Whether a firing of this operator may be replaced by a recorded firing with the same key
    /// when a run reuses an earlier one (docs/semantics.md §5.9). Default: `true` (only
    /// behavioral operators are ever reused; one that asks a question never is). An operator
    /// type declared with `#[operator]` opts out with `cameleon::submit_not_reusable!("id")`.
    fn reusable(&self) -> bool {
        true
    }

    /// The operator type's default timeout and retries; a net's instance settings override
    /// them field by field. Default: none.
    fn settings(&self) -> OpSettings {
        OpSettings::NONE
    }

    /// A copy of the internal state, taken before and after each firing of a stateful operator,
    /// so a backward step restores it and a replay re-applies it. Default: `None` (stateless).
    ///
    /// A journaled run also writes it to disk: return [`OpState::serde`] (what `#[operator]`
    /// generates) for the operator to be journaled; a state saved with [`OpState::new`] makes
    /// starting a journaled run an error naming the operator.
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
