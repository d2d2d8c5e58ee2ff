//! [`ToolGate`]: the one door every tool call goes through — policy, argument check, the call
//! itself (panic caught, time bounded), one result shape.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use super::registry::{Lookup, Registered, ToolContext, ToolOutput, ToolRegistry};
use super::{ToolError, ToolErrorKind};
use crate::net::ToolPolicy;
use crate::operator::capability::{
    AskFirst, CapFuture, Effect, ToolAccess, ToolCall, ToolManifest, ToolMeta, ToolResult,
    ToolStatus,
};
use crate::runtime::{CatchPanic, Panic, block_on, catch_panic};

/// A human's answer to a tool call under `approve:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// Do not run it, for this reason.
    Refused(String),
}

/// Who answers the calls of tools listed under `approve:` (a person, through the `ask`
/// machinery of the run). A gate without one denies such calls, saying an approval is needed.
pub trait Approver: Send + Sync + fmt::Debug {
    /// Asks whether `call` may run.
    fn approve<'a>(&'a self, call: &'a ToolCall) -> CapFuture<'a, Approval>;
}

/// What the gate lets through.
#[derive(Clone, Debug)]
enum Rules {
    /// No `tools:` key: every tool denied.
    NoPolicy,
    /// The net's `tools:` key.
    Policy {
        allow: BTreeSet<String>,
        approve: BTreeSet<String>,
    },
    /// One tool, allowed for this gate alone (`cameleon call TOOL`).
    Only(String),
}

/// What the policy says of one call.
enum Admit {
    Run,
    AskFirst(AskFirst),
}

/// The tool gate: one access policy, one argument check, one result shape, for every tool
/// call of a run (docs/tools.md).
///
/// - **Policy**: built from the net's `tools:` key ([`ToolPolicy`]). A tool neither in `allow`
///   nor in `approve` is `denied`; with no key at all, every tool is. A tool under `approve`
///   runs when the call comes approved ([`ToolCall::approved_by`]: the `tool` operator asks a
///   person first, docs/semantics.md §6.1) or once an [`Approver`] says yes; otherwise it is
///   `denied`, saying an approval is needed. A denied call never runs.
/// - **Effects and grants**: `allow` lets a tool run unasked only if its
///   [effects](crate::tools::Effect) go no further than `read`, or the user granted it
///   ([`grants`](Self::grants): `run --grant TOOL`, `grants:` in a trusted capabilities file).
///   An ungranted `write` or `external` tool under `allow` is treated as under `approve`, and
///   its denial names `--grant` (docs/tools.md#effects-and-grants).
/// - **Arguments** are checked against the tool's input schema; a mismatch is `error`, naming
///   the place in the arguments and the schema path (and never quoting the value).
/// - **The call**: a panic is an `error`; a tool that outlives its time limit is `timeout`.
#[derive(Clone)]
pub struct ToolGate {
    registry: Arc<ToolRegistry>,
    rules: Rules,
    base_dir: PathBuf,
    approver: Option<Arc<dyn Approver>>,
    timeout: Option<Duration>,
    /// Tools the user granted: they run unasked under `allow:` whatever their effects.
    grants: Arc<BTreeSet<String>>,
    /// The run whose calls these are, handed to each tool ([`ToolContext::caller`]).
    caller: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl fmt::Debug for ToolGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolGate")
            .field("rules", &self.rules)
            .field("base_dir", &self.base_dir)
            .field("grants", &self.grants)
            .field("tools", &self.registry.len())
            .finish_non_exhaustive()
    }
}

impl ToolGate {
    /// A gate over `registry` applying `policy` (the net's `tools:` key; `None`: every tool
    /// denied), file tools confined to `base_dir`.
    pub fn new(
        registry: Arc<ToolRegistry>,
        policy: Option<&ToolPolicy>,
        base_dir: impl Into<PathBuf>,
    ) -> Self {
        let rules = match policy {
            None => Rules::NoPolicy,
            Some(p) => Rules::Policy {
                allow: p.allow.iter().cloned().collect(),
                approve: p.approve.iter().cloned().collect(),
            },
        };
        ToolGate {
            registry,
            rules,
            base_dir: base_dir.into(),
            approver: None,
            timeout: None,
            grants: Arc::default(),
            caller: None,
        }
    }

    /// A gate that allows tool `name` alone (what `cameleon call NAME` uses: the person typing
    /// the command is the approval). Confinement still applies.
    pub fn allow_only(
        registry: Arc<ToolRegistry>,
        name: impl Into<String>,
        base_dir: impl Into<PathBuf>,
    ) -> Self {
        ToolGate {
            registry,
            rules: Rules::Only(name.into()),
            base_dir: base_dir.into(),
            approver: None,
            timeout: None,
            grants: Arc::default(),
            caller: None,
        }
    }

