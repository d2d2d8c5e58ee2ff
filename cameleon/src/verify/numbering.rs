//! Phase 3 of a level of the full exploration (`parallel.rs`): the level's new states, found
//! in the partitions, get their numbers in order of the earliest position each was found at,
//! with the state of that position as parent — the numbers and parents one thread expanding
//! the level in order gives. Every thread merges the new states found from its share of the
//! level's states, then writes them, with their parents, into the store at the numbers that
//! follow the shares before it: nothing here is done by one thread alone, except under a state
//! budget the level reaches (then the states are numbered one by one up to the cut).

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use super::explore::Explored;
use super::model::Model;
use super::store::{StoredRun, copy_state};
use super::timing::Timing;

/// A partition's new states of a level (phase 2), under provisional numbers `base + index`.
#[derive(Default)]
pub(crate) struct Fresh {
    pub(crate) words: Vec<u64>,
    /// Earliest position each was found at (`state << 32 | rank`).
    pub(crate) keys: Vec<u64>,
    /// Its slot in the partition's table.
    pub(crate) slots: Vec<u32>,
    /// Indices in order of `keys`.
    pub(crate) order: Vec<u32>,
    /// Its number, once given (phase 3); `u32::MAX` when the budget left it out. Written by
    /// the thread that numbers it, whichever partition it is in.
    pub(crate) ids: Vec<AtomicU32>,
}

impl Fresh {
    pub(crate) fn clear(&mut self) {
        self.words.clear();
        self.keys.clear();
        self.slots.clear();
        self.order.clear();
        self.ids.clear();
    }

    /// Orders the new states by earliest position, their numbers not given yet.
    pub(crate) fn sort(&mut self) {
        self.order.extend(0..self.keys.len() as u32);
        // Already in order unless a deferred state found a state before its first finder did.
        if !self.keys.is_sorted() {
            let keys = &self.keys;
            self.order.sort_unstable_by_key(|&l| keys[l as usize]);
        }
        self.ids
            .resize_with(self.keys.len(), || AtomicU32::new(u32::MAX));
    }

    /// The number given to new state `l`.
    #[inline]
    pub(crate) fn id(&self, l: usize) -> u32 {
        self.ids[l].load(Ordering::Relaxed)
    }
}

/// One thread's share of a level's numbering: the store's runs it writes, the (share, index)
/// of each new state in order, and the new-place bits it saw.
type Share<'a> = (Vec<StoredRun<'a>>, Vec<(u32, u32)>, Vec<u64>);

/// The new states of partitions `fresh` whose earliest position is that of a state in `from`,
/// in order of those positions, as (partition, index): a counting sort by the state of the
/// position, then each state's few successors by their rank.
fn merge(fresh: &[Fresh], from: Range<u64>, seq: &mut Vec<(u32, u32)>) {
    let parent = |f: &Fresh, l: u32| (f.keys[l as usize] >> 32) - from.start;
    let span = (from.end - from.start) as usize;
    // `starts[p + 1]`: how many come from state `from.start + p`, then where they go.
    let mut starts = vec![0u32; span + 1];
    let mut ranges = Vec::with_capacity(fresh.len());
    for f in fresh {
        let lo = f
            .order
            .partition_point(|&l| f.keys[l as usize] >> 32 < from.start);
        let hi = f
            .order
            .partition_point(|&l| f.keys[l as usize] >> 32 < from.end);
        ranges.push(lo..hi);
        for &l in &f.order[lo..hi] {
            starts[parent(f, l) as usize + 1] += 1;
        }
    }
    for p in 0..span {
        starts[p + 1] += starts[p];
    }
    let total = starts[span] as usize;
    seq.clear();
    seq.resize(total, (0, 0));
    for (q, (f, range)) in fresh.iter().zip(ranges).enumerate() {
        for &l in &f.order[range] {
            let at = &mut starts[parent(f, l) as usize];
            seq[*at as usize] = (q as u32, l);
            *at += 1;
        }
    }
    // Each state's successors (from several partitions) by rank: a few, almost always in order.
    let key = |&(q, l): &(u32, u32)| fresh[q as usize].keys[l as usize];
    let mut start = 0;
    for &end in &starts[..span] {
        let group = &mut seq[start..end as usize];
        if group.len() > 1 && !group.is_sorted_by_key(key) {
            group.sort_unstable_by_key(key);
        }
        start = end as usize;
    }
}

