//! What `cameleon check` knows of the capabilities: the names a set of sources defines, read
//! without building anything ([`CapabilityNames`]), and a net's names resolved against them
//! ([`check_names`]), each problem located in the `.cm` text like the loader's.

use std::collections::{BTreeMap, BTreeSet};

use super::kinds::{Build, Section, kinds};
use crate::cm::tree::{self, Kind, Node, Span};
use crate::cm::{CmError, CmProblem, CmProblemKind};
use crate::net::Net;
use crate::operator::capability::{Named, capability_params};
use crate::tools::ToolRegistry;

/// The chat models, embedders, memories and tools a set of sources defines, each name with
/// where it comes from — what [`RuntimeBuilder::names`](super::RuntimeBuilder::names) reads
/// without building, starting or contacting anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapabilityNames {
    chat: BTreeMap<String, String>,
    embedders: BTreeMap<String, String>,
    memories: BTreeMap<String, String>,
    tools: BTreeSet<String>,
    /// Tools the user granted (`grants:` of a trusted capabilities file, `--grant`).
    grants: BTreeSet<String>,
    /// MCP servers, each with where it is configured: their tools (`SERVER.TOOL`) are known
    /// only once they are started, which a check never does.
    mcp: BTreeMap<String, String>,
    sources: Vec<String>,
    /// Some source could not tell its names without running (code): any name may be defined.
    open: bool,
}

impl CapabilityNames {
    /// No names at all.
    pub fn new() -> Self {
        CapabilityNames::default()
    }

    fn section_mut(&mut self, s: Section) -> &mut BTreeMap<String, String> {
        match s {
            Section::Chat => &mut self.chat,
            Section::Embedders => &mut self.embedders,
            Section::Memories => &mut self.memories,
        }
    }

    /// Defines `name` in `section`, configured in `from` (a later definition wins, as a later
    /// source's entry does).
    pub fn define(&mut self, section: Section, name: &str, from: &str) {
        self.section_mut(section)
            .insert(name.to_owned(), from.to_owned());
    }

    /// Adds a tool.
    pub fn tool(&mut self, name: &str) {
        self.tools.insert(name.to_owned());
    }

    /// Records MCP server `name`, configured in `from`: every name `NAME.TOOL` counts as
    /// possibly defined (its tools are known only once it is started).
    pub fn mcp_server(&mut self, name: &str, from: &str) {
        self.mcp.insert(name.to_owned(), from.to_owned());
    }

    /// The MCP servers configured, sorted.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &str> {
        self.mcp.keys().map(String::as_str)
    }

    /// Records that the user granted tool `name` (docs/tools.md#effects-and-grants).
    pub fn grant(&mut self, name: &str) {
        self.grants.insert(name.to_owned());
    }

    /// Whether the user granted tool `name`.
    pub fn granted(&self, name: &str) -> bool {
        self.grants.contains(name)
    }

    /// Records a source the names were read from (for messages).
    pub fn source(&mut self, describe: String) {
        self.sources.push(describe);
    }

    /// Records that a source could not tell its names without running: from then on, every
    /// name counts as possibly defined.
    pub fn open(&mut self) {
        self.open = true;
    }

    /// Whether every source told its names (else a name that is not listed may still exist).
    pub fn is_complete(&self) -> bool {
        !self.open
    }

    /// The names of what a param names, sorted.
    pub fn names(&self, what: Named) -> Vec<&str> {
        match what {
            Named::Chat => self.chat.keys().map(String::as_str).collect(),
            Named::Embedder => self.embedders.keys().map(String::as_str).collect(),
            Named::Memory => self.memories.keys().map(String::as_str).collect(),
            Named::Tool => self.tools.iter().map(String::as_str).collect(),
        }
    }

    /// Whether `name` is defined (or, when the names are not complete, may be).
    pub fn has(&self, what: Named, name: &str) -> bool {
        self.open
            || self.names(what).contains(&name)
            || (what == Named::Tool
                && name
                    .split_once('.')
                    .is_some_and(|(server, _)| self.mcp.contains_key(server)))
    }

    /// The built-in defaults, where no source defined the name: as a generation adds them
    /// (the offline kinds as `default`, the chat and embedder ones also by their kind's name),
    /// and every tool of the program.
    pub(super) fn add_defaults(&mut self) {
        for k in kinds().filter(|k| k.is_default) {
            let (section, names): (Section, &[&str]) = match k.build {
                Build::Chat(_) => (Section::Chat, &["default", k.kind]),
                Build::Embedder(_) => (Section::Embedders, &["default", k.kind]),
                Build::Memory(_) => (Section::Memories, &["default"]),
            };
            let from = format!("the built-in default (`{}`)", k.kind);
            for n in names {
                self.section_mut(section)
                    .entry((*n).to_owned())
                    .or_insert_with(|| from.clone());
            }
        }
        for t in ToolRegistry::global().names() {
            self.tool(t);
        }
    }
}

