//! The full exploration (`--reduce none`) on several threads (docs/semantics.md §8.8).
//!
//! Breadth-first, one *level* at a time: the level is the states stored but not expanded yet
//! (numbers `expanded..len`), and every state a level discovers is numbered after it. The
//! result is the single-threaded exploration's, state for state: the same numbers, the same
//! parents (so the same shortest witnesses), the same counts. Each level goes through four
//! phases:
//!
//! 1. **expand** (every thread, contiguous shares of the level, several per thread: a thread
//!    that finishes its share early takes the next one): each state's successors, in
//!    the order one thread would fire them, each with its *position* (the number of the state
//!    it comes from, its rank among that state's successors), sent to the *partition* its hash
//!    chooses. The threads read the model's memoised outcomes ([`View`]) and never call an
//!    operator; a state that needs an outcome not computed yet is left to the thread that owns
//!    the model, which expands it afterwards.
//! 2. **absorb** (every thread, some partitions; each partition has its own hash table in the
//!    [`Store`]): each successor is looked up; one not stored yet is kept once, with the
//!    earliest position it was found at, under a provisional number.
//! 3. **number** (every thread, `numbering.rs`): the new states of all partitions, merged by
//!    earliest position, get their numbers and are stored with the state of that position as
//!    parent — exactly where one thread, expanding the level in order, would have found each
//!    first. The state budget is applied here, in the same order.
//! 4. **settle** (every thread, some partitions): the provisional numbers in the tables become
//!    the real ones.
//!
//! Between the phases one thread adds up what the others found (`timing.rs` counts that time).

use std::ops::Range;

use super::explore::{Explored, Progress};
use super::model::{Model, Outcomes, View};
use super::numbering::{Fresh, number};
use super::store::{ROOT, States, Store, Table, hash, part_of, push_state};
use super::timing::Timing;
use crate::connection::NONE;

/// How levels are shared out. Tests lower both figures so that small nets take every path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Split {
    /// Below this many states per thread, a level is expanded by fewer threads (by one, under
    /// twice this): starting threads costs more than it saves.
    pub(crate) min_share: usize,
    /// An exploration has one partition until it stores this many states, then [`PARTS`].
    pub(crate) parts_from: usize,
}

impl Split {
    pub(crate) const DEFAULT: Split = Split {
        min_share: 2048,
        parts_from: 1 << 16,
    };
}
/// Partitions of a large exploration, whatever the number of threads: each partition's table
/// is then small enough to stay in a core's cache while its successors are looked up.
const PARTS: usize = 64;

/// Shares of a level per thread (see [`Timing::run`]).
const SHARES: usize = 8;

/// Levels of at least this many states have their sections timed in thread CPU time (see
/// `timing.rs`), smaller ones by the wall clock.
const TIMED_LEVEL: usize = 4096;

/// The thread count of "every core".
pub(crate) fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Successors bound for one partition: packed states and their positions
/// (`state << 32 | rank`).
#[derive(Default)]
struct Bucket {
    words: Vec<u64>,
    keys: Vec<u64>,
}

/// What expanding part of a level found.
struct Expansion {
    buckets: Vec<Bucket>,
    /// States whose outcomes the model has not computed yet: not expanded.
    deferred: Vec<u32>,
    edges: u64,
    all_grow: bool,
    op_enabled: Vec<bool>,
    /// The first firing that overwrites a NEW token: (state, outcome).
    overwrite: Option<(u32, usize)>,
    first_deadlock: Option<u32>,
    // Scratch space of one state's expansion: the candidates, the outcomes (operator, first,
    // count) of those enabled, a successor of more words than `expand_words` unrolls.
    cands: Vec<u32>,
    ranges: Vec<(u32, u32, u32)>,
    next: Vec<u64>,
}

impl Expansion {
    fn new(parts: usize, ops: usize) -> Self {
        Expansion {
            buckets: (0..parts).map(|_| Bucket::default()).collect(),
            deferred: Vec::new(),
            edges: 0,
            all_grow: true,
            op_enabled: vec![false; ops],
            overwrite: None,
            first_deadlock: None,
            cands: Vec::new(),
            ranges: Vec::new(),
            next: Vec::new(),
        }
    }

    fn clear(&mut self, parts: usize) {
        self.buckets.resize_with(parts, Bucket::default);
        for b in &mut self.buckets {
            b.words.clear();
            b.keys.clear();
        }
        self.deferred.clear();
        self.edges = 0;
        self.all_grow = true;
        self.op_enabled.fill(false);
        self.overwrite = None;
        self.first_deadlock = None;
    }

