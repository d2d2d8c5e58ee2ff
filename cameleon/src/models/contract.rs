//! The contract between operators and the models they call: [`ChatModel`], [`Embedder`],
//! [`Memory`], the tool gate as a run sees it ([`ToolAccess`]), and the shapes they exchange.
//! Providers (an OpenAI-compatible endpoint, the offline algorithms) implement these traits;
//! the `std-ai` operators call them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

/// The future of a model, embedder, memory or tool call.
pub type CapFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Vectors, one per text, and the tokens the provider says it used.
pub type Embedded = (Vec<Vec<f32>>, Option<Usage>);

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

/// Who says a [`ChatMessage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// The user (or the pipeline speaking for them).
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering the assistant's [`ToolRequest`] with the same id.
    Tool,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
    /// The tools an assistant message asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolRequest>,
    /// For a [`Role::Tool`] message: the id of the request it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A model asking for a tool call (OpenAI's `tool_calls`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The id the tool's answer refers to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub args: serde_json::Value,
}

/// What a chat model is asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Passages the answer should draw on (retrieved chunks); a provider places them in the
    /// prompt its own way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Most tokens in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Tools the model may ask for (their manifests, as the gate gives them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolManifest>,
    /// A JSON Schema the answer must satisfy (structured output), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<serde_json::Value>,
}

impl ChatRequest {
    /// A request of one user message.
    pub fn prompt(text: impl Into<String>) -> Self {
        ChatRequest {
            messages: vec![ChatMessage::new(Role::User, text)],
            ..ChatRequest::default()
        }
    }
}

/// Tokens a call used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

/// A chat model's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatReply {
    /// The text (empty when the model only asks for tools).
    pub text: String,
    /// Tools the model asks for before it answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolRequest>,
    /// Token usage, when the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// A chat model: answers a conversation.
pub trait ChatModel: Send + Sync + fmt::Debug {
    /// The provider kind (`openai`, `extractive`, …), for messages.
    fn kind(&self) -> &str;

    /// Answers `request`.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>>;
}

/// An embedder: turns texts into vectors.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// The provider kind (`openai`, `hash`, …).
    fn kind(&self) -> &str;

    /// The length of every vector it returns.
    fn dim(&self) -> usize;

    /// One vector per text, in order.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Vec<Vec<f32>>, CapabilityError>>;

    /// One vector per text, in order, and the tokens the provider says it used (`None` when it
    /// does not say). Default: [`embed`](Self::embed), no usage.
    fn embed_with_usage<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Embedded, CapabilityError>> {
        Box::pin(async move { self.embed(texts).await.map(|v| (v, None)) })
    }
}

/// An item of a [`Memory`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Its id, unique in the memory (adding an id again replaces the item).
    pub id: String,
    /// The text it stands for.
    pub text: String,
    /// Its embedding.
    pub vector: Vec<f32>,
    /// Anything else (source, position…).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub meta: serde_json::Value,
}

/// A search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// The item found.
    pub item: MemoryItem,
    /// Its similarity to the query (higher is closer).
    pub score: f32,
}

/// A memory: a vector store searched by similarity.
pub trait Memory: Send + Sync + fmt::Debug {
    /// The provider kind (`flat`, …).
    fn kind(&self) -> &str;

    /// Adds (or replaces, by id) items; returns how many the memory holds afterwards.
    fn add(&self, items: Vec<MemoryItem>) -> CapFuture<'_, Result<usize, CapabilityError>>;

    /// The `k` items closest to `vector`, best first.
    fn search<'a>(
        &'a self,
        vector: &'a [f32],
        k: usize,
    ) -> CapFuture<'a, Result<Vec<MemoryHit>, CapabilityError>>;

    /// Removes the items of these ids (ids it does not hold are skipped); returns the items
    /// removed, so a caller can put them back (the `index` operator's backward step).
    fn remove<'a>(
        &'a self,
        ids: &'a [String],
    ) -> CapFuture<'a, Result<Vec<MemoryItem>, CapabilityError>>;

    /// Adds (or replaces, by id) items in one step — a concurrent search sees all of them or
    /// none — and returns the items they replaced. Default: [`remove`](Self::remove) then
    /// [`add`](Self::add), which a concurrent search may see between the two.
    fn put(
        &self,
        items: Vec<MemoryItem>,
    ) -> CapFuture<'_, Result<Vec<MemoryItem>, CapabilityError>> {
        Box::pin(async move {
            let ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
            let replaced = self.remove(&ids).await?;
            if let Err(e) = self.add(items).await {
                // Put back what was taken out: a failed put changes nothing.
                let _ = self.add(replaced).await;
                return Err(e);
            }
            Ok(replaced)
        })
    }

    /// How many items it holds.
    fn len(&self) -> usize;

    /// Whether it holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A request to call a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// Its arguments, checked against the tool's input schema before it runs.
    pub args: serde_json::Value,
    /// Who asks (an operator instance, `cli`, a model), for the policy and the record.
    #[serde(default)]
    pub principal: Option<String>,
    /// A key stable across re-runs of the same firing, so a tool with effects can deduplicate.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

