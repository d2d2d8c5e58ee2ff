//! The served net and its engine: what the page shows (state, history, source, problems) and
//! what its buttons do, independent of HTTP routing. Its refusals are [`ApiError`]s of a kind
//! (`error.rs` maps kinds to statuses).
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the [`Session`]: loading, checking and saving the text, a fresh engine per valid version |
//! | `actions.rs` | what the buttons do: step, back, re-fire, reset, go to a step, answer an `ask` |
//! | `running.rs` | a run in progress: started, paused and ended by the session's own methods, driven in slices |
//! | `views.rs` | the state and the history as the page reads them ([`StateView`](super::view::StateView), [`HistoryView`](super::view::HistoryView)) |
//! | `results.rs` | what the net produced: every sink's values, and a look at one connection or operator |

mod actions;
mod results;
mod running;
mod views;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cameleon::capabilities::Runtime;
use cameleon::catalogue::Catalogue;
use cameleon::cm::{CmError, Loader, folder_of, leading_comments};
use cameleon::engine::{Cvm, EndState, Event};
use cameleon::export::Diagram;
use cameleon::journal::{Journal, RunOptions};
use cameleon::net::Net;

use super::error::ApiError;
use super::view::{ProblemView, SourceView};
use running::RunState;

/// Engine events not yet sent to the page.
pub(crate) type Outbox = Arc<Mutex<Vec<Event>>>;

/// The served file and how it is read: what checking a text needs, without the engine.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    /// The served `.cm` file: the only file the server writes.
    pub(crate) path: PathBuf,
    /// `--allow-outside`.
    pub(crate) allow_outside: bool,
    /// `--nats URL`: the satellites whose operator types and tools the file may name, and on
    /// which the engines' remote instances fire.
    pub(crate) satellites: Option<Arc<Satellites>>,
    /// `--capabilities FILE`: the nets it offers as tools are names the file may use (else
    /// those of the capabilities files that apply to it).
    pub(crate) capabilities: Option<PathBuf>,
}

impl Served {
    /// The loader of texts of the served file (its folder, its name, the net-tools of its
    /// capabilities; with `--nats`, the satellites' types and tools).
    pub(crate) fn loader(&self) -> Loader<'_> {
        let mut l = Loader::new()
            .allow_outside(self.allow_outside)
            .base_dir(folder_of(&self.path))
            .known_tools(crate::net_tools::net_tool_names(
                &self.path,
                self.capabilities.as_deref(),
            ));
        if let Some(s) = &self.satellites {
            l = l.catalogue(&s.catalogue).tools(s.connected.registry());
        }
        if let Some(name) = self.path.file_name() {
            l = l.file_name(name.to_string_lossy());
        }
        l
    }

    /// Checks `text` as the served file: its problems (empty: valid).
    pub(crate) fn check(&self, text: &str) -> Vec<ProblemView> {
        match self.loader().load_str(text) {
            Ok(_) => Vec::new(),
            Err(e) => ProblemView::all(&e),
        }
    }
}

/// What connects a session to the server without the session's lock: where engine events go,
/// the Pause flag, and what is firing now.
#[derive(Clone, Debug, Default)]
pub(crate) struct Wires {
    /// Engine events for the event stream.
    pub(crate) outbox: Outbox,
    /// Set by Pause; a run stops at its next step.
    pub(crate) pause: Arc<AtomicBool>,
    /// The operators firing now (the state's `firing`), kept by the engine's observer.
    pub(crate) firing: Arc<Mutex<Vec<String>>>,
    /// Set when something the page shows changed: the next flush sends the state.
    pub(crate) dirty: Arc<AtomicBool>,
    /// The cancellation token of the engine installed last: Reset cancels the step in flight
    /// with it (a model's answer streaming in is cut at once).
    pub(crate) cancel: Arc<Mutex<Option<cameleon::CancelToken>>>,
}