    /// Expands state `id` (`s`): its successors go to the buckets; `false` (and nothing
    /// recorded) when `m` lacks an outcome.
    fn expand(&mut self, m: &mut impl Outcomes, id: u32, s: &[u64]) -> bool {
        // The usual few words a state get code of their own (see `absorb`).
        match s.len() {
            1 => self.expand_words::<1>(m, id, s),
            2 => self.expand_words::<2>(m, id, s),
            3 => self.expand_words::<3>(m, id, s),
            4 => self.expand_words::<4>(m, id, s),
            _ => self.expand_words::<0>(m, id, s),
        }
    }

    /// [`expand`](Self::expand) for states of `W` words (`0`: any number).
    #[inline(always)]
    fn expand_words<const W: usize>(&mut self, m: &mut impl Outcomes, id: u32, s: &[u64]) -> bool {
        m.candidates(s, &mut self.cands);
        self.ranges.clear();
        for &o in &self.cands {
            let Some((start, len)) = m.outcomes_in(o as usize, s) else {
                return false;
            };
            if len > 0 {
                self.ranges.push((o, start as u32, len as u32));
            }
        }
        let parts = self.buckets.len();
        let mut rank = 0u64;
        let mut buf = [0u64; 4];
        for &(o, start, len) in &self.ranges {
            self.op_enabled[o as usize] = true;
            for k in start as usize..(start + len) as usize {
                let oc = m.outcome(k);
                self.all_grow &= oc.grows;
                if self.overwrite.is_none() && oc.overwrites != NONE {
                    self.overwrite = Some((id, k));
                }
                let t: &[u64] = if W == 0 {
                    self.next.clear();
                    self.next.extend_from_slice(s);
                    m.apply(k, &mut self.next);
                    &self.next
                } else {
                    buf[..W].copy_from_slice(&s[..W]);
                    m.apply(k, &mut buf[..W]);
                    &buf[..W]
                };
                let b = &mut self.buckets[part_of(hash(t), parts)];
                push_state(&mut b.words, t);
                b.keys.push((id as u64) << 32 | rank);
                rank += 1;
            }
        }
        if rank == 0 && self.first_deadlock.is_none() && m.any_new(s) {
            self.first_deadlock = Some(id);
        }
        self.edges += rank;
        true
    }

    /// Expands the states `range` with the view (phase 1).
    fn expand_range(&mut self, view: &mut View<'_>, states: &States, range: Range<usize>) {
        for id in range {
            if !self.expand(view, id as u32, states.state(id as u32)) {
                self.deferred.push(id as u32);
            }
        }
    }
}

/// Looks up, in partition `q`'s table, every successor the expansions sent there, keeping
/// each new one once with its earliest position (phase 2).
fn absorb(
    table: &mut Table,
    id_mask: u32,
    states: &States,
    base: u32,
    outs: &[Expansion],
    q: usize,
    fresh: &mut Fresh,
) {
    // The usual few words a state get code of their own: comparisons and hashes unrolled.
    match states.words() {
        1 => absorb_words::<1>(table, id_mask, states, base, outs, q, fresh),
        2 => absorb_words::<2>(table, id_mask, states, base, outs, q, fresh),
        3 => absorb_words::<3>(table, id_mask, states, base, outs, q, fresh),
        4 => absorb_words::<4>(table, id_mask, states, base, outs, q, fresh),
        _ => absorb_words::<0>(table, id_mask, states, base, outs, q, fresh),
    }
}

