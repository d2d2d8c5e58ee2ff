//! The recorder of a journaled run: encodes each step on the engine's thread and commits it as
//! the durability mode says.
//!
//! - `sync`: every step is committed before the engine goes on;
//! - `strict`: as `sync`, and each commit is synced to the disk (`synchronous = FULL`);
//! - `batch`: steps wait in memory; a flusher thread commits what is waiting at most every
//!   `ms` milliseconds, in one transaction (the engine's thread commits them itself when
//!   [`BACKLOG`] bytes of them wait);
//! - `exit`: steps wait in memory until the run ends (or the recorder is dropped).
//!
//! In every mode the end of a run is committed before [`Recorder::ended`] returns. A flush
//! writes the new entries and the run's position in one transaction, so the file always holds a
//! consistent prefix of the run. A failure (disk full, a lock held too long) is kept and
//! reported by the next recording; nothing after it is written.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use rusqlite::types::{ToSqlOutput, ValueRef};

use super::codec::{self, Head, Scratch};
use super::rows::Rows;
use super::segments::Segment;
use super::store::SEEN;
use super::{Durability, JournalError};
use crate::engine::{Committed, EndState, Position, RecordError, Recorder};
use crate::operator::capability::Meter;

/// What waits to be committed.
#[derive(Default)]
struct Pending {
    rows: Rows,
    /// The latest position (and step count) to write.
    position: Option<Position>,
    /// The latest status and end state to write.
    status: Option<(String, Option<String>)>,
    /// A failed flush: reported by the next recording.
    error: Option<String>,
    /// Tells the flusher thread to finish.
    stop: bool,
    /// The run has ended: the flusher checkpoints what its commits left in the WAL.
    ended: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// The connection; held while flushing, so flushes are ordered.
    writer: Mutex<Writer>,
}

struct Writer {
    conn: Connection,
    /// The rows of the flush under way; empty (its capacity kept) between flushes.
    taken: Rows,
    /// The run's `runs.seq`.
    run: i64,
    /// The run's id (`runs.id`), for messages.
    id: String,
    /// The status and end state last written: a step that does not change them does not
    /// write them again.
    written: Option<(String, Option<String>)>,
    /// `batch`: the WAL's frames its commits left, for the flusher's checkpoints (`None`:
    /// SQLite checkpoints by itself, and checks foreign keys per row).
    frames: Option<super::checkpoint::Frames>,
}

impl Writer {
    /// Commits `rows`, then the position and status, in one transaction (prepared statements,
    /// cached on the connection; one `entries` row per step and at most one `runs` update).
    fn flush(
        &mut self,
        rows: &Rows,
        position: Option<Position>,
        status: Option<&(String, Option<String>)>,
    ) -> rusqlite::Result<()> {
        let status = status.filter(|s| self.written.as_ref() != Some(*s));
        // A position that is the newest entry, applied, is what the `progress` view reads from
        // the entries: the row is not rewritten (journal schema 4).
        let position = position.filter(|p| {
            rows.last()
                .is_none_or(|r| p.tip != Some(r.node) || p.redo_tip.is_some() || p.depth != r.step)
        });
        if rows.is_empty() && position.is_none() && status.is_none() {
            return Ok(());
        }
        // `BEGIN IMMEDIATE` and `COMMIT` are prepared and cached too (not parsed at each step);
        // a failure rolls the transaction back.
        let conn = &self.conn;
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let written = (|| -> rusqlite::Result<()> {
            if self.frames.is_some() {
                super::checkpoint::run_exists(conn, self.run, &self.id)?;
            }
            // Rows go in `CHUNK` at a time, one multi-row `INSERT` each (a `batch` or `exit`
            // flush holds many), the rest one by one.
            let n = rows.len();
            let whole = n - n % CHUNK;
            if whole > 0 {
                let mut insert = conn.prepare_cached(&INSERT_CHUNK)?;
                insert.raw_bind_parameter(1, self.run)?;
                for first in (0..whole).step_by(CHUNK) {
                    for i in 0..CHUNK {
                        bind_row(&mut insert, 1 + i * COLUMNS, self.run, rows, first + i)?;
                    }
                    insert.raw_execute()?;
                }
            }
            if whole < n {
                let mut insert = conn.prepare_cached(&INSERT_ONE)?;
                insert.raw_bind_parameter(1, self.run)?;
                for i in whole..n {
                    bind_row(&mut insert, 1, self.run, rows, i)?;
                    insert.raw_execute()?;
                }
            }
            match (position, status) {
                (Some(p), Some((status, end))) => {
                    conn.prepare_cached(&UPDATE_BOTH)?
                        .execute((self.run, p.tip, p.redo_tip, p.depth, status, end))?;
                }
                (Some(p), None) => {
                    conn.prepare_cached(&UPDATE_POSITION)?
                        .execute((self.run, p.tip, p.redo_tip, p.depth))?;
                }
                (None, Some((status, end))) => {
                    conn.prepare_cached(UPDATE_STATUS)?
                        .execute((self.run, status, end))?;
                }
                (None, None) => {}
            }
            conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(())
        })();
        if written.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        written?;
        if let Some(s) = status {
            self.written = Some(s.clone());
        }
        Ok(())
    }
}

