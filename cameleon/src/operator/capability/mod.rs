//! What an operator receives instead of building it: the **capabilities** of the run — chat
//! models, embedders, memories, tools (through the tool gate) and an observer.
//!
//! An operator never constructs its own model client, tool set or store. The runtime
//! ([`cameleon::capabilities`](crate::capabilities)) assembles them from sources (code, a
//! `cameleon.yaml` file, the environment) into an immutable, numbered *generation*; a run pins
//! the generation current when it starts and keeps it to its end, so a reload never disturbs a
//! run in flight. A firing reaches them through [`Firing::capabilities`](super::Firing::capabilities):
//!
//! ```
//! use cameleon::prelude::*;
//!
//! /// Asks the `default` chat model to summarise its input.
//! #[operator(id = "doc_summarise", label = "Summarise", family = behavioral)]
//! pub struct Summarise {
//!     #[input]
//!     in_text: In<DataString>,
//!     #[output]
//!     out_text: Out<DataString>,
//! }
//!
//! impl Run for Summarise {
//!     fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
//!         let text = cx.get(Self::in_text)?.0.clone();
//!         // A missing model is an error naming it, the generation, and where to configure it.
//!         let model = cx.capabilities().chat("default")?;
//!         let request = cameleon::operator::capability::ChatRequest::prompt(format!("Summarise: {text}"));
//!         let reply = cameleon::runtime::block_on(model.chat(&request)).map_err(OpError::from_err)?;
//!         cx.emit(Self::out_text, DataString(reply.text));
//!         Ok(())
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! This module is the contract: the traits a provider implements ([`ChatModel`],
//! [`Embedder`], [`Memory`], [`Telemetry`]), the tool call and result shapes
//! ([`ToolCall`], [`ToolResult`]), and [`Capabilities`], the view of one run. Implementations,
//! registries, configuration files and the tool gate live above, in
//! [`capabilities`](crate::capabilities) and [`tools`](crate::tools).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use super::OpError;

mod budget;
mod effects;
mod models;
mod names;
mod tool;

pub use budget::{Budget, Meter, MeteredChat, MeteredEmbedder, Price, Spent, Usd};
pub use effects::{OpEffects, OperatorEffects, operator_effects};
pub use models::{
    ChatMessage, ChatModel, ChatReply, ChatRequest, Embedded, Embedder, Memory, MemoryHit,
    MemoryItem, Role, ToolRequest, Usage,
};
pub use names::{CapabilityParam, Named, capability_params};
pub use tool::{
    AskFirst, Effect, ToolAccess, ToolCall, ToolHandle, ToolManifest, ToolMeta, ToolResult,
    ToolStatus,
};

/// The future of a capability call.
pub type CapFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a call to a model, embedder or memory failed. `Display` is the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CapabilityError {
    /// What went wrong (no secret ever: an API key is never part of a message).
    pub message: String,
    /// Whether trying again later may succeed (a 429, a 5xx, a timeout).
    pub retryable: bool,
}

impl CapabilityError {
    /// A failure that trying again will not fix.
    pub fn new(message: impl Into<String>) -> Self {
        CapabilityError {
            message: message.into(),
            retryable: false,
        }
    }

    /// A failure that may pass if tried again.
    pub fn retryable(message: impl Into<String>) -> Self {
        CapabilityError {
            message: message.into(),
            retryable: true,
        }
    }
}

/// The observer of a generation: where operators report what the engine cannot see (token
/// usage, a model's latency, a cache hit). The engine itself emits a `tracing` span per run,
/// step and firing; the default observer turns each record into a `tracing` event inside the
/// current firing's span, so every subscriber sees both.
pub trait Telemetry: Send + Sync + fmt::Debug {
    /// Records `value` under `name` for the firing of operator instance `op` at `step`.
    fn record(&self, op: &str, step: u32, name: &str, value: &serde_json::Value);
}

/// The default [`Telemetry`]: a `tracing` event (target `cameleon::telemetry`, level INFO) per
/// record.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingTelemetry;

impl Telemetry for TracingTelemetry {
    fn record(&self, op: &str, step: u32, name: &str, value: &serde_json::Value) {
        tracing::info!(target: "cameleon::telemetry", op, step, name, value = %value);
    }
}

/// What one run sees of its generation: the models, embedders, memories and tools it may use,
/// and the observer. [`Firing::capabilities`](super::Firing::capabilities) returns it.
///
/// Implemented by the runtime's generations ([`capabilities::RunCapabilities`](crate::capabilities::RunCapabilities));
/// a run built without any sees `<dyn Capabilities>::none()`, where every lookup is an error that
/// says how to configure one.
pub trait Capabilities: Send + Sync + fmt::Debug {
    /// The generation number (1, 2, … ; 0 for `<dyn Capabilities>::none()`).
    fn generation(&self) -> u64;

    /// The chat model registered as `name` (`default` unless an operator's params say
    /// otherwise). A missing one is an error naming it, the generation and where to configure
    /// it.
    fn chat(&self, name: &str) -> Result<Arc<dyn ChatModel>, OpError>;

    /// The embedder registered as `name`.
    fn embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, OpError>;

    /// The memory (vector store) registered as `name`. Two lookups of one name in one
    /// generation give the same store.
    fn memory(&self, name: &str) -> Result<Arc<dyn Memory>, OpError>;

    /// The tool gate of this run: every tool call goes through it, under the net's `tools:`
    /// policy.
    fn tools(&self) -> &dyn ToolAccess;

    /// The observer.
    fn observer(&self) -> &dyn Telemetry;

    /// What fires the `placement: remote` instances of the nets this run starts inside its
    /// operators (`subnet`, `map`), if the run has satellites: a `net::Placing` (the net layer
    /// defines it; this contract only carries it). Default: none (they fire here).
    fn placement(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        None
    }

    /// The run's [`Meter`]: its token and cost budget and what it spent, shared with the runs
    /// of its sub-nets (docs/semantics.md §4.7). The chat models and embedders this view hands
    /// out check it before every request. Default: none (nothing is metered).
    fn meter(&self) -> Option<&Arc<Meter>> {
        None
    }

    /// A handle on tool `name`, whose calls go through the gate. A tool the generation does not
    /// have is an error (did-you-mean included); a tool the net's policy does not allow is
    /// still handed out, and each call returns `denied` without running it.
    fn tool<'a>(&'a self, name: &'a str) -> Result<ToolHandle<'a>, OpError> {
        let gate = self.tools();
        if gate.manifest(name).is_none() {
            let names = gate.names();
            let hint = match crate::util::did_you_mean(name, names.iter().map(String::as_str)) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "`cameleon tools` lists the tools of this build".to_owned(),
            };
            return Err(OpError::new(format!(
                "no tool `{name}` in capability generation {} ({hint})",
                self.generation()
            )));
        }
        Ok(ToolHandle::new(gate, name))
    }
}

