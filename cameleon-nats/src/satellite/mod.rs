//! A satellite: a process that runs firings and tool calls for runs elsewhere, taking them
//! from NATS (docs/wire.md).
//!
//! It registers with the NATS services API (service `cameleon-satellite`, one endpoint per
//! operator type and per tool it hosts, all in one queue group, so load spreads and
//! `$SRV.STATS` counts requests), publishes a [`Heartbeat`] every period, answers
//! `<prefix>.discover`, and keeps recent successful replies by idempotency key. What it answers
//! to a firing request or a tool call is in `answer.rs`.

mod answer;
mod caps;
mod hosting;
mod intake;

pub use hosting::{FILE_READING_OPS, OpsToHost, could_host, nothing_to_host, tool_effects};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service::ServiceExt;
use async_nats::{Client, HeaderMap};
use cameleon::capabilities::{Generation, Runtime};
use futures_util::StreamExt;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cache::Cache;
use crate::wire::{
    ACK_HEADER, HEARTBEAT_HEADER, Heartbeat, OpReply, SERVICE_NAME, Subjects, ToolReply,
    VERSION_HEADER, WIRE_VERSION, is_subject_token,
};
use crate::{NatsError, NatsOptions};
use cameleon::net::ToolPolicy;
use cameleon::operator::capability::Capabilities;
use intake::{Kind, READY_WAIT, confirm_subscriptions, encode, serve, serve_direct};

/// The largest request a satellite reads by default (1 MiB, NATS's own default `max_payload`).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;

/// The longest a call may run on a satellite by default before it is abandoned (10 minutes).
pub const DEFAULT_MAX_CALL: Duration = Duration::from_secs(600);

/// How long a stopping satellite waits by default for its calls in flight and for NATS.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How a satellite is set up. It hosts only what it is told: [`SatelliteConfig::new`] hosts
/// nothing, and [`Satellite::start`] refuses a satellite with nothing to host.
#[derive(Clone, Debug)]
pub struct SatelliteConfig {
    /// Its name, unique among the satellites of a prefix (a NATS subject token).
    pub name: String,
    /// How many calls it runs at once; past it, a call is answered `busy` at once.
    pub concurrency: usize,
    /// Its heartbeat period.
    pub heartbeat: Duration,
    /// How many finished calls' replies it keeps by idempotency key.
    pub cache_capacity: usize,
    /// The folder file tools and file-reading operators are confined to. `None`: it hosts none
    /// of them.
    pub base_dir: Option<PathBuf>,
    /// The operator types it hosts.
    pub ops: OpsToHost,
    /// The tools it hosts, by name.
    pub tools: Vec<String>,
    /// Hosted tools it runs only with a person's approval obtained by the run (carried by the
    /// request): a call of one without it is `denied`.
    pub approve: Vec<String>,
    /// The longest a call may run; past it the call is abandoned and answered `timeout`.
    /// `None`: no ceiling.
    pub max_call: Option<Duration>,
    /// The largest request it reads; a larger one is answered `bad_request`.
    pub max_request_bytes: usize,
    /// How long [`Satellite::shutdown`] waits for the calls in flight and for NATS.
    pub drain_timeout: Duration,
}

