//! Bringing a journal written by an older version up to the current schema: in place, when it
//! is opened, in one transaction — a journal is never refused for its age, so in-flight runs
//! are never stranded (docs/semantics.md §5.5).
//!
//! | from | to | what changes |
//! |---|---|---|
//! | 1 | 2 | an entry's `body` becomes its step's record, [`StepRecord`]: its `parent` is in it, empty lists and absent states are left out |
//! | 2 | 3 | a run's status, end state, position and step count move from `runs` to a `progress` row of their own (a step no longer rewrites the row holding the run's `.cm` text); a `firing_keys` table indexes recorded firings by key for reuse (docs/semantics.md §5.9): the runs recorded before have no keys, so they are not reused |
//! | 3 | 4 | firing keys are computed from the bytes the journal writes (a state's and a value's serde JSON) instead of canonical JSON (docs/semantics.md §5.9): the keys recorded before are of the older form, which no run computes any more, so they are dropped with the `firing_keys` table — the runs recorded before are not reused (they stay readable, resumable and comparable); a step's keys go in its entry (`entries.keys`); the `progress` table becomes `progress_row` (with `seen`, the newest entry when it was written) and `progress` a view giving the position (a step that appends and applies an entry no longer rewrites the row) |

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::JournalError;
use super::store::{SCHEMA, retry_busy};
use crate::history::StepRecord;

/// Migrates the journal on `conn` from its schema version to [`SCHEMA`], in one immediate
/// transaction (another process opening it meanwhile waits, then finds it migrated). On any
/// error nothing is changed.
pub(super) fn migrate(conn: &Connection, path: &Path) -> Result<(), JournalError> {
    let sql = |e| JournalError::sql(path, e);
    retry_busy(|| conn.execute_batch("BEGIN IMMEDIATE")).map_err(sql)?;
    let r = (|| {
        let version: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql)?;
        let version = version
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(SCHEMA);
        if version >= SCHEMA {
            return Ok(()); // another process migrated it meanwhile
        }
        if version < 2 {
            bodies_as_records(conn, path)?;
        }
        if version < 3 {
            progress_apart(conn).map_err(sql)?;
        }
        if version < 4 {
            // Keys of the older form (no run would find them) go with their table.
            // The rows' positions are current: each row has seen its run's newest entry.
            conn.execute_batch(super::store::CREATE_V4).map_err(sql)?;
            conn.execute(
                "UPDATE progress_row SET seen = (SELECT max(id) & 4294967295 FROM entries
                 WHERE id BETWEEN progress_row.run << 32 AND (progress_row.run << 32) + 4294967295)",
                [],
            )
            .map_err(sql)?;
        }
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema'",
            [SCHEMA.to_string()],
        )
        .map_err(sql)?;
        conn.pragma_update(None, "user_version", SCHEMA)
            .map_err(sql)?;
        Ok(())
    })();
    match r {
        Ok(()) => conn.execute_batch("COMMIT").map_err(sql),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Schema 1 → 2: each entry's body `{"firings":[…]}` becomes the JSON of its [`StepRecord`],
/// its parent taken from the row.
fn bodies_as_records(conn: &Connection, path: &Path) -> Result<(), JournalError> {
    let sql = |e| JournalError::sql(path, e);
    let rows: Vec<(i64, i64, Option<i64>, String, String)> = {
        let mut st = conn
            .prepare(
                "SELECT e.id, e.node, e.parent, e.body, r.id FROM entries e
                 JOIN runs r ON r.seq = e.run ORDER BY e.id",
            )
            .map_err(sql)?;
        st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .map_err(sql)?
        .collect::<Result<_, _>>()
        .map_err(sql)?
    };
    let mut update = conn
        .prepare("UPDATE entries SET body = ?2 WHERE id = ?1")
        .map_err(sql)?;
    for (id, node, parent, body, run) in rows {
        let corrupt = |e: &dyn std::fmt::Display| JournalError::Corrupt {
            path: path.display().to_string(),
            what: format!(
                "entry #{node} of run `{run}` cannot be migrated from schema 1: {e} (nothing was changed)"
            ),
        };
        let mut record: StepRecord = serde_json::from_str(&body).map_err(|e| corrupt(&e))?;
        record.parent = match parent {
            None => None,
            Some(p) => Some(u32::try_from(p).map_err(|e| corrupt(&e))?),
        };
        let body = serde_json::to_string(&record).map_err(|e| corrupt(&e))?;
        update.execute((id, body)).map_err(sql)?;
    }
    Ok(())
}

/// Schema 2 → 3: the `progress` and `firing_keys` tables; each run's status, end state,
/// position and step count copied to its `progress` row, then dropped from `runs`.
fn progress_apart(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(super::store::CREATE_V3)?;
    conn.execute_batch(
        "INSERT INTO progress (run, status, end_state, steps, tip, redo_tip, updated)
         SELECT seq, status, end_state, steps, tip, redo_tip, updated FROM runs;
         ALTER TABLE runs DROP COLUMN status;
         ALTER TABLE runs DROP COLUMN end_state;
         ALTER TABLE runs DROP COLUMN steps;
         ALTER TABLE runs DROP COLUMN tip;
         ALTER TABLE runs DROP COLUMN redo_tip;
         ALTER TABLE runs DROP COLUMN updated;",
    )
}
