//! History: the tree of applied firings, stored as deltas (docs/semantics.md §5).
//!
//! Each entry (a *node*) records, per firing, the operator, the connections it consumed (their
//! prior state was NEW and their data is unchanged by consumption, so the index is enough) and
//! the connections it wrote (prior token, new token; the prior state is EMPTY exactly when there
//! was no prior token, OLD otherwise). Tokens live in one arena and are never copied: a backward
//! step restores indices, a replay re-applies them. Operators that have internal state also get
//! a copy of it before and after the firing.
//!
//! Nodes form a tree: the *path* is what is applied now; the *redo* stack is what a forward step
//! will replay; a re-fire after going back starts a new branch and leaves the old future in the
//! tree, where [`Cvm::checkout`](crate::Cvm::checkout) can return to it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::connection::{ConnId, OpId};
use crate::operator::OpState;

pub(crate) use crate::connection::NONE;

mod marking;
mod record;

pub use marking::{ConnRecord, MarkingRecord, StateRecord};
pub use record::{FiringRecord, Note, Recorded, StepKind, StepRecord, TokenRecord, WrittenRecord};

/// A node: one history entry (one step).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeRec {
    pub(crate) parent: u32,
    pub(crate) first_firing: u32,
    /// Its first token in the arena: a node's tokens are the arena from there to the next
    /// node's first token (tokens are only emitted by the firings of the node being applied).
    pub(crate) first_token: u32,
}

/// One operator firing inside a node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FiringRec {
    pub(crate) op: u32,
    pub(crate) consumed_start: u32,
    pub(crate) written_start: u32,
}

/// A connection a firing wrote.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WriteRec {
    pub(crate) conn: u32,
    pub(crate) prior_tok: u32,
    pub(crate) new_tok: u32,
}

// The history's size per firing (docs/semantics.md §5 deltas; a budget of 64 bytes per firing,
// payloads excluded) rests on these layouts: a node is three indices (parent, first firing, first
// token), a firing three, a written connection three, a token a value pointer plus the logical
// clock. Branch numbers are kept per branch, not per node.
const _: () = {
    use std::mem::size_of;
    assert!(size_of::<NodeRec>() == size_of::<[u32; 3]>());
    assert!(size_of::<FiringRec>() == size_of::<[u32; 3]>());
    assert!(size_of::<WriteRec>() == size_of::<[u32; 3]>());
    assert!(size_of::<crate::connection::Token>() == size_of::<[usize; 3]>());
};

/// Where a reused firing was recorded (docs/semantics.md §5.9): the source run and its
/// 1-based step. Kept with the firing in the history, written to a journal as a `reused`
/// note of the firing's record, shown in the trace.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReusedFrom {
    /// The source run's id.
    pub run: String,
    /// The step of that run whose firing was reused.
    pub step: u32,
}

/// Saved internal state of a stateful operator around one firing.
pub(crate) struct SavedStates {
    pub(crate) firing: u32,
    pub(crate) before: Option<OpState>,
    pub(crate) after: Option<OpState>,
}

/// The history store. Everything is append-only except `path` and `redo`.
#[derive(Default)]
pub(crate) struct HistoryTree {
    pub(crate) nodes: Vec<NodeRec>,
    pub(crate) firings: Vec<FiringRec>,
    pub(crate) consumed: Vec<u32>,
    pub(crate) written: Vec<WriteRec>,
    pub(crate) states: Vec<SavedStates>,
    /// The reused firings (by index, ascending) and where each was recorded.
    pub(crate) reused: Vec<(u32, ReusedFrom)>,
    /// Reuse keys computed before their firings (by index, ascending; docs/semantics.md §5.9).
    pub(crate) keys: Vec<(u32, u128)>,
    /// Applied nodes, root first.
    pub(crate) path: Vec<u32>,
    /// Nodes a forward step replays, next one last.
    pub(crate) redo: Vec<u32>,
    /// Per node: whether it has a child (a new child then starts a new branch).
    pub(crate) has_child: Vec<bool>,
    /// Whether some node is a root (a second root starts a new branch).
    pub(crate) root_has_child: bool,
    /// Per branch (its number less one): the node that starts it. Branches are numbered from 1
    /// in creation order; a node that is its parent's first child continues the parent's
    /// branch, a later child (or a second root) starts a new one. A node lies on the branch of
    /// the nearest of its ancestors, itself included, that starts one.
    pub(crate) branch_starts: Vec<u32>,
    /// The node whose branch was looked up last (plus one; 0: none) in the high half, its
    /// branch in the low half: the tip, nearly always, so a step finds its branch at once.
    branch_cache: AtomicU64,
    /// Per connection: the token it held at the start, for an engine seeded with a marking
    /// (`Cvm::seed`); empty otherwise (every connection EMPTY).
    pub(crate) start: Vec<u32>,
}

