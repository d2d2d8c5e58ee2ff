//! [`JournalError`]: what went wrong with a journal.

use std::path::Path;

use crate::cm::CmError;

/// What went wrong with a journal. Nothing is written to the file when opening it fails.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// No file at the path.
    #[error(
        "no journal at `{path}`: the file does not exist (`cameleon run FILE.cm --journal {path}` creates it)"
    )]
    NotFound {
        /// The path.
        path: String,
    },
    /// The file is not a Caméléon journal.
    #[error("`{path}` is not a Caméléon journal: {why}")]
    NotAJournal {
        /// The path.
        path: String,
        /// What it is instead.
        why: String,
    },
    /// The journal was written by a newer version.
    #[error(
        "`{path}` is a journal of schema version {version}, newer than this program reads (up to {supported}): use a newer cameleon"
    )]
    TooNew {
        /// The path.
        path: String,
        /// Its schema version.
        version: i64,
        /// The newest this program reads.
        supported: i64,
    },
    /// The file is damaged (truncated, overwritten) or its content is inconsistent.
    #[error("the journal `{path}` is damaged: {what}")]
    Corrupt {
        /// The path.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// An I/O or SQLite error.
    #[error("cannot use the journal `{path}`: {what}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        what: String,
    },
    /// No run with that id.
    #[error("no run `{id}` in `{path}`{}", known_hint(.known))]
    UnknownRun {
        /// The path.
        path: String,
        /// The id asked for.
        id: String,
        /// The most recent run ids, newest first.
        known: Vec<String>,
    },
    /// `resume` without an id, and every run has finished.
    #[error(
        "nothing to resume in `{path}`: every run has finished (`cameleon runs {path}` lists them)"
    )]
    NothingToResume {
        /// The path.
        path: String,
    },
    /// The stored net does not load with this program (an operator type it lacks, say).
    #[error("run `{run}`: its stored net does not load with this program")]
    Net {
        /// The run.
        run: String,
        /// The loader's problems.
        #[source]
        error: Box<CmError>,
    },
    /// The run's recorded history does not fit the net or this program (a data type it lacks,
    /// a state it cannot read).
    #[error("run `{run}` cannot be restored: {what}")]
    Incompatible {
        /// The run.
        run: String,
        /// What is wrong.
        what: String,
    },
    /// A migration could not be recorded, or gone back or forth over (docs/migration.md);
    /// nothing was changed.
    #[error("run `{run}`: {what}")]
    Migration {
        /// The run.
        run: String,
        /// Why.
        what: String,
    },
    /// The engine or its net cannot be journaled.
    #[error("this run cannot be journaled: {0}")]
    NotJournalable(String),
    /// Another process goes on with the run ([`RunLock`](super::RunLock)).
    #[error(
        "run `{run}` of `{path}` is being resumed by {}: one process at a time goes on with a run (the lock `{lock}` is released when that process ends, however it ends)",
        if .holder.is_empty() { "another process" } else { .holder.as_str() }
    )]
    Busy {
        /// The journal.
        path: String,
        /// The run.
        run: String,
        /// Who holds it (`process 1234 on host`), as the holder wrote it.
        holder: String,
        /// The lock file.
        lock: String,
    },
    /// A run that is `RUNNING` was asked to be deleted without `force`: it was stopped by a crash
    /// and can be resumed, or goes on in another process.
    #[error(
        "run `{run}` of `{path}` is RUNNING: it goes on elsewhere, or was stopped by a crash and can be resumed; delete it anyway with --force"
    )]
    Running {
        /// The journal (its path or URL).
        path: String,
        /// The run.
        run: String,
    },
    /// Another process holds the run's lease on a shared store (docs/journal.md "Stores"): it
    /// goes on with the run; the lease lapses `ttl_ms` after its holder stops renewing it.
    #[error(
        "run `{run}` of `{store}` is being resumed by {holder}: one process at a time goes on with a run (its lease lapses {ttl_ms} ms after that process stops renewing it; then another may resume)"
    )]
    Leased {
        /// The store (its URL).
        store: String,
        /// The run.
        run: String,
        /// Who holds the lease, as the holder wrote it.
        holder: String,
        /// The lease's time to live.
        ttl_ms: u64,
    },
}

fn known_hint(known: &[String]) -> String {
    if known.is_empty() {
        " (it holds no run)".into()
    } else {
        format!(
            " (most recent: {}; `cameleon runs` lists them)",
            known.join(", ")
        )
    }
}

impl JournalError {
    pub(super) fn io(path: &Path, e: impl std::fmt::Display) -> Self {
        JournalError::Io {
            path: path.display().to_string(),
            what: e.to_string(),
        }
    }

    /// A SQLite error: damage reported as such.
    pub(super) fn sql(path: &Path, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt) | Some(NotADatabase) => JournalError::Corrupt {
                path: path.display().to_string(),
                what: format!("{e} (the file was truncated or overwritten)"),
            },
            _ => JournalError::io(path, e),
        }
    }
}
