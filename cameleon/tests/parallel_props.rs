//! Property tests of parallel mode (docs/semantics.md §7) on random nets: traces do not depend on timing,
//! `All` nets end in the same marking in both modes, and a maximal step is "every consumption,
//! then every emission".

mod probe;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use cameleon::ops::{Const, Counter, Fork, Guard, Join, Merge, Sink, Source, Test};
use cameleon::prelude::*;
use cameleon::{ConnId, Marking, Policy};
use probe::{Probe, marking_json, trace};
use proptest::prelude::*;

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
    Work {
        n_in: usize,
        n_out: usize,
        policy: Policy,
        kind: Execution,
        sleep_ms: u64,
    },
    Sink,
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A random net: sources, maybe a counting loop (const → merge → counter → guard → back to the
/// merge) whose counter also feeds the rest, then behavioral probes, forks and joins reading
/// earlier outputs. With `all_only`, no loop and every multi-input operator is `All`.
fn shape(seed: u64, all_only: bool) -> Shape {
    let mut r = Rng(seed | 1);
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
    for i in 0..2 + r.below(9) {
        let name = format!("w{i}");
        let pick = |r: &mut Rng, outs: &Vec<String>| outs[r.below(outs.len())].clone();
        match r.below(10) {
            0 => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_data")));
                ops.push((name.clone(), OpShape::Fork));
                outs.push(format!("{name}.out_a"));
                outs.push(format!("{name}.out_b"));
            }
            1 => {
                conns.push((pick(&mut r, &outs), format!("{name}.in_a")));
                conns.push((pick(&mut r, &outs), format!("{name}.in_b")));
                ops.push((name.clone(), OpShape::Join));
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
                let sleep_ms = [0, 1, 3][r.below(3)];
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
                    },
                ));
                for p in 0..n_out {
                    outs.push(format!("{name}.out_{p}"));
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
    let mut b = Net::builder("random");
    for (name, op) in &shape.ops {
        match op {
            OpShape::Source(v) => b.add(name, Source::new(v.clone())),
            OpShape::Zero => b.add(name, Const::new(serde_json::json!(0))),
            OpShape::Merge => b.add(name, Merge::<Any>::default()),
            OpShape::Counter => b.add(name, Counter::new()),
            OpShape::Guard(n) => b.add(
                name,
                Guard::<Any>::new(Test::parse(&serde_json::json!({"lt": n})).unwrap()),
            ),
            OpShape::Fork => b.add(name, Fork::<Any>::new(2).unwrap()),
            OpShape::Join => b.add(name, Join::<Any>::new(2).unwrap()),
            OpShape::Work {
                n_in,
                n_out,
                policy,
                kind,
                sleep_ms,
            } => b.add(
                name,
                Probe::new(*n_in, *n_out, *kind)
                    .policy(*policy)
                    .sleep(*sleep_ms)
                    .jitter(Arc::clone(&jitter)),
            ),
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20))]

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

    /// Committing a maximal step firing by firing in declaration order equals docs/semantics.md §7's
    /// "first every consumption, then every emission", with consumptions decided on the marking
    /// at the start of the step; and no firing consumes what another writes.
    #[test]
    fn a_maximal_step_is_every_consumption_then_every_emission(seed in any::<u64>()) {
        let s = shape(seed, false);
        let mut cvm = build(&s, Mode::Parallel, 0);
        loop {
            let start: Marking = cvm.marking();
            let enabled = cvm.fireable_ids();
            let expected_consumed: Vec<Vec<ConnId>> =
                enabled.iter().map(|&o| consumed_at_start(&cvm, o)).collect();
            match cvm.step().unwrap() {
                Step::Fired { .. } => {}
                Step::Ended(_) => break,
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

/// What `o` consumes from the current marking: the inputs its `consumes` picks that are NEW.
fn consumed_at_start(cvm: &Cvm, o: OpId) -> Vec<ConnId> {
    let net = cvm.net();
    let node = net.op(o);
    let conn_of = |p: usize| {
        net.connections()
            .iter()
            .position(|c| c.to.op == o && c.to.port as usize == p)
            .map(|i| ConnId(i as u32))
    };
    let states: Vec<ConnState> = (0..node.spec.inputs.len())
        .map(|p| conn_of(p).map_or(ConnState::Old, |c| cvm.conn(c).state))
        .collect();
    let set = node.operator().consumes(&states);
    (0..states.len())
        .filter(|&p| set.contains(p) && states[p] == ConnState::New)
        .filter_map(conn_of)
        .collect()
}
