//! The tools of a generation: the [`Tool`] trait, the static [`ToolEntry`] that `#[tool]`
//! submits, and [`ToolRegistry`], tools by name with their compiled argument schemas.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value as Json;

use super::ToolError;
use super::schema::{SCHEMAS, Schema};
use crate::operator::capability::{CapFuture, Effect, ToolManifest};

/// What a running tool knows of its call: the base folder file tools are confined to, who
/// asks, and the call's idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolContext {
    /// The folder file tools resolve paths against and may not leave (the `.cm` file's folder).
    pub base_dir: PathBuf,
    /// Who asks.
    pub principal: Option<String>,
    /// A key stable across re-runs of the same firing.
    pub idempotency_key: Option<String>,
    /// Who approved the call, when it needed a person's approval and got it (a tool that
    /// forwards calls passes it along: a satellite runs such a tool only with it).
    pub approved_by: Option<String>,
    /// Where the call actually ran, when the tool forwarded it ([`report_origin`](Self::report_origin)).
    pub(crate) origin: ReportedOrigin,
}

/// Where a forwarded call ran, as the tool reports it (shared between the gate's context and
/// the tool). Compares equal always: it is an output of the call, not part of what it asks.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReportedOrigin(Arc<std::sync::Mutex<Option<String>>>);

impl PartialEq for ReportedOrigin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ReportedOrigin {}

impl ReportedOrigin {
    /// What the tool reported, if anything.
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|o| o.clone())
    }
}

impl ToolContext {
    /// A context confined to `base_dir`.
    pub fn new(base_dir: impl Into<PathBuf>) -> Self {
        ToolContext {
            base_dir: base_dir.into(),
            principal: None,
            idempotency_key: None,
            approved_by: None,
            origin: ReportedOrigin::default(),
        }
    }

    /// Says where this call actually ran (`satellite:<name>`), for a tool that forwards calls
    /// to other processes: the gate writes it as the result's `meta.origin` instead of the
    /// tool's [`origin`](Tool::origin).
    pub fn report_origin(&self, origin: impl Into<String>) {
        if let Ok(mut o) = self.origin.0.lock() {
            *o = Some(origin.into());
        }
    }

    /// The base folder.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }
}

/// What a tool's call gives: a result at once (a sync tool) or a future (an async one).
pub enum ToolOutput<'a> {
    /// Finished.
    Ready(Result<Json, ToolError>),
    /// To be awaited.
    Pending(CapFuture<'a, Result<Json, ToolError>>),
}

impl fmt::Debug for ToolOutput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOutput::Ready(r) => f.debug_tuple("Ready").field(r).finish(),
            ToolOutput::Pending(_) => f.write_str("Pending"),
        }
    }
}

/// A tool, as the gate calls it. `#[tool]` functions are wrapped into one; a satellite's
/// remote tools implement it too.
pub trait Tool: Send + Sync + fmt::Debug {
    /// Name, description, schemas.
    fn manifest(&self) -> &ToolManifest;

    /// Where it runs: `local`, or `satellite:<name>`.
    fn origin(&self) -> &str {
        "local"
    }

    /// Its own time limit, if any (the gate's applies otherwise).
    fn timeout_ms(&self) -> Option<u64> {
        None
    }

    /// Runs the tool on arguments the gate has already checked against the input schema.
    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a>;
}

/// The function behind a `#[tool]`: sync or async.
#[derive(Clone, Copy, Debug)]
pub enum ToolFn {
    /// `fn(args) -> Result<T, ToolError>`.
    Sync(fn(&ToolContext, Json) -> Result<Json, ToolError>),
    /// `async fn(args) -> Result<T, ToolError>`.
    Async(for<'a> fn(&'a ToolContext, Json) -> CapFuture<'a, Result<Json, ToolError>>),
}

/// A tool declared with `#[tool]`, submitted to the global registry with `inventory`.
#[derive(Clone, Copy)]
pub struct ToolEntry {
    /// The name (`calc`): the function's, unless `#[tool(name = "…")]`.
    pub name: &'static str,
    /// The function's doc comment.
    pub description: &'static str,
    /// JSON Schema of the arguments struct.
    pub input_schema: fn() -> Json,
    /// JSON Schema of the result (`true` when the type has none, e.g. `impl Serialize`).
    pub output_schema: fn() -> Json,
    /// `#[tool(timeout_ms = N)]`.
    pub timeout_ms: Option<u64>,
    /// `#[tool(effects = …)]`; `external` when the attribute does not say.
    pub effects: Effect,
    /// The function.
    pub run: ToolFn,
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

inventory::collect!(ToolEntry);

impl ToolEntry {
    /// The manifest: name, description (the doc comment, paragraphs kept, lines joined), the
    /// two schemas.
    pub fn manifest(&self) -> ToolManifest {
        ToolManifest {
            name: self.name.to_owned(),
            description: describe(self.description),
            effects: self.effects,
            input_schema: (self.input_schema)(),
            output_schema: (self.output_schema)(),
        }
    }
}

/// A doc comment as one description: lines of a paragraph joined, paragraphs kept.
fn describe(doc: &str) -> String {
    doc.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A [`ToolEntry`] as a [`Tool`].
struct Static {
    entry: ToolEntry,
    manifest: ToolManifest,
}

impl fmt::Debug for Static {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.entry.name)
            .finish_non_exhaustive()
    }
}

