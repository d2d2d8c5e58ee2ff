//! Model providers: the chat models, embedders and memories (vector stores) behind the
//! provider kinds of a capabilities file, which the `std-ai` operators
//! ([`ops::Llm`](crate::ops::Llm) and friends) call through the run's
//! [capabilities](crate::operator::capability).
//!
//! | kind | what | network |
//! |---|---|---|
//! | chat `openai` (`OpenAiChat`, feature `openai`) | any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp's server | yes |
//! | chat `extractive` ([`Extractive`]) | quotes the context sentences that best match the question (BM25); **not generative**: refuses structured output and tools | no |
//! | embedder `openai` (`OpenAiEmbedder`, feature `openai`) | the endpoint's `/embeddings` | yes |
//! | embedder `hash` ([`HashEmbedder`]) | signed feature hashing of words and word pairs, L2-normalised | no |
//! | memory `flat` ([`FlatMemory`]) | exact cosine top-k, in process | no |
//!
//! Each implements a trait of the operator contract ([`ChatModel`](crate::operator::capability::ChatModel),
//! [`Embedder`](crate::operator::capability::Embedder), [`Memory`](crate::operator::capability::Memory)) and is
//! registered as a provider kind (see [`capabilities::kinds`](crate::capabilities::kinds)), so a
//! `cameleon.yaml` names it by its `kind`. The offline kinds are deterministic and are the
//! defaults: with nothing configured, the chat model `default` is `extractive`, the embedder
//! `default` is `hash` (384 dimensions) and the memory `default` is `flat`, so every example runs
//! on a fresh machine without a network. The offline chat model and embedder are also there
//! under their kind's name, whatever `default` is: `model: extractive`, `model: hash`.
//!
//! Pointing the operators at a real model, in code (a `cameleon.yaml` does the same from a
//! file, docs/capabilities.md):
//!
//! ```no_run
//! # #[cfg(feature = "openai")] {
//! use std::sync::Arc;
//! use cameleon::capabilities::{CodeSource, Runtime};
//! use cameleon::models::{OpenAiChat, OpenAiConfig};
//!
//! let rt = Runtime::builder()
//!     .source(CodeSource::new("code", |b| {
//!         let ollama = OpenAiConfig::new("http://127.0.0.1:11434/v1", "llama3.2");
//!         let chat = OpenAiChat::new(&ollama, "chat model `default`").map_err(|e| e.to_string())?;
//!         b.chat("default", Arc::new(chat));
//!         Ok(())
//!     }))
//!     .build()?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod extractive;
mod flat;
mod hash;
#[cfg(feature = "openai")]
mod openai;
pub mod text;

pub use extractive::{CONFIGURE_GENERATIVE, Extractive, ExtractiveConfig};
pub use flat::{FlatConfig, FlatMemory, vector_from_bytes, vector_to_bytes};
pub use hash::{HashConfig, HashEmbedder};
#[cfg(feature = "openai")]
pub use openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder, StructuredOutput};