/// [`absorb`] for states of `W` words (`0`: any number).
fn absorb_words<const W: usize>(
    table: &mut Table,
    id_mask: u32,
    states: &States,
    base: u32,
    outs: &[Expansion],
    q: usize,
    fresh: &mut Fresh,
) {
    const GROUP: usize = 16;
    let words = if W == 0 { states.words() } else { W };
    let state = |id: u32| -> &[u64] {
        let s = states.state(id);
        if W == 0 { s } else { &s[..W] }
    };
    fresh.clear();
    let mut hashes = [0u64; GROUP];
    for out in outs {
        let b = &out.buckets[q];
        let groups = b.words.chunks(GROUP * words).zip(b.keys.chunks(GROUP));
        for (group, keys) in groups {
            // The table loads of a group first, so that they wait for memory together.
            let mut touched = 0u32;
            for (h, s) in hashes.iter_mut().zip(group.chunks_exact(words)) {
                *h = hash(s);
                touched ^= table.touch(*h);
            }
            std::hint::black_box(touched);
            for ((&h, s), &key) in hashes.iter().zip(group.chunks_exact(words)).zip(keys) {
                let tag = ((h >> 32) as u32) & !id_mask;
                let fw = &fresh.words;
                let found = table.find(h, tag, id_mask, |id| {
                    let t = if id < base {
                        state(id)
                    } else {
                        let l = (id - base) as usize;
                        &fw[l * words..(l + 1) * words]
                    };
                    t == s
                });
                match found {
                    Ok(id) if id >= base => {
                        let l = (id - base) as usize;
                        fresh.keys[l] = fresh.keys[l].min(key);
                    }
                    Ok(_) => {}
                    Err(slot) => {
                        let l = fresh.keys.len() as u32;
                        push_state(&mut fresh.words, s);
                        fresh.keys.push(key);
                        fresh.slots.push(slot as u32);
                        if table.fill(slot, tag | (base + l)) {
                            let Fresh {
                                words: fw, slots, ..
                            } = &mut *fresh;
                            table.grow(
                                id_mask,
                                |id| {
                                    if id < base {
                                        hash(state(id))
                                    } else {
                                        let l = (id - base) as usize;
                                        hash(&fw[l * words..(l + 1) * words])
                                    }
                                },
                                |id, i| {
                                    if id >= base {
                                        slots[(id - base) as usize] = i as u32;
                                    }
                                },
                            );
                        }
                    }
                }
            }
        }
    }
    fresh.sort();
}

/// Gives partition `q`'s new states their numbers in its table (phase 4).
fn settle(table: &mut Table, id_mask: u32, fresh: &Fresh) {
    for (l, &slot) in fresh.slots.iter().enumerate() {
        let v = &mut table.slots[slot as usize];
        *v = (*v & !id_mask) | fresh.id(l);
    }
}

/// Explores breadth-first from the initial state every firing of every enabled operator,
/// storing at most `max_states` states, on up to `threads` threads (0: one per core).
pub(crate) fn explore_full(
    model: &mut Model<'_>,
    max_states: u64,
    threads: usize,
    progress: &mut dyn FnMut(&Progress),
) -> Explored {
    explore_split(model, max_states, threads, Split::DEFAULT, progress)
}

/// [`explore_full`], levels shared out as `split` says.
pub(crate) fn explore_split(
    model: &mut Model<'_>,
    max_states: u64,
    threads: usize,
    split: Split,
    progress: &mut dyn FnMut(&Progress),
) -> Explored {
    let threads = if threads == 0 { all_cores() } else { threads }.clamp(1, 1024);
    let max_states = max_states.clamp(1, u32::MAX as u64 - 1) as usize;
    let mut parts = 1;
    let mut ex = Explored::new(model, None);
    let initial = model.initial.clone();
    ex.insert(model, &initial, hash(&initial), ROOT, max_states);

    let n_ops = model.ops.len();
    // Per share of a level, then one for the deferred states.
    let mut outs: Vec<Expansion> = Vec::new();
    let mut fresh: Vec<Fresh> = (0..parts).map(|_| Fresh::default()).collect();
    let mut cur = vec![0u64; model.words];
    let mut reported = 0usize;
    let mut timing = Timing::default();
    while ex.expanded < ex.len() {
        let (fs, fe) = (ex.expanded, ex.len());
        let workers = threads.min((fe - fs) / split.min_share.max(1)).max(1);
        timing.precise = fe - fs >= TIMED_LEVEL;
        let mark = timing.mark();
        if parts == 1 && fe >= split.parts_from {
            parts = PARTS;
            ex.store.rebuild_tables(parts);
            fresh.resize_with(parts, Fresh::default);
        }
        // More shares than threads, so that one finishing early takes more.
        let shares = if workers > 1 { workers * SHARES } else { 1 };
        while outs.len() < shares + 1 {
            outs.push(Expansion::new(parts, n_ops));
        }
        timing.serial_since(mark);
        // 1. Expand.
        {
            let view = model.view();
            let states = &ex.store.states;
            timing.run(&mut outs[..shares], workers, |w, out| {
                out.clear(parts);
                let range = fs + (fe - fs) * w / shares..fs + (fe - fs) * (w + 1) / shares;
                out.expand_range(&mut view.clone(), states, range);
            });
        }
        let mark = timing.mark();
        let (expanded, rest) = outs.split_at_mut(shares);
        let late = &mut rest[0];
        late.clear(parts);
        for out in expanded.iter() {
            for &id in &out.deferred {
                cur.copy_from_slice(ex.store.state(id));
                late.expand(model, id, &cur);
            }
        }
        let outs_used = &outs[..shares + 1];
        let base = fe as u32;
        let found: u64 = outs_used
            .iter()
            .flat_map(|o| o.buckets.iter())
            .map(|b| b.keys.len() as u64)
            .sum();
        ex.store.reserve_ids(fe as u64 + found);
        timing.serial_since(mark);
        // 2. Absorb.
        {
            let Store {
                states,
                parts: tables,
                id_mask,
            } = &mut ex.store;
            let (states, id_mask) = (&*states, *id_mask);
            let mut work: Vec<(&mut Table, &mut Fresh)> =
                tables.iter_mut().zip(fresh.iter_mut()).collect();
            timing.run(&mut work, workers, |q, (table, fresh)| {
                absorb(table, id_mask, states, base, outs_used, q, fresh);
            });
        }
        // 3. Number.
        let cut = number(
            &mut ex,
            model,
            &fresh,
            fs..fe,
            workers,
            max_states,
            &mut timing,
        );
        if let Some(key) = cut {
            let mark = timing.mark();
            redo_to_cut(&mut ex, model, fs, key);
            ex.store.rebuild_tables(parts);
            timing.serial_since(mark);
            break;
        }
        // 4. Settle.
        {
            let id_mask = ex.store.id_mask;
            let mut work: Vec<(&mut Table, &mut Fresh)> =
                ex.store.parts.iter_mut().zip(fresh.iter_mut()).collect();
            timing.run(&mut work, workers, |_, (table, fresh)| {
                settle(table, id_mask, fresh);
            });
        }
        let mark = timing.mark();
        for out in outs_used {
            fold(&mut ex, out);
        }
        ex.expanded = fe;
        if ex.expanded - reported >= 1 << 16 {
            reported = ex.expanded;
            progress(&progress_of(&ex, max_states));
        }
        timing.serial_since(mark);
    }
    ex.timing = timing;
    progress(&progress_of(&ex, max_states));
    ex
}