impl SatelliteConfig {
    /// A satellite named `name` hosting nothing yet: concurrency 4, a heartbeat every second,
    /// 4096 cached replies, no base folder, calls of at most [`DEFAULT_MAX_CALL`], requests of
    /// at most [`DEFAULT_MAX_REQUEST_BYTES`].
    pub fn new(name: impl Into<String>) -> Self {
        SatelliteConfig {
            name: name.into(),
            concurrency: 4,
            heartbeat: Duration::from_secs(1),
            cache_capacity: 4096,
            base_dir: None,
            ops: OpsToHost::None,
            tools: Vec::new(),
            approve: Vec::new(),
            max_call: Some(DEFAULT_MAX_CALL),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// Hosts these operator types.
    pub fn ops<S: Into<String>>(mut self, ops: impl IntoIterator<Item = S>) -> Self {
        self.ops = OpsToHost::Listed(ops.into_iter().map(Into::into).collect());
        self
    }

    /// Hosts every operator type of the program (those that read files only with a base).
    pub fn all_ops(mut self) -> Self {
        self.ops = OpsToHost::All;
        self
    }

    /// Hosts these tools.
    pub fn tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Runs these hosted tools only with an approval obtained by the run.
    pub fn approve<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.approve = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Confines file tools and file-reading operators to `dir`.
    pub fn base(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }
}

/// The capabilities kept for the last tool policy seen.
type KeptCaps = Option<(Option<ToolPolicy>, Arc<dyn Capabilities>)>;

/// What every task of a satellite shares.
pub(crate) struct Shared {
    name: String,
    client: Client,
    subjects: Subjects,
    ops: Vec<String>,
    tools: Vec<String>,
    /// What a run needs to place each hosted type without linking it (once per type, aliases
    /// aside).
    types: Vec<crate::wire::WireOpType>,
    /// The base folder, `.` when none was given (then nothing hosted reads files).
    base_dir: PathBuf,
    config: SatelliteConfig,
    permits: Arc<Semaphore>,
    executions: AtomicU64,
    op_cache: Cache<OpReply>,
    tool_cache: Cache<ToolReply>,
    generation: Arc<Generation>,
    tasks: Mutex<JoinSet<()>>,
    /// The capabilities of the last firing's tool policy: a run sends the same one with every
    /// firing, and they do not change between firings.
    last_caps: Mutex<KeptCaps>,
    /// The headers of a reply, and of an acknowledgement.
    reply_headers: HeaderMap,
    ack_headers: HeaderMap,
    /// Set when the satellite stops: its own subjects' loop ends then.
    stop: tokio::sync::watch::Sender<bool>,
}

/// A running satellite. [`shutdown`](Self::shutdown) stops it gracefully; dropping it without
/// stops its tasks at once.
pub struct Satellite {
    shared: Arc<Shared>,
    service: Option<async_nats::service::Service>,
    /// One per endpoint.
    loops: JoinSet<()>,
    /// Heartbeats and discovery answers.
    background: JoinSet<()>,
}

impl std::fmt::Debug for Satellite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Satellite")
            .field("name", &self.shared.name)
            .field("ops", &self.shared.ops.len())
            .field("tools", &self.shared.tools.len())
            .finish_non_exhaustive()
    }
}