impl dyn Capabilities {
    /// Capabilities of a run built without any (`Cvm::new`): generation 0, which has the
    /// offline defaults only — chat `default` (`extractive`), embedder `default` (`hash`) and
    /// memory `default` (`flat`, one store per engine), the chat model and embedder also under
    /// their kinds' names — and a gate that denies every tool.
    /// Each call gives a fresh generation 0, so two engines never share a memory.
    pub fn none() -> Arc<dyn Capabilities> {
        Arc::new(NoCapabilities::default())
    }
}

/// The offline models generation 0 offers under the name `default` (see
/// `<dyn Capabilities>::none()`). The operator contract cannot name the models, which live
/// above it: the `capabilities` module submits the one value of this type.
#[doc(hidden)]
#[derive(Debug)]
pub struct OfflineDefaults {
    /// Builds the `default` chat model.
    pub chat: fn() -> Arc<dyn ChatModel>,
    /// Its kind, which names it too (`extractive`).
    pub chat_kind: &'static str,
    /// Builds the `default` embedder.
    pub embedder: fn() -> Arc<dyn Embedder>,
    /// Its kind, which names it too (`hash`).
    pub embedder_kind: &'static str,
    /// Builds the `default` memory.
    pub memory: fn() -> Arc<dyn Memory>,
}

inventory::collect!(OfflineDefaults);

fn offline_defaults() -> Option<&'static OfflineDefaults> {
    inventory::iter::<OfflineDefaults>.into_iter().next()
}

