//! `cameleon serve`: a local web page to watch a net run, step it by hand, answer its `ask`
//! operators, see what it produced and edit its `.cm` text (docs/cli.md, "serve").
//!
//! One page (HTML, CSS and JS embedded in the binary: no build step, works offline) over a
//! JSON API and a server-sent event stream. The engine lives in one session behind a mutex
//! that only tokio's blocking pool locks; the async side reads what was last published of it
//! ([`shared`]), so a slow firing never holds a server worker. Engine events go to an outbox
//! that a flusher drains every [`FLUSH_MS`] ms: it sends them (at most
//! [`MAX_EVENTS_PER_FLUSH`], the older ones of a burst summed up in one `coalesced` event),
//! then the state, to every subscriber — so a 10 000-step run costs the page one redraw per
//! flush, not one per step. Values reach the page as previews of bounded size.
//!
//! Security (docs/security.md, "serve"): the server listens on 127.0.0.1 unless `--bind` says
//! otherwise; it answers only requests whose `Host` names it and whose `Origin`, if any, is its
//! own page; every request carries its token (one is made unless `--token T` gives one, and
//! `--no-token` is for loopback only), compared in constant time; every POST says
//! `Content-Type: application/json`. The only file written is the served `.cm` (Save).
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the arguments, starting and stopping the server |
//! | `shared.rs` | what the handlers share: the session (blocking pool only) and what was published of it |
//! | `api.rs` | the routes, their layers, a handler per route |
//! | `guard.rs` | the layers every request goes through: Host, Origin, the token, a JSON content type on POSTs |
//! | `token.rs` | the token: made or given, where a request carries it, compared in constant time |
//! | `extract.rs` | the extractors: a JSON body of a known shape, an empty body, a query |
//! | `error.rs` | `ApiError`: every refusal, and the one mapping of its kinds to HTTP statuses |
//! | `view.rs` | every JSON shape the page reads (the contract with `page.js`) |
//! | `stream.rs` | the event stream and the flusher's batches |
//! | `session/` | the served file and its engine: load, check, save, the buttons, a run in progress, results |

mod api;
mod error;
mod extract;
mod guard;
mod session;
mod shared;
mod stream;
pub(crate) mod token;
mod view;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::{Io, exit};
use guard::{Guard, PublicHost};
use session::{JournalAt, Served, Session, Wires};
use shared::Shared;
use token::Token;

/// How often engine events and the state go out to the page, in milliseconds.
pub const FLUSH_MS: u64 = 40;

/// Most engine events one flush sends: past it, the oldest of the flush are summed up in one
/// `{"event":"coalesced","skipped":N}` message, so a fast run does not flood the page.
pub const MAX_EVENTS_PER_FLUSH: usize = 256;

/// `cameleon serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The .cm file to serve (Save writes its canonical form back to it).
    pub file: PathBuf,
    /// The port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// The address to listen on. Anything but a loopback address requires --token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The secret every request must carry (default: a random one, in the printed address).
    /// The page trades `?token=T` for a cookie; scripts send `Authorization: Bearer T`.
    #[arg(long, value_name = "T", conflicts_with = "no_token")]
    pub token: Option<String>,
    /// Serve without a token (loopback only): every program and user of this machine can
    /// then drive the server.
    #[arg(long)]
    pub no_token: bool,
    /// Another name this server is reached by (a reverse proxy's, the machine's): requests
    /// whose Host or Origin names it are answered. NAME alone takes any port. Repeatable.
    #[arg(long = "public-host", value_name = "NAME[:PORT]")]
    pub public_host: Vec<String>,
    /// Journal the served run into this SQLite file (created if missing), or on NATS
    /// JetStream with `nats://HOST:PORT`: every step, back, re-fire and checkout is recorded,
    /// and `cameleon resume DB RUN_ID` continues the run later. Reset and Save start a new run.
    /// The run id is on stderr and in `/api/state`.
    #[arg(long, value_name = "DB")]
    pub journal: Option<PathBuf>,
    /// With a `nats://` journal: the time to live of the served run's lease, for a new lease
    /// bucket (a server that dies holds its run this long).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub lease_ms: u64,
    /// Where the capabilities come from (default: `cameleon.yaml` beside the .cm, if present).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Let file-reading operators read outside the .cm file's folder.
    #[arg(long)]
    pub allow_outside: bool,
    /// NATS: with --nats URL, `placement: remote` instances fire on satellites, and the file
    /// may name their tools and types (docs/wire.md); the history shows where each ran.
    #[command(flatten)]
    pub nats: crate::satellite::NatsArgs,
    /// Grant TOOL (repeatable), as `run --grant`: under the net's `tools: allow:` it runs
    /// unasked whatever its effects.
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
}

