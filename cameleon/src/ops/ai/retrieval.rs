//! `embed`, `index` and `retrieve`: texts to vectors, vectors into a memory, a question to the
//! passages closest to it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{FiringLog, ModelCall, ModelLog, call_error};
use crate::operator;
use crate::operator::capability::{Memory, MemoryItem};
use crate::operator::{Emitted, Firing, In, OpError, Out, ParamError, RunAsync};
use crate::types::{Any, DataChunk, DataEmbeddings, DataJSON, DataString};

/// Embeds each chunk on `in_data` with an embedder; the texts and their vectors on `out_data`.
///
/// `model` names the embedder (`default`: the configured one, else the offline `hash`
/// embedder of 384 dimensions).
#[operator(id = "embed", label = "Embed", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct Embed {
    /// the embedder's name
    #[param(default = "default")]
    pub model: String,
    /// the texts to embed, e.g. from `chunker` or `passages`
    #[input]
    in_data: In<DataChunk>,
    /// each text with its vector; connect it to `index`
    #[output]
    out_data: Out<DataEmbeddings>,
    log: ModelLog,
}

impl Default for Embed {
    fn default() -> Self {
        Embed::new()
    }
}

impl Embed {
    /// Embeds with the `default` embedder.
    pub fn new() -> Self {
        Embed {
            model: "default".to_owned(),
            log: ModelLog::default(),
        }
    }

    /// The same, with embedder `name`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = name.into();
        self
    }

    /// What the last firing asked and was answered.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }
}

impl RunAsync for Embed {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let texts = cx.get(Self::in_data)?.0.clone();
        let embedder = cx.capabilities().embedder(&self.model)?;
        let (vectors, usage) = embedder
            .embed_with_usage(&texts)
            .await
            .map_err(|e| call_error("embedder", &self.model, embedder.kind(), e))?;
        let out = DataEmbeddings::new(texts, vectors).map_err(|e| {
            OpError::new(format!(
                "embedder `{}` ({}) answered wrongly: {e}",
                self.model,
                embedder.kind()
            ))
        })?;
        let mut log = FiringLog::default();
        log.push(ModelCall::Embed {
            model: self.model.clone(),
            kind: embedder.kind().to_owned(),
            texts: out.len(),
            dim: out.dim(),
            usage,
        });
        self.log.set(log);
        cx.emit(Self::out_data, out);
        Ok(())
    }
}

/// What an `index` firing changed in its memory: the items it added and those they replaced
/// (same ids). Its internal state, so a backward step can take the items out and put the old
/// ones back, and a replay (or a resumed run) can put them in again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexLog {
    /// The items added, in order.
    pub added: Arc<Vec<MemoryItem>>,
    /// The items they replaced.
    pub replaced: Arc<Vec<MemoryItem>>,
}

/// Stores the texts and vectors on `in_data` in a memory; `{"count": n}` (the number of distinct
/// texts stored) on `out_data`.
///
/// `memory` names the memory (`default`: the configured one, else an in-process `flat` one).
/// An item's id is its text's XXH3-64 hash in hex, so indexing a text again replaces it rather
/// than storing it twice. A backward step over the firing removes what it added and restores
/// what that replaced; a replay adds it again — the memory holds what the applied history
/// indexed.
#[operator(id = "index", label = "Index", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    /// the memory's name
    #[param(default = "default")]
    pub memory: String,
    /// texts with their vectors, from `embed`
    #[input]
    in_data: In<DataEmbeddings>,
    /// `{"count": n}` once stored; connect it to `retrieve.in_after` so retrieval waits for indexing
    #[output]
    out_data: Out<DataJSON>,
    changed: IndexLog,
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

impl Index {
    /// Stores into the `default` memory.
    pub fn new() -> Self {
        Index {
            memory: "default".to_owned(),
            changed: IndexLog::default(),
        }
    }

    /// The same, into memory `name`.
    pub fn memory(mut self, name: impl Into<String>) -> Self {
        self.memory = name.into();
        self
    }

    /// The id of an item of text `text`.
    pub fn id_of(text: &str) -> String {
        format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
    }

    /// The memory, outside a firing: in the capabilities of the run applying a backward step
    /// or a replay (docs/semantics.md §5.8).
    fn store(&self, emitted: &Emitted<'_, Self>) -> Option<Arc<dyn Memory>> {
        emitted.capabilities().memory(&self.memory).ok()
    }
}

fn ids(items: &[MemoryItem]) -> Vec<String> {
    items.iter().map(|i| i.id.clone()).collect()
}

