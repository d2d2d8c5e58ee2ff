//! The operator catalogue: every operator type a `.cm` file, the CLI or an LLM can name.
//!
//! Operators declared with `#[operator]` submit their [`CatalogueEntry`] with `inventory`;
//! [`Catalogue::global`] collects every submitted entry, sorted by id, and rejects two entries
//! with one id. A catalogue can also be built by hand ([`Catalogue::new`] then
//! [`register`](Catalogue::register)), and exported for people and LLMs
//! ([`to_json`](Catalogue::to_json), [`to_markdown`](Catalogue::to_markdown)).
//!
//! ```
//! use cameleon::catalogue::Catalogue;
//!
//! let cat = Catalogue::global();
//! let fork = cat.get("fork").expect("a standard operator");
//! assert_eq!(fork.label, "Fork");
//! assert!(cat.iter().map(|e| e.id).is_sorted());
//! ```
//!
//! # The linker pitfall
//!
//! `inventory` registers an operator with a static that the linker keeps only if the crate it
//! lives in is linked at all, and a crate the binary never names is dropped before that. If your
//! operators live in their own crate (`my_ops`) and the binary only loads `.cm` files that use
//! them, nothing names `my_ops` and its operators are silently absent from the catalogue
//! ("unknown operator type"). Name the crate once, anywhere in the binary:
//!
//! ```ignore
//! use my_ops as _; // keeps my_ops's operators in the catalogue
//! ```
//!
//! Operators declared in the binary's own crate, or in a crate whose items the binary uses, are
//! always present. Where a static registry is not wanted at all, build a catalogue by hand with
//! [`Catalogue::register`].

// The registry and building operators from `.cm` params are here; what the catalogue holds
// about an operator type is in `entry`, reading `.cm` params in `params`, and the JSON and
// Markdown exports in `export`.

mod entry;
mod export;
mod params;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

pub use entry::{BuildFn, CatalogueEntry, Catalogued, PortDoc};
pub use params::{ParamInfo, ParamReader, ParamType};
pub(crate) use params::{list_param, option_param};

/// Re-exported from the operator contract, where [`Run::validate`](crate::Run::validate) needs it.
pub use crate::operator::ParamError;
use crate::operator::{Operator, Params};

/// Context for building operators from `.cm` params: where relative file paths point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildContext {
    /// The folder relative paths are resolved against (the `.cm` file's folder).
    pub base_dir: Option<PathBuf>,
    /// Whether file-reading operators may read outside `base_dir`.
    pub allow_outside: bool,
    /// The `.cm` files being loaded, outermost first: the file of the net being built, and of
    /// each net it is a sub-net of (docs/semantics.md §10.2). A sub-net naming one of them
    /// includes itself.
    pub files: Vec<PathBuf>,
    /// How deep the net being built is nested in sub-nets: 0 for a top net.
    pub depth: u32,
    /// The sub-net files loaded so far for the top net, shared by every level: at most
    /// [`MAX_SUBNET_FILES`].
    pub subnet_files: SubnetFiles,
}

/// Most sub-net files one top net loads, every level and every run-time load of a recursive
/// sub-net counted (docs/semantics.md §10.2): a `.cm` file that names itself, or fans out
/// level after level, cannot make its loading grow without end.
pub const MAX_SUBNET_FILES: u32 = 256;

/// The count of sub-net files loaded for one top net, shared by the [`BuildContext`]s of all
/// its levels. Compares equal always: it is a running count, not part of what is built.
#[derive(Clone, Debug, Default)]
pub struct SubnetFiles(std::sync::Arc<std::sync::atomic::AtomicU32>);

impl PartialEq for SubnetFiles {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SubnetFiles {}

impl SubnetFiles {
    /// Counts one more file; `Err` with the limit once past [`MAX_SUBNET_FILES`].
    pub fn spend(&self) -> Result<(), u32> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n > MAX_SUBNET_FILES {
            Err(MAX_SUBNET_FILES)
        } else {
            Ok(())
        }
    }
}

/// Two entries claim the same id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "operator id `{id}` is registered twice (labels `{first}` and `{second}`); operator ids must be unique"
)]
pub struct DuplicateId {
    /// The id.
    pub id: String,
    /// Label of the first entry.
    pub first: String,
    /// Label of the second.
    pub second: String,
}

