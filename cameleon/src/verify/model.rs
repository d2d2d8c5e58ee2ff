//! The control abstraction of a net (docs/semantics.md §8), compiled for exploration.
//!
//! A state is a packed vector of *fields*: one 2-bit field per connection (EMPTY = 0, NEW = 1,
//! OLD = 2, the `repr` of [`ConnState`]) and one field per operator that declares a finite control
//! state. What an operator can do in a state depends only on the fields it *reads* — its input
//! connections, its output connections and its control field — so the model computes an
//! operator's outcomes once per local combination of those fields, through the engine's own
//! enabling rules (`gather`, the operator's `can_fire`, `back_pressure_ok_with`, `consumes`), and
//! memoises them. The explorer and the PNML export both read outcomes from here: one semantics.
//!
//! For the partial-order reduction (docs/semantics.md §8.6) the model also says, generically
//! from the topology and the same rules, which fields each operator reads and may write, which
//! operators depend on one another, and why a disabled operator is disabled ([`Model::blames`]).

use std::collections::HashMap;

use crate::connection::ConnState;
use crate::connection::NONE;
use crate::net::Net;
use crate::net::{NO_PORT, Topo, back_pressure_ok_on, back_pressure_ok_with, gather, rule_holds};
use crate::operator::FiniteControl;
use crate::operator::{Operator, TypeRef};
use crate::policy::{Enabling, Policy};
use crate::types::DataError;

/// Local combinations up to this many get a dense table (zeroed memory: the pages of combinations
/// never met are never touched, so cost nothing); larger operators a hash map.
const DENSE_MAX: u64 = 1 << 22;
/// A cell not computed yet (computed cells carry `KNOWN`).
const UNKNOWN: u64 = 0;
const KNOWN: u64 = 1 << 63;
/// Operators with at most this many local combinations get their blames by enumeration when
/// their rule is their own (a `custom` policy or a declared control).
const ENUM_MAX: u64 = 1 << 16;
/// Most combinations enumerated to test one candidate blame.
const ENUM_CHECK_MAX: u64 = 1 << 12;

/// A multiplicative hasher for the memo's `u128` keys (mixed-radix indices, already spread).
#[derive(Default)]
pub(crate) struct IndexHasher(u64);

impl std::hash::Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u128(&mut self, i: u128) {
        let h = (i as u64 ^ (i >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
}

type Memo = HashMap<u128, u64, std::hash::BuildHasherDefault<IndexHasher>>;

/// Where a field lives in the packed state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) word: u32,
    pub(crate) shift: u32,
    /// Unshifted mask of the field's bits.
    pub(crate) mask: u64,
    /// How many values the field takes (3 for a connection).
    pub(crate) radix: u32,
}

impl Field {
    #[inline]
    pub(crate) fn get(&self, s: &[u64]) -> u32 {
        ((s[self.word as usize] >> self.shift) & self.mask) as u32
    }

    #[inline]
    pub(crate) fn set(&self, s: &mut [u64], v: u32) {
        let w = &mut s[self.word as usize];
        *w = (*w & !(self.mask << self.shift)) | ((v as u64) << self.shift);
    }
}

/// One operator firing with one emission set: a label of the reachability graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Action {
    pub(crate) op: u32,
    /// Index into the operator's emission sets.
    pub(crate) set: u16,
}

/// What one firing does to the fields it reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub(crate) action: u32,
    /// A connection the firing writes while it is still NEW (a 1-safety violation), or `NONE`.
    pub(crate) overwrites: u32,
    /// The firing strictly increases the potential Σ state (EMPTY 0, NEW 1, OLD 2) over the
    /// connections. A graph whose every edge does so has no cycle.
    pub(crate) grows: bool,
    pub(crate) writes_start: u32,
    pub(crate) writes_end: u32,
}