/// The served file, its text, and its engine when the text is a valid net.
pub(crate) struct Session {
    served: Served,
    /// The file's text as last loaded or saved.
    text: String,
    /// The problems of `text`, when it is not a valid net.
    problems: Vec<ProblemView>,
    /// `GET /api/source`, kept while the text does not change.
    source: Arc<SourceView>,
    /// `GET /api/svg`, kept while the net does not change.
    drawing: Arc<Option<Drawing>>,
    /// The engine of the last valid version of the net.
    cvm: Option<Cvm>,
    /// How the last step or run ended, while nothing changed since.
    last_end: Option<EndState>,
    wires: Wires,
    /// Events of a run's current slice, handed to the outbox when it ends, so the stream gets
    /// a run in whole slices (a single step's go straight to the outbox).
    pending: Outbox,
    /// A run is in progress: the engine's events go to `pending`.
    batching: Arc<AtomicBool>,
    /// Whether a run is in progress.
    run: RunState,
    /// Bumped by every change: the page keeps the newest state it received.
    version: u64,
    /// The capabilities every engine of the session pins (`cameleon.yaml` beside the file).
    runtime: Runtime,
    /// `--journal DB`: every engine of the session is a journaled run in this file (or on
    /// NATS JetStream).
    journal: Option<JournalAt>,
    /// The id of the journaled run the engine is (with `--journal`).
    run_id: Option<String>,
    /// With a `nats://` journal: the lease of the run the engine is, held while it is served.
    lease: Option<cameleon_nats::Lease>,
}

/// Where `serve --journal` journals the served run (docs/journal.md "Stores").
#[derive(Debug)]
pub(crate) enum JournalAt {
    /// A SQLite journal file, created if missing.
    File(PathBuf),
    /// A journal on NATS JetStream.
    Bus(Box<cameleon_nats::JetStreamJournal>),
}

/// The satellites of `serve --nats`: the connection and their tools, and the catalogue with
/// their operator types.
pub(crate) struct Satellites {
    pub(crate) connected: crate::satellite::Connected,
    pub(crate) catalogue: Catalogue,
}

impl std::fmt::Debug for Satellites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Satellites").finish_non_exhaustive()
    }
}

/// What `GET /api/svg` draws.
#[derive(Debug)]
pub(crate) enum Drawing {
    /// The served net (as `export --svg`).
    Net(String),
    /// What could be read of a text that is not a valid net yet.
    Sketch(String),
}

impl Session {
    /// Loads `path`; an invalid file gives a session with its problems and no engine. With
    /// `journal`, the engine is a run journaled into that file; a net that cannot be journaled
    /// is an error.
    pub(crate) fn open(
        served: Served,
        runtime: Runtime,
        journal: Option<JournalAt>,
        wires: Wires,
    ) -> Result<Self, String> {
        let text = std::fs::read_to_string(&served.path)
            .map_err(|e| format!("cannot read `{}`: {e}", served.path.display()))?;
        let mut s = Session {
            served,
            text: String::new(),
            problems: Vec::new(),
            source: Arc::new(SourceView::default()),
            drawing: Arc::new(None),
            cvm: None,
            last_end: None,
            run: RunState::new(Arc::clone(&wires.pause)),
            wires,
            pending: Outbox::default(),
            batching: Arc::default(),
            version: 0,
            runtime,
            journal,
            run_id: None,
            lease: None,
        };
        s.load(text)?;
        Ok(s)
    }

    /// The id of the journaled run the engine is (with `--journal`).
    pub(crate) fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// The problems of the served text (empty: a valid net).
    pub(crate) fn problems(&self) -> &[ProblemView] {
        &self.problems
    }

    /// `GET /api/source`: the file, its text and its problems.
    pub(crate) fn source(&self) -> Arc<SourceView> {
        Arc::clone(&self.source)
    }

    /// `GET /api/svg`: the net, or — when the text is not a valid net — what can be drawn of
    /// it (`None`: not even readable as a `.cm` file).
    pub(crate) fn drawing(&self) -> Arc<Option<Drawing>> {
        Arc::clone(&self.drawing)
    }

    /// Draws the net again, and takes the text's view again: after a change of either.
    fn redraw(&mut self) {
        self.source = Arc::new(SourceView {
            file: self.served.path.display().to_string(),
            text: self.text.clone(),
            problems: self.problems.clone(),
        });
        let drawing = match &self.cvm {
            Some(cvm) => Some(Drawing::Net(cameleon::export::svg(cvm.net()))),
            None => self
                .loader()
                .parse_str(&self.text)
                .ok()
                .map(|file| Drawing::Sketch(Diagram::sketch(&file, Catalogue::global()).svg())),
        };
        self.drawing = Arc::new(drawing);
    }

