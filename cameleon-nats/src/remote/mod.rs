//! The run's side: [`Remote`], a connection to the satellites of a prefix; the proxy operator
//! that fires a `placement: remote` instance on one; [`RemoteTool`], a tool reached the same way.

mod registry;

pub use registry::{MISSED_HEARTBEATS, Registry, Seen};

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::client::RequestErrorKind;
use async_nats::{Client, HeaderMap};
use cameleon::connection::{ConnState, OpId};
use cameleon::net::Placement;
use cameleon::operator::capability::ToolManifest;
use cameleon::operator::{
    FiniteControl, Firing, OpFuture, OpSettings, OpSpec, OpState, Params, Question,
};
use cameleon::policy::Enabling;
use cameleon::tools::{Tool, ToolContext, ToolError, ToolOutput};
use cameleon::types::{TypedValue, Value};
use cameleon::{Execution, InputSet, Net, OpError, Operator};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::wire::{
    Effects, ErrorKind, Heartbeat, KEY_HEADER, OpReply, OpRequest, Subjects, ToolReply,
    ToolRequest, VERSION_HEADER, WIRE_VERSION, WireInput, WirePolicy, WireTool,
};
use crate::{NatsError, NatsOptions};

/// The default time a call may take, all tries included, when its instance sets no
/// `timeout_ms`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's connection to the satellites of one prefix.
#[derive(Clone, Debug)]
pub struct Remote {
    client: Client,
    subjects: Subjects,
    url: Arc<str>,
    timeout: Duration,
}

impl Remote {
    /// Connects, from synchronous code (on Caméléon's runtime, so the connection outlives the
    /// caller's).
    pub fn connect(options: &NatsOptions) -> Result<Remote, NatsError> {
        let o = options.clone();
        cameleon::runtime::block_on(async move {
            match cameleon::runtime::spawn(async move { Remote::connect_async(&o).await }).await {
                Ok(r) => r,
                Err(e) => Err(NatsError::Nats(format!("the connection task failed: {e}"))),
            }
        })
    }

