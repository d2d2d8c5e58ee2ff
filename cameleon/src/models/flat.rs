//! The `flat` memory: exact cosine search over every stored vector, in process.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use crate::operator::capability::{CapFuture, CapabilityError, Memory, MemoryHit, MemoryItem};

/// The memory kind `flat`: every item is kept in process and a search compares the query with
/// all of them — exact cosine similarity, no approximation — so results are exactly the `k`
/// most similar items. Fast enough for a few hundred thousand vectors (the `models` benchmark
/// measures 100 000 of 384 dimensions).
///
/// - **Ids**: adding an item whose id is already held replaces it (it then counts as added
///   last).
/// - **Ties**: items of equal similarity come in the order they were added.
/// - **Dimensions**: the first item added fixes the vectors' length; an item or a query of
///   another length is an error naming both.
/// - **Zero vectors**: their similarity to anything is 0; a zero query finds nothing.
///
/// **Storage.** A memory is a list of rows `(id, text, vector, meta)` in the order they were added —
/// [`rows`](Self::rows) reads them, [`from_rows`](Self::from_rows) rebuilds the same memory
/// (same search results, same tie order) — so it can live in one table of a database, say
/// `(memory TEXT, seq INTEGER, id TEXT, text TEXT, vector BLOB, meta TEXT)`, with the vector as
/// little-endian `f32`s ([`vector_to_bytes`] / [`vector_from_bytes`]).
///
/// ```
/// use cameleon::operator::capability::MemoryItem;
/// use cameleon::models::FlatMemory;
///
/// let m = FlatMemory::new();
/// m.insert(vec![
///     MemoryItem { id: "a".into(), text: "north".into(), vector: vec![0.0, 1.0], meta: Default::default() },
///     MemoryItem { id: "b".into(), text: "east".into(), vector: vec![1.0, 0.0], meta: Default::default() },
/// ])?;
/// let hits = m.nearest(&[0.2, 0.9], 1)?;
/// assert_eq!(hits[0].item.text, "north");
/// # Ok::<(), cameleon::operator::capability::CapabilityError>(())
/// ```
#[derive(Debug, Default)]
pub struct FlatMemory {
    rows: RwLock<Rows>,
}

/// The settings of a `flat` memory (`{kind: flat}`): none yet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatConfig {}

/// The items, column by column; `vectors` holds `dim` floats per row.
#[derive(Debug, Default)]
struct Rows {
    dim: usize,
    ids: Vec<String>,
    texts: Vec<String>,
    metas: Vec<serde_json::Value>,
    vectors: Vec<f32>,
    /// 1 / ‖vector‖ per row (0 for a zero vector).
    inv_norms: Vec<f32>,
    /// Insertion sequence per row: the tie-break, kept across removals.
    seqs: Vec<u64>,
    next_seq: u64,
    by_id: HashMap<String, usize>,
}

impl Rows {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn vector(&self, i: usize) -> &[f32] {
        &self.vectors[i * self.dim..(i + 1) * self.dim]
    }

    fn item(&self, i: usize) -> MemoryItem {
        MemoryItem {
            id: self.ids[i].clone(),
            text: self.texts[i].clone(),
            vector: self.vector(i).to_vec(),
            meta: self.metas[i].clone(),
        }
    }

    fn check_dim(&self, len: usize, what: &str) -> Result<(), CapabilityError> {
        if self.dim != 0 && len != self.dim {
            return Err(CapabilityError::new(format!(
                "{what} has {len} dimensions but the memory holds vectors of {}: embed everything \
                 with the same embedder (or use another memory)",
                self.dim
            )));
        }
        Ok(())
    }

    /// Removes row `i` by moving the last row into its place.
    fn swap_remove(&mut self, i: usize) -> MemoryItem {
        let item = self.item(i);
        let last = self.len() - 1;
        self.by_id.remove(&self.ids[i]);
        if i != last {
            let (d, moved) = (self.dim, self.ids[last].clone());
            self.vectors.copy_within(last * d..(last + 1) * d, i * d);
            self.by_id.insert(moved, i);
        }
        self.ids.swap_remove(i);
        self.texts.swap_remove(i);
        self.metas.swap_remove(i);
        self.inv_norms.swap_remove(i);
        self.seqs.swap_remove(i);
        self.vectors.truncate(last * self.dim);
        if self.ids.is_empty() {
            self.dim = 0;
        }
        item
    }

