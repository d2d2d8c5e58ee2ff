//! The compact state store of an exploration.
//!
//! States are numbered in discovery order and stored once, packed (`words` 64-bit words each:
//! 2 bits per connection, a few per control state), in fixed-size chunks, so the memory is the
//! states themselves with no slack beyond the last chunk. A parent link per state (4 bytes)
//! gives the witnesses. An open-addressing hash table with linear probing finds a state's
//! number; its slots are 32 bits: the number in the low bits, and in the bits the table's size
//! leaves free (every number is below it) a tag of the state's hash, so that a probe that meets
//! another state almost never reads that state. For the parallel split of 12 branches (2 words
//! a state) this is about 16 bytes of state, 4 of parent and 5 to 11 of table per stored
//! state.

/// `log2` of the number of states per chunk.
const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
/// An empty slot: the all-ones state number is never given (see `Store::new`).
const FREE: u32 = u32::MAX;
/// No parent: the initial state.
pub(crate) const ROOT: u32 = u32::MAX;

/// The hash of a packed state.
#[inline]
pub(crate) fn hash(s: &[u64]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    for &w in s {
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    // Final avalanche (murmur3 fmix64): the low bits index the table, the high bits are the tag.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The slot bits that hold a state number in a table of `cap` slots: every number is below
/// `cap` (the table is at most 3/4 full), and the all-ones number is left over for `FREE`.
fn id_mask(cap: usize) -> u32 {
    let bits = cap.trailing_zeros();
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// Stored states, their parents, and the table that finds them.
pub(crate) struct Store {
    words: usize,
    /// States, `CHUNK` per chunk (the last one grows as a `Vec` does).
    chunks: Vec<Vec<u64>>,
    /// Parent of each state, chunked the same way.
    parents: Vec<Vec<u32>>,
    len: usize,
    slots: Vec<u32>,
    mask: usize,
    /// Slot bits holding the state number; the others hold the tag.
    id_mask: u32,
}

impl Store {
    /// A store for states of `words` words (at most `u32::MAX - 1` of them).
    pub(crate) fn new(words: usize) -> Self {
        let cap = 64;
        Store {
            words,
            chunks: Vec::new(),
            parents: Vec::new(),
            len: 0,
            slots: vec![FREE; cap],
            mask: cap - 1,
            id_mask: id_mask(cap),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// State number `id`.
    #[inline]
    pub(crate) fn state(&self, id: u32) -> &[u64] {
        let (c, i) = (id as usize >> CHUNK_BITS, id as usize & (CHUNK - 1));
        &self.chunks[c][i * self.words..(i + 1) * self.words]
    }

    /// The parent of state `id` (the state it was discovered from), or [`ROOT`].
    #[inline]
    pub(crate) fn parent(&self, id: u32) -> u32 {
        self.parents[id as usize >> CHUNK_BITS][id as usize & (CHUNK - 1)]
    }

    #[inline]
    fn tag(&self, h: u64) -> u32 {
        ((h >> 32) as u32) & !self.id_mask
    }

    /// Loads the slot where a lookup of hash `h` starts, so that the lookups of many states can
    /// wait for memory together rather than one after the other.
    #[inline]
    pub(crate) fn touch_slot(&self, h: u64) -> u32 {
        self.slots[h as usize & self.mask]
    }

    /// Loads the first state a lookup of `h` would compare with, if any (after
    /// [`touch_slot`](Self::touch_slot), for the same reason).
    #[inline]
    pub(crate) fn touch_state(&self, h: u64) -> u64 {
        let tag = self.tag(h);
        let mut i = h as usize & self.mask;
        loop {
            let slot = self.slots[i];
            if slot == FREE {
                return 0;
            }
            if slot & !self.id_mask == tag {
                return self.state(slot & self.id_mask)[0];
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The number of state `s` (hash `h`), or the slot where it would go.
    #[inline]
    pub(crate) fn find(&self, s: &[u64], h: u64) -> Result<u32, usize> {
        let tag = self.tag(h);
        let mut i = h as usize & self.mask;
        loop {
            let slot = self.slots[i];
            if slot == FREE {
                return Err(i);
            }
            if slot & !self.id_mask == tag {
                let id = slot & self.id_mask;
                // Word by word: for a few words this beats a call to `memcmp`.
                if self.state(id).iter().zip(s).all(|(a, b)| a == b) {
                    return Ok(id);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Stores `s` (hash `h`, not stored yet: `slot` is what [`find`](Self::find) returned) with
    /// its parent, and returns its number.
    #[inline]
    pub(crate) fn put(&mut self, slot: usize, s: &[u64], h: u64, parent: u32) -> u32 {
        let id = self.len as u32;
        debug_assert!(
            id < self.id_mask,
            "state numbers stay below the table's size"
        );
        let c = self.len >> CHUNK_BITS;
        if c == self.chunks.len() {
            // A chunk grows as needed (small nets stay small) and is trimmed once full.
            self.chunks.push(Vec::new());
            self.parents.push(Vec::new());
        }
        self.chunks[c].extend_from_slice(s);
        self.parents[c].push(parent);
        if self.chunks[c].len() == CHUNK * self.words {
            // A full chunk keeps exactly its states.
            self.chunks[c].shrink_to_fit();
            self.parents[c].shrink_to_fit();
        }
        self.slots[slot] = self.tag(h) | id;
        self.len += 1;
        if self.len * 4 > (self.mask + 1) * 3 {
            self.grow();
        }
        id
    }

    /// Doubles the table and puts every state back, with tags one bit shorter.
    fn grow(&mut self) {
        let cap = (self.mask + 1) * 2;
        self.slots = vec![FREE; cap];
        self.mask = cap - 1;
        self.id_mask = id_mask(cap);
        for id in 0..self.len as u32 {
            let h = hash(self.state(id));
            let mut i = h as usize & self.mask;
            while self.slots[i] != FREE {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = self.tag(h) | id;
        }
    }

    /// Bytes held (allocated capacity): states, parents and table.
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() * 8).sum::<usize>()
            + self.parents.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + self.chunks.capacity() * 2 * std::mem::size_of::<Vec<u64>>()
            + self.slots.capacity() * 4
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