pub(crate) struct OpModel<'n> {
    pub(crate) op: &'n dyn Operator,
    pub(crate) control: Option<&'n dyn FiniteControl>,
    /// The field of the control state, when it has more than one.
    pub(crate) control_field: Option<u32>,
    /// Fields read: input connections, output connections (deduplicated), then the control field.
    pub(crate) reads: Vec<u32>,
    /// The fields of `reads`, in the same order (read once per candidate of every state).
    pub(crate) read_fields: Vec<Field>,
    /// Number of local combinations (product of the read fields' radices), saturating.
    pub(crate) size: u64,
    /// Connections a firing would write (every output in any emission set): back-pressure.
    writes: Vec<u32>,
    /// Fields a firing may change: the input connections (consumed), the connections of the
    /// outputs in some emission set (emitted), and the control field. A subset of `reads`.
    pub(crate) may_write: Vec<u32>,
    pub(crate) sets: Vec<Vec<u16>>,
    /// Emission sets that are not firing outcomes (bit per set): those with an unconnected
    /// `error` output (docs/semantics.md §4.11).
    dead_sets: u64,
    /// Emission sets whose firing performs the operator's cancellation (bit per set,
    /// docs/semantics.md §10.4).
    cancel_sets: u64,
    pub(crate) first_action: u32,
    table: Vec<u64>,
    /// For operators too large for a dense table whose combinations still fit a `u128`.
    memo: Memo,
}

/// A net's control abstraction: fields, operators, and memoised outcomes.
pub(crate) struct Model<'n> {
    pub(crate) net: &'n Net,
    pub(crate) topo: Topo,
    pub(crate) words: usize,
    pub(crate) n_conns: usize,
    pub(crate) fields: Vec<Field>,
    /// Per word: the low bit of every connection field (NEW = low bit set, high bit clear).
    pub(crate) new_mask: Vec<u64>,
    pub(crate) ops: Vec<OpModel<'n>>,
    pub(crate) actions: Vec<Action>,
    pub(crate) outcomes: Vec<Outcome>,
    pub(crate) writes: Vec<(u32, u32)>,
    pub(crate) initial: Vec<u64>,
    /// Per field: the operators that may write it.
    pub(crate) writers: Vec<Vec<u32>>,
    /// Per operator: the other operators that read a field it may write or may write a field
    /// it reads. An operator and one not in this list commute, and neither enables nor disables
    /// the other.
    pub(crate) dependents: Vec<Vec<u32>>,
    /// Blames found by enumeration, per (operator, local combination).
    blame_memo: HashMap<(u32, u128), Box<[u32]>>,
    /// Operators whose rule may hold with no input NEW (a `source` or `custom` policy, or a
    /// declared control): [`candidates`](Self::candidates) always includes them.
    unguarded: Vec<u32>,
    /// Per connection: its consumer, when that operator's rule needs a NEW input (the built-in
    /// `any`, `all` and `any_no_guard` of docs/semantics.md §3.1, no declared control); `NONE`
    /// otherwise.
    guarded_consumer: Vec<u32>,
    syn: Vec<ConnState>,
    ins: Vec<ConnState>,
    outs: Vec<ConnState>,
    vals: Vec<u32>,
}

fn conn_state(v: u32) -> ConnState {
    match v {
        0 => ConnState::Empty,
        1 => ConnState::New,
        _ => ConnState::Old,
    }
}

mod blame;
mod build;
mod view;

pub(crate) use blame::Blames;
pub(crate) use view::{Outcomes, View};