impl Satellite {
    /// Connects to NATS as `options` say and starts serving. Returns once the NATS server has
    /// its subscriptions (confirmed by a round trip through the server), so a call or a
    /// discovery sent from anywhere after it returns finds it. Call it on a tokio runtime.
    pub async fn start(options: &NatsOptions, config: SatelliteConfig) -> Result<Self, NatsError> {
        if !is_subject_token(&config.name) {
            return Err(NatsError::Config(format!(
                "satellite name `{}` cannot be a NATS subject token: use letters, digits, `-` or `_` (no spaces, `.`, `*` or `>`)",
                config.name
            )));
        }
        // Capabilities (models, and the nets its capabilities offer as tools): the user's own
        // (`CAMELEON_CAPABILITIES`), and a `cameleon.yaml` in the base folder the user named;
        // never one found in the working folder.
        let runtime = match &config.base_dir {
            Some(dir) => Runtime::builder().for_dir(dir, None),
            None => Runtime::builder().source(cameleon::capabilities::EnvSource),
        }
        .build()
        .map_err(|e| NatsError::Config(format!("the satellite's capabilities: {e}")))?;
        let (ops, tools) = hosting::resolve(
            &config.ops,
            &config.tools,
            config.base_dir.as_ref(),
            runtime.current().tools(),
        )?;
        if let Some(t) = config.approve.iter().find(|t| !tools.contains(t)) {
            return Err(NatsError::Config(format!(
                "`--approve {t}`: this satellite does not host tool `{t}` (add it to `--tools`)"
            )));
        }
        let subjects = options.subjects();
        options.check_prefix()?;
        let client = options.connect_here(Some(&config.name)).await?;
        let mut metadata = HashMap::new();
        metadata.insert("satellite".to_owned(), config.name.clone());
        metadata.insert("prefix".to_owned(), subjects.prefix().to_owned());
        metadata.insert("wire".to_owned(), WIRE_VERSION.to_string());
        let service = client
            .service_builder()
            .description("Caméléon satellite: runs operator firings and tool calls")
            .metadata(metadata)
            .queue_group(subjects.queue_group())
            .start(SERVICE_NAME, env!("CARGO_PKG_VERSION"))
            .await
            .map_err(|e| NatsError::Nats(format!("cannot register the service: {e}")))?;
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            client: client.clone(),
            subjects: subjects.clone(),
            types: {
                let mut seen = std::collections::BTreeMap::new();
                for t in &ops {
                    if let Some(e) = cameleon::catalogue::Catalogue::global().get(t) {
                        seen.entry(e.id)
                            .or_insert_with(|| crate::types::describe(e));
                    }
                }
                seen.into_values().collect()
            },
            ops,
            tools,
            base_dir: config
                .base_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(".")),
            permits: Arc::new(Semaphore::new(config.concurrency.max(1))),
            executions: AtomicU64::new(0),
            op_cache: Cache::new(config.cache_capacity),
            tool_cache: Cache::new(config.cache_capacity),
            generation: runtime.current(),
            tasks: Mutex::new(JoinSet::new()),
            last_caps: Mutex::new(None),
            reply_headers: version_headers(),
            ack_headers: {
                let mut h = version_headers();
                h.insert(ACK_HEADER, config.name.as_str());
                h.insert(
                    HEARTBEAT_HEADER,
                    config.heartbeat.as_millis().to_string().as_str(),
                );
                h
            },
            stop: tokio::sync::watch::Sender::new(false),
            config,
        });
        let mut loops = JoinSet::new();
        for (kind, names) in [(Kind::Op, &shared.ops), (Kind::Tool, &shared.tools)] {
            for n in names {
                let subject = match kind {
                    Kind::Op => subjects.op(n),
                    Kind::Tool => subjects.tool(n),
                };
                let endpoint = service
                    .endpoint_builder()
                    .name(endpoint_name(kind, n))
                    .add(subject.clone())
                    .await
                    .map_err(|e| NatsError::Nats(format!("cannot serve `{subject}`: {e}")))?;
                loops.spawn(serve(Arc::clone(&shared), kind, endpoint));
            }
        }
        let mut direct = client
            .subscribe(format!("{}.sat.{}.>", subjects.prefix(), shared.name))
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        let discover = client
            .subscribe(subjects.discover())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        // Served from here on: a call or a discovery sent once `start` returns finds it.
        let early = confirm_subscriptions(&shared, &mut direct, READY_WAIT).await?;
        loops.spawn(serve_direct(Arc::clone(&shared), direct, early));
        let mut background = JoinSet::new();
        background.spawn(answer_discovery(Arc::clone(&shared), discover));
        background.spawn(heartbeat(Arc::clone(&shared)));
        Ok(Satellite {
            shared,
            service: Some(service),
            loops,
            background,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The heartbeat it publishes now.
    pub fn heartbeat(&self) -> Heartbeat {
        self.shared.heartbeat()
    }

    /// How many firings and tool calls it has run (answers from the idempotency cache not
    /// counted).
    pub fn executions(&self) -> u64 {
        self.shared.executions.load(Ordering::SeqCst)
    }

    /// How many calls it runs now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight()
    }

    /// The operator types it hosts, sorted.
    pub fn ops(&self) -> &[String] {
        &self.shared.ops
    }

    /// The tools it hosts, sorted.
    pub fn tools(&self) -> &[String] {
        &self.shared.tools
    }

    /// Stops gracefully: takes no new call (its subscriptions end, so the NATS server routes
    /// new calls to the other satellites), finishes and answers the calls it runs, stops
    /// heartbeating, and flushes — all within the drain timeout, even when the NATS server is
    /// gone (then the replies are lost and the runs re-send their calls). Returns whether it
    /// all finished in time.
    pub async fn shutdown(mut self) -> bool {
        let deadline = tokio::time::Instant::now() + self.shared.config.drain_timeout;
        if let Some(service) = self.service.take() {
            let _ = service.stop().await;
        }
        self.shared.stop.send_replace(true);
        let shared = Arc::clone(&self.shared);
        let mut loops = std::mem::take(&mut self.loops);
        let drained = tokio::time::timeout_at(deadline, async move {
            // The endpoints' streams end with the service: every call taken is in `tasks` then.
            while loops.join_next().await.is_some() {}
            let mut tasks = std::mem::take(&mut *lock(&shared.tasks));
            while tasks.join_next().await.is_some() {}
            let _ = shared.client.flush().await;
        })
        .await
        .is_ok();
        self.background.abort_all();
        drained
    }

    /// Dies at once, as a crashed process would: the calls it runs are never answered, its
    /// subscriptions and heartbeats stop. For tests of failures.
    pub async fn kill(mut self) {
        self.loops.abort_all();
        self.background.abort_all();
        lock(&self.shared.tasks).abort_all();
        if let Some(service) = self.service.take() {
            let _ = service.stop().await;
        }
        let _ = self.shared.client.drain().await;
    }
}