    fn push(&mut self, item: MemoryItem) {
        if self.dim == 0 {
            self.dim = item.vector.len();
        }
        let i = self.len();
        self.by_id.insert(item.id.clone(), i);
        self.inv_norms.push(inv_norm(&item.vector));
        self.vectors.extend_from_slice(&item.vector);
        self.ids.push(item.id);
        self.texts.push(item.text);
        self.metas.push(item.meta);
        self.seqs.push(self.next_seq);
        self.next_seq += 1;
    }
}

fn inv_norm(v: &[f32]) -> f32 {
    let n = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if n > 0.0 { (1.0 / n) as f32 } else { 0.0 }
}

/// The dot product, sixteen lanes at a time (the compiler vectorises it; the fixed order of the
/// sums makes the result the same on every run).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (ac, bc) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for l in 0..16 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = 0.0;
    for v in acc {
        s += v;
    }
    for (x, y) in ar.iter().zip(br) {
        s += x * y;
    }
    s
}

/// A candidate of a search; the heap keeps the worst on top.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    score: f32,
    seq: u64,
    row: usize,
}

impl Candidate {
    /// `Less` when `self` ranks better: higher score, then earlier added.
    fn rank(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.seq.cmp(&other.seq))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Max-heap order: the greatest is the worst-ranked.
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// Keeps `c` in `heap` if it is among the `k` best.
#[inline]
fn offer(heap: &mut BinaryHeap<Candidate>, c: Candidate, k: usize) {
    if heap.len() < k {
        heap.push(c);
    } else if let Some(worst) = heap.peek()
        && c.rank(worst) == Ordering::Less
    {
        heap.pop();
        heap.push(c);
    }
}

/// The `k` best rows of `range` for `query` (whose inverse norm is `qn`).
fn top_k(
    r: &Rows,
    query: &[f32],
    qn: f32,
    k: usize,
    range: std::ops::Range<usize>,
) -> BinaryHeap<Candidate> {
    let mut heap = BinaryHeap::with_capacity(k + 1);
    let vectors = &r.vectors[range.start * r.dim..range.end * r.dim];
    for (v, row) in vectors.chunks_exact(r.dim).zip(range) {
        let score = dot(query, v) * r.inv_norms[row] * qn;
        let c = Candidate {
            score: if score.is_nan() { f32::MIN } else { score },
            seq: r.seqs[row],
            row,
        };
        offer(&mut heap, c, k);
    }
    heap
}

impl FlatMemory {
    /// An empty memory.
    pub fn new() -> Self {
        FlatMemory::default()
    }

