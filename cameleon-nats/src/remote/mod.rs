//! The run's side: [`Remote`], a connection to the satellites of a prefix; the proxy operator
//! that fires a `placement: remote` instance on one; [`RemoteTool`], a tool reached the same way.

mod awake;
mod call;
mod mux;
mod proxy;
mod registry;

pub use awake::DEFAULT_KEEP_AWAKE;
pub use proxy::RemoteTool;
pub use registry::{MISSED_HEARTBEATS, Registry, Seen};

use proxy::RemoteOp;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::Client;
use cameleon::Net;
use cameleon::connection::OpId;
use cameleon::net::Placement;
use cameleon::operator::capability::ToolManifest;
use cameleon::tools::Tool;
use futures_util::StreamExt;

use crate::wire::{
    ACK_HELD, Heartbeat, OpRequest, Subjects, VERSION_HEADER, WANT_ACK_HEADER, WIRE_VERSION,
    WireOpType, WirePolicy,
};
use crate::{NatsError, NatsOptions};

/// The default time a call may take, all tries included, when its instance sets no
/// `timeout_ms`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's connection to the satellites of one prefix. It follows their heartbeats from the
/// moment it connects, so a call whose satellite is lost goes to a live one.
#[derive(Clone, Debug)]
pub struct Remote {
    client: Client,
    subjects: Subjects,
    url: Arc<str>,
    timeout: Duration,
    /// How long after a call starts a core is kept awake for its reply (`awake.rs`).
    keep_awake: Duration,
    follow: Arc<Follow>,
}

/// A call sent again because the satellite holding it was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failover {
    /// The satellite lost.
    pub from: String,
    /// The live satellite the call went to (`None`: none was known, the queue group took it).
    pub to: Option<String>,
    /// How long `from` had been silent (no heartbeat, no acknowledgement) when the call was
    /// sent again: at least 3 of its heartbeat periods.
    pub silent: Duration,
    /// `from`'s heartbeat period.
    pub period: Duration,
    /// How many heartbeats of `to` the run received while `from` was silent: the failover time
    /// counted in heartbeats.
    pub heartbeats_of_the_next: usize,
}

/// What a [`Remote`] follows: the satellites' heartbeats, the failovers so far, and which
/// satellite answered the recent firings.
#[derive(Debug)]
struct Follow {
    registry: Mutex<Registry>,
    failovers: Mutex<Vec<Failover>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    ran: Mutex<Ran>,
    mux: mux::Mux,
    /// The headers every call starts with (its key added).
    headers: async_nats::HeaderMap,
}

/// The satellite that answered each of the last [`RAN_KEPT`] firings, by run, step and instance.
#[derive(Debug, Default)]
struct Ran {
    by: std::collections::HashMap<String, String>,
    order: std::collections::VecDeque<String>,
}

/// How many firings' satellites a [`Remote`] remembers.
const RAN_KEPT: usize = 4096;

/// A firing's place in a run, whatever its branch: `{run}/{step}/{instance}`.
fn where_key(run: &str, step: u32, instance: &str) -> String {
    format!("{run}/{step}/{instance}")
}

impl Drop for Follow {
    fn drop(&mut self) {
        if let Ok(Some(t)) = self.task.get_mut().map(Option::take) {
            t.abort();
        }
        self.mux.stop();
    }
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
        let subjects = options.subjects();
        let follow = Arc::new(Follow {
            mux: mux::Mux::start(&client).await?,
            registry: Mutex::default(),
            failovers: Mutex::default(),
            task: Mutex::default(),
            ran: Mutex::default(),
            headers: {
                let mut h = async_nats::HeaderMap::new();
                h.insert(VERSION_HEADER, WIRE_VERSION.to_string().as_str());
                h.insert(WANT_ACK_HEADER, ACK_HELD);
                h
            },
        });
        let mut beats = client
            .subscribe(subjects.heartbeats())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        let weak = Arc::downgrade(&follow);
        let task = tokio::spawn(async move {
            while let Some(m) = beats.next().await {
                let Some(follow) = weak.upgrade() else { return };
                if let Ok(h) = serde_json::from_slice::<Heartbeat>(&m.payload)
                    && let Ok(mut r) = follow.registry.lock()
                {
                    r.seen(h, Instant::now());
                }
            }
        });
        if let Ok(mut t) = follow.task.lock() {
            *t = Some(task);
        }
        Ok(Remote {
            client,
            subjects,
            url: Arc::from(options.url.as_str()),
            timeout: DEFAULT_TIMEOUT,
            keep_awake: options.keep_awake,
            follow,
        })
    }

    /// The satellite that answered the firing of `instance` at `step` of run `run` (the latest,
    /// if several branches fired it), if this connection sent it and still remembers.
    pub fn ran_on(&self, run: &str, step: u32, instance: &str) -> Option<String> {
        let ran = self.follow.ran.lock().ok()?;
        ran.by.get(&where_key(run, step, instance)).cloned()
    }

    /// Remembers that `satellite` answered the firing of `req`.
    pub(crate) fn record_ran(&self, req: &OpRequest, satellite: &str) {
        if let Ok(mut ran) = self.follow.ran.lock() {
            let k = where_key(&req.run, req.step, &req.instance);
            if ran.by.insert(k.clone(), satellite.to_owned()).is_none() {
                ran.order.push_back(k);
            }
            while ran.order.len() > RAN_KEPT {
                if let Some(old) = ran.order.pop_front() {
                    ran.by.remove(&old);
                }
            }
        }
    }

    /// The calls sent again so far because their satellite was lost, oldest first.
    pub fn failovers(&self) -> Vec<Failover> {
        self.follow
            .failovers
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }

    /// The satellites this connection has heard from and that are live now, sorted by name.
    pub fn live(&self) -> Vec<Seen> {
        self.follow
            .registry
            .lock()
            .map(|mut r| r.live_at(Instant::now()))
            .unwrap_or_default()
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
    pub async fn tool_manifests(&self, wait: Duration) -> Result<Vec<ToolManifest>, NatsError> {
        Ok(self.hosted(wait).await?.0)
    }

    /// What the satellites that answer within `wait` host: their tools (manifests and effects)
    /// and the descriptions of their operator types, one per name, sorted by name.
    pub async fn hosted(
        &self,
        wait: Duration,
    ) -> Result<(Vec<ToolManifest>, Vec<WireOpType>), NatsError> {
        let mut tools = std::collections::BTreeMap::new();
        let mut types = std::collections::BTreeMap::new();
        for (h, _) in self.gather(wait).await? {
            for m in h.manifests {
                tools.entry(m.name.clone()).or_insert(m);
            }
            for t in h.types {
                types.entry(t.id.clone()).or_insert(t);
            }
        }
        Ok((tools.into_values().collect(), types.into_values().collect()))
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
        manifests: Vec<ToolManifest>,
        local: &cameleon::tools::ToolRegistry,
    ) -> Vec<Arc<dyn Tool>> {
        manifests
            .into_iter()
            .filter(|m| local.get(&m.name).is_none())
            .map(|m| Arc::new(RemoteTool::new(m, self.clone())) as Arc<dyn Tool>)
            .collect()
    }
}

/// A run's capabilities carry the connection, so the inner nets of `subnet` and `map` fire their
/// `placement: remote` instances on the satellites too.
impl cameleon::net::Placer for Remote {
    fn place(&self, net: &mut Net) -> usize {
        Remote::place(self, net)
    }
}
