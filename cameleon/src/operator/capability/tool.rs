//! Tool calls and their results, the one shape every tool call has wherever it comes from (an
//! operator, a model's tool-calling loop, the command line, a satellite) and wherever the tool
//! runs; and [`ToolAccess`], the gate as an operator sees it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::CapFuture;

/// A request to call a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// Its arguments, checked against the tool's input schema before it runs.
    pub args: serde_json::Value,
    /// Who asks (an operator instance, `cli`, a model), for the policy and the record.
    #[serde(default)]
    pub principal: Option<String>,
    /// A key stable across re-runs of the same firing, so a tool with effects can deduplicate.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Who approved this call of a tool the policy lists under `approve:` — for the `tool`
    /// operator, the answer a person gave to its question (docs/tools.md). `None`: not
    /// approved, so the gate asks its [`Approver`](crate::tools::Approver) or denies the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
}

impl ToolCall {
    /// A call of `tool` with `args`, no principal, no idempotency key.
    pub fn new(tool: impl Into<String>, args: serde_json::Value) -> Self {
        ToolCall {
            tool: tool.into(),
            args,
            principal: None,
            idempotency_key: None,
            approved_by: None,
        }
    }

    /// The same call, asked by `principal`.
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The same call, with an idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The same call, approved by `who` (a person's yes, for a tool under `approve:`).
    pub fn approved_by(mut self, who: impl Into<String>) -> Self {
        self.approved_by = Some(who.into());
        self
    }
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and returned its content.
    Ok,
    /// The arguments were invalid, the tool is unknown, or the tool failed (or panicked).
    Error,
    /// The policy does not allow the call; the tool did not run.
    Denied,
    /// The tool did not finish in time.
    Timeout,
}

impl ToolStatus {
    /// `ok`, `error`, `denied` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Denied => "denied",
            ToolStatus::Timeout => "timeout",
        }
    }
}

impl fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Facts about a call, beside its result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMeta {
    /// The tool's name.
    pub tool: String,
    /// Where it ran: `local`, or `satellite:<name>`.
    pub origin: String,
    /// Wall-clock time of the call, validation included, in milliseconds.
    pub duration_ms: u64,
    /// How many times it was tried (0 when it never ran: denied, invalid arguments).
    pub attempts: u32,
    /// Tokens the call's model requests used, when it made any (a net offered as a tool:
    /// summed over its run's firings, docs/tools.md#nets-as-tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<super::Usage>,
    /// The run behind the call, when the tool is a net (`{"net","end","steps","firings",
    /// "history"}`, docs/tools.md#nets-as-tools): kept with the calling firing, so a replay or
    /// a backward step never runs it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<serde_json::Value>,
}

/// The result of a tool call: `{status, content, error, meta}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// How it ended.
    pub status: ToolStatus,
    /// What the tool returned (`null` unless `status` is `ok`).
    pub content: serde_json::Value,
    /// Why it did not succeed (`null` when `status` is `ok`).
    pub error: Option<String>,
    /// Where and how long.
    pub meta: ToolMeta,
}

impl ToolResult {
    /// A call that was not allowed to run.
    pub fn denied(tool: &str, why: impl Into<String>) -> Self {
        ToolResult::failed(ToolStatus::Denied, tool, why, 0)
    }

    /// A call that ended in `status` (not `ok`) after `attempts` attempts.
    pub fn failed(status: ToolStatus, tool: &str, why: impl Into<String>, attempts: u32) -> Self {
        ToolResult {
            status,
            content: serde_json::Value::Null,
            error: Some(why.into()),
            meta: ToolMeta {
                tool: tool.to_owned(),
                origin: "local".to_owned(),
                duration_ms: 0,
                attempts,
                usage: None,
                run: None,
            },
        }
    }

    /// Whether the status is `ok`.
    pub fn is_ok(&self) -> bool {
        self.status == ToolStatus::Ok
    }
}

/// A tool's side effects on the world (docs/tools.md#effects), from least to most: what a
/// `.cm` file may allow by itself (`none`, `read`) and what needs the user's grant (`write`,
/// `external`). Ordered, so the effects of several tools are their [`max`](Ord::max).
///
/// A model or embedder call is not an effect: it is a capability the user configured.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Computes from its arguments alone (`calc`, `json_query`).
    None,
    /// Reads local files (`read_file`, `list_dir`).
    Read,
    /// Writes local files (`write_file`).
    Write,
    /// Acts on the outside world: sends, posts, pays, deletes remotely. What a tool that says
    /// nothing of its effects is taken to do.
    #[default]
    External,
}

