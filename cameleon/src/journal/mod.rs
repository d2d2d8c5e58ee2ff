//! Durable runs: the journal, a SQLite file holding any number of runs, their whole history
//! tree, and what is needed to resume them after a crash (docs/semantics.md §5.5).
//!
//! ```
//! use cameleon::journal::{Journal, RunOptions};
//! use cameleon::prelude::*;
//!
//! # let dir = std::env::temp_dir().join(format!("cameleon-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let db = dir.join("runs.db");
//! let net = Net::from_cm(
//!     "operators:\n  - {id: hi, type: source, params: {value: hi}}\n  - {id: out, type: sink}\n\
//!      connections:\n  - {from: hi.out_data, to: out.in_data}\n",
//! )?;
//! let journal = Journal::create(&db)?;
//! let mut cvm = Cvm::new(net);
//! let id = journal.start(&mut cvm, &RunOptions::default())?;   // every step is journaled
//! cvm.step()?;                                                // `hi` fires, committed to disk
//! drop(cvm);                                                  // … a crash, say
//!
//! let mut again = journal.resume(Some(&id))?.cvm;             // `hi` restored, not run again
//! assert_eq!(again.depth(), 1);
//! assert_eq!(again.run()?, EndState::Completed);
//! assert_eq!(again.received("out")[0].to_json(), "hi");
//! assert_eq!(journal.runs()?[0].status, "COMPLETED");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## What is journaled
//!
//! Each history entry (a step: one firing, or every firing of a parallel step) with what
//! backward stepping and replay need (docs/semantics.md §5.1): per firing, the operator, the
//! connections it consumed, the connections it wrote with the token each held before, the
//! values it emitted — as JSON, through each data type's serde form — and, for an operator with
//! internal state, that state before and after, through its serde form (`#[operator]` requires
//! state fields to be `Serialize + Deserialize`). Backward steps, replays, re-fires and
//! checkouts are journaled too: the run row keeps the current position in the tree, the
//! entries keep every branch.
//!
//! A run is started on a fresh engine ([`Journal::start`]); every operator must then be
//! journalable — stateless, or with a serde form of its state (a hand-written operator whose
//! [`save_state`](crate::Operator::save_state) returns [`OpState::new`](crate::operator::OpState::new) is
//! refused, named) — and the net must load back from its canonical `.cm` text with this
//! program's catalogue, since that is what [`Journal::resume`] rebuilds it from. A value that
//! serde cannot write is an error at the firing that emitted it: the step is undone and the
//! journal keeps every step before it.
//!
//! ## Durability
//!
//! [`Durability::Sync`] (the default) commits each step before the next one starts,
//! [`Durability::Batch`] commits at most every `ms` milliseconds (from a background thread, so
//! a step waits at most that long on memory), [`Durability::Exit`] when the run ends. A crash
//! of the process (`kill -9`, a panic, the OOM killer) loses at most what was not committed; a
//! resumed run executes those steps again. In those three modes commits are not synced to the
//! disk one by one (SQLite's WAL with `synchronous = NORMAL`): an OS crash or a power loss may
//! also lose the last committed steps, which a resumed run likewise executes again.
//! [`Durability::Strict`] commits each step as `sync` does and syncs it to the disk (an fsync per
//! step, `synchronous = FULL`) before the next one starts: a committed step survives a power loss
//! too.
//!
//! ## Resuming, and idempotency
//!
//! [`Journal::resume`] rebuilds the net from the stored `.cm`, restores every committed entry
//! **without running any operator** ([`Cvm::restore`]), and hands back an engine that goes on
//! journaling into the same run. A firing that was in flight at the crash was never committed:
//! it runs again. Effects outside the net are therefore at-least-once; an operator with such
//! effects deduplicates them with [`Firing::idempotency_key`](crate::Firing::idempotency_key),
//! `"{run}/{branch}/{step}/{op}"`, which is the same for that firing when it runs again.
//!
//! ## The file
//!
//! One SQLite file in WAL mode holds any number of runs; several processes may journal into it
//! at once (SQLite serialises the writers; each waits up to a minute for the others). A file
//! that is not a journal, a journal written by a newer version, a damaged file, an unknown run
//! id, or a stored net whose operator types this program lacks are each a [`JournalError`];
//! the file is left as it was. Schema (version 4, in `meta.schema` and `PRAGMA user_version`;
//! a newer version is refused, an older one is migrated in place when the file is opened, in
//! one transaction: see `migrate.rs`):
//!
//! | table | column | holds |
//! |---|---|---|
//! | `meta` | `key`, `value` | `format` = `cameleon-journal`, `schema` = the version |
//! | `runs` | `seq` | the run's number in this file (the key entries use) |
//! | | `id` | the run id, a UUID v7 (sortable by start time) |
//! | | `name` | the net's name |
//! | | `cm`, `cm_hash` | the net's canonical `.cm` text, and its FNV-1a 64 hash (hex) |
//! | | `mode` | `sequential` or `parallel` |
//! | | `config` | JSON: `max_loop_iterations`, `max_steps`, `durability`, `batch_ms`, `base_dir`, `allow_outside` |
//! | | `generation` | the capability generation the run pinned (`NULL`: none) |
//! | | `started` | UTC wall time, RFC 3339 (an annotation) |
//! | `progress` (a view) | `run` | the run (`runs.seq`): its status and position. A view over the table `progress_row` (the same columns, plus `seen`: the run's newest entry when the row was written): a step that appends an entry and applies it does not rewrite the row, so when the run has an entry newer than `seen`, the view's `tip` is that entry, `steps` its depth and `redo_tip` `NULL`. Readers read `progress` (an `UPDATE` of it goes to the row); the recorder writes `progress_row` only when the position is not that |
//! | | `status` | `RUNNING` (unfinished, crashed included), `WAITING`, or an end state (`COMPLETED`, `DEADLOCK`, `LOOP_LIMIT`, `STEP_LIMIT`, `BUDGET`, `ERROR`, `CANCELLED`) |
//! | | `end_state` | the end state as JSON (`{"end":"ERROR","op":…,"error":…}`), `NULL` while running; once the run made a model request, with `"usage"`: what it spent so far (`{"usage":…}` alone while running) |
//! | | `steps` | applied steps (the depth of the position) |
//! | | `tip`, `redo_tip` | the position: the last applied node, and the deepest node of the recorded future (`NULL`: none) |
//! | | `updated` | UTC wall time, RFC 3339 (an annotation: when the row was last written) |
//! | `entries` | `id` | `runs.seq << 32 \| node`: a run's entries are one range, in node order |
//! | | `run`, `node` | the run (`runs.seq`), and the node's index in the history tree (creation order, from 0) |
//! | | `parent` | the parent node (`NULL`: a first step) |
//! | | `step`, `branch` | the node's depth (1-based) and branch number (1-based, creation order) |
//! | | `ops` | JSON array of the names of the operators that fired |
//! | | `body` | the step's record, [`StepRecord`](crate::history::StepRecord), as JSON: `{"parent":N\|null,"firings":[{"op":i,"consumed":[c…],"written":[[c,prior,new]…],"tokens":[{"type":T,"value":V}…],"before":S,"after":S,"notes":[…]}…]}` (empty lists and absent states left out; a reused firing's note: `{"kind":"reused","data":{"run","step"}}`): operator and connection indices in declaration order, token indices in the run's token arena (tokens are numbered in node order, then emission order) |
//! | | `keys` | the reuse keys of the step's firings that may be reused (docs/semantics.md §5.9), `NULL` when none: for each, its key (16 bytes, big-endian), its index in the step, and the output port of each token it emitted (`codec::read_keys` gives the layout). A reusing run reads them all into an index in memory when it opens the journal (`ReuseJournal`). Computed from the bytes the body holds (the state before as written there; each input value's digest, kept from the step that wrote it), so recording a key serialises nothing more. Schema 3 kept keys of an older form (over canonical JSON) in a `firing_keys` table; the migration to 4 dropped it: runs recorded before are not reused |
//!
//! A migrated run (docs/migration.md) has entries of kind `migrated` too: no firing (`ops` is
//! `[]`), a `migrated` note with both nets' hashes and canonical `.cm` and the marking the run
//! starts from on the new net; the entries after one are steps of that net, and `runs.cm` is
//! the net of the run's position (`segments.rs`, `migration.rs`).
//!
//! A later feature adds its own table keyed by `runs.id` (answers to `ask`, a memory's
//! documents), or a kind of step or note to the record, and raises the schema version,
//! migrating older files forward (`migrate.rs`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::catalogue::Catalogue;
use crate::cm::Loader;
use crate::engine::{Cvm, EndState};
use crate::net::{Mode, Net};
use crate::operator::capability::Capabilities;
use crate::operator::capability::Spent;

