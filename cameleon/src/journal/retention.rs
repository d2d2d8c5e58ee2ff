//! Retention (docs/journal.md "Retention"): a run's records are kept until the run is deleted.

use rusqlite::{OptionalExtension, TransactionBehavior};

use super::{Journal, JournalError, RunLock};

impl Journal {
    /// Deletes run `id`: its row, its progress and every entry, in one transaction.
    ///
    /// Refused ([`JournalError::Busy`]) while another process holds the run's [`RunLock`] — it
    /// goes on with the run and writes into this file — even with `force`; refused
    /// ([`JournalError::Running`]) when the run is `RUNNING` (stopped by a crash: it can be
    /// resumed) unless `force`. An id the journal does not hold is [`JournalError::UnknownRun`].
    pub fn delete(&self, id: &str, force: bool) -> Result<(), JournalError> {
        let id = self.pick(Some(id))?;
        // Held while the rows go, so no `resume` starts meanwhile; its file is removed when
        // it is dropped.
        let _lock = RunLock::take(&self.path, &id)?;
        let found: Option<(i64, String)> = self.with(|c| {
            c.query_row(
                "SELECT seq, status FROM runs JOIN progress ON progress.run = runs.seq
                 WHERE id = ?1",
                [&id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        let Some((seq, status)) = found else {
            // Deleted by another process since `pick`.
            return Err(JournalError::UnknownRun {
                path: self.path.display().to_string(),
                id,
                known: Vec::new(),
            });
        };
        if status == "RUNNING" && !force {
            return Err(JournalError::Running {
                path: self.path.display().to_string(),
                run: id,
            });
        }
        self.with(|c| {
            super::store::retry_busy(|| {
                let tx = rusqlite::Transaction::new_unchecked(c, TransactionBehavior::Immediate)?;
                // A run's entries are the ids `seq << 32 | node` (see `store::entry_id`).
                tx.execute(
                    "DELETE FROM entries WHERE id BETWEEN ?1 << 32 AND (?1 << 32) + 4294967295",
                    [seq],
                )?;
                tx.execute("DELETE FROM progress_row WHERE run = ?1", [seq])?;
                tx.execute("DELETE FROM runs WHERE seq = ?1", [seq])?;
                tx.commit()
            })
        })
    }
}