impl Effect {
    /// Every effect, least first.
    pub const ALL: [Effect; 4] = [Effect::None, Effect::Read, Effect::Write, Effect::External];

    /// `none`, `read`, `write` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::None => "none",
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::External => "external",
        }
    }

    /// What it does, in a message: `writes local files`.
    pub fn describe(self) -> &'static str {
        match self {
            Effect::None => "has no side effect",
            Effect::Read => "reads local files",
            Effect::Write => "writes local files",
            Effect::External => "acts on the outside world",
        }
    }

    /// Whether a `.cm` file's `allow:` lets a tool with these effects run without the user's
    /// grant: up to [`Read`](Effect::Read).
    pub fn needs_grant(self) -> bool {
        self > Effect::Read
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Effect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Effect::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| format!("unknown effect `{s}` (expected none, read, write or external)"))
    }
}

/// What an LLM (and a person) sees of a tool: its name, description and the JSON Schemas of
/// its arguments and of its result; and its [`effects`](Effect), which decide who may let it
/// run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// The tool's name (`calc`).
    pub name: String,
    /// What it does (the function's doc comment).
    pub description: String,
    /// Its side effects. A manifest that does not say (an older satellite's) is `external`.
    #[serde(default)]
    pub effects: Effect,
    /// JSON Schema of the arguments (an object).
    pub input_schema: serde_json::Value,
    /// JSON Schema of the content of an `ok` result (`true`: any JSON).
    pub output_schema: serde_json::Value,
    /// The tool says a repeated call with the same arguments does what the first did and
    /// answers the same: a run that reuses recorded firings (docs/semantics.md §5.9) may then
    /// reuse a firing that calls it even when its effects are `write` or `external`. Left out
    /// of the manifest's JSON when `false` (the default: a manifest that does not say is not
    /// idempotent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
}

/// The tool gate as a run sees it: the one door every tool call of the run goes through.
/// Implemented by [`tools::ToolGate`](crate::tools::ToolGate).
pub trait ToolAccess: Send + Sync + fmt::Debug {
    /// The manifest of tool `name`, if the generation has it (allowed or not).
    fn manifest(&self, name: &str) -> Option<ToolManifest>;

    /// The names of every tool of the generation, sorted.
    fn names(&self) -> Vec<String>;

    /// Calls a tool, asynchronously.
    fn call<'a>(&'a self, call: ToolCall) -> CapFuture<'a, ToolResult>;

    /// Calls a tool from synchronous code (a blocking operator's `run`).
    fn call_blocking(&self, call: ToolCall) -> ToolResult;

    /// Whether a call of tool `name` runs only once a person approves it, and why: the net
    /// lists it under `approve:`, or under `allow:` with effects beyond `read` that the user
    /// has not granted. The `tool` operator then asks before it fires (docs/tools.md). Default:
    /// never.
    fn asks_first(&self, name: &str) -> Option<AskFirst> {
        let _ = name;
        None
    }
}

/// Why a tool call needs a person's yes before it runs ([`ToolAccess::asks_first`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskFirst {
    /// The net lists the tool under `approve:`.
    Listed,
    /// The net lists it under `allow:`, but its effects go beyond `read` and the user has not
    /// granted it (`run --grant TOOL`, `grants:` in a trusted capabilities file).
    Ungranted(Effect),
}

/// A tool of the run, reached through the gate: what
/// [`Capabilities::tool`](super::Capabilities::tool) returns.
#[derive(Clone, Copy)]
pub struct ToolHandle<'a> {
    gate: &'a dyn ToolAccess,
    name: &'a str,
}

impl fmt::Debug for ToolHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHandle")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'a> ToolHandle<'a> {
    pub(super) fn new(gate: &'a dyn ToolAccess, name: &'a str) -> Self {
        ToolHandle { gate, name }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// Its manifest.
    pub fn manifest(&self) -> Option<ToolManifest> {
        self.gate.manifest(self.name)
    }

    /// Calls it with `args`, from synchronous code.
    pub fn call(&self, args: serde_json::Value) -> ToolResult {
        self.gate.call_blocking(ToolCall::new(self.name, args))
    }

    /// Calls it with `args`, asynchronously.
    pub fn call_async(&self, args: serde_json::Value) -> CapFuture<'a, ToolResult> {
        self.gate.call(ToolCall::new(self.name, args))
    }
}