mod checkpoint;
mod codec;
mod durability;
mod error;
mod history;
mod listing;
mod lock;
mod migrate;
mod migration;
mod portable;
mod resume;
mod retention;
mod reuse;
mod reuse_steps;
mod rows;
mod segments;
mod store;
mod writer;

pub use durability::Durability;
pub use error::JournalError;
pub use lock::RunLock;
pub use migration::{RunPosition, cm_hash};
pub use portable::{
    EncodedStep, RunHeader, StepEncoder, StoredProgress, end_status, history_of, rebuild, usage_of,
    with_usage,
};
pub use resume::{RecordedFolder, ResumeOptions};
pub use reuse::{KeyHit, ReuseJournal};
pub use reuse_steps::StepsReuse;
pub use segments::{MIGRATED, MigrationNote};
use writer::JournalRecorder;

/// What gives a resumed run its capabilities, from its net and base folder ([`rebuild`]).
pub type PinCaps<'a> = Box<dyn FnOnce(&mut Net, &Path) -> Arc<dyn Capabilities> + 'a>;

/// What the operator types and tools a journaled net names resolve against when its `.cm` text
/// is loaded back — when the run starts (to check it will load) and when it is resumed: this
/// program's own by default. A run with satellites gives theirs too (`cameleon run|resume
/// --nats`, docs/cli.md "Satellites").
#[derive(Clone, Default)]
pub struct Names {
    /// The operator types (default: [`Catalogue::global`]).
    pub catalogue: Option<Catalogue>,
    /// What else the loader is told, e.g. the tools the net may name
    /// ([`Loader::tools`]; default: this program's).
    pub loader: Option<LoaderSetup>,
}

