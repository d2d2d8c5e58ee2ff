//! The tools of a generation: the [`Tool`] trait, the static [`ToolEntry`] that `#[tool]`
//! submits, and [`ToolRegistry`], tools by name with their compiled argument schemas.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value as Json;

use super::ToolError;
use super::schema::{SCHEMAS, Schema};
use crate::operator::capability::{CapFuture, Effect, ToolManifest, Usage};

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
    /// The calling run, as its gate was given it ([`ToolGate::caller`](super::ToolGate::caller)):
    /// what a tool that runs a net needs of its caller (docs/tools.md#nets-as-tools).
    pub(crate) caller: Lent,
}

/// What a calling run lends the tools it calls (shared, opaque here). Compares equal always:
/// it is who asks, not part of what is asked.
#[derive(Clone, Default)]
pub(crate) struct Lent(pub(crate) Option<Arc<dyn std::any::Any + Send + Sync>>);

impl fmt::Debug for Lent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Lent(..)"
        } else {
            "Lent(None)"
        })
    }
}

impl PartialEq for Lent {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Lent {}

/// What a tool reports of its call beside its result (shared between the gate's context and the
/// tool): where a forwarded call ran, the tokens its model requests used, the run of a net
/// behind it. Compares equal always: it is an output of the call, not part of what it asks.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReportedOrigin(Arc<std::sync::Mutex<Reports>>);

#[derive(Clone, Debug, Default)]
pub(crate) struct Reports {
    pub(crate) origin: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) run: Option<Json>,
}

impl PartialEq for ReportedOrigin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ReportedOrigin {}