impl fmt::Debug for HistoryTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("nodes", &self.nodes.len())
            .field("path", &self.path.len())
            .field("redo", &self.redo.len())
            .finish()
    }
}

impl HistoryTree {
    /// A store sized for a run that fires each operator about once.
    pub(crate) fn with_capacity(ops: usize, conns: usize) -> Self {
        HistoryTree {
            nodes: Vec::with_capacity(ops),
            firings: Vec::with_capacity(ops),
            consumed: Vec::with_capacity(conns),
            written: Vec::with_capacity(conns),
            states: Vec::new(),
            reused: Vec::new(),
            keys: Vec::new(),
            path: Vec::with_capacity(ops),
            redo: Vec::new(),
            has_child: Vec::with_capacity(ops),
            root_has_child: false,
            branch_starts: Vec::new(),
            branch_cache: AtomicU64::new(0),
            start: Vec::new(),
        }
    }

    /// Empties the store, as `default()` makes it, keeping its buffers (every field is named:
    /// a new one must be emptied here too).
    pub(crate) fn clear(&mut self) {
        let HistoryTree {
            nodes,
            firings,
            consumed,
            written,
            states,
            reused,
            keys,
            path,
            redo,
            has_child,
            root_has_child,
            branch_starts,
            branch_cache,
            start,
        } = self;
        nodes.clear();
        firings.clear();
        consumed.clear();
        written.clear();
        states.clear();
        reused.clear();
        keys.clear();
        path.clear();
        redo.clear();
        has_child.clear();
        *root_has_child = false;
        branch_starts.clear();
        *branch_cache.get_mut() = 0;
        start.clear();
    }

    pub(crate) fn firing_range(&self, node: u32) -> std::ops::Range<usize> {
        let start = self.nodes[node as usize].first_firing as usize;
        let end = self
            .nodes
            .get(node as usize + 1)
            .map_or(self.firings.len(), |n| n.first_firing as usize);
        start..end
    }

    /// The arena range of the tokens node `node`'s firings emitted (`n_tokens`: the arena's
    /// length).
    pub(crate) fn token_range(&self, node: u32, n_tokens: usize) -> std::ops::Range<usize> {
        let start = self.nodes[node as usize].first_token as usize;
        let end = self
            .nodes
            .get(node as usize + 1)
            .map_or(n_tokens, |n| n.first_token as usize);
        start..end
    }

    pub(crate) fn consumed_range(&self, firing: usize) -> std::ops::Range<usize> {
        let start = self.firings[firing].consumed_start as usize;
        let end = self
            .firings
            .get(firing + 1)
            .map_or(self.consumed.len(), |f| f.consumed_start as usize);
        start..end
    }

    pub(crate) fn written_range(&self, firing: usize) -> std::ops::Range<usize> {
        let start = self.firings[firing].written_start as usize;
        let end = self
            .firings
            .get(firing + 1)
            .map_or(self.written.len(), |f| f.written_start as usize);
        start..end
    }

    /// Where firing `firing` was reused from, if it was.
    pub(crate) fn reused_of(&self, firing: usize) -> Option<&ReusedFrom> {
        if self.reused.is_empty() {
            return None;
        }
        let i = self
            .reused
            .binary_search_by_key(&(firing as u32), |r| r.0)
            .ok()?;
        self.reused.get(i).map(|r| &r.1)
    }

    /// The reuse key computed before firing `firing`, if one was.
    pub(crate) fn key_of(&self, firing: usize) -> Option<u128> {
        let i = self
            .keys
            .binary_search_by_key(&(firing as u32), |k| k.0)
            .ok()?;
        self.keys.get(i).map(|k| k.1)
    }

