//! A journal as the source of a run that reuses recorded firings (docs/semantics.md §5.9): the
//! `firing_keys` index, looked up by key, and the recorded entry the key points to.
//!
//! A reuse journal is untrusted input (docs/security.md): what it can do is make a firing's
//! emissions and state after be the recorded ones — values read back through their data
//! types, checked against the operator's ports as any emission is. It cannot name an operator,
//! a tool, a file or a capability; a record that does not read back is a miss (the operator
//! runs).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension};

use super::{JournalError, codec, store};
use crate::engine::{FiringKey, RecordedFiring, ReuseSource, ReusedFrom};

/// A journal opened to reuse its runs' firings, all of them or one run's.
pub struct ReuseJournal {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Only this run's firings (its `runs.seq`), if given.
    run: Option<i64>,
    /// Run ids by `runs.seq`.
    ids: Mutex<HashMap<i64, String>>,
}

impl std::fmt::Debug for ReuseJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReuseJournal")
            .field("path", &self.path)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

/// Where a key points: the run, its entry (node) and the firing's index in the step, and the
/// ports of its tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyHit {
    /// The run's `seq` in the file.
    pub run: i64,
    /// The entry's node.
    pub node: u32,
    /// The firing's index in the step.
    pub firing: u32,
    ports: String,
}

impl ReuseJournal {
    /// Opens the journal at `path` (migrated if older, as [`super::Journal::open`] does) to
    /// reuse the firings of run `run`, or of every run when `None`. An unknown run is an error
    /// naming the runs the file holds.
    pub fn open(path: impl AsRef<Path>, run: Option<&str>) -> Result<ReuseJournal, JournalError> {
        let path = path.as_ref();
        let journal = super::Journal::open(path)?;
        let seq = match run {
            Some(id) => {
                let id = journal.pick(Some(id))?;
                Some(journal.with(|c| {
                    c.query_row("SELECT seq FROM runs WHERE id = ?1", [&id], |r| r.get(0))
                })?)
            }
            None => None,
        };
        let conn = journal
            .conn
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        Ok(ReuseJournal {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            run: seq,
            ids: Mutex::new(HashMap::new()),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The newest recorded firing with key `key` (of the chosen run, if one was), by the
    /// `firing_keys` index alone: the lookup every reusable firing pays.
    pub fn probe(&self, key: FiringKey) -> Result<Option<KeyHit>, String> {
        let c = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = key.to_be_bytes();
        let found = match self.run {
            Some(run) => c
                .prepare_cached(
                    "SELECT run, node, firing, ports FROM firing_keys
                     WHERE key = ?1 AND run = ?2 LIMIT 1",
                )
                .and_then(|mut st| st.query_row((&bytes[..], run), hit).optional()),
            None => c
                .prepare_cached(
                    "SELECT run, node, firing, ports FROM firing_keys
                     WHERE key = ?1 ORDER BY run DESC LIMIT 1",
                )
                .and_then(|mut st| st.query_row([&bytes[..]], hit).optional()),
        };
        found.map_err(|e| {
            format!(
                "cannot read the reuse journal `{}`: {e}",
                self.path.display()
            )
        })
    }

    fn run_id(&self, c: &Connection, run: i64) -> rusqlite::Result<String> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(id) = ids.get(&run) {
            return Ok(id.clone());
        }
        let id: String = c.query_row("SELECT id FROM runs WHERE seq = ?1", [run], |r| r.get(0))?;
        ids.insert(run, id.clone());
        Ok(id)
    }

    /// The recorded firing `hit` points to.
    pub fn load(&self, hit: &KeyHit) -> Result<Option<RecordedFiring>, String> {
        let fail = |e: &dyn std::fmt::Display| {
            format!(
                "cannot read the reuse journal `{}`: {e}",
                self.path.display()
            )
        };
        let c = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let row: Option<(u32, String)> = c
            .prepare_cached("SELECT step, body FROM entries WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([store::entry_id(hit.run, hit.node)], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
            })
            .map_err(|e| fail(&e))?;
        let Some((step, body)) = row else {
            return Ok(None);
        };
        let mut record = codec::decode(&body).map_err(|e| fail(&e))?;
        if hit.firing as usize >= record.firings.len() {
            return Ok(None);
        }
        let firing = record.firings.swap_remove(hit.firing as usize);
        let ports: Vec<Option<u16>> = hit
            .ports
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().ok())
            .collect();
        if ports.len() != firing.tokens.len() {
            return Ok(None);
        }
        let emitted = ports
            .into_iter()
            .zip(firing.tokens)
            .filter_map(|(p, t)| p.map(|p| (p, t)))
            .collect();
        let run = self.run_id(&c, hit.run).map_err(|e| fail(&e))?;
        Ok(Some(RecordedFiring {
            from: ReusedFrom { run, step },
            emitted,
            after: firing.after,
        }))
    }
}

fn hit(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeyHit> {
    Ok(KeyHit {
        run: r.get(0)?,
        node: r.get(1)?,
        firing: r.get(2)?,
        ports: r.get(3)?,
    })
}

impl ReuseSource for ReuseJournal {
    fn find(&self, key: FiringKey) -> Result<Option<RecordedFiring>, String> {
        match self.probe(key)? {
            Some(hit) => self.load(&hit),
            None => Ok(None),
        }
    }
}
