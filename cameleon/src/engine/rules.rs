//! The enabling rules (SPEC §3) over a net's topology, shared by the engine and the verifier:
//! one implementation of the rules, not two.

use crate::connection::ConnState;
use crate::history::NONE;
use crate::net::Net;
use crate::operator::{InputSet, InputSlot, Operator};
use crate::policy::{Enabling, Policy, fold_port_state};
use crate::types::{TypeInfo, Value};

#[derive(Debug, Default)]
pub(crate) struct Topo {
    /// Per op, start into `in_conn` (len = ops + 1).
    pub(crate) in_start: Vec<u32>,
    /// Per input port: its connection, or NONE (optional, unconnected).
    pub(crate) in_conn: Vec<u32>,
    /// Per op, start into `port_start` (global output port index; len = ops + 1).
    pub(crate) out_start: Vec<u32>,
    /// Per global output port, start into `out_conns` (len = ports + 1).
    pub(crate) port_start: Vec<u32>,
    /// Output connections grouped by port, ports grouped by op.
    pub(crate) out_conns: Vec<u32>,
    /// Per global output port, its resolved type (`None` for `Any`: not checked).
    pub(crate) port_type: Vec<Option<&'static TypeInfo>>,
    /// Per connection: producer op, consumer op, consumer's input port.
    pub(crate) producer: Vec<u32>,
    pub(crate) consumer: Vec<u32>,
    pub(crate) consumer_port: Vec<u16>,
    /// Per connection: its consumer's global input index (into `in_conn`).
    pub(crate) in_slot: Vec<u32>,
    /// Per connection: its producer's global output port index (into `port_start`).
    pub(crate) out_port: Vec<u32>,
    pub(crate) policy: Vec<Policy>,
}

impl Topo {
    pub(crate) fn new(net: &Net) -> Self {
        let mut t = Topo::default();
        let n_conns = net.conns.len();
        let mut in_of: Vec<Vec<u32>> = net
            .ops
            .iter()
            .map(|o| vec![NONE; o.spec.inputs.len()])
            .collect();
        let mut out_of: Vec<Vec<Vec<u32>>> = net
            .ops
            .iter()
            .map(|o| vec![Vec::new(); o.spec.outputs.len()])
            .collect();
        t.producer = Vec::with_capacity(n_conns);
        for (i, c) in net.conns.iter().enumerate() {
            in_of[c.to.op.index()][c.to.port as usize] = i as u32;
            out_of[c.from.op.index()][c.from.port as usize].push(i as u32);
            t.producer.push(c.from.op.0);
            t.consumer.push(c.to.op.0);
            t.consumer_port.push(c.to.port);
        }
        for (o, node) in net.ops.iter().enumerate() {
            t.in_start.push(t.in_conn.len() as u32);
            t.in_conn.extend(&in_of[o]);
            t.out_start.push(t.port_start.len() as u32);
            for (p, conns) in out_of[o].iter().enumerate() {
                t.port_start.push(t.out_conns.len() as u32);
                t.out_conns.extend(conns);
                let ty = node.out_types[p];
                t.port_type.push((!ty.is_any()).then_some(ty));
            }
            // SPEC §3: an operator with zero inputs and no custom rule uses `Source`.
            let policy = match node.spec.policy {
                Policy::Custom => Policy::Custom,
                _ if node.spec.inputs.is_empty() => Policy::Source,
                p => p,
            };
            t.policy.push(policy);
        }
        t.in_start.push(t.in_conn.len() as u32);
        t.out_start.push(t.port_start.len() as u32);
        t.port_start.push(t.out_conns.len() as u32);
        t.in_slot = net
            .conns
            .iter()
            .map(|c| t.in_start[c.to.op.index()] + c.to.port as u32)
            .collect();
        t.out_port = net
            .conns
            .iter()
            .map(|c| t.out_start[c.from.op.index()] + c.from.port as u32)
            .collect();
        t
    }

    /// Op `o`'s range in per-input-port tables.
    #[inline]
    pub(crate) fn in_range(&self, o: usize) -> std::ops::Range<usize> {
        self.in_start[o] as usize..self.in_start[o + 1] as usize
    }

    /// Op `o`'s range in per-output-port tables.
    #[inline]
    pub(crate) fn out_range(&self, o: usize) -> std::ops::Range<usize> {
        self.out_start[o] as usize..self.out_start[o + 1] as usize
    }

    #[inline]
    pub(crate) fn ins(&self, o: usize) -> &[u32] {
        &self.in_conn[self.in_start[o] as usize..self.in_start[o + 1] as usize]
    }

    #[inline]
    pub(crate) fn n_outputs(&self, o: usize) -> usize {
        (self.out_start[o + 1] - self.out_start[o]) as usize
    }

    /// Every output connection of op `o`.
    #[inline]
    pub(crate) fn outs(&self, o: usize) -> &[u32] {
        let a = self.port_start[self.out_start[o] as usize] as usize;
        let b = self.port_start[self.out_start[o + 1] as usize] as usize;
        &self.out_conns[a..b]
    }

    /// The connections of output port `p` of op `o`.
    #[inline]
    pub(crate) fn port_conns(&self, o: usize, p: usize) -> &[u32] {
        let gp = self.out_start[o] as usize + p;
        &self.out_conns[self.port_start[gp] as usize..self.port_start[gp + 1] as usize]
    }
}