    pub(crate) fn saved(&self, firing: usize) -> Option<&SavedStates> {
        let i = self
            .states
            .binary_search_by_key(&(firing as u32), |s| s.firing)
            .ok()?;
        self.states.get(i)
    }

    /// Starts a new node as a child of `parent` (`NONE`: a root); its tokens start at
    /// `first_token`.
    #[inline]
    pub(crate) fn open_node_at(&mut self, parent: u32, first_token: u32) -> u32 {
        let branch = self.branch_under(parent);
        self.open_node_under(parent, branch, first_token)
    }

    /// Starts a new node as a child of the current tip, on `branch` — its
    /// [`next_branch`](Self::next_branch), computed by the caller; its tokens start at
    /// `first_token`.
    #[inline]
    pub(crate) fn open_node_on(&mut self, branch: u32, first_token: u32) -> u32 {
        debug_assert_eq!(branch, self.next_branch());
        let parent = self.path.last().copied().unwrap_or(NONE);
        self.open_node_under(parent, branch, first_token)
    }

    #[inline]
    fn open_node_under(&mut self, parent: u32, branch: u32, first_token: u32) -> u32 {
        let node = self.nodes.len() as u32;
        if branch as usize > self.branch_starts.len() {
            self.branch_starts.push(node);
        }
        if parent == NONE {
            self.root_has_child = true;
        } else {
            self.has_child[parent as usize] = true;
        }
        self.nodes.push(NodeRec {
            parent,
            first_firing: self.firings.len() as u32,
            first_token,
        });
        self.has_child.push(false);
        self.cache_branch(node, branch);
        node
    }

    /// The number of branches.
    pub(crate) fn branch_count(&self) -> u32 {
        self.branch_starts.len() as u32
    }

    /// The branch node `node` lies on (1-based, in creation order).
    #[inline]
    pub(crate) fn branch_of(&self, node: u32) -> u32 {
        // The last node asked about or opened (a forward run asks about the node it opened).
        let cache = self.branch_cache.load(Ordering::Relaxed);
        if cache >> 32 == u64::from(node) + 1 {
            return cache as u32;
        }
        self.branch_walk(node, cache)
    }

    /// [`branch_of`](Self::branch_of) when the cache misses: up the tree to a branch start.
    #[cold]
    #[inline(never)]
    fn branch_walk(&self, node: u32, cache: u64) -> u32 {
        let mut n = node;
        let branch = loop {
            if cache >> 32 == u64::from(n) + 1 {
                break cache as u32;
            }
            if let Ok(i) = self.branch_starts.binary_search(&n) {
                break i as u32 + 1;
            }
            // Every root starts a branch: the walk ends there at the latest.
            n = self.nodes[n as usize].parent;
        };
        self.cache_branch(node, branch);
        branch
    }

    fn cache_branch(&self, node: u32, branch: u32) {
        self.branch_cache.store(
            ((u64::from(node) + 1) << 32) | u64::from(branch),
            Ordering::Relaxed,
        );
    }

    /// The branch a new child of `parent` (`NONE`: a root) lies on.
    #[inline(always)]
    pub(crate) fn branch_under(&self, parent: u32) -> u32 {
        let taken = if parent == NONE {
            self.root_has_child
        } else {
            self.has_child[parent as usize]
        };
        if taken {
            self.branch_count() + 1 // a second child starts a branch
        } else if parent == NONE {
            1
        } else {
            self.branch_of(parent)
        }
    }

    /// The branch the next new step (a child of the current tip) lies on.
    #[inline]
    pub(crate) fn next_branch(&self) -> u32 {
        self.branch_under(self.path.last().copied().unwrap_or(NONE))
    }