    fn loader(&self) -> Loader<'_> {
        self.served.loader()
    }

    /// Moves the events of a run's slice to the outbox (the stream sends them at its next
    /// flush).
    pub(crate) fn hand_off(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.is_empty() {
            self.wires
                .outbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .append(&mut pending);
        }
    }

    /// The satellite that ran the firing of `instance` at `step`, when it ran on one.
    pub(crate) fn ran_on(&self, step: u32, instance: &str) -> Option<String> {
        let (s, cvm) = (self.served.satellites.as_ref()?, self.cvm.as_ref()?);
        s.connected.remote.ran_on(cvm.run_id(), step, instance)
    }

    /// Takes `text` as the net: a new engine when it is valid, else its problems (the engine
    /// of the last valid version stays, so the page still shows it). `Err`: the net is valid
    /// but its journaled run could not start.
    fn load(&mut self, text: String) -> Result<(), String> {
        let r = match self.loader().load_str(&text) {
            Ok(net) => {
                self.problems.clear();
                self.engine(net).map(|cvm| self.install(cvm))
            }
            Err(e) => {
                self.problems = ProblemView::all(&e);
                Ok(())
            }
        };
        self.text = text;
        self.redraw();
        r
    }

    /// A fresh engine for `net`, with the session's capabilities pinned; with `--journal`, a
    /// new journaled run (its id becomes the session's). `Err`: why the run cannot be
    /// journaled.
    fn engine(&mut self, mut net: Net) -> Result<Cvm, String> {
        if let Some(s) = &self.served.satellites {
            s.connected.remote.place(&mut net);
        }
        let base = folder_of(&self.served.path);
        let name = if net.name().is_empty() {
            self.served
                .path
                .file_stem()
                .map_or_else(|| "net".to_owned(), |s| s.to_string_lossy().into_owned())
        } else {
            net.name().to_owned()
        };
        let mut cvm = self.runtime.cvm(net, base.clone()).build();
        if let Some(db) = &self.journal {
            let opts = RunOptions {
                name: Some(name),
                base_dir: Some(base),
                allow_outside: self.served.allow_outside,
                generation: Some(cvm.generation()),
                // Loaded back with the satellites' types and tools, as served.
                names: cameleon::journal::Names {
                    catalogue: self.served.satellites.as_ref().map(|s| s.catalogue.clone()),
                    loader: self
                        .served
                        .satellites
                        .as_ref()
                        .map(|s| s.connected.loader_setup()),
                },
                ..RunOptions::default()
            };
            let id = match db {
                JournalAt::File(db) => Journal::create(db)
                    .and_then(|j| j.start(&mut cvm, &opts))
                    .map_err(|e| e.to_string())?,
                JournalAt::Bus(js) => {
                    let (id, lease) = js.start(&mut cvm, &opts).map_err(|e| e.to_string())?;
                    // The run served before lets go of its lease: it may be resumed.
                    self.lease = Some(lease);
                    id
                }
            };
            self.run_id = Some(id);
        }
        Ok(cvm)
    }

    /// Marks a change: the next state has a higher version.
    fn touch(&mut self) {
        self.version += 1;
    }

    fn install(&mut self, mut cvm: Cvm) {
        self.touch();
        *self
            .wires
            .cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cvm.cancel_token());
        let (outbox, pending) = (Arc::clone(&self.wires.outbox), Arc::clone(&self.pending));
        let batching = Arc::clone(&self.batching);
        let (firing, dirty) = (
            Arc::clone(&self.wires.firing),
            Arc::clone(&self.wires.dirty),
        );
        // Partial output goes to the outbox at once (not with the run's slice: it is live),
        // each piece appended to the one before it while no flush took it: a fast stream is
        // one event per operator per flush.
        let live = Arc::clone(&outbox);
        cvm.on_partial(move |e| coalesce(&live, e));
        cvm.on_event(move |e| {
            note_firing(&firing, e);
            if matches!(e, Event::FiringStarted { .. }) {
                dirty.store(true, Ordering::SeqCst);
            }
            let to = if batching.load(Ordering::Relaxed) {
                &pending
            } else {
                &outbox
            };
            to.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(e.clone());
        });
        self.cvm = Some(cvm);
        self.last_end = None;
    }

    /// Writes the canonical form of `text` to the served file (its leading comment block
    /// kept, as `fmt` does) and serves it. Refused while a run is in progress, and for a text
    /// that is not a valid net (with its problems); nothing is written then.
    pub(crate) fn save(&mut self, text: &str) -> Result<String, ApiError> {
        self.idle()?;
        let net = match self.loader().load_str(text) {
            Ok(net) => net,
            Err(e) => return Err(not_saved(&e)),
        };
        let canonical = format!("{}{}", leading_comments(text), net.to_cm());
        // With `--journal`, the saved net is a new run: started before anything is written.
        let cvm = self
            .engine(net)
            .map_err(|e| ApiError::conflict(format!("not saved: {e}")).with_problems(Vec::new()))?;
        let path = &self.served.path;
        std::fs::write(path, &canonical).map_err(|e| {
            ApiError::internal(format!("cannot write `{}`: {e}", path.display()))
                .with_problems(Vec::new())
        })?;
        self.problems.clear();
        self.text = canonical.clone();
        self.install(cvm);
        self.redraw();
        Ok(canonical)
    }

    fn cvm(&mut self) -> Result<&mut Cvm, ApiError> {
        self.cvm.as_mut().ok_or_else(not_a_net)
    }
}

