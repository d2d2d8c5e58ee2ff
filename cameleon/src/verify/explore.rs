//! Breadth-first exploration of the control abstraction, and the graph analyses on its result.
//!
//! States are numbered in discovery order and kept in the compact [`Store`]. A full
//! exploration (`--reduce none`) stores no edges: the analyses that need the graph (option to
//! complete, cycles) recompute a state's successors from the model and find them in the store,
//! and most nets never need them — an exploration that finds no deadlock and only edges that
//! raise the potential (see `Outcome::grows`) has no cycle and completes from everywhere. A
//! reduced exploration (`reduce.rs`) stores its edges: its graph is small, and its successors
//! are not all of a state's.

use std::collections::{HashMap, VecDeque};

use super::model::Model;
use super::store::{Store, hash};
use super::timing::Timing;

/// A snapshot of a running exploration, for progress reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// States stored so far.
    pub states: u64,
    /// States whose successors have been computed.
    pub expanded: u64,
    /// Edges found so far.
    pub edges: u64,
    /// The state budget.
    pub max_states: u64,
}

/// The edges of a reduced exploration: per expanded state, in expansion order, its successors
/// (`start`/`succ`, compressed), and the successors the cycle proviso added later.
#[derive(Debug, Default)]
pub(crate) struct Edges {
    pub(crate) start: Vec<u64>,
    pub(crate) succ: Vec<u32>,
    pub(crate) extra: HashMap<u32, Vec<u32>>,
}

impl Edges {
    fn bytes(&self) -> usize {
        self.start.capacity() * 8
            + self.succ.capacity() * 4
            + self
                .extra
                .values()
                .map(|v| v.capacity() * 4 + 32)
                .sum::<usize>()
    }
}

/// What an exploration found.
pub(crate) struct Explored {
    pub(crate) store: Store,
    /// States `0..expanded` had their successors computed (in number order).
    pub(crate) expanded: usize,
    /// The stored edges of a reduced exploration; `None` for a full one.
    pub(crate) edges: Option<Edges>,
    /// Edges found (firings between stored states).
    pub(crate) n_edges: u64,
    /// Every operator enabled in some expanded state.
    pub(crate) op_enabled: Vec<bool>,
    /// Per word: the connection fields that were NEW in some stored state.
    pub(crate) ever_new: Vec<u64>,
    /// The first firing found that overwrites a NEW token: (state, outcome).
    pub(crate) overwrite: Option<(u32, usize)>,
    /// The first expanded state with no operator enabled and a NEW connection.
    pub(crate) first_deadlock: Option<u32>,
    /// Whether the state budget stopped the exploration.
    pub(crate) budget_hit: bool,
    /// Every edge found strictly increases the potential (see `Outcome::grows`): no cycle.
    pub(crate) all_grow: bool,
    /// States the cycle proviso expanded fully after the fact (docs/semantics.md §8.6).
    pub(crate) proviso_expansions: u64,
    /// Where the time of a full exploration went (none counted for a reduced one).
    pub(crate) timing: Timing,
}

impl Explored {
    pub(crate) fn new(model: &Model<'_>, edges: Option<Edges>) -> Self {
        Explored {
            store: Store::new(model.words),
            expanded: 0,
            edges,
            n_edges: 0,
            op_enabled: vec![false; model.ops.len()],
            ever_new: vec![0; model.words],
            overwrite: None,
            first_deadlock: None,
            budget_hit: false,
            all_grow: true,
            proviso_expansions: 0,
            timing: Timing::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.store.len()
    }

    pub(crate) fn reduced(&self) -> bool {
        self.edges.is_some()
    }

    pub(crate) fn state(&self, id: u32) -> &[u64] {
        self.store.state(id)
    }

    /// Bytes held by the exploration's data structures (allocated capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.store.bytes() + self.edges.as_ref().map_or(0, Edges::bytes)
    }

    /// The number of state `s`, if it was stored.
    pub(crate) fn find(&self, s: &[u64]) -> Option<u32> {
        self.store.find(s, super::store::hash(s)).ok()
    }

    /// The path of discovery from the initial state to `id`, as state numbers (initial first).
    pub(crate) fn path_to(&self, id: u32) -> Vec<u32> {
        self.store.path_to(id)
    }