thread_local! {
    /// The capabilities of the run whose backward step or replay is being applied on this
    /// thread (see [`applying`]).
    static APPLYING: std::cell::RefCell<Option<Arc<dyn Capabilities>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` — an operator's `rollback` or `replay` — with `caps` as the capabilities that
/// [`Emitted::capabilities`](super::Emitted::capabilities) returns: how a backward step or a
/// replay reaches the run's memory to undo or redo what a firing wrote there
/// (docs/semantics.md §5.8). The engine calls it; the previous value is put back afterwards,
/// even if `f` panics.
pub(crate) fn applying<R>(caps: &Arc<dyn Capabilities>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn Capabilities>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            APPLYING.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = APPLYING.with(|c| c.borrow_mut().replace(Arc::clone(caps)));
    let _restore = Restore(prev);
    f()
}

/// [`applying`] for an operator with internal state, a plain call of `f` otherwise: only an
/// operator whose state is recorded can have written to a store of the run (docs/semantics.md
/// §5.8), and the scope costs a reference count and two thread-local writes per firing.
pub(crate) fn applying_if<R>(
    stateful: bool,
    caps: &Arc<dyn Capabilities>,
    f: impl FnOnce() -> R,
) -> R {
    if stateful { applying(caps, f) } else { f() }
}

/// The capabilities set by [`applying`], else `<dyn Capabilities>::none()`.
pub(crate) fn applying_now() -> Arc<dyn Capabilities> {
    APPLYING
        .with(|c| c.borrow().clone())
        .unwrap_or_else(<dyn Capabilities>::none)
}

/// See `<dyn Capabilities>::none()`: the offline defaults, each built on first use.
#[derive(Default)]
struct NoCapabilities {
    chat: OnceLock<Option<Arc<dyn ChatModel>>>,
    embedder: OnceLock<Option<Arc<dyn Embedder>>>,
    memory: OnceLock<Option<Arc<dyn Memory>>>,
}

impl fmt::Debug for NoCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NoCapabilities")
    }
}

const HOW_TO_CONFIGURE: &str = "this run was started without capabilities, and generation 0 \
    has only the offline defaults named `default` (chat `extractive`, embedder `hash`, memory \
    `flat`; the first two also under their own names) and no tool: run it with `cameleon run` \
    (which reads `cameleon.yaml` beside the .cm file, or `--capabilities FILE`), or build the \
    engine from a `cameleon::capabilities::Runtime`";

fn missing(what: &str, name: &str) -> OpError {
    OpError::new(format!(
        "no {what} `{name}` in capability generation 0 ({HOW_TO_CONFIGURE})"
    ))
}

/// The offline default of one kind, named `default` or `kind` (the kind's own name), built
/// once per generation 0.
fn default_of<T: ?Sized>(
    cell: &OnceLock<Option<Arc<T>>>,
    name: &str,
    kind: impl FnOnce(&'static OfflineDefaults) -> &'static str,
    what: &str,
    make: impl FnOnce(&'static OfflineDefaults) -> Arc<T>,
) -> Result<Arc<T>, OpError> {
    let defaults = offline_defaults().ok_or_else(|| missing(what, name))?;
    if name != "default" && name != kind(defaults) {
        return Err(missing(what, name));
    }
    cell.get_or_init(|| Some(make(defaults)))
        .clone()
        .ok_or_else(|| missing(what, name))
}

impl Capabilities for NoCapabilities {
    fn generation(&self) -> u64 {
        0
    }
    fn chat(&self, name: &str) -> Result<Arc<dyn ChatModel>, OpError> {
        default_of(
            &self.chat,
            name,
            |d| d.chat_kind,
            "chat model",
            |d| (d.chat)(),
        )
    }
    fn embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, OpError> {
        default_of(
            &self.embedder,
            name,
            |d| d.embedder_kind,
            "embedder",
            |d| (d.embedder)(),
        )
    }
    fn memory(&self, name: &str) -> Result<Arc<dyn Memory>, OpError> {
        default_of(
            &self.memory,
            name,
            |_| "default",
            "memory",
            |d| (d.memory)(),
        )
    }
    fn tools(&self) -> &dyn ToolAccess {
        &NoTools
    }
    fn observer(&self) -> &dyn Telemetry {
        &TracingTelemetry
    }
}

/// The gate of [`NoCapabilities`]: knows no tool, denies every call.
#[derive(Debug)]
struct NoTools;

impl ToolAccess for NoTools {
    fn manifest(&self, _name: &str) -> Option<ToolManifest> {
        None
    }
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
    fn call<'a>(&'a self, call: ToolCall) -> CapFuture<'a, ToolResult> {
        Box::pin(std::future::ready(self.call_blocking(call)))
    }
    fn call_blocking(&self, call: ToolCall) -> ToolResult {
        ToolResult::denied(
            &call.tool,
            format!("tool `{}` is denied: {HOW_TO_CONFIGURE}", call.tool),
        )
    }
}