/// Shares of the numbering per thread (see `Timing::run`).
const SHARES: usize = 4;

/// The smallest state `p` of `level` such that at least `want` of the new states `fresh` were
/// first found from states before `p` (`level.end` if none is): where a share ends.
fn bound(fresh: &[Fresh], level: &Range<usize>, want: usize) -> u64 {
    let below = |p: u64| -> usize {
        fresh
            .iter()
            .map(|f| f.order.partition_point(|&l| f.keys[l as usize] >> 32 < p))
            .sum()
    };
    let (mut lo, mut hi) = (level.start as u64, level.end as u64);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) < want {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Numbers the new states of the level `level` in order of their earliest position, on
/// `threads` threads, each a share of the level's states as parents (shares of about as many
/// new states); the position at which the budget of `max_states` ran out, if it did.
pub(crate) fn number(
    ex: &mut Explored,
    model: &Model<'_>,
    fresh: &[Fresh],
    level: Range<usize>,
    threads: usize,
    max_states: usize,
    timing: &mut Timing,
) -> Option<u64> {
    let words = model.words;
    // Shares of about as many new states each, several per thread.
    let shares = if threads > 1 { threads * SHARES } else { 1 };
    let total: usize = fresh.iter().map(|f| f.keys.len()).sum();
    let mut seqs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); shares];
    timing.run(&mut seqs, threads, |w, seq| {
        let at = |w: usize| match w {
            0 => level.start as u64,
            w if w == shares => level.end as u64,
            w => bound(fresh, &level, total * w / shares),
        };
        merge(fresh, at(w)..at(w + 1), seq);
    });
    let total: usize = seqs.iter().map(Vec::len).sum();
    if ex.len() + total > max_states {
        // The budget runs out in this level: one by one, up to the cut.
        let mark = timing.mark();
        let mut cut = None;
        for (q, l) in seqs.into_iter().flatten() {
            let f = &fresh[q as usize];
            let l = l as usize;
            let key = f.keys[l];
            if ex.len() >= max_states {
                cut = Some(key);
                break;
            }
            let s = &f.words[l * words..(l + 1) * words];
            for (e, (&w, &m)) in ex.ever_new.iter_mut().zip(s.iter().zip(&model.new_mask)) {
                *e |= w & !(w >> 1) & m;
            }
            let id = ex.store.states.push(s, (key >> 32) as u32);
            f.ids[l].store(id, Ordering::Relaxed);
        }
        timing.serial_since(mark);
        return cut;
    }
    let counts: Vec<usize> = seqs.iter().map(Vec::len).collect();
    let Explored {
        store, ever_new, ..
    } = ex;
    let runs = store.states.append(&counts);
    let mut work: Vec<Share<'_>> = runs
        .into_iter()
        .zip(seqs)
        .map(|(r, seq)| (r, seq, vec![0; words]))
        .collect();
    let new_mask = &model.new_mask;
    timing.run(&mut work, threads, |_, (runs, seq, ever)| {
        let mut seq = seq.iter();
        for run in runs.iter_mut() {
            let places = run
                .words
                .chunks_exact_mut(words)
                .zip(run.parents.iter_mut());
            for (i, ((dst, parent), &(q, l))) in places.zip(&mut seq).enumerate() {
                let f = &fresh[q as usize];
                let l = l as usize;
                let s = &f.words[l * words..(l + 1) * words];
                for (e, (&w, &m)) in ever.iter_mut().zip(s.iter().zip(new_mask)) {
                    *e |= w & !(w >> 1) & m;
                }
                copy_state(dst, s);
                *parent = (f.keys[l] >> 32) as u32;
                f.ids[l].store((run.first + i) as u32, Ordering::Relaxed);
            }
        }
    });
    for (_, _, ever) in &work {
        for (e, &w) in ever_new.iter_mut().zip(ever) {
            *e |= w;
        }
    }
    None
}
