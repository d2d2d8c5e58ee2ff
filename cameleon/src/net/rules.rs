//! The enabling rules (docs/semantics.md §3) over a net's topology, shared by the engine and the
//! verifier: one implementation of the rules, not two.

use crate::connection::{ConnState, NONE};
use crate::operator::{InputSet, Operator};
use crate::policy::{Enabling, Policy, fold_port_state};

use super::Topo;

/// An operator's firing rule (docs/semantics.md §3.1): a built-in policy is evaluated here,
/// without a call through the operator; only a `Custom` policy asks the operator's own
/// [`can_fire`](Operator::can_fire).
#[inline(always)]
pub(crate) fn rule_holds(op: &dyn Operator, e: &Enabling<'_>) -> bool {
    match e.policy {
        Policy::Custom => op.can_fire(e),
        p => p.allows(e.inputs, e.outputs),
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
    ports: Vec<PortCounts>,
    /// Per op, the counts its rule reads (one entry: one bounds check, one cache line).
    ops: Vec<OpCounts>,
}

/// How many connections of one output port are NEW / OLD.
#[derive(Debug, Default, Clone, Copy)]
struct PortCounts {
    new: u32,
    old: u32,
}

/// The counts an operator's built-in rule reads instead of its port states.
#[derive(Debug, Default, Clone, Copy)]
struct OpCounts {
    /// How many of its input connections are NEW / EMPTY.
    new_ins: u32,
    empty_ins: u32,
    /// How many of its output connections are NEW (0: no back-pressure possible).
    new_outs: u32,
    /// How many of its output connections are not EMPTY (0: the `Source` rule holds).
    set_outs: u32,
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
            ports: vec![PortCounts::default(); topo.port_type.len()],
            ops: (0..topo.policy.len())
                .map(|o| OpCounts {
                    empty_ins: topo.ins(o).iter().filter(|&&c| c != NONE).count() as u32,
                    ..OpCounts::default()
                })
                .collect(),
        }
    }

    /// Records that connection `c` went from `from` to `to`.
    #[inline(always)]
    pub(crate) fn update(&mut self, topo: &Topo, c: usize, from: ConnState, to: ConnState) {
        self.inputs[topo.in_slot[c] as usize] = to;
        let gp = topo.out_port[c] as usize;
        let producer = topo.producer[c] as usize;
        let consumer = topo.consumer[c] as usize;
        let port = &mut self.ports[gp];
        match from {
            ConnState::New => {
                port.new -= 1;
                self.ops[producer].new_outs -= 1;
                self.ops[consumer].new_ins -= 1;
            }
            ConnState::Old => port.old -= 1,
            ConnState::Empty => {
                self.ops[consumer].empty_ins -= 1;
                self.ops[producer].set_outs += 1;
            }
        }
        match to {
            ConnState::New => {
                port.new += 1;
                self.ops[producer].new_outs += 1;
                self.ops[consumer].new_ins += 1;
            }
            ConnState::Old => port.old += 1,
            ConnState::Empty => {
                self.ops[consumer].empty_ins += 1;
                self.ops[producer].set_outs -= 1;
            }
        }
        self.outputs[gp] = if port.new > 0 {
            ConnState::New
        } else if port.old > 0 {
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
    let counts = ports.ops[o];
    let (new, empty) = (counts.new_ins, counts.empty_ins);
    let rule = match topo.policy[o] {
        // The built-in policies of docs/semantics.md §3.1, on the maintained counts.
        Policy::Any => empty == 0 && new > 0,
        Policy::All => new > 0 && new as usize == topo.in_range(o).len(),
        Policy::AnyNoGuard => new > 0,
        Policy::Source => counts.set_outs == 0,
        Policy::Custom => op.can_fire(&Enabling {
            inputs: &ports.inputs[topo.in_range(o)],
            outputs: &ports.outputs[topo.out_range(o)],
            policy: Policy::Custom,
        }),
    };
    rule && (counts.new_outs == 0
        || back_pressure_ok(op, topo, state, o, &ports.inputs[topo.in_range(o)]))
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
/// once its own consumption is applied (docs/semantics.md §3).
#[inline]
pub(crate) fn evaluate(
    op: &dyn Operator,
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    ins: &mut Vec<ConnState>,
    outs: &mut Vec<ConnState>,
) -> bool {
    gather(topo, state, o, ins, outs);
    let e = Enabling {
        inputs: ins,
        outputs: outs,
        policy: topo.policy[o],
    };
    if !rule_holds(op, &e) {
        return false;
    }
    back_pressure_ok(op, topo, state, o, ins)
}

/// Back-pressure at run time: every output connection of `o` counts as written (docs/semantics.md §3.2).
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
/// the verifier (docs/semantics.md §8) those of the outputs in any declared emission set.
#[inline]
/// [`back_pressure_ok_on`] with the firing's consumption given: what the verifier uses, where
/// an operator with a finite control consumes by its control state, not by the operator as
/// built (docs/semantics.md §3.2, §10.9).
pub(crate) fn back_pressure_ok_with(
    topo: &Topo,
    state: &[ConnState],
    o: usize,
    writes: &[u32],
    consumed: InputSet,
) -> bool {
    writes.iter().all(|&c| {
        state[c as usize] != ConnState::New
            || (topo.consumer[c as usize] == o as u32
                && consumed.contains(topo.consumer_port[c as usize] as usize))
    })
}

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
            // A self-loop the firing consumes first is fine (docs/semantics.md §3.2, "after consumption").
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
