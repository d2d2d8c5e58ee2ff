//! A journal as the source of a run that reuses recorded firings (docs/semantics.md §5.9): the
//! keys its entries hold (`entries.keys`), read into an index in memory once when the journal
//! is opened, and the recorded entry a key points to, read by its primary key on a hit.
//!
//! A miss — what most firings of a run that reuses pay — is one hash probe, with no SQLite
//! call; a hit reads and decodes one `entries` row. The index is the journal's as it was when
//! opened: firings recorded later (by the run that reuses it, or another process) are not
//! found.
//!
//! A reuse journal is untrusted input (docs/security.md): what it can do is make a firing's
//! emissions and state after be the recorded ones — values read back through their data
//! types, checked against the operator's ports as any emission is. It cannot name an operator,
//! a tool, a file or a capability; a record that does not read back is a miss (the operator
//! runs). An entry's keys that do not read back are left out of the index.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension};

use super::{JournalError, codec, store};
use crate::engine::{FiringKey, RecordedFiring, ReuseSource, ReusedFrom};

/// A journal opened to reuse its runs' firings, all of them or one run's.
pub struct ReuseJournal {
    path: PathBuf,
    conn: Mutex<Reader>,
    /// Whether the reader holds a read transaction (read without the lock by a miss).
    holding: AtomicBool,
    /// Only this run's firings (its `runs.seq`), if given.
    run: Option<i64>,
    /// The key index: each key's newest recorded firing (of `run`, if given).
    index: HashMap<FiringKey, Loc, BuildHasherDefault<KeyHasher>>,
    /// Run ids by `runs.seq`.
    ids: HashMap<i64, String>,
}

/// Where a key points, as the index keeps it.
#[derive(Clone, Debug)]
struct Loc {
    run: i64,
    node: u32,
    firing: u32,
    ports: Box<[Option<u16>]>,
}

/// Keys are already hashes (XXH3-128): their low 64 bits are the hash of the map.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for a `u128` key; any other input is still hashed, only slower.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u128(&mut self, k: u128) {
        self.0 = k as u64;
    }
}

impl std::fmt::Debug for ReuseJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReuseJournal")
            .field("path", &self.path)
            .field("run", &self.run)
            .field("keys", &self.index.len())
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
    ports: Box<[Option<u16>]>,
}

