//! Recording a run's move onto another net, and going back and forth over it
//! (docs/migration.md). A migration is an entry of the run's tree (kind `migrated`, no firing)
//! whose note keeps both nets' hashes, both nets' canonical `.cm` and the marking the run starts
//! from on the new net; `runs.cm` follows the position (the net of the segment it lies in).
//! Each change is one transaction: a crash leaves the run wholly moved or not at all.

use rusqlite::Transaction;

use super::segments::{MigrationNote, Tree};
use super::*;

/// Where a run stands, as [`Journal::position`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPosition {
    /// The run's last applied node (`None`: its start).
    pub tip: Option<u32>,
    /// The deepest node of its recorded future.
    pub redo_tip: Option<u32>,
    /// The net of the position: its canonical `.cm` text.
    pub cm: String,
    /// Its hash (FNV-1a 64, hex).
    pub cm_hash: String,
}

/// The hash a journal keeps of a net's canonical `.cm` text (FNV-1a 64, 16 hex digits): what
/// [`MigrationNote::from`] and [`MigrationNote::to`] hold.
pub fn cm_hash(cm: &str) -> String {
    store::hash(cm)
}

impl Journal {
    /// Run `id`'s position in its tree, and the net it lies on.
    pub fn position(&self, id: &str) -> Result<RunPosition, JournalError> {
        let id = self.pick(Some(id))?;
        let (tip, redo, cm, cm_hash): (Option<i64>, Option<i64>, String, String) =
            self.with(|c| {
                c.query_row(
                    "SELECT tip, redo_tip, cm, cm_hash FROM runs JOIN progress ON progress.run = runs.seq WHERE id = ?1",
                    [&id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
            })?;
        let bad = |w: String| self.corrupt(format!("run `{id}`: {w}"));
        Ok(RunPosition {
            tip: node_index(tip).map_err(bad)?,
            redo_tip: node_index(redo).map_err(bad)?,
            cm,
            cm_hash,
        })
    }

    /// Loads `cm` as run `id`'s net would be on resume: with `names`, in the folder the run
    /// recorded.
    pub fn load_net(&self, id: &str, cm: &str, names: &Names) -> Result<Net, JournalError> {
        let folder = self.recorded_folder(Some(id))?;
        let catalogue = names.catalogue.as_ref().unwrap_or(Catalogue::global());
        loader(
            catalogue,
            names.loader.as_ref(),
            folder.base_dir.as_deref(),
            false,
        )
        .load_str(cm)
        .map_err(|e| JournalError::Net {
            run: folder.id,
            error: Box::new(e),
        })
    }

    /// Records the migration `note` of run `id`, which must still be where it was checked: at
    /// position `at`, on the net of hash `note.from`. One transaction adds the entry (a child of
    /// the position), moves the position onto it, and makes `note.cm` the run's net; a run that
    /// had ended is `RUNNING` again. Returns the entry's node.
    pub fn record_migration(
        &self,
        id: &str,
        note: &MigrationNote,
        at: &RunPosition,
    ) -> Result<u32, JournalError> {
        self.record_migration_then(id, note, at, &|| Ok(()))
    }

    /// [`record_migration`](Self::record_migration), calling `before_commit` inside the
    /// transaction: an error there rolls everything back (what a crash there does).
    pub(crate) fn record_migration_then(
        &self,
        id: &str,
        note: &MigrationNote,
        at: &RunPosition,
        before_commit: &dyn Fn() -> Result<(), String>,
    ) -> Result<u32, JournalError> {
        let id = self.pick(Some(id))?;
        let body = |parent| {
            note.step(parent)
                .and_then(|st| serde_json::to_string(&st))
                .map_err(|e| JournalError::io(&self.path, e))
        };
        self.change(&id, |tx, seq, tree| {
            let (tip, hash): (Option<i64>, String) =
                tx.query_row("SELECT tip, cm_hash FROM runs JOIN progress ON progress.run = runs.seq WHERE seq = ?1", [seq], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            let tip = tip.map(|t| t as u32);
            if tip != at.tip || hash != note.from {
                return Ok(Err(format!(
                    "it moved since it was checked (now at {}, net {hash}): check it again",
                    tip.map_or("its start".to_owned(), |t| format!("entry #{t}"))
                )));
            }
            let node = tree.steps.len() as u32;
            let depth = tip.map_or(0, |t| tree.depth[t as usize]) + 1;
            let siblings = tree.steps.iter().filter(|s| s.parent == tip).count();
            let branch = match tip {
                _ if siblings > 0 => tree.branch.iter().max().copied().unwrap_or(0) + 1,
                Some(t) => tree.branch[t as usize],
                None => 1,
            };
            let body = match body(tip) {
                Ok(b) => b,
                Err(e) => return Ok(Err(e.to_string())),
            };
            tx.execute(
                "INSERT INTO entries (id, run, node, parent, step, branch, ops, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, '[]', ?7)",
                (
                    store::entry_id(seq, node),
                    seq,
                    node,
                    tip,
                    depth,
                    branch,
                    body,
                ),
            )?;
            set_net(tx, seq, &note.cm, Some(node), None, depth)?;
            if let Err(e) = before_commit() {
                return Ok(Err(e));
            }
            Ok(Ok(node))
        })
    }

    /// Goes back over the migration the run's position lies after: the run is on the net it
    /// migrated from, at the marking it left (its steps on the new net become its recorded
    /// future, which [`replay_migration`](Self::replay_migration) re-applies). One transaction.
    pub fn back_migration(&self, id: &str) -> Result<(), JournalError> {
        let id = self.pick(Some(id))?;
        self.change(&id, |tx, seq, tree| {
            let (tip, redo): (Option<i64>, Option<i64>) = tx.query_row(
                "SELECT tip, redo_tip FROM progress WHERE run = ?1",
                [seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let tip = tip.map(|t| t as u32);
            let Some(m) = tree.segment_at(tip) else {
                return Ok(Err(
                    "it has not migrated: there is no migration to go back over".into(),
                ));
            };
            let note = &tree.notes[&m];
            let parent = tree.steps[m as usize].parent;
            let future = redo.map(|r| r as u32).or(tip);
            let depth = parent.map_or(0, |p| tree.depth[p as usize]);
            set_net(tx, seq, &note.from_cm, parent, future, depth)?;
            Ok(Ok(()))
        })
    }

    /// Re-applies the migration the run went back over: its recorded future starts with a
    /// migration entry, and the run moves onto it (onto the new net, at the marking the
    /// migration mapped; the steps after it stay its recorded future). One transaction.
    pub fn replay_migration(&self, id: &str) -> Result<(), JournalError> {
        let id = self.pick(Some(id))?;
        self.change(&id, |tx, seq, tree| {
            let (tip, redo): (Option<i64>, Option<i64>) = tx.query_row(
                "SELECT tip, redo_tip FROM progress WHERE run = ?1",
                [seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let tip = tip.map(|t| t as u32);
            let next = redo.and_then(|r| {
                let path = tree.path_to(r as u32);
                let at = match tip {
                    None => 0,
                    Some(t) => path.iter().position(|&n| n == t)? + 1,
                };
                path.get(at).copied()
            });
            let Some(m) = next.filter(|&m| tree.is_migration(m)) else {
                return Ok(Err(
                    "its recorded future does not start with a migration".into()
                ));
            };
            let future = redo.map(|r| r as u32).filter(|&r| r != m);
            set_net(
                tx,
                seq,
                &tree.notes[&m].cm,
                Some(m),
                future,
                tree.depth[m as usize],
            )?;
            Ok(Ok(()))
        })
    }

    /// Runs `f` on run `id` in one immediate transaction, with its tree as it is inside it;
    /// `f`'s `Err(reason)` rolls back and becomes [`JournalError::Migration`].
    fn change<T>(
        &self,
        id: &str,
        f: impl FnOnce(&Transaction<'_>, i64, &Tree) -> rusqlite::Result<Result<T, String>>,
    ) -> Result<T, JournalError> {
        let seq: i64 =
            self.with(|c| c.query_row("SELECT seq FROM runs WHERE id = ?1", [id], |r| r.get(0)))?;
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = guard
            .0
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| JournalError::sql(&self.path, e))?;
        // Read inside the transaction: no other writer changes the run until it ends.
        let tree = self.tree_in(&tx, id, seq)?;
        match f(&tx, seq, &tree).map_err(|e| JournalError::sql(&self.path, e))? {
            Ok(v) => {
                tx.commit().map_err(|e| JournalError::sql(&self.path, e))?;
                Ok(v)
            }
            Err(what) => Err(JournalError::Migration {
                run: id.to_owned(),
                what,
            }),
        }
    }
}

/// Makes `cm` run `seq`'s net and (`tip`, `redo_tip`, `steps`) its position; a run that had
/// ended goes on (`RUNNING`; what it spent stays in `end_state`).
fn set_net(
    tx: &Transaction<'_>,
    seq: i64,
    cm: &str,
    tip: Option<u32>,
    redo_tip: Option<u32>,
    steps: u32,
) -> rusqlite::Result<()> {
    let end: Option<String> = tx.query_row(
        "SELECT end_state FROM progress WHERE run = ?1",
        [seq],
        |r| r.get(0),
    )?;
    let usage = end
        .as_deref()
        .and_then(writer::usage_of)
        .and_then(|u| serde_json::to_string(&serde_json::json!({ "usage": u })).ok());
    tx.execute(
        "UPDATE runs SET cm = ?2, cm_hash = ?3 WHERE seq = ?1",
        (seq, cm, store::hash(cm)),
    )?;
    tx.execute(
        &format!(
            "UPDATE progress_row SET tip = ?2, redo_tip = ?3, steps = ?4, status = 'RUNNING',
             end_state = ?5, updated = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), seen = {}
             WHERE run = ?1",
            store::SEEN
        ),
        (seq, tip, redo_tip, steps, usage),
    )?;
    Ok(())
}