    /// Hands `caller` — what the calling run lends the tools it calls — to every tool called
    /// through this gate ([`ToolContext::caller`]): a net offered as a tool runs with its
    /// caller's capabilities (docs/tools.md#nets-as-tools).
    pub fn caller(mut self, caller: Arc<dyn std::any::Any + Send + Sync>) -> Self {
        self.caller = Some(caller);
        self
    }

    /// What the gate lets through, as a policy: `None` when it lets any tool through (the
    /// user's own `cameleon call TOOL`), else the net's `tools:` (every tool denied: empty).
    pub fn policy(&self) -> Option<ToolPolicy> {
        match &self.rules {
            Rules::NoPolicy => Some(ToolPolicy::default()),
            Rules::Only(_) => None,
            Rules::Policy { allow, approve } => Some(ToolPolicy {
                allow: allow.iter().cloned().collect(),
                approve: approve.iter().cloned().collect(),
            }),
        }
    }

    /// Asks `approver` before running a tool under `approve:`.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Grants `tools`: under the net's `allow:` they run unasked whatever their effects (the
    /// user's `run --grant TOOL`, a trusted capabilities file's `grants:`). A grant never lets
    /// in a tool the net does not list, nor one it lists under `approve:`.
    pub fn grants<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut g = BTreeSet::clone(&self.grants);
        g.extend(tools.into_iter().map(Into::into));
        self.grants = Arc::new(g);
        self
    }

    /// The tools granted ([`grants`](Self::grants)).
    pub fn granted(&self) -> impl Iterator<Item = &str> {
        self.grants.iter().map(String::as_str)
    }

    /// Whether a call of `name` needs a person's yes first, and why (see
    /// [`ToolAccess::asks_first`]).
    pub fn asks_first(&self, name: &str) -> Option<AskFirst> {
        let Rules::Policy { allow, approve } = &self.rules else {
            return None;
        };
        if allow.contains(name) {
            let effects = self.registry.get(name)?.manifest().effects;
            (effects.needs_grant() && !self.grants.contains(name))
                .then_some(AskFirst::Ungranted(effects))
        } else if approve.contains(name) {
            Some(AskFirst::Listed)
        } else {
            None
        }
    }

    /// Bounds every call to `limit` (a tool's own `timeout_ms` takes precedence).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The tools behind the gate.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The folder file tools are confined to.
    pub fn base_dir(&self) -> &std::path::Path {
        &self.base_dir
    }

    /// Calls a tool, asynchronously. Never panics; every outcome is a [`ToolResult`].
    pub async fn call(&self, mut call: ToolCall) -> ToolResult {
        let t0 = Instant::now();
        // A tool of an MCP server not started yet: start it here, without blocking a thread.
        self.registry.prepare(&call.tool).await;
        let (reg, admit) = match self.admit(&call) {
            Ok(x) => x,
            Err(r) => return finished(r, t0),
        };
        if let Admit::AskFirst(why) = admit
            && call.approved_by.is_none()
        {
            match &self.approver {
                Some(a) => {
                    if let Approval::Refused(why) = a.approve(&call).await {
                        return finished(refused(&call.tool, &why), t0);
                    }
                    call.approved_by = Some("the run's approver".to_owned());
                }
                None => return finished(needs_approval(&call.tool, why), t0),
            }
        }
        let cx = self.context(&call);
        let limit = self.limit(reg);
        let outcome = match catch_panic(|| reg.tool.call(&cx, call.args)) {
            Err(panic) => Err(panicked(&panic)),
            Ok(ToolOutput::Ready(r)) => late(r, t0, limit),
            Ok(ToolOutput::Pending(f)) => pending(f, limit).await,
        };
        self.result(&call.tool, reg, outcome, t0, cx.origin.get())
    }

    /// Calls a tool from synchronous code: a sync tool runs on this thread; an async one on
    /// Caméléon's runtime ([`block_on`](crate::runtime::block_on)).
    pub fn call_blocking(&self, mut call: ToolCall) -> ToolResult {
        let t0 = Instant::now();
        let (reg, admit) = match self.admit(&call) {
            Ok(x) => x,
            Err(r) => return finished(r, t0),
        };
        if let Admit::AskFirst(why) = admit
            && call.approved_by.is_none()
        {
            match &self.approver {
                Some(a) => {
                    if let Approval::Refused(why) = block_on(a.approve(&call)) {
                        return finished(refused(&call.tool, &why), t0);
                    }
                    call.approved_by = Some("the run's approver".to_owned());
                }
                None => return finished(needs_approval(&call.tool, why), t0),
            }
        }
        let cx = self.context(&call);
        let limit = self.limit(reg);
        let outcome = match catch_panic(|| reg.tool.call(&cx, call.args)) {
            Err(panic) => Err(panicked(&panic)),
            Ok(ToolOutput::Ready(r)) => late(r, t0, limit),
            Ok(ToolOutput::Pending(f)) => block_on(pending(f, limit)),
        };
        self.result(&call.tool, reg, outcome, t0, cx.origin.get())
    }

    /// The policy's verdict, the tool, and its arguments checked: what may run. `Err`: the
    /// result of a call that must not run.
    // The error is the call's final result, returned at once to the caller: boxing it would only
    // add an allocation to every refused call.
    #[allow(clippy::result_large_err)]
    fn admit(&self, call: &ToolCall) -> Result<(&Registered, Admit), ToolResult> {
        let name = call.tool.as_str();
        let admit = match &self.rules {
            Rules::NoPolicy => {
                return Err(ToolResult::denied(
                    name,
                    format!(
                        "tool `{name}` is denied: the net has no `tools:` key, so every tool is denied (add `tools: {{allow: [{name}]}}` to the .cm file)"
                    ),
                ));
            }
            Rules::Only(only) if only == name => Admit::Run,
            Rules::Only(only) => {
                return Err(ToolResult::denied(
                    name,
                    format!("tool `{name}` is denied: only `{only}` may be called here"),
                ));
            }
            Rules::Policy { allow, approve } => {
                if allow.contains(name) {
                    // Whether its effects need a grant is known once the tool is found.
                    Admit::Run
                } else if approve.contains(name) {
                    Admit::AskFirst(AskFirst::Listed)
                } else {
                    return Err(ToolResult::denied(
                        name,
                        format!(
                            "tool `{name}` is denied: it is not listed in the net's `tools:` policy (add it to `allow:`, or to `approve:` to have a person approve each call)"
                        ),
                    ));
                }
            }
        };
        let reg = match self.registry.lookup(name) {
            Lookup::Found(reg) => reg,
            Lookup::Unavailable(why) => {
                return Err(ToolResult::failed(
                    ToolStatus::Error,
                    name,
                    why.to_owned(),
                    0,
                ));
            }
            Lookup::Missing => return Err(self.missing(name)),
        };
        if let Err(why) = reg.check_args(&call.args) {
            return Err(ToolResult::failed(ToolStatus::Error, name, why, 0));
        }
        let effects = reg.tool.manifest().effects;
        let admit = match admit {
            Admit::Run
                if matches!(self.rules, Rules::Policy { .. })
                    && effects.needs_grant()
                    && !self.grants.contains(name) =>
            {
                Admit::AskFirst(AskFirst::Ungranted(effects))
            }
            other => other,
        };
        Ok((reg, admit))
    }

    /// The result of a call of a tool the registry does not have.
    #[cold]
    fn missing(&self, name: &str) -> ToolResult {
        let hint = match name.split_once('.') {
            Some((server, _))
                if !self.registry.provider_prefixes().any(|p| p == server)
                    && !self.registry.names().any(|n| n == name) =>
            {
                format!(
                    "no MCP server `{server}` is configured: a name `SERVER.TOOL` names a tool of the server under `mcp:` in a capabilities file (docs/mcp.md)"
                )
            }
            _ => match crate::util::did_you_mean(name, self.registry.names()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "`cameleon tools` lists the tools of this build".to_owned(),
            },
        };
        ToolResult::failed(
            ToolStatus::Error,
            name,
            format!("no tool named `{name}` ({hint})"),
            0,
        )
    }

    fn context(&self, call: &ToolCall) -> ToolContext {
        ToolContext {
            base_dir: self.base_dir.clone(),
            principal: call.principal.clone(),
            idempotency_key: call.idempotency_key.clone(),
            approved_by: call.approved_by.clone(),
            origin: Default::default(),
            caller: super::registry::Lent(self.caller.clone()),
        }
    }

    fn limit(&self, reg: &Registered) -> Option<Duration> {
        reg.tool
            .timeout_ms()
            .map(Duration::from_millis)
            .or(self.timeout)
    }

    /// The result of a call that ran once.
    fn result(
        &self,
        name: &str,
        reg: &Registered,
        outcome: Result<Json, ToolError>,
        t0: Instant,
        reported: super::registry::Reports,
    ) -> ToolResult {
        let meta = ToolMeta {
            tool: name.to_owned(),
            origin: reported
                .origin
                .unwrap_or_else(|| reg.tool.origin().to_owned()),
            duration_ms: t0.elapsed().as_millis() as u64,
            attempts: 1,
            usage: reported.usage,
            run: reported.run,
        };
        match outcome {
            Ok(content) => ToolResult {
                status: ToolStatus::Ok,
                content,
                error: None,
                meta,
            },
            Err(e) => ToolResult {
                status: match e.kind() {
                    ToolErrorKind::Timeout => ToolStatus::Timeout,
                    ToolErrorKind::Failed | ToolErrorKind::InvalidArgs => ToolStatus::Error,
                },
                content: Json::Null,
                error: Some(e.message().to_owned()),
                meta,
            },
        }
    }
}

