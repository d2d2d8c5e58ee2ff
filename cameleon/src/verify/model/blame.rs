//! Blames of a disabled operator: the sets of fields that keep it disabled, what the stubborn
//! sets' condition D2 closes over (docs/semantics.md §8.6).

use super::*;

impl Model<'_> {
    /// Sets of fields that keep operator `o`, disabled in state `s`, disabled: for each set,
    /// every state that agrees with `s` on those fields has `o` disabled, so `o` cannot become
    /// enabled before an operator that may write one of them fires (a *necessary enabling set*
    /// of docs/semantics.md §8.6). Candidates, from the cheapest to find:
    ///
    /// - back-pressure (§3.2): a connection `o` would write holds a token another operator
    ///   consumes: `{c}`;
    /// - the rule of a built-in policy (§3.1), when no declared control replaces it: an EMPTY
    ///   input of `any`, an input of `all` not NEW, an output connection of `source` not EMPTY
    ///   (each alone), or all the inputs of `any`/`any_no_guard` when none is NEW;
    /// - for an operator with a rule of its own and few combinations, a small set found by
    ///   enumerating its combinations;
    /// - always: every field `o` reads (its outcomes are a function of them).
    pub(crate) fn blames(&mut self, o: usize, s: &[u64], out: &mut Blames) {
        out.clear();
        let om = &self.ops[o];
        let topo = &self.topo;
        let conn = |c: u32| conn_state(self.fields[c as usize].get(s));
        for &c in &om.writes {
            if conn(c) == ConnState::New && topo.consumer[c as usize] != o as u32 {
                out.push(&[c]);
            }
        }
        let policy = topo.policy[o];
        if om.control.is_none() {
            let ins = || topo.ins(o).iter().copied().filter(|&c| c != NONE);
            match policy {
                Policy::Any => {
                    let mut empty = false;
                    for c in ins() {
                        if conn(c) == ConnState::Empty {
                            out.push(&[c]);
                            empty = true;
                        }
                    }
                    if !empty && ins().all(|c| conn(c) != ConnState::New) {
                        out.push_iter(ins());
                    }
                }
                Policy::All => {
                    for &c in topo.ins(o) {
                        if c == NONE {
                            out.push(&[]); // an unconnected optional input is OLD for good
                        } else if conn(c) != ConnState::New {
                            out.push(&[c]);
                        }
                    }
                }
                Policy::AnyNoGuard => {
                    if ins().all(|c| conn(c) != ConnState::New) {
                        out.push_iter(ins());
                    }
                }
                Policy::Source => {
                    for &c in topo.outs(o) {
                        if conn(c) != ConnState::Empty {
                            out.push(&[c]);
                        }
                    }
                }
                Policy::Custom => {}
            }
        }
        if (om.control.is_some() || policy == Policy::Custom) && om.size <= ENUM_MAX {
            let blame = self.enumerated_blame(o, s);
            out.push(&blame);
        }
        let om = &self.ops[o];
        out.push(&om.reads);
    }

    /// A small set of `o`'s read fields that keeps it disabled whatever the others hold, found
    /// by enumeration: starting from all of them, each field is dropped if every combination
    /// agreeing on the rest (at most `ENUM_CHECK_MAX` of them) leaves `o` disabled. Memoised
    /// per local combination.
    fn enumerated_blame(&mut self, o: usize, s: &[u64]) -> Box<[u32]> {
        let reads = self.ops[o].reads.clone();
        let vals: Vec<u32> = reads
            .iter()
            .map(|&f| self.fields[f as usize].get(s))
            .collect();
        let mut idx = 0u128;
        for (&f, &v) in reads.iter().zip(&vals) {
            idx = idx * self.fields[f as usize].radix as u128 + v as u128;
        }
        if let Some(b) = self.blame_memo.get(&(o as u32, idx)) {
            return b.clone();
        }
        // Drop output connections first, then inputs, the control field last: the operator is
        // the only writer of its control, so keeping that field costs nothing.
        let n_ins = self.topo.ins(o).iter().filter(|&&c| c != NONE).count();
        let mut order: Vec<usize> = (0..reads.len()).collect();
        order.sort_by_key(|&i| {
            if reads[i] as usize >= self.n_conns {
                2
            } else if i < n_ins {
                1
            } else {
                0
            }
        });
        let mut keep = vec![true; reads.len()];
        let mut trial = vals.clone();
        for i in order {
            keep[i] = false;
            if !self.disabled_whatever(o, &reads, &vals, &keep, &mut trial) {
                keep[i] = true;
            }
        }
        let blame: Box<[u32]> = reads
            .iter()
            .zip(&keep)
            .filter(|&(_, &k)| k)
            .map(|(&f, _)| f)
            .collect();
        self.blame_memo.insert((o as u32, idx), blame.clone());
        blame
    }

    /// Whether `o` is disabled in every combination that agrees with `vals` where `keep` is
    /// set; `false` when there are more than `ENUM_CHECK_MAX` such combinations.
    fn disabled_whatever(
        &mut self,
        o: usize,
        reads: &[u32],
        vals: &[u32],
        keep: &[bool],
        trial: &mut [u32],
    ) -> bool {
        let free: Vec<usize> = (0..reads.len()).filter(|&i| !keep[i]).collect();
        let count = free.iter().fold(1u64, |acc, &i| {
            acc.saturating_mul(self.fields[reads[i] as usize].radix as u64)
        });
        if count > ENUM_CHECK_MAX {
            return false;
        }
        trial.copy_from_slice(vals);
        for &i in &free {
            trial[i] = 0;
        }
        loop {
            if unpack(self.cell_of(o, trial)).1 > 0 {
                return false;
            }
            // Next combination of the free fields (an odometer).
            let mut carry = true;
            for &i in &free {
                trial[i] += 1;
                if trial[i] < self.fields[reads[i] as usize].radix {
                    carry = false;
                    break;
                }
                trial[i] = 0;
            }
            if carry {
                return true;
            }
        }
    }
}

/// Candidate blames of a disabled operator (see [`Model::blames`]), flattened.
#[derive(Debug, Default)]
pub(crate) struct Blames {
    fields: Vec<u32>,
    ends: Vec<usize>,
}

impl Blames {
    fn clear(&mut self) {
        self.fields.clear();
        self.ends.clear();
    }

    fn push(&mut self, set: &[u32]) {
        self.fields.extend_from_slice(set);
        self.ends.push(self.fields.len());
    }

    fn push_iter(&mut self, set: impl Iterator<Item = u32>) {
        self.fields.extend(set);
        self.ends.push(self.fields.len());
    }

    /// How many candidates.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Candidate `i`.
    pub(crate) fn get(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.fields[start..self.ends[i]]
    }
}
