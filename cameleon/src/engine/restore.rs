//! The history as a record, and back: [`Cvm::record`] writes the whole tree in its one form
//! ([`Recorded`], docs/semantics.md §5.5), [`Cvm::restore`] loads one into a fresh engine and
//! re-applies its current path **without running any operator** — as a replay does (§5.3): the
//! tokens come back, each operator's `replay` re-installs its saved state.

use super::{Cvm, RecordError};
use crate::connection::{ConnState, NONE, OpId, Token};
use crate::history::{
    FiringRec, FiringRecord, Recorded, SavedStates, StepKind, StepRecord, TokenRecord, WriteRec,
    WrittenRecord,
};
use crate::types::type_by_name;

/// Why a recorded history could not be restored. The engine is then unusable: build a new one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The engine has already run.
    #[error("the engine is not at its initial marking with an empty history")]
    NotFresh,
    /// The record does not fit the net or this program (an index out of range, a connection
    /// the operator does not touch, a token that does not exist yet, a data type this program
    /// lacks, a state that does not read back).
    #[error("recorded step #{node}: {message}")]
    Invalid {
        /// The node (creation order).
        node: u32,
        /// What is wrong.
        message: String,
    },
    /// Re-applying the current path met a firing its operator could not have made.
    #[error("recorded step {step}: `{op}` {reason}")]
    Diverged {
        /// The 1-based step.
        step: u32,
        /// The operator.
        op: String,
        /// Why.
        reason: String,
    },
}

fn some(i: u32) -> Option<u32> {
    (i != NONE).then_some(i)
}

impl Cvm {
    /// The whole history tree and the position, in the record's one form: what
    /// [`restore`](Self::restore) loads into a fresh engine of the same net (a `subnet`'s or a
    /// `map`'s inner runs are kept so in their parent's journal). `Err`: a value or an operator
    /// state without a serde form, named.
    pub fn record(&self) -> Result<Recorded, RecordError> {
        let nodes = (0..self.history.nodes.len() as u32)
            .map(|n| self.step_record(n))
            .collect::<Result<_, _>>()?;
        let at = self.position();
        Ok(Recorded {
            nodes,
            tip: at.tip,
            redo_tip: at.redo_tip,
        })
    }

    /// The record of history node `node`: its firings, what they consumed and wrote, the
    /// tokens they emitted (the node's range of the arena), the states around them.
    pub(super) fn step_record(&self, node: u32) -> Result<StepRecord, RecordError> {
        let h = &self.history;
        let tokens = &self.marking.tokens[h.token_range(node, self.marking.tokens.len())];
        let mut firings = Vec::with_capacity(h.firing_range(node).len());
        for f in h.firing_range(node) {
            let op = h.firings[f].op;
            let name = &self.net.ops[op as usize].name;
            let mut emitted = Vec::new();
            for t in tokens.iter().filter(|t| t.op.0 == op) {
                let value = t.value.try_to_json().map_err(|e| {
                    RecordError(format!(
                        "`{name}` emitted a {} that cannot be written as JSON: {e}",
                        t.type_name()
                    ))
                })?;
                emitted.push(TokenRecord {
                    ty: t.type_name().into(),
                    value,
                });
            }
            let state = |s: Option<&crate::operator::OpState>| {
                s.map(|s| {
                    s.to_json().map_err(|e| {
                        RecordError(format!(
                            "the internal state of `{name}` cannot be recorded: {e}"
                        ))
                    })
                })
                .transpose()
            };
            let saved = h.saved(f);
            firings.push(FiringRecord {
                op,
                consumed: h.consumed[h.consumed_range(f)].to_vec(),
                written: h.written[h.written_range(f)]
                    .iter()
                    .map(|w| WrittenRecord {
                        conn: w.conn,
                        prior: some(w.prior_tok),
                        new: w.new_tok,
                    })
                    .collect(),
                tokens: emitted,
                before: state(saved.and_then(|s| s.before.as_ref()))?,
                after: state(saved.and_then(|s| s.after.as_ref()))?,
                notes: h
                    .reused_of(f)
                    .map(|r| crate::history::Note {
                        kind: "reused".into(),
                        data: serde_json::to_value(r).unwrap_or_default(),
                    })
                    .into_iter()
                    .collect(),
            });
        }
        Ok(StepRecord {
            kind: StepKind::Fired,
            parent: some(h.nodes[node as usize].parent),
            firings,
            notes: Vec::new(),
        })
    }

