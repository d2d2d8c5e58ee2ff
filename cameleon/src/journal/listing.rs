//! What a journal holds, listed: its runs, the run to resume, a run's history tree.

use rusqlite::OptionalExtension;

use super::{Journal, JournalError, RunInfo, writer};

impl Journal {
    /// Every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>, JournalError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, name, status, steps, started, end_state FROM runs
                 JOIN progress ON progress.run = runs.seq ORDER BY started DESC, id DESC",
            )?;
            st.query_map([], |r| {
                Ok(RunInfo {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    status: r.get(2)?,
                    steps: r.get::<_, i64>(3)?.max(0) as u64,
                    started: r.get(4)?,
                    usage: r
                        .get::<_, Option<String>>(5)?
                        .as_deref()
                        .and_then(writer::usage_of),
                })
            })?
            .collect()
        })
    }

    /// The id of the run to resume: `id` if it exists, else the most recently started one that
    /// has not finished (`RUNNING`, `WAITING`, `CANCELLED` or `BUDGET`).
    pub fn pick(&self, id: Option<&str>) -> Result<String, JournalError> {
        match id {
            Some(id) => {
                let found: Option<String> = self.with(|c| {
                    c.query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                        .optional()
                })?;
                match found {
                    Some(id) => Ok(id),
                    None => Err(JournalError::UnknownRun {
                        path: self.path.display().to_string(),
                        id: id.to_owned(),
                        known: self.runs()?.into_iter().take(3).map(|r| r.id).collect(),
                    }),
                }
            }
            None => self
                .with(|c| {
                    c.query_row(
                        "SELECT id FROM runs JOIN progress ON progress.run = runs.seq
                         WHERE status IN ('RUNNING', 'WAITING', 'CANCELLED', 'BUDGET')
                         ORDER BY started DESC, id DESC LIMIT 1",
                        [],
                        |r| r.get(0),
                    )
                    .optional()
                })?
                .ok_or_else(|| JournalError::NothingToResume {
                    path: self.path.display().to_string(),
                }),
        }
    }
}
