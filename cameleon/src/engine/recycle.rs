//! One engine for many runs of one net (a `map`'s items, docs/semantics.md §10.3): a finished
//! run's history taken out as a [`RunTrail`] and the engine put back at its initial marking with
//! fresh operators ([`Cvm::take_trail`], [`Cvm::renew_operators`]); and a trail put back into a
//! fresh engine of the same net, its path re-applied **without running any operator**
//! ([`Cvm::adopt_trail`]), as [`Cvm::restore`] does with a record.

use super::{Cvm, RestoreError};
use crate::connection::{ConnState, NONE, Token};
use crate::history::{FiringRec, HistoryTree, NodeRec, ReusedFrom, SavedStates, WriteRec};
use crate::operator::Operator;

/// What a run leaves: its history tree and its token arena, as the engine kept them (no value
/// or state converted). [`Cvm::adopt_trail`] makes it an engine again.
///
/// The tree's index tables are packed into one buffer (so taking a trail out allocates it and
/// the arena, and the engine keeps its own buffers for the next run): eight counts — nodes,
/// firings, consumed, written, path, redo, branch starts, whether a root has a child — then
/// each table in that order (three numbers per node, firing and written connection), then one
/// number per node: whether it has a child. (Measured on a `map` of a three-operator net:
/// moving the `HistoryTree` itself out, the engine growing new tables for the next run, costs
/// about 1.3 k instructions more per item than this one buffer.)
pub(crate) struct RunTrail {
    packed: Vec<u32>,
    states: Vec<SavedStates>,
    reused: Vec<(u32, ReusedFrom)>,
    keys: Vec<(u32, u128)>,
    tokens: Vec<Token>,
}

impl std::fmt::Debug for RunTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTrail")
            .field("nodes", &self.packed.first())
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

/// The `k` numbers of `p` from `*at` on (fewer if `p` ends before), `*at` moved past them.
fn part<'p>(p: &'p [u32], at: &mut usize, k: usize) -> &'p [u32] {
    let s = p.get(*at..*at + k).unwrap_or(&[]);
    *at += k;
    s
}

impl RunTrail {
    /// Packs `h` (whose seeded start, if any, is not kept: a `map`'s engines are not seeded),
    /// and empties it, its buffers kept (the states, reuses and keys move to the trail).
    fn pack(h: &mut HistoryTree, tokens: Vec<Token>) -> RunTrail {
        let len = 8
            + 3 * h.nodes.len()
            + 3 * h.firings.len()
            + h.consumed.len()
            + 3 * h.written.len()
            + h.path.len()
            + h.redo.len()
            + h.branch_starts.len()
            + h.has_child.len();
        let mut p = Vec::with_capacity(len);
        p.extend(
            [
                h.nodes.len(),
                h.firings.len(),
                h.consumed.len(),
                h.written.len(),
                h.path.len(),
                h.redo.len(),
                h.branch_starts.len(),
                usize::from(h.root_has_child),
            ]
            .map(|n| n as u32),
        );
        // Plain loops into the buffer sized above: cheaper than chained iterators.
        for n in &h.nodes {
            p.extend_from_slice(&[n.parent, n.first_firing, n.first_token]);
        }
        for f in &h.firings {
            p.extend_from_slice(&[f.op, f.consumed_start, f.written_start]);
        }
        p.extend_from_slice(&h.consumed);
        for w in &h.written {
            p.extend_from_slice(&[w.conn, w.prior_tok, w.new_tok]);
        }
        p.extend_from_slice(&h.path);
        p.extend_from_slice(&h.redo);
        p.extend_from_slice(&h.branch_starts);
        p.extend(h.has_child.iter().map(|&c| u32::from(c)));
        let trail = RunTrail {
            packed: p,
            states: std::mem::take(&mut h.states),
            reused: std::mem::take(&mut h.reused),
            keys: std::mem::take(&mut h.keys),
            tokens,
        };
        h.clear();
        trail
    }

