//! `cameleon satellite` (serve this program's operator types and tools on NATS),
//! `cameleon satellites` (list the live ones), and `run --nats` (fire `placement: remote`
//! instances on them). docs/cli.md and docs/wire.md.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cameleon::capabilities::{
    CapabilitiesBuilder, CapabilitiesError, CapabilityNames, CapabilitySource,
};
use cameleon::catalogue::Catalogue;
use cameleon::tools::{Tool, ToolRegistry};
use cameleon_nats::{NatsOptions, OpsToHost, Remote, Satellite, SatelliteConfig};
use clap::Args;

use crate::{Io, exit};

/// How to reach NATS (shared by `run`, `satellite` and `satellites`).
#[derive(Clone, Debug, Default, Args)]
pub struct NatsArgs {
    /// The NATS server: `nats://HOST:PORT`, or `tls://HOST:PORT` for TLS (comma-separate
    /// several). With `run`: fire the net's `placement: remote` instances on satellites.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// A NATS credentials file (JWT and NKey seed), for --nats or a `nats://` journal.
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// A NATS authentication token, for --nats or a `nats://` journal.
    #[arg(long, value_name = "TOKEN")]
    pub nats_token: Option<String>,
    /// The prefix of every subject (isolates one tenant's satellites from another's).
    #[arg(long, value_name = "PREFIX", default_value = cameleon_nats::DEFAULT_PREFIX)]
    pub subject_prefix: String,
    /// `run` only: how long a remote firing whose instance has no `timeout_ms:` may wait for a
    /// satellite (no satellite hosting its type by then: ERROR naming the type).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub nats_timeout_ms: u64,
    /// `run`, `check`: how long to wait at start for the satellites' answers (the tools they
    /// host, which a .cm file may then name).
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub nats_wait_ms: u64,
    /// A run's remote calls: for how many microseconds after a call starts one core is kept
    /// awake (spinning, yielding to any thread that wants it) for its reply — an idle core
    /// takes longer to wake than a trivial reply takes to come; 0: off (docs/wire.md,
    /// "Latency").
    #[arg(long, value_name = "US", default_value_t = 2_000)]
    pub nats_keep_awake_us: u64,
}

impl NatsArgs {
    pub(crate) fn options(&self, url: &str) -> NatsOptions {
        NatsOptions {
            url: url.to_owned(),
            creds: self.nats_creds.clone(),
            token: self.nats_token.clone(),
            prefix: self.subject_prefix.clone(),
            keep_awake: std::time::Duration::from_micros(self.nats_keep_awake_us),
        }
    }
}

/// `cameleon satellite`.
#[derive(Debug, Args)]
pub struct SatelliteArgs {
    /// How to reach NATS (`--nats` required).
    #[command(flatten)]
    pub conn: NatsArgs,
    /// Its name among the satellites of the prefix (default: HOST-PID).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// How many calls it runs at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Its heartbeat period; a satellite unseen for 3 periods is gone.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_ms: u64,
    /// The operator types it hosts, comma-separated (`--ops counter,llm`). A satellite hosts
    /// only what it is told.
    #[arg(long, value_name = "TYPES", value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Host every operator type of this program (the file-reading ones only with `--base`).
    #[arg(long, conflicts_with = "ops")]
    pub all_ops: bool,
    /// The tools it hosts, comma-separated (`--tools calc,json_query`).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Hosted tools it runs only with a person's approval obtained by the run (the net lists
    /// them under `tools: approve:`), comma-separated.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub approve: Vec<String>,
    /// The folder its file tools and file-reading operators are confined to; without it, it
    /// hosts none of them.
    #[arg(long, value_name = "DIR")]
    pub base: Option<PathBuf>,
    /// The longest a call may run; past it the call is abandoned and answered `timeout`
    /// (0: no ceiling).
    #[arg(long, value_name = "MS", default_value_t = 600_000)]
    pub max_call_ms: u64,
    /// The largest request it reads, in bytes; a larger one is answered `bad_request`.
    #[arg(long, value_name = "BYTES", default_value_t = cameleon_nats::DEFAULT_MAX_REQUEST_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: u64,
    /// On SIGTERM or Ctrl-C: how long it waits for its calls in flight and for NATS before it
    /// exits anyway.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub drain_ms: u64,
}