impl ToolAccess for ToolGate {
    fn manifest(&self, name: &str) -> Option<ToolManifest> {
        self.registry.get(name).map(|t| t.manifest().clone())
    }

    fn names(&self) -> Vec<String> {
        self.registry.names().map(str::to_owned).collect()
    }

    fn call<'a>(&'a self, call: ToolCall) -> CapFuture<'a, ToolResult> {
        let span = tool_span(&call);
        Box::pin(async move {
            let r = tracing::Instrument::instrument(ToolGate::call(self, call), span.clone()).await;
            record_status(&span, &r);
            r
        })
    }

    fn call_blocking(&self, call: ToolCall) -> ToolResult {
        let span = tool_span(&call);
        let r = span.in_scope(|| ToolGate::call_blocking(self, call));
        record_status(&span, &r);
        r
    }

    fn asks_first(&self, name: &str) -> Option<AskFirst> {
        ToolGate::asks_first(self, name)
    }
}

/// The span of one tool call, named after the OpenTelemetry GenAI conventions
/// (`execute_tool {tool}`, `gen_ai.operation.name`, `gen_ai.tool.name`); its status recorded
/// when it returns. Never the arguments or the result (they may hold anything).
fn tool_span(call: &ToolCall) -> tracing::Span {
    tracing::info_span!(
        target: "cameleon::tools",
        "execute_tool",
        "otel.name" = %format_args!("execute_tool {}", call.tool),
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = %call.tool,
        "gen_ai.tool.type" = "function",
        status = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    )
}