/// The marking seen per port, kept up to date on every state change, so the enabling rule of an
/// operator reads its port states as two slices instead of gathering them (the engine's hot
/// path). [`gather`] computes the same slices from a bare state vector (the verifier's path).
#[derive(Debug, Default)]
pub(crate) struct PortStates {
    /// One state per input port, flat (see [`Topo::in_range`]). Unconnected optional: OLD.
    pub(crate) inputs: Vec<ConnState>,
    /// One state per output port, flat (see [`Topo::out_range`]), folded as
    /// [`Enabling::outputs`] says.
    pub(crate) outputs: Vec<ConnState>,
    /// Per output port, how many of its connections are NEW / OLD.
    new_count: Vec<u32>,
    old_count: Vec<u32>,
    /// Per op, how many of its output connections are NEW (0: no back-pressure possible).
    pub(crate) new_outs: Vec<u32>,
}

impl PortStates {
    /// The views of a marking where every connection is EMPTY.
    pub(crate) fn initial(topo: &Topo) -> Self {
        PortStates {
            inputs: topo
                .in_conn
                .iter()
                .map(|&c| {
                    if c == NONE {
                        ConnState::Old
                    } else {
                        ConnState::Empty
                    }
                })
                .collect(),
            outputs: vec![ConnState::Empty; topo.port_type.len()],
            new_count: vec![0; topo.port_type.len()],
            old_count: vec![0; topo.port_type.len()],
            new_outs: vec![0; topo.policy.len()],
        }
    }

    /// Records that connection `c` went from `from` to `to`.
    #[inline(always)]
    pub(crate) fn update(&mut self, topo: &Topo, c: usize, from: ConnState, to: ConnState) {
        self.inputs[topo.in_slot[c] as usize] = to;
        let gp = topo.out_port[c] as usize;
        let producer = topo.producer[c] as usize;
        match from {
            ConnState::New => {
                self.new_count[gp] -= 1;
                self.new_outs[producer] -= 1;
            }
            ConnState::Old => self.old_count[gp] -= 1,
            ConnState::Empty => {}
        }
        match to {
            ConnState::New => {
                self.new_count[gp] += 1;
                self.new_outs[producer] += 1;
            }
            ConnState::Old => self.old_count[gp] += 1,
            ConnState::Empty => {}
        }
        self.outputs[gp] = if self.new_count[gp] > 0 {
            ConnState::New
        } else if self.old_count[gp] > 0 {
            ConnState::Old
        } else {
            ConnState::Empty
        };
    }
}

/// Whether op `o` is enabled, reading the maintained port views (same rule as [`evaluate`]).
#[inline(always)]
pub(crate) fn evaluate_cached(
    op: &dyn Operator,
    topo: &Topo,
    ports: &PortStates,
    state: &[ConnState],
    o: usize,
) -> bool {
    let inputs = &ports.inputs[topo.in_range(o)];
    let e = Enabling {
        inputs,
        outputs: &ports.outputs[topo.out_range(o)],
        policy: topo.policy[o],
    };
    op.can_fire(&e) && (ports.new_outs[o] == 0 || back_pressure_ok(op, topo, state, o, inputs))
}

/// A set of operators, with a summary level so the first member is found without scanning
/// every word (enabled-set maintenance is incremental, SPEC §4 picks the first).
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

#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) ins: Vec<ConnState>,
    pub(crate) outs: Vec<ConnState>,
    pub(crate) slots: Vec<InputSlot>,
    pub(crate) emitted: Vec<(u16, Value)>,
}

/// Fills `ins`/`outs` with op `o`'s port states.
#[inline]
pub(crate) fn gather(
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    ins: &mut Vec<ConnState>,
    outs: &mut Vec<ConnState>,
) {
    ins.clear();
    ins.extend(topo.ins(o).iter().map(|&c| {
        if c == NONE {
            ConnState::Old
        } else {
            state[c as usize]
        }
    }));
    outs.clear();
    for p in 0..topo.n_outputs(o) {
        outs.push(
            topo.port_conns(o, p)
                .iter()
                .fold(ConnState::Empty, |acc, &c| {
                    fold_port_state(acc, state[c as usize])
                }),
        );
    }
}

/// Whether op `o` is enabled: its firing rule holds, and firing would overwrite no NEW token
/// once its own consumption is applied (SPEC §3).
#[inline]
pub(crate) fn evaluate(
    op: &dyn Operator,
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    s: &mut Scratch,
) -> bool {
    gather(topo, state, o, &mut s.ins, &mut s.outs);
    let e = Enabling {
        inputs: &s.ins,
        outputs: &s.outs,
        policy: topo.policy[o],
    };
    if !op.can_fire(&e) {
        return false;
    }
    back_pressure_ok(op, topo, state, o, &s.ins)
}

/// Back-pressure at run time: every output connection of `o` counts as written (SPEC §3.2).
#[inline]
pub(crate) fn back_pressure_ok(
    op: &dyn Operator,
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    ins: &[ConnState],
) -> bool {
    back_pressure_ok_on(op, topo, state, o, ins, topo.outs(o))
}

/// Back-pressure over the connections `writes` that a firing of `o` would write: none of them
/// may be NEW once `o`'s own consumption is applied. The engine passes every output connection;
/// the verifier (SPEC §8) those of the outputs in any declared emission set.
#[inline]
pub(crate) fn back_pressure_ok_on(
    op: &dyn Operator,
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    ins: &[ConnState],
    writes: &[u32],
) -> bool {
    let mut consumed: Option<InputSet> = None;
    for &c in writes {
        if state[c as usize] == ConnState::New {
            // A self-loop the firing consumes first is fine (SPEC §3.2, "after consumption").
            let own = topo.consumer[c as usize] == o as u32
                && consumed
                    .get_or_insert_with(|| op.consumes(ins))
                    .contains(topo.consumer_port[c as usize] as usize);
            if !own {
                return false;
            }
        }
    }
    true
}