/// A set of operator types, by id.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    entries: BTreeMap<&'static str, CatalogueEntry>,
    aliases: BTreeMap<&'static str, &'static str>,
}

impl Catalogue {
    /// An empty catalogue.
    pub fn new() -> Self {
        Catalogue::default()
    }

    /// Every entry submitted with `inventory` in the program.
    pub fn from_inventory() -> Result<Self, DuplicateId> {
        let mut c = Catalogue::new();
        for e in inventory::iter::<CatalogueEntry> {
            c.insert(*e)?;
        }
        Ok(c)
    }

    /// The process-wide catalogue. Panics, naming both, if two operators share an id: that is a
    /// build mistake that no run can work around.
    pub fn global() -> &'static Catalogue {
        static GLOBAL: OnceLock<Catalogue> = OnceLock::new();
        GLOBAL.get_or_init(|| Catalogue::from_inventory().unwrap_or_else(|e| panic!("{e}")))
    }

    /// Adds the entry of operator type `O` (declared with `#[operator]`); an id or alias already
    /// present is an error. For catalogues built by hand, without `inventory`.
    ///
    /// ```
    /// use cameleon::catalogue::Catalogue;
    /// use cameleon::ops::{Chunker, Fork, Sink};
    ///
    /// let mut cat = Catalogue::new();
    /// cat.register::<Chunker>()?.register::<Fork>()?.register::<Sink>()?;
    /// assert_eq!(cat.iter().map(|e| e.id).collect::<Vec<_>>(), ["chunker", "fork", "sink"]);
    /// assert!(cat.register::<Sink>().is_err()); // `sink` is already there
    /// # Ok::<(), cameleon::catalogue::DuplicateId>(())
    /// ```
    pub fn register<O: Catalogued + ?Sized>(&mut self) -> Result<&mut Self, DuplicateId> {
        self.insert(O::ENTRY)?;
        Ok(self)
    }

    /// Adds an entry; an id (or alias) already present is an error.
    pub fn insert(&mut self, e: CatalogueEntry) -> Result<(), DuplicateId> {
        for id in std::iter::once(e.id).chain(e.aliases.iter().copied()) {
            let clash = self.entries.get(id).map(|o| o.label).or_else(|| {
                self.aliases
                    .get(id)
                    .and_then(|t| self.entries.get(t))
                    .map(|o| o.label)
            });
            if let Some(first) = clash {
                return Err(DuplicateId {
                    id: id.to_owned(),
                    first: first.to_owned(),
                    second: e.label.to_owned(),
                });
            }
        }
        for a in e.aliases {
            self.aliases.insert(a, e.id);
        }
        self.entries.insert(e.id, e);
        Ok(())
    }

    /// The entry with id (or alias) `id`.
    pub fn get(&self, id: &str) -> Option<&CatalogueEntry> {
        self.entries
            .get(id)
            .or_else(|| self.aliases.get(id).and_then(|t| self.entries.get(t)))
    }

    /// Every entry, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &CatalogueEntry> {
        self.entries.values()
    }

    /// Every id and alias, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        let mut v: Vec<_> = self
            .entries
            .keys()
            .chain(self.aliases.keys())
            .copied()
            .collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds an instance of operator type `id` from `.cm` params.
    pub fn build(
        &self,
        id: &str,
        params: &Params,
        cx: &BuildContext,
    ) -> Result<Box<dyn Operator>, BuildError> {
        let e = self.get(id).ok_or_else(|| BuildError::UnknownType {
            id: id.to_owned(),
            suggestion: crate::util::did_you_mean(id, self.ids()).map(str::to_owned),
        })?;
        (e.build)(params, cx).map_err(BuildError::Param)
    }
}

/// An operator that could not be built from `.cm`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No operator type has this id.
    #[error("unknown operator type `{id}`")]
    UnknownType {
        /// The id asked for.
        id: String,
        /// A close id, if any.
        suggestion: Option<String>,
    },
    /// A parameter is missing, unknown or ill-typed.
    #[error(transparent)]
    Param(#[from] ParamError),
}

/// A field filled from the [`BuildContext`] when the catalogue builds an operator from `.cm`
/// (`#[context]` fields), e.g. where relative file paths point.
pub trait FromContext {
    /// The value for this build.
    fn from_context(cx: &BuildContext) -> Self;
}

impl FromContext for BuildContext {
    fn from_context(cx: &BuildContext) -> Self {
        cx.clone()
    }
}
