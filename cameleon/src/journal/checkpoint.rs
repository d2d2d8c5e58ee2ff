//! The `batch` writer's checkpoints and row checks (docs/journal.md, "Checkpoints").
//!
//! SQLite checkpoints a WAL file by default inside the commit that makes it pass 1 000 frames,
//! on whichever thread commits: in `batch` mode, often the engine's own (the end of a run is
//! committed by it). The `batch` writer turns that off and counts the frames its commits leave
//! in the WAL; its flusher thread checkpoints (`PASSIVE`: it copies what no reader still needs
//! and never waits) when [`MID_RUN`] frames wait, and once the run has ended when
//! [`AFTER_RUN`] do. The last connection to close a journal checkpoints what is left.
//!
//! A checkpoint that copied every frame lets the next commit write the WAL from its start
//! again (SQLite "restarts" it, when no reader still reads from it); the file keeps its size
//! unless `journal_size_limit` is set, which the `batch` writer sets to [`WAL_LIMIT`] frames:
//! the commit that restarts the WAL truncates a larger file to that size.
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

/// The WAL file's size, in frames, that the `batch` writer's `journal_size_limit` allows after
/// a restart: [`MID_RUN`], and half as much again for the flush that takes the WAL past it (at
/// most `writer.rs`'s `BACKLOG`, 4 MiB of steps: about 1 000 frames of 4 KiB pages). A WAL that
/// grew larger (a reader kept it from being copied, or one step alone was that large) is cut
/// back to this size by the commit that restarts it.
pub(super) const WAL_LIMIT: i64 = MID_RUN + MID_RUN / 2;

/// The bytes of a WAL file of `frames` frames of `page_size`-byte pages (a 32-byte header,
/// then per frame a 24-byte header and the page).
pub(super) fn wal_bytes(frames: i64, page_size: i64) -> i64 {
    32 + frames * (24 + page_size)
}

/// The WAL's frames, as the last commit left them, and how many of them the last checkpoint
/// copied (shared with the connection's WAL hook). Both are only written with the writer's
/// lock held (by its commits and by the flusher's checkpoints).
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
        // Fewer frames than were copied: the WAL started over (seen by another connection's
        // commit, say), none of them copied.
        if wal < copied { wal } else { wal - copied }
    }

    /// Whether a checkpoint is due: mid-run, or once the run has `ended`.
    pub(super) fn due(&self, ended: bool) -> bool {
        self.waiting() >= if ended { AFTER_RUN } else { MID_RUN }
    }

    /// A commit left `wal` frames in the WAL (its WAL hook). Fewer than the commit before
    /// left: the WAL started over (after a checkpoint copied it all) and holds this commit's
    /// frames (and those of other connections' commits since the restart), none copied. (A
    /// restart followed by a commit at least as large as the WAL was is taken for no restart:
    /// the next checkpoint then comes late by at most that commit's frames.)
    pub(super) fn committed(&self, wal: i64) {
        let before = self.wal.swap(wal, Ordering::Relaxed);
        if wal < before {
            self.copied.store(0, Ordering::Relaxed);
        }
    }

    /// A checkpoint found `wal` frames in the WAL and copied `copied` of them (the first ones).
    fn checkpointed(&self, wal: i64, copied: i64) {
        self.wal.store(wal.max(0), Ordering::Relaxed);
        self.copied.store(copied.max(0), Ordering::Relaxed);
    }
}

/// Sets up `conn` as a `batch` writer: no automatic checkpoint, its WAL frames counted, the
/// WAL file cut back to [`WAL_LIMIT`] frames when it restarts, no foreign-key check per row
/// ([`run_exists`] checks once per flush).
pub(super) fn take_over(conn: &mut Connection) -> rusqlite::Result<Frames> {
    conn.pragma_update(None, "foreign_keys", false)?;
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    conn.pragma_update(None, "journal_size_limit", wal_bytes(WAL_LIMIT, page_size))?;
    // The pragma installs SQLite's own WAL hook: it goes first, the counter replaces it.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let frames = Frames::default();
    let counter = frames.clone();
    conn.wal_hook(Some(
        move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            counter.committed(i64::from(pages));
            Ok(())
        },
    ))?;
    conn.prepare_cached(RUN_EXISTS)?;
    Ok(frames)
}

