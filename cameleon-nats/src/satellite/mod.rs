//! A satellite: a process that runs firings and tool calls for runs elsewhere, taking them
//! from NATS (docs/wire.md).
//!
//! It registers with the NATS services API (service `cameleon-satellite`, one endpoint per
//! operator type and per tool it hosts, all in one queue group, so load spreads and
//! `$SRV.STATS` counts requests), publishes a [`Heartbeat`] every period, answers
//! `<prefix>.discover`, and keeps recent successful replies by idempotency key. What it answers
//! to a firing request or a tool call is in `answer.rs`.

mod answer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service::ServiceExt;
use async_nats::{Client, HeaderMap};
use bytes::Bytes;
use cameleon::capabilities::{Generation, Runtime};
use cameleon::catalogue::Catalogue;
use cameleon::tools::ToolRegistry;
use futures_util::StreamExt;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cache::Cache;
use crate::wire::{
    Heartbeat, OpReply, SERVICE_NAME, Subjects, ToolReply, VERSION_HEADER, WIRE_VERSION,
    is_subject_token,
};
use crate::{NatsError, NatsOptions};
use answer::{handle_op, handle_tool};

/// How a satellite is set up.
#[derive(Clone, Debug)]
pub struct SatelliteConfig {
    /// Its name, unique among the satellites of a prefix (a NATS subject token).
    pub name: String,
    /// How many calls it runs at once.
    pub concurrency: usize,
    /// Its heartbeat period.
    pub heartbeat: Duration,
    /// How many finished calls' replies it keeps by idempotency key.
    pub cache_capacity: usize,
    /// The folder file tools and file-reading operators resolve paths against.
    pub base_dir: PathBuf,
    /// The operator types it hosts (`None`: every type linked into the program).
    pub ops: Option<Vec<String>>,
    /// The tools it hosts (`None`: every tool linked into the program).
    pub tools: Option<Vec<String>>,
}

impl SatelliteConfig {
    /// A satellite named `name`: concurrency 4, a heartbeat every second, 4096 cached replies,
    /// the current folder, every operator type and tool of the program.
    pub fn new(name: impl Into<String>) -> Self {
        SatelliteConfig {
            name: name.into(),
            concurrency: 4,
            heartbeat: Duration::from_secs(1),
            cache_capacity: 4096,
            base_dir: PathBuf::from("."),
            ops: None,
            tools: None,
        }
    }
}