/// The parameters of an `entries` row, as [`bind_row`] binds them (the run, its column
/// `run`, is parameter 1 of every row of an `INSERT`).
const COLUMNS: usize = 8;

/// Rows per multi-row `INSERT` of a flush (`COLUMNS * CHUNK + 1` parameters, far under
/// SQLite's limit of 32 766).
const CHUNK: usize = 32;

/// Rows waiting in `batch` mode that wake the flusher before its period is over: a long run's
/// rows are committed while the engine goes on, not all at its end, and the flusher starts
/// early in a run (a flusher still busy takes all the rows waiting when it is done, so commits
/// grow when steps come faster than they are written). A commit earlier than the period loses
/// less on a crash, never more: docs/cli.md's contract of `batch` holds.
const WAKE_ROWS: usize = 64;

/// Bytes of rows waiting in `batch` mode (their `ops`, `body` and `keys`) at which the engine's
/// thread commits them itself, waiting for the flusher if it is busy (a flush, a checkpoint):
/// when steps come faster than the flusher writes them (a busy machine, a slow disk), the run
/// goes at the writer's pace instead of piling steps up in memory and handing the WAL flushes
/// of any size. A flush then holds at most this (and one step), about 1 000 WAL frames of
/// 4 KiB pages: the WAL's bound in `checkpoint.rs` counts on it. A run of small steps never
/// comes near it while the flusher keeps up (64 steps wake it).
const BACKLOG: usize = 4 << 20;

/// The `UPDATE`s of a run's progress row: its position and status, its position, its status.
static UPDATE_BOTH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "UPDATE progress_row SET tip = ?2, redo_tip = ?3, steps = ?4, status = ?5,
         end_state = ?6, updated = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
         seen = {SEEN} WHERE run = ?1"
    )
});
static UPDATE_POSITION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "UPDATE progress_row SET tip = ?2, redo_tip = ?3, steps = ?4,
         updated = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), seen = {SEEN}
         WHERE run = ?1"
    )
});
const UPDATE_STATUS: &str = "UPDATE progress_row SET status = ?2, end_state = ?3 WHERE run = ?1 AND
    (status IS NOT ?2 OR end_state IS NOT ?3)";

/// Prepares (and caches on `conn`) the statements a flush of `durability` runs, so that the
/// schema is read and they are compiled when the run starts, not by its first commits.
fn prepare(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    let mut all = vec![
        "BEGIN IMMEDIATE",
        "COMMIT",
        &INSERT_ONE,
        &UPDATE_BOTH,
        &UPDATE_POSITION,
        UPDATE_STATUS,
    ];
    if !matches!(durability, Durability::Sync | Durability::Strict) {
        all.push(&INSERT_CHUNK);
    }
    for sql in all {
        conn.prepare_cached(sql)?;
    }
    Ok(())
}