/// What a checkpoint did: the frames in the WAL, and how many of them it copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Checkpointed {
    pub(super) wal: i64,
    pub(super) copied: i64,
}

/// Copies the WAL's frames into the database file as far as readers allow (`PASSIVE`).
pub(super) fn checkpoint(conn: &Connection, frames: &Frames) -> rusqlite::Result<Checkpointed> {
    let (wal, copied): (i64, i64) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get(1)?, r.get(2)?))
    })?;
    frames.checkpointed(wal, copied);
    Ok(Checkpointed { wal, copied })
}

const RUN_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM runs WHERE seq = ?1)";

/// The flush's foreign-key check: run `run` (`runs.seq`; its id is `id`) has its row (inside
/// the flush's transaction).
pub(super) fn run_exists(conn: &Connection, run: i64, id: &str) -> rusqlite::Result<()> {
    let there: bool = conn
        .prepare_cached(RUN_EXISTS)?
        .query_row([run], |r| r.get(0))?;
    if there {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            Some(format!(
                "run {id} is no longer in the journal (its row was deleted while the run was \
                 recorded): its steps are not written"
            )),
        ))
    }
}

/// Traces what a checkpoint of run `run`'s writer did (`tracing`, target `cameleon::journal`):
/// a failure as a warning, the first of a series (`failing` keeps it until a checkpoint
/// succeeds), and each checkpoint at the debug level.
pub(super) fn trace(run: &str, done: rusqlite::Result<Checkpointed>, failing: &mut Option<String>) {
    match done {
        Ok(c) => {
            tracing::debug!(
                target: "cameleon::journal",
                run = %run,
                wal = c.wal,
                copied = c.copied,
                "checkpoint"
            );
            if failing.take().is_some() {
                tracing::info!(target: "cameleon::journal", run = %run, "the WAL's checkpoints work again");
            }
        }
        Err(e) => {
            let e = e.to_string();
            if failing.as_deref() != Some(e.as_str()) {
                tracing::warn!(
                    target: "cameleon::journal",
                    run = %run,
                    "cannot checkpoint the journal's WAL (the steps are committed in it; the run goes on, and the WAL grows until a checkpoint succeeds): {e}"
                );
            }
            *failing = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commits of a long run, as the WAL hook reports them, and the flusher's checkpoints.
    #[test]
    fn a_restarted_wal_counts_its_frames_from_its_start() {
        let f = Frames::default();
        for wal in (100..=MID_RUN).step_by(100) {
            f.committed(wal);
        }
        assert!(f.due(false));
        // Everything copied: the next commit writes the WAL from its start again.
        f.checkpointed(MID_RUN, MID_RUN);
        assert_eq!(f.waiting(), 0);
        f.committed(168);
        assert_eq!(f.waiting(), 168);
        // Past the frames the checkpoint copied, the WAL still holds only its own new frames:
        // the next checkpoint is due at MID_RUN frames again, not MID_RUN more than copied.
        for wal in (200..=MID_RUN + 100).step_by(100) {
            f.committed(wal);
        }
        assert_eq!(f.waiting(), MID_RUN + 100);
        assert!(f.due(false));

        // A reader kept the WAL from restarting: the commits append to it.
        f.checkpointed(MID_RUN + 100, MID_RUN + 100);
        f.committed(MID_RUN + 150);
        assert_eq!(f.waiting(), 50);
        assert!(!f.due(true));
        // A checkpoint that copied part of it (a reader needs the rest).
        f.checkpointed(MID_RUN + 150, 120);
        f.committed(MID_RUN + 160);
        assert_eq!(f.waiting(), MID_RUN + 40);
    }

    #[test]
    fn the_wal_limit_is_mid_run_and_a_half_in_bytes() {
        assert_eq!(WAL_LIMIT, 6000);
        assert_eq!(wal_bytes(WAL_LIMIT, 4096), 32 + 6000 * 4120);
    }
}