/// What [`check_names`] found: errors (a name that is not defined) and warnings (tools every
/// call to which is denied), each a [`CmError`] of located problems.
#[derive(Clone, Debug)]
pub struct NameCheck {
    /// The names that are not defined; `None` when every name resolves.
    pub errors: Option<CmError>,
    /// Warnings ([`CmProblemKind::is_warning`]); `None` when there is none.
    pub warnings: Option<CmError>,
}

/// Resolves the names `net`'s operators give in their capability params
/// ([`CapabilityParam`](crate::operator::capability::CapabilityParam): the `std-ai` operators' `model`,
/// `memory`, `tools`) against `names`, and checks that an operator calling tools (a `tool`
/// operator, an `agent`) has them allowed by the net's `tools:` key. `text` is the `.cm` text
/// `net` was loaded from, named `file` in messages: each problem is located at the param's
/// value, or at the operator's `type:` for a param left at its default.
pub fn check_names(net: &Net, file: &str, text: &str, names: &CapabilityNames) -> NameCheck {
    let tree = tree::parse(text).ok();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let policy = net.tool_policy();
    for node in net.operators() {
        let type_id = node.spec.type_id.as_ref();
        let at = Locator::new(tree.as_ref(), &node.name);
        let params = node.op.params();
        let mut offered: Option<Vec<String>> = None;
        for cp in capability_params().filter(|p| p.op_type == type_id) {
            let value = params.get(cp.param);
            let listed: Vec<(usize, &str)> = match value {
                Some(serde_json::Value::String(s)) => vec![(usize::MAX, s.as_str())],
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
                    .collect(),
                _ => Vec::new(),
            };
            if cp.names == Named::Tool {
                offered = Some(listed.iter().map(|(_, s)| (*s).to_owned()).collect());
            }
            for (i, name) in listed {
                if names.has(cp.names, name) {
                    continue;
                }
                let span = at.param(cp.param, i);
                errors.push(CmProblem::new(
                    CmProblemKind::UnknownCapability,
                    text,
                    span,
                    undefined(&node.name, type_id, cp.names, name),
                    Some(define_hint(names, cp.names, name)),
                ));
            }
        }
        let calls = node.op.calls_tool().map(|t| vec![t.to_owned()]).or(offered);
        if let Some(tools) = calls
            && let Some(w) = tools_warning(&node.name, type_id, &tools, policy)
        {
            warnings.push(CmProblem::new(
                CmProblemKind::ToolsDenied,
                text,
                at.type_span(),
                w.0,
                Some(w.1),
            ));
        }
    }
    if let Some(policy) = policy {
        ungranted_warnings(policy, tree.as_ref(), text, names, &mut warnings);
        unknown_servers(net, policy, tree.as_ref(), text, names, &mut errors);
    }
    let wrap = |p: Vec<CmProblem>| (!p.is_empty()).then(|| CmError::new(file, text, p));
    NameCheck {
        errors: wrap(errors),
        warnings: wrap(warnings),
    }
}