impl Tool for Static {
    fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }
    fn timeout_ms(&self) -> Option<u64> {
        self.entry.timeout_ms
    }
    #[inline]
    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a> {
        match self.entry.run {
            ToolFn::Sync(f) => ToolOutput::Ready(f(cx, args)),
            ToolFn::Async(f) => ToolOutput::Pending(f(cx, args)),
        }
    }
}

/// Two tools claim one name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool `{name}` is registered twice; tool names must be unique")]
pub struct DuplicateTool {
    /// The name.
    pub name: String,
}

/// A tool and its compiled argument schema.
pub(super) struct Registered {
    pub(super) tool: Arc<dyn Tool>,
    schema: OnceLock<Result<Schema, String>>,
}

impl Registered {
    fn new(tool: Arc<dyn Tool>) -> Self {
        Registered {
            tool,
            schema: OnceLock::new(),
        }
    }

    /// Checks a call's arguments against the tool's input schema (compiled on first use).
    /// `Err`: why they break it, or why the schema itself is invalid (a bug of the tool's
    /// declaration). Without the `json-schema` feature, nothing is checked here: the tool
    /// reads its arguments itself (a `#[tool]` through serde) and refuses what it cannot read.
    pub(super) fn check_args(&self, args: &Json) -> Result<(), String> {
        if !SCHEMAS {
            return Ok(());
        }
        let schema = self.schema.get_or_init(|| {
            Schema::compile(&self.tool.manifest().input_schema).map_err(|e| {
                format!(
                    "the input schema of tool `{}` is not a valid JSON Schema: {e}",
                    self.tool.manifest().name
                )
            })
        });
        match schema {
            Ok(s) => s
                .args_problem(&self.tool.manifest().name, args)
                .map_or(Ok(()), Err),
            Err(why) => Err(why.clone()),
        }
    }
}

/// Tools by name, sorted.
///
/// ```
/// use cameleon::tools::ToolRegistry;
///
/// let tools = ToolRegistry::global();
/// assert!(tools.names().any(|n| n == "calc"));
/// let m = tools.get("json_query").expect("a standard tool").manifest();
/// assert_eq!(m.input_schema["required"], serde_json::json!(["value", "path"]));
/// ```
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// No tools.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// Every `#[tool]` of the program.
    pub fn from_inventory() -> Result<Self, DuplicateTool> {
        let mut r = ToolRegistry::new();
        for e in inventory::iter::<ToolEntry> {
            r.insert_entry(*e)?;
        }
        Ok(r)
    }

    /// The process-wide registry of every `#[tool]`, shared. Panics, naming it, if two tools
    /// share a name: a build mistake no run can work around.
    pub fn global() -> &'static Arc<ToolRegistry> {
        static GLOBAL: OnceLock<Arc<ToolRegistry>> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            Arc::new(ToolRegistry::from_inventory().unwrap_or_else(|e| panic!("{e}")))
        })
    }

    /// Adds a `#[tool]` entry.
    pub fn insert_entry(&mut self, entry: ToolEntry) -> Result<(), DuplicateTool> {
        let manifest = entry.manifest();
        self.insert(Arc::new(Static { entry, manifest }))
    }

    /// Adds a tool; a name already present is an error.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) -> Result<(), DuplicateTool> {
        let name = tool.manifest().name.clone();
        if self.tools.contains_key(&name) {
            return Err(DuplicateTool { name });
        }
        self.tools.insert(name, Registered::new(tool));
        Ok(())
    }

    /// Adds a tool, replacing one of the same name.
    pub fn replace(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.manifest().name.clone();
        self.tools.insert(name, Registered::new(tool));
    }

    /// Copies the tools of `other` in (a name present in both keeps this registry's tool).
    pub fn extend_from(&mut self, other: &ToolRegistry) {
        for (name, r) in &other.tools {
            if !self.tools.contains_key(name) {
                self.tools
                    .insert(name.clone(), Registered::new(Arc::clone(&r.tool)));
            }
        }
    }

    /// Tool `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|r| &r.tool)
    }

    pub(super) fn registered(&self, name: &str) -> Option<&Registered> {
        self.tools.get(name)
    }

    /// Every name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Every manifest, sorted by name: what `cameleon tools --json` prints.
    pub fn manifests(&self) -> Vec<ToolManifest> {
        self.tools
            .values()
            .map(|r| r.tool.manifest().clone())
            .collect()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
