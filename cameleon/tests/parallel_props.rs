//! Property tests of parallel mode (docs/semantics.md §7) on random nets: traces do not depend on
//! timing, `All` nets end in the same marking in both modes, and a maximal step fires exactly the
//! operators that docs/semantics.md §3 enables — computed here from the marking alone, not by the
//! engine — as "every consumption, then every emission".
//!
//! The nets mix sources, a counting loop, forks, joins, barriers, gates on a predicate,
//! accumulators, and behavioral probes of every execution kind and policy, some of which fail
//! (stopping the run, or caught on an `error` output).

mod probe;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use cameleon::StepError;
use cameleon::connection::ConnId;
use cameleon::engine::Marking;
use cameleon::ops::{
    Accumulator, Barrier, Const, Counter, Fork, Gate, Guard, Join, Merge, Predicate, Sink, Source,
    Test,
};
use cameleon::policy::Policy;
use cameleon::prelude::*;
use probe::{Probe, marking_json, trace};
use proptest::prelude::*;
use test_support::Rng;

/// A random net as plain data, so the same net can be built for several runs.
#[derive(Clone, Debug)]
struct Shape {
    ops: Vec<(String, OpShape)>,
    conns: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
enum OpShape {
    Source(String),
    Zero,
    Merge,
    Counter,
    Guard(i64),
    Fork,
    Join,
    Barrier,
    Gate,
    /// A predicate deciding a gate: true on some of the values the sources and counters make.
    Predicate,
    Accumulator(usize),
    Work {
        n_in: usize,
        n_out: usize,
        policy: Policy,
        kind: Execution,
        sleep_ms: u64,
        /// This call fails (1-based).
        fail_at: Option<usize>,
        /// Failures are caught on an `error` output.
        catching: bool,
    },
    Sink,
}

/// A random net: sources, maybe a counting loop (const → merge → counter → guard → back to the
/// merge) whose counter also feeds the rest, then operators reading earlier outputs. With
/// `all_only`, no loop, and every multi-input operator is `All`; no operator fails.
fn shape(seed: u64, all_only: bool) -> Shape {
    let mut r = Rng::new(seed);
    let mut ops = Vec::new();
    let mut conns: Vec<(String, String)> = Vec::new();
    let mut outs: Vec<String> = Vec::new();
    for i in 0..1 + r.below(3) {
        ops.push((format!("s{i}"), OpShape::Source(format!("v{i}"))));
        outs.push(format!("s{i}.out_data"));
    }
    if !all_only && r.below(2) == 0 {
        let limit = 2 + r.below(3) as i64;
        ops.push(("t_zero".into(), OpShape::Zero));
        ops.push(("t_loop".into(), OpShape::Merge));
        ops.push(("t_inc".into(), OpShape::Counter));
        ops.push(("t_check".into(), OpShape::Guard(limit)));
        ops.push(("t_exit".into(), OpShape::Sink));
        for (f, t) in [
            ("t_zero.out_data", "t_loop.in_a"),
            ("t_loop.out_data", "t_inc.in_data"),
            ("t_inc.out_data", "t_check.in_data"),
            ("t_check.out_continue", "t_loop.in_b"),
            ("t_check.out_exit", "t_exit.in_data"),
        ] {
            conns.push((f.into(), t.into()));
        }
        outs.push("t_inc.out_data".into());
    }
    for i in 0..2 + r.below(10) {
        let name = format!("w{i}");
        let pick = |r: &mut Rng, outs: &Vec<String>| outs[r.below(outs.len())].clone();
        match r.below(16) {
            0 | 1 => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_data")));
                ops.push((name.clone(), OpShape::Fork));
                outs.push(format!("{name}.out_a"));
                outs.push(format!("{name}.out_b"));
            }
            2 => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_a")));
                conns.push((pick(&mut r, &outs), format!("{name}.in_b")));
                ops.push((name.clone(), OpShape::Join));
                outs.push(format!("{name}.out_data"));
            }
            3 => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_a")));
                conns.push((pick(&mut r, &outs), format!("{name}.in_b")));
                ops.push((name.clone(), OpShape::Barrier));
                outs.push(format!("{name}.out_a"));
                outs.push(format!("{name}.out_b"));
            }
            4 if !all_only => {
                // A gate whose condition a predicate computes from some earlier output.
                let cond = format!("{name}_if");
                conns.push((pick(&mut r, &outs), format!("{cond}.in_data")));
                ops.push((cond.clone(), OpShape::Predicate));
                conns.push((pick(&mut r, &outs), format!("{name}.in_data")));
                conns.push((format!("{cond}.out_data"), format!("{name}.in_condition")));
                ops.push((name.clone(), OpShape::Gate));
                outs.push(format!("{name}.out_true"));
                outs.push(format!("{name}.out_false"));
            }
            5 if !all_only => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_data")));
                ops.push((name.clone(), OpShape::Accumulator(1 + r.below(2))));
                outs.push(format!("{name}.out_data"));
            }
            _ => {
                let n_in = 1 + r.below(3);
                let n_out = 1 + r.below(2);
                let policy = if n_in == 1 || all_only {
                    if n_in == 1 { Policy::Any } else { Policy::All }
                } else {
                    [Policy::Any, Policy::All, Policy::AnyNoGuard][r.below(3)]
                };
                let kind = [Execution::Inline, Execution::Blocking, Execution::Async][r.below(3)];
                let sleep_ms = [0, 0, 1, 2][r.below(4)];
                let (fail_at, catching) = if !all_only && r.below(6) == 0 {
                    (Some(1 + r.below(3)), r.below(2) == 0)
                } else {
                    (None, false)
                };
                // A self-loop on the last input, now and then (it fires until the loop bound).
                let self_loop = policy == Policy::AnyNoGuard && n_out == 2 && r.below(3) == 0;
                for p in 0..n_in {
                    let from = if self_loop && p == n_in - 1 {
                        format!("{name}.out_1")
                    } else {
                        pick(&mut r, &outs)
                    };
                    conns.push((from, format!("{name}.in_{p}")));
                }
                ops.push((
                    name.clone(),
                    OpShape::Work {
                        n_in,
                        n_out,
                        policy,
                        kind,
                        sleep_ms,
                        fail_at,
                        catching,
                    },
                ));
                for p in 0..n_out {
                    outs.push(format!("{name}.out_{p}"));
                }
                if catching {
                    outs.push(format!("{name}.error"));
                }
            }
        }
    }
    // Sources must feed something; other unused outputs get a sink now and then.
    let mut k = 0;
    for out in outs {
        let used = conns.iter().any(|(f, _)| *f == out);
        if !used && (out.starts_with('s') || r.below(2) == 0) {
            let sink = format!("k{k}");
            k += 1;
            conns.push((out, format!("{sink}.in_data")));
            ops.push((sink, OpShape::Sink));
        }
    }
    Shape { ops, conns }
}