    /// Loads a recorded history into this fresh engine and re-applies its current path, **without
    /// running any operator**: each firing of the path is replayed (docs/semantics.md §5.3) —
    /// its tokens come back, its operator's `replay` re-installs the state saved after it — and
    /// the recorded future after the position waits to be replayed, as after backward steps.
    ///
    /// The record is checked against the net, its values read back through their data types'
    /// serde forms and its states through their operators'; a record that does not fit is
    /// refused. Limits (`max_loop_iterations`, the step budget) are not applied to the restored
    /// steps. [`restoring`](Self::restoring) does the same one step at a time, as a journal
    /// reads them.
    pub fn restore(&mut self, rec: Recorded) -> Result<(), RestoreError> {
        let mut restoring = self.restoring()?;
        for step in rec.nodes {
            restoring.push(step)?;
        }
        restoring.finish(rec.tip, rec.redo_tip)
    }

    /// Starts restoring a recorded history into this fresh engine, one step at a time (in
    /// creation order), without holding the whole record: see [`restore`](Self::restore).
    pub fn restoring(&mut self) -> Result<Restoring<'_>, RestoreError> {
        // A seeded engine (`seed.rs`) holds its start's tokens: the record's follow them.
        if !self.history.nodes.is_empty() || !self.scratch.interrupted.is_empty() {
            return Err(RestoreError::NotFresh);
        }
        Ok(Restoring {
            cvm: self,
            depth: Vec::new(),
        })
    }

    /// Adds recorded step `st` to the tree, as a child of `parent`, at depth `depth`: its
    /// firings, their tokens (read back through their data types) and saved states (through
    /// their operators). `Err`: what does not fit the net or this program.
    fn restore_node(&mut self, parent: u32, depth: u32, st: StepRecord) -> Result<(), String> {
        let n_ops = self.net.ops.len();
        let n_conns = self.net.conns.len();
        match st.kind {
            StepKind::Fired if st.firings.is_empty() => return Err("it has no firing".into()),
            StepKind::Fired => {}
            StepKind::Migrated => {
                return Err("a migration is not a step of one net: the journal restores the nets on either side of it".into());
            }
        }
        self.history
            .open_node_at(parent, self.marking.tokens.len() as u32);
        let mut seen = vec![false; 0];
        for fr in st.firings {
            let o = fr.op as usize;
            if o >= n_ops {
                return Err(format!("operator #{o} does not exist"));
            }
            if seen.is_empty() {
                seen = vec![false; n_ops];
            }
            let name = &self.net.ops[o].name;
            if std::mem::replace(&mut seen[o], true) {
                return Err(format!("`{name}` fires twice"));
            }
            let firing = self.history.firings.len() as u32;
            // A `reused` note: where the firing was reused from (docs/semantics.md §5.9);
            // notes of other kinds are not this program's.
            if let Some(from) = fr
                .notes
                .iter()
                .find(|n| n.kind == "reused")
                .and_then(|n| serde_json::from_value(n.data.clone()).ok())
            {
                self.history.reused.push((firing, from));
            }
            self.history.firings.push(FiringRec {
                op: o as u32,
                consumed_start: self.history.consumed.len() as u32,
                written_start: self.history.written.len() as u32,
            });
            for &c in &fr.consumed {
                if c as usize >= n_conns || self.operators.topo.consumer[c as usize] as usize != o {
                    return Err(format!(
                        "`{name}` consumed connection #{c}, which is not one of its inputs"
                    ));
                }
                self.history.consumed.push(c);
            }
            let first = self.marking.tokens.len() as u32;
            let end = first + fr.tokens.len() as u32;
            for w in &fr.written {
                if w.conn as usize >= n_conns
                    || self.operators.topo.producer[w.conn as usize] as usize != o
                {
                    return Err(format!(
                        "`{name}` wrote connection #{}, which is not one of its outputs",
                        w.conn
                    ));
                }
                if w.prior.is_some_and(|p| p >= first) {
                    return Err(format!("`{name}` replaced a token not yet emitted"));
                }
                if !(first..end).contains(&w.new) {
                    return Err(format!("`{name}` wrote a token it did not emit"));
                }
                self.history.written.push(WriteRec {
                    conn: w.conn,
                    prior_tok: w.prior.unwrap_or(NONE),
                    new_tok: w.new,
                });
            }
            for t in fr.tokens {
                let info = type_by_name(&t.ty).ok_or_else(|| {
                    format!(
                        "`{name}` emitted a value of type `{}`, which this program does not declare (link the crate that declares it)",
                        t.ty
                    )
                })?;
                let value = (info.from_json)(t.value).map_err(|e| {
                    format!("a {} emitted by `{name}` cannot be read back: {e}", t.ty)
                })?;
                self.marking.tokens.push(Token {
                    value,
                    step: depth,
                    op: OpId(o as u32),
                });
            }
            let op = &*self.net.ops[o].op;
            let state = |s: Option<serde_json::Value>| {
                s.map(|json| {
                    crate::operator::read_state(op, json).map_err(|e| {
                        format!("the recorded state of `{name}` cannot be read back: {e}")
                    })
                })
                .transpose()
            };
            let (before, after) = (state(fr.before)?, state(fr.after)?);
            if before.is_some() || after.is_some() {
                self.history.states.push(SavedStates {
                    firing,
                    before,
                    after,
                });
            }
        }
        Ok(())
    }

    /// Re-applies the path to node `tip` and sets the recorded future to `redo_tip`.
    pub(super) fn restore_position(
        &mut self,
        tip: Option<u32>,
        redo_tip: Option<u32>,
    ) -> Result<(), RestoreError> {
        let n_nodes = self.history.nodes.len() as u32;
        let path = match tip {
            None => Vec::new(),
            Some(t) if t < n_nodes => self.history.path_to(t),
            Some(t) => {
                return Err(RestoreError::Invalid {
                    node: t,
                    message: "the position is a step that does not exist".into(),
                });
            }
        };
        for node in path {
            let step = self.history.path.len() as u32 + 1;
            for f in self.history.firing_range(node) {
                self.check_replayable(f, step)?;
            }
            for f in self.history.firing_range(node) {
                self.redo_firing(f);
            }
            self.history.path.push(node);
        }
        if let Some(r) = redo_tip {
            let future = if r < n_nodes {
                self.history.path_to(r)
            } else {
                Vec::new()
            };
            if future.len() <= self.history.path.len() || !future.starts_with(&self.history.path) {
                return Err(RestoreError::Invalid {
                    node: r,
                    message: "the recorded future does not continue the position".into(),
                });
            }
            self.history.redo = future[self.history.path.len()..]
                .iter()
                .rev()
                .copied()
                .collect();
        }
        Ok(())
    }

    /// Whether recorded firing `f` can be re-applied at the current marking: its operator
    /// enabled, what it consumed NEW, what it wrote holding the token it replaced.
    fn check_replayable(&self, f: usize, step: u32) -> Result<(), RestoreError> {
        let o = self.history.firings[f].op as usize;
        let diverged = |reason: &str| RestoreError::Diverged {
            step,
            op: self.net.ops[o].name.clone(),
            reason: reason.to_owned(),
        };
        // An operator with a question waits until it has an answer; the answer a recorded
        // firing used is in its saved state before the firing, not yet given back: its rule
        // holding is what counts (docs/semantics.md §6.1).
        if !(self.marking.enabled.get(o)
            || (self.operators.any_asks && self.marking.waiting.get(o)))
        {
            return Err(diverged("is not enabled there"));
        }
        for i in self.history.consumed_range(f) {
            if self.marking.states[self.history.consumed[i] as usize] != ConnState::New {
                return Err(diverged("consumed a connection that was not NEW"));
            }
        }
        for i in self.history.written_range(f) {
            let w = self.history.written[i];
            if self.marking.token_of[w.conn as usize] != w.prior_tok {
                return Err(diverged("replaced a token the connection did not hold"));
            }
        }
        Ok(())
    }
}