/// A change to the loader of a stored net (see [`Names::loader`]).
pub type LoaderSetup = Arc<dyn for<'c> Fn(Loader<'c>) -> Loader<'c> + Send + Sync>;

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("catalogue", &self.catalogue.as_ref().map(|_| "given"))
            .field("loader", &self.loader.as_ref().map(|_| "given"))
            .finish()
    }
}

/// Options of a journaled run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// When steps reach the disk.
    pub durability: Durability,
    /// The run's name (default: the net's name).
    pub name: Option<String>,
    /// The folder file-reading operators resolve paths against when the run is resumed (the
    /// `.cm` file's folder; default: the current directory).
    pub base_dir: Option<PathBuf>,
    /// Whether file-reading operators may leave that folder.
    pub allow_outside: bool,
    /// The capability generation the run pinned, if any.
    pub generation: Option<u64>,
    /// What the net's names resolve against when it is loaded back.
    pub names: Names,
}

/// A run as [`Journal::runs`] lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunInfo {
    /// The run id.
    pub id: String,
    /// The run's name.
    pub name: String,
    /// `RUNNING` (unfinished, crashed included), `WAITING`, or its end state.
    pub status: String,
    /// Applied steps.
    pub steps: u64,
    /// When it started (UTC, RFC 3339).
    pub started: String,
    /// What it spent on models, inner runs included, as of its last recorded step or end
    /// (docs/semantics.md §4.7); `None` before its first model request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Spent>,
}

