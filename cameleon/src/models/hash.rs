//! The `hash` embedder: signed feature hashing of words and word pairs. Offline, deterministic,
//! the same vectors on every platform and in every release.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::text::for_each_word;
use crate::operator::capability::{CapFuture, CapabilityError, Embedder};

/// The embedder kind `hash`: a text's vector counts its words and pairs of adjacent words,
/// each hashed into one of `dim` buckets with a sign, then scaled to length 1.
///
/// Precisely, for a text:
///
/// 1. its words `w1 … wn` are those of [`text::for_each_word`](super::text::for_each_word)
///    (alphanumeric runs, lowercased);
/// 2. each word `w` has the hash `h(w) = XXH3-64(utf8(w), seed 0)`, and each pair of adjacent
///    words `(a, b)` the hash `h(a b) = XXH3-64(utf8(b), seed h(a))` (XXH3, the 64-bit variant of
///    xxHash 0.8, a fixed published function);
/// 3. each of these `2n − 1` features adds `+1` to bucket `h mod dim` when bit 63 of `h` is 0,
///    `−1` when it is 1 (the sign keeps collisions from adding up in expectation);
/// 4. the vector is divided by its Euclidean length (a text without words is the zero vector).
///
/// So the cosine of two texts' vectors grows with the words and word pairs they share, whatever
/// their order elsewhere. It knows nothing of meaning: `car` and `automobile` are unrelated. It is
/// what every example runs with when no model is configured.
///
/// ```
/// use cameleon::models::HashEmbedder;
///
/// let e = HashEmbedder::new(384);
/// let a = e.vector("Chameleons change colour to regulate their temperature.");
/// let b = e.vector("Why do chameleons change colour?");
/// let c = e.vector("The train leaves at noon.");
/// let cos = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
/// assert!(cos(&a, &b) > cos(&a, &c));
/// assert_eq!(a, e.vector("CHAMELEONS change colour, to regulate their temperature!"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashEmbedder {
    dim: usize,
}

/// The settings of a `hash` embedder (`{kind: hash, dim: 384}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashConfig {
    /// The vectors' length (buckets). Default 384.
    #[serde(default = "default_dim")]
    pub dim: usize,
}

fn default_dim() -> usize {
    HashEmbedder::DEFAULT_DIM
}

impl Default for HashConfig {
    fn default() -> Self {
        HashConfig {
            dim: HashEmbedder::DEFAULT_DIM,
        }
    }
}

impl HashEmbedder {
    /// The default vector length.
    pub const DEFAULT_DIM: usize = 384;

    /// An embedder of `dim` buckets (at least 1: 0 is taken as 1).
    pub fn new(dim: usize) -> Self {
        HashEmbedder { dim: dim.max(1) }
    }

    /// The embedder a [`HashConfig`] describes.
    pub fn from_config(c: &HashConfig) -> Self {
        HashEmbedder::new(c.dim)
    }

    /// The vector of `text`.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        self.accumulate(text, &mut v);
        normalise(&mut v);
        v
    }

    /// Adds the signed feature counts of `text` to `v` (not normalised).
    fn accumulate(&self, text: &str, v: &mut [f32]) {
        let dim = self.dim as u64;
        let mut add = |h: u64| {
            // `h % dim < dim ≤ usize::MAX`: the cast is exact.
            let bucket = (h % dim) as usize;
            v[bucket] += if h >> 63 == 0 { 1.0 } else { -1.0 };
        };
        let mut prev: Option<u64> = None;
        for_each_word(text, |w| {
            let h = xxh3_64_with_seed(w.as_bytes(), 0);
            add(h);
            if let Some(p) = prev {
                add(xxh3_64_with_seed(w.as_bytes(), p));
            }
            prev = Some(h);
        });
    }
}

/// Divides `v` by its Euclidean length, unless it is zero.
pub(crate) fn normalise(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

impl Embedder for HashEmbedder {
    fn kind(&self) -> &str {
        "hash"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Vec<Vec<f32>>, CapabilityError>> {
        let out = texts.iter().map(|t| self.vector(t)).collect();
        Box::pin(std::future::ready(Ok(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_length_or_zero() {
        let e = HashEmbedder::new(64);
        let v = e.vector("a few words, and a few more words");
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5, "{n}");
        assert!(e.vector("  ... ").iter().all(|x| *x == 0.0));
    }

    #[test]
    fn the_hash_function_is_the_documented_one() {
        // XXH3-64 of the empty input with seed 0, from the xxHash specification's test vectors.
        assert_eq!(xxh3_64_with_seed(b"", 0), 0x2D06_8005_38D3_94C2);
        // Pinned vectors: a change of hash function, seed, bucket or sign rule changes every
        // stored index, so it must break this test first.
        let v = HashEmbedder::new(8).vector("Chameleons change colour");
        assert_eq!(v, PINNED);
    }

    /// Three words and two pairs, into 8 buckets: two features cancel, three remain (±1/√3).
    const PINNED: [f32; 8] = [
        0.0,
        -0.577_350_26,
        0.0,
        0.577_350_26,
        0.0,
        0.0,
        0.0,
        0.577_350_26,
    ];

    #[test]
    fn word_pairs_count_so_order_matters_a_little() {
        let e = HashEmbedder::new(1024);
        let ab = e.vector("red fox");
        let ba = e.vector("fox red");
        let cos: f32 = ab.iter().zip(&ba).map(|(p, q)| p * q).sum();
        assert!(cos < 0.99 && cos > 0.3, "{cos}");
    }
}
