//! `std-ai`: language models, embeddings and retrieval — [`Llm`] (`llm`), [`LlmJson`]
//! (`llm_json`), [`Embed`] (`embed`), [`Index`] (`index`), [`Retrieve`] (`retrieve`) and
//! [`Agent`] (`agent`).
//!
//! They call models by name (`model`, `memory` params; `default` unless said otherwise) in the
//! run's capabilities ([`Firing::capabilities`], the generation the run pinned when it
//! started); with nothing configured those are the offline `extractive` chat model, `hash`
//! embedder and `flat` memory ([`models`](crate::models)), so every pipeline runs without a
//! network. A name the generation does not have fails the firing with an error naming it, the
//! generation, and where to configure it. `cameleon run` pins a generation for every run; in
//! code, build the engine from a [`Runtime`](crate::capabilities::Runtime) —
//! `Runtime::default().cvm(net, dir)` for the offline defaults. An engine built with
//! `Cvm::new` alone sees generation 0, which has the offline defaults named `default` only (one
//! memory per engine) and no tool.
//!
//! **History.** Each firing keeps what it asked and what it was answered — the requests, the
//! replies, the tool calls and results, the token usage — in its internal state
//! ([`ModelLog`]), which the history records with the firing. A replay (a forward step after a
//! backward one) re-applies that record and the emitted values without calling any model; a
//! backward step restores the previous record. `index` also undoes its writes to the memory on
//! a backward step and redoes them on a replay, so the memory always holds what the applied
//! history indexed; it reaches the memory through the capabilities the engine holds while it
//! applies the step ([`Emitted::capabilities`](crate::operator::Emitted::capabilities)), and a resumed
//! journaled run gets its index back the same way (docs/semantics.md §5.8).

mod agent;
mod llm;
mod retrieval;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use agent::Agent;
pub use llm::{Llm, LlmJson};
pub use retrieval::{Embed, Index, IndexLog, Retrieve};

#[cfg(doc)]
use crate::operator::Firing;
use crate::operator::capability::{
    CapabilityError, ChatModel, ChatReply, ChatRequest, ToolCall, ToolResult, Usage,
};
use crate::operator::{OpError, OpState, Partials};

// The params that name capabilities, for checks before a run (`cameleon check`).
macro_rules! names_capability {
    ($($op:literal . $param:literal => $named:ident),* $(,)?) => {$(
        crate::submit_capability_param!(crate::operator::capability::CapabilityParam {
            op_type: $op,
            param: $param,
            names: crate::operator::capability::Named::$named,
        });
    )*};
}

names_capability!(
    "llm"."model" => Chat,
    "llm_json"."model" => Chat,
    "agent"."model" => Chat,
    "agent"."tools" => Tool,
    "embed"."model" => Embedder,
    "index"."memory" => Memory,
    "retrieve"."memory" => Memory,
    "retrieve"."model" => Embedder,
);

// An agent's firings have the effects of the tools it may call.
crate::submit_operator_effects!(crate::operator::capability::OperatorEffects {
    op_type: "agent",
    effects: crate::operator::capability::OpEffects::OfTools,
});

/// Asks `model` (chat model `name` of the run); while the firing's output is watched
/// ([`Partials::listening`]) the answer streams in, each piece shown as the firing's partial
/// output (docs/semantics.md §4.12). The call is a `tracing` span named after the OpenTelemetry
/// GenAI conventions (`chat {model}`, `gen_ai.*` attributes, docs/cli.md `--otlp`).
async fn ask(
    model: &dyn ChatModel,
    name: &str,
    req: &ChatRequest,
    partials: &Partials,
) -> Result<ChatReply, CapabilityError> {
    let span = chat_span(model, name, req);
    let call = async {
        if partials.listening() {
            let show = |piece: &str| partials.send(piece);
            model.chat_streamed(req, &show).await
        } else {
            model.chat(req).await
        }
    };
    let reply = tracing::Instrument::instrument(call, span.clone()).await;
    if !span.is_disabled() {
        match &reply {
            Ok(r) => {
                if let Some(u) = r.usage {
                    span.record("gen_ai.usage.input_tokens", u.prompt_tokens);
                    span.record("gen_ai.usage.output_tokens", u.completion_tokens);
                }
                let why = if r.tool_calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                };
                span.record("gen_ai.response.finish_reasons", why);
            }
            Err(e) => {
                span.record(
                    "error.type",
                    if e.retryable { "retryable" } else { "failed" },
                );
            }
        }
    }
    reply
}

/// The span of one chat call: OpenTelemetry's GenAI attributes (`gen_ai.operation.name`
/// `chat`, the provider, the requested model and its settings; the usage recorded when the
/// answer comes). Never the messages or a key.
fn chat_span(model: &dyn ChatModel, name: &str, req: &ChatRequest) -> tracing::Span {
    use tracing::field::Empty;
    let requested = model.model_name().unwrap_or(name);
    tracing::info_span!(
        target: "cameleon::models",
        "chat",
        "otel.name" = %format_args!("chat {requested}"),
        "otel.kind" = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = model.kind(),
        "gen_ai.request.model" = requested,
        "gen_ai.request.temperature" = req.temperature.map(f64::from),
        "gen_ai.request.max_tokens" = req.max_tokens,
        "cameleon.model" = name,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "error.type" = Empty,
    )
}

/// A provider's error as the firing's error, naming what was called.
fn call_error(what: &str, name: &str, kind: &str, e: CapabilityError) -> OpError {
    OpError::new(format!("{what} `{name}` ({kind}): {e}"))
}