/// An entry of a run's history tree, as [`Journal::history`] gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// The entry's depth: its 1-based logical step.
    pub step: u32,
    /// The operators that fired, in declaration order.
    pub ops: Vec<String>,
    /// The branch it lies on (1-based, in creation order).
    pub branch: u32,
    /// Its node in the tree (creation order, from 0).
    #[serde(skip)]
    pub node: u32,
    /// Its parent node.
    #[serde(skip)]
    pub parent: Option<u32>,
    /// For a migration entry (docs/migration.md): the nets' hashes on either side of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migration: Option<MigrationHashes>,
}

/// A migration entry's nets, by hash (as `runs.cm_hash`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MigrationHashes {
    /// The net the run left.
    pub from: String,
    /// The net it moved onto.
    pub to: String,
}

/// A branch of a run's history tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BranchInfo {
    /// Its number (1-based, in creation order).
    pub branch: u32,
    /// The step at which it leaves its parent branch (1 for the first branch).
    pub from_step: u32,
    /// The depth of its tip.
    pub steps: u32,
    /// Whether the run's position lies on it.
    pub current: bool,
}

/// A run's history tree, from [`Journal::history`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunHistory {
    /// Every entry, in creation order.
    pub entries: Vec<HistoryEntry>,
    /// Every branch, by number.
    pub branches: Vec<BranchInfo>,
}

/// A run brought back by [`Journal::resume`] or [`Journal::open_run`].
#[derive(Debug)]
pub struct Resumed {
    /// The run id.
    pub id: String,
    /// The run's name.
    pub name: String,
    /// The engine, at the run's recorded position.
    pub cvm: Cvm,
    /// The run's end, if it has finished (see [`is_finished`](Self::is_finished)); `None` while
    /// it is `RUNNING`.
    pub end: Option<EndState>,
    /// The folder the run's net resolves relative paths against (its `.cm` file's folder): where
    /// to look for its capabilities (`Cvm::set_capabilities`) before it goes on.
    pub base_dir: std::path::PathBuf,
    /// The run's lock, for a run that goes on journaling ([`Journal::resume`]): hold it as long
    /// as the run goes on; another `resume` of the run fails with [`JournalError::Busy`] until
    /// it is dropped (or this process ends).
    pub lock: Option<RunLock>,
}

impl Resumed {
    /// Whether the run has reached an end that resuming does not continue: every end state
    /// but `CANCELLED` (a cancelled run was interrupted; it goes on) and `BUDGET` (it goes on
    /// under a budget its capabilities' meter raises, `resume --budget`).
    pub fn is_finished(&self) -> bool {
        self.end
            .as_ref()
            .is_some_and(|e| !matches!(e, EndState::Cancelled | EndState::Budget { .. }))
    }
}

/// The stored `config` of a run.
#[derive(Serialize, Deserialize, Default)]
struct Config {
    max_loop_iterations: u32,
    #[serde(default)]
    max_steps: Option<u64>,
    durability: String,
    #[serde(default)]
    batch_ms: Option<u64>,
    #[serde(default)]
    base_dir: Option<PathBuf>,
    #[serde(default)]
    allow_outside: bool,
}

impl Config {
    fn durability(&self) -> Durability {
        match self.durability.as_str() {
            "batch" => Durability::Batch {
                ms: self.batch_ms.unwrap_or(Durability::DEFAULT_BATCH_MS),
            },
            "exit" => Durability::Exit,
            "strict" => Durability::Strict,
            _ => Durability::Sync,
        }
    }
}

/// A journal file. Cheap to share between threads; each journaled run writes through its own
/// connection.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    conn: Mutex<ConnDebug>,
}

struct ConnDebug(Connection);

impl std::fmt::Debug for ConnDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connection")
    }
}