    /// The tree packed, and the arena.
    fn unpack(self) -> (HistoryTree, Vec<Token>) {
        let p = &self.packed;
        let n = |i: usize| p.get(i).copied().unwrap_or(0) as usize;
        let (nodes, firings, consumed, written) = (n(0), n(1), n(2), n(3));
        let (path, redo, starts, root_has_child) = (n(4), n(5), n(6), n(7) != 0);
        let mut at = 8;
        let triples = |s: &[u32]| -> Vec<[u32; 3]> {
            s.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        let nodes_t = triples(part(p, &mut at, 3 * nodes));
        let firings_t = triples(part(p, &mut at, 3 * firings));
        let consumed = part(p, &mut at, consumed).to_vec();
        let written_t = triples(part(p, &mut at, 3 * written));
        let path = part(p, &mut at, path).to_vec();
        let redo = part(p, &mut at, redo).to_vec();
        let branch_starts = part(p, &mut at, starts).to_vec();
        let has_child = part(p, &mut at, nodes).iter().map(|&c| c != 0).collect();
        let mut h = HistoryTree::default();
        h.nodes = nodes_t
            .into_iter()
            .map(|[parent, first_firing, first_token]| NodeRec {
                parent,
                first_firing,
                first_token,
            })
            .collect();
        h.firings = firings_t
            .into_iter()
            .map(|[op, consumed_start, written_start]| FiringRec {
                op,
                consumed_start,
                written_start,
            })
            .collect();
        h.consumed = consumed;
        h.written = written_t
            .into_iter()
            .map(|[conn, prior_tok, new_tok]| WriteRec {
                conn,
                prior_tok,
                new_tok,
            })
            .collect();
        h.states = self.states;
        h.reused = self.reused;
        h.keys = self.keys;
        h.path = path;
        h.redo = redo;
        h.has_child = has_child;
        h.root_has_child = root_has_child;
        h.branch_starts = branch_starts;
        (h, self.tokens)
    }
}

impl Cvm {
    /// Takes the run's history and tokens out, and puts the marking back where a fresh engine
    /// starts: every connection EMPTY, no token, no firing counted, an empty history. The
    /// operators are left as the run left them: [`renew_operators`](Self::renew_operators)
    /// replaces them. A step interrupted mid-way (its future dropped) is restored first.
    pub(crate) fn take_trail(&mut self) -> RunTrail {
        if !self.scratch.interrupted.is_empty() {
            self.restore_interrupted();
        }
        let n_conns = self.net.conns.len();
        let tokens = self.marking.tokens.drain(..).collect();
        let trail = RunTrail::pack(&mut self.history, tokens);
        // Back to EMPTY through `set`, which keeps the per-port views in step.
        for c in 0..n_conns {
            if self.marking.states[c] != ConnState::Empty {
                self.marking.set(&self.operators.topo, c, ConnState::Empty);
            }
        }
        self.marking.token_of.fill(NONE);
        self.marking.fire_count.fill(0);
        self.context.deferred = None;
        self.context.run_span = None;
        trail
    }

    /// Puts every operator back in its initial state with `renew(o, op)` — which resets
    /// operator `o` where it is, or replaces it with a new instance (of the same type, with the
    /// same params: the operator table is kept) — and re-evaluates the enabled set. `Err`: an
    /// operator could not be renewed; the engine must then not run again.
    pub(crate) fn renew_operators<E>(
        &mut self,
        mut renew: impl FnMut(usize, &mut Box<dyn Operator>) -> Result<(), E>,
    ) -> Result<(), E> {
        for (o, node) in self.net.ops.iter_mut().enumerate() {
            renew(o, &mut node.op)?;
        }
        self.refresh_all();
        Ok(())
    }

    /// Operator `o` of the net, to hand it what it needs before a run (a sub-net's `input` its
    /// value).
    pub(crate) fn operator_mut(&mut self, o: usize) -> &mut dyn Operator {
        &mut *self.net.ops[o].op
    }

    /// Puts `trail` — taken from an engine of the same net, whose operators started as this
    /// fresh engine's — into this engine and re-applies its path without running any operator:
    /// each firing is replayed (its tokens come back, its operator's `replay` re-installs the
    /// state saved after it). The engine is then as the run left it: history, marking, firing
    /// counts, received values; `back` undoes it, compensations included.
    pub(crate) fn adopt_trail(&mut self, trail: RunTrail) -> Result<(), RestoreError> {
        if !self.history.nodes.is_empty()
            || !self.marking.tokens.is_empty()
            || !self.scratch.interrupted.is_empty()
        {
            return Err(RestoreError::NotFresh);
        }
        let (mut history, tokens) = trail.unpack();
        let tip = history.path.last().copied();
        // The recorded future is next-last: its first entry is the deepest.
        let redo_tip = history.redo.first().copied();
        history.path.clear();
        history.redo.clear();
        self.history = history;
        self.marking.tokens = tokens;
        self.restore_position(tip, redo_tip)
    }
}