/// Builds the net; the probes' random waits come from `jitter_seed`.
fn build(shape: &Shape, mode: Mode, jitter_seed: u64) -> Cvm {
    let jitter = Arc::new(AtomicU64::new(jitter_seed | 1));
    let test = |v: serde_json::Value| Test::parse(&v).unwrap();
    let mut b = Net::builder("random");
    for (name, op) in &shape.ops {
        match op {
            OpShape::Source(v) => b.add(name, Source::new(v.clone())),
            OpShape::Zero => b.add(name, Const::new(serde_json::json!(0))),
            OpShape::Merge => b.add(name, Merge::<Any>::default()),
            OpShape::Counter => b.add(name, Counter::new()),
            OpShape::Guard(n) => b.add(name, Guard::<Any>::new(test(serde_json::json!({"lt": n})))),
            OpShape::Fork => b.add(name, Fork::<Any>::new(2).unwrap()),
            OpShape::Join => b.add(name, Join::<Any>::new(2).unwrap()),
            OpShape::Barrier => b.add(name, Barrier::<Any, Any>::default()),
            OpShape::Gate => b.add(name, Gate::<Any>::new()),
            OpShape::Predicate => b.add(
                name,
                Predicate::new(test(serde_json::json!({"any": [{"eq": "v0"}, {"eq": 2}]}))),
            ),
            OpShape::Accumulator(n) => b.add(name, Accumulator::new(*n)),
            OpShape::Work {
                n_in,
                n_out,
                policy,
                kind,
                sleep_ms,
                fail_at,
                catching,
            } => {
                let mut p = Probe::new(*n_in, *n_out, *kind)
                    .policy(*policy)
                    .sleep(*sleep_ms)
                    .jitter(Arc::clone(&jitter));
                if let Some(call) = fail_at {
                    p = p.failing_at(*call);
                }
                if *catching {
                    p = p.catching();
                }
                b.add(name, p)
            }
            OpShape::Sink => b.add(name, Sink::new()),
        };
    }
    for (f, t) in &shape.conns {
        b.connect(f, t);
    }
    let net = b.build().unwrap_or_else(|e| panic!("{e}\n{shape:#?}"));
    Cvm::builder(net)
        .mode(mode)
        .max_loop_iterations(6)
        .max_steps(300)
        .build()
}