    /// Removes the last node, which must be the current tip's last child and must not be
    /// applied, with its firings and saved states (a step whose journaling failed).
    pub(crate) fn drop_last_node(&mut self) {
        let Some(node) = self.nodes.pop() else {
            return;
        };
        self.has_child.pop();
        let dropped = self.nodes.len() as u32;
        if self.branch_starts.last() == Some(&dropped) {
            self.branch_starts.pop();
        }
        self.branch_cache.store(0, Ordering::Relaxed);
        let first = node.first_firing as usize;
        if let Some(f) = self.firings.get(first) {
            self.consumed.truncate(f.consumed_start as usize);
            self.written.truncate(f.written_start as usize);
        }
        self.firings.truncate(first);
        while self
            .states
            .last()
            .is_some_and(|s| s.firing as usize >= first)
        {
            self.states.pop();
        }
        while self
            .reused
            .last()
            .is_some_and(|(f, _)| *f as usize >= first)
        {
            self.reused.pop();
        }
        while self.keys.last().is_some_and(|(f, _)| *f as usize >= first) {
            self.keys.pop();
        }
        if node.parent == NONE {
            self.root_has_child = self.nodes.iter().any(|n| n.parent == NONE);
        } else {
            let p = node.parent;
            self.has_child[p as usize] = self.nodes.iter().any(|n| n.parent == p);
        }
    }

    /// Leaves of the tree: the tips of every branch.
    pub(crate) fn leaves(&self) -> Vec<u32> {
        let mut has_child = vec![false; self.nodes.len()];
        for n in &self.nodes {
            if n.parent != NONE {
                has_child[n.parent as usize] = true;
            }
        }
        (0..self.nodes.len() as u32)
            .filter(|i| !has_child[*i as usize])
            .collect()
    }

    /// Every branch of the tree; `current` is the one the applied path and the redo stack lie on.
    pub(crate) fn branches(&self) -> Vec<Branch> {
        let tip = self.redo.first().or(self.path.last()).copied();
        self.leaves()
            .into_iter()
            .map(|leaf| Branch {
                id: BranchId(leaf),
                depth: self.path_to(leaf).len(),
                current: Some(leaf) == tip,
            })
            .collect()
    }

    /// The path from the root to `node`, root first.
    pub(crate) fn path_to(&self, node: u32) -> Vec<u32> {
        let mut v = Vec::new();
        let mut n = node;
        while n != NONE {
            v.push(n);
            n = self.nodes[n as usize].parent;
        }
        v.reverse();
        v
    }

    /// Heap bytes used by the delta records (not the values behind the tokens).
    pub(crate) fn footprint(&self) -> usize {
        use std::mem::size_of;
        self.nodes.len() * size_of::<NodeRec>()
            + self.firings.len() * size_of::<FiringRec>()
            + self.consumed.len() * size_of::<u32>()
            + self.written.len() * size_of::<WriteRec>()
            + self.states.len() * size_of::<SavedStates>()
            + self.branch_starts.len() * size_of::<u32>()
    }
}

/// A branch of the history tree, as [`Cvm::branches`](crate::Cvm::branches) lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Identifies the branch for [`Cvm::checkout`](crate::Cvm::checkout).
    pub id: BranchId,
    /// Number of steps from the initial marking to the branch's tip.
    pub depth: usize,
    /// Whether the current position is on this branch (applied or to be replayed).
    pub current: bool,
}

/// Identifies a branch: the node at its tip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchId(pub(crate) u32);

/// One firing as recorded in the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FiringView {
    /// The operator that fired.
    pub op: OpId,
    /// Connections it consumed (NEW → OLD).
    pub consumed: Vec<ConnId>,
    /// Connections it wrote, with the index of the token it put there.
    pub written: Vec<(ConnId, u32)>,
    /// Where it was reused from, if a recorded firing was applied instead of calling the
    /// operator (docs/semantics.md §5.9).
    pub reused: Option<ReusedFrom>,
}

/// One history entry: a step (one firing in sequential mode, a maximal step in parallel mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// 1-based logical step.
    pub step: u32,
    /// The firings of the step, in declaration order.
    pub firings: Vec<FiringView>,
}

/// A read-only view of the history, from [`Cvm::history`](crate::Cvm::history).
#[derive(Debug)]
pub struct History<'a> {
    pub(crate) store: &'a HistoryTree,
    pub(crate) tokens: usize,
}

