//! Building the model of a net: its fields, each operator's reads, writes and control
//! (docs/semantics.md §8.1).

use super::*;

impl<'n> Model<'n> {
    pub(crate) fn new(net: &'n Net) -> Self {
        let topo = Topo::new(net);
        let n_conns = net.conns.len();
        let mut fields = Vec::with_capacity(n_conns);
        let mut bit = 0u32;
        for _ in 0..n_conns {
            fields.push(Field {
                word: bit / 64,
                shift: bit % 64,
                mask: 3,
                radix: 3,
            });
            bit += 2;
        }
        let mut ops = Vec::with_capacity(net.ops.len());
        let mut actions = Vec::new();
        let mut initial_control = Vec::new();
        for (o, node) in net.ops.iter().enumerate() {
            let op = &*node.op;
            let control = op.control().filter(|c| c.count() >= 1);
            let mut reads: Vec<u32> = Vec::new();
            // Its inputs, its outputs, and the connections its cancellation consumes
            // (docs/semantics.md §10.4).
            for &c in topo
                .ins(o)
                .iter()
                .chain(topo.outs(o))
                .chain(topo.cancels(o))
            {
                if c != NONE && !reads.contains(&c) {
                    reads.push(c);
                }
            }
            let mut control_field = None;
            if let Some(c) = control.filter(|c| c.count() > 1) {
                control_field = Some(fields.len() as u32);
                let width = 32 - (c.count() - 1).leading_zeros();
                if bit % 64 + width > 64 {
                    bit = bit.div_ceil(64) * 64; // a field never straddles two words
                }
                reads.push(fields.len() as u32);
                initial_control.push((fields.len(), c.initial().min(c.count() - 1)));
                fields.push(Field {
                    word: bit / 64,
                    shift: bit % 64,
                    mask: (1u64 << width) - 1,
                    radix: c.count(),
                });
                bit += width;
            }
            let sets = node.spec.emission_sets();
            // docs/semantics.md §4.11: a failure is caught on an `error` output only when it is
            // connected; otherwise it is an ERROR, which the abstraction does not model, so an
            // emission set with an unconnected `error` is not a firing outcome.
            let error_port = node
                .spec
                .outputs
                .iter()
                .position(|p| p.name == "error" && p.ty == TypeRef::of::<DataError>());
            let mut dead_sets = 0u64;
            if let Some(e) = error_port.filter(|&e| topo.port_conns(o, e).is_empty()) {
                for (k, set) in sets.iter().enumerate().take(64) {
                    if set.contains(&(e as u16)) {
                        dead_sets |= 1 << k;
                    }
                }
            }
            let cancel_on = topo.cancel_on[o];
            let cancel_sets: u64 = if topo.cancels(o).is_empty() {
                0
            } else {
                sets.iter()
                    .enumerate()
                    .take(64)
                    .filter(|(_, set)| cancel_on == NO_PORT || set.contains(&cancel_on))
                    .fold(0, |m, (k, _)| m | 1 << k)
            };
            let mut writes = Vec::new();
            for set in &sets {
                for &p in set {
                    if (p as usize) < topo.n_outputs(o) {
                        for &c in topo.port_conns(o, p as usize) {
                            if !writes.contains(&c) {
                                writes.push(c);
                            }
                        }
                    }
                }
            }
            let mut may_write: Vec<u32> =
                topo.ins(o).iter().copied().filter(|&c| c != NONE).collect();
            // A cancellation consumes its region's connections (docs/semantics.md §10.4): it
            // writes them, for the reduction's dependence as for the explorer.
            for &c in writes.iter().chain(topo.cancels(o)) {
                if !may_write.contains(&c) {
                    may_write.push(c);
                }
            }
            may_write.extend(control_field);
            may_write.dedup();
            let size = reads.iter().fold(1u64, |acc, &f| {
                acc.saturating_mul(fields[f as usize].radix as u64)
            });
            let first_action = actions.len() as u32;
            for set in 0..sets.len() {
                actions.push(Action {
                    op: o as u32,
                    set: set as u16,
                });
            }
            ops.push(OpModel {
                op,
                control,
                control_field,
                read_fields: Vec::new(),
                reads,
                size,
                writes,
                may_write,
                sets,
                dead_sets,
                cancel_sets,
                first_action,
                table: if size <= DENSE_MAX {
                    vec![UNKNOWN; size as usize]
                } else {
                    Vec::new()
                },
                memo: Memo::default(),
            });
        }
        let words = (bit as usize).div_ceil(64).max(1);
        let mut new_mask = vec![0u64; words];
        for f in &fields[..n_conns] {
            new_mask[f.word as usize] |= 1 << f.shift;
        }
        let mut initial = vec![0u64; words];
        for (f, q) in initial_control {
            fields[f].set(&mut initial, q);
        }
        for om in &mut ops {
            om.read_fields = om.reads.iter().map(|&f| fields[f as usize]).collect();
        }
        let mut readers = vec![Vec::new(); fields.len()];
        let mut writers = vec![Vec::new(); fields.len()];
        for (o, om) in ops.iter().enumerate() {
            for &f in &om.reads {
                readers[f as usize].push(o as u32);
            }
            for &f in &om.may_write {
                writers[f as usize].push(o as u32);
            }
        }
        let needs_new = |o: usize| {
            ops[o].control.is_none()
                && matches!(
                    topo.policy[o],
                    Policy::Any | Policy::All | Policy::AnyNoGuard
                )
        };
        let unguarded: Vec<u32> = (0..ops.len())
            .filter(|&o| !needs_new(o))
            .map(|o| o as u32)
            .collect();
        let guarded_consumer: Vec<u32> = (0..n_conns)
            .map(|c| {
                let o = topo.consumer[c];
                if needs_new(o as usize) { o } else { NONE }
            })
            .collect();
        let dependents = ops
            .iter()
            .enumerate()
            .map(|(o, om)| {
                let mut d: Vec<u32> = om
                    .may_write
                    .iter()
                    .flat_map(|&f| &readers[f as usize])
                    .chain(om.reads.iter().flat_map(|&f| &writers[f as usize]))
                    .copied()
                    .filter(|&p| p != o as u32)
                    .collect();
                d.sort_unstable();
                d.dedup();
                d
            })
            .collect();
        Model {
            net,
            topo,
            words,
            n_conns,
            fields,
            new_mask,
            ops,
            actions,
            outcomes: Vec::new(),
            writes: Vec::new(),
            initial,
            writers,
            dependents,
            blame_memo: HashMap::new(),
            unguarded,
            guarded_consumer,
            syn: vec![ConnState::Empty; n_conns],
            ins: Vec::new(),
            outs: Vec::new(),
            vals: Vec::new(),
        }
    }
}