/// Puts partial output `e` in `outbox`: appended to the last event when that is partial output
/// of the same firing, else as a new event.
fn coalesce(outbox: &Mutex<Vec<Event>>, e: &Event) {
    let Event::Partial { step, op, text } = e else {
        return;
    };
    let mut out = outbox.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(Event::Partial {
        step: s,
        op: o,
        text: t,
    }) = out.last_mut()
        && s == step
        && o == op
    {
        t.push_str(text);
        return;
    }
    out.push(e.clone());
}

/// Keeps `firing` — the operators whose firing started and has not finished — up to date
/// with engine event `e`.
fn note_firing(firing: &Mutex<Vec<String>>, e: &Event) {
    let mut f = firing.lock().unwrap_or_else(PoisonError::into_inner);
    match e {
        Event::FiringStarted { op, .. } => f.push(op.clone()),
        Event::FiringFinished { op, .. } => f.retain(|o| o != op),
        Event::StepCommitted { .. } | Event::StepDiscarded { .. } | Event::Ended { .. } => {
            f.clear()
        }
        _ => {}
    }
}

/// Save's refusal of a text that is not a valid net, with its problems.
fn not_saved(e: &CmError) -> ApiError {
    let n = e.problems().len();
    ApiError::invalid(format!(
        "not saved: the text is not a valid net ({n} problem{})",
        if n == 1 { "" } else { "s" }
    ))
    .with_problems(ProblemView::all(e))
}

/// The refusal of anything that needs an engine while the served text has never been a valid
/// net.
fn not_a_net() -> ApiError {
    ApiError::conflict("the served file is not a valid net: fix it in the Code view")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partial(step: u32, op: &str, text: &str) -> Event {
        Event::Partial {
            step,
            op: op.into(),
            text: text.into(),
        }
    }

    #[test]
    fn partial_output_is_coalesced_per_firing_until_a_flush_takes_it() {
        let outbox = Mutex::new(Vec::new());
        for piece in ["Cha", "me", "leons"] {
            coalesce(&outbox, &partial(2, "ask", piece));
        }
        coalesce(&outbox, &partial(2, "other", "x"));
        coalesce(&outbox, &partial(2, "ask", " are"));
        assert_eq!(
            *outbox.lock().unwrap(),
            [
                partial(2, "ask", "Chameleons"),
                partial(2, "other", "x"),
                partial(2, "ask", " are")
            ]
        );
        // A flush took them: the next piece starts a new event.
        outbox.lock().unwrap().clear();
        coalesce(&outbox, &partial(2, "ask", " lizards"));
        assert_eq!(*outbox.lock().unwrap(), [partial(2, "ask", " lizards")]);
    }
}
