//! The model and store contract: [`ChatModel`], [`Embedder`], [`Memory`] and the shapes they
//! exchange. Providers (an OpenAI-compatible endpoint, offline stand-ins) implement these
//! traits; operators call them through [`Capabilities`](super::Capabilities).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{CapFuture, CapabilityError, ToolManifest};

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

    /// Whether the model writes answers of its own. A model that is not generative (the
    /// offline `extractive` model) only quotes the passages it is given: it cannot fill a JSON
    /// Schema or decide to call a tool without inventing, so `llm_json` and an `agent` offered
    /// tools refuse it with an error saying how to configure one, and `llm`'s answers from it
    /// are reported as quotations. Default: `true`; a provider that only retrieves, quotes or
    /// echoes says `false`.
    fn generative(&self) -> bool {
        true
    }

    /// The model the provider asks for (`llama3.2`, `gpt-4o-mini`), for traces
    /// (`gen_ai.request.model`). Default: none (the run's name for the model is used).
    fn model_name(&self) -> Option<&str> {
        None
    }

    /// What identifies the answers of this model, for reusing recorded firings across runs
    /// (docs/semantics.md §5.9): a firing that names it is reused only from a firing that
    /// named a model of the same identity. Default: its kind and model name; a provider adds
    /// what else changes its answers (`openai`: the base URL and the structured-output form).
    /// Never a secret.
    fn identity(&self) -> serde_json::Value {
        serde_json::json!({"kind": self.kind(), "model": self.model_name()})
    }

    /// Answers `request`.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>>;

    /// Answers `request` as [`chat`](Self::chat) does, calling `delta` with each new piece of
    /// the answer's text as the model writes it (the pieces, joined, are the reply's `text`).
    /// What an operator calls when its firing's output is watched
    /// ([`Firing::streaming`](crate::operator::Firing::streaming)). Dropping the future
    /// abandons the answer (a streaming HTTP request is closed).
    ///
    /// Default: [`chat`](Self::chat), then the whole text as one piece. A provider that can
    /// stream (`openai` with `stream: true`, `extractive` word by word) overrides it.
    fn chat_streamed<'a>(
        &'a self,
        request: &'a ChatRequest,
        delta: &'a (dyn Fn(&str) + Send + Sync),
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(async move {
            let reply = self.chat(request).await?;
            if !reply.text.is_empty() {
                delta(&reply.text);
            }
            Ok(reply)
        })
    }
}

/// An embedder: turns texts into vectors.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// The provider kind (`openai`, `hash`, …).
    fn kind(&self) -> &str;

    /// The length of every vector it returns.
    fn dim(&self) -> usize;

    /// What identifies the vectors of this embedder, for reusing recorded firings across runs
    /// (see [`ChatModel::identity`]). Default: its kind and length. Never a secret.
    fn identity(&self) -> serde_json::Value {
        serde_json::json!({"kind": self.kind(), "dim": self.dim()})
    }

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

/// Vectors, one per text, and the tokens the provider says it used.
pub type Embedded = (Vec<Vec<f32>>, Option<Usage>);

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

    /// A fingerprint of what the memory holds (its items' ids and texts), if the memory can
    /// tell: part of the reuse key of a firing that names the memory (docs/semantics.md §5.9).
    /// Default: `None` (only the number of items counts).
    fn fingerprint(&self) -> Option<u64> {
        None
    }

    /// Whether it holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