    /// Finds `s` (hash `h`) or stores it with parent `parent`; `None` when it is new and the
    /// budget of `max_states` is used.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        model: &Model<'_>,
        s: &[u64],
        h: u64,
        parent: u32,
        max_states: usize,
    ) -> Option<u32> {
        let slot = match self.store.find(s, h) {
            Ok(id) => return Some(id),
            Err(slot) => slot,
        };
        if self.store.len() >= max_states {
            return None;
        }
        for (e, (&w, &m)) in self.ever_new.iter_mut().zip(s.iter().zip(&model.new_mask)) {
            *e |= w & !(w >> 1) & m;
        }
        Some(self.store.put(slot, s, h, parent))
    }

    /// The successors of state `id` in the explored graph (none if it was not expanded):
    /// stored ones, or, for a full exploration, every outcome's target found in the store.
    pub(crate) fn successors(&self, model: &mut Model<'_>, id: u32, out: &mut Vec<u32>) {
        out.clear();
        if id as usize >= self.expanded {
            return;
        }
        if let Some(e) = &self.edges {
            let i = id as usize;
            out.extend_from_slice(&e.succ[e.start[i] as usize..e.start[i + 1] as usize]);
            if let Some(more) = e.extra.get(&id) {
                out.extend_from_slice(more);
            }
            return;
        }
        let s = self.state(id).to_vec();
        let mut next = s.clone();
        let mut ops = Vec::new();
        model.candidates(&s, &mut ops);
        for o in ops {
            let (start, len) = model.outcomes_in(o as usize, &s);
            for k in start..start + len {
                next.copy_from_slice(&s);
                model.apply(k, &mut next);
                if let Ok(t) = self.store.find(&next, hash(&next)) {
                    out.push(t);
                }
            }
        }
    }

    /// Whether `id` was expanded and nothing is enabled there.
    pub(crate) fn terminal(&self, model: &mut Model<'_>, id: u32) -> bool {
        if id as usize >= self.expanded {
            return false;
        }
        if let Some(e) = &self.edges {
            let i = id as usize;
            return e.start[i] == e.start[i + 1] && !e.extra.contains_key(&id);
        }
        let s = self.state(id).to_vec();
        let mut ops = Vec::new();
        model.candidates(&s, &mut ops);
        ops.into_iter()
            .all(|o| model.outcomes_in(o as usize, &s).1 == 0)
    }
}

/// One strongly connected component, as [`tarjan`] reports it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scc {
    /// More than one state, or a state with an edge to itself.
    pub(crate) cyclic: bool,
    /// No edge leaves it.
    pub(crate) bottom: bool,
    /// Some state reachable from it satisfies the `target` predicate.
    pub(crate) reaches_target: bool,
}