/// `cameleon satellites`.
#[derive(Debug, Args)]
pub struct SatellitesArgs {
    /// How to reach NATS (`--nats` required).
    #[command(flatten)]
    pub conn: NatsArgs,
    /// Print `[{"name","ops","tools","last_seen_ms"}]`.
    #[arg(long)]
    pub json: bool,
    /// How long to listen for answers and heartbeats.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub wait_ms: u64,
}

/// The URL, or the usage error.
fn url<'a>(conn: &'a NatsArgs, io: &mut Io<'_>) -> std::io::Result<Result<&'a str, i32>> {
    match conn.nats.as_deref() {
        Some(u) => Ok(Ok(u)),
        None => {
            writeln!(
                io.stderr,
                "error: --nats URL is required (e.g. --nats nats://127.0.0.1:4222)"
            )?;
            Ok(Err(exit::INVALID))
        }
    }
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "satellite".to_owned());
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{host}-{}", std::process::id())
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// `cameleon satellite`: serves until SIGTERM or Ctrl-C, then finishes the calls it runs.
pub(super) fn satellite(a: &SatelliteArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    if !a.all_ops && a.ops.is_empty() && a.tools.is_empty() {
        let (ops, tools) = cameleon_nats::could_host();
        writeln!(
            io.stderr,
            "error: {}",
            cameleon_nats::nothing_to_host(&ops, &tools)
        )?;
        return Ok(exit::INVALID);
    }
    let url = match url(&a.conn, io)? {
        Ok(u) => u,
        Err(code) => return Ok(code),
    };
    let options = a.conn.options(url);
    let mut config = SatelliteConfig::new(a.name.clone().unwrap_or_else(default_name));
    config.concurrency = a.concurrency as usize;
    config.heartbeat = Duration::from_millis(a.heartbeat_ms);
    config.base_dir = a.base.clone();
    config.ops = if a.all_ops {
        OpsToHost::All
    } else if a.ops.is_empty() {
        OpsToHost::None
    } else {
        OpsToHost::Listed(a.ops.clone())
    };
    config.tools = a.tools.clone();
    config.approve = a.approve.clone();
    config.max_call = (a.max_call_ms > 0).then(|| Duration::from_millis(a.max_call_ms));
    config.max_request_bytes = usize::try_from(a.max_request_bytes).unwrap_or(usize::MAX);
    config.drain_timeout = Duration::from_millis(a.drain_ms);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            writeln!(io.stderr, "error: cannot start the runtime: {e}")?;
            return Ok(exit::ERROR);
        }
    };
    rt.block_on(async {
        let sat = match Satellite::start(&options, config).await {
            Ok(s) => s,
            Err(e @ cameleon_nats::NatsError::Config(_)) => {
                writeln!(io.stderr, "error: {e}")?;
                return Ok(exit::INVALID);
            }
            Err(e) => {
                writeln!(io.stderr, "error: {e}")?;
                return Ok(exit::ERROR);
            }
        };
        let signals = catch_stop_signals();
        let h = sat.heartbeat();
        writeln!(
            io.stderr,
            "satellite {}: serving {} operator types and {} tools on {url} (prefix `{}`), {} at a time; SIGTERM or Ctrl-C stops it",
            h.name,
            h.ops.len(),
            h.tools.len(),
            options.prefix,
            h.concurrency
        )?;
        writeln!(
            io.stderr,
            "  operator types: {}\n  tools: {}\n  files: {}",
            listed(&h.ops),
            listed(&h.tools),
            a.base.as_ref().map_or_else(
                || "none (no --base)".to_owned(),
                |b| format!("confined to {}", b.display())
            )
        )?;
        io.stderr.flush()?;
        stopped(signals).await;
        writeln!(
            io.stderr,
            "satellite {}: stopping: finishing {} call(s) in flight",
            h.name,
            sat.in_flight()
        )?;
        io.stderr.flush()?;
        if sat.shutdown().await {
            writeln!(io.stderr, "satellite {}: stopped", h.name)?;
        } else {
            writeln!(
                io.stderr,
                "satellite {}: stopped after its drain timeout ({} ms): calls still running or replies not delivered (is the NATS server reachable?) are left to the runs, which send them again",
                h.name, a.drain_ms
            )?;
        }
        Ok(exit::OK)
    })
}

/// The handlers of SIGTERM and SIGINT (Ctrl-C), in place from their creation.
#[cfg(unix)]
type Signals = Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>;
#[cfg(not(unix))]
type Signals = ();

