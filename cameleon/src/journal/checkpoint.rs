//! The `batch` writer's checkpoints and row checks (docs/journal.md, "Checkpoints").
//!
//! SQLite checkpoints a WAL file by default inside the commit that makes it pass 1 000 frames,
//! on whichever thread commits: in `batch` mode, often the engine's own (the end of a run is
//! committed by it). The `batch` writer turns that off and counts the frames its commits leave
//! in the WAL; its flusher thread checkpoints (`PASSIVE`: it copies what no reader still needs
//! and never waits) when [`MID_RUN`] frames wait, and once the run has ended when
//! [`AFTER_RUN`] do. The last connection to close a journal checkpoints what is left.
//!
//! The `batch` writer also checks foreign keys once per flush (its run's row exists) instead
//! of once per inserted row.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::Connection;

/// Frames waiting in the WAL that make the flusher checkpoint while the run goes on (so the
/// WAL does not grow without bound on a long run).
pub(super) const MID_RUN: i64 = 4000;

/// Frames waiting in the WAL that make the flusher checkpoint once the run has ended (SQLite's
/// own default threshold).
pub(super) const AFTER_RUN: i64 = 1000;

/// The WAL's frames, as the last commit left them, and how many of them the last checkpoint
/// copied (shared with the connection's WAL hook).
#[derive(Clone, Default)]
pub(super) struct Frames {
    wal: Arc<AtomicI64>,
    copied: Arc<AtomicI64>,
}

impl Frames {
    /// Frames not yet copied into the database file.
    pub(super) fn waiting(&self) -> i64 {
        let wal = self.wal.load(Ordering::Relaxed);
        let copied = self.copied.load(Ordering::Relaxed);
        // A WAL that started over (after a full checkpoint) holds fewer frames than were copied.
        if wal < copied { wal } else { wal - copied }
    }

    /// Whether a checkpoint is due: mid-run, or once the run has `ended`.
    pub(super) fn due(&self, ended: bool) -> bool {
        self.waiting() >= if ended { AFTER_RUN } else { MID_RUN }
    }
}

/// Sets up `conn` as a `batch` writer: no automatic checkpoint, its WAL frames counted, no
/// foreign-key check per row ([`run_exists`] checks once per flush).
pub(super) fn take_over(conn: &mut Connection) -> rusqlite::Result<Frames> {
    conn.pragma_update(None, "foreign_keys", false)?;
    // The pragma installs SQLite's own WAL hook: it goes first, the counter replaces it.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let frames = Frames::default();
    let wal = Arc::clone(&frames.wal);
    conn.wal_hook(Some(
        move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            wal.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        },
    ))?;
    conn.prepare_cached(RUN_EXISTS)?;
    Ok(frames)
}

/// Copies the WAL's frames into the database file as far as readers allow (`PASSIVE`).
pub(super) fn checkpoint(conn: &Connection, frames: &Frames) -> rusqlite::Result<()> {
    let (wal, copied): (i64, i64) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get(1)?, r.get(2)?))
    })?;
    frames.wal.store(wal.max(0), Ordering::Relaxed);
    frames.copied.store(copied.max(0), Ordering::Relaxed);
    Ok(())
}

const RUN_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM runs WHERE seq = ?1)";

/// The flush's foreign-key check: run `run` has its row (inside the flush's transaction).
pub(super) fn run_exists(conn: &Connection, run: i64) -> rusqlite::Result<()> {
    let there: bool = conn
        .prepare_cached(RUN_EXISTS)?
        .query_row([run], |r| r.get(0))?;
    if there {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            Some(format!(
                "run {run} is not in the journal (deleted while it was recorded?)"
            )),
        ))
    }
}