/// Tarjan's strongly connected components of the graph of `n` states with successors `succ`,
/// iteratively. Components are reported to `on_scc` (members, facts) as they complete, which
/// is sinks first; `target(state, has_successors)` says which states are targets, so that each
/// component knows whether it reaches one.
pub(crate) fn tarjan(
    n: usize,
    mut succ: impl FnMut(u32, &mut Vec<u32>),
    mut target: impl FnMut(u32, bool) -> bool,
    mut on_scc: impl FnMut(&[u32], Scc),
) {
    const UNSEEN: u32 = u32::MAX;
    const ON_STACK: u8 = 1;
    const REACH: u8 = 2; // this state is a target, or has an edge to a completed component that reaches one
    const EXIT: u8 = 4; // has an edge to another component
    const SELF: u8 = 8;
    const DONE_REACH: u8 = 16; // its completed component reaches a target
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut flags = vec![0u8; n];
    let mut stack: Vec<u32> = Vec::new();
    // DFS frames: (state, end of its successors in `buf`, next position in `buf`).
    let mut calls: Vec<(u32, usize, usize)> = Vec::new();
    let mut buf: Vec<u32> = Vec::new();
    let mut tmp: Vec<u32> = Vec::new();
    let mut counter = 0u32;
    let mut visit = |v: u32,
                     calls: &mut Vec<(u32, usize, usize)>,
                     buf: &mut Vec<u32>,
                     stack: &mut Vec<u32>,
                     index: &mut [u32],
                     low: &mut [u32],
                     flags: &mut [u8]| {
        index[v as usize] = counter;
        low[v as usize] = counter;
        counter += 1;
        stack.push(v);
        flags[v as usize] |= ON_STACK;
        succ(v, &mut tmp);
        if target(v, !tmp.is_empty()) {
            flags[v as usize] |= REACH;
        }
        let start = buf.len();
        buf.extend_from_slice(&tmp);
        calls.push((v, buf.len(), start));
    };
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        visit(
            root, &mut calls, &mut buf, &mut stack, &mut index, &mut low, &mut flags,
        );
        while let Some(&(v, end, pos)) = calls.last() {
            if pos < end {
                if let Some(top) = calls.last_mut() {
                    top.2 += 1;
                }
                let w = buf[pos];
                if w == v {
                    flags[v as usize] |= SELF;
                }
                if index[w as usize] == UNSEEN {
                    visit(
                        w, &mut calls, &mut buf, &mut stack, &mut index, &mut low, &mut flags,
                    );
                } else if flags[w as usize] & ON_STACK != 0 {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                } else {
                    // `w`'s component is complete, and is not `v`'s.
                    flags[v as usize] |= EXIT;
                    if flags[w as usize] & DONE_REACH != 0 {
                        flags[v as usize] |= REACH;
                    }
                }
                continue;
            }
            calls.pop();
            let start = calls.last().map_or(0, |&(_, end, _)| end);
            buf.truncate(start);
            if low[v as usize] == index[v as usize] {
                let at = stack.iter().rposition(|&x| x == v).unwrap_or(0);
                let members = &stack[at..];
                let mut scc = Scc {
                    cyclic: members.len() > 1 || flags[v as usize] & SELF != 0,
                    bottom: true,
                    reaches_target: false,
                };
                for &m in members {
                    let f = flags[m as usize];
                    scc.bottom &= f & EXIT == 0;
                    scc.reaches_target |= f & REACH != 0;
                }
                for &m in members {
                    flags[m as usize] &= !ON_STACK;
                    if scc.reaches_target {
                        flags[m as usize] |= DONE_REACH;
                    }
                }
                on_scc(members, scc);
                stack.truncate(at);
            }
            if let Some(&(p, _, _)) = calls.last() {
                if flags[v as usize] & ON_STACK != 0 {
                    low[p as usize] = low[p as usize].min(low[v as usize]);
                } else {
                    flags[p as usize] |= EXIT;
                    if flags[v as usize] & DONE_REACH != 0 {
                        flags[p as usize] |= REACH;
                    }
                }
            }
        }
    }
}

/// A shortest non-empty path from `from` back to itself, as state numbers (`from` first and
/// last), if there is one.
pub(crate) fn shortest_cycle(
    from: u32,
    mut succ: impl FnMut(u32, &mut Vec<u32>),
) -> Option<Vec<u32>> {
    let mut parent: HashMap<u32, u32> = HashMap::new();
    let mut queue = VecDeque::new();
    let mut out = Vec::new();
    queue.push_back(from);
    while let Some(v) = queue.pop_front() {
        succ(v, &mut out);
        for &w in &out {
            if w == from {
                // Walk back from `v` to `from`, then reverse: from, ..., v, from.
                let mut rev = vec![from, v];
                let mut cur = v;
                while cur != from {
                    let Some(&p) = parent.get(&cur) else { break };
                    rev.push(p);
                    cur = p;
                }
                rev.reverse();
                return Some(rev);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    None
}

/// Whether some state satisfying `hit` is reachable from `from`.
pub(crate) fn forward_reaches(
    from: u32,
    mut succ: impl FnMut(u32, &mut Vec<u32>),
    mut hit: impl FnMut(u32) -> bool,
) -> bool {
    let mut seen: std::collections::HashSet<u32> = std::collections::HashSet::new();
    let mut stack = vec![from];
    seen.insert(from);
    let mut out = Vec::new();
    while let Some(v) = stack.pop() {
        if hit(v) {
            return true;
        }
        succ(v, &mut out);
        for &w in &out {
            if seen.insert(w) {
                stack.push(w);
            }
        }
    }
    false
}