/// Takes over SIGTERM and Ctrl-C now (on the runtime), before the satellite says it serves: a
/// signal sent as soon as it has said so stops it gracefully instead of killing it.
fn catch_stop_signals() -> Signals {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::terminate())
            .ok()
            .zip(signal(SignalKind::interrupt()).ok())
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn stopped(signals: Signals) {
    #[cfg(unix)]
    if let Some((mut term, mut interrupt)) = signals {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
        return;
    }
    #[cfg(not(unix))]
    let () = signals;
    let _ = tokio::signal::ctrl_c().await;
}

/// `cameleon satellites`.
pub(super) fn satellites(a: &SatellitesArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let url = match url(&a.conn, io)? {
        Ok(u) => u,
        Err(code) => return Ok(code),
    };
    let options = a.conn.options(url);
    let wait = Duration::from_millis(a.wait_ms);
    let found = Remote::connect(&options).and_then(|r| {
        cameleon::runtime::block_on(async move {
            cameleon::runtime::spawn(async move { r.discover(wait).await })
                .await
                .map_err(|e| cameleon_nats::NatsError::Nats(e.to_string()))?
        })
    });
    let seen = match found {
        Ok(s) => s,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::ERROR);
        }
    };
    if a.json {
        writeln!(
            io.stdout,
            "{}",
            serde_json::to_string(&seen).unwrap_or_else(|_| "[]".into())
        )?;
        return Ok(exit::OK);
    }
    if seen.is_empty() {
        writeln!(
            io.stdout,
            "no satellite answered on {url} (prefix `{}`) within {} ms",
            options.prefix, a.wait_ms
        )?;
        return Ok(exit::OK);
    }
    let w = seen.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    writeln!(
        io.stdout,
        "{:w$}  {:>4}  {:>5}  LAST SEEN",
        "NAME", "OPS", "TOOLS"
    )?;
    for s in &seen {
        writeln!(
            io.stdout,
            "{:w$}  {:>4}  {:>5}  {} ms ago",
            s.name,
            s.ops.len(),
            s.tools.len(),
            s.last_seen_ms
        )?;
    }
    Ok(exit::OK)
}

/// What `--nats` brings to a command before its file is loaded: the connection, and the tools
/// the satellites host that this program lacks (their manifests, gathered at start within
/// `--nats-wait-ms`).
pub(super) struct Connected {
    /// The connection to the satellites.
    pub(super) remote: Remote,
    /// The remote tools.
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// The descriptions of the operator types the satellites host.
    pub(super) types: Vec<cameleon_nats::wire::WireOpType>,
}

impl Connected {
    /// Every tool a file may name: this program's and the satellites'.
    pub(super) fn registry(&self) -> Arc<ToolRegistry> {
        let mut r = ToolRegistry::new();
        r.extend_from(ToolRegistry::global());
        for t in &self.tools {
            r.replace(Arc::clone(t));
        }
        Arc::new(r)
    }

    /// The catalogue a file is loaded with: this program's operator types and the satellites'
    /// that it lacks (instances of those fire on satellites only). `Err`: a description that
    /// cannot be used, reported.
    pub(super) fn catalogue(&self, io: &mut Io<'_>) -> std::io::Result<Result<Catalogue, i32>> {
        match cameleon_nats::types::catalogue_with(&self.types) {
            Ok(c) => Ok(Ok(c)),
            Err(e) => {
                writeln!(io.stderr, "error: a satellite's operator types: {e}")?;
                Ok(Err(exit::ERROR))
            }
        }
    }

    /// What a journaled net's names resolve against when it is loaded back (at the start of
    /// `run --journal`, and by `resume`): this program's operator types and tools and the
    /// satellites'. `Err`: a description that cannot be used, reported.
    pub(super) fn names(
        &self,
        io: &mut Io<'_>,
    ) -> std::io::Result<Result<cameleon::journal::Names, i32>> {
        let setup = self.loader_setup();
        Ok(self
            .catalogue(io)?
            .map(|catalogue| cameleon::journal::Names {
                catalogue: Some(catalogue),
                loader: Some(setup),
            }))
    }