    /// Connects, from async code (the connection's task runs on the caller's runtime).
    pub async fn connect_async(options: &NatsOptions) -> Result<Remote, NatsError> {
        let client = options.connect_here(None).await?;
        Ok(Remote {
            client,
            subjects: options.subjects(),
            url: Arc::from(options.url.as_str()),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Bounds each call of an instance without `timeout_ms` to `limit` (default
    /// [`DEFAULT_TIMEOUT`]): after it, a call nobody answered is an error naming the operator
    /// type.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// The subjects.
    pub fn subjects(&self) -> &Subjects {
        &self.subjects
    }

    /// The NATS client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Replaces every `placement: remote` instance of `net` by a proxy that fires it on a
    /// satellite; returns how many. Call it before building the engine. An instance's ports,
    /// settings and name are unchanged; its operator, built locally from the catalogue, still
    /// answers the engine's questions (firing rule, consumption, state for backward steps) and
    /// lends its state's type.
    pub fn place(&self, net: &mut Net) -> usize {
        let policy = net.tool_policy().map(|p| WirePolicy {
            allow: p.allow.clone(),
            approve: p.approve.clone(),
        });
        let remote: Vec<(OpId, Duration)> = net
            .operators()
            .iter()
            .enumerate()
            .filter(|(_, o)| o.placement == Placement::Remote)
            .map(|(i, o)| {
                let limit = o
                    .effective_settings()
                    .timeout_ms
                    .map_or(self.timeout, Duration::from_millis);
                (OpId(i as u32), limit)
            })
            .collect();
        for (id, limit) in &remote {
            let name = net.op(*id).name.clone();
            let policy = policy.clone();
            let me = self.clone();
            let limit = *limit;
            net.wrap_operator(*id, move |inner| {
                let spec = inner.spec();
                Box::new(RemoteOp {
                    inner,
                    remote: me,
                    ty: spec.type_id.into_owned(),
                    instance: name,
                    policy,
                    limit,
                })
            });
        }
        remote.len()
    }

    /// Sends one firing and waits for its reply, re-sending while no satellite answers (none
    /// hosts the type yet) or every one that answers is busy, until `limit`.
    pub async fn fire(&self, req: &OpRequest, limit: Duration) -> Result<OpReply, OpError> {
        let subject = self.subjects.op(&req.ty);
        let body = serde_json::to_vec(req)
            .map_err(|e| OpError::new(format!("cannot encode the firing request: {e}")))?;
        let what = format!("operator type `{}` (instance `{}`)", req.ty, req.instance);
        let reply: OpReply = self
            .exchange(&subject, body, Some(&req.key), limit, |r: &OpReply| {
                r.kind == Some(ErrorKind::Busy)
            })
            .await
            .map_err(|e| self.explain(e, &subject, &what, limit))?;
        Ok(reply)
    }

    /// Calls a tool on a satellite, re-sending while none answers or all are busy, until
    /// `limit`.
    pub async fn call_tool(
        &self,
        req: &ToolRequest,
        limit: Duration,
    ) -> Result<ToolReply, ToolError> {
        let subject = self.subjects.tool(&req.tool);
        let body = serde_json::to_vec(req)
            .map_err(|e| ToolError::new(format!("cannot encode the tool call: {e}")))?;
        let what = format!("tool `{}`", req.tool);
        self.exchange(
            &subject,
            body,
            req.key.as_deref(),
            limit,
            |r: &ToolReply| r.kind == Some(ErrorKind::Busy),
        )
        .await
        .map_err(|e| ToolError::new(self.explain(e, &subject, &what, limit).message().to_owned()))
    }

    /// One call: sent, its reply read and its version checked; sent again while nobody listens
    /// or the reply says `busy` (a busy satellite took nothing: not a failed attempt), with a
    /// pause growing from 1 to 100 ms, until `limit`.
    async fn exchange<R: DeserializeOwned + Versioned>(
        &self,
        subject: &str,
        body: Vec<u8>,
        key: Option<&str>,
        limit: Duration,
        busy: fn(&R) -> bool,
    ) -> Result<R, Failure> {
        let t0 = Instant::now();
        let mut headers = HeaderMap::new();
        headers.insert(VERSION_HEADER, WIRE_VERSION.to_string().as_str());
        if let Some(k) = key {
            headers.insert(KEY_HEADER, k);
        }
        let body = bytes::Bytes::from(body);
        let mut pause = Duration::from_millis(1);
        let mut last_busy = None;
        loop {
            let left = limit.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(last_busy.map_or(Failure::NoResponders, Failure::Busy));
            }
            let r = self
                .client
                .send_request(
                    subject.to_owned(),
                    async_nats::Request::new()
                        .payload(body.clone())
                        .headers(headers.clone())
                        .timeout(Some(left)),
                )
                .await;
            match r {
                Ok(m) => {
                    let reply: R = serde_json::from_slice(&m.payload).map_err(|e| {
                        Failure::Other(format!("the reply on `{subject}` cannot be read: {e}"))
                    })?;
                    if reply.version() != WIRE_VERSION {
                        return Err(Failure::Other(format!(
                            "wire version mismatch: satellite `{}` answered in version {}, this program speaks {WIRE_VERSION} (run satellites built with the same Caméléon version; docs/wire.md)",
                            reply.satellite(),
                            reply.version()
                        )));
                    }
                    if !busy(&reply) {
                        return Ok(reply);
                    }
                    last_busy = Some(reply.satellite().to_owned());
                }
                Err(e) => match e.kind() {
                    RequestErrorKind::NoResponders => {}
                    RequestErrorKind::TimedOut => return Err(Failure::TimedOut),
                    _ => return Err(Failure::Other(e.to_string())),
                },
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    fn explain(&self, f: Failure, subject: &str, what: &str, limit: Duration) -> OpError {
        let ms = limit.as_millis();
        OpError::new(match f {
            Failure::NoResponders => format!(
                "no satellite hosts {what}: nothing answered on `{subject}` at {} within {ms} ms; start one with `cameleon satellite --nats {}` from a program that links it",
                self.url, self.url
            ),
            Failure::TimedOut => format!(
                "the satellite running {what} did not answer within {ms} ms (it may have died or be overloaded); set the instance's `timeout_ms:` and `retry:` to retry on another"
            ),
            Failure::Busy(last) => format!(
                "every satellite hosting {what} was busy for {ms} ms (the last to answer: `{last}`); start more satellites, raise their `--concurrency`, or give the instance a longer `timeout_ms:`"
            ),
            Failure::Other(e) => format!("NATS request on `{subject}` failed: {e}"),
        })
    }

    /// The satellites that answer a discovery request (or heartbeat) within `wait`, sorted by
    /// name.
    pub async fn discover(&self, wait: Duration) -> Result<Vec<Seen>, NatsError> {
        let mut registry = Registry::default();
        for (h, at) in self.gather(wait).await? {
            registry.seen(h, at);
        }
        Ok(registry.live_at(Instant::now()))
    }

    /// The manifests (with effects) of the tools the satellites host, one per name, sorted by
    /// name.
    pub async fn tool_manifests(&self, wait: Duration) -> Result<Vec<WireTool>, NatsError> {
        let mut by_name = std::collections::BTreeMap::new();
        for (h, _) in self.gather(wait).await? {
            for m in h.manifests {
                by_name.entry(m.manifest.name.clone()).or_insert(m);
            }
        }
        Ok(by_name.into_values().collect())
    }

    /// The heartbeats and discovery answers received within `wait`.
    async fn gather(&self, wait: Duration) -> Result<Vec<(Heartbeat, Instant)>, NatsError> {
        let inbox = self.client.new_inbox();
        let mut sub = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        let mut beats = self
            .client
            .subscribe(self.subjects.heartbeats())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        self.client
            .publish_with_reply(self.subjects.discover(), inbox, bytes::Bytes::new())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot publish: {e}")))?;
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let m = tokio::select! {
                m = sub.next() => m,
                m = beats.next() => m,
                () = tokio::time::sleep_until(deadline) => break,
            };
            let Some(m) = m else { break };
            if let Ok(h) = serde_json::from_slice::<Heartbeat>(&m.payload) {
                got.push((h, Instant::now()));
            }
        }
        Ok(got)
    }

    /// Follows the heartbeats of the prefix's satellites into `registry` until the returned
    /// task is aborted.
    pub async fn watch(
        &self,
        registry: Arc<std::sync::Mutex<Registry>>,
    ) -> Result<tokio::task::JoinHandle<()>, NatsError> {
        let mut beats = self
            .client
            .subscribe(self.subjects.heartbeats())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        self.client
            .flush()
            .await
            .map_err(|e| NatsError::Nats(format!("cannot reach the NATS server: {e}")))?;
        Ok(tokio::spawn(async move {
            while let Some(m) = beats.next().await {
                if let Ok(h) = serde_json::from_slice::<Heartbeat>(&m.payload)
                    && let Ok(mut r) = registry.lock()
                {
                    r.seen(h, Instant::now());
                }
            }
        }))
    }

    /// Remote tools for the tools the satellites advertise that `local` lacks, ready to add to
    /// a run's tool registry (through a capabilities source). The manifests come from the
    /// satellites' discovery; each call goes to whichever satellite of the queue group takes it.
    pub fn remote_tools(
        &self,
        manifests: Vec<WireTool>,
        local: &cameleon::tools::ToolRegistry,
    ) -> Vec<Arc<dyn Tool>> {
        manifests
            .into_iter()
            .filter(|m| local.get(&m.manifest.name).is_none())
            .map(|m| Arc::new(RemoteTool::new(m, self.clone())) as Arc<dyn Tool>)
            .collect()
    }
}

enum Failure {
    NoResponders,
    TimedOut,
    /// Every answer was `busy`; the last satellite that said so.
    Busy(String),
    Other(String),
}

/// A reply: its wire version and who sent it.
trait Versioned {
    fn version(&self) -> u32;
    fn satellite(&self) -> &str;
}

impl Versioned for OpReply {
    fn version(&self) -> u32 {
        self.v
    }
    fn satellite(&self) -> &str {
        &self.satellite
    }
}

impl Versioned for ToolReply {
    fn version(&self) -> u32 {
        self.v
    }
    fn satellite(&self) -> &str {
        &self.satellite
    }
}

/// The proxy of a `placement: remote` instance: fires on a satellite, answers everything
/// else with the local instance.
struct RemoteOp {
    inner: Box<dyn Operator>,
    remote: Remote,
    ty: String,
    instance: String,
    policy: Option<WirePolicy>,
    limit: Duration,
}

impl RemoteOp {
    fn request(&self, cx: &Firing<'_>) -> Result<OpRequest, OpError> {
        let state = match self.inner.save_state() {
            None => None,
            Some(s) => Some(s.to_json().map_err(|e| {
                OpError::new(format!(
                    "`{}` cannot run on a satellite: {e}",
                    self.instance
                ))
            })?),
        };
        Ok(OpRequest {
            v: WIRE_VERSION,
            run: cx.run_id().to_owned(),
            branch: cx.branch(),
            step: cx.step(),
            instance: cx.instance().to_owned(),
            key: cx.idempotency_key(),
            ty: self.ty.clone(),
            params: self.inner.params(),
            inputs: (0..cx.input_count())
                .map(|i| WireInput {
                    state: cx.state_at(i).into(),
                    value: match cx.state_at(i) {
                        ConnState::Empty => None,
                        _ => cx.value_at(i).map(|v| TypedValue(v.clone())),
                    },
                })
                .collect(),
            outputs: (0..cx.output_count())
                .map(|p| cx.output_connected(p))
                .collect(),
            parallel: cx.parallel(),
            state,
            tools: self.policy.clone(),
        })
    }

    fn apply(&mut self, reply: OpReply, cx: &mut Firing<'_>) -> Result<(), OpError> {
        if !reply.ok {
            let why = reply.error.unwrap_or_else(|| "no reason given".to_owned());
            return Err(OpError::new(match reply.kind {
                Some(ErrorKind::Failed) | None => why,
                Some(_) => format!("satellite `{}`: {why}", reply.satellite),
            }));
        }
        if let Some(json) = reply.state {
            let model = self.inner.save_state().ok_or_else(|| {
                OpError::new(format!(
                    "satellite `{}` sent an internal state for `{}`, whose type has none",
                    reply.satellite, self.instance
                ))
            })?;
            let s = model.from_json_like(json).map_err(|e| {
                OpError::new(format!(
                    "the internal state of `{}` sent by satellite `{}` cannot be read: {e}",
                    self.instance, reply.satellite
                ))
            })?;
            self.inner.restore_state(&s);
        }
        for e in reply.emitted {
            cx.emit_at(e.port as usize, e.value.0);
        }
        Ok(())
    }
}

impl Operator for RemoteOp {
    fn spec(&self) -> OpSpec {
        self.inner.spec()
    }

    fn params(&self) -> Params {
        self.inner.params()
    }

    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        self.inner.can_fire(e)
    }

    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        self.inner.consumes(inputs)
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        self.inner.control()
    }

    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let req = self.request(cx)?;
        let remote = self.remote.clone();
        let limit = self.limit;
        let reply = cameleon::runtime::block_on(async move { remote.fire(&req, limit).await })?;
        self.apply(reply, cx)
    }

    fn execution(&self) -> Execution {
        Execution::Async
    }

    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        Box::pin(async move {
            let req = self.request(cx)?;
            let reply = self.remote.fire(&req, self.limit).await?;
            self.apply(reply, cx)
        })
    }

    fn question(&self) -> Option<Question> {
        self.inner.question()
    }

    fn has_answer(&self) -> bool {
        self.inner.has_answer()
    }

    fn answer(&mut self, value: Value) {
        self.inner.answer(value);
    }

    fn settings(&self) -> OpSettings {
        self.inner.settings()
    }

    fn save_state(&self) -> Option<OpState> {
        self.inner.save_state()
    }

    fn restore_state(&mut self, state: &OpState) {
        self.inner.restore_state(state);
    }

    fn rollback(&mut self, before: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.rollback(before, emitted);
    }

    fn replay(&mut self, after: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.replay(after, emitted);
    }
}

/// A tool that runs on a satellite: called through the run's gate like any other (policy and
/// argument check there), answered with the satellite's result, `meta.origin` naming it.
#[derive(Debug)]
pub struct RemoteTool {
    manifest: ToolManifest,
    effects: Effects,
    remote: Remote,
}

impl RemoteTool {
    /// The tool of `tool` (its manifest and effects), reached through `remote`.
    pub fn new(tool: WireTool, remote: Remote) -> Self {
        RemoteTool {
            effects: tool.effects(),
            manifest: tool.manifest,
            remote,
        }
    }

    /// Its side effects, as its satellite advertised them (`external` when it did not say).
    pub fn effects(&self) -> Effects {
        self.effects
    }
}

impl Tool for RemoteTool {
    fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    fn origin(&self) -> &str {
        "satellite"
    }

    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a> {
        let req = ToolRequest {
            v: WIRE_VERSION,
            tool: self.manifest.name.clone(),
            args,
            principal: cx.principal.clone(),
            key: cx.idempotency_key.clone(),
        };
        ToolOutput::Pending(Box::pin(async move {
            let reply = self.remote.call_tool(&req, self.remote.timeout).await?;
            cx.report_origin(reply.result.meta.origin.clone());
            match reply.result.status {
                cameleon::tools::ToolStatus::Ok => Ok(reply.result.content),
                cameleon::tools::ToolStatus::Timeout => {
                    Err(ToolError::timeout(reply.result.error.unwrap_or_default()))
                }
                _ => Err(ToolError::new(reply.result.error.unwrap_or_default())),
            }
        }))
    }
}
