//! A migrated run's history (docs/migration.md): its tree holds the steps of several nets, cut
//! by migration entries. Each *segment* — the steps between a migration entry (or the run's
//! start) and the next ones — is a history of one net. A resume rebuilds the segment the
//! run's position lies in: its net (the migration's `.cm`), seeded with the marking the
//! migration mapped, then its steps restored; the recorder numbers the engine's new nodes
//! after every node of the run.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::*;
use crate::history::{MarkingRecord, Note, Recorded, StepKind, StepRecord};

/// A migration entry's note (`kind: migrated`): what the journal keeps of a migration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MigrationNote {
    /// OLD's canonical `.cm` hash (FNV-1a 64, hex, as `runs.cm_hash`).
    pub from: String,
    /// NEW's.
    pub to: String,
    /// NEW's canonical `.cm` text.
    pub cm: String,
    /// OLD's canonical `.cm` text (what going back over the entry restores).
    pub from_cm: String,
    /// The operators renamed (`old id`, `new id`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renames: Vec<(String, String)>,
    /// The marking the run starts from on NEW.
    pub marking: MarkingRecord,
    /// Whether the migration was accepted though NEW cannot reach that marking itself
    /// (`--allow-unreachable`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
}

/// The note kind of a migration entry.
pub const MIGRATED: &str = "migrated";

impl MigrationNote {
    /// The note of a migration entry, if `st` is one.
    pub fn of(st: &StepRecord) -> Option<Result<MigrationNote, String>> {
        if st.kind != StepKind::Migrated {
            return None;
        }
        let note = st.notes.iter().find(|n| n.kind == MIGRATED);
        Some(match note {
            Some(n) => serde_json::from_value(n.data.clone())
                .map_err(|e| format!("unreadable migration note: {e}")),
            None => Err("a migration entry without its note".into()),
        })
    }

    /// The entry's record.
    pub(super) fn step(&self, parent: Option<u32>) -> Result<StepRecord, serde_json::Error> {
        Ok(StepRecord {
            kind: StepKind::Migrated,
            parent,
            firings: Vec::new(),
            notes: vec![Note {
                kind: MIGRATED.into(),
                data: serde_json::to_value(self)?,
            }],
        })
    }
}

/// What a resume rebuilds: the segment the position lies in.
pub(super) struct Plan {
    /// The segment's net (`None`: the run's stored `.cm`).
    pub(super) cm: Option<String>,
    /// The marking the segment starts from (`None`: the net's initial marking).
    pub(super) seed: Option<MarkingRecord>,
    /// The segment's steps, numbered from 0.
    pub(super) recorded: Recorded,
    /// Where the engine's nodes go in the run (`None`: the run never migrated).
    pub(super) segment: Option<Segment>,
}

/// A run's tree, read once.
pub(super) struct Tree {
    pub(super) steps: Vec<StepRecord>,
    pub(super) branch: Vec<u32>,
    /// Per node: the migration entry whose segment it lies in (`None`: the first segment). A
    /// migration entry lies in its parent's segment.
    pub(super) seg: Vec<Option<u32>>,
    pub(super) notes: HashMap<u32, MigrationNote>,
    pub(super) depth: Vec<u32>,
}

impl Tree {
    pub(super) fn is_migration(&self, n: u32) -> bool {
        self.notes.contains_key(&n)
    }

    /// The segment of position `tip`: a migration entry at the tip starts its own.
    pub(super) fn segment_at(&self, tip: Option<u32>) -> Option<u32> {
        match tip {
            None => None,
            Some(t) if self.is_migration(t) => Some(t),
            Some(t) => self.seg.get(t as usize).copied().flatten(),
        }
    }

    /// The nodes from the root to `n`, in order.
    pub(super) fn path_to(&self, n: u32) -> Vec<u32> {
        let mut out = vec![n];
        let mut at = n;
        while let Some(p) = self.steps[at as usize].parent {
            out.push(p);
            at = p;
        }
        out.reverse();
        out
    }
}

impl Journal {
    /// Reads run `seq`'s whole tree.
    pub(super) fn tree(&self, id: &str, seq: i64) -> Result<Tree, JournalError> {
        let c = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        self.tree_in(&c.0, id, seq)
    }