impl ReuseJournal {
    /// Opens the journal at `path` (migrated if older, as [`super::Journal::open`] does) to
    /// reuse the firings of run `run`, or of every run when `None`, and reads its key index.
    /// An unknown run is an error naming the runs the file holds.
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
        let sql = |e| JournalError::sql(path, e);
        let (index, ids) = read_index(&conn, seq).map_err(sql)?;
        Ok(ReuseJournal {
            path: path.to_path_buf(),
            conn: Mutex::new(Reader { conn, held: 0 }),
            holding: AtomicBool::new(false),
            run: seq,
            index,
            ids,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many keys the index holds.
    pub fn keys(&self) -> usize {
        self.index.len()
    }

    /// The newest recorded firing with key `key` (of the chosen run, if one was), by the key
    /// index alone: the lookup every reusable firing pays (no SQLite call).
    pub fn probe(&self, key: FiringKey) -> Result<Option<KeyHit>, String> {
        Ok(self.index.get(&key).map(|l| KeyHit {
            run: l.run,
            node: l.node,
            firing: l.firing,
            ports: l.ports.clone(),
        }))
    }

    /// The recorded firing `hit` points to: its entry, read by primary key and decoded.
    pub fn load(&self, hit: &KeyHit) -> Result<Option<RecordedFiring>, String> {
        self.load_at(hit.run, hit.node, hit.firing, &hit.ports)
    }

    fn load_at(
        &self,
        run: i64,
        node: u32,
        firing: u32,
        ports: &[Option<u16>],
    ) -> Result<Option<RecordedFiring>, String> {
        let fail = |e: &dyn std::fmt::Display| {
            format!(
                "cannot read the reuse journal `{}`: {e}",
                self.path.display()
            )
        };
        let Some(run_id) = self.ids.get(&run) else {
            return Ok(None);
        };
        // Only the firing reuse needs is decoded, straight from SQLite's text of the body.
        let row = {
            let mut reader = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
            let read = reader.begin(&self.holding).and_then(|()| {
                reader
                    .conn
                    .prepare_cached("SELECT step, body FROM entries WHERE id = ?1")?
                    .query_row([store::entry_id(run, node)], |r| {
                        let step: u32 = r.get(0)?;
                        let body = r.get_ref(1)?.as_str()?;
                        Ok((step, codec::decode_firing(body, firing)))
                    })
                    .optional()
            });
            if read.is_err() || reader.held >= HOLD_HITS {
                reader.end(&self.holding);
            }
            read.map_err(|e| fail(&e))?
        };
        let Some((step, part)) = row else {
            return Ok(None);
        };
        let Some(firing) = part.map_err(|e| fail(&e))? else {
            return Ok(None);
        };
        Ok(recorded(run_id, step, firing, ports))
    }
}

/// The firing a hit reuses: `firing`, decoded from step `step` of run `run`, its tokens on the
/// output ports its keys recorded; `None` (a miss: the operator runs) when their numbers
/// differ — the entry is untrusted and does not match its keys. Shared by both reuse sources
/// ([`ReuseJournal`], [`super::StepsReuse`]).
pub(super) fn recorded(
    run: &str,
    step: u32,
    firing: codec::ReusedPart,
    ports: &[Option<u16>],
) -> Option<RecordedFiring> {
    if ports.len() != firing.tokens.len() {
        return None;
    }
    let emitted = ports
        .iter()
        .copied()
        .zip(firing.tokens)
        .filter_map(|(p, t)| p.map(|p| (p, t)))
        .collect();
    Some(RecordedFiring {
        from: ReusedFrom {
            run: run.to_owned(),
            step,
        },
        emitted,
        after: firing.after,
    })
}

type Index = HashMap<FiringKey, Loc, BuildHasherDefault<KeyHasher>>;

/// The key index of run `run` (every run's when `None`; a key recorded by several runs points
/// to the newest's firing, the first of it), and the run ids.
fn read_index(c: &Connection, run: Option<i64>) -> rusqlite::Result<(Index, HashMap<i64, String>)> {
    let ids = c
        .prepare("SELECT seq, id FROM runs")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<HashMap<i64, String>, _>>()?;
    let mut index = Index::default();
    let (lo, hi) = match run {
        Some(run) => (store::entry_id(run, 0), store::entry_id(run, u32::MAX)),
        None => (i64::MIN, i64::MAX),
    };
    let mut st =
        c.prepare("SELECT id, keys FROM entries WHERE id BETWEEN ?1 AND ?2 AND keys IS NOT NULL")?;
    let mut rows = st.query([lo, hi])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let rusqlite::types::ValueRef::Blob(b) = r.get_ref(1)? else {
            continue;
        };
        let (run, node) = (id >> 32, id as u32);
        for (key, firing, ports) in codec::read_keys(b) {
            let loc = Loc {
                run,
                node,
                firing,
                ports: ports.into(),
            };
            // Entries come in `id` order (run, then node): a later run's firing replaces.
            match index.get_mut(&key) {
                Some(old) if old.run >= loc.run => {}
                Some(old) => *old = loc,
                None => {
                    index.insert(key, loc);
                }
            }
        }
    }
    Ok((index, ids))
}

impl ReuseSource for ReuseJournal {
    fn find(&self, key: FiringKey) -> Result<Option<RecordedFiring>, String> {
        match self.index.get(&key) {
            Some(l) => self.load_at(l.run, l.node, l.firing, &l.ports),
            None => {
                // A miss runs the operator (maybe for long): the read transaction ends first.
                if self.holding.load(Ordering::Relaxed) {
                    let mut reader = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
                    reader.end(&self.holding);
                }
                Ok(None)
            }
        }
    }
}

/// Hits read in one read transaction at most: starting and ending one costs two lock calls of
/// the operating system on the `-shm` file (WAL) — most of a hit's time when each hit had its
/// own. A transaction held keeps the journal's writers from checkpointing past it (the WAL
/// grows meanwhile), so it ends after this many hits, at the next miss, or when the journal
/// is dropped.
const HOLD_HITS: u32 = 256;

/// The reuse journal's connection, and the hits read in its open read transaction (0: none).
struct Reader {
    conn: Connection,
    held: u32,
}

impl Reader {
    /// Counts a hit, opening a read transaction first if none is open.
    fn begin(&mut self, holding: &AtomicBool) -> rusqlite::Result<()> {
        if self.held == 0 {
            self.conn.prepare_cached("BEGIN")?.execute([])?;
            holding.store(true, Ordering::Relaxed);
        }
        self.held += 1;
        Ok(())
    }

    /// Ends the read transaction, if one is open.
    fn end(&mut self, holding: &AtomicBool) {
        if self.held > 0 || !self.conn.is_autocommit() {
            // A read transaction's end cannot lose anything; if it fails, the connection's
            // next statement reports it.
            let _ = self
                .conn
                .prepare_cached("COMMIT")
                .and_then(|mut st| st.execute([]));
        }
        self.held = 0;
        holding.store(false, Ordering::Relaxed);
    }
}