// ---------------------------------------------------------------------------------------------
// docs/semantics.md §2–§4, from the marking alone

/// Each input port's connection (none: an unconnected optional input).
fn input_conns(net: &Net, o: usize) -> Vec<Option<usize>> {
    (0..net.operators()[o].spec.inputs.len())
        .map(|p| {
            net.connections()
                .iter()
                .position(|c| c.to.op.index() == o && c.to.port as usize == p)
        })
        .collect()
}

/// Every connection leaving `o`, per output port.
fn output_conns(net: &Net, o: usize) -> Vec<Vec<usize>> {
    (0..net.operators()[o].spec.outputs.len())
        .map(|q| {
            (0..net.connections().len())
                .filter(|&c| {
                    let from = net.connections()[c].from;
                    from.op.index() == o && from.port as usize == q
                })
                .collect()
        })
        .collect()
}

fn state(cvm: &Cvm, c: usize) -> ConnState {
    cvm.conn(ConnId(c as u32)).state
}

/// §2: an input reads its connection's state (an unconnected optional input: OLD).
fn input_states(cvm: &Cvm, o: usize) -> Vec<ConnState> {
    input_conns(cvm.net(), o)
        .into_iter()
        .map(|c| c.map_or(ConnState::Old, |c| state(cvm, c)))
        .collect()
}

/// §4.4: the inputs a firing consumes — every NEW one; a merge only its first NEW one.
fn consumed_by_the_rules(cvm: &Cvm, o: usize) -> Vec<usize> {
    let ins = input_states(cvm, o);
    let new: Vec<usize> = (0..ins.len())
        .filter(|&p| ins[p] == ConnState::New)
        .collect();
    let ports = if cvm.net().operators()[o].spec.type_id == "merge" {
        new.into_iter().take(1).collect()
    } else {
        new
    };
    let conns = input_conns(cvm.net(), o);
    ports.into_iter().filter_map(|p| conns[p]).collect()
}

/// §3: whether `o` is enabled — its firing rule (§3.1) on its ports' states, and back-pressure
/// (§3.2) once its own consumption is applied.
fn enabled_by_the_rules(cvm: &Cvm, o: usize) -> bool {
    let node = &cvm.net().operators()[o];
    let ins = input_states(cvm, o);
    let outs = output_conns(cvm.net(), o);
    let count = |s: ConnState| ins.iter().filter(|&&x| x == s).count();
    let (new, empty) = (count(ConnState::New), count(ConnState::Empty));
    let policy = match node.spec.policy {
        Policy::Custom => Policy::Custom,
        _ if ins.is_empty() => Policy::Source,
        p => p,
    };
    let rule = match policy {
        Policy::Any => empty == 0 && new > 0,
        Policy::All => new == ins.len(),
        Policy::AnyNoGuard => new > 0,
        Policy::Source => outs
            .iter()
            .flatten()
            .all(|&c| state(cvm, c) == ConnState::Empty),
        Policy::Custom => match &*node.spec.type_id {
            // §3.1: "`in_data` NEW and `in_condition` not EMPTY".
            "gate" => ins[0] == ConnState::New && ins[1] != ConnState::Empty,
            other => panic!("no rule written here for custom operator `{other}`"),
        },
    };
    let consumed = consumed_by_the_rules(cvm, o);
    let free = outs
        .iter()
        .flatten()
        .all(|&c| state(cvm, c) != ConnState::New || consumed.contains(&c));
    rule && free
}