impl Drop for Satellite {
    fn drop(&mut self) {
        self.loops.abort_all();
        self.background.abort_all();
        lock(&self.shared.tasks).abort_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A services-API endpoint name (`[A-Za-z0-9_-]+`) for a hosted name.
fn endpoint_name(kind: Kind, n: &str) -> String {
    let head = match kind {
        Kind::Op => "op",
        Kind::Tool => "tool",
    };
    let tail: String = n
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{head}-{tail}")
}

impl Shared {
    fn heartbeat(&self) -> Heartbeat {
        Heartbeat {
            v: WIRE_VERSION,
            name: self.name.clone(),
            ops: self.ops.clone(),
            tools: self.tools.clone(),
            heartbeat_ms: self.config.heartbeat.as_millis() as u64,
            concurrency: self.config.concurrency.max(1),
            in_flight: self.in_flight(),
            manifests: Vec::new(),
            types: Vec::new(),
        }
    }

    /// How many calls it runs now (a blocking operator abandoned at `max_call` counts until
    /// its thread ends).
    fn in_flight(&self) -> usize {
        self.config
            .concurrency
            .max(1)
            .saturating_sub(self.permits.available_permits())
    }

    /// The heartbeat with the tools' manifests and effects: the answer to a discovery.
    fn introduction(&self) -> Heartbeat {
        let registry = self.generation.tools();
        Heartbeat {
            manifests: self
                .tools
                .iter()
                .filter_map(|t| registry.get(t).map(|tool| tool.manifest().clone()))
                .collect(),
            types: self.types.clone(),
            ..self.heartbeat()
        }
    }

    fn headers(&self) -> HeaderMap {
        self.reply_headers.clone()
    }

    /// What a firing under tool policy `policy` sees: the satellite's generation, the tools it
    /// hosts, narrowed by `policy`.
    fn caps(&self, policy: Option<ToolPolicy>) -> Arc<dyn Capabilities> {
        let mut last = lock(&self.last_caps);
        if let Some((p, caps)) = &*last
            && *p == policy
        {
            return Arc::clone(caps);
        }
        let inner = self
            .generation
            .for_run(policy.as_ref(), self.base_dir.clone());
        let caps: Arc<dyn Capabilities> = Arc::new(caps::SatelliteCaps::new(
            inner,
            &self.name,
            &self.tools,
            &self.config.approve,
        ));
        *last = Some((policy, Arc::clone(&caps)));
        caps
    }
}

fn version_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(VERSION_HEADER, WIRE_VERSION.to_string().as_str());
    h
}

/// Answers `<prefix>.discover` with the heartbeat.
async fn answer_discovery(shared: Arc<Shared>, mut sub: async_nats::Subscriber) {
    while let Some(m) = sub.next().await {
        if let Some(reply) = m.reply {
            let _ = shared
                .client
                .publish_with_headers(reply, shared.headers(), encode(&shared.introduction()))
                .await;
        }
    }
}

/// Publishes the heartbeat every period.
async fn heartbeat(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.config.heartbeat.max(Duration::from_millis(1)));
    let subject = shared.subjects.heartbeat(&shared.name);
    loop {
        tick.tick().await;
        let _ = shared
            .client
            .publish_with_headers(
                subject.clone(),
                shared.headers(),
                encode(&shared.heartbeat()),
            )
            .await;
    }
}
