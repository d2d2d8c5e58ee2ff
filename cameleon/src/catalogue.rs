//! The operator catalogue: every operator type a `.cm` file, the CLI or an LLM can name.
//!
//! Entries are submitted with `inventory` (by `#[operator]`, or by hand with
//! [`submit_operator!`](crate::submit_operator)) and collected into [`Catalogue::global`],
//! sorted by id.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;

use crate::operator::{OpSpec, Operator, Params};
use crate::policy::{Family, Policy};

/// Context for building operators from `.cm` params: where relative file paths point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildContext {
    /// The folder relative paths are resolved against (the `.cm` file's folder).
    pub base_dir: Option<PathBuf>,
    /// Whether file-reading operators may read outside `base_dir`.
    pub allow_outside: bool,
}

/// A parameter that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// The parameter at fault (`None`: the params as a whole).
    pub param: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl ParamError {
    /// An error about parameter `param`.
    pub fn new(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        ParamError {
            param: param.into(),
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

/// A declared parameter of an operator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// Name in `.cm` `params:`.
    pub name: &'static str,
    /// Type as shown to users (`usize`, `string`, `test`, `json`…).
    pub ty: &'static str,
    /// Default as JSON text, or `None` when the parameter is required.
    pub default: Option<&'static str>,
    /// One line of documentation.
    pub doc: &'static str,
}

/// Builds an operator instance from `.cm` params.
pub type BuildFn = fn(&Params, &BuildContext) -> Result<Box<dyn Operator>, ParamError>;

/// An operator type in the catalogue.
#[derive(Clone, Copy)]
pub struct CatalogueEntry {
    /// Catalogue id (`.cm` `type:`), e.g. `chunker`.
    pub id: &'static str,
    /// Other ids that name the same operator (`switch` for `gate`).
    pub aliases: &'static [&'static str],
    /// Human label.
    pub label: &'static str,
    /// Structural or behavioral.
    pub family: Family,
    /// Firing policy.
    pub policy: Policy,
    /// Documentation (the operator's doc comment).
    pub doc: &'static str,
    /// Declared parameters.
    pub params: &'static [ParamInfo],
    /// The spec of an instance built with default params (ports, types, emission sets).
    pub spec: fn() -> OpSpec,
    /// Builds an instance from `.cm` params.
    pub build: BuildFn,
}

impl fmt::Debug for CatalogueEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogueEntry")
            .field("id", &self.id)
            .field("family", &self.family)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

inventory::collect!(CatalogueEntry);

/// Submits a hand-written [`CatalogueEntry`] to the global catalogue.
#[macro_export]
macro_rules! submit_operator {
    ($entry:expr) => {
        $crate::__private::inventory::submit! { $entry }
    };
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
            suggestion: crate::net::did_you_mean(id, self.ids()).map(str::to_owned),
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

/// Reads `.cm` params against declared [`ParamInfo`]s: rejects unknown names, reads each value
/// with serde, and falls back to declared defaults.
#[derive(Debug)]
pub struct ParamReader<'a> {
    params: &'a Params,
    declared: &'static [ParamInfo],
}

impl<'a> ParamReader<'a> {
    /// Checks that every given param is declared.
    pub fn new(params: &'a Params, declared: &'static [ParamInfo]) -> Result<Self, ParamError> {
        for k in params.keys() {
            if !declared.iter().any(|d| d.name == k) {
                let names: Vec<&str> = declared.iter().map(|d| d.name).collect();
                let hint = crate::net::did_you_mean(k, names.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .unwrap_or_else(|| {
                        if names.is_empty() {
                            "this operator takes no params".to_owned()
                        } else {
                            format!("its params are: {}", names.join(", "))
                        }
                    });
                return Err(
                    ParamError::new(k.clone(), format!("unknown param `{k}`")).with_hint(hint)
                );
            }
        }
        Ok(ParamReader { params, declared })
    }

    /// Reads param `name` as a `T`, or its declared default.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<T, ParamError> {
        let info = self.declared.iter().find(|d| d.name == name);
        let ty = info.map_or("value", |i| i.ty);
        let value = match (self.params.get(name), info.and_then(|i| i.default)) {
            (Some(v), _) => v.clone(),
            (None, Some(default)) => serde_json::from_str(default).map_err(|e| {
                ParamError::new(name.to_owned(), format!("bad default for `{name}`: {e}"))
            })?,
            (None, None) => {
                return Err(ParamError::new(
                    name.to_owned(),
                    format!("missing param `{name}` ({ty})"),
                )
                .with_hint(format!("add `{name}:` under `params:`")));
            }
        };
        serde_json::from_value(value.clone()).map_err(|e| {
            ParamError::new(
                name.to_owned(),
                format!("param `{name}` expects {ty}, got `{value}`"),
            )
            .with_hint(e.to_string())
        })
    }
}
