//! Provider kinds: how a `kind:` of a capabilities file becomes a chat model, an embedder or a
//! memory. Each kind is a [`ProviderKind`] submitted with `inventory` (by the crate that
//! implements it); the file names it, and its other keys are its settings.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value as Json};

use crate::cm::CmProblemKind;
use crate::operator::capability::{ChatModel, Embedder, Memory};

/// Which registry of a generation an entry goes to: the file's `chat:`, `embedders:` or
/// `memories:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `chat:` — chat models.
    Chat,
    /// `embedders:`.
    Embedders,
    /// `memories:` — vector stores.
    Memories,
}

impl Section {
    /// Every section, in file order.
    pub const ALL: [Section; 3] = [Section::Chat, Section::Embedders, Section::Memories];

    /// The key in the file.
    pub fn key(self) -> &'static str {
        match self {
            Section::Chat => "chat",
            Section::Embedders => "embedders",
            Section::Memories => "memories",
        }
    }

    /// What one entry is, in messages.
    pub fn what(self) -> &'static str {
        match self {
            Section::Chat => "chat model",
            Section::Embedders => "embedder",
            Section::Memories => "memory",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// One entry of a capabilities file, as a kind's factory receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct KindConfig {
    /// The entry's name (`default`).
    pub name: String,
    /// Its `kind:`.
    pub kind: String,
    /// Every other key, as written.
    pub settings: Map<String, Json>,
    /// The folder of the file (relative paths in settings are relative to it).
    pub base_dir: PathBuf,
}

impl KindConfig {
    /// Setting `key` as a string, if it is one.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.settings.get(key).and_then(Json::as_str)
    }

    /// Setting `key` as a whole number, if it is one.
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.settings.get(key).and_then(Json::as_u64)
    }

    /// Setting `key` as a number, if it is one.
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.settings.get(key).and_then(Json::as_f64)
    }
}

/// Why a kind could not build an entry: a message, the setting at fault (located in the file),
/// and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KindError {
    /// The setting at fault (`None`: the entry as a whole).
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl KindError {
    /// An error about setting `key`.
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        KindError {
            key: Some(key.into()),
            message: message.into(),
            hint: None,
        }
    }

    /// An error about the entry.
    pub fn new(message: impl Into<String>) -> Self {
        KindError {
            key: None,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// How a kind builds its entries.
#[derive(Clone, Copy, Debug)]
pub enum Build {
    /// A chat model kind.
    Chat(fn(&KindConfig) -> Result<Arc<dyn ChatModel>, KindError>),
    /// An embedder kind.
    Embedder(fn(&KindConfig) -> Result<Arc<dyn Embedder>, KindError>),
    /// A memory kind.
    Memory(fn(&KindConfig) -> Result<Arc<dyn Memory>, KindError>),
}

impl Build {
    /// The section it builds entries of.
    pub fn section(&self) -> Section {
        match self {
            Build::Chat(_) => Section::Chat,
            Build::Embedder(_) => Section::Embedders,
            Build::Memory(_) => Section::Memories,
        }
    }
}

/// A provider kind, submitted with [`submit_provider_kind!`](crate::submit_provider_kind).
#[derive(Clone, Copy, Debug)]
pub struct ProviderKind {
    /// The name a file gives as `kind:` (`openai`, `hash`, `flat`).
    pub kind: &'static str,
    /// What it is, one line.
    pub description: &'static str,
    /// Whether it is built, with no settings, as the section's `default` entry when no source
    /// configures one (so examples run offline with nothing configured).
    pub is_default: bool,
    /// The factory.
    pub build: Build,
}

inventory::collect!(ProviderKind);

/// Submits a [`ProviderKind`] to the program's kinds.
///
/// ```
/// use std::sync::Arc;
/// use cameleon::capabilities::{Build, KindConfig, KindError, ProviderKind};
/// use cameleon::operator::capability::{CapFuture, CapabilityError, ChatModel, ChatReply, ChatRequest};
///
/// /// Answers every prompt with its own text.
/// #[derive(Debug)]
/// struct Parrot;
///
/// impl ChatModel for Parrot {
///     fn kind(&self) -> &str { "doc_parrot" }
///     fn chat<'a>(&'a self, r: &'a ChatRequest) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
///         let text = r.messages.last().map(|m| m.content.clone()).unwrap_or_default();
///         Box::pin(async move { Ok(ChatReply { text, ..ChatReply::default() }) })
///     }
/// }
///
/// fn parrot(_: &KindConfig) -> Result<Arc<dyn ChatModel>, KindError> {
///     Ok(Arc::new(Parrot))
/// }
///
/// cameleon::submit_provider_kind!(ProviderKind {
///     kind: "doc_parrot",
///     description: "repeats the prompt",
///     is_default: false,
///     build: Build::Chat(parrot),
/// });
///
/// assert!(cameleon::capabilities::kinds().any(|k| k.kind == "doc_parrot"));
/// ```
#[macro_export]
macro_rules! submit_provider_kind {
    ($kind:expr) => {
        $crate::__private::inventory::submit! { $kind }
    };
}

/// Every provider kind of the program, sorted by section then name.
pub fn kinds() -> impl Iterator<Item = &'static ProviderKind> {
    let mut v: Vec<&'static ProviderKind> = inventory::iter::<ProviderKind>.into_iter().collect();
    v.sort_by_key(|k| (k.build.section(), k.kind));
    v.into_iter()
}

/// The kind `kind` of `section`.
pub(super) fn find(section: Section, kind: &str) -> Option<&'static ProviderKind> {
    kinds().find(|k| k.build.section() == section && k.kind == kind)
}

/// Locates a kind's refusal: at its setting, else at the entry.
pub(super) fn kind_error(
    cx: &mut super::config::Cx<'_>,
    tree: &crate::cm::tree::Node,
    section: Section,
    cfg: &KindConfig,
    e: KindError,
) {
    let entry = tree.get(section.key()).and_then(|s| s.get(&cfg.name));
    let span = match (&e.key, entry) {
        (Some(k), Some(n)) => n.get(k).map_or(n.span, |v| v.span),
        (None, Some(n)) => n.span,
        _ => tree.span,
    };
    cx.push(
        CmProblemKind::Schema,
        span,
        format!(
            "{} `{}` ({}): {}",
            section.what(),
            cfg.name,
            cfg.kind,
            e.message
        ),
        e.hint,
    );
}