impl ReportedOrigin {
    /// What the tool reported.
    pub(crate) fn get(&self) -> Reports {
        self.0.lock().map(|o| o.clone()).unwrap_or_default()
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
            caller: Lent::default(),
        }
    }

    /// Says where this call actually ran (`satellite:<name>`), for a tool that forwards calls
    /// to other processes: the gate writes it as the result's `meta.origin` instead of the
    /// tool's [`origin`](Tool::origin).
    pub fn report_origin(&self, origin: impl Into<String>) {
        if let Ok(mut o) = self.origin.0.lock() {
            o.origin = Some(origin.into());
        }
    }

    /// Says what the call's model requests used (a net run as a tool: summed over its
    /// firings): the gate writes it as the result's `meta.usage`, and the calling firing adds
    /// it to its own.
    pub fn report_usage(&self, usage: Usage) {
        if let Ok(mut o) = self.origin.0.lock() {
            o.usage = Some(usage);
        }
    }

    /// Says what ran behind the call (a net run as a tool: its run, history included): the
    /// gate writes it as the result's `meta.run`, kept with the calling firing.
    pub fn report_run(&self, run: Json) {
        if let Ok(mut o) = self.origin.0.lock() {
            o.run = Some(run);
        }
    }

    /// The calling run, when the gate was given it ([`ToolGate::caller`](super::ToolGate::caller)).
    pub fn caller(&self) -> Option<&Arc<dyn std::any::Any + Send + Sync>> {
        self.caller.0.as_ref()
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
    /// `#[tool(idempotent)]`: a repeated call does what the first did (see
    /// [`ToolManifest::idempotent`]).
    pub idempotent: bool,
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
            idempotent: self.idempotent,
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

/// A source of tools known only once it is started — an MCP server (docs/mcp.md): its tools
/// are named `PREFIX.TOOL`, and it is started the first time one of them is needed (looked up,
/// listed), once per registry.
pub trait ToolProvider: Send + Sync + fmt::Debug {
    /// The first part of its tools' names (`everything` for `everything.echo`).
    fn prefix(&self) -> &str;

    /// Starts it (if needed) and lists its tools, each named `PREFIX.NAME`. `Err`: why it
    /// could not, for the messages of calls to its tools.
    fn tools(&self) -> CapFuture<'_, Result<Vec<Arc<dyn Tool>>, String>>;
}

/// A provider and, once it was started, its tools (or why it could not start).
struct Provided {
    provider: Arc<dyn ToolProvider>,
    tools: OnceLock<Result<BTreeMap<String, Registered>, String>>,
}

impl Provided {
    fn settle(&self, listed: Result<Vec<Arc<dyn Tool>>, String>) {
        self.tools.get_or_init(|| {
            listed.map(|tools| {
                tools
                    .into_iter()
                    .map(|t| (t.manifest().name.clone(), Registered::new(t)))
                    .collect()
            })
        });
    }

    /// Its tools, starting it (blocking this thread) the first time.
    fn started(&self) -> &Result<BTreeMap<String, Registered>, String> {
        if self.tools.get().is_none() {
            let listed = crate::runtime::block_on(self.provider.tools());
            self.settle(listed);
        }
        self.tools
            .get()
            .unwrap_or_else(|| unreachable!("settled just above"))
    }
}

/// What a lookup by name found.
pub(super) enum Lookup<'a> {
    /// The tool.
    Found(&'a Registered),
    /// No tool of that name.
    Missing,
    /// Its provider could not start: why.
    Unavailable(&'a str),
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
    /// Providers by prefix, started when first needed.
    providers: BTreeMap<String, Provided>,
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
        for (prefix, p) in &other.providers {
            if !self.providers.contains_key(prefix) {
                self.provider(Arc::clone(&p.provider));
            }
        }
    }

    /// Adds a provider of tools named `PREFIX.TOOL`, started the first time one of them is
    /// needed (replacing a provider of the same prefix).
    pub fn provider(&mut self, provider: Arc<dyn ToolProvider>) {
        self.providers.insert(
            provider.prefix().to_owned(),
            Provided {
                provider,
                tools: OnceLock::new(),
            },
        );
    }

    /// The prefixes of the providers, sorted (whether started or not).
    pub fn provider_prefixes(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// The provider of `name` (`PREFIX.TOOL`), if `name` is not a tool of its own.
    fn provided(&self, name: &str) -> Option<&Provided> {
        if self.tools.contains_key(name) {
            return None;
        }
        let (prefix, _) = name.split_once('.')?;
        self.providers.get(prefix)
    }

    /// Starts the provider of tool `name`, if it has one that is not started yet, without
    /// blocking: what the gate's async [`call`](super::ToolGate::call) does before it looks the
    /// tool up.
    pub async fn prepare(&self, name: &str) {
        if let Some(p) = self.provided(name)
            && p.tools.get().is_none()
        {
            let listed = p.provider.tools().await;
            p.settle(listed);
        }
    }

    /// Tool `name` (starting its provider, blocking, the first time one of its tools is needed).
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        match self.lookup(name) {
            Lookup::Found(r) => Some(&r.tool),
            _ => None,
        }
    }

    pub(super) fn lookup(&self, name: &str) -> Lookup<'_> {
        if let Some(r) = self.tools.get(name) {
            return Lookup::Found(r);
        }
        let Some(p) = self.provided(name) else {
            return Lookup::Missing;
        };
        match p.started() {
            Ok(tools) => tools.get(name).map_or(Lookup::Missing, Lookup::Found),
            Err(why) => Lookup::Unavailable(why),
        }
    }

    /// Whether `name` is a tool of this registry, or may be one: `SERVER.TOOL` names a tool of an
    /// MCP server, known only once the server is started — which loading a `.cm` file never
    /// does (the gate says, at the call, whether the server has it; `cameleon check` whether
    /// such a server is configured). Starts nothing.
    pub fn may_have(&self, name: &str) -> bool {
        self.tools.contains_key(name) || name.contains('.')
    }

    /// Starts every provider not started yet (blocking): what listing every tool needs.
    fn start_all(&self) {
        for p in self.providers.values() {
            p.started();
        }
    }

    /// Every name, sorted (starting every provider, blocking, the first time).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.start_all();
        self.all().map(|(n, _)| n)
    }

    /// Every tool with its registration, sorted by name (the providers' that started).
    fn all(&self) -> impl Iterator<Item = (&str, &Registered)> {
        let mut all: Vec<(&str, &Registered)> =
            self.tools.iter().map(|(n, r)| (n.as_str(), r)).collect();
        for p in self.providers.values() {
            if let Some(Ok(tools)) = p.tools.get() {
                all.extend(tools.iter().map(|(n, r)| (n.as_str(), r)));
            }
        }
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.into_iter()
    }

    /// Every manifest, sorted by name: what `cameleon tools --json` prints (starting every
    /// provider, blocking, the first time).
    pub fn manifests(&self) -> Vec<ToolManifest> {
        self.start_all();
        self.all().map(|(_, r)| r.tool.manifest().clone()).collect()
    }

    /// The providers that could not start, each with why (after [`names`](Self::names) or
    /// [`manifests`](Self::manifests) started them).
    pub fn unavailable(&self) -> Vec<(&str, &str)> {
        self.providers
            .iter()
            .filter_map(|(n, p)| match p.tools.get() {
                Some(Err(why)) => Some((n.as_str(), why.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Number of tools (those of the providers that started included).
    pub fn len(&self) -> usize {
        self.all().count()
    }

    /// Whether it has no tool and no provider.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.providers.is_empty()
    }
}
