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

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::{Value as Json, json};

/// Re-exported from the operator contract, where [`Run::validate`](crate::Run::validate) needs it.
pub use crate::operator::ParamError;
use crate::operator::{Execution, OpSettings, OpSpec, Operator, Params, PortSpec};
use crate::ops::Test;
use crate::policy::{Family, Policy};

/// Context for building operators from `.cm` params: where relative file paths point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildContext {
    /// The folder relative paths are resolved against (the `.cm` file's folder).
    pub base_dir: Option<PathBuf>,
    /// Whether file-reading operators may read outside `base_dir`.
    pub allow_outside: bool,
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
    /// How parallel mode runs the operator's firings (`exec = …`; always
    /// [`Inline`](Execution::Inline) for a structural operator).
    pub execution: Execution,
    /// The operator type's default timeout and retries (`timeout_ms = …`, `retry(…)`), which
    /// a net's instance settings override field by field.
    pub settings: OpSettings,
}

impl fmt::Debug for CatalogueEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogueEntry")
            .field("id", &self.id)
            .field("family", &self.family)
            .field("policy", &self.policy)
            .field("execution", &self.execution)
            .finish_non_exhaustive()
    }
}

inventory::collect!(CatalogueEntry);

impl CatalogueEntry {
    /// The first paragraph of [`doc`](Self::doc), on one line: what the catalogue exports show.
    pub fn summary(&self) -> String {
        self.doc
            .split("\n\n")
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An operator type that carries its catalogue entry: every type declared with `#[operator]`.
/// [`Catalogue::register`] takes one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an operator declared with `#[operator]`",
    label = "no catalogue entry",
    note = "declare the operator with `#[operator(id = \"…\", …)]`, or insert a hand-written `CatalogueEntry` with `Catalogue::insert`"
)]
pub trait Catalogued {
    /// The entry: id, label, family, policy, docs, params, spec and factory.
    const ENTRY: CatalogueEntry;
}

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

// ---------------------------------------------------------------------------------------------
// Export

/// How to write a `.cm` file with the catalogue's operators: the preamble of both exports.
const CM_GUIDE: &str = r#"A Caméléon pipeline is a `.cm` file (YAML). Each operator instance has an `id` (its unique name), a `type` (a catalogue id below) and optional `params`; each connection goes from an output port `instance.port` to an input port `instance.port`.

```yaml
cameleon: 1
name: example
operators:
  - id: src
    type: source
    params: { value: "hello world" }
  - id: up
    type: transform
  - id: out
    type: sink
connections:
  - from: src.out_data
    to: up.in_data
  - from: up.out_data
    to: out.in_data
```

Rules:
- Every input port has exactly one incoming connection, except optional inputs, which may have none. An output port may feed any number of connections, or none.
- A connection's source and target have the same data type. An input of type `Any` (on a behavioral operator) accepts every type. `T0`, `T1`… are type variables of a structural operator: every port of one instance with the same variable carries the same type, fixed by its connections.
- Params not listed for an operator are errors; params without a default are required. Operators whose ports are `in_a, in_b, …` or `out_a, out_b, …` take an `arity` param (default 2) that adds ports `in_c`/`out_c`, `in_d`/`out_d`, … in order.
- A `test` param is a one-key map evaluated on the JSON value of a token (a DataString compares as a string): `{lt: 10}`, `{le: 10}`, `{gt: 0}`, `{ge: 0}`, `{eq: "stop"}`, `{ne: 3}`, `{contains: "x"}`, `{not: {…}}`, `{all: […]}`, `{any: […]}`.
- A loop goes through a `merge` (its entry; it fires with an EMPTY input) and leaves through a `guard` or a `gate`."#;

impl Catalogue {
    /// The catalogue as JSON: a `.cm` writing guide (`format`), the data types, the firing
    /// policies, and every operator (sorted by id) with its aliases, label, family, policy,
    /// execution kind (`exec`) and default `settings` (`timeout_ms`, `retry`, when declared),
    /// description, ports with types, params with types and defaults, and emission sets —
    /// enough for an LLM to write a valid `.cm` from this text alone.
    pub fn to_json(&self) -> Json {
        let operators: Vec<Json> = self.iter().map(entry_json).collect();
        let types: Vec<Json> = crate::types::all_types()
            .into_iter()
            .map(|t| json!(t.name))
            .chain(std::iter::once(json!("Any")))
            .collect();
        let policies: serde_json::Map<String, Json> = Policy::ALL
            .into_iter()
            .map(|p| (p.as_str().to_owned(), json!(p.describe())))
            .collect();
        json!({
            "format": CM_GUIDE,
            "types": types,
            "policies": policies,
            "operators": operators,
        })
    }

