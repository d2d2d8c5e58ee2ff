//! Settings of models, embedders and memories by kind, as a capabilities file writes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::contract::{CapabilityError, ChatModel, Embedder, Memory};
use super::{
    Extractive, ExtractiveConfig, FlatConfig, FlatMemory, HashConfig, HashEmbedder, OpenAiChat,
    OpenAiConfig, OpenAiEmbedder,
};

/// Named entries per family, each with its `kind`:
///
/// ```
/// use cameleon::models::{ChatConfig, ModelsConfig};
///
/// let c: ModelsConfig = serde_json::from_value(serde_json::json!({
///     "chat": {"default": {"kind": "openai", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3.2"}},
///     "embedders": {"default": {"kind": "hash", "dim": 256}},
///     "memories": {"default": {"kind": "flat"}}
/// }))?;
/// assert!(matches!(&c.chat["default"], ChatConfig::Openai(o) if o.model == "llama3.2"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// Chat models by name.
    #[serde(default)]
    pub chat: BTreeMap<String, ChatConfig>,
    /// Embedders by name.
    #[serde(default)]
    pub embedders: BTreeMap<String, EmbedderConfig>,
    /// Memories by name.
    #[serde(default)]
    pub memories: BTreeMap<String, MemoryConfig>,
}

/// A chat model's settings, by `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChatConfig {
    /// `kind: openai`: an OpenAI-compatible endpoint.
    Openai(OpenAiConfig),
    /// `kind: extractive`: offline, quotes the context.
    Extractive(ExtractiveConfig),
}

/// An embedder's settings, by `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EmbedderConfig {
    /// `kind: openai`: an OpenAI-compatible endpoint's `/embeddings`.
    Openai(OpenAiConfig),
    /// `kind: hash`: offline feature hashing.
    Hash(HashConfig),
}

/// A memory's settings, by `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MemoryConfig {
    /// `kind: flat`: exact cosine search in process.
    Flat(FlatConfig),
}

impl ChatConfig {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            ChatConfig::Openai(_) => "openai",
            ChatConfig::Extractive(_) => "extractive",
        }
    }

    /// The model; `label` names it in messages.
    pub fn build(&self, label: &str) -> Result<Arc<dyn ChatModel>, CapabilityError> {
        Ok(match self {
            ChatConfig::Openai(c) => Arc::new(OpenAiChat::new(c, label)?),
            ChatConfig::Extractive(c) => Arc::new(Extractive::from_config(c)),
        })
    }
}

impl EmbedderConfig {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            EmbedderConfig::Openai(_) => "openai",
            EmbedderConfig::Hash(_) => "hash",
        }
    }

    /// The embedder; `label` names it in messages.
    pub fn build(&self, label: &str) -> Result<Arc<dyn Embedder>, CapabilityError> {
        Ok(match self {
            EmbedderConfig::Openai(c) => Arc::new(OpenAiEmbedder::new(c, label)?),
            EmbedderConfig::Hash(c) => Arc::new(HashEmbedder::from_config(c)),
        })
    }
}

impl MemoryConfig {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryConfig::Flat(_) => "flat",
        }
    }

    /// An empty memory.
    pub fn build(&self) -> Arc<dyn Memory> {
        match self {
            MemoryConfig::Flat(_) => Arc::new(FlatMemory::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_unknown_kind_or_key_is_refused_by_name() {
        let e = serde_json::from_value::<ChatConfig>(json!({"kind": "anthropic", "model": "x"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("anthropic") && e.contains("openai"), "{e}");
        let e = serde_json::from_value::<ChatConfig>(
            json!({"kind": "openai", "model": "x", "api_key": "sk-1"}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("api_key"), "{e}");
    }

    #[test]
    fn a_missing_key_variable_is_found_before_any_call() {
        let c = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        assert_eq!(c.check_key(), Ok(()), "no api_key_env: no key needed");
        let e = c
            .api_key_env("CAMELEON_TEST_KEY_THAT_IS_NOT_SET")
            .check_key()
            .unwrap_err();
        assert!(
            e.contains("`CAMELEON_TEST_KEY_THAT_IS_NOT_SET` (api_key_env) is not set"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_base_url_is_an_error_at_build() {
        let c = ChatConfig::Openai(OpenAiConfig::new("127.0.0.1:11434", "m"));
        let e = c.build("chat model `default`").unwrap_err();
        assert!(e.message.contains("base_url `127.0.0.1:11434`"), "{e}");
    }
}
