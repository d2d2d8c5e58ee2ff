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

mod api;
mod session;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use tokio::sync::broadcast;

use super::{Io, exit};
pub(crate) use session::{Outbox, Session};

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
}

/// One message of the event stream: an engine event (unnamed SSE event, its JSON) or the
/// state (`event: state`).
#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub(crate) name: Option<&'static str>,
    pub(crate) data: String,
}

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) session: Mutex<Session>,
    pub(crate) outbox: Outbox,
    pub(crate) tx: broadcast::Sender<Arc<Vec<Message>>>,
    /// Set by Pause; a run checks it between batches.
    pub(crate) pause: AtomicBool,
    /// Something changed since the last flush: send the state.
    pub(crate) dirty: AtomicBool,
    pub(crate) token: Option<String>,
    /// Messages sent so far (for tests and the page's counters).
    pub(crate) sent: AtomicU64,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends what happened since the last flush: the engine events, then the state.
    pub(crate) fn flush(&self) {
        if self.outbox_empty() && !self.dirty.load(Ordering::SeqCst) {
            return;
        }
        let session = self.lock();
        self.flush_with(&session);
    }

    fn outbox_empty(&self) -> bool {
        self.outbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// [`flush`](Self::flush) with the session already locked (a run flushes between its
    /// slices: it holds the engine, so nobody else could).
    pub(crate) fn flush_with(&self, session: &Session) {
        let events =
            std::mem::take(&mut *self.outbox.lock().unwrap_or_else(PoisonError::into_inner));
        self.dirty.store(false, Ordering::SeqCst);
        let skipped = events.len().saturating_sub(MAX_EVENTS_PER_FLUSH);
        let mut batch: Vec<Message> = Vec::with_capacity(events.len() - skipped + 2);
        if skipped > 0 {
            batch.push(Message {
                name: None,
                data: serde_json::json!({"event": "coalesced", "skipped": skipped}).to_string(),
            });
        }
        batch.extend(events[skipped..].iter().map(|e| Message {
            name: None,
            data: serde_json::to_string(e).unwrap_or_default(),
        }));
        let mut state = session.state_json();
        if let serde_json::Value::Object(m) = &mut state {
            // When the state left the server, for the page's event-to-screen latency.
            m.insert("sent_ms".into(), serde_json::json!(now_ms()));
        }
        batch.push(Message {
            name: Some("state"),
            data: state.to_string(),
        });
        self.sent.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let _ = self.tx.send(Arc::new(batch)); // nobody listening is fine
    }
}

/// Milliseconds since the Unix epoch (an annotation for latency, never in a trace).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
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
    let runtime = match cameleon::capabilities::Runtime::builder()
        .for_cm_file(&a.file, a.capabilities.as_deref())
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
    if let Some(id) = &session.run_id {
        // As `run --journal`: the id `resume` takes.
        writeln!(io.stderr, "run {id}")?;
        io.stderr.flush()?;
    }
    if !session.problems.is_empty() {
        writeln!(
            io.stderr,
            "note: `{}` is not a valid net ({} problem(s)); the page opens on the Code view",
            a.file.display(),
            session.problems.len()
        )?;
    }
    let (tx, _) = broadcast::channel(1024);
    let shared = Arc::new(Shared {
        session: Mutex::new(session),
        outbox,
        tx,
        pause: AtomicBool::new(false),
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