    /// The catalogue as Markdown: the same facts as [`to_json`](Self::to_json), for people and
    /// LLM prompts.
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut md = String::from("# Caméléon operator catalogue\n\n## Writing a `.cm` file\n\n");
        md.push_str(CM_GUIDE);
        md.push_str("\n\nData types: ");
        let types: Vec<String> = crate::types::all_types()
            .into_iter()
            .map(|t| format!("`{}`", t.name))
            .collect();
        md.push_str(&types.join(", "));
        md.push_str(", and `Any` (inputs only).\n\nFiring policies:\n");
        for p in Policy::ALL {
            let _ = writeln!(md, "- `{p}`: {}", p.describe());
        }
        md.push_str("\n## Operators\n");
        for e in self.iter() {
            let spec = (e.spec)();
            let _ = write!(md, "\n### `{}` — {}\n\n{}\n\n", e.id, e.label, e.summary());
            let _ = writeln!(
                md,
                "- family: {} · firing: `{}` ({})",
                e.family,
                e.policy,
                e.policy.describe()
            );
            let _ = writeln!(
                md,
                "- exec: `{}`{}",
                e.execution.as_str(),
                settings_md(&e.settings)
            );
            if !e.aliases.is_empty() {
                let a: Vec<String> = e.aliases.iter().map(|a| format!("`{a}`")).collect();
                let _ = writeln!(md, "- aliases: {}", a.join(", "));
            }
            let _ = writeln!(md, "- inputs: {}", ports_md(&spec.inputs));
            let _ = writeln!(md, "- outputs: {}", ports_md(&spec.outputs));
            if !spec.emits.is_empty() {
                let sets: Vec<String> = emits_names(&spec)
                    .into_iter()
                    .map(|set| {
                        let names: Vec<String> = set.iter().map(|n| format!("`{n}`")).collect();
                        if names.is_empty() {
                            "nothing".to_owned()
                        } else {
                            format!("{{{}}}", names.join(", "))
                        }
                    })
                    .collect();
                let _ = writeln!(md, "- emits one of: {}", sets.join(" or "));
            }
            if e.params.is_empty() {
                md.push_str("- params: none\n");
            } else {
                md.push_str("- params:\n");
                for p in e.params {
                    let default = p
                        .default
                        .map_or_else(|| "required".to_owned(), |d| format!("default `{d}`"));
                    let _ = writeln!(md, "  - `{}` ({}, {}): {}", p.name, p.ty, default, p.doc);
                }
            }
        }
        md
    }
}

/// The default settings, after the execution kind: ` · timeout 5000 ms · retry: max 3, backoff 200 ms`.
fn settings_md(s: &OpSettings) -> String {
    let mut out = String::new();
    if let Some(ms) = s.timeout_ms {
        out.push_str(&format!(" · timeout {ms} ms"));
    }
    if let Some(r) = s.retry {
        out.push_str(&format!(
            " · retry: max {}, backoff {} ms",
            r.max, r.backoff_ms
        ));
    }
    out
}

fn ports_md(ports: &[PortSpec]) -> String {
    if ports.is_empty() {
        return "none".to_owned();
    }
    let v: Vec<String> = ports
        .iter()
        .map(|p| {
            let opt = if p.optional { " (optional)" } else { "" };
            format!("`{}: {}`{opt}", p.name, p.ty.display_name())
        })
        .collect();
    v.join(", ")
}

fn emits_names(spec: &OpSpec) -> Vec<Vec<&str>> {
    spec.emits
        .iter()
        .map(|set| {
            set.iter()
                .filter_map(|&i| spec.outputs.get(i as usize).map(|p| &*p.name))
                .collect()
        })
        .collect()
}