/// A restore under way ([`Cvm::restoring`]): the recorded steps pushed one at a time, in
/// creation order, then [`finish`](Self::finish) re-applies the path to the position. The
/// engine is unusable after an error: build a new one.
pub struct Restoring<'c> {
    cvm: &'c mut Cvm,
    /// Per node pushed: its depth in the tree (its tokens' logical step).
    depth: Vec<u32>,
}

impl std::fmt::Debug for Restoring<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Restoring")
            .field("steps", &self.depth.len())
            .finish_non_exhaustive()
    }
}

impl Restoring<'_> {
    /// Adds the next recorded step (node `n` for the `n`-th pushed, from 0) to the tree, checked
    /// against the net: its parent must come before it.
    pub fn push(&mut self, step: StepRecord) -> Result<(), RestoreError> {
        let node = self.depth.len() as u32;
        let parent = match step.parent {
            None => NONE,
            Some(p) if p < node => p,
            Some(p) => {
                return Err(RestoreError::Invalid {
                    node,
                    message: format!("its parent #{p} comes after it"),
                });
            }
        };
        let d = if parent == NONE {
            1
        } else {
            self.depth[parent as usize] + 1
        };
        self.depth.push(d);
        self.cvm
            .restore_node(parent, d, step)
            .map_err(|message| RestoreError::Invalid { node, message })
    }

    /// Re-applies the path to node `tip` (`None`: stays at the initial marking), without
    /// running any operator, and leaves the path to node `redo_tip` (`None`: nothing) as the
    /// recorded future to replay.
    pub fn finish(self, tip: Option<u32>, redo_tip: Option<u32>) -> Result<(), RestoreError> {
        self.cvm.restore_position(tip, redo_tip)
    }
}
