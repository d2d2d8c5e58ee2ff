//! What a journal holds, listed: its runs, the run to resume, a run's history tree.

use rusqlite::OptionalExtension;

use super::{BranchInfo, HistoryEntry, Journal, JournalError, RunHistory, RunInfo, store, writer};

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

    /// Run `id`'s history tree: every entry, every branch.
    pub fn history(&self, id: &str) -> Result<RunHistory, JournalError> {
        let id = self.pick(Some(id))?;
        let (seq, tip, redo_tip): (i64, Option<i64>, Option<i64>) = self.with(|c| {
            c.query_row(
                "SELECT seq, tip, redo_tip FROM runs JOIN progress ON progress.run = runs.seq
                 WHERE id = ?1",
                [&id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })?;
        let rows: Vec<(i64, Option<i64>, i64, i64, String)> = self.with(|c| {
            let mut st = c.prepare(
                "SELECT node, parent, step, branch, ops FROM entries
                 WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            )?;
            let range = (store::entry_id(seq, 0), store::entry_id(seq, u32::MAX));
            st.query_map(range, |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })?;
        let mut entries = Vec::with_capacity(rows.len());
        for (node, parent, step, branch, ops) in rows {
            let ops: Vec<String> = serde_json::from_str(&ops)
                .map_err(|e| self.corrupt(format!("run `{id}`: entry #{node}: {e}")))?;
            entries.push(HistoryEntry {
                step: step.max(0) as u32,
                ops,
                branch: branch.max(0) as u32,
                node: node.max(0) as u32,
                parent: parent.map(|p| p.max(0) as u32),
            });
        }
        // The current branch: the one of the deepest node of the position.
        let here = redo_tip.or(tip).map(|n| n.max(0) as u32);
        let current = here.and_then(|n| entries.get(n as usize)).map(|e| e.branch);
        let mut branches: Vec<BranchInfo> = Vec::new();
        for e in &entries {
            match branches.iter_mut().find(|b| b.branch == e.branch) {
                Some(b) => b.steps = b.steps.max(e.step),
                None => branches.push(BranchInfo {
                    branch: e.branch,
                    from_step: e.step,
                    steps: e.step,
                    current: current == Some(e.branch),
                }),
            }
        }
        branches.sort_by_key(|b| b.branch);
        Ok(RunHistory { entries, branches })
    }
}