    /// [`tree`](Self::tree), read through `c` (inside a transaction).
    pub(super) fn tree_in(&self, c: &Connection, id: &str, seq: i64) -> Result<Tree, JournalError> {
        let read = || -> rusqlite::Result<Vec<(i64, i64, String)>> {
            let mut st = c.prepare_cached(
                "SELECT node, branch, body FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            )?;
            let range = (store::entry_id(seq, 0), store::entry_id(seq, u32::MAX));
            st.query_map(range, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        };
        let rows = read().map_err(|e| JournalError::sql(&self.path, e))?;
        let mut t = Tree {
            steps: Vec::with_capacity(rows.len()),
            branch: Vec::with_capacity(rows.len()),
            seg: Vec::with_capacity(rows.len()),
            notes: HashMap::new(),
            depth: Vec::with_capacity(rows.len()),
        };
        for (i, (node, branch, body)) in rows.into_iter().enumerate() {
            let n = i as u32;
            if node != i as i64 {
                return Err(self.corrupt(format!("run `{id}`: entry #{i} is missing")));
            }
            let step = codec::decode(&body).map_err(|what| JournalError::Incompatible {
                run: id.to_owned(),
                what: format!("entry #{i}: {what}"),
            })?;
            let (seg, depth) = match step.parent {
                None => (None, 1),
                Some(p) if p < n => {
                    let seg = if t.notes.contains_key(&p) {
                        Some(p)
                    } else {
                        t.seg[p as usize]
                    };
                    (seg, t.depth[p as usize] + 1)
                }
                Some(p) => {
                    return Err(self.corrupt(format!(
                        "run `{id}`: entry #{i}'s parent #{p} comes after it"
                    )));
                }
            };
            if let Some(note) = MigrationNote::of(&step) {
                let note = note.map_err(|what| JournalError::Incompatible {
                    run: id.to_owned(),
                    what: format!("entry #{i}: {what}"),
                })?;
                t.notes.insert(n, note);
            }
            t.seg.push(seg);
            t.depth.push(depth);
            t.branch.push(branch.max(1) as u32);
            t.steps.push(step);
        }
        Ok(t)
    }

    /// What a resume of run `id` rebuilds, at position (`tip`, `redo_tip`).
    pub(super) fn plan(
        &self,
        id: &str,
        seq: i64,
        tip: Option<i64>,
        redo_tip: Option<i64>,
    ) -> Result<Plan, JournalError> {
        let tip = node_index(tip).map_err(|w| self.corrupt(format!("run `{id}`: {w}")))?;
        let redo = node_index(redo_tip).map_err(|w| self.corrupt(format!("run `{id}`: {w}")))?;
        let tree = self.tree(id, seq)?;
        let n = tree.steps.len() as u32;
        if tree.notes.is_empty() {
            return Ok(Plan {
                cm: None,
                seed: None,
                recorded: Recorded {
                    nodes: tree.steps,
                    tip,
                    redo_tip: redo,
                },
                segment: None,
            });
        }
        if tip.is_some_and(|t| t >= n) {
            return Err(self.corrupt(format!(
                "run `{id}`: its position is a step that does not exist"
            )));
        }
        let here = tree.segment_at(tip);
        let mut local: HashMap<u32, u32> = HashMap::new();
        let mut nodes = Vec::new();
        let mut globals = Vec::new();
        for g in 0..n {
            if tree.seg[g as usize] != here || tree.is_migration(g) {
                continue;
            }
            let mut st = tree.steps[g as usize].clone();
            st.parent = match st.parent {
                Some(p) if Some(p) == here => None,
                Some(p) => Some(*local.get(&p).ok_or_else(|| {
                    self.corrupt(format!("run `{id}`: entry #{g} leaves its segment"))
                })?),
                None => None,
            };
            local.insert(g, nodes.len() as u32);
            nodes.push(st);
            globals.push(g);
        }
        let to_local = |x: Option<u32>| x.and_then(|x| local.get(&x).copied());
        let (cm, seed, depth, branch) = match here {
            None => {
                // The first segment's net: the one every migration out of it started from.
                let from = tree
                    .notes
                    .iter()
                    .filter(|(m, _)| tree.seg[**m as usize].is_none())
                    .min_by_key(|(m, _)| **m)
                    .map(|(_, note)| note.from_cm.clone());
                (from, None, 0, 0)
            }
            Some(m) => {
                let note = &tree.notes[&m];
                (
                    Some(note.cm.clone()),
                    Some(note.marking.clone()),
                    tree.depth[m as usize],
                    tree.branch[m as usize] - 1,
                )
            }
        };
        Ok(Plan {
            cm,
            seed,
            recorded: Recorded {
                nodes,
                tip: to_local(tip),
                // A recorded future past another migration entry is not this engine's.
                redo_tip: to_local(redo),
            },
            segment: Some(Segment {
                nodes: globals,
                root: here,
                next: n,
                depth,
                branch,
            }),
        })
    }
}

/// Where the engine's history sits in the run's tree, when the run has migrated
/// (docs/migration.md): the engine holds one segment — the steps on one net — and numbers its
/// nodes from 0; the journal numbers every node of the run.
#[derive(Clone, Debug, Default)]
pub(super) struct Segment {
    /// The run's node of each of the engine's nodes, in the engine's order.
    pub(super) nodes: Vec<u32>,
    /// The migration entry the segment starts at (`None`: the run's start).
    pub(super) root: Option<u32>,
    /// The run's next free node.
    pub(super) next: u32,
    /// The depth of `root`.
    pub(super) depth: u32,
    /// Added to the engine's branch numbers.
    pub(super) branch: u32,
}

impl Segment {
    pub(super) fn node(&mut self, local: u32) -> u32 {
        while self.nodes.len() <= local as usize {
            self.nodes.push(self.next);
            self.next += 1;
        }
        self.nodes[local as usize]
    }

    pub(super) fn position(&mut self, p: crate::engine::Position) -> crate::engine::Position {
        crate::engine::Position {
            tip: match p.tip {
                Some(t) => Some(self.node(t)),
                None => self.root,
            },
            redo_tip: p.redo_tip.map(|r| self.node(r)),
            depth: p.depth + self.depth,
        }
    }
}
