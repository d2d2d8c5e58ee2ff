//! [`ModelSet`]: the chat models, embedders, memories and tool gate operators use, by name.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock, RwLock};

use super::config::ModelsConfig;
use super::contract::{
    CapFuture, CapabilityError, ChatModel, Embedder, Memory, ToolAccess, ToolCall, ToolManifest,
    ToolResult,
};
use super::{Extractive, FlatMemory, HashEmbedder};
use crate::operator::OpError;

type Named<T> = RwLock<BTreeMap<String, Arc<T>>>;

/// Named chat models, embedders and memories, and the tool gate, that the `std-ai` operators
/// look up (their `model` and `memory` params name them; `default` unless they say otherwise).
///
/// [`ModelSet::offline`] has the offline defaults: chat `default` is [`Extractive`], embedder
/// `default` is [`HashEmbedder`] of 384 dimensions, memory `default` is an empty
/// [`FlatMemory`], and every tool call is denied ([`DenyAllTools`]).
/// [`ModelSet::global`] is the set operators use, starting as the offline one; register other
/// entries in it, or replace the defaults:
///
/// ```
/// use std::sync::Arc;
/// use cameleon::models::{Extractive, ModelSet};
///
/// let set = ModelSet::offline();
/// set.set_chat("terse", Arc::new(Extractive::new(1)));
/// assert_eq!(set.chat("terse")?.kind(), "extractive");
/// let err = set.chat("tersе").unwrap_err(); // a Cyrillic `е`
/// assert!(err.message().contains("no chat model `tersе`"));
/// # Ok::<(), cameleon::OpError>(())
/// ```
pub struct ModelSet {
    chat: Named<dyn ChatModel>,
    embedders: Named<dyn Embedder>,
    memories: Named<dyn Memory>,
    tools: RwLock<Arc<dyn ToolAccess>>,
}

impl fmt::Debug for ModelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSet")
            .field("chat", &names(&self.chat))
            .field("embedders", &names(&self.embedders))
            .field("memories", &names(&self.memories))
            .finish_non_exhaustive()
    }
}

fn names<T: ?Sized>(m: &Named<T>) -> Vec<String> {
    m.read()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .cloned()
        .collect()
}

fn get<T: ?Sized>(m: &Named<T>, what: &str, name: &str, param: &str) -> Result<Arc<T>, OpError> {
    let map = m.read().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = map.get(name) {
        return Ok(v.clone());
    }
    let known: Vec<String> = map.keys().map(|k| format!("`{k}`")).collect();
    let hint = match crate::util::did_you_mean(name, map.keys().map(String::as_str)) {
        Some(s) => format!("did you mean `{s}`?"),
        None if known.is_empty() => format!("none is configured; add one under `{param}`"),
        None => format!("the configured ones are {}", known.join(", ")),
    };
    Err(OpError::new(format!("no {what} `{name}` ({hint})")))
}

fn put<T: ?Sized>(m: &Named<T>, name: String, v: Arc<T>) {
    m.write().unwrap_or_else(|p| p.into_inner()).insert(name, v);
}

impl ModelSet {
    /// The offline set (see the type's docs).
    pub fn offline() -> Self {
        let set = ModelSet {
            chat: RwLock::default(),
            embedders: RwLock::default(),
            memories: RwLock::default(),
            tools: RwLock::new(Arc::new(DenyAllTools)),
        };
        set.set_chat("default", Arc::new(Extractive::default()));
        set.set_embedder(
            "default",
            Arc::new(HashEmbedder::new(HashEmbedder::DEFAULT_DIM)),
        );
        set.set_memory("default", Arc::new(FlatMemory::new()));
        set
    }

    /// The offline set with `config`'s entries added (replacing defaults of the same name).
    pub fn from_config(config: &ModelsConfig) -> Result<Self, CapabilityError> {
        let set = ModelSet::offline();
        for (name, c) in &config.chat {
            set.set_chat(name.clone(), c.build(&format!("chat model `{name}`"))?);
        }
        for (name, c) in &config.embedders {
            set.set_embedder(name.clone(), c.build(&format!("embedder `{name}`"))?);
        }
        for (name, c) in &config.memories {
            set.set_memory(name.clone(), c.build());
        }
        Ok(set)
    }

    /// The set the standard operators use, created offline on first use.
    pub fn global() -> &'static ModelSet {
        static GLOBAL: LazyLock<ModelSet> = LazyLock::new(ModelSet::offline);
        &GLOBAL
    }

    /// Registers (or replaces) chat model `name`.
    pub fn set_chat(&self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> &Self {
        put(&self.chat, name.into(), model);
        self
    }

    /// Registers (or replaces) embedder `name`.
    pub fn set_embedder(&self, name: impl Into<String>, embedder: Arc<dyn Embedder>) -> &Self {
        put(&self.embedders, name.into(), embedder);
        self
    }

    /// Registers (or replaces) memory `name`.
    pub fn set_memory(&self, name: impl Into<String>, memory: Arc<dyn Memory>) -> &Self {
        put(&self.memories, name.into(), memory);
        self
    }

    /// Replaces the tool gate.
    pub fn set_tools(&self, gate: Arc<dyn ToolAccess>) -> &Self {
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = gate;
        self
    }

    /// Chat model `name`; a missing one is an error naming it (with a suggestion).
    pub fn chat(&self, name: &str) -> Result<Arc<dyn ChatModel>, OpError> {
        get(&self.chat, "chat model", name, "chat:")
    }

    /// Embedder `name`.
    pub fn embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, OpError> {
        get(&self.embedders, "embedder", name, "embedders:")
    }

    /// Memory `name`. Two lookups of one name give the same store.
    pub fn memory(&self, name: &str) -> Result<Arc<dyn Memory>, OpError> {
        get(&self.memories, "memory", name, "memories:")
    }

    /// The tool gate.
    pub fn tools(&self) -> Arc<dyn ToolAccess> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A tool gate that knows no tool and denies every call.
#[derive(Clone, Copy, Debug, Default)]
pub struct DenyAllTools;

impl ToolAccess for DenyAllTools {
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
            format!("tool `{}` is denied: this run has no tools", call.tool),
        )
    }
}