    /// A memory holding `rows` (as [`rows`](Self::rows) gave them), in that order.
    pub fn from_rows(rows: Vec<MemoryItem>) -> Result<Self, CapabilityError> {
        let m = FlatMemory::new();
        m.insert(rows)?;
        Ok(m)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Rows> {
        // A panic while holding the lock cannot leave the rows half-written (every writer
        // checks before it changes anything), so a poisoned lock is still consistent.
        self.rows.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Every item, in the order they were added (the storage form).
    pub fn rows(&self) -> Vec<MemoryItem> {
        let r = self.read();
        let mut order: Vec<usize> = (0..r.len()).collect();
        order.sort_by_key(|&i| r.seqs[i]);
        order.into_iter().map(|i| r.item(i)).collect()
    }

    /// The vectors' length (0 while empty).
    pub fn dim(&self) -> usize {
        self.read().dim
    }

    /// Adds items (an id already held is replaced); returns how many the memory holds.
    pub fn insert(&self, items: Vec<MemoryItem>) -> Result<usize, CapabilityError> {
        self.upsert(items).map(|(n, _)| n)
    }

    /// Adds items in one step (an id already held is replaced); returns how many the memory
    /// holds and the items replaced. An error changes nothing.
    pub fn upsert(
        &self,
        items: Vec<MemoryItem>,
    ) -> Result<(usize, Vec<MemoryItem>), CapabilityError> {
        let mut r = self.write();
        // Check everything first: an error changes nothing.
        let dim = if r.dim == 0 {
            items.first().map_or(0, |i| i.vector.len())
        } else {
            r.dim
        };
        for it in &items {
            if it.vector.is_empty() {
                return Err(CapabilityError::new(format!(
                    "the vector of `{}` is empty: an embedder gives at least one dimension",
                    it.id
                )));
            }
            if it.vector.len() != dim {
                r.check_dim(it.vector.len(), &format!("the vector of `{}`", it.id))?;
                return Err(CapabilityError::new(format!(
                    "the vector of `{}` has {} dimensions but the others have {dim}",
                    it.id,
                    it.vector.len()
                )));
            }
        }
        let mut replaced = Vec::new();
        let mut fresh = std::collections::HashSet::new();
        for it in items {
            if let Some(&i) = r.by_id.get(&it.id) {
                let old = r.swap_remove(i);
                // An id given twice in one call replaces its own first item: not a replaced one.
                if !fresh.contains(&old.id) {
                    replaced.push(old);
                }
            }
            fresh.insert(it.id.clone());
            r.push(it);
        }
        Ok((r.len(), replaced))
    }

    /// Removes the items of these ids; returns those it held.
    pub fn delete(&self, ids: &[String]) -> Vec<MemoryItem> {
        let mut r = self.write();
        let mut out = Vec::new();
        for id in ids {
            if let Some(&i) = r.by_id.get(id) {
                out.push(r.swap_remove(i));
            }
        }
        out
    }

    /// The `k` items most similar to `query` by cosine, best first (ties: added first).
    pub fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<MemoryHit>, CapabilityError> {
        let r = self.read();
        if r.len() == 0 || k == 0 {
            return Ok(Vec::new());
        }
        r.check_dim(query.len(), "the query vector")?;
        let qn = inv_norm(query);
        if qn == 0.0 {
            return Ok(Vec::new());
        }
        // One pass over the rows: the scan is bound by memory bandwidth (100 000 vectors of
        // 384 dimensions are 154 MB), which more threads do not widen on a small machine.
        let heap = top_k(&r, query, qn, k, 0..r.len());
        let mut best = heap.into_vec();
        best.sort_by(Candidate::rank);
        Ok(best
            .into_iter()
            .map(|c| MemoryHit {
                item: r.item(c.row),
                score: c.score,
            })
            .collect())
    }

    /// How many items it holds.
    pub fn count(&self) -> usize {
        self.read().len()
    }
}

/// A vector as little-endian `f32` bytes (a database BLOB).
pub fn vector_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector read back from [`vector_to_bytes`]; an error when the length is not a multiple
/// of 4.
pub fn vector_from_bytes(b: &[u8]) -> Result<Vec<f32>, CapabilityError> {
    if !b.len().is_multiple_of(4) {
        return Err(CapabilityError::new(format!(
            "a stored vector has {} bytes, not a multiple of 4 (little-endian f32s)",
            b.len()
        )));
    }
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl Memory for FlatMemory {
    fn kind(&self) -> &str {
        "flat"
    }

    fn add(&self, items: Vec<MemoryItem>) -> CapFuture<'_, Result<usize, CapabilityError>> {
        Box::pin(std::future::ready(self.insert(items)))
    }

    fn search<'a>(
        &'a self,
        vector: &'a [f32],
        k: usize,
    ) -> CapFuture<'a, Result<Vec<MemoryHit>, CapabilityError>> {
        Box::pin(std::future::ready(self.nearest(vector, k)))
    }