fn entry_json(e: &CatalogueEntry) -> Json {
    let spec = (e.spec)();
    let port =
        |p: &PortSpec| json!({"name": p.name, "type": p.ty.display_name(), "optional": p.optional});
    let params: Vec<Json> = e
        .params
        .iter()
        .map(|p| {
            let default = p
                .default
                .map(|d| serde_json::from_str::<Json>(d).unwrap_or_else(|_| json!(d)));
            json!({
                "name": p.name,
                "type": p.ty,
                "required": p.default.is_none(),
                "default": default,
                "doc": p.doc,
            })
        })
        .collect();
    json!({
        "id": e.id,
        "aliases": e.aliases,
        "label": e.label,
        "family": e.family,
        "policy": e.policy,
        "exec": e.execution,
        "settings": e.settings,
        "doc": e.summary(),
        "inputs": spec.inputs.iter().map(port).collect::<Vec<_>>(),
        "outputs": spec.outputs.iter().map(port).collect::<Vec<_>>(),
        "params": params,
        "emits": emits_names(&spec),
    })
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
                let hint = crate::util::did_you_mean(k, names.iter().copied())
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

    /// The JSON value of param `name`: as given, or its declared default. A required param
    /// that is absent is an error.
    pub fn value(&self, name: &str) -> Result<Json, ParamError> {
        let info = self.declared.iter().find(|d| d.name == name);
        let ty = info.map_or("value", |i| i.ty);
        match (self.params.get(name), info.and_then(|i| i.default)) {
            (Some(v), _) => Ok(v.clone()),
            (None, Some(default)) => serde_json::from_str(default).map_err(|e| {
                ParamError::new(name.to_owned(), format!("bad default for `{name}`: {e}"))
            }),
            (None, None) => Err(ParamError::new(
                name.to_owned(),
                format!("missing param `{name}` ({ty})"),
            )
            .with_hint(format!("add `{name}:` under `params:`"))),
        }
    }

    /// Reads param `name` as a `T`, or its declared default.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<T, ParamError> {
        let value = self.value(name)?;
        serde_json::from_value(value.clone()).map_err(|e| self.ill_typed(name, &value, e))
    }

    /// Reads param `name` as a [`ParamType`], or its declared default: what `#[operator]`'s
    /// factory does for each `#[param]` field.
    pub fn read<T: ParamType>(&self, name: &str) -> Result<T, ParamError> {
        let value = self.value(name)?;
        T::from_param(&value).map_err(|e| self.ill_typed(name, &value, e))
    }

    fn ill_typed(&self, name: &str, value: &Json, detail: impl fmt::Display) -> ParamError {
        let ty = self
            .declared
            .iter()
            .find(|d| d.name == name)
            .map_or("value", |i| i.ty);
        ParamError::new(
            name.to_owned(),
            format!("param `{name}` expects {ty}, got `{value}`"),
        )
        .with_hint(detail.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Param types

/// A type a `#[param]` field can have: read from the JSON value of a `.cm` param, written back
/// by [`Operator::params`], and named in the catalogue.
///
/// Implemented for the integers, `f32`, `f64`, `bool`, `String`, `serde_json::Value` (any YAML
/// value), [`Test`], and `Vec` and `Option` of each of them. Implement it for a
/// type of your own to use it as a param.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read from `.cm` params",
    label = "this `#[param]` type has no `.cm` reading",
    note = "param types are the integers, `f32`, `f64`, `bool`, `String`, `serde_json::Value`, `Test`, and `Vec`/`Option` of them; implement `cameleon::catalogue::ParamType` for a type of your own"
)]
pub trait ParamType: Sized {
    /// The type's name in the catalogue and in error messages (`usize`, `string`, `json`…).
    const NAME: &'static str;
    /// The default of a param of this type declared without one, as JSON text: `None` makes the
    /// param required (an `Option` is `null` when absent).
    const IMPLICIT_DEFAULT: Option<&'static str> = None;
    /// Reads a value; the error says what is wrong with it.
    fn from_param(v: &Json) -> Result<Self, String>;
    /// The value as `.cm` writes it.
    fn to_param(&self) -> Json;
}