/// [`Model::candidates`], from the parts of the model it reads (a [`View`] has them too).
#[inline]
fn candidates_of(
    unguarded: &[u32],
    new_mask: &[u64],
    guarded_consumer: &[u32],
    s: &[u64],
    out: &mut Vec<u32>,
) {
    // The first `SMALL` operators in a bit set (in order, once each, whatever order their
    // connections come in); any others in `out`, sorted afterwards.
    const SMALL: u32 = 256;
    let mut bits = [0u64; SMALL as usize / 64];
    out.clear();
    let mut add = |o: u32| {
        if o < SMALL {
            bits[o as usize / 64] |= 1 << (o % 64);
        } else {
            out.push(o);
        }
    };
    for (i, (&w, &m)) in s.iter().zip(new_mask).enumerate() {
        let mut new = w & !(w >> 1) & m;
        while new != 0 {
            let bit = new.trailing_zeros();
            new &= new - 1;
            let o = guarded_consumer[i * 32 + bit as usize / 2];
            if o != NONE {
                add(o);
            }
        }
    }
    for &o in unguarded {
        add(o);
    }
    let large = out.len();
    for (k, &b) in bits.iter().enumerate() {
        let mut b = b;
        while b != 0 {
            out.push(k as u32 * 64 + b.trailing_zeros());
            b &= b - 1;
        }
    }
    if large > 0 {
        out.rotate_left(large);
        let tail = &mut out[..];
        let small = tail.len() - large;
        tail[small..].sort_unstable();
        let mut kept = small;
        for r in small..tail.len() {
            if r == small || tail[r] != tail[kept - 1] {
                tail[kept] = tail[r];
                kept += 1;
            }
        }
        out.truncate(kept);
    }
}

impl<'n> Model<'n> {
    /// Whether some connection is NEW in state `s`.
    #[inline]
    pub(crate) fn any_new(&self, s: &[u64]) -> bool {
        s.iter()
            .zip(&self.new_mask)
            .any(|(&w, &m)| w & !(w >> 1) & m != 0)
    }

    /// The operators that may be enabled in state `s`, in declaration order: those whose
    /// rule needs a NEW input and has one, and the others. Every operator not listed has no
    /// outcome in `s`.
    #[inline]
    pub(crate) fn candidates(&self, s: &[u64], out: &mut Vec<u32>) {
        candidates_of(
            &self.unguarded,
            &self.new_mask,
            &self.guarded_consumer,
            s,
            out,
        );
    }

    /// The outcomes of operator `o` in state `s`, as a range of `self.outcomes`.
    #[inline]
    pub(crate) fn outcomes_in(&mut self, o: usize, s: &[u64]) -> (usize, usize) {
        let om = &self.ops[o];
        let mut idx = 0u128;
        let dense = !om.table.is_empty();
        if dense {
            let mut i = 0usize;
            for field in &om.read_fields {
                i = i * field.radix as usize + field.get(s) as usize;
            }
            let cell = om.table[i];
            if cell != UNKNOWN {
                return unpack(cell);
            }
            idx = i as u128;
        } else if om.size < u64::MAX {
            // Saturated sizes (more than 2^64 combinations) are never memoised.
            for field in &om.read_fields {
                idx = idx * field.radix as u128 + field.get(s) as u128;
            }
            if let Some(&cell) = om.memo.get(&idx) {
                return unpack(cell);
            }
        }
        let mut vals = std::mem::take(&mut self.vals);
        vals.clear();
        vals.extend(om.read_fields.iter().map(|field| field.get(s)));
        let cell = self.compute(o, &vals);
        self.vals = vals;
        let om = &mut self.ops[o];
        if dense {
            om.table[idx as usize] = cell;
        } else if om.size < u64::MAX {
            om.memo.insert(idx, cell);
        }
        unpack(cell)
    }

    /// The memo cell of operator `o` for the local values `vals` (one per read field), computed
    /// if not known yet.
    pub(crate) fn cell_of(&mut self, o: usize, vals: &[u32]) -> u64 {
        let om = &self.ops[o];
        let mut idx = 0u128;
        for (&f, &v) in om.reads.iter().zip(vals) {
            idx = idx * self.fields[f as usize].radix as u128 + v as u128;
        }
        let known = if !om.table.is_empty() {
            om.table[idx as usize]
        } else if om.size < u64::MAX {
            om.memo.get(&idx).copied().unwrap_or(UNKNOWN)
        } else {
            UNKNOWN
        };
        if known != UNKNOWN {
            return known;
        }
        let cell = self.compute(o, vals);
        let om = &mut self.ops[o];
        if !om.table.is_empty() {
            om.table[idx as usize] = cell;
        } else if om.size < u64::MAX {
            om.memo.insert(idx, cell);
        }
        cell
    }

