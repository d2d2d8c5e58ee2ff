//! Partial-order reduction: exploration with stubborn sets and the bottom-component proviso
//! (docs/semantics.md §8.6).
//!
//! In each state a *stubborn set* of operators is computed from the model's generic read and
//! write sets ([`Model::dependents`](super::model::Model)) and blames
//! ([`Model::blames`](super::model::Model::blames)):
//!
//! - it contains an enabled operator (D0);
//! - with an enabled operator, every operator dependent on it (D1: the others commute with it
//!   and neither enable nor disable it);
//! - with a disabled operator, every operator that may write a field of one of its blames (D2:
//!   the others cannot enable it).
//!
//! Only the enabled operators of the set fire. After the graph is built, every bottom strongly
//! connected component that has an edge but no fully expanded state gets one state expanded
//! fully, and the exploration goes on from what that adds, until there is none: the proviso
//! that makes option to complete, dead operators and 1-safety exact (no firing is ignored for
//! ever), while deadlocks need only D0–D2.

use super::explore::{Edges, Explored, Progress, Scc, tarjan};
use super::model::{Blames, Model};
use super::store::{ROOT, hash};
use crate::connection::NONE;

/// The stubborn-set computation's scratch space.
#[derive(Default)]
struct Stubborn {
    /// Per operator: the generation in which it joined the set being built.
    mark: Vec<u32>,
    generation: u32,
    work: Vec<u32>,
    set: Vec<u32>,
    best: Vec<u32>,
    blames: Blames,
}

impl Stubborn {
    fn new(n_ops: usize) -> Self {
        Stubborn {
            mark: vec![0; n_ops],
            ..Stubborn::default()
        }
    }

    /// A stubborn set of state `s` (non-terminal; `enabled` per operator, `enabled_list` the
    /// enabled operators in order): the closure from each enabled operator in turn, keeping
    /// the one with the fewest enabled operators (the first such). Leaves it, sorted, in
    /// `self.best`, and returns how many of its operators are enabled.
    fn compute(
        &mut self,
        model: &mut Model<'_>,
        s: &[u64],
        enabled: &[bool],
        enabled_list: &[u32],
    ) -> usize {
        let mut best = usize::MAX;
        for &seed in enabled_list {
            if let Some(n) = self.closure(model, s, enabled, seed, best) {
                best = n;
                std::mem::swap(&mut self.best, &mut self.set);
                if n == 1 {
                    break;
                }
            }
        }
        self.best.sort_unstable();
        best
    }

    /// The closure of `{seed}` under D1 and D2, in `self.set`; `None` as soon as it has
    /// `limit` enabled operators (not better than the best so far).
    fn closure(
        &mut self,
        model: &mut Model<'_>,
        s: &[u64],
        enabled: &[bool],
        seed: u32,
        limit: usize,
    ) -> Option<usize> {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.mark.fill(0);
            self.generation = 1;
        }
        let generation = self.generation;
        self.set.clear();
        self.work.clear();
        self.work.push(seed);
        self.mark[seed as usize] = generation;
        let mut n_enabled = 0;
        while let Some(o) = self.work.pop() {
            self.set.push(o);
            if enabled[o as usize] {
                n_enabled += 1;
                if n_enabled >= limit {
                    return None;
                }
                for &d in &model.dependents[o as usize] {
                    if self.mark[d as usize] != generation {
                        self.mark[d as usize] = generation;
                        self.work.push(d);
                    }
                }
            } else {
                model.blames(o as usize, s, &mut self.blames);
                // The blame that brings the fewest new enabled operators, then the fewest new
                // operators, into the set.
                let mut pick = 0;
                let mut pick_cost = (usize::MAX, usize::MAX);
                for i in 0..self.blames.len() {
                    let mut cost = (0, 0);
                    for &f in self.blames.get(i) {
                        for &w in &model.writers[f as usize] {
                            if self.mark[w as usize] != generation {
                                cost.0 += enabled[w as usize] as usize;
                                cost.1 += 1;
                            }
                        }
                    }
                    if cost < pick_cost {
                        (pick, pick_cost) = (i, cost);
                        if cost == (0, 0) {
                            break;
                        }
                    }
                }
                for &f in self.blames.get(pick) {
                    for &w in &model.writers[f as usize] {
                        if self.mark[w as usize] != generation {
                            self.mark[w as usize] = generation;
                            self.work.push(w);
                        }
                    }
                }
            }
        }
        Some(n_enabled)
    }
}

