//! The compact state store of an exploration.
//!
//! States are numbered in discovery order and stored once, packed (`words` 64-bit words each:
//! 2 bits per connection, a few per control state), in fixed-size chunks, so the memory is the
//! states themselves with no slack beyond the last chunk. A parent link per state (4 bytes)
//! gives the witnesses. Open-addressing hash tables with linear probing find a state's number:
//! one table per *partition* (a few bits of the hash choose it), so that the threads of a
//! parallel exploration each own some (`parallel.rs`); one thread uses one. A slot is 32 bits:
//! the number in the low bits, and in the bits the numbers leave free a tag of the state's hash,
//! so that a probe that meets another state almost never reads that state. For the parallel
//! split of 12 branches (2 words a state) this is about 16 bytes of state, 4 of parent and 5 to
//! 11 of table per stored state.

/// `log2` of the number of states per chunk.
const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
/// An empty slot: the all-ones slot is never a state's (numbers stay below the number mask).
pub(crate) const FREE: u32 = u32::MAX;
/// No parent: the initial state.
pub(crate) const ROOT: u32 = u32::MAX;

/// The hash of a packed state.
#[inline]
pub(crate) fn hash(s: &[u64]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    for &w in s {
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    // Final avalanche (murmur3 fmix64): the low bits index a table, the high bits choose the
    // partition and make the tag.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Appends state `s` to `v`: for the usual few words, without a call to `memcpy`.
#[inline(always)]
pub(crate) fn push_state(v: &mut Vec<u64>, s: &[u64]) {
    match *s {
        [a] => v.push(a),
        [a, b] => v.extend_from_slice(&[a, b]),
        [a, b, c] => v.extend_from_slice(&[a, b, c]),
        [a, b, c, d] => v.extend_from_slice(&[a, b, c, d]),
        _ => v.extend_from_slice(s),
    }
}

/// Copies state `s` into `dst` (as long): for the usual few words, without a call to `memcpy`.
#[inline(always)]
pub(crate) fn copy_state(dst: &mut [u64], s: &[u64]) {
    match (dst, s) {
        ([x], [a]) => *x = *a,
        ([x, y], [a, b]) => (*x, *y) = (*a, *b),
        ([x, y, z], [a, b, c]) => (*x, *y, *z) = (*a, *b, *c),
        (dst, s) => dst.copy_from_slice(s),
    }
}

/// One partition's hash table: slots of `tag | number`.
pub(crate) struct Table {
    pub(crate) slots: Vec<u32>,
    mask: usize,
    count: usize,
}

impl Table {
    fn new() -> Self {
        Table {
            slots: vec![FREE; 64],
            mask: 63,
            count: 0,
        }
    }

    /// Loads the slot where a lookup of hash `h` starts (see `explore_full`).
    #[inline]
    pub(crate) fn touch(&self, h: u64) -> u32 {
        self.slots[h as usize & self.mask]
    }

    /// The number of the state of hash `h` (tag `tag`) for which `same` holds, or the slot
    /// where it would go.
    #[inline]
    pub(crate) fn find(
        &self,
        h: u64,
        tag: u32,
        id_mask: u32,
        mut same: impl FnMut(u32) -> bool,
    ) -> Result<u32, usize> {
        let mut i = h as usize & self.mask;
        loop {
            let slot = self.slots[i];
            if slot == FREE {
                return Err(i);
            }
            if slot & !id_mask == tag && same(slot & id_mask) {
                return Ok(slot & id_mask);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Fills the free `slot`; `true` when the table should [`grow`](Self::grow).
    #[inline]
    pub(crate) fn fill(&mut self, slot: usize, value: u32) -> bool {
        self.slots[slot] = value;
        self.count += 1;
        self.count * 4 > (self.mask + 1) * 3
    }

    /// Doubles the table and puts every entry back (`hash_of` a number gives its state's hash;
    /// `moved(number, slot)` is told where each went).
    pub(crate) fn grow(
        &mut self,
        id_mask: u32,
        mut hash_of: impl FnMut(u32) -> u64,
        mut moved: impl FnMut(u32, usize),
    ) {
        let cap = (self.mask + 1) * 2;
        let old = std::mem::replace(&mut self.slots, vec![FREE; cap]);
        self.mask = cap - 1;
        for slot in old {
            if slot == FREE {
                continue;
            }
            let id = slot & id_mask;
            let mut i = hash_of(id) as usize & self.mask;
            while self.slots[i] != FREE {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = slot;
            moved(id, i);
        }
    }

    /// Gives the tag's lowest bit to the numbers (see [`Store::reserve_ids`]).
    fn widen(&mut self, bit: u32) {
        for slot in &mut self.slots {
            if *slot != FREE {
                *slot &= !bit;
            }
        }
    }
}

/// The packed states and their parents, in number order.
pub(crate) struct States {
    words: usize,
    /// States, `CHUNK` per chunk (the last one grows as a `Vec` does).
    chunks: Vec<Vec<u64>>,
    /// Parent of each state, chunked the same way.
    parents: Vec<Vec<u32>>,
    len: usize,
}

impl States {
    /// Words per state.
    pub(crate) fn words(&self) -> usize {
        self.words
    }

    /// State number `id`.
    #[inline]
    pub(crate) fn state(&self, id: u32) -> &[u64] {
        let (c, i) = (id as usize >> CHUNK_BITS, id as usize & (CHUNK - 1));
        &self.chunks[c][i * self.words..(i + 1) * self.words]
    }

    /// Appends `s` with its parent; returns its number.
    #[inline]
    pub(crate) fn push(&mut self, s: &[u64], parent: u32) -> u32 {
        let id = self.len as u32;
        let c = self.len >> CHUNK_BITS;
        if c == self.chunks.len() {
            // A chunk grows as needed (small nets stay small) and is trimmed once full.
            self.chunks.push(Vec::new());
            self.parents.push(Vec::new());
        }
        push_state(&mut self.chunks[c], s);
        self.parents[c].push(parent);
        if self.chunks[c].len() == CHUNK * self.words {
            // A full chunk keeps exactly its states.
            self.chunks[c].shrink_to_fit();
            self.parents[c].shrink_to_fit();
        }
        self.len += 1;
        id
    }

    /// Appends `counts.iter().sum()` states, to be written by the caller: per count, in order,
    /// the places of that many consecutive states (a run per chunk they span), so that each
    /// count's states can be written by another thread.
    pub(crate) fn append(&mut self, counts: &[usize]) -> Vec<Vec<StoredRun<'_>>> {
        let words = self.words;
        let start = self.len;
        let end = start + counts.iter().sum::<usize>();
        let mut c = start >> CHUNK_BITS;
        while c << CHUNK_BITS < end {
            if c == self.chunks.len() {
                self.chunks.push(Vec::new());
                self.parents.push(Vec::new());
            }
            let n = (end - (c << CHUNK_BITS)).min(CHUNK);
            self.chunks[c].resize(n * words, 0);
            self.parents[c].resize(n, ROOT);
            if n == CHUNK {
                self.chunks[c].shrink_to_fit();
                self.parents[c].shrink_to_fit();
            }
            c += 1;
        }
        self.len = end;
        // Where each count's states start; the last count ends at `end`.
        let mut bounds = Vec::with_capacity(counts.len() + 1);
        let mut at = start;
        for &k in counts {
            bounds.push(at);
            at += k;
        }
        bounds.push(end);
        let mut out: Vec<Vec<StoredRun<'_>>> = counts.iter().map(|_| Vec::new()).collect();
        let mut t = 0;
        let chunks = self.chunks.iter_mut().zip(self.parents.iter_mut());
        for (c, (cw, cp)) in chunks.enumerate().skip(start >> CHUNK_BITS) {
            let base = c << CHUNK_BITS;
            if base >= end {
                break;
            }
            let (lo, hi) = (start.max(base) - base, end.min(base + CHUNK) - base);
            let mut w = &mut cw[lo * words..hi * words];
            let mut p = &mut cp[lo..hi];
            let mut pos = base + lo;
            while pos < base + hi {
                while bounds[t + 1] <= pos {
                    t += 1;
                }
                let take = bounds[t + 1].min(base + hi) - pos;
                let (w1, w2) = std::mem::take(&mut w).split_at_mut(take * words);
                let (p1, p2) = std::mem::take(&mut p).split_at_mut(take);
                out[t].push(StoredRun {
                    first: pos,
                    words: w1,
                    parents: p1,
                });
                (w, p, pos) = (w2, p2, pos + take);
            }
        }
        out
    }
}

/// Consecutive states [`States::append`] made room for: their words and parents.
pub(crate) struct StoredRun<'a> {
    /// The number of the first.
    pub(crate) first: usize,
    pub(crate) words: &'a mut [u64],
    pub(crate) parents: &'a mut [u32],
}

/// Stored states, their parents, and the tables that find them.
pub(crate) struct Store {
    pub(crate) states: States,
    /// One table per partition (a power of two of them).
    pub(crate) parts: Vec<Table>,
    /// Slot bits holding the state number; the others hold the tag. Every number is below it.
    pub(crate) id_mask: u32,
}

impl Store {
    /// A store for states of `words` words (at most `u32::MAX - 1` of them), with one table
    /// (see [`rebuild_tables`](Self::rebuild_tables) for more).
    pub(crate) fn new(words: usize) -> Self {
        Store {
            states: States {
                words,
                chunks: Vec::new(),
                parents: Vec::new(),
                len: 0,
            },
            parts: vec![Table::new()],
            id_mask: 127,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.states.len
    }

    /// State number `id`.
    #[inline]
    pub(crate) fn state(&self, id: u32) -> &[u64] {
        self.states.state(id)
    }

    /// The parent of state `id` (the state it was discovered from), or [`ROOT`].
    #[inline]
    pub(crate) fn parent(&self, id: u32) -> u32 {
        self.states.parents[id as usize >> CHUNK_BITS][id as usize & (CHUNK - 1)]
    }

    /// The partition of hash `h`.
    #[inline]
    pub(crate) fn part(&self, h: u64) -> usize {
        part_of(h, self.parts.len())
    }

    #[inline]
    pub(crate) fn tag(&self, h: u64) -> u32 {
        ((h >> 32) as u32) & !self.id_mask
    }

    /// Makes every number below `bound` fit the number bits, the tags one bit shorter per
    /// doubling.
    pub(crate) fn reserve_ids(&mut self, bound: u64) {
        while self.id_mask != u32::MAX && bound >= self.id_mask as u64 {
            let bit = self.id_mask + 1;
            self.id_mask = (self.id_mask << 1) | 1;
            for t in &mut self.parts {
                t.widen(bit);
            }
        }
    }

    /// The number of state `s` (hash `h`), or the slot (of its partition) where it would go.
    #[inline]
    pub(crate) fn find(&self, s: &[u64], h: u64) -> Result<u32, usize> {
        // Word by word: for a few words this beats a call to `memcmp`.
        self.parts[self.part(h)].find(h, self.tag(h), self.id_mask, |id| {
            self.states.state(id).iter().zip(s).all(|(a, b)| a == b)
        })
    }

    /// Stores `s` (hash `h`, not stored yet: `slot` is what [`find`](Self::find) returned) with
    /// its parent, and returns its number.
    #[inline]
    pub(crate) fn put(&mut self, slot: usize, s: &[u64], h: u64, parent: u32) -> u32 {
        self.reserve_ids(self.len() as u64 + 1);
        let id = self.states.push(s, parent);
        let (p, tag, id_mask) = (self.part(h), self.tag(h), self.id_mask);
        if self.parts[p].fill(slot, tag | id) {
            let states = &self.states;
            self.parts[p].grow(id_mask, |id| hash(states.state(id)), |_, _| {});
        }
        id
    }

    /// Empties the tables and puts every stored state back in them, in `parts` partitions (a
    /// power of two, at most 1024).
    pub(crate) fn rebuild_tables(&mut self, parts: usize) {
        let parts = parts.clamp(1, 1024).next_power_of_two();
        self.reserve_ids(2 * parts as u64);
        self.parts = (0..parts).map(|_| Table::new()).collect();
        for id in 0..self.len() as u32 {
            let s = self.states.state(id);
            let h = hash(s);
            let (p, tag) = (self.part(h), self.tag(h));
            let slot = match self.parts[p].find(h, tag, self.id_mask, |_| false) {
                Ok(_) => continue,
                Err(slot) => slot,
            };
            if self.parts[p].fill(slot, tag | id) {
                let states = &self.states;
                self.parts[p].grow(self.id_mask, |id| hash(states.state(id)), |_, _| {});
            }
        }
    }

    /// Bytes held (allocated capacity): states, parents and tables.
    pub(crate) fn bytes(&self) -> usize {
        let s = &self.states;
        s.chunks.iter().map(|c| c.capacity() * 8).sum::<usize>()
            + s.parents.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + s.chunks.capacity() * 2 * std::mem::size_of::<Vec<u64>>()
            + self
                .parts
                .iter()
                .map(|t| t.slots.capacity() * 4)
                .sum::<usize>()
    }

    /// The path of parents from the initial state to `id`, as state numbers (initial first).
    pub(crate) fn path_to(&self, id: u32) -> Vec<u32> {
        let mut path = vec![id];
        let mut cur = id;
        while self.parent(cur) != ROOT {
            cur = self.parent(cur);
            path.push(cur);
        }
        path.reverse();
        path
    }
}

/// The partition of hash `h` among `parts` (a power of two): bits of the hash's high half
/// that the tag never uses (they are number bits, see [`Store::rebuild_tables`]).
#[inline]
pub(crate) fn part_of(h: u64, parts: usize) -> usize {
    (h >> 32) as usize & (parts - 1)
}