macro_rules! serde_param_types {
    ($($ty:ty => $name:literal),* $(,)?) => {$(
        impl ParamType for $ty {
            const NAME: &'static str = $name;
            fn from_param(v: &Json) -> Result<Self, String> {
                <$ty as serde::Deserialize>::deserialize(v).map_err(|e| e.to_string())
            }
            fn to_param(&self) -> Json {
                json!(self)
            }
        }
        impl ParamType for Vec<$ty> {
            const NAME: &'static str = concat!("list of ", $name);
            fn from_param(v: &Json) -> Result<Self, String> {
                list_param(v)
            }
            fn to_param(&self) -> Json {
                Json::Array(self.iter().map(ParamType::to_param).collect())
            }
        }
        impl ParamType for Option<$ty> {
            const NAME: &'static str = concat!($name, " or null");
            const IMPLICIT_DEFAULT: Option<&'static str> = Some("null");
            fn from_param(v: &Json) -> Result<Self, String> {
                option_param(v)
            }
            fn to_param(&self) -> Json {
                self.as_ref().map_or(Json::Null, ParamType::to_param)
            }
        }
    )*};
}

serde_param_types!(
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64", usize => "usize",
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", isize => "isize",
    f32 => "f32", f64 => "f64", bool => "bool", String => "string", Json => "json",
);

fn list_param<T: ParamType>(v: &Json) -> Result<Vec<T>, String> {
    match v {
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| T::from_param(x).map_err(|e| format!("item {i}: {e}")))
            .collect(),
        other => Err(format!("expected a list, got `{other}`")),
    }
}

fn option_param<T: ParamType>(v: &Json) -> Result<Option<T>, String> {
    match v {
        Json::Null => Ok(None),
        other => T::from_param(other).map(Some),
    }
}

impl ParamType for Test {
    const NAME: &'static str = "test";
    fn from_param(v: &Json) -> Result<Self, String> {
        Test::parse(v).map_err(|m| {
            format!(
                "{m}; write a test such as `{{lt: 10}}`, `{{eq: \"stop\"}}`, `{{not: {{contains: \"x\"}}}}`"
            )
        })
    }
    fn to_param(&self) -> Json {
        self.to_json()
    }
}

impl ParamType for Vec<Test> {
    const NAME: &'static str = "list of test";
    fn from_param(v: &Json) -> Result<Self, String> {
        list_param(v)
    }
    fn to_param(&self) -> Json {
        Json::Array(self.iter().map(Test::to_json).collect())
    }
}