impl RunAsync for Index {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let data = cx.get(Self::in_data)?;
        data.check()
            .map_err(|e| OpError::new(format!("in_data: {e}")))?;
        // A text given twice is one item (the first).
        let mut seen = std::collections::HashSet::new();
        let items: Vec<MemoryItem> = data
            .texts
            .iter()
            .zip(&data.vectors)
            .filter(|(t, _)| seen.insert(t.as_str()))
            .map(|(t, v)| MemoryItem {
                id: Index::id_of(t),
                text: t.clone(),
                vector: v.clone(),
                meta: serde_json::Value::Null,
            })
            .collect();
        let count = items.len();
        let memory = cx.capabilities().memory(&self.memory)?;
        let replaced = memory
            .put(items.clone())
            .await
            .map_err(|e| call_error("memory", &self.memory, memory.kind(), e))?;
        self.changed = IndexLog {
            added: Arc::new(items),
            replaced: Arc::new(replaced),
        };
        cx.emit(Self::out_data, DataJSON(json!({ "count": count })));
        Ok(())
    }

    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        if let Some(memory) = self.store(emitted) {
            let (added, replaced) = (ids(&self.changed.added), (*self.changed.replaced).clone());
            crate::runtime::block_on(async {
                // A memory that fails here has nothing better to do than fail again on its
                // next use, where the error reaches a firing.
                let _ = memory.remove(&added).await;
                let _ = memory.add(replaced).await;
            });
        }
    }

    fn replay(&mut self, emitted: &Emitted<'_, Self>) {
        if let Some(memory) = self.store(emitted) {
            let added = (*self.changed.added).clone();
            crate::runtime::block_on(async {
                let _ = memory.put(added).await;
            });
        }
    }
}

/// Finds the passages of a memory closest to the question on `in_query`; them on `out_data`,
/// best first.
///
/// The question is embedded with embedder `model` (the one the memory's items were embedded
/// with: `default` unless said otherwise) and the `k` most similar items of memory `memory` are
/// returned. When `in_after` is connected, `retrieve` waits until it holds a value (any type):
/// connect `index`'s output to it to retrieve only after indexing.
#[operator(id = "retrieve", label = "Retrieve", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct Retrieve {
    /// the memory's name
    #[param(default = "default")]
    pub memory: String,
    /// how many passages (at least 1)
    #[param(default = 4)]
    pub k: usize,
    /// the embedder of the question (the memory's)
    #[param(default = "default")]
    pub model: String,
    /// the question to find passages for
    #[input]
    in_query: In<DataString>,
    /// optional, any type: connect the index's output so retrieval waits for indexing
    #[input(optional)]
    in_after: In<Any>,
    /// the `k` closest passages, best first; connect it to `llm.in_context`
    #[output]
    out_data: Out<DataChunk>,
    log: ModelLog,
}

impl Default for Retrieve {
    fn default() -> Self {
        Retrieve::new(4)
    }
}

impl Retrieve {
    /// The `k` best passages of the `default` memory.
    pub fn new(k: usize) -> Self {
        Retrieve {
            memory: "default".to_owned(),
            k,
            model: "default".to_owned(),
            log: ModelLog::default(),
        }
    }

    /// The same, from memory `name`.
    pub fn memory(mut self, name: impl Into<String>) -> Self {
        self.memory = name.into();
        self
    }

    /// The same, embedding the question with embedder `name`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = name.into();
        self
    }

    /// What the last firing asked and was answered.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }
}

impl RunAsync for Retrieve {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let query = cx.get(Self::in_query)?.0.clone();
        let set = cx.capabilities();
        let embedder = set.embedder(&self.model)?;
        let memory = set.memory(&self.memory)?;
        let texts = [query];
        let (mut vectors, usage) = embedder
            .embed_with_usage(&texts)
            .await
            .map_err(|e| call_error("embedder", &self.model, embedder.kind(), e))?;
        let vector = vectors.pop().ok_or_else(|| {
            OpError::new(format!(
                "embedder `{}` ({}) returned no vector for the question",
                self.model,
                embedder.kind()
            ))
        })?;
        let hits = memory
            .search(&vector, self.k)
            .await
            .map_err(|e| call_error("memory", &self.memory, memory.kind(), e))?;
        let mut log = FiringLog::default();
        log.push(ModelCall::Embed {
            model: self.model.clone(),
            kind: embedder.kind().to_owned(),
            texts: 1,
            dim: vector.len(),
            usage,
        });
        log.push(ModelCall::Search {
            memory: self.memory.clone(),
            k: self.k,
            hits: hits.iter().map(|h| (h.item.id.clone(), h.score)).collect(),
        });
        self.log.set(log);
        let passages = hits.into_iter().map(|h| h.item.text).collect();
        cx.emit(Self::out_data, DataChunk(passages));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.k == 0 {
            return Err(ParamError::new(
                "k".to_owned(),
                "k must be at least 1 (how many passages to retrieve)",
            ));
        }
        Ok(())
    }
}