/// Runs `cameleon serve` until the process is interrupted.
pub(crate) fn serve(a: &ServeArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let (token, public) = match checked(a) {
        Ok(t) => t,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    if a.no_token {
        writeln!(
            io.stderr,
            "warning: --no-token: every program and user of this machine can drive this server — read and replace `{}`, run its net with its capabilities (docs/security.md)",
            a.file.display()
        )?;
    }
    let satellites = match crate::satellite::connect(&a.nats, io)? {
        Ok(None) => None,
        Ok(Some(c)) => match c.catalogue(io)? {
            Ok(catalogue) => Some(session::Satellites {
                connected: c,
                catalogue,
            }),
            Err(code) => return Ok(code),
        },
        Err(code) => return Ok(code),
    };
    let mut builder = crate::trust::sources(
        &cameleon::cm::folder_of(&a.file),
        a.capabilities.as_deref(),
        &a.grant,
    );
    if let Some(s) = &satellites {
        builder = builder.source(s.connected.source());
    }
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let served = Served {
        path: a.file.clone(),
        allow_outside: a.allow_outside,
        satellites: satellites.map(Arc::new),
        capabilities: a.capabilities.clone(),
    };
    let wires = Wires::default();
    let journal = match a.journal.as_deref() {
        None => None,
        Some(db) => match crate::bus::url(db) {
            Some(url) => match crate::bus::open(url, &a.nats, a.lease_ms) {
                Ok(j) => Some(JournalAt::Bus(Box::new(j))),
                Err(e) => {
                    writeln!(io.stderr, "error: {e}")?;
                    return Ok(exit::INVALID);
                }
            },
            None => Some(JournalAt::File(db.to_path_buf())),
        },
    };
    let session = match Session::open(served.clone(), runtime, journal, wires.clone()) {
        Ok(s) => s,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    if let Some(id) = session.run_id() {
        // As `run --journal`: the id `resume` takes.
        writeln!(io.stderr, "run {id}")?;
        io.stderr.flush()?;
    }
    if !session.problems().is_empty() {
        writeln!(
            io.stderr,
            "note: `{}` is not a valid net ({} problem(s)); the page opens on the Code view",
            a.file.display(),
            session.problems().len()
        )?;
    }
    let shared = Arc::new(Shared::new(session, served, wires));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let addr = SocketAddr::new(a.bind, a.port);
    let listener = match rt.block_on(tokio::net::TcpListener::bind(addr)) {
        Ok(l) => l,
        Err(e) => {
            writeln!(io.stderr, "error: cannot listen on {addr}: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let local = listener.local_addr()?;
    let query = token
        .as_ref()
        .map(|t| format!("?token={}", t.encoded()))
        .unwrap_or_default();
    writeln!(
        io.stdout,
        "serving {} on http://{local}/{query}",
        a.file.display()
    )?;
    io.stdout.flush()?;
    let guard = Arc::new(Guard::new(a.bind, local.port(), public, token));
    let app = api::router(Arc::clone(&shared), guard);
    let flusher = Arc::clone(&shared);
    let interrupt = io.interrupt.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(FLUSH_MS));
            loop {
                tick.tick().await;
                flusher.flush();
            }
        });
        let stop = async move {
            match interrupt {
                Some(t) => {
                    while !t.is_cancelled() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        // Not a graceful shutdown: event streams never end by themselves, so waiting for them
        // would wait for ever. Stopping drops every connection.
        tokio::select! {
            r = axum::serve(listener, app) => r,
            () = stop => Ok(()),
        }
    })?;
    // Open event streams and engine tasks would keep the runtime busy: drop it without waiting
    // for them.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(exit::OK)
}

/// The token the server requires (`None`: `--no-token`) and the `--public-host` names, or why
/// the arguments are refused.
fn checked(a: &ServeArgs) -> Result<(Option<Token>, Vec<PublicHost>), String> {
    let public = a
        .public_host
        .iter()
        .map(|h| h.parse().map_err(|e| format!("--public-host: {e}")))
        .collect::<Result<Vec<PublicHost>, String>>()?;
    if a.no_token {
        if !a.bind.is_loopback() {
            return Err(format!(
                "--no-token is for loopback only: --bind {} listens beyond this machine, so every request must carry a secret (give --token T)",
                a.bind
            ));
        }
        return Ok((None, public));
    }
    let token = match &a.token {
        Some(t) if t.is_empty() => {
            return Err(
                "--token is empty: give a secret, or leave --token out and serve makes one".into(),
            );
        }
        Some(t) => Token::given(t.clone()),
        None if !a.bind.is_loopback() => {
            return Err(format!(
                "--bind {} listens beyond this machine: give a secret with --token T (every request must then carry it)",
                a.bind
            ));
        }
        None => Token::generate().map_err(|e| e.to_string())?,
    };
    Ok((Some(token), public))
}