/// What every task of a satellite shares.
struct Shared {
    name: String,
    client: Client,
    subjects: Subjects,
    ops: Vec<String>,
    tools: Vec<String>,
    config: SatelliteConfig,
    permits: Arc<Semaphore>,
    in_flight: AtomicUsize,
    executions: AtomicU64,
    op_cache: Cache<OpReply>,
    tool_cache: Cache<ToolReply>,
    generation: Arc<Generation>,
    tasks: Mutex<JoinSet<()>>,
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
    /// Connects to NATS as `options` say and starts serving. Call it on a tokio runtime.
    pub async fn start(options: &NatsOptions, config: SatelliteConfig) -> Result<Self, NatsError> {
        if !is_subject_token(&config.name) {
            return Err(NatsError::Config(format!(
                "satellite name `{}` cannot be a NATS subject token: use letters, digits, `-` or `_` (no spaces, `.`, `*` or `>`)",
                config.name
            )));
        }
        let client = options.connect_here(Some(&config.name)).await?;
        let subjects = options.subjects();
        let catalogue = Catalogue::global();
        let ops = hosted(
            catalogue.ids().map(str::to_owned),
            config.ops.as_deref(),
            "operator type",
        )?;
        let registry = ToolRegistry::global();
        let tools = hosted(
            registry.names().map(str::to_owned),
            config.tools.as_deref(),
            "tool",
        )?;
        let runtime = Runtime::builder()
            .for_dir(&config.base_dir, None)
            .build()
            .map_err(|e| NatsError::Config(format!("the satellite's capabilities: {e}")))?;
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
            ops,
            tools,
            permits: Arc::new(Semaphore::new(config.concurrency.max(1))),
            in_flight: AtomicUsize::new(0),
            executions: AtomicU64::new(0),
            op_cache: Cache::new(config.cache_capacity),
            tool_cache: Cache::new(config.cache_capacity),
            generation: runtime.current(),
            tasks: Mutex::new(JoinSet::new()),
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
        let discover = client
            .subscribe(subjects.discover())
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        let mut background = JoinSet::new();
        background.spawn(answer_discovery(Arc::clone(&shared), discover));
        background.spawn(heartbeat(Arc::clone(&shared)));
        client
            .flush()
            .await
            .map_err(|e| NatsError::Nats(format!("cannot reach the NATS server: {e}")))?;
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
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Stops gracefully: takes no new call (its subscriptions end, so the NATS server routes
    /// new calls to the other satellites), finishes and answers the calls it runs, stops
    /// heartbeating, and flushes.
    pub async fn shutdown(mut self) {
        if let Some(service) = self.service.take() {
            let _ = service.stop().await;
        }
        // The endpoints' streams end with the service: every call taken is in `tasks` then.
        while self.loops.join_next().await.is_some() {}
        let mut tasks = std::mem::take(&mut *lock(&self.shared.tasks));
        while tasks.join_next().await.is_some() {}
        self.background.abort_all();
        let _ = self.shared.client.flush().await;
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

/// The names hosted: all of `all`, or those of `only` (each must exist).
fn hosted(
    all: impl Iterator<Item = String>,
    only: Option<&[String]>,
    what: &str,
) -> Result<Vec<String>, NatsError> {
    let mut all: Vec<String> = all.collect();
    all.sort();
    all.dedup();
    let Some(only) = only else {
        return Ok(all);
    };
    let mut v = Vec::new();
    for n in only {
        if !all.contains(n) {
            return Err(NatsError::Config(format!(
                "this program has no {what} `{n}` to host (link the crate that declares it)"
            )));
        }
        v.push(n.clone());
    }
    v.sort();
    v.dedup();
    Ok(v)
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Op,
    Tool,
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
            in_flight: self.in_flight.load(Ordering::SeqCst),
            manifests: Vec::new(),
        }
    }

    /// The heartbeat with the tools' manifests: the answer to a discovery.
    fn introduction(&self) -> Heartbeat {
        let registry = ToolRegistry::global();
        Heartbeat {
            manifests: self
                .tools
                .iter()
                .filter_map(|t| registry.get(t).map(|t| t.manifest().clone()))
                .collect(),
            ..self.heartbeat()
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(VERSION_HEADER, WIRE_VERSION.to_string().as_str());
        h
    }
}

/// Takes the calls of one endpoint; each runs once it gets one of the satellite's
/// `concurrency` permits.
async fn serve(
    shared: Arc<Shared>,
    kind: Kind,
    mut endpoint: async_nats::service::endpoint::Endpoint,
) {
    while let Some(request) = endpoint.next().await {
        let s = Arc::clone(&shared);
        let mut tasks = lock(&shared.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            let Ok(permit) = Arc::clone(&s.permits).acquire_owned().await else {
                return;
            };
            s.in_flight.fetch_add(1, Ordering::SeqCst);
            tracing::info!(
                satellite = %s.name,
                subject = %request.message.subject,
                key = request
                    .message
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(crate::wire::KEY_HEADER))
                    .map_or("", |k| k.as_str()),
                "call taken"
            );
            let body = match kind {
                Kind::Op => encode(&handle_op(&s, &request.message).await),
                Kind::Tool => encode(&handle_tool(&s, &request.message).await),
            };
            let _ = request.respond_with_headers(Ok(body), s.headers()).await;
            s.in_flight.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
        });
    }
}

fn encode<T: serde::Serialize>(v: &T) -> Bytes {
    // The wire types serialize to JSON without fail (string keys, no non-finite floats).
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
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