impl ParamType for Option<Test> {
    const NAME: &'static str = "test or null";
    const IMPLICIT_DEFAULT: Option<&'static str> = Some("null");
    fn from_param(v: &Json) -> Result<Self, String> {
        option_param(v)
    }
    fn to_param(&self) -> Json {
        self.as_ref().map_or(Json::Null, Test::to_json)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::TypeRef;

    /// Every standard operator (the `ops` module table), with its ports (`name: type`, `T0` a type variable,
    /// `?` an optional input), policy and params (`name=default`, `name!` required).
    const STD: &[(&str, &str, &str, &str, &str)] = &[
        ("source", "", "out_data: DataString", "source", "value!"),
        ("const", "", "out_data: DataJSON", "source", "value!"),
        ("sink", "in_data: Any", "", "any", ""),
        ("file_loader", "", "out_data: Binary", "source", "path!"),
        ("text_file", "", "out_data: DataString", "source", "path!"),
        ("json_file", "", "out_data: DataJSON", "source", "path!"),
        (
            "fork",
            "in_data: T0",
            "out_a: T0, out_b: T0",
            "any",
            "arity=2",
        ),
        (
            "join",
            "in_a: T0, in_b: T1",
            "out_data: T0",
            "all",
            "arity=2",
        ),
        (
            "merge",
            "in_a: T0, in_b: T0",
            "out_data: T0",
            "any_no_guard",
            "arity=2",
        ),
        (
            "gate",
            "in_data: T0, in_condition: DataBool",
            "out_true: T0, out_false: T0",
            "custom",
            "",
        ),
        (
            "barrier",
            "in_a: T0, in_b: T1",
            "out_a: T0, out_b: T1",
            "all",
            "arity=2",
        ),
        (
            "guard",
            "in_data: T0",
            "out_continue: T0, out_exit: T0",
            "any",
            "continue_if!",
        ),
        (
            "accumulator",
            "in_data: Any, in_done?: Any",
            "out_data: DataJSON",
            "any_no_guard",
            "n=0",
        ),
        (
            "transform",
            "in_data: Any",
            "out_data: DataString",
            "any",
            "",
        ),
        (
            "format",
            "in_main: DataString, in_meta: DataString",
            "out_data: DataString",
            "all",
            "separator=\" \"",
        ),
        (
            "json_parse",
            "in_data: DataString",
            "out_data: DataJSON",
            "any",
            "",
        ),
        (
            "json_stringify",
            "in_data: DataJSON",
            "out_data: DataString",
            "any",
            "pretty=false",
        ),
        (
            "template",
            "in_template: DataString, in_data: DataJSON",
            "out_data: DataString",
            "all",
            "",
        ),
        (
            "binary_to_string",
            "in_data: Binary",
            "out_data: DataString",
            "any",
            "",
        ),
        (
            "json_get",
            "in_data: DataJSON",
            "out_data: DataJSON",
            "any",
            "path!",
        ),
        (
            "predicate",
            "in_data: Any",
            "out_data: DataBool",
            "any",
            "test!",
        ),
        (
            "chunker",
            "in_data: DataString",
            "out_data: DataChunk",
            "any",
            "size=512, overlap=0",
        ),
        (
            "counter",
            "in_data: DataJSON",
            "out_data: DataJSON",
            "any",
            "",
        ),
    ];

    fn ports(ps: &[PortSpec]) -> String {
        let v: Vec<String> = ps
            .iter()
            .map(|p| {
                let opt = if p.optional { "?" } else { "" };
                format!("{}{opt}: {}", p.name, p.ty.display_name())
            })
            .collect();
        v.join(", ")
    }

    fn params(ps: &[ParamInfo]) -> String {
        let v: Vec<String> = ps
            .iter()
            .map(|p| match p.default {
                Some(d) => format!("{}={d}", p.name),
                None => format!("{}!", p.name),
            })
            .collect();
        v.join(", ")
    }

    #[test]
    fn global_catalogue_has_every_standard_operator_as_declared() {
        let cat = Catalogue::global();
        for &(id, ins, outs, policy, ps) in STD {
            let e = cat
                .get(id)
                .unwrap_or_else(|| panic!("`{id}` is not in the catalogue"));
            let spec = (e.spec)();
            assert_eq!(spec.type_id, id);
            assert_eq!(ports(&spec.inputs), ins, "inputs of {id}");
            assert_eq!(ports(&spec.outputs), outs, "outputs of {id}");
            assert_eq!(e.policy.as_str(), policy, "policy of {id}");
            assert_eq!(spec.policy, e.policy, "policy of {id}'s spec");
            assert_eq!(params(e.params), ps, "params of {id}");
            assert!(!e.summary().is_empty(), "{id} has no description");
            assert!(!e.summary().contains('\n'));
        }
        assert_eq!(cat.get("switch").map(|e| e.id), Some("gate"));
        assert_eq!(cat.get("sync").map(|e| e.id), Some("barrier"));
        let ids: Vec<&str> = cat.iter().map(|e| e.id).collect();
        assert!(ids.is_sorted(), "iteration is sorted by id: {ids:?}");
    }

    #[test]
    fn structural_and_behavioral_families_follow_the_libraries() {
        let cat = Catalogue::global();
        for id in ["fork", "join", "merge", "gate", "barrier", "guard"] {
            assert_eq!(
                cat.get(id).map(|e| e.family),
                Some(Family::Structural),
                "{id}"
            );
        }
        for id in ["accumulator", "chunker", "sink", "source", "transform"] {
            assert_eq!(
                cat.get(id).map(|e| e.family),
                Some(Family::Behavioral),
                "{id}"
            );
        }
    }

    #[test]
    fn quick_standard_operators_run_inline_and_file_readers_on_the_blocking_pool() {
        let cat = Catalogue::global();
        let cx = BuildContext::default();
        let inline = [
            "source",
            "const",
            "sink",
            "transform",
            "format",
            "json_parse",
            "json_stringify",
            "template",
            "binary_to_string",
            "json_get",
            "predicate",
            "chunker",
            "counter",
            "accumulator",
        ];
        let kinds = [
            (&inline[..], Execution::Inline),
            (
                &["file_loader", "text_file", "json_file"],
                Execution::Blocking,
            ),
            (&["delay"], Execution::Async),
        ];
        for (ids, kind) in kinds {
            for id in ids {
                let e = cat.get(id).unwrap_or_else(|| panic!("`{id}` is missing"));
                assert_eq!(e.execution, kind, "catalogue entry of {id}");
                // What the engine asks: the built instance's own answer.
                let mut p = Params::new();
                for info in e.params.iter().filter(|i| i.default.is_none()) {
                    let v = match info.ty {
                        "test" => json!({"lt": 1}),
                        "json" => json!(1),
                        _ => json!("x"),
                    };
                    p.insert(info.name.into(), v);
                }
                let op = cat
                    .build(id, &p, &cx)
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                assert_eq!(op.execution(), kind, "instance of {id}");
                assert_eq!(e.settings, OpSettings::NONE, "{id}");
            }
        }
        // Structural operators run inline whatever they declare; the entry says so.
        for id in ["fork", "join", "merge", "gate", "barrier", "guard"] {
            assert_eq!(cat.get(id).map(|e| e.execution), Some(Execution::Inline));
        }
    }

    #[test]
    fn emission_sets_are_declared_for_routing_operators() {
        let cat = Catalogue::global();
        let sets = |id: &str| cat.get(id).map(|e| (e.spec)().emits).unwrap_or_default();
        assert_eq!(sets("gate"), vec![vec![0], vec![1]]);
        assert_eq!(sets("guard"), vec![vec![0], vec![1]]);
        assert_eq!(sets("accumulator"), vec![vec![], vec![0]]);
        assert!(sets("fork").is_empty());
    }

    #[test]
    fn arity_param_adds_lettered_ports_with_their_own_type_variables() {
        let cat = Catalogue::global();
        let cx = BuildContext::default();
        let mut p = Params::new();
        p.insert("arity".into(), json!(3));
        let barrier = cat.build("sync", &p, &cx).unwrap().spec();
        assert_eq!(ports(&barrier.inputs), "in_a: T0, in_b: T1, in_c: T2");
        assert_eq!(ports(&barrier.outputs), "out_a: T0, out_b: T1, out_c: T2");
        let fork = cat.build("fork", &p, &cx).unwrap();
        assert_eq!(
            ports(&fork.spec().outputs),
            "out_a: T0, out_b: T0, out_c: T0"
        );
        assert_eq!(fork.params().get("arity"), Some(&json!(3)));
        let join = cat.build("join", &p, &cx).unwrap().spec();
        assert_eq!(join.inputs[2].ty, TypeRef::Var(2));
        p.insert("arity".into(), json!(27));
        let e = cat.build("merge", &p, &cx).err().expect("an error");
        assert!(e.to_string().contains("between 2 and 26"), "{e}");
    }

    #[test]
    fn factory_rejects_unknown_missing_and_ill_typed_params() {
        let cat = Catalogue::global();
        let cx = BuildContext::default();
        let with = |k: &str, v: Json| {
            let mut p = Params::new();
            p.insert(k.into(), v);
            p
        };

        let BuildError::Param(e) = cat
            .build("chunker", &with("sise", json!(3)), &cx)
            .err()
            .expect("an error")
        else {
            panic!("a param error")
        };
        assert_eq!(e.message, "unknown param `sise`");
        assert_eq!(e.hint.as_deref(), Some("did you mean `size`?"));

        let BuildError::Param(e) = cat
            .build("guard", &Params::new(), &cx)
            .err()
            .expect("an error")
        else {
            panic!("a param error")
        };
        assert_eq!(e.param.as_deref(), Some("continue_if"));
        assert!(
            e.message.contains("missing param `continue_if` (test)"),
            "{e}"
        );

        let BuildError::Param(e) = cat
            .build("chunker", &with("size", json!("big")), &cx)
            .err()
            .expect("an error")
        else {
            panic!("a param error")
        };
        assert_eq!(e.param.as_deref(), Some("size"));
        assert_eq!(e.message, "param `size` expects usize, got `\"big\"`");

        let e = cat
            .build("guard", &with("continue_if", json!({"lower": 3})), &cx)
            .err()
            .expect("an error");
        assert!(e.to_string().contains("expects test"), "{e}");

        let BuildError::Param(e) = cat
            .build("chunker", &with("overlap", json!(600)), &cx)
            .err()
            .expect("an error")
        else {
            panic!("a param error")
        };
        assert_eq!(e.param.as_deref(), Some("overlap"));
    }

    #[test]
    fn factory_fills_defaults_and_writes_params_back() {
        let cat = Catalogue::global();
        let cx = BuildContext::default();
        let op = cat.build("chunker", &Params::new(), &cx).unwrap();
        assert_eq!(
            Json::Object(op.params()),
            json!({"size": 512, "overlap": 0})
        );
        let op = cat.build("format", &Params::new(), &cx).unwrap();
        assert_eq!(op.params().get("separator"), Some(&json!(" ")));
        let mut p = Params::new();
        p.insert("continue_if".into(), json!({"lt": 10}));
        let op = cat.build("guard", &p, &cx).unwrap();
        assert_eq!(
            Json::Object(op.params()),
            json!({"continue_if": {"lt": 10}})
        );
    }

    #[test]
    fn register_rejects_a_second_entry_with_the_same_id() {
        let mut cat = Catalogue::new();
        cat.register::<crate::ops::Gate>().unwrap();
        let e = cat
            .register::<crate::ops::Gate<crate::types::DataString>>()
            .expect_err("`gate` is registered twice");
        assert_eq!(e.id, "gate");
        assert!(cat.get("switch").is_some());
    }

    #[test]
    fn json_export_lists_ports_types_policies_and_params_of_every_operator() {
        let cat = Catalogue::global();
        let j = cat.to_json();
        let ops = j["operators"].as_array().unwrap();
        assert_eq!(ops.len(), cat.len());
        for &(id, ..) in STD {
            assert!(ops.iter().any(|o| o["id"] == id), "{id} missing from JSON");
        }
        let chunker = ops.iter().find(|o| o["id"] == "chunker").unwrap();
        assert_eq!(chunker["policy"], "any");
        assert_eq!(chunker["family"], "behavioral");
        assert_eq!(
            chunker["inputs"],
            json!([{"name": "in_data", "type": "DataString", "optional": false}])
        );
        assert_eq!(chunker["params"][0]["name"], "size");
        assert_eq!(chunker["params"][0]["type"], "usize");
        assert_eq!(chunker["params"][0]["default"], 512);
        assert_eq!(chunker["params"][0]["required"], false);
        assert_eq!(chunker["exec"], "inline");
        assert_eq!(chunker["settings"], json!({}));
        let text_file = ops.iter().find(|o| o["id"] == "text_file").unwrap();
        assert_eq!(text_file["exec"], "blocking");
        let gate = ops.iter().find(|o| o["id"] == "gate").unwrap();
        assert_eq!(gate["aliases"], json!(["switch"]));
        assert_eq!(gate["emits"], json!([["out_true"], ["out_false"]]));
        assert!(j["format"].as_str().unwrap().contains("connections:"));
        assert!(j["types"].as_array().unwrap().contains(&json!("DataChunk")));
        assert_eq!(j["policies"]["all"], Policy::All.describe());
    }

    #[test]
    fn markdown_export_has_a_section_per_operator_with_its_ports_and_params() {
        let cat = Catalogue::global();
        let md = cat.to_markdown();
        for e in cat.iter() {
            assert!(
                md.contains(&format!("### `{}` — {}", e.id, e.label)),
                "{}",
                e.id
            );
            assert!(md.contains(&e.summary()));
        }
        assert!(md.contains("- inputs: `in_data: DataString`"));
        assert!(md.contains("  - `size` (usize, default `512`): characters per chunk (≥ 1)"));
        assert!(md.contains("  - `continue_if` (test, required): "));
        assert!(md.contains("- aliases: `switch`"));
        assert!(md.contains("- exec: `async`\n"), "delay's execution kind");
        assert!(md.contains("emits one of: {`out_true`} or {`out_false`}"));
    }
}
