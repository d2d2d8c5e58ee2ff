//! `cameleon serve`: a local web page to watch a net run, step it by hand, answer its `ask`
//! operators and edit its `.cm` text (docs/cli.md, "serve").
//!
//! One page (HTML, CSS and JS embedded in the binary: no build step, works offline) over a
//! JSON API and a server-sent event stream. The engine lives in one [`Session`] behind a mutex;
//! handlers that change it run on tokio's blocking pool. Engine events go to an outbox that a
//! flusher drains every [`FLUSH_MS`] ms: it sends them (at most [`MAX_EVENTS_PER_FLUSH`], the
//! older ones of a burst summed up in one `coalesced` event), then one `state` event with the
//! new state, to every subscriber — so a 10 000-step run costs the page one redraw per flush,
//! not one per step.
//!
//! Security: the server listens on 127.0.0.1 unless `--bind` says otherwise, and then requires
//! `--token`, checked on every request (header `Authorization: Bearer T`, or `?token=T` for the
//! page and its event stream) in constant time. Every POST must say `Content-Type:
//! application/json` (a cross-site form cannot), and a malformed request gets a 400 with a JSON
//! error. The only file written is the served `.cm` (Save).

//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the arguments, what the handlers share, starting and stopping the server |
//! | `api.rs` | the routes, their layers, a handler per route |
//! | `guard.rs` | the layers every request goes through: the token, a JSON content type on POSTs |
//! | `extract.rs` | the extractors: a JSON body of a known shape, an empty body, a query |
//! | `error.rs` | `ApiError`: every refusal, and the one mapping of its kinds to HTTP statuses |
//! | `view.rs` | every JSON shape the page reads (the contract with `page.js`) |
//! | `stream.rs` | the event stream and the flusher's batches |
//! | `session/` | the served file and its engine: load, check, save, the buttons, a run in progress |

mod api;
mod error;
mod extract;
mod guard;
mod session;
mod stream;
mod view;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use tokio::sync::broadcast;

use super::{Io, exit};
use error::ApiError;
use session::{Outbox, Session};
use stream::Message;

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
    /// A secret every request must carry (`Authorization: Bearer T`, or `?token=T` in the
    /// page's address).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// Journal the served run into this SQLite file (created if missing): every step, back,
    /// re-fire and checkout is recorded, and `cameleon resume DB RUN_ID` continues the run
    /// later. Reset and Save start a new run. The run id is on stderr and in `/api/state`.
    #[arg(long, value_name = "DB")]
    pub journal: Option<PathBuf>,
    /// Where the capabilities come from (default: `cameleon.yaml` beside the .cm, if present).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Let file-reading operators read outside the .cm file's folder.
    #[arg(long)]
    pub allow_outside: bool,
    /// Grant TOOL (repeatable), as `run --grant`: under the net's `tools: allow:` it runs
    /// unasked whatever its effects.
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
}

/// What the handlers share.
pub(crate) struct Shared {
    session: Mutex<Session>,
    outbox: Outbox,
    tx: broadcast::Sender<Arc<Vec<Message>>>,
    /// Something changed since the last flush: send the state.
    dirty: AtomicBool,
    token: Option<String>,
    /// Messages sent so far (for tests and the page's counters).
    sent: AtomicU64,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Something changed: the next flush sends the state.
    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::SeqCst);
    }

    /// Runs `f` in tokio's blocking pool (the engine may take its time: an operator runs
    /// there, not on the server's async workers). `Err`: the task died.
    pub(crate) async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Shared) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || f(&shared))
            .await
            .map_err(|e| ApiError::internal(format!("the engine task failed: {e}")))
    }
}

/// Runs `cameleon serve` until the process is interrupted.
pub(crate) fn serve(a: &ServeArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    if !a.bind.is_loopback() && a.token.as_deref().is_none_or(str::is_empty) {
        writeln!(
            io.stderr,
            "error: --bind {} listens beyond this machine: give a secret with --token T (every request must then carry it)",
            a.bind
        )?;
        return Ok(exit::INVALID);
    }
    let runtime = match crate::trust::sources(
        &cameleon::cm::folder_of(&a.file),
        a.capabilities.as_deref(),
        &a.grant,
    )
    .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let outbox: Outbox = Arc::default();
    let session = match Session::open(
        a.file.clone(),
        a.allow_outside,
        Arc::clone(&outbox),
        runtime,
        a.journal.clone(),
    ) {
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
    let (tx, _) = broadcast::channel(1024);
    let shared = Arc::new(Shared {
        session: Mutex::new(session),
        outbox,
        tx,
        dirty: AtomicBool::new(true),
        token: a.token.clone().filter(|t| !t.is_empty()),
        sent: AtomicU64::new(0),
    });
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
    let query = shared
        .token
        .as_ref()
        .map(|t| format!("?token={t}"))
        .unwrap_or_default();
    writeln!(
        io.stdout,
        "serving {} on http://{local}/{query}",
        a.file.display()
    )?;
    io.stdout.flush()?;
    let app = api::router(Arc::clone(&shared));
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
    // Open event streams would keep the runtime busy: drop it without waiting for them.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(exit::OK)
}