/// The reduced exploration: breadth-first with stubborn sets, then the proviso, at most
/// `max_states` states stored.
pub(crate) fn explore_reduced(
    model: &mut Model<'_>,
    max_states: u64,
    progress: &mut dyn FnMut(&Progress),
) -> Explored {
    let max_states = max_states.clamp(1, u32::MAX as u64 - 1) as usize;
    let mut ex = Explored::new(
        model,
        Some(Edges {
            start: vec![0],
            ..Edges::default()
        }),
    );
    let initial = model.initial.clone();
    ex.insert(model, &initial, hash(&initial), ROOT, max_states);
    let mut r = Reducer {
        stubborn: Stubborn::new(model.ops.len()),
        enabled: vec![false; model.ops.len()],
        enabled_list: Vec::new(),
        candidates: Vec::new(),
        full: Vec::new(),
        succ: Vec::new(),
        max_states,
    };
    'rounds: loop {
        while ex.expanded < ex.len() {
            if !r.expand(model, &mut ex) {
                break 'rounds;
            }
            if ex.expanded & 0xfff == 0 {
                progress(&progress_of(&ex, max_states));
            }
        }
        // The proviso: a bottom component with an edge and no fully expanded state gets its
        // first state expanded fully.
        let mut todo: Vec<u32> = Vec::new();
        {
            let edges = ex.edges.as_ref();
            let expanded = ex.expanded;
            let mut out_of = |v: u32, out: &mut Vec<u32>| {
                out.clear();
                if let Some(e) = edges.filter(|_| (v as usize) < expanded) {
                    let i = v as usize;
                    out.extend_from_slice(&e.succ[e.start[i] as usize..e.start[i + 1] as usize]);
                    if let Some(more) = e.extra.get(&v) {
                        out.extend_from_slice(more);
                    }
                }
            };
            tarjan(
                ex.len(),
                &mut out_of,
                |_, _| false,
                |members: &[u32], scc: Scc| {
                    if scc.bottom && scc.cyclic && !members.iter().any(|&m| r.full[m as usize]) {
                        todo.push(members.iter().copied().min().unwrap_or(0));
                    }
                },
            );
        }
        if todo.is_empty() {
            break;
        }
        todo.sort_unstable();
        for v in todo {
            ex.proviso_expansions += 1;
            if !r.expand_rest(model, &mut ex, v) {
                break 'rounds;
            }
        }
    }
    progress(&progress_of(&ex, max_states));
    ex
}

fn progress_of(ex: &Explored, max_states: usize) -> Progress {
    Progress {
        states: ex.len() as u64,
        expanded: ex.expanded as u64,
        edges: ex.n_edges,
        max_states: max_states as u64,
    }
}

struct Reducer {
    stubborn: Stubborn,
    enabled: Vec<bool>,
    enabled_list: Vec<u32>,
    candidates: Vec<u32>,
    /// Per expanded state: every enabled operator fired there.
    full: Vec<bool>,
    succ: Vec<u32>,
    max_states: usize,
}

impl Reducer {
    /// Computes which operators are enabled in `s`.
    fn enabled_in(&mut self, model: &mut Model<'_>, ex: &mut Explored, s: &[u64]) {
        self.enabled_list.clear();
        self.enabled.fill(false);
        model.candidates(s, &mut self.candidates);
        for &o in &self.candidates {
            if model.outcomes_in(o as usize, s).1 > 0 {
                self.enabled[o as usize] = true;
                ex.op_enabled[o as usize] = true;
                self.enabled_list.push(o);
            }
        }
    }

    /// Fires every outcome of the operators `ops` that are enabled in state `v`, recording the
    /// targets in `self.succ`; `false` if the budget ran out.
    fn fire(&mut self, model: &mut Model<'_>, ex: &mut Explored, v: u32, ops: &[u32]) -> bool {
        let s = ex.state(v).to_vec();
        let mut next = s.clone();
        self.succ.clear();
        for &o in ops {
            if !self.enabled[o as usize] {
                continue;
            }
            let (start, len) = model.outcomes_in(o as usize, &s);
            for k in start..start + len {
                next.copy_from_slice(&s);
                model.apply(k, &mut next);
                let Some(t) = ex.insert(model, &next, hash(&next), v, self.max_states) else {
                    ex.budget_hit = true;
                    return false;
                };
                self.succ.push(t);
                let oc = &model.outcomes[k];
                ex.all_grow &= oc.grows;
                if ex.overwrite.is_none() && oc.overwrites != NONE {
                    ex.overwrite = Some((v, k));
                }
            }
        }
        true
    }

    /// Expands the next state with a stubborn set; `false` if the budget ran out.
    fn expand(&mut self, model: &mut Model<'_>, ex: &mut Explored) -> bool {
        let v = ex.expanded as u32;
        let s = ex.state(v).to_vec();
        self.enabled_in(model, ex, &s);
        let full = if self.enabled_list.is_empty() {
            self.succ.clear();
            if ex.first_deadlock.is_none() && model.any_new(&s) {
                ex.first_deadlock = Some(v);
            }
            true
        } else {
            let n = self
                .stubborn
                .compute(model, &s, &self.enabled, &self.enabled_list);
            let set = std::mem::take(&mut self.stubborn.best);
            let ok = self.fire(model, ex, v, &set);
            self.stubborn.best = set;
            if !ok {
                return false;
            }
            n == self.enabled_list.len()
        };
        let e = ex.edges.get_or_insert_with(Edges::default);
        e.succ.extend_from_slice(&self.succ);
        e.start.push(e.succ.len() as u64);
        ex.n_edges += self.succ.len() as u64;
        self.full.push(full);
        ex.expanded += 1;
        true
    }

    /// Fires in the expanded state `v` the enabled operators its stubborn set left out (the
    /// proviso); `false` if the budget ran out.
    fn expand_rest(&mut self, model: &mut Model<'_>, ex: &mut Explored, v: u32) -> bool {
        let s = ex.state(v).to_vec();
        self.enabled_in(model, ex, &s);
        // The same stubborn set as before: the computation depends on the state only.
        self.stubborn
            .compute(model, &s, &self.enabled, &self.enabled_list);
        let rest: Vec<u32> = self
            .enabled_list
            .iter()
            .copied()
            .filter(|o| self.stubborn.best.binary_search(o).is_err())
            .collect();
        let ok = self.fire(model, ex, v, &rest);
        if !self.succ.is_empty() {
            let e = ex.edges.get_or_insert_with(Edges::default);
            e.extra.entry(v).or_default().extend_from_slice(&self.succ);
            ex.n_edges += self.succ.len() as u64;
        }
        self.full[v as usize] = true;
        ok
    }
}