    /// The outcomes of operator `o` for the local values `vals` (one per read field), computed
    /// with the engine's rules on a synthetic marking. Appends to `self.outcomes`.
    pub(crate) fn compute(&mut self, o: usize, vals: &[u32]) -> u64 {
        let start = self.outcomes.len();
        let om = &self.ops[o];
        let n_conns = self.n_conns;
        let mut q = 0;
        for (&f, &v) in om.reads.iter().zip(vals) {
            if (f as usize) < n_conns {
                self.syn[f as usize] = conn_state(v);
            } else {
                q = v;
            }
        }
        gather(&self.topo, &self.syn, o, &mut self.ins, &mut self.outs);
        let e = Enabling {
            inputs: &self.ins,
            outputs: &self.outs,
            policy: self.topo.policy[o],
        };
        let rule = match om.control {
            Some(c) => c.can_fire(q, &e),
            None => rule_holds(om.op, &e),
        };
        if !rule {
            return pack(start, 0);
        }
        // What the firing consumes, by the control state it fires in when it declares one
        // (docs/semantics.md §10.9): it decides back-pressure on a self-loop (§3.2) as well as
        // the next marking. Otherwise the operator says, as in the engine.
        let controlled = om.control.and_then(|c| c.consumes(q, &self.ins));
        let free = match controlled {
            Some(set) => back_pressure_ok_with(&self.topo, &self.syn, o, &om.writes, set),
            None => back_pressure_ok_on(om.op, &self.topo, &self.syn, o, &self.ins, &om.writes),
        };
        if !free {
            return pack(start, 0);
        }
        let consumed = controlled.unwrap_or_else(|| om.op.consumes(&self.ins));
        // Consumption first (NEW -> OLD), as the engine applies a firing (docs/semantics.md §4.5) ...
        for (p, &c) in self.topo.ins(o).iter().enumerate() {
            if c != NONE && consumed.contains(p) && self.syn[c as usize] == ConnState::New {
                self.syn[c as usize] = ConnState::Old;
            }
        }
        let choices: Vec<(usize, u32)> = match om.control {
            Some(c) => c
                .fire(q, &self.ins)
                .into_iter()
                .filter(|&(set, next)| set < om.sets.len() && next < c.count())
                .collect(),
            None => (0..om.sets.len()).map(|set| (set, q)).collect(),
        };
        let dead = om.dead_sets;
        let choices: Vec<(usize, u32)> = choices
            .into_iter()
            .filter(|&(set, _)| set >= 64 || dead & (1 << set) == 0)
            .collect();
        let consumed_state: Vec<ConnState> = om
            .reads
            .iter()
            .filter(|&&f| (f as usize) < n_conns)
            .map(|&f| self.syn[f as usize])
            .collect();
        for (set, next) in choices {
            let om = &self.ops[o];
            for (&f, &st) in om.reads.iter().zip(&consumed_state) {
                self.syn[f as usize] = st;
            }
            // ... the cancellation's region, when this emission set triggers it ...
            if set < 64 && om.cancel_sets & (1 << set) != 0 {
                for &c in self.topo.cancels(o) {
                    if self.syn[c as usize] == ConnState::New {
                        self.syn[c as usize] = ConnState::Old;
                    }
                }
            }
            // ... then emission: each connection of each emitted port becomes NEW.
            let mut overwrites = NONE;
            for &p in &om.sets[set] {
                if (p as usize) < self.topo.n_outputs(o) {
                    for &c in self.topo.port_conns(o, p as usize) {
                        if self.syn[c as usize] == ConnState::New && overwrites == NONE {
                            overwrites = c;
                        }
                        self.syn[c as usize] = ConnState::New;
                    }
                }
            }
            let writes_start = self.writes.len() as u32;
            let mut delta = 0i64;
            for (&f, &v) in om.reads.iter().zip(vals) {
                let now = if (f as usize) < n_conns {
                    let now = self.syn[f as usize] as u32;
                    delta += now as i64 - v as i64;
                    now
                } else {
                    next
                };
                if now != v {
                    debug_assert!(
                        om.may_write.contains(&f),
                        "a firing writes only what it may"
                    );
                    self.writes.push((f, now));
                }
            }
            self.outcomes.push(Outcome {
                action: om.first_action + set as u32,
                overwrites,
                grows: delta > 0,
                writes_start,
                writes_end: self.writes.len() as u32,
            });
        }
        pack(start, self.outcomes.len() - start)
    }