impl Journal {
    /// Opens the journal at `path`, creating it (WAL mode, the current schema) if the file is
    /// missing or empty.
    pub fn create(path: impl AsRef<Path>) -> Result<Journal, JournalError> {
        let path = path.as_ref();
        let conn = store::open(path, true)?;
        Ok(Journal {
            path: path.to_path_buf(),
            conn: Mutex::new(ConnDebug(conn)),
        })
    }

    /// Opens an existing journal; a missing file is [`JournalError::NotFound`].
    pub fn open(path: impl AsRef<Path>) -> Result<Journal, JournalError> {
        let path = path.as_ref();
        let conn = store::open(path, false)?;
        Ok(Journal {
            path: path.to_path_buf(),
            conn: Mutex::new(ConnDebug(conn)),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, JournalError> {
        let c = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        f(&c.0).map_err(|e| JournalError::sql(&self.path, e))
    }

    fn corrupt(&self, what: impl Into<String>) -> JournalError {
        JournalError::Corrupt {
            path: self.path.display().to_string(),
            what: what.into(),
        }
    }

    /// Starts journaling `cvm`, which must be fresh (initial marking, empty history), as a new
    /// run; returns its id (also the engine's [`run_id`](Cvm::run_id)). From now on every step,
    /// move and end of `cvm` is recorded as `opts.durability` says.
    pub fn start(&self, cvm: &mut Cvm, opts: &RunOptions) -> Result<String, JournalError> {
        let RunHeader {
            id,
            name,
            cm,
            cm_hash,
            mode,
            config,
            generation,
        } = RunHeader::new(cvm, opts)?;
        // An immediate transaction: a plain autocommit INSERT reads before it writes, and in WAL
        // mode another process's commit in between makes it fail at once with "database is
        // locked" (a stale snapshot), which no busy wait cures.
        let seq = self.with(|c| {
            c.execute_batch("BEGIN IMMEDIATE")?;
            let r = c
                .execute(
                    "INSERT INTO runs (id, name, cm, cm_hash, mode, config, generation, started)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (
                        &id,
                        &name,
                        &cm,
                        &cm_hash,
                        &mode,
                        &config,
                        generation.map(|g| g as i64),
                    ),
                )
                .and_then(|_| {
                    c.execute(
                        "INSERT INTO progress_row (run, status, steps, updated)
                         VALUES (?1, 'RUNNING', 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                        [c.last_insert_rowid()],
                    )
                });
            match r {
                Ok(_) => {
                    let seq: i64 =
                        c.query_row("SELECT seq FROM runs WHERE id = ?1", [&id], |r| r.get(0))?;
                    c.execute_batch("COMMIT").map(|()| seq)
                }
                Err(e) => {
                    let _ = c.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })?;
        let recorder = JournalRecorder::new(&self.path, seq, &id, opts.durability)?
            .meter(cvm.capabilities().meter().cloned());
        cvm.set_run_id(id.as_str());
        cvm.set_recorder(Box::new(recorder));
        Ok(id)
    }
}

fn node_index(n: Option<i64>) -> Result<Option<u32>, String> {
    match n {
        None => Ok(None),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| format!("node index {n} is out of range")),
    }
}

fn loader<'c>(
    catalogue: &'c Catalogue,
    setup: Option<&LoaderSetup>,
    base: Option<&Path>,
    allow_outside: bool,
) -> Loader<'c> {
    let mut l = Loader::new()
        .catalogue(catalogue)
        .allow_outside(allow_outside);
    if let Some(setup) = setup {
        l = setup(l);
    }
    match base {
        Some(b) => l.base_dir(b),
        None => l,
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A stored end state. A deadlock's report is computed again from the restored marking (its
/// sentences are not stored).
fn end_from_json(cvm: &Cvm, json: &str) -> Option<EndState> {
    let end: EndState = serde_json::from_str(json).ok()?;
    if let EndState::Deadlock { .. } | EndState::Waiting { .. } = end {
        return cvm.terminal_state().or(Some(end));
    }
    Some(end)
}