/// Refuses a chat model that is not generative ([`ChatModel::generative`]) for a firing that
/// needs one: `needs` says what the operator asks of it ("fill a JSON Schema").
fn require_generative(model: &dyn ChatModel, name: &str, needs: &str) -> Result<(), OpError> {
    if model.generative() {
        return Ok(());
    }
    Err(OpError::new(format!(
        "chat model `{name}` ({}) is not generative: it only quotes sentences of its context, \
         so it cannot {needs} without inventing; {}",
        model.kind(),
        crate::models::CONFIGURE_GENERATIVE
    )))
}

/// What one firing asked models and tools and what they answered, in order, with the tokens
/// used. An operator's internal state holds the last firing's (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FiringLog {
    /// The calls, in the order they were made.
    pub calls: Vec<ModelCall>,
    /// Tokens used by the firing, summed over the calls that reported usage (`None` when none
    /// did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One call a firing made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelCall {
    /// A chat model was asked.
    Chat {
        /// Its name in the model set.
        model: String,
        /// Its kind (`openai`, `extractive`).
        kind: String,
        /// The request.
        request: ChatRequest,
        /// The reply.
        reply: ChatReply,
        /// Whether the model is not generative ([`ChatModel::generative`]), so the reply
        /// quotes the request's context rather than answers it in words of its own.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        quoted: bool,
    },
    /// An embedder turned texts into vectors (the texts and vectors are the firing's input and
    /// output values, recorded by the history already).
    Embed {
        /// Its name.
        model: String,
        /// Its kind (`openai`, `hash`).
        kind: String,
        /// How many texts.
        texts: usize,
        /// The vectors' length.
        dim: usize,
        /// Tokens, when the provider reports them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// A memory was searched.
    Search {
        /// Its name.
        memory: String,
        /// How many results were asked for.
        k: usize,
        /// The ids found and their similarity, best first.
        hits: Vec<(String, f32)>,
    },
    /// A tool was called through the gate.
    Tool {
        /// The call.
        call: ToolCall,
        /// Its result.
        result: ToolResult,
    },
}

impl FiringLog {
    pub(crate) fn push(&mut self, call: ModelCall) {
        let usage = match &call {
            ModelCall::Chat { reply, .. } => reply.usage,
            ModelCall::Embed { usage, .. } => *usage,
            // A net offered as a tool: what its run's model requests used.
            ModelCall::Tool { result, .. } => result.meta.usage,
            _ => None,
        };
        if let Some(u) = usage {
            let total = self.usage.get_or_insert_with(Usage::default);
            total.prompt_tokens += u.prompt_tokens;
            total.completion_tokens += u.completion_tokens;
        }
        self.calls.push(call);
    }
}

/// The tokens a firing used, from the internal state its operator saved after it
/// ([`History::state_after`](crate::history::History::state_after)): `Some` for a firing of a `std-ai`
/// operator whose provider reported usage.
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Llm, Sink, Source};
///
/// let mut b = Net::builder("ask");
/// b.add("q", Source::new("Chameleons change colour. Why?"));
/// b.add("ask", Llm::new());
/// b.add("out", Sink::new());
/// b.connect("q.out_data", "ask.in_prompt").connect("ask.out_text", "out.in_data");
/// // No source: the built-in defaults (chat `default` is `extractive`).
/// let rt = cameleon::capabilities::Runtime::default();
/// let mut cvm = rt.cvm(b.build()?, ".").build();
/// cvm.run()?;
/// let usage = cvm.history().state_after(2, 0).and_then(cameleon::ops::ai::usage_in);
/// assert_eq!(usage.map(|u| u.completion_tokens), Some(3)); // the extractive model counts words
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn usage_in(state: &OpState) -> Option<Usage> {
    log_in(state).and_then(ModelLog::usage)
}

/// The record of what a firing asked models and tools, from the internal state its operator
/// saved after it ([`History::state_after`](crate::history::History::state_after)): a `std-ai`
/// operator's, or a `tool` operator's (its one call, a net-tool's inner run in the result's
/// `meta.run`). `None` for any other operator.
pub fn log_in(state: &OpState) -> Option<&ModelLog> {
    match state.get::<(ModelLog,)>() {
        Some((log,)) => Some(log),
        // `tool`: its pending approval, then its record.
        None => state.get::<(Option<bool>, ModelLog)>().map(|(_, log)| log),
    }
}

/// The chat models a firing's answers only quote their context from (models that are not
/// [generative](ChatModel::generative), such as the offline `extractive` one), from the state
/// its operator saved after it: `(model name, kind)` per such call, in order; empty for any
/// other firing. What `cameleon run` reports as quoted answers.
pub fn quoted_in(state: &OpState) -> Vec<(String, String)> {
    let Some(log) = log_in(state) else {
        return Vec::new();
    };
    log.last()
        .map(|l| {
            l.calls
                .iter()
                .filter_map(|c| match c {
                    ModelCall::Chat {
                        model,
                        kind,
                        quoted: true,
                        ..
                    } => Some((model.clone(), kind.clone())),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The record of an operator's last firing (its internal state): shared, so saving it before
/// and after every firing copies a pointer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelLog(Option<Arc<FiringLog>>);

impl ModelLog {
    /// The last firing's record, if the operator fired.
    pub fn last(&self) -> Option<&FiringLog> {
        self.0.as_deref()
    }

    /// The tokens the last firing used, if a provider reported them.
    pub fn usage(&self) -> Option<Usage> {
        self.last().and_then(|l| l.usage)
    }

    pub(crate) fn set(&mut self, log: FiringLog) {
        self.0 = Some(Arc::new(log));
    }
}