    fn remove<'a>(
        &'a self,
        ids: &'a [String],
    ) -> CapFuture<'a, Result<Vec<MemoryItem>, CapabilityError>> {
        Box::pin(std::future::ready(Ok(self.delete(ids))))
    }

    fn put(
        &self,
        items: Vec<MemoryItem>,
    ) -> CapFuture<'_, Result<Vec<MemoryItem>, CapabilityError>> {
        Box::pin(std::future::ready(self.upsert(items).map(|(_, r)| r)))
    }

    fn len(&self) -> usize {
        self.count()
    }

    /// The wrapping sum of the XXH3 of each item's id and text: the same for the same items,
    /// whatever their order.
    fn fingerprint(&self) -> Option<u64> {
        let rows = self
            .rows
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut h = rows.len() as u64;
        for (id, text) in rows.ids.iter().zip(&rows.texts) {
            let x = xxhash_rust::xxh3::xxh3_64(id.as_bytes())
                ^ xxhash_rust::xxh3::xxh3_64(text.as_bytes()).rotate_left(17);
            h = h.wrapping_add(x);
        }
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, v: &[f32]) -> MemoryItem {
        MemoryItem {
            id: id.into(),
            text: format!("text {id}"),
            vector: v.to_vec(),
            meta: serde_json::Value::Null,
        }
    }

    fn ids(hits: &[MemoryHit]) -> Vec<&str> {
        hits.iter().map(|h| h.item.id.as_str()).collect()
    }

    #[test]
    fn search_is_exact_cosine_best_first() {
        let m = FlatMemory::new();
        m.insert(vec![
            item("x", &[1.0, 0.0, 0.0]),
            item("xy", &[1.0, 1.0, 0.0]),
            item("y", &[0.0, 5.0, 0.0]),
            item("z", &[0.0, 0.0, 1.0]),
        ])
        .unwrap();
        let hits = m.nearest(&[2.0, 1.0, 0.0], 3).unwrap();
        assert_eq!(ids(&hits), ["xy", "x", "y"]);
        let cos_xy = 3.0 / (5f32.sqrt() * 2f32.sqrt());
        assert!((hits[0].score - cos_xy).abs() < 1e-6);
    }

    #[test]
    fn ties_come_in_insertion_order_even_after_removals() {
        let m = FlatMemory::new();
        let same = [1.0, 0.0];
        m.insert(vec![item("a", &same), item("b", &same), item("c", &same)])
            .unwrap();
        // Removing `a` moves `c` into its slot; the order must still be b, c.
        m.delete(&["a".to_owned()]);
        assert_eq!(ids(&m.nearest(&same, 5).unwrap()), ["b", "c"]);
        // Re-adding `b` makes it the last added.
        m.insert(vec![item("b", &same)]).unwrap();
        assert_eq!(ids(&m.nearest(&same, 5).unwrap()), ["c", "b"]);
        assert_eq!(m.count(), 2);
    }

    #[test]
    fn a_vector_of_another_length_is_refused_and_changes_nothing() {
        let m = FlatMemory::new();
        m.insert(vec![item("a", &[1.0, 0.0])]).unwrap();
        let e = m
            .insert(vec![item("b", &[1.0, 0.0]), item("c", &[1.0, 0.0, 0.0])])
            .unwrap_err();
        assert!(e.message.contains("`c` has 3 dimensions"), "{e}");
        assert_eq!(m.count(), 1);
        let e = m.nearest(&[1.0], 1).unwrap_err();
        assert!(e.message.contains("query vector has 1 dimensions"), "{e}");
    }

    #[test]
    fn rows_rebuild_the_same_memory() {
        let m = FlatMemory::new();
        m.insert(vec![item("a", &[1.0, 0.5]), item("b", &[0.5, 1.0])])
            .unwrap();
        m.insert(vec![item("a", &[1.0, 0.5])]).unwrap();
        let rows = m.rows();
        assert_eq!(
            rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        let copy = FlatMemory::from_rows(rows.clone()).unwrap();
        assert_eq!(copy.rows(), rows);
        let q = [0.7, 0.7];
        assert_eq!(copy.nearest(&q, 2).unwrap(), m.nearest(&q, 2).unwrap());
    }

    #[test]
    fn upsert_returns_only_the_items_held_before() {
        let m = FlatMemory::new();
        m.insert(vec![item("a", &[1.0, 0.0])]).unwrap();
        let (n, replaced) = m
            .upsert(vec![
                item("a", &[0.0, 1.0]),
                item("b", &[1.0, 1.0]),
                item("b", &[2.0, 1.0]),
            ])
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(replaced, vec![item("a", &[1.0, 0.0])]);
        assert_eq!(
            m.rows()[1].vector,
            vec![2.0, 1.0],
            "the last of a repeated id wins"
        );
    }

    #[test]
    fn search_gives_the_exact_top_k_of_a_brute_force_sort_with_ties_in_order() {
        // 2 048 rows of 64, every vector repeated 4 times in a row (ties), from a fixed
        // generator.
        let (rows, dim) = (2_048, 64);
        let mut x: u64 = 7;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut items = Vec::with_capacity(rows);
        for i in 0..rows / 4 {
            let v: Vec<f32> = (0..dim).map(|_| next()).collect();
            for j in 0..4 {
                items.push(item(&format!("{i}.{j}"), &v));
            }
        }
        let m = FlatMemory::from_rows(items.clone()).unwrap();
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        let got = m.nearest(&q, 10).unwrap();
        // Brute force: score every row the same way, sort by score then insertion order.
        let mut all: Vec<(f32, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (dot(&q, &it.vector) * inv_norm(&it.vector) * inv_norm(&q), i))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let want: Vec<&str> = all[..10]
            .iter()
            .map(|(_, i)| items[*i].id.as_str())
            .collect();
        assert_eq!(ids(&got), want);
    }

    #[test]
    fn vectors_round_trip_through_bytes() {
        let v = vec![0.1f32, -2.5, f32::MIN_POSITIVE];
        assert_eq!(vector_from_bytes(&vector_to_bytes(&v)).unwrap(), v);
        assert!(vector_from_bytes(&[0, 0, 0]).is_err());
    }

    #[test]
    fn a_zero_query_finds_nothing() {
        let m = FlatMemory::new();
        m.insert(vec![item("a", &[1.0, 0.0])]).unwrap();
        assert!(m.nearest(&[0.0, 0.0], 3).unwrap().is_empty());
    }
}
