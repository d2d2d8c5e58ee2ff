//! Breadth-first exploration of the control abstraction, and the graph analyses on its result.
//!
//! States are numbered in discovery order, so a state's number never decreases with its depth
//! and the BFS tree gives shortest witnesses. Each state is stored once, packed, in one arena;
//! a hash table of state numbers (open addressing, linear probing, a 32-bit tag per slot)
//! finds them; successors are kept as a compressed adjacency list for the analyses that need
//! the whole graph (option to complete, cycles).

use super::model::Model;
use crate::connection::NONE;

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

/// The hash set of states, open addressing with linear probing. A slot is `1 + words` words:
/// the state number (or `FREE`), then the state itself, so a lookup that finds its state reads
/// one slot and nothing else.
pub(crate) struct Table {
    slots: Vec<u64>,
    stride: usize,
    mask: usize,
    len: usize,
}

const FREE: u64 = u64::MAX;

/// States expanded together (see `explore`).
const BATCH: usize = 16;

#[inline]
pub(crate) fn hash(s: &[u64]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    for &w in s {
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    // Final avalanche (murmur3 fmix64) so the low bits used as an index are well mixed.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Table {
    pub(crate) fn new(words: usize, expected: usize) -> Self {
        let cap = (expected * 2).next_power_of_two().max(64);
        let stride = words + 1;
        let mut slots = vec![0; cap * stride];
        for i in 0..cap {
            slots[i * stride] = FREE;
        }
        Table {
            slots,
            stride,
            mask: cap - 1,
            len: 0,
        }
    }

    /// Loads the slot where a lookup of hash `h` starts, so that the lookups of a state's
    /// successors wait for memory together rather than one after the other.
    #[inline]
    fn touch(&self, h: u64) -> u64 {
        let at = (h as usize & self.mask) * self.stride;
        // First and last word: a slot may straddle two cache lines.
        self.slots[at] ^ self.slots[at + self.stride - 1]
    }

    /// The number of state `s` (hash `h`), or the slot where it would go.
    #[inline]
    pub(crate) fn find(&self, s: &[u64], h: u64) -> Result<u32, usize> {
        let mut i = h as usize & self.mask;
        loop {
            let at = i * self.stride;
            let meta = self.slots[at];
            if meta == FREE {
                return Err(i);
            }
            // Word by word: for a few words this beats a call to `memcmp`.
            if self.slots[at + 1..at + self.stride]
                .iter()
                .zip(s)
                .all(|(a, b)| a == b)
            {
                return Ok(meta as u32);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    pub(crate) fn put(&mut self, slot: usize, s: &[u64], id: u32) {
        let at = slot * self.stride;
        self.slots[at] = id as u64;
        self.slots[at + 1..at + self.stride].copy_from_slice(s);
        self.len += 1;
        if self.len * 8 > (self.mask + 1) * 5 {
            self.grow();
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let cap = (self.mask + 1) * 2;
        self.slots = vec![0; cap * self.stride];
        for i in 0..cap {
            self.slots[i * self.stride] = FREE;
        }
        self.mask = cap - 1;
        for slot in old.chunks_exact(self.stride) {
            if slot[0] != FREE {
                let key = &slot[1..];
                let mut i = hash(key) as usize & self.mask;
                while self.slots[i * self.stride] != FREE {
                    i = (i + 1) & self.mask;
                }
                let at = i * self.stride;
                self.slots[at..at + self.stride].copy_from_slice(slot);
            }
        }
    }
}

/// The explored reachability graph.
pub(crate) struct Graph {
    pub(crate) words: usize,
    /// States, `words` words each, in discovery order.
    pub(crate) arena: Vec<u64>,
    /// BFS-tree parent of each state (`NONE` for the initial state).
    pub(crate) parent: Vec<u32>,
    /// Per expanded state, where its successors start in `succ` (one more entry at the end).
    pub(crate) succ_start: Vec<u64>,
    pub(crate) succ: Vec<u32>,
    /// Per expanded state: no operator enabled.
    pub(crate) terminal: Vec<bool>,
    /// Every operator enabled in some explored state.
    pub(crate) op_enabled: Vec<bool>,
    /// Per word: the connection fields that were NEW in some stored state.
    pub(crate) ever_new: Vec<u64>,
    /// The first firing found that overwrites a NEW token: (state, outcome).
    pub(crate) overwrite: Option<(u32, usize)>,
    /// Whether the state budget stopped the exploration.
    pub(crate) budget_hit: bool,
    /// Every edge found strictly increases the potential (see `Outcome::grows`): no cycle.
    pub(crate) all_grow: bool,
    table_bytes: usize,
}

impl Graph {
    pub(crate) fn len(&self) -> usize {
        self.parent.len()
    }

    pub(crate) fn expanded(&self) -> usize {
        self.terminal.len()
    }

    pub(crate) fn edges(&self) -> u64 {
        self.succ.len() as u64
    }

    pub(crate) fn state(&self, id: u32) -> &[u64] {
        let i = id as usize * self.words;
        &self.arena[i..i + self.words]
    }

    pub(crate) fn successors(&self, id: u32) -> &[u32] {
        let id = id as usize;
        if id >= self.expanded() {
            return &[];
        }
        &self.succ[self.succ_start[id] as usize..self.succ_start[id + 1] as usize]
    }

    /// Bytes held by the exploration's data structures (allocated capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.arena.capacity() * 8
            + self.parent.capacity() * 4
            + self.succ_start.capacity() * 8
            + self.succ.capacity() * 4
            + self.terminal.capacity()
            + self.table_bytes
    }

    /// The BFS-tree path from the initial state to `id`, as state numbers (initial first).
    pub(crate) fn path_to(&self, id: u32) -> Vec<u32> {
        let mut path = vec![id];
        let mut cur = id;
        while self.parent[cur as usize] != NONE {
            cur = self.parent[cur as usize];
            path.push(cur);
        }
        path.reverse();
        path
    }

    /// Depth of state `id` (firings from the initial state).
    pub(crate) fn depth(&self, id: u32) -> usize {
        self.path_to(id).len() - 1
    }
}

/// Explores breadth-first from the initial state, storing at most `max_states` states.
pub(crate) fn explore(
    model: &mut Model<'_>,
    max_states: u64,
    progress: &mut dyn FnMut(&Progress),
) -> Graph {
    let words = model.words;
    let max_states = max_states.clamp(1, u32::MAX as u64 - 1) as usize;
    let mut table = Table::new(words, max_states.min(1 << 10));
    let mut g = Graph {
        words,
        arena: Vec::new(),
        parent: Vec::new(),
        succ_start: vec![0],
        succ: Vec::new(),
        terminal: Vec::new(),
        op_enabled: vec![false; model.ops.len()],
        ever_new: vec![0; words],
        overwrite: None,
        budget_hit: false,
        all_grow: true,
        table_bytes: 0,
    };
    let initial = model.initial.clone();
    insert(
        &mut g,
        &mut table,
        model,
        &initial,
        hash(&initial),
        NONE,
        max_states,
    );

    let mut cur = vec![0u64; words];
    // The successors of a batch of states being expanded: states, hashes, outcomes, and where
    // each state's successors end. Computing a whole batch before looking any of them up lets
    // the hash-table loads of all of them be in flight at once.
    let mut next: Vec<u64> = Vec::new();
    let mut hashes: Vec<u64> = Vec::new();
    let mut which: Vec<u32> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let mut id = 0usize;
    'states: while id < g.len() {
        let batch_end = g.len().min(id + BATCH);
        next.clear();
        hashes.clear();
        which.clear();
        ends.clear();
        for b in id..batch_end {
            cur.copy_from_slice(&g.arena[b * words..(b + 1) * words]);
            for o in 0..model.ops.len() {
                let (start, len) = model.outcomes_in(o, &cur);
                if len > 0 {
                    g.op_enabled[o] = true;
                }
                for k in start..start + len {
                    let at = next.len();
                    next.extend_from_slice(&cur);
                    model.apply(k, &mut next[at..]);
                    hashes.push(hash(&next[at..]));
                    which.push(k as u32);
                }
            }
            ends.push(hashes.len());
        }
        let mut touched = 0u64;
        for &h in &hashes {
            touched ^= table.touch(h);
        }
        std::hint::black_box(touched);
        let mut j = 0;
        for &end in &ends {
            let edges_before = g.succ.len();
            let first = j;
            while j < end {
                let s = &next[j * words..(j + 1) * words];
                let Some(to) = insert(
                    &mut g, &mut table, model, s, hashes[j], id as u32, max_states,
                ) else {
                    // Budget used: this state's successors are incomplete; it stays unexpanded.
                    g.succ.truncate(edges_before);
                    g.budget_hit = true;
                    break 'states;
                };
                g.succ.push(to);
                let k = which[j] as usize;
                let oc = &model.outcomes[k];
                g.all_grow &= oc.grows;
                if g.overwrite.is_none() && oc.overwrites != NONE {
                    g.overwrite = Some((id as u32, k));
                }
                j += 1;
            }
            g.terminal.push(end == first);
            g.succ_start.push(g.succ.len() as u64);
            id += 1;
            if id & 0xffff == 0 {
                progress(&Progress {
                    states: g.len() as u64,
                    expanded: id as u64,
                    edges: g.succ.len() as u64,
                    max_states: max_states as u64,
                });
            }
        }
    }
    g.table_bytes = table.slots.capacity() * 8;
    progress(&Progress {
        states: g.len() as u64,
        expanded: g.expanded() as u64,
        edges: g.succ.len() as u64,
        max_states: max_states as u64,
    });
    g
}

/// Finds `s` (hash `h`) or stores it; `None` when it is new and the budget is used.
#[inline]
fn insert(
    g: &mut Graph,
    table: &mut Table,
    model: &Model<'_>,
    s: &[u64],
    h: u64,
    parent: u32,
    max_states: usize,
) -> Option<u32> {
    let slot = match table.find(s, h) {
        Ok(id) => return Some(id),
        Err(slot) => slot,
    };
    let id = g.len();
    if id >= max_states {
        return None;
    }
    g.arena.extend_from_slice(s);
    g.parent.push(parent);
    for (e, (&w, &m)) in g.ever_new.iter_mut().zip(s.iter().zip(&model.new_mask)) {
        *e |= w & !(w >> 1) & m;
    }
    table.put(slot, s, id as u32);
    Some(id as u32)
}

/// Which states can reach a state `is_target` holds for.
pub(crate) fn coreachable(
    g: &Graph,
    model: &Model<'_>,
    is_target: impl Fn(u32) -> bool,
) -> Vec<bool> {
    if g.all_grow {
        coreachable_acyclic(g, model, is_target)
    } else {
        coreachable_by_predecessors(g, (0..g.len() as u32).filter(|&v| is_target(v)))
    }
}

/// On a graph whose every edge increases the potential, one pass in descending potential
/// order sees each state's successors before the state itself.
fn coreachable_acyclic(g: &Graph, model: &Model<'_>, is_target: impl Fn(u32) -> bool) -> Vec<bool> {
    let n = g.len();
    let pot: Vec<u32> = (0..n as u32).map(|v| model.potential(g.state(v))).collect();
    let max = pot.iter().copied().max().unwrap_or(0) as usize;
    // Counting sort of the states by potential.
    let mut start = vec![0u32; max + 2];
    for &p in &pot {
        start[p as usize + 1] += 1;
    }
    for i in 0..=max {
        start[i + 1] += start[i];
    }
    let mut order = vec![0u32; n];
    for (v, &p) in pot.iter().enumerate() {
        order[start[p as usize] as usize] = v as u32;
        start[p as usize] += 1;
    }
    drop(pot);
    let mut can = vec![false; n];
    for &v in order.iter().rev() {
        can[v as usize] = is_target(v) || g.successors(v).iter().any(|&w| can[w as usize]);
    }
    can
}

/// Reverse reachability from `targets` over the explored graph's predecessor lists.
fn coreachable_by_predecessors(g: &Graph, targets: impl Iterator<Item = u32>) -> Vec<bool> {
    let n = g.len();
    // Reverse adjacency in compressed form.
    let mut start = vec![0u32; n + 1];
    for &t in &g.succ {
        start[t as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut pred = vec![0u32; g.succ.len()];
    for v in 0..g.expanded() {
        for &t in g.successors(v as u32) {
            pred[fill[t as usize] as usize] = v as u32;
            fill[t as usize] += 1;
        }
    }
    drop(fill);
    let mut seen = vec![false; n];
    let mut queue: Vec<u32> = Vec::new();
    for t in targets {
        if !seen[t as usize] {
            seen[t as usize] = true;
            queue.push(t);
        }
    }
    let mut head = 0;
    while head < queue.len() {
        let v = queue[head] as usize;
        head += 1;
        for &p in &pred[start[v] as usize..start[v + 1] as usize] {
            if !seen[p as usize] {
                seen[p as usize] = true;
                queue.push(p);
            }
        }
    }
    seen
}

/// Which states lie on a cycle: members of a strongly connected component with more than one
/// state, or with an edge to itself (iterative Tarjan).
pub(crate) fn on_cycle(g: &Graph) -> Vec<bool> {
    let n = g.len();
    if g.all_grow {
        return vec![false; n];
    }
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut cyclic = vec![false; n];
    let mut calls: Vec<(u32, usize)> = Vec::new();
    let mut counter = 0u32;
    for root in 0..n as u32 {
        if index[root as usize] != NONE {
            continue;
        }
        calls.push((root, 0));
        index[root as usize] = counter;
        low[root as usize] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut pos)) = calls.last_mut() {
            let succ = g.successors(v);
            if *pos < succ.len() {
                let w = succ[*pos];
                *pos += 1;
                if w == v {
                    cyclic[v as usize] = true;
                }
                if index[w as usize] == NONE {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    calls.push((w, 0));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent as usize] = low[parent as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 {
                    for w in members {
                        cyclic[w as usize] = true;
                    }
                }
            }
        }
    }
    cyclic
}

/// A shortest non-empty path from `from` back to itself, as state numbers (`from` first and
/// last), if there is one.
pub(crate) fn shortest_cycle(g: &Graph, from: u32) -> Option<Vec<u32>> {
    let mut parent: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let mut queue = std::collections::VecDeque::new();
    for &w in g.successors(from) {
        if w == from {
            return Some(vec![from, from]);
        }
        if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(w) {
            e.insert(from);
            queue.push_back(w);
        }
    }
    while let Some(v) = queue.pop_front() {
        for &w in g.successors(v) {
            if w == from {
                // Walk back from `v` to `from`, then reverse: from, ..., v, from.
                let mut rev = vec![from, v];
                let mut cur = v;
                while let Some(&p) = parent.get(&cur) {
                    rev.push(p);
                    if p == from {
                        break;
                    }
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