/// Adds what expanding part of a level found to the exploration's facts.
fn fold(ex: &mut Explored, out: &Expansion) {
    ex.n_edges += out.edges;
    ex.all_grow &= out.all_grow;
    for (e, &o) in ex.op_enabled.iter_mut().zip(&out.op_enabled) {
        *e |= o;
    }
    if let Some((s, k)) = out.overwrite
        && ex.overwrite.is_none_or(|(t, _)| s < t)
    {
        ex.overwrite = Some((s, k));
    }
    if let Some(s) = out.first_deadlock
        && ex.first_deadlock.is_none_or(|t| s < t)
    {
        ex.first_deadlock = Some(s);
    }
}

/// The budget ran out at position `key` of the level that starts at `fs`: the facts are those
/// of one thread that stops there — the states before the position's state expanded, that
/// state not (its firings before the position seen, its edges not counted).
fn redo_to_cut(ex: &mut Explored, model: &mut Model<'_>, fs: usize, key: u64) {
    let stop = (key >> 32) as usize;
    let rank = (key & 0xffff_ffff) as usize;
    let mut scratch = Expansion::new(1, model.ops.len());
    let mut cur = vec![0u64; model.words];
    for id in fs..stop {
        cur.copy_from_slice(ex.store.state(id as u32));
        scratch.expand(model, id as u32, &cur);
        scratch.buckets[0].words.clear();
        scratch.buckets[0].keys.clear();
    }
    fold(ex, &scratch);
    // The firings of the stopping state before the position: seen, not counted as edges.
    cur.copy_from_slice(ex.store.state(stop as u32));
    let mut last = Expansion::new(1, model.ops.len());
    last.expand(model, stop as u32, &cur);
    let firings = last.ranges.iter().flat_map(|&(_, k, n)| k..k + n);
    for k in firings.take(rank) {
        ex.all_grow &= model.outcomes[k as usize].grows;
    }
    for (e, &o) in ex.op_enabled.iter_mut().zip(&last.op_enabled) {
        *e |= o;
    }
    ex.expanded = stop;
    ex.budget_hit = true;
}

fn progress_of(ex: &Explored, max_states: usize) -> Progress {
    Progress {
        states: ex.len() as u64,
        expanded: ex.expanded as u64,
        edges: ex.n_edges,
        max_states: max_states as u64,
    }
}
