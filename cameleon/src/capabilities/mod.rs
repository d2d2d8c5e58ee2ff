//! Capabilities per generation: the chat models, embedders, memories, tools and observer a run
//! receives, assembled from **sources** into an immutable, numbered **generation**
//! (docs/capabilities.md).
//!
//! - **Sources** ([`CapabilitySource`]): a `cameleon.yaml` file ([`ConfigFile`]), the environment
//!   ([`EnvSource`]: the file named by `CAMELEON_CAPABILITIES`), code ([`CodeSource`]). Later
//!   sources override earlier ones, entry by entry.
//! - **A generation** ([`Generation`], in an `Arc`, numbered 1, 2, …) holds the registries:
//!   chat models, embedders, memories by name; the tools (every `#[tool]` of the program plus
//!   those registered in code); the observer.
//! - **The runtime** ([`Runtime`]) keeps the current generation; [`Runtime::reload`] asks the
//!   sources again and builds the next one. A run **pins** the generation current when it starts
//!   ([`Runtime::pin`], [`Runtime::cvm`]) and keeps it to its end: a reload never disturbs a run
//!   in flight.
//! - **A run's view** ([`RunCapabilities`]) is its generation plus the net's tool gate (the
//!   `.cm` `tools:` policy, file tools confined to the `.cm` file's folder). Operators reach it
//!   through [`Firing::capabilities`](crate::Firing::capabilities).
//!
//! ```
//! use std::sync::Arc;
//! use cameleon::capabilities::{CodeSource, Runtime};
//! use cameleon::ops::{CallTool, Const, Sink};
//! use cameleon::prelude::*;
//! use serde_json::json;
//!
//! let rt = Runtime::builder().source(CodeSource::new("code", |_b| Ok(()))).build()?;
//! assert_eq!(rt.generation(), 1);
//!
//! let mut b = Net::builder("sum");
//! b.add("args", Const::new(json!({"expr": "1 + 2"})));
//! b.add("calc", CallTool::new("calc"));
//! b.add("out", Sink::new());
//! b.connect("args.out_data", "calc.in_args").connect("calc.out_result", "out.in_data");
//! b.tools(cameleon::net::ToolPolicy::allow(["calc"]));
//! let mut cvm = rt.cvm(b.build()?, ".").build();   // pins generation 1
//! rt.reload()?;                                      // generation 2, for later runs
//! assert_eq!(cvm.run()?, EndState::Completed);
//! assert_eq!(cvm.generation(), 1);
//! assert_eq!(cvm.received("out")[0].to_json(), json!(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod caller;
mod config;
mod kinds;
mod mcp_section;
mod names;
mod nets_section;
mod price;
mod providers;
mod runtime;
pub mod trust;
mod untrusted;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use caller::{Caller, DEFAULT_MAX_DEPTH, MakeNetTool, NetEntry, NetToolMaker, intersect};
pub use config::{ENV_VAR, load_config_str};
pub use kinds::{Build, KindConfig, KindError, ProviderKind, Section, kinds};
pub use names::{CapabilityNames, NameCheck, check_names};
pub use runtime::{
    CapabilitiesError, CapabilitySource, CodeSource, ConfigFile, EnvSource, Grants, Runtime,
    RuntimeBuilder,
};

use crate::net::ToolPolicy;
use crate::operator::OpError;
use crate::operator::capability::{
    Budget, Capabilities, ChatModel, Embedder, Memory, Meter, MeteredChat, MeteredEmbedder, Price,
    Telemetry, ToolAccess, TracingTelemetry,
};
use crate::tools::{Tool, ToolGate, ToolRegistry};

/// An entry of a registry and where it was configured (for messages).
#[derive(Clone)]
struct Registered<T: ?Sized> {
    value: Arc<T>,
    from: String,
    /// Its price (`price_usd:`), for a chat model or an embedder.
    price: Option<Price>,
}