/// `INSERT INTO entries` of one row, and of [`CHUNK`] rows (the SQL texts of prepared, cached
/// statements).
static INSERT_ONE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| insert_sql(1));
static INSERT_CHUNK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| insert_sql(CHUNK));

/// `INSERT INTO entries` of `n` rows: `?1` is the run; row `i`'s other columns are the
/// [`COLUMNS`] parameters after `1 + i * COLUMNS`.
fn insert_sql(n: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO entries (id, run, node, parent, step, branch, ops, body, keys) VALUES ",
    );
    for i in 0..n {
        if i > 0 {
            sql.push(',');
        }
        let at = 1 + i * COLUMNS;
        sql.push_str(&format!("(?{},?1", at + 1));
        for c in 2..=COLUMNS {
            sql.push_str(&format!(",?{}", at + c));
        }
        sql.push(')');
    }
    sql
}

/// Binds row `i` of `rows`, of run `run`, to the [`COLUMNS`] parameters after `at` of
/// `insert` ([`insert_sql`]). The text columns are bound from the bytes [`codec::encode_into`]
/// wrote (UTF-8).
fn bind_row(
    insert: &mut rusqlite::CachedStatement<'_>,
    at: usize,
    run: i64,
    rows: &Rows,
    i: usize,
) -> rusqlite::Result<()> {
    let (r, ops, body, keys) = rows.get(i);
    insert.raw_bind_parameter(at + 1, super::store::entry_id(run, r.node))?;
    insert.raw_bind_parameter(at + 2, r.node)?;
    insert.raw_bind_parameter(at + 3, r.parent)?;
    insert.raw_bind_parameter(at + 4, r.step)?;
    insert.raw_bind_parameter(at + 5, r.branch)?;
    insert.raw_bind_parameter(at + 6, ToSqlOutput::Borrowed(ValueRef::Text(ops)))?;
    insert.raw_bind_parameter(at + 7, ToSqlOutput::Borrowed(ValueRef::Text(body)))?;
    insert.raw_bind_parameter(
        at + 8,
        match keys {
            [] => ToSqlOutput::Borrowed(ValueRef::Null),
            k => ToSqlOutput::Borrowed(ValueRef::Blob(k)),
        },
    )
}