/// `operator `answer` (llm) names chat model `gpt`, which the capabilities do not define`.
fn undefined(op: &str, type_id: &str, what: Named, name: &str) -> String {
    match what {
        Named::Tool => format!(
            "operator `{op}` ({type_id}) offers tool `{name}`, which this build does not have"
        ),
        _ => format!(
            "operator `{op}` ({type_id}) names {} `{name}`, which the capabilities do not define",
            what.what()
        ),
    }
}

/// A did-you-mean, what is defined, and where to define it.
fn define_hint(names: &CapabilityNames, what: Named, name: &str) -> String {
    let known = names.names(what);
    let mean = crate::util::did_you_mean(name, known.iter().copied())
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    if what == Named::Tool {
        return format!("{mean}`cameleon tools` lists the tools of this build");
    }
    let key = match what {
        Named::Chat => "chat",
        Named::Embedder => "embedders",
        _ => "memories",
    };
    let have = if known.is_empty() {
        format!("no {} is defined", what.what())
    } else {
        let listed: Vec<String> = known.iter().map(|n| format!("`{n}`")).collect();
        format!("the defined ones are {}", listed.join(", "))
    };
    let place = if names.sources.is_empty() {
        "a capabilities file (`cameleon.yaml` beside the .cm file, or `--capabilities FILE`)"
            .to_owned()
    } else {
        names.sources.join(" or ")
    };
    format!(
        "{mean}{have}; define it under `{key}:` in {place}, e.g. `{key}: {{{name}: {{kind: …}}}}`"
    )
}

/// The warning for an operator calling `tools` under `policy`: `(message, hint)`, or `None`
/// when the policy lets them run (or asks a person).
fn tools_warning(
    op: &str,
    type_id: &str,
    tools: &[String],
    policy: Option<&crate::net::ToolPolicy>,
) -> Option<(String, String)> {
    let what = match tools {
        [] => "calls tools".to_owned(),
        [one] => format!("calls tool `{one}`"),
        many => format!("calls tools {}", many.join(", ")),
    };
    let allow = if tools.is_empty() {
        "the tools it may call".to_owned()
    } else {
        tools.join(", ")
    };
    let Some(policy) = policy else {
        return Some((
            format!(
                "operator `{op}` ({type_id}) {what}, but the net has no `tools:` key: every tool call is denied"
            ),
            format!(
                "allow them with a top-level `tools: {{allow: [{allow}]}}` (after `config:`, before `operators:`), or `approve:` to have a person approve each call"
            ),
        ));
    };
    let denied: Vec<&str> = tools
        .iter()
        .map(String::as_str)
        .filter(|t| !policy.allow.iter().any(|a| a == t) && !policy.approve.iter().any(|a| a == t))
        .collect();
    (!denied.is_empty()).then(|| {
        (
            format!(
                "operator `{op}` ({type_id}) {what}, but the net's `tools:` does not allow {}: each call to {} is denied",
                denied.join(", "),
                if denied.len() == 1 { "it" } else { "them" }
            ),
            format!("add {} under `tools: allow:` (or `approve:`)", denied.join(", ")),
        )
    })
}

/// A warning at each tool under `tools: allow:` whose effects go beyond `read` and that the user
/// has not granted: the `.cm` file cannot let it run unasked (docs/tools.md#effects-and-grants).
fn ungranted_warnings(
    policy: &crate::net::ToolPolicy,
    tree: Option<&Node>,
    text: &str,
    names: &CapabilityNames,
    out: &mut Vec<CmProblem>,
) {
    let items = tree
        .and_then(|t| t.get("tools"))
        .and_then(|t| t.get("allow"));
    for (i, name) in policy.allow.iter().enumerate() {
        let Some(tool) = ToolRegistry::global().get(name) else {
            continue;
        };
        let effects = tool.manifest().effects;
        if !effects.needs_grant() || names.granted(name) {
            continue;
        }
        let span = items
            .map(|a| match &a.kind {
                Kind::Seq(list) => list.get(i).map_or(a.span, |n| n.span),
                _ => a.span,
            })
            .unwrap_or(Span {
                line: 1,
                column: 1,
                ..Span::default()
            });
        out.push(CmProblem::new(
            CmProblemKind::NeedsGrant,
            text,
            span,
            format!(
                "tool `{name}` {} (effects `{effects}`): a .cm file's `allow:` lets a tool run unasked only up to `read`, so each call asks a person (from a `tool` operator) or is denied (from an `agent`)",
                effects.describe()
            ),
            Some(format!(
                "grant it for a run with `cameleon run FILE.cm --grant {name}` (or `grants: [{name}]` in a trusted capabilities file); or list it under `approve:` to say that a person approves each call"
            )),
        ));
    }
}