/// The sources' contributions while a generation is assembled: registries by name, extra
/// tools, the observer. A [`CapabilitySource`] writes into it; [`CodeSource`] hands it to your closure.
pub struct CapabilitiesBuilder {
    chat: BTreeMap<String, Registered<dyn ChatModel>>,
    embedders: BTreeMap<String, Registered<dyn Embedder>>,
    memories: BTreeMap<String, Registered<dyn Memory>>,
    tools: Vec<Arc<dyn Tool>>,
    observer: Option<Arc<dyn Telemetry>>,
    sources: Vec<String>,
    placer: Option<crate::net::Placing>,
    /// Tools the user granted, each with where (docs/tools.md#effects-and-grants).
    grants: BTreeMap<String, String>,
    /// MCP servers by name (docs/mcp.md).
    #[cfg(feature = "mcp")]
    mcp: BTreeMap<String, crate::mcp::McpServerConfig>,
    /// Nets offered as tools, in the order listed (docs/tools.md#nets-as-tools).
    nets: Vec<NetEntry>,
}

impl fmt::Debug for CapabilitiesBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapabilitiesBuilder")
            .field("chat", &self.chat.keys().collect::<Vec<_>>())
            .field("embedders", &self.embedders.keys().collect::<Vec<_>>())
            .field("memories", &self.memories.keys().collect::<Vec<_>>())
            .field("tools", &self.tools.len())
            .field("grants", &self.grants.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl CapabilitiesBuilder {
    fn new() -> Self {
        CapabilitiesBuilder {
            chat: BTreeMap::new(),
            embedders: BTreeMap::new(),
            memories: BTreeMap::new(),
            tools: Vec::new(),
            observer: None,
            sources: Vec::new(),
            placer: None,
            grants: BTreeMap::new(),
            #[cfg(feature = "mcp")]
            mcp: BTreeMap::new(),
            nets: Vec::new(),
        }
    }

    /// Offers the net of `entry` as tool `entry.name` (replacing an entry of that name, in its
    /// place): the generation fails to build unless `check --verify` holds for it
    /// (docs/tools.md#nets-as-tools).
    pub fn net_tool(&mut self, entry: NetEntry) -> &mut Self {
        match self.nets.iter_mut().find(|n| n.name == entry.name) {
            Some(n) => *n = entry,
            None => self.nets.push(entry),
        }
        self
    }

    /// Adds MCP server `config.name` (replacing one of that name): its tools join the
    /// generation's as `NAME.TOOL`, the server started when one is first needed (docs/mcp.md).
    #[cfg(feature = "mcp")]
    pub fn mcp_server(&mut self, config: crate::mcp::McpServerConfig) -> &mut Self {
        self.mcp.insert(config.name.clone(), config);
        self
    }

    /// Fires the `placement: remote` instances of inner nets (`subnet`, `map`) with `placer`
    /// (a connection to satellites).
    pub fn placer(&mut self, placer: Arc<dyn crate::net::Placer>) -> &mut Self {
        self.placer = Some(crate::net::Placing(placer));
        self
    }

    /// Grants tool `name`, as the user does (`run --grant TOOL`, `grants:` in a trusted
    /// capabilities file): under a net's `allow:` it runs unasked whatever its effects
    /// (docs/tools.md#effects-and-grants). `from` says where, for messages. Only code that
    /// speaks for the user should call this.
    pub fn grant(&mut self, name: impl Into<String>, from: impl Into<String>) -> &mut Self {
        self.grants.insert(name.into(), from.into());
        self
    }

    /// Registers chat model `name` (replacing one of that name).
    pub fn chat(&mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> &mut Self {
        self.chat.insert(
            name.into(),
            Registered {
                value: model,
                from: "code".into(),
                price: None,
            },
        );
        self
    }

    /// Registers embedder `name`.
    pub fn embedder(&mut self, name: impl Into<String>, e: Arc<dyn Embedder>) -> &mut Self {
        self.embedders.insert(
            name.into(),
            Registered {
                value: e,
                from: "code".into(),
                price: None,
            },
        );
        self
    }

    /// Registers memory `name`.
    pub fn memory(&mut self, name: impl Into<String>, m: Arc<dyn Memory>) -> &mut Self {
        self.memories.insert(
            name.into(),
            Registered {
                value: m,
                from: "code".into(),
                price: None,
            },
        );
        self
    }

    /// Prices chat model or embedder `name` of `section` (registered before), in US dollars per
    /// million tokens: what a run's `cost_usd` budget counts (docs/capabilities.md). A name the
    /// section does not hold is left alone.
    pub fn price(&mut self, section: Section, name: &str, price: Price) -> &mut Self {
        match section {
            Section::Chat => {
                if let Some(e) = self.chat.get_mut(name) {
                    e.price = Some(price);
                }
            }
            Section::Embedders => {
                if let Some(e) = self.embedders.get_mut(name) {
                    e.price = Some(price);
                }
            }
            Section::Memories => {}
        }
        self
    }

    /// Adds a tool beside the program's `#[tool]`s (replacing one of the same name).
    pub fn tool(&mut self, tool: Arc<dyn Tool>) -> &mut Self {
        self.tools.push(tool);
        self
    }

    /// Sets the observer (default: `tracing` events).
    pub fn observer(&mut self, observer: Arc<dyn Telemetry>) -> &mut Self {
        self.observer = Some(observer);
        self
    }

    /// Builds the entries of provider kinds marked `is_default` (the offline ones) as the
    /// `default` of their section, where no source configured one; and the chat models and
    /// embedders among them also under their kind's name (`extractive`, `hash`), where no
    /// source configured an entry of that name, so `model: extractive` names the offline model
    /// whatever `default` is. (A memory is a store, not a choice of model: `flat` is not a
    /// name.)
    fn add_defaults(&mut self) {
        for k in kinds() {
            if !k.is_default {
                continue;
            }
            match k.build {
                Build::Chat(f) => add_default(&mut self.chat, &["default", k.kind], k.kind, f),
                Build::Embedder(f) => {
                    add_default(&mut self.embedders, &["default", k.kind], k.kind, f);
                }
                Build::Memory(f) => add_default(&mut self.memories, &["default"], k.kind, f),
            }
        }
    }

    fn build(mut self, number: u64) -> Result<Generation, CapabilitiesError> {
        let nets = std::mem::take(&mut self.nets);
        let mut g = self.build_without_nets(number);
        if !nets.is_empty() {
            g.tools = caller::with_nets(&g.tools, &nets)?;
        }
        Ok(g)
    }

    fn build_without_nets(mut self, number: u64) -> Generation {
        self.add_defaults();
        #[cfg(feature = "mcp")]
        let servers: Vec<Arc<dyn crate::tools::ToolProvider>> = self
            .mcp
            .into_values()
            .map(|c| crate::mcp::McpServer::new(c) as Arc<dyn crate::tools::ToolProvider>)
            .collect();
        #[cfg(not(feature = "mcp"))]
        let servers: Vec<Arc<dyn crate::tools::ToolProvider>> = Vec::new();
        let tools = if self.tools.is_empty() && servers.is_empty() {
            Arc::clone(ToolRegistry::global())
        } else {
            let mut r = ToolRegistry::new();
            for t in self.tools {
                r.replace(t);
            }
            for s in servers {
                r.provider(s);
            }
            r.extend_from(ToolRegistry::global());
            Arc::new(r)
        };
        Generation {
            number,
            chat: self.chat,
            embedders: self.embedders,
            memories: self.memories,
            tools,
            observer: self.observer.unwrap_or_else(|| Arc::new(TracingTelemetry)),
            sources: self.sources,
            placer: self.placer,
            grants: self.grants,
        }
    }
}

/// Builds offline kind `kind` (no settings) under each of `names` that `map` does not hold.
fn add_default<T: ?Sized>(
    map: &mut BTreeMap<String, Registered<T>>,
    names: &[&str],
    kind: &str,
    build: fn(&KindConfig) -> Result<Arc<T>, KindError>,
) {
    for name in names {
        if map.contains_key(*name) {
            continue;
        }
        let cfg = KindConfig {
            name: (*name).into(),
            kind: kind.into(),
            settings: serde_json::Map::new(),
            base_dir: PathBuf::from("."),
        };
        if let Ok(value) = build(&cfg) {
            let from = format!("the built-in default (`{kind}`)");
            let price = None;
            map.insert((*name).into(), Registered { value, from, price });
        }
    }
}

/// An immutable set of capabilities, numbered: what runs pinned to it see, to their end.
pub struct Generation {
    number: u64,
    chat: BTreeMap<String, Registered<dyn ChatModel>>,
    embedders: BTreeMap<String, Registered<dyn Embedder>>,
    memories: BTreeMap<String, Registered<dyn Memory>>,
    tools: Arc<ToolRegistry>,
    observer: Arc<dyn Telemetry>,
    sources: Vec<String>,
    placer: Option<crate::net::Placing>,
    grants: BTreeMap<String, String>,
}

impl fmt::Debug for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generation")
            .field("number", &self.number)
            .field("chat", &self.chat.keys().collect::<Vec<_>>())
            .field("embedders", &self.embedders.keys().collect::<Vec<_>>())
            .field("memories", &self.memories.keys().collect::<Vec<_>>())
            .field("tools", &self.tools.len())
            .field("sources", &self.sources)
            .field("grants", &self.grants.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Generation {
    /// Its number: 1 for the first, one more at each reload.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The names of its chat models, sorted.
    pub fn chat_names(&self) -> impl Iterator<Item = &str> {
        self.chat.keys().map(String::as_str)
    }

    /// The names of its embedders, sorted.
    pub fn embedder_names(&self) -> impl Iterator<Item = &str> {
        self.embedders.keys().map(String::as_str)
    }

    /// The names of its memories, sorted.
    pub fn memory_names(&self) -> impl Iterator<Item = &str> {
        self.memories.keys().map(String::as_str)
    }

    /// Its tools.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// Every configured entry: its section, name, provider kind and where it was configured.
    pub fn entries(&self) -> Vec<(Section, &str, &str, &str)> {
        let mut out = Vec::new();
        for (n, e) in &self.chat {
            out.push((Section::Chat, n.as_str(), e.value.kind(), e.from.as_str()));
        }
        for (n, e) in &self.embedders {
            out.push((
                Section::Embedders,
                n.as_str(),
                e.value.kind(),
                e.from.as_str(),
            ));
        }
        for (n, e) in &self.memories {
            out.push((
                Section::Memories,
                n.as_str(),
                e.value.kind(),
                e.from.as_str(),
            ));
        }
        out
    }

    /// The tools the user granted, each with where the grant comes from.
    pub fn grants(&self) -> impl Iterator<Item = (&str, &str)> {
        self.grants.iter().map(|(t, f)| (t.as_str(), f.as_str()))
    }

    /// The sources it was built from, described.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// What a run of a net with tool policy `policy` sees: this generation and a tool gate
    /// applying the policy and the generation's grants, file tools confined to `base_dir`.
    pub fn for_run(
        self: &Arc<Self>,
        policy: Option<&ToolPolicy>,
        base_dir: impl Into<PathBuf>,
    ) -> Arc<RunCapabilities> {
        let meter = Arc::new(Meter::new(Budget::NONE));
        let caller = Caller::new(
            Arc::clone(self),
            Arc::clone(&meter),
            Some(policy.cloned().unwrap_or_default()),
            Vec::new(),
        );
        Arc::new(RunCapabilities {
            generation: Arc::clone(self),
            gate: ToolGate::new(Arc::clone(&self.tools), policy, base_dir)
                .grants(self.grants.keys().cloned())
                .caller(Arc::new(caller)),
            meter,
        })
    }

    /// What the user's own call of tool `tool` sees (`cameleon call TOOL`): a gate allowing
    /// that tool alone, file tools confined to `base_dir`; a net offered as a tool runs under
    /// its own `tools:` policy, with this generation and a meter of its own.
    pub fn for_call(
        self: &Arc<Self>,
        tool: &str,
        base_dir: impl Into<PathBuf>,
    ) -> Arc<RunCapabilities> {
        let meter = Arc::new(Meter::new(Budget::NONE));
        let caller = Caller::new(Arc::clone(self), Arc::clone(&meter), None, Vec::new());
        Arc::new(RunCapabilities {
            generation: Arc::clone(self),
            gate: ToolGate::allow_only(Arc::clone(&self.tools), tool, base_dir)
                .grants(self.grants.keys().cloned())
                .caller(Arc::new(caller)),
            meter,
        })
    }

    /// The error for a missing entry `name` of `section`.
    fn missing(&self, section: Section, names: Vec<&str>, name: &str) -> OpError {
        let key = section.key();
        let what = section.what();
        let have = if names.is_empty() {
            format!("no {what} is configured")
        } else {
            let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("it has {}", listed.join(", "))
        };
        let hint = match crate::util::did_you_mean(name, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? "),
            None => String::new(),
        };
        let place = if self.sources.is_empty() {
            "a `cameleon.yaml` beside the .cm file (or `--capabilities FILE`)".to_owned()
        } else {
            self.sources.join(" or ")
        };
        OpError::new(format!(
            "no {what} `{name}` in capability generation {} ({have}); {hint}configure it under `{key}:` in {place}, e.g. `{key}: {{{name}: {{kind: …}}}}`",
            self.number
        ))
    }
}

/// What one run sees: its pinned [`Generation`], the tool gate of its net, and its
/// [`Meter`] (budget and spending; the models it hands out check it before every request).
/// Implements the operator contract's [`Capabilities`].
pub struct RunCapabilities {
    generation: Arc<Generation>,
    gate: ToolGate,
    meter: Arc<Meter>,
}

impl fmt::Debug for RunCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunCapabilities")
            .field("generation", &self.generation.number)
            .field("gate", &self.gate)
            .finish()
    }
}

impl RunCapabilities {
    /// The pinned generation.
    pub fn generation_ref(&self) -> &Arc<Generation> {
        &self.generation
    }

    /// The run's tool gate.
    pub fn gate(&self) -> &ToolGate {
        &self.gate
    }

    /// The same capabilities with another gate (an approver, a time limit), for the same run
    /// (one meter).
    pub fn with_gate(&self, gate: ToolGate) -> Arc<RunCapabilities> {
        Arc::new(RunCapabilities {
            generation: Arc::clone(&self.generation),
            gate,
            meter: Arc::clone(&self.meter),
        })
    }

    /// The run's meter: its budget and what it spent.
    pub fn run_meter(&self) -> &Arc<Meter> {
        &self.meter
    }
}

impl Capabilities for RunCapabilities {
    fn generation(&self) -> u64 {
        self.generation.number
    }

    fn chat(&self, name: &str) -> Result<Arc<dyn ChatModel>, OpError> {
        let g = &self.generation;
        g.chat
            .get(name)
            .map(|e| {
                let meter = Arc::clone(&self.meter);
                Arc::new(MeteredChat::new(Arc::clone(&e.value), meter, e.price)) as _
            })
            .ok_or_else(|| g.missing(Section::Chat, g.chat_names().collect(), name))
    }

    fn embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, OpError> {
        let g = &self.generation;
        g.embedders
            .get(name)
            .map(|e| {
                let meter = Arc::clone(&self.meter);
                Arc::new(MeteredEmbedder::new(Arc::clone(&e.value), meter, e.price)) as _
            })
            .ok_or_else(|| g.missing(Section::Embedders, g.embedder_names().collect(), name))
    }

    fn memory(&self, name: &str) -> Result<Arc<dyn Memory>, OpError> {
        let g = &self.generation;
        g.memories
            .get(name)
            .map(|e| Arc::clone(&e.value))
            .ok_or_else(|| g.missing(Section::Memories, g.memory_names().collect(), name))
    }

    fn tools(&self) -> &dyn ToolAccess {
        &self.gate
    }

    fn observer(&self) -> &dyn Telemetry {
        &*self.generation.observer
    }

    fn placement(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        self.generation
            .placer
            .as_ref()
            .map(|p| p as &(dyn std::any::Any + Send + Sync))
    }

    fn meter(&self) -> Option<&Arc<Meter>> {
        Some(&self.meter)
    }
}