fn enabled_set(cvm: &Cvm) -> Vec<OpId> {
    (0..cvm.net().operators().len())
        .filter(|&o| enabled_by_the_rules(cvm, o))
        .map(|o| OpId(o as u32))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// docs/semantics.md §7: "the outcome never depends on timing" — each run draws other random waits.
    #[test]
    fn parallel_traces_do_not_depend_on_how_long_operators_take(seed in any::<u64>()) {
        let s = shape(seed, false);
        let traces: Vec<Vec<String>> = (1..=3u64)
            .map(|run| {
                let mut cvm = build(&s, Mode::Parallel, seed ^ run.wrapping_mul(0x9e37_79b9));
                let end = cvm.run().unwrap();
                trace(&cvm, &end)
            })
            .collect();
        prop_assert_eq!(&traces[0], &traces[1]);
        prop_assert_eq!(&traces[0], &traces[2]);
    }

    /// docs/semantics.md §7: on nets where every multi-input operator is `All`, both modes reach the same
    /// final marking.
    #[test]
    fn all_nets_end_in_the_same_marking_in_both_modes(seed in any::<u64>()) {
        let s = shape(seed, true);
        let mut seq = build(&s, Mode::Sequential, seed);
        let mut par = build(&s, Mode::Parallel, seed);
        let (end_seq, end_par) = (seq.run().unwrap(), par.run().unwrap());
        prop_assert_eq!(&end_seq, &end_par);
        prop_assert_eq!(marking_json(&seq), marking_json(&par));
        prop_assert!(par.depth() <= seq.depth());
    }

    /// A maximal step fires exactly the operators §3 enables at its start, and committing it
    /// equals docs/semantics.md §7's "first every consumption, then every emission", with
    /// consumptions decided on the marking at the start of the step; no firing consumes what
    /// another writes. How each run ends agrees with §6 and §7.
    #[test]
    fn a_maximal_step_is_every_consumption_then_every_emission(seed in any::<u64>()) {
        let s = shape(seed, false);
        let mut cvm = build(&s, Mode::Parallel, 0);
        loop {
            let start: Marking = cvm.marking();
            let depth = cvm.depth();
            let enabled = enabled_set(&cvm);
            prop_assert_eq!(cvm.fireable_ids(), enabled.clone(), "the engine's enabled set is §3's");
            let expected_consumed: Vec<Vec<ConnId>> = enabled
                .iter()
                .map(|o| {
                    consumed_by_the_rules(&cvm, o.index())
                        .into_iter()
                        .map(|c| ConnId(c as u32))
                        .collect()
                })
                .collect();
            let end = match cvm.step() {
                Ok(Step::Fired { .. }) => None,
                Ok(Step::Ended(end)) => Some(end),
                Err(StepError::Operator { op, .. }) => {
                    // §7: the whole step is discarded.
                    let id = cvm.net().op_id(&op).unwrap();
                    prop_assert!(enabled.contains(&id), "`{}` failed but was not enabled", op);
                    prop_assert!(cvm.marking() == start, "a failed step changed the marking");
                    prop_assert_eq!(cvm.depth(), depth);
                    break;
                }
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            if let Some(end) = end {
                prop_assert!(cvm.marking() == start, "an end state changed the marking");
                let any_new = start.0.iter().any(|(s, _)| *s == ConnState::New);
                match end {
                    EndState::Completed => prop_assert!(enabled.is_empty() && !any_new),
                    EndState::Deadlock { stuck } => {
                        prop_assert!(enabled.is_empty() && any_new);
                        // §6: the consumers of the NEW connections.
                        let mut consumers: Vec<String> = (0..start.0.len())
                            .filter(|&c| start.0[c].0 == ConnState::New)
                            .map(|c| {
                                let to = cvm.net().connections()[c].to.op;
                                cvm.net().op(to).name.clone()
                            })
                            .collect();
                        consumers.sort();
                        consumers.dedup();
                        let mut named: Vec<String> = stuck.into_iter().map(|s| s.op).collect();
                        named.sort();
                        named.dedup();
                        prop_assert_eq!(named, consumers);
                    }
                    EndState::LoopLimit { op, limit } => {
                        // §7: the first operator of the step, in declaration order, at its bound.
                        let first = enabled
                            .iter()
                            .find(|&&o| cvm.fire_count(o) >= limit)
                            .map(|&o| cvm.net().op(o).name.clone());
                        prop_assert_eq!(Some(op), first);
                    }
                    EndState::StepLimit { .. } => {}
                    other => return Err(TestCaseError::fail(format!("unexpected end {other:?}"))),
                }
                break;
            }
            let entry = cvm.history().entries().pop().unwrap();
            let fired: Vec<OpId> = entry.firings.iter().map(|f| f.op).collect();
            prop_assert_eq!(&fired, &enabled, "a maximal step fires every enabled operator");
            let mut expect = start.0.clone();
            for (f, want) in entry.firings.iter().zip(&expected_consumed) {
                prop_assert_eq!(&f.consumed, want);
                for c in &f.consumed {
                    expect[c.index()].0 = ConnState::Old;
                }
            }
            for f in &entry.firings {
                for (c, t) in &f.written {
                    expect[c.index()] = (ConnState::New, cvm.token(*t).cloned());
                }
            }
            prop_assert!(Marking(expect) == cvm.marking(), "two-phase marking differs");
            for f in &entry.firings {
                for g in &entry.firings {
                    for (c, _) in &g.written {
                        let self_loop = f.op == g.op
                            && cvm.net().connections()[c.index()].to.op == f.op;
                        prop_assert!(
                            !f.consumed.contains(c) || self_loop,
                            "`{}` consumed `{}`, written by `{}`",
                            cvm.net().op(f.op).name,
                            cvm.net().connections()[c.index()].name,
                            cvm.net().op(g.op).name
                        );
                    }
                }
            }
        }
    }
}

/// The generator reaches what the properties are about: every kind of operator fires, runs end
/// in each end state, maximal steps hold several firings, and caught failures happen.
#[test]
fn generated_parallel_nets_are_not_trivial() {
    use std::collections::BTreeSet;
    let (mut kinds, mut ends) = (BTreeSet::new(), BTreeSet::new());
    let (mut wide_steps, mut caught) = (0, 0);
    for seed in 0..128u64 {
        let s = shape(seed.wrapping_mul(0x2545_f491_4f6c_dd1d), false);
        let mut cvm = build(&s, Mode::Parallel, 0);
        let end = cvm.run().unwrap();
        ends.insert(end.name());
        for e in cvm.history().entries() {
            wide_steps += usize::from(e.firings.len() >= 3);
            for f in &e.firings {
                let node = cvm.net().op(f.op);
                kinds.insert(node.spec.type_id.to_string());
                caught += f
                    .written
                    .iter()
                    .filter(|(c, _)| {
                        let from = cvm.net().connections()[c.index()].from;
                        node.spec.outputs[from.port as usize].name == "error"
                    })
                    .count();
            }
        }
    }
    eprintln!("kinds {kinds:?}, ends {ends:?}, {wide_steps} steps of 3+ firings, {caught} caught");
    for k in [
        "source",
        "const",
        "merge",
        "counter",
        "guard",
        "fork",
        "join",
        "barrier",
        "gate",
        "predicate",
        "accumulator",
        "probe",
        "sink",
    ] {
        assert!(kinds.contains(k), "no `{k}` ever fired: {kinds:?}");
    }
    for e in ["COMPLETED", "DEADLOCK", "LOOP_LIMIT", "ERROR"] {
        assert!(ends.contains(e), "no run ended in {e}: {ends:?}");
    }
    assert!(wide_steps >= 64, "{wide_steps}");
    assert!(caught >= 4, "{caught}");
}