/// The [`Recorder`] of one journaled run.
pub(super) struct JournalRecorder {
    /// Set when the engine holds a segment of a migrated run.
    segment: Option<Segment>,
    durability: Durability,
    /// The run's meter: what it spent goes with its status (`"usage"` in `end_state`).
    meter: Option<Arc<Meter>>,
    /// Reused for encoding each step.
    buf: Scratch,
    /// The status last queued.
    queued: Option<(String, Option<String>)>,
    /// Each operator's fixed part of its firings' reuse keys.
    keys: crate::engine::KeyCache,
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl JournalRecorder {
    /// A recorder writing run `id`, `run` in the file (its `runs.seq`), into the journal at
    /// `path`.
    pub(super) fn new(
        path: &Path,
        run: i64,
        id: &str,
        durability: Durability,
    ) -> Result<Self, JournalError> {
        let mut conn = super::store::open_writer(path, durability)?;
        let frames = match durability {
            Durability::Batch { .. } => Some(
                super::checkpoint::take_over(&mut conn).map_err(|e| JournalError::sql(path, e))?,
            ),
            _ => None,
        };
        prepare(&conn, durability).map_err(|e| JournalError::sql(path, e))?;
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            writer: Mutex::new(Writer {
                conn,
                taken: Rows::default(),
                run,
                id: id.to_owned(),
                written: None,
                frames,
            }),
        });
        let flusher = match durability {
            Durability::Batch { ms } => {
                let s = Arc::clone(&shared);
                let every = Duration::from_millis(ms.max(1));
                Some(
                    std::thread::Builder::new()
                        .name("cameleon-journal".into())
                        .spawn(move || flusher(&s, every))
                        .map_err(|e| JournalError::io(path, e))?,
                )
            }
            _ => None,
        };
        Ok(JournalRecorder {
            segment: None,
            durability,
            meter: None,
            buf: Scratch::new(),
            queued: None,
            keys: crate::engine::KeyCache::new(),
            shared,
            flusher,
        })
    }

    /// Records the engine's steps as segment `seg` of the run.
    pub(super) fn segment(mut self, seg: Option<Segment>) -> Self {
        self.segment = seg;
        self
    }

    /// Records what the run spent on models, from `meter`, with its status (docs/semantics.md
    /// §4.7).
    pub(super) fn meter(mut self, meter: Option<Arc<Meter>>) -> Self {
        self.meter = meter;
        self
    }

    /// The status `status` and end-state JSON `end`, with what the run spent so far under
    /// `"usage"` when it made a model request.
    fn status(&self, status: &str, end: Option<String>) -> (String, Option<String>) {
        let spent = self.meter.as_ref().map(|m| m.spent());
        let Some(spent) = spent.filter(|s| s.requests > 0) else {
            return (status.to_owned(), end);
        };
        let mut json = end
            .and_then(|e| serde_json::from_str::<serde_json::Value>(&e).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(o) = json.as_object_mut() {
            o.entry("usage")
                .or_insert_with(|| serde_json::to_value(spent).unwrap_or_default());
        }
        (status.to_owned(), Some(json.to_string()))
    }

    /// The status `RUNNING` to queue with a step (with what the run spent), or `None` when the
    /// last status queued is already that (a step of a run that makes no model request: no
    /// status is built for it).
    fn running(&mut self) -> Option<(String, Option<String>)> {
        let spent = self.meter.as_ref().is_some_and(|m| m.spent().requests > 0);
        if !spent && matches!(&self.queued, Some((s, None)) if s == "RUNNING") {
            return None;
        }
        let status = self.status("RUNNING", None);
        self.queued = Some(status.clone());
        Some(status)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        lock(&self.shared.pending)
    }

    /// Queues a row (its integer columns, the rest in `self.buf`), position or status; commits
    /// at once in `sync` mode, and in `batch` mode when [`BACKLOG`] bytes of rows wait.
    fn queue(
        &mut self,
        row: Option<Head>,
        position: Option<Position>,
        status: Option<(String, Option<String>)>,
        mut now: bool,
    ) -> Result<(), RecordError> {
        {
            let mut p = self.pending();
            if let Some(e) = &p.error {
                return Err(RecordError(e.clone()));
            }
            if let Some(head) = row {
                p.rows.push(head, &self.buf);
            }
            if matches!(self.durability, Durability::Batch { .. }) {
                if p.rows.len() == WAKE_ROWS {
                    self.shared.wake.notify_one();
                }
                now |= p.rows.bytes() >= BACKLOG;
            }
            if position.is_some() {
                p.position = position;
            }
            if status.is_some() {
                p.status = status;
            }
        }
        if now || matches!(self.durability, Durability::Sync | Durability::Strict) {
            flush(&self.shared)?;
        }
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Commits everything waiting. The writer is locked first, so two flushes never interleave.
fn flush(shared: &Shared) -> Result<(), RecordError> {
    let mut w = lock(&shared.writer);
    let w = &mut *w;
    let (position, status) = {
        let mut p = lock(&shared.pending);
        if let Some(e) = &p.error {
            return Err(RecordError(e.clone()));
        }
        // The rows change places with the writer's empty buffer.
        std::mem::swap(&mut p.rows, &mut w.taken);
        (p.position.take(), p.status.take())
    };
    let rows = std::mem::take(&mut w.taken);
    let written = w.flush(&rows, position, status.as_ref());
    w.taken = rows;
    w.taken.clear();
    match written {
        Ok(()) => Ok(()),
        Err(e) => {
            let msg = format!("cannot write to the journal: {e}");
            lock(&shared.pending).error = Some(msg.clone());
            Err(RecordError(msg))
        }
    }
}

/// `batch`: commits what waits, every `every` (or as soon as [`WAKE_ROWS`] rows wait), until
/// told to stop (then once more); checkpoints the WAL when due (`checkpoint.rs`).
fn flusher(shared: &Shared, every: Duration) {
    let mut checked = false;
    // The failure of the last checkpoint, if it failed: a failure is traced once, not at
    // each flush it repeats at.
    let mut failing: Option<String> = None;
    loop {
        let (stop, ended) = {
            let p = lock(&shared.pending);
            let (p, _) = shared
                .wake
                .wait_timeout_while(p, every, |p| {
                    !p.stop && p.rows.len() < WAKE_ROWS && (!p.ended || checked)
                })
                .unwrap_or_else(PoisonError::into_inner);
            (p.stop, p.ended)
        };
        let _ = flush(shared); // a failure is kept in `pending.error`
        checked = ended;
        let w = lock(&shared.writer);
        if let Some(frames) = w.frames.as_ref().filter(|f| f.due(ended || stop)) {
            // A failed checkpoint leaves the WAL as it was (its frames are committed): the run
            // goes on, and the next checkpoint copies them.
            let done = super::checkpoint::checkpoint(&w.conn, frames);
            super::checkpoint::trace(&w.id, done, &mut failing);
        }
        if stop {
            return;
        }
    }
}

/// What a run spent, from its stored `end_state` JSON (`"usage"`, written by
/// [`JournalRecorder`]).
pub(super) fn usage_of(end_state: &str) -> Option<crate::operator::capability::Spent> {
    let v: serde_json::Value = serde_json::from_str(end_state).ok()?;
    serde_json::from_value(v.get("usage")?.clone()).ok()
}

/// The status of a run that ended in `end`, and the end state's JSON.
pub(super) fn status_of(end: &EndState) -> (String, Option<String>) {
    (end.name().to_owned(), serde_json::to_string(end).ok())
}

impl Recorder for JournalRecorder {
    fn committed(&mut self, step: &Committed<'_>) -> Result<(), RecordError> {
        let mut row = codec::encode_into(step, &mut self.buf, &mut self.keys)?;
        let mut at = step.position();
        if let Some(seg) = &mut self.segment {
            row.node = seg.node(row.node);
            row.parent = match row.parent {
                Some(p) => Some(seg.node(p)),
                None => seg.root,
            };
            row.step += seg.depth;
            row.branch += seg.branch;
            codec::rebase(&mut self.buf.body, row.parent);
            at = seg.position(at);
        }
        let status = self.running();
        self.queue(Some(row), Some(at), status, false)
    }

    fn moved(&mut self, at: Position) -> Result<(), RecordError> {
        let at = match &mut self.segment {
            Some(seg) => seg.position(at),
            None => at,
        };
        let status = self.running();
        self.queue(None, Some(at), status, false)
    }

    fn ended(&mut self, end: &EndState, at: Position) -> Result<(), RecordError> {
        let at = match &mut self.segment {
            Some(seg) => seg.position(at),
            None => at,
        };
        let (status, json) = status_of(end);
        let status = self.status(&status, json);
        self.queued = Some(status.clone());
        self.queue(None, Some(at), Some(status), true)?;
        if self.flusher.is_some() {
            self.pending().ended = true;
            self.shared.wake.notify_one();
        }
        Ok(())
    }
}

impl Drop for JournalRecorder {
    fn drop(&mut self) {
        if let Some(h) = self.flusher.take() {
            self.pending().stop = true;
            self.shared.wake.notify_all();
            let _ = h.join();
        }
        // `exit` (and anything left): commit on the way out.
        let _ = flush(&self.shared);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(ops: &str, body: &str, keys: &[u8]) -> Scratch {
        let mut s = Scratch::new();
        s.ops.extend_from_slice(ops.as_bytes());
        s.body.extend_from_slice(body.as_bytes());
        s.keys.extend_from_slice(keys);
        s
    }

    fn head(node: u32) -> Head {
        Head {
            node,
            parent: node.checked_sub(1),
            step: node + 1,
            branch: 0,
        }
    }

    #[test]
    fn waiting_rows_give_back_each_row_s_columns() {
        let steps = [
            ("[\"a\"]", "{\"parent\":null}", &[][..]),
            (
                "[\"bb\",\"c\"]",
                "{\"parent\":0,\"firings\":[]}",
                &[1, 2, 3][..],
            ),
            ("[]", "{}", &[][..]),
            ("[\"d\"]", "{\"parent\":2}", &[9; 30][..]),
        ];
        let mut rows = Rows::default();
        for round in 0..2 {
            for (n, (ops, body, keys)) in steps.iter().enumerate() {
                rows.push(head(n as u32), &scratch(ops, body, keys));
            }
            assert_eq!(rows.len(), steps.len(), "round {round}");
            for (n, (ops, body, keys)) in steps.iter().enumerate() {
                let (h, o, b, k) = rows.get(n);
                assert_eq!(h.node, n as u32);
                assert_eq!(
                    (o, b, k),
                    (ops.as_bytes(), body.as_bytes(), *keys),
                    "row {n}"
                );
            }
            assert_eq!(rows.last().map(|h| h.node), Some(3));
            rows.clear();
            assert!(rows.is_empty() && rows.bytes() == 0);
        }
    }

    /// What a `tracing` subscriber writes, shared.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_checkpoint_is_a_warning_once_until_one_succeeds() {
        let failed = || {
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
                Some("disk I/O error".into()),
            ))
        };
        let done = || {
            Ok(super::super::checkpoint::Checkpointed {
                wal: 4000,
                copied: 4000,
            })
        };
        let buf = Buffer::default();
        let w = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || w.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::callsite::rebuild_interest_cache();
            let mut failing = None;
            super::super::checkpoint::trace("run-7", done(), &mut failing);
            for _ in 0..3 {
                super::super::checkpoint::trace("run-7", failed(), &mut failing);
            }
            super::super::checkpoint::trace("run-7", done(), &mut failing);
            super::super::checkpoint::trace("run-7", failed(), &mut failing);
        });
        let text = String::from_utf8(lock(&buf.0).clone()).expect("utf-8");
        let warnings: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
        assert_eq!(warnings.len(), 2, "{text}");
        for w in warnings {
            assert!(
                w.contains("cameleon::journal")
                    && w.contains("run=run-7")
                    && w.contains("cannot checkpoint")
                    && w.contains("disk I/O error"),
                "{w}"
            );
        }
        assert_eq!(
            text.lines().filter(|l| l.contains("work again")).count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn a_batch_backlog_is_committed_by_the_thread_that_queued_it() {
        // Rows of 1 MiB: the flusher (woken by 64 rows or after an hour) leaves them waiting;
        // the row that makes BACKLOG bytes wait is committed with them before `queue` returns.
        let dir = test_support::TempDir::new("journal-backlog");
        let path = dir.join("j.db");
        super::super::Journal::create(&path).expect("journal");
        let c = Connection::open(&path).expect("opens");
        c.execute_batch(
            "INSERT INTO runs (seq, id, name, cm, cm_hash, mode, config, started)
             VALUES (1, 'r', 'n', '', '', 'sequential', '{}', '');
             INSERT INTO progress_row (run, status, steps, updated) VALUES (1, 'RUNNING', 0, '');",
        )
        .expect("a run");
        let mut rec = JournalRecorder::new(&path, 1, "r", Durability::Batch { ms: 3_600_000 })
            .expect("recorder");
        let body = "x".repeat(1 << 20);
        let rows = || -> i64 {
            c.query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
                .expect("counts")
        };
        let per_row = BACKLOG.div_ceil(body.len() + 2);
        for n in 0..per_row as u32 {
            assert_eq!(rows(), 0, "row {n}: nothing committed yet");
            rec.buf = scratch("[]", &body, &[]);
            rec.queue(Some(head(n)), None, None, false).expect("queued");
        }
        assert_eq!(rows(), per_row as i64, "the backlog was committed");
    }

    #[test]
    fn insert_sql_numbers_the_run_once_and_each_row_s_columns_after_it() {
        assert_eq!(
            insert_sql(2).split_once("VALUES ").map(|(_, v)| v),
            Some("(?2,?1,?3,?4,?5,?6,?7,?8,?9),(?10,?1,?11,?12,?13,?14,?15,?16,?17)")
        );
    }
}