    /// Tells a loader the tools a file may name: this program's and the satellites'.
    pub(super) fn loader_setup(&self) -> cameleon::journal::LoaderSetup {
        let tools = self.registry();
        Arc::new(move |l: cameleon::cm::Loader<'_>| l.tools(Arc::clone(&tools)))
    }

    /// Every instance of a type only a satellite hosts must be placed remote. `Err`: the exit
    /// code, the instances named.
    pub(super) fn check_placement(
        &self,
        net: &cameleon::net::Net,
        io: &mut Io<'_>,
    ) -> std::io::Result<Result<(), i32>> {
        let mut bad = Vec::new();
        for o in net.operators() {
            let ty = o.spec.type_id.to_string();
            if Catalogue::global().get(&ty).is_none()
                && o.placement != cameleon::net::Placement::Remote
            {
                bad.push(format!("`{}` ({ty})", o.name));
            }
        }
        if bad.is_empty() {
            return Ok(Ok(()));
        }
        writeln!(
            io.stderr,
            "error: {} of an operator type this program does not link, which a satellite hosts: give {} `placement: remote`",
            bad.join(", "),
            if bad.len() == 1 { "it" } else { "them" }
        )?;
        Ok(Err(exit::INVALID))
    }

    /// The satellites' tools as a capabilities source (they join the run's gate).
    pub(super) fn source(&self) -> SatelliteTools {
        SatelliteTools {
            tools: self.tools.clone(),
            remote: self.remote.clone(),
        }
    }
}

/// The satellites' tools, as a source of capabilities: their names for `check`, the tools for
/// a run's gate; and the connection, which places the remote instances of inner nets.
#[derive(Debug)]
pub(super) struct SatelliteTools {
    tools: Vec<Arc<dyn Tool>>,
    remote: Remote,
}

impl CapabilitySource for SatelliteTools {
    fn describe(&self) -> String {
        "the satellites (`--nats`)".to_owned()
    }

    fn apply(&self, b: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError> {
        for t in &self.tools {
            b.tool(Arc::clone(t));
        }
        b.placer(Arc::new(self.remote.clone()));
        Ok(())
    }

    fn names(&self, names: &mut CapabilityNames) -> Result<(), CapabilitiesError> {
        for t in &self.tools {
            names.tool(&t.manifest().name);
        }
        Ok(())
    }
}

/// Loads `path` for a command with `connected`'s tools and operator types when it has
/// satellites (as [`load`](crate::load) otherwise), the names of the nets the capabilities
/// files that apply (`capabilities`, else the usual ones) offer as tools accepted as tool
/// names. `Err`: the exit code, reported.
pub(super) fn load(
    path: &std::path::Path,
    allow_outside: bool,
    json: bool,
    connected: Option<&Connected>,
    capabilities: Option<&std::path::Path>,
    io: &mut Io<'_>,
) -> std::io::Result<Result<cameleon::net::Net, i32>> {
    let known = crate::net_tools::net_tool_names(path, capabilities);
    let Some(c) = connected else {
        return crate::load_with(path, allow_outside, json, None, None, &known, io);
    };
    let catalogue = match c.catalogue(io)? {
        Ok(cat) => cat,
        Err(code) => return Ok(Err(code)),
    };
    let net = match crate::load_with(
        path,
        allow_outside,
        json,
        Some(c.registry()),
        Some(&catalogue),
        &known,
        io,
    )? {
        Ok(net) => net,
        Err(code) => return Ok(Err(code)),
    };
    c.check_placement(&net, io).map(|r| r.map(|()| net))
}

/// With `--nats`, connects and gathers the satellites' tools. `Ok(None)`: no `--nats`.
/// `Err`: the exit code, reported.
pub(super) fn connect(
    conn: &NatsArgs,
    io: &mut Io<'_>,
) -> std::io::Result<Result<Option<Connected>, i32>> {
    let Some(url) = conn.nats.as_deref() else {
        return Ok(Ok(None));
    };
    let options = conn.options(url);
    let remote = match Remote::connect(&options) {
        Ok(r) => r.timeout(Duration::from_millis(conn.nats_timeout_ms)),
        Err(e @ cameleon_nats::NatsError::Config(_)) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(Err(exit::INVALID));
        }
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(Err(exit::ERROR));
        }
    };
    let r = remote.clone();
    let wait = Duration::from_millis(conn.nats_wait_ms);
    let (manifests, types) = cameleon::runtime::block_on(async move {
        cameleon::runtime::spawn(async move { r.hosted(wait).await })
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    });
    let tools = remote.remote_tools(manifests, ToolRegistry::global());
    Ok(Ok(Some(Connected {
        remote,
        tools,
        types,
    })))
}