/// An error at each `SERVER.TOOL` name (under `tools:`, or a `tool` operator's `name`) whose
/// server no capabilities file configures under `mcp:`.
fn unknown_servers(
    net: &Net,
    policy: &crate::net::ToolPolicy,
    tree: Option<&Node>,
    text: &str,
    names: &CapabilityNames,
    out: &mut Vec<CmProblem>,
) {
    let start = Span {
        line: 1,
        column: 1,
        ..Span::default()
    };
    let mut listed: Vec<(String, Span)> = Vec::new();
    for key in ["allow", "approve"] {
        let items = tree.and_then(|t| t.get("tools")).and_then(|t| t.get(key));
        let list = if key == "allow" {
            &policy.allow
        } else {
            &policy.approve
        };
        for (i, name) in list.iter().enumerate() {
            let span = items
                .map(|a| match &a.kind {
                    Kind::Seq(l) => l.get(i).map_or(a.span, |n| n.span),
                    _ => a.span,
                })
                .unwrap_or(start);
            listed.push((name.clone(), span));
        }
    }
    for node in net.operators() {
        if let Some(t) = node.op.calls_tool() {
            listed.push((
                t.to_owned(),
                Locator::new(tree, &node.name).param("name", 0),
            ));
        }
    }
    for (name, span) in listed {
        let Some((server, _)) = name.split_once('.') else {
            continue;
        };
        if names.has(Named::Tool, &name) {
            continue;
        }
        let configured: Vec<String> = names.mcp_servers().map(|s| format!("`{s}`")).collect();
        let have = if configured.is_empty() {
            "no MCP server is configured".to_owned()
        } else {
            format!("the configured ones are {}", configured.join(", "))
        };
        out.push(CmProblem::new(
            CmProblemKind::UnknownCapability,
            text,
            span,
            format!("tool `{name}` names MCP server `{server}`, which the capabilities do not configure"),
            Some(format!(
                "{have}; configure it under `mcp:` in a capabilities file, e.g. `mcp: {{{server}: {{command: …}}}}` (docs/mcp.md)"
            )),
        ));
    }
}

/// Finds an operator's declaration, and in it the text of a param, in the located tree.
struct Locator<'t> {
    op: Option<&'t Node>,
}

impl<'t> Locator<'t> {
    fn new(tree: Option<&'t Node>, name: &str) -> Self {
        let op = tree
            .and_then(|t| t.get("operators"))
            .and_then(|ops| match &ops.kind {
                Kind::Seq(items) => items
                    .iter()
                    .find(|o| o.get("id").and_then(Node::as_str) == Some(name)),
                _ => None,
            });
        Locator { op }
    }

    /// The operator's `type:` (else its `id:`, else the file's start).
    fn type_span(&self) -> Span {
        self.op
            .and_then(|o| o.get("type").or_else(|| o.get("id")))
            .map_or(
                Span {
                    line: 1,
                    column: 1,
                    ..Span::default()
                },
                |n| n.span,
            )
    }

    /// Param `param`'s value (its item `index` when it is a list), else the operator's type.
    fn param(&self, param: &str, index: usize) -> Span {
        let Some(v) = self
            .op
            .and_then(|o| o.get("params"))
            .and_then(|p| p.get(param))
        else {
            return self.type_span();
        };
        match &v.kind {
            Kind::Seq(items) => items.get(index).map_or(v.span, |i| i.span),
            _ => v.span,
        }
    }
}
