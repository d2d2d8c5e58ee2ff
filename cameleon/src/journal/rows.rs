//! The rows a journal writer queues before a flush commits them (`writer.rs`).

use super::codec::{Head, Scratch};

/// Rows waiting to be committed: their integer columns, and their text and blob columns one
/// after the other in one buffer (a step appends to it; a flush takes it whole and hands back
/// the buffer it emptied, so that steady recording allocates nothing per step).
#[derive(Default)]
pub(super) struct Rows {
    rows: Vec<At>,
    bytes: Vec<u8>,
}

/// A waiting row: its integer columns, and the ends of its `ops`, `body` and `keys` in
/// [`Rows::bytes`] (each starts where the one before ends; the row's `ops` where the row
/// before's `keys` ends). An empty `keys` is `NULL`.
#[derive(Clone, Copy)]
struct At {
    head: Head,
    ends: [usize; 3],
}

impl Rows {
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.rows.clear();
        self.bytes.clear();
    }

    pub(super) fn push(&mut self, head: Head, s: &Scratch) {
        let b = &mut self.bytes;
        b.extend_from_slice(&s.ops);
        let ops = b.len();
        b.extend_from_slice(&s.body);
        let body = b.len();
        b.extend_from_slice(&s.keys);
        self.rows.push(At {
            head,
            ends: [ops, body, b.len()],
        });
    }

    /// Row `i`: its integer columns, `ops`, `body` and `keys`.
    pub(super) fn get(&self, i: usize) -> (&Head, &[u8], &[u8], &[u8]) {
        let at = &self.rows[i];
        let start = i.checked_sub(1).map_or(0, |p| self.rows[p].ends[2]);
        let [ops, body, keys] = at.ends;
        (
            &at.head,
            &self.bytes[start..ops],
            &self.bytes[ops..body],
            &self.bytes[body..keys],
        )
    }

    /// Bytes of text and blob columns waiting.
    pub(super) fn bytes(&self) -> usize {
        self.bytes.len()
    }

    pub(super) fn last(&self) -> Option<&Head> {
        self.rows.last().map(|r| &r.head)
    }
}
