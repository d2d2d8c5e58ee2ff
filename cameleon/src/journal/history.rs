//! A run's history tree as [`Journal::history`] lists it: every entry and branch, a migration
//! entry with its nets' hashes (docs/migration.md).

use super::*;
use segments::MigrationNote;

impl Journal {
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
        type Row = (i64, Option<i64>, i64, i64, String, Option<String>);
        let rows: Vec<Row> = self.with(|c| {
            // A migration entry fires nothing: its body is read for its note.
            let mut st = c.prepare(
                "SELECT node, parent, step, branch, ops, CASE WHEN ops = '[]' THEN body END
                 FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            )?;
            let range = (store::entry_id(seq, 0), store::entry_id(seq, u32::MAX));
            st.query_map(range, |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect()
        })?;
        let mut entries = Vec::with_capacity(rows.len());
        for (node, parent, step, branch, ops, body) in rows {
            let ops: Vec<String> = serde_json::from_str(&ops)
                .map_err(|e| self.corrupt(format!("run `{id}`: entry #{node}: {e}")))?;
            let migration = body
                .as_deref()
                .and_then(|b| codec::decode(b).ok())
                .and_then(|st| MigrationNote::of(&st))
                .and_then(Result::ok)
                .map(|n| MigrationHashes {
                    from: n.from,
                    to: n.to,
                });
            entries.push(HistoryEntry {
                step: step.max(0) as u32,
                ops,
                branch: branch.max(0) as u32,
                node: node.max(0) as u32,
                parent: parent.map(|p| p.max(0) as u32),
                migration,
            });
        }
        let here = redo_tip.or(tip).map(|n| n.max(0) as u32);
        Ok(history_of(entries, here))
    }
}
