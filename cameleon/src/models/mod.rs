//! Models and retrieval: chat models, embedders and memories (vector stores) that the `std-ai`
//! operators ([`ops::Llm`](crate::ops::Llm) and friends) call.
//!
//! | kind | what | network |
//! |---|---|---|
//! | chat `openai` ([`OpenAiChat`]) | any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp's server | yes |
//! | chat `extractive` ([`Extractive`]) | quotes the context sentences that best match the question (BM25); **not generative** | no |
//! | embedder `openai` ([`OpenAiEmbedder`]) | the endpoint's `/embeddings` | yes |
//! | embedder `hash` ([`HashEmbedder`]) | signed feature hashing of words and word pairs, L2-normalised | no |
//! | memory `flat` ([`FlatMemory`]) | exact cosine top-k, in process | no |
//!
//! The offline kinds are deterministic and are the defaults: with nothing configured, the chat
//! model `default` is `extractive`, the embedder `default` is `hash` (384 dimensions) and the
//! memory `default` is `flat`, so every example runs on a fresh machine without a network.
//!
//! Operators never build a client themselves: they look models up by name in a [`ModelSet`]
//! (the `model` and `memory` params name them). The contract they call through is
//! [`ChatModel`], [`Embedder`] and [`Memory`]; tool calls of an agent go through a
//! [`ToolAccess`] gate.
//!
//! Pointing the operators at a real model:
//!
//! ```no_run
//! use std::sync::Arc;
//! use cameleon::models::{ModelSet, OpenAiChat, OpenAiConfig};
//!
//! let ollama = OpenAiConfig::new("http://127.0.0.1:11434/v1", "llama3.2");
//! ModelSet::global().set_chat("default", Arc::new(OpenAiChat::new(&ollama, "chat model `default`")?));
//! # Ok::<(), cameleon::models::CapabilityError>(())
//! ```

mod config;
mod contract;
mod extractive;
mod flat;
mod hash;
mod openai;
mod set;
pub mod text;

pub use config::{ChatConfig, EmbedderConfig, MemoryConfig, ModelsConfig};
pub use contract::{
    CapFuture, CapabilityError, ChatMessage, ChatModel, ChatReply, ChatRequest, Embedded, Embedder,
    Memory, MemoryHit, MemoryItem, Role, ToolAccess, ToolCall, ToolManifest, ToolMeta, ToolRequest,
    ToolResult, ToolStatus, Usage,
};
pub use extractive::{Extractive, ExtractiveConfig};
pub use flat::{FlatConfig, FlatMemory, vector_from_bytes, vector_to_bytes};
pub use hash::{HashConfig, HashEmbedder};
pub use openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder};
pub use set::{DenyAllTools, ModelSet};