impl ToolCall {
    /// A call of `tool` with `args`, no principal, no idempotency key.
    pub fn new(tool: impl Into<String>, args: serde_json::Value) -> Self {
        ToolCall {
            tool: tool.into(),
            args,
            principal: None,
            idempotency_key: None,
        }
    }

    /// The same call, asked by `principal`.
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The same call, with an idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and returned its content.
    Ok,
    /// The arguments were invalid, the tool is unknown, or the tool failed (or panicked).
    Error,
    /// The policy does not allow the call; the tool did not run.
    Denied,
    /// The tool did not finish in time.
    Timeout,
}

impl ToolStatus {
    /// `ok`, `error`, `denied` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Denied => "denied",
            ToolStatus::Timeout => "timeout",
        }
    }
}

impl fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Facts about a call, beside its result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMeta {
    /// The tool's name.
    pub tool: String,
    /// Where it ran: `local`, or `satellite:<name>`.
    pub origin: String,
    /// Wall-clock time of the call, validation included, in milliseconds.
    pub duration_ms: u64,
    /// How many times it was tried (0 when it never ran: denied, invalid arguments).
    pub attempts: u32,
}

/// The result of a tool call: `{status, content, error, meta}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// How it ended.
    pub status: ToolStatus,
    /// What the tool returned (`null` unless `status` is `ok`).
    pub content: serde_json::Value,
    /// Why it did not succeed (`null` when `status` is `ok`).
    pub error: Option<String>,
    /// Where and how long.
    pub meta: ToolMeta,
}

impl ToolResult {
    /// A call that was not allowed to run.
    pub fn denied(tool: &str, why: impl Into<String>) -> Self {
        ToolResult::failed(ToolStatus::Denied, tool, why, 0)
    }

    /// A call that ended in `status` (not `ok`) after `attempts` attempts.
    pub fn failed(status: ToolStatus, tool: &str, why: impl Into<String>, attempts: u32) -> Self {
        ToolResult {
            status,
            content: serde_json::Value::Null,
            error: Some(why.into()),
            meta: ToolMeta {
                tool: tool.to_owned(),
                origin: "local".to_owned(),
                duration_ms: 0,
                attempts,
            },
        }
    }

    /// Whether the status is `ok`.
    pub fn is_ok(&self) -> bool {
        self.status == ToolStatus::Ok
    }
}

/// What an LLM (and a person) sees of a tool: its name, description and the JSON Schemas of
/// its arguments and of its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// The tool's name (`calc`).
    pub name: String,
    /// What it does (the function's doc comment).
    pub description: String,
    /// JSON Schema of the arguments (an object).
    pub input_schema: serde_json::Value,
    /// JSON Schema of the content of an `ok` result (`true`: any JSON).
    pub output_schema: serde_json::Value,
}

/// The tool gate as a run sees it: the one door every tool call of the run goes through.
/// Implemented by the tool gate.
pub trait ToolAccess: Send + Sync + fmt::Debug {
    /// The manifest of tool `name`, if the generation has it (allowed or not).
    fn manifest(&self, name: &str) -> Option<ToolManifest>;

    /// The names of every tool of the generation, sorted.
    fn names(&self) -> Vec<String>;

    /// Calls a tool, asynchronously.
    fn call<'a>(&'a self, call: ToolCall) -> CapFuture<'a, ToolResult>;

    /// Calls a tool from synchronous code (a blocking operator's `run`).
    fn call_blocking(&self, call: ToolCall) -> ToolResult;
}
