//! Sets of operators as bit sets (the enabled set, the waiting set).

/// A set of operators, with a summary level so the first member is found without scanning
/// every word (enabled-set maintenance is incremental, docs/semantics.md §4 picks the first).
#[derive(Debug, Default)]
pub(crate) struct Bits {
    pub(crate) words: Vec<u64>,
    pub(crate) summary: Vec<u64>,
}

impl Bits {
    pub(crate) fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        Bits {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }

    #[inline]
    pub(crate) fn set(&mut self, i: usize, on: bool) {
        let (w, b) = (i / 64, i % 64);
        if on {
            self.words[w] |= 1 << b;
            self.summary[w / 64] |= 1 << (w % 64);
        } else {
            self.words[w] &= !(1 << b);
            if self.words[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    #[inline]
    pub(crate) fn first(&self) -> Option<usize> {
        for (s, &sw) in self.summary.iter().enumerate() {
            if sw != 0 {
                let w = s * 64 + sw.trailing_zeros() as usize;
                return Some(w * 64 + self.words[w].trailing_zeros() as usize);
            }
        }
        None
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let b = word.trailing_zeros() as usize;
                word &= word - 1;
                Some(w * 64 + b)
            })
        })
    }
}
