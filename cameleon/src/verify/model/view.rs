//! A read-only view of a [`Model`]'s memoised outcomes, which the threads of a parallel
//! exploration share (`parallel.rs`). It never calls an operator (operators are `Send`, not
//! `Sync`): an outcome not computed yet is a *miss*, and the state that needs it is expanded
//! by the thread that owns the model. [`Outcomes`] is what an expansion reads: a view or the model.

use super::{Field, Memo, Model, Outcome, UNKNOWN, candidates_of, unpack};

/// One operator's memo, as the view reads it.
#[derive(Clone)]
pub(crate) struct OpView<'a> {
    reads: &'a [Field],
    size: u64,
    table: &'a [u64],
    memo: &'a Memo,
}

/// The parts of a [`Model`] an expansion reads, shareable between threads.
#[derive(Clone)]
pub(crate) struct View<'a> {
    fields: &'a [Field],
    new_mask: &'a [u64],
    ops: Vec<OpView<'a>>,
    pub(crate) outcomes: &'a [Outcome],
    writes: &'a [(u32, u32)],
    unguarded: &'a [u32],
    guarded_consumer: &'a [u32],
}

impl Model<'_> {
    /// The read-only view of the outcomes computed so far.
    pub(crate) fn view(&self) -> View<'_> {
        View {
            fields: &self.fields,
            new_mask: &self.new_mask,
            ops: self
                .ops
                .iter()
                .map(|om| OpView {
                    reads: &om.read_fields,
                    size: om.size,
                    table: &om.table,
                    memo: &om.memo,
                })
                .collect(),
            outcomes: &self.outcomes,
            writes: &self.writes,
            unguarded: &self.unguarded,
            guarded_consumer: &self.guarded_consumer,
        }
    }
}

impl View<'_> {
    /// [`Model::any_new`].
    #[inline]
    pub(crate) fn any_new(&self, s: &[u64]) -> bool {
        s.iter()
            .zip(self.new_mask)
            .any(|(&w, &m)| w & !(w >> 1) & m != 0)
    }

    /// [`Model::candidates`]: the same operators, in the same order.
    #[inline]
    pub(crate) fn candidates(&self, s: &[u64], out: &mut Vec<u32>) {
        candidates_of(self.unguarded, self.new_mask, self.guarded_consumer, s, out);
    }

    /// [`Model::outcomes_in`] when it is known; `None` when the model must compute it.
    #[inline(always)]
    pub(crate) fn outcomes_in(&self, o: usize, s: &[u64]) -> Option<(usize, usize)> {
        let om = &self.ops[o];
        let cell = if !om.table.is_empty() {
            let mut i = 0usize;
            for field in om.reads {
                i = i * field.radix as usize + field.get(s) as usize;
            }
            om.table[i]
        } else if om.size < u64::MAX {
            let mut idx = 0u128;
            for field in om.reads {
                idx = idx * field.radix as u128 + field.get(s) as u128;
            }
            om.memo.get(&idx).copied().unwrap_or(UNKNOWN)
        } else {
            UNKNOWN
        };
        (cell != UNKNOWN).then(|| unpack(cell))
    }

    /// [`Model::apply`].
    #[inline]
    pub(crate) fn apply(&self, k: usize, s: &mut [u64]) {
        let oc = &self.outcomes[k];
        for &(f, v) in &self.writes[oc.writes_start as usize..oc.writes_end as usize] {
            self.fields[f as usize].set(s, v);
        }
    }
}

/// What an expansion reads: the model itself (which computes what it does not know) or a
/// [`View`] of it (which does not).
pub(crate) trait Outcomes {
    fn candidates(&self, s: &[u64], out: &mut Vec<u32>);
    /// `None`: not computed yet.
    fn outcomes_in(&mut self, o: usize, s: &[u64]) -> Option<(usize, usize)>;
    fn apply(&self, k: usize, s: &mut [u64]);
    fn outcome(&self, k: usize) -> &Outcome;
    fn any_new(&self, s: &[u64]) -> bool;
}

impl Outcomes for View<'_> {
    #[inline(always)]
    fn candidates(&self, s: &[u64], out: &mut Vec<u32>) {
        View::candidates(self, s, out)
    }
    #[inline(always)]
    fn outcomes_in(&mut self, o: usize, s: &[u64]) -> Option<(usize, usize)> {
        View::outcomes_in(self, o, s)
    }
    #[inline(always)]
    fn apply(&self, k: usize, s: &mut [u64]) {
        View::apply(self, k, s)
    }
    #[inline(always)]
    fn outcome(&self, k: usize) -> &Outcome {
        &self.outcomes[k]
    }
    #[inline(always)]
    fn any_new(&self, s: &[u64]) -> bool {
        View::any_new(self, s)
    }
}

impl Outcomes for Model<'_> {
    #[inline(always)]
    fn candidates(&self, s: &[u64], out: &mut Vec<u32>) {
        Model::candidates(self, s, out)
    }
    #[inline(always)]
    fn outcomes_in(&mut self, o: usize, s: &[u64]) -> Option<(usize, usize)> {
        Some(Model::outcomes_in(self, o, s))
    }
    #[inline(always)]
    fn apply(&self, k: usize, s: &mut [u64]) {
        Model::apply(self, k, s)
    }
    #[inline(always)]
    fn outcome(&self, k: usize) -> &Outcome {
        &self.outcomes[k]
    }
    #[inline(always)]
    fn any_new(&self, s: &[u64]) -> bool {
        Model::any_new(self, s)
    }
}