fn record_status(span: &tracing::Span, r: &ToolResult) {
    if span.is_disabled() {
        return;
    }
    let status = serde_json::to_value(r.status).ok();
    let status = status.as_ref().and_then(|s| s.as_str()).unwrap_or("?");
    span.record("status", status);
    if status != "ok" {
        span.record("error.type", status);
    }
}

/// A result that did not run, with the time spent deciding.
fn finished(mut r: ToolResult, t0: Instant) -> ToolResult {
    r.meta.duration_ms = t0.elapsed().as_millis() as u64;
    r
}

fn needs_approval(name: &str, why: AskFirst) -> ToolResult {
    let message = match why {
        AskFirst::Listed => format!(
            "tool `{name}` needs a person's approval (it is under `approve:` in the net's `tools:` policy) and this call was not approved: call it through the `tool` operator, which asks before it fires, or move it to `allow:` to let it run unasked"
        ),
        AskFirst::Ungranted(effects) => ungranted(name, effects),
    };
    ToolResult::denied(name, message)
}

/// Why an ungranted `write`/`external` tool under `allow:` did not run.
fn ungranted(name: &str, effects: Effect) -> String {
    format!(
        "tool `{name}` {} (effects `{effects}`) and the user has not granted it: a .cm file's `allow:` lets a tool run unasked only up to `read`. Grant it for the run with `--grant {name}` (`cameleon run FILE.cm --grant {name}`), or list it under `grants:` in a trusted capabilities file; a `tool` operator calling it asks a person first instead",
        effects.describe()
    )
}

fn refused(name: &str, why: &str) -> ToolResult {
    ToolResult::denied(
        name,
        format!("the call of tool `{name}` was refused: {why}"),
    )
}

fn timed_out(limit: Duration) -> ToolError {
    ToolError::timeout(format!("timed out after {} ms", limit.as_millis()))
}

/// A sync tool's result, or `timeout` when it ran past its limit (it could not be interrupted).
fn late(
    r: Result<Json, ToolError>,
    t0: Instant,
    limit: Option<Duration>,
) -> Result<Json, ToolError> {
    match limit {
        Some(limit) if t0.elapsed() > limit => Err(ToolError::timeout(format!(
            "ran for {} ms, over its limit of {} ms (a synchronous tool cannot be interrupted; its result is dropped)",
            t0.elapsed().as_millis(),
            limit.as_millis()
        ))),
        _ => r,
    }
}

#[cold]
fn panicked(p: &Panic) -> ToolError {
    ToolError::new(format!("the tool panicked: {}", p.message()))
}

/// An async tool's call awaited: its panic caught, cut short at `limit`.
async fn pending(
    f: CapFuture<'_, Result<Json, ToolError>>,
    limit: Option<Duration>,
) -> Result<Json, ToolError> {
    let f = async {
        CatchPanic::new(f)
            .await
            .unwrap_or_else(|p| Err(panicked(&p)))
    };
    match limit {
        Some(limit) => match tokio::time::timeout(limit, f).await {
            Ok(r) => r,
            Err(_) => Err(timed_out(limit)),
        },
        None => f.await,
    }
}