impl History<'_> {
    /// Number of applied steps (the current depth).
    pub fn len(&self) -> usize {
        self.store.path.len()
    }

    /// Whether no step is applied.
    pub fn is_empty(&self) -> bool {
        self.store.path.is_empty()
    }

    /// Number of steps a forward step would replay before executing anew.
    pub fn redo_len(&self) -> usize {
        self.store.redo.len()
    }

    /// The applied entries, oldest first.
    pub fn entries(&self) -> Vec<Entry> {
        self.store
            .path
            .iter()
            .enumerate()
            .map(|(i, n)| self.entry(i as u32 + 1, *n))
            .collect()
    }

    /// The last applied entry (the step just taken), without building the others.
    pub fn last(&self) -> Option<Entry> {
        let node = *self.store.path.last()?;
        Some(self.entry(self.store.path.len() as u32, node))
    }

    /// The entries a forward step would replay, next first.
    pub fn redo_entries(&self) -> Vec<Entry> {
        let depth = self.store.path.len() as u32;
        self.store
            .redo
            .iter()
            .rev()
            .enumerate()
            .map(|(i, n)| self.entry(depth + i as u32 + 1, *n))
            .collect()
    }

    fn entry(&self, step: u32, node: u32) -> Entry {
        let s = self.store;
        let firings = s
            .firing_range(node)
            .map(|f| FiringView {
                op: OpId(s.firings[f].op),
                consumed: s.consumed[s.consumed_range(f)]
                    .iter()
                    .map(|c| ConnId(*c))
                    .collect(),
                written: s.written[s.written_range(f)]
                    .iter()
                    .map(|w| (ConnId(w.conn), w.new_tok))
                    .collect(),
                reused: s.reused_of(f).cloned(),
            })
            .collect();
        Entry { step, firings }
    }

    /// The internal state operator `firing` of applied entry `step` (1-based, as
    /// [`Entry::step`]) saved after it fired — what a replay re-installs; `None` for a
    /// stateless operator or out of range. Operators keep there what they want a record of
    /// (the `std-ai` operators: their model calls and token usage).
    pub fn state_after(&self, step: u32, firing: usize) -> Option<&OpState> {
        let node = *self.store.path.get((step as usize).checked_sub(1)?)?;
        let range = self.store.firing_range(node);
        let f = range.start + firing;
        if f >= range.end {
            return None;
        }
        self.store.saved(f)?.after.as_ref()
    }

    /// Every branch of the history tree (as [`Cvm::branches`](crate::Cvm::branches)).
    pub fn branches(&self) -> Vec<Branch> {
        self.store.branches()
    }

    /// Total firings recorded in the tree (every branch).
    pub fn recorded_firings(&self) -> usize {
        self.store.firings.len()
    }

    /// Bytes used by the history, excluding what values point to: the delta records plus the
    /// token handles (value pointer and logical-clock metadata) of every emission.
    pub fn footprint_bytes(&self) -> usize {
        self.store.footprint() + self.tokens * std::mem::size_of::<crate::connection::Token>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_lies_on_the_branch_of_its_nearest_ancestor_that_starts_one() {
        let mut s = HistoryTree::default();
        let a = s.open_node_at(NONE, 0); // the first root: branch 1
        let b = s.open_node_at(a, 0); // a's first child: 1
        let c = s.open_node_at(a, 0); // a's second child: 2
        let d = s.open_node_at(c, 0); // 2
        let e = s.open_node_at(b, 0); // 1
        let f = s.open_node_at(NONE, 0); // a second root: 3
        let g = s.open_node_at(d, 0); // 2
        let h = s.open_node_at(d, 0); // d's second child: 4
        let want = [
            (a, 1),
            (b, 1),
            (c, 2),
            (d, 2),
            (e, 1),
            (f, 3),
            (g, 2),
            (h, 4),
        ];
        for (n, branch) in want {
            s.branch_cache.store(0, Ordering::Relaxed); // found by walking up
            assert_eq!(s.branch_of(n), branch, "node {n}");
        }
        for (n, branch) in want.into_iter().rev() {
            assert_eq!(s.branch_of(n), branch, "node {n}, after another lookup");
        }
        assert_eq!(s.branch_count(), 4);
        s.drop_last_node(); // h, which started branch 4
        assert_eq!(s.branch_count(), 3);
        assert_eq!(
            s.branch_under(d),
            4,
            "d has a child: a new one starts a branch"
        );
        assert_eq!(s.branch_under(g), 2);
    }
}