    /// Applies outcome `k` to state `s` in place.
    #[inline]
    pub(crate) fn apply(&self, k: usize, s: &mut [u64]) {
        let oc = &self.outcomes[k];
        for &(f, v) in &self.writes[oc.writes_start as usize..oc.writes_end as usize] {
            self.fields[f as usize].set(s, v);
        }
    }

    /// The instance name of action `a`'s operator.
    pub(crate) fn name(&self, a: u32) -> &str {
        &self.net.ops[self.actions[a as usize].op as usize].name
    }

    /// The label of action `a`: the operator's name, followed by `:` and the emitted ports
    /// (`+`-separated, `none` for the empty set) when the operator has several emission sets.
    pub(crate) fn label(&self, a: u32) -> String {
        let Action { op, set } = self.actions[a as usize];
        let node = &self.net.ops[op as usize];
        let sets = &self.ops[op as usize].sets;
        if sets.len() <= 1 {
            return node.name.clone();
        }
        let ports: Vec<&str> = sets[set as usize]
            .iter()
            .filter_map(|&p| node.spec.outputs.get(p as usize).map(|p| p.name.as_ref()))
            .collect();
        if ports.is_empty() {
            format!("{}:none", node.name)
        } else {
            format!("{}:{}", node.name, ports.join("+"))
        }
    }

    /// The local combinations of operator `o` met so far (mixed-radix indices, sorted), or
    /// `None` if they are not recorded (more than 2^64 combinations).
    pub(crate) fn met_combinations(&self, o: usize) -> Option<Vec<u128>> {
        let om = &self.ops[o];
        let mut met: Vec<u128> = if !om.table.is_empty() {
            (0..om.table.len())
                .filter(|&i| om.table[i] != UNKNOWN)
                .map(|i| i as u128)
                .collect()
        } else if om.size < u64::MAX {
            om.memo.keys().copied().collect()
        } else {
            return None;
        };
        met.sort_unstable();
        Some(met)
    }

    /// The local values of combination `idx` of operator `o` (inverse of the mixed radix).
    pub(crate) fn decode(&self, o: usize, mut idx: u128, vals: &mut Vec<u32>) {
        let reads = &self.ops[o].reads;
        vals.clear();
        vals.resize(reads.len(), 0);
        for i in (0..reads.len()).rev() {
            let r = self.fields[reads[i] as usize].radix as u128;
            vals[i] = (idx % r) as u32;
            idx /= r;
        }
    }

    /// The operator owning control field `f`.
    pub(crate) fn control_owner(&self, f: usize) -> usize {
        self.ops
            .iter()
            .position(|om| om.control_field == Some(f as u32))
            .unwrap_or(0)
    }

    /// The state of connection `c` in `s`.
    pub(crate) fn conn(&self, s: &[u64], c: usize) -> ConnState {
        conn_state(self.fields[c].get(s))
    }

    /// Expands `s`: calls `f(outcome index)` for every outcome of every operator, in
    /// declaration order then emission-set order.
    pub(crate) fn for_each_outcome(&mut self, s: &[u64], mut f: impl FnMut(&Self, usize)) {
        for o in 0..self.ops.len() {
            let (start, len) = self.outcomes_in(o, s);
            for k in start..start + len {
                f(self, k);
            }
        }
    }
}

#[inline]
pub(crate) fn pack(start: usize, len: usize) -> u64 {
    KNOWN | ((start as u64) << 24) | len as u64
}

#[inline]
pub(crate) fn unpack(cell: u64) -> (usize, usize) {
    (
        ((cell & !KNOWN) >> 24) as usize,
        (cell & 0xff_ffff) as usize,
    )
}
