//! The verifier (docs/semantics.md §8) on the workflow patterns, on known-bad nets, and on its own edges:
//! witnesses, budget, replay, JSON.

mod nets;

use std::cell::Cell;

use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;
use cameleon::verify::{
    FollowError, Reduction, Report, TraceEnd, Verdict, VerifyOptions, follow, verify, verify_with,
};
use cameleon::{InputSet, Params};
use nets::*;

fn check(net: &Net) -> Report {
    verify(net, &VerifyOptions::default())
}

/// The full state space (`--reduce none`).
fn check_full(net: &Net) -> Report {
    verify(net, &VerifyOptions::default().reduce(Reduction::None))
}

#[test]
fn every_workflow_pattern_is_sound() {
    for (name, net) in wcp_nets() {
        let r = check(&net);
        assert_eq!(r.verdict, Verdict::Holds, "{name}:\n{r}");
        assert!(r.complete, "{name}");
        assert_eq!(r.deadlock_free, Some(true), "{name}");
        assert_eq!(r.option_to_complete, Some(true), "{name}");
        assert_eq!(r.no_dead_operators, Some(true), "{name}");
        assert_eq!(r.one_safe, Some(true), "{name}");
        assert_eq!(r.witness, None, "{name}");
        assert!(r.dead_operators.is_empty(), "{name}");
    }
}

#[test]
fn sequence_has_one_state_per_firing() {
    // EMPTY, then one state after each of the 4 firings; no choice, no interleaving.
    let r = check_full(&wcp1_sequence());
    assert_eq!((r.states, r.edges), (5, 4));
    assert_eq!(r.may_loop, Some(false));
}

#[test]
fn parallel_branches_interleave_in_every_order() {
    // After split: a and b each ready/done (2 × 2), sinks each ready/done once their branch
    // is done: per branch {a ready, a done, sink done} = 3 local states, 3 × 3 = 9, plus the
    // two states before split.
    let r = check_full(&wcp2_parallel_split());
    assert_eq!(r.states, 2 + 9);
    // Each branch has 2 firings; the 3 × 3 grid has 2 · 3 · 2 = 12 edges, plus src and split.
    assert_eq!(r.edges, 12 + 2);
}

#[test]
fn loops_are_reported_with_a_shortest_lasso() {
    let r = check(&wcp21_structured_loop());
    assert_eq!(r.verdict, Verdict::Holds, "{r}");
    assert_eq!(r.may_loop, Some(true));
    // The first state on a cycle is the one after the first loop-back: the loop-back
    // connection is OLD from then on.
    let l = &r.properties.may_loop;
    assert_eq!(
        l.prefix.as_deref(),
        Some(&["zero", "loop", "inc", "check"].map(String::from)[..])
    );
    assert_eq!(
        l.prefix_path.as_deref(),
        Some(&["zero", "loop", "inc", "check:out_continue"].map(String::from)[..])
    );
    assert_eq!(
        l.cycle_path.as_deref(),
        Some(&["loop", "inc", "check:out_continue"].map(String::from)[..])
    );
    let r = check(&wcp10_arbitrary_cycles());
    assert_eq!(r.may_loop, Some(true));
}

#[test]
fn xor_split_closed_by_and_join_deadlocks_with_shortest_witness() {
    let net = bad_xor_split_and_join();
    let r = check(&net);
    assert_eq!(r.verdict, Verdict::Fails);
    assert_eq!(r.deadlock_free, Some(false));
    // The witness names operators; its path says which way the gate went.
    let w = ["src", "split", "test", "choose", "a"];
    assert_eq!(r.witness.as_deref(), Some(&w.map(String::from)[..]));
    let path = ["src", "split", "test", "choose:out_true", "a"];
    assert_eq!(r.witness_path.as_deref(), Some(&path.map(String::from)[..]));
    assert_eq!(
        r.properties.deadlock_free.new,
        ["a.out_data -> both.in_a".to_owned()]
    );
    // Soundness fails from the very start: whichever branch the gate takes, completion is out
    // of reach, so the initial marking itself is the shortest counterexample.
    assert_eq!(r.option_to_complete, Some(false));
    let c = &r.properties.option_to_complete;
    assert_eq!(c.witness.as_deref(), Some(&[][..]));
    assert!(c.message.as_deref().unwrap_or("").contains("trap"), "{r}");
    assert_eq!(r.dead_operators, ["both", "out"]);
    let reason = &r.properties.no_dead_operators.dead[1].reason;
    assert!(
        reason.contains("`both.out_data -> out.in_data`"),
        "{reason}"
    );
    // The witness replays to the deadlock it claims, by names or by path.
    for w in [&r.witness, &r.witness_path] {
        let trace = follow(&net, w.as_deref().unwrap_or_default()).expect("replayable");
        assert_eq!(
            trace.end,
            TraceEnd::Deadlock {
                stuck: vec!["a.out_data -> both.in_a".into()]
            }
        );
    }
}

#[test]
fn loop_without_exit_is_a_livelock_trap() {
    let r = check(&bad_loop_without_exit());
    assert_eq!(r.verdict, Verdict::Fails);
    assert_eq!(r.deadlock_free, Some(true), "{r}");
    assert_eq!(r.option_to_complete, Some(false));
    let c = &r.properties.option_to_complete;
    assert_eq!(
        c.path.as_deref(),
        Some(&["src", "split", "test", "choose:out_false"].map(String::from)[..])
    );
    // Following the path leads into the loop.
    let t = follow(
        &bad_loop_without_exit(),
        c.path.as_deref().unwrap_or_default(),
    )
    .unwrap();
    assert_eq!(
        t.end,
        TraceEnd::Running {
            enabled: vec!["spin".into()]
        }
    );
    assert!(
        c.message.as_deref().unwrap_or("").contains("livelock"),
        "{r}"
    );
    assert_eq!(r.witness, c.witness);
    assert_eq!(r.no_dead_operators, Some(true));
    assert_eq!(
        r.properties.may_loop.cycle.as_deref(),
        Some(&["spin".to_owned(), "body".into()][..])
    );
}

#[test]
fn accumulator_without_done_signal_leaves_its_consumer_dead() {
    // The accumulator's declared control tells the verifier it never emits with n = 0 and no
    // `in_done`: `out` is dead, though every run completes.
    let r = check(&bad_accumulator_never_done());
    assert_eq!(r.verdict, Verdict::Fails);
    assert_eq!(r.deadlock_free, Some(true));
    assert_eq!(r.option_to_complete, Some(true));
    assert_eq!(r.no_dead_operators, Some(false));
    assert_eq!(r.dead_operators, ["out"]);
    assert_eq!(r.witness, None);
}

#[test]
fn accumulator_control_counts_values_exactly() {
    use cameleon::ops::{Accumulator, Fork, Merge};
    // Two values reach an accumulator of n = 2: it emits once, on the second.
    let mut b = Net::builder("acc");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::default());
    b.add("both", Merge::<Any>::default());
    b.add("collect", Accumulator::new(2));
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "both.in_a")
        .connect("split.out_b", "both.in_b")
        .connect("both.out_data", "collect.in_data")
        .connect("collect.out_data", "out.in_data");
    let net = b.build().unwrap();
    let r = check(&net);
    assert_eq!(r.verdict, Verdict::Holds, "{r}");
    // The only way to make `out` fire needs both values through the accumulator first.
    let t = follow(
        &net,
        &["src", "split", "both", "collect", "both", "collect", "out"],
    )
    .unwrap();
    assert_eq!(t.end, TraceEnd::Completed);
    assert!(follow(&net, &["src", "split", "both", "collect", "out"]).is_err());
    // With n = 3 it never gets its third value: `out` is dead.
    let mut b = Net::builder("acc3");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::default());
    b.add("both", Merge::<Any>::default());
    b.add("collect", Accumulator::new(3));
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "both.in_a")
        .connect("split.out_b", "both.in_b")
        .connect("both.out_data", "collect.in_data")
        .connect("collect.out_data", "out.in_data");
    assert_eq!(check(&b.build().unwrap()).dead_operators, ["out"]);
}

/// An operator that breaks its contract: it says it consumes its inputs when asked for
/// back-pressure, then does not when the firing is applied.
struct Liar {
    calls: Cell<u32>,
}

// SAFETY-free: `Cell` is `Send`; the operator is only ever used from one thread here.
impl Operator for Liar {
    fn spec(&self) -> OpSpec {
        OpSpec::new("liar", "Liar", Family::Behavioral, Policy::AnyNoGuard)
            .input("in_a", TypeRef::of::<DataString>())
            .input("in_b", TypeRef::of::<DataString>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn params(&self) -> Params {
        Params::new()
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if n.is_multiple_of(2) {
            InputSet::new_inputs(inputs)
        } else {
            InputSet(0)
        }
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Ok(())
    }
}

#[test]
fn a_lost_token_is_a_loud_one_safety_failure() {
    let mut b = Net::builder("liar");
    b.add("src", Source::new("x"));
    b.add(
        "liar",
        Liar {
            calls: Cell::new(0),
        },
    );
    b.connect("src.out_data", "liar.in_a")
        .connect("liar.out_data", "liar.in_b");
    let r = check(&b.build().unwrap());
    assert_eq!(r.one_safe, Some(false), "{r}");
    assert_eq!(r.verdict, Verdict::Fails);
    let c = &r.properties.one_safe;
    assert_eq!(c.new, ["liar.out_data -> liar.in_b".to_owned()]);
    // 1-safety comes first among the witnesses.
    assert_eq!(r.witness, c.witness);
    assert_eq!(
        c.witness.as_deref(),
        Some(&["src", "liar", "liar"].map(String::from)[..])
    );
    assert!(r.to_string().contains("FAIL] 1-safe"), "{r}");
}

#[test]
fn the_state_budget_stops_exploration_and_says_so() {
    let net = parallel_split(6);
    let full = check_full(&net);
    assert!(full.complete);
    let mut calls = 0;
    let opts = VerifyOptions::default()
        .max_states(100)
        .reduce(Reduction::None);
    let r = verify_with(&net, &opts, &mut |_| calls += 1);
    assert!(calls >= 1);
    assert!(!r.complete);
    assert_eq!(r.states, 100);
    assert!(r.exploration.budget_hit);
    assert_eq!(r.exploration.frontier, 100 - r.exploration.expanded);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert_eq!(r.verdict.exit_code(), 4);
    assert_eq!(r.deadlock_free, None);
    assert_eq!(r.option_to_complete, None);
    assert_eq!(r.no_dead_operators, None);
    assert!(r.to_string().contains("state budget of 100 used up"), "{r}");
}

#[test]
fn parallel_split_state_count_is_closed_form() {
    // Before the split: 2 states. After it, each branch's token is at one of 4 places (its
    // 4 connections), independently: 4^n interleavings. Then the join and the sink: 2 more.
    for n in 2..=6u32 {
        let r = check_full(&parallel_split(n as usize));
        assert_eq!(r.states, 2 + 4u64.pow(n) + 2, "n = {n}");
        assert_eq!(r.verdict, Verdict::Holds);
        assert!(!r.reduced);
    }
}

#[test]
fn json_report_has_the_documented_shape() {
    let r = check(&bad_xor_split_and_join());
    let j = r.to_json();
    assert_eq!(j["valid"], true);
    assert_eq!(j["deadlock_free"], false);
    assert_eq!(j["states"], r.states);
    assert_eq!(j["edges"], r.edges);
    assert_eq!(j["witness"][0], "src");
    assert_eq!(j["verdict"], "fails");
    assert_eq!(j["dead_operators"][0], "both");
    assert_eq!(j["properties"]["deadlock_free"]["holds"], false);
    assert_eq!(
        j["properties"]["no_dead_operators"]["dead"][0]["op"],
        "both"
    );
    assert_eq!(j["exploration"]["budget_hit"], false);
    let ok = check(&wcp1_sequence()).to_json();
    assert_eq!(ok["witness"], serde_json::Value::Null);
    assert_eq!(ok["verdict"], "holds");
}

#[test]
fn follow_explains_what_cannot_be_replayed() {
    let net = wcp4_exclusive_choice();
    match follow(&net, &["src", "splt"]) {
        Err(FollowError::UnknownOperator { step: 2, hint, .. }) => {
            assert_eq!(hint.as_deref(), Some("split"))
        }
        other => panic!("{other:?}"),
    }
    match follow(&net, &["src", "choose"]) {
        Err(e @ FollowError::NotEnabled { step: 2, .. }) => {
            assert!(e.to_string().contains("`split`"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // A bare name fitting several firings takes the first in declared order...
    let t = follow(&net, &["src", "split", "test", "choose"]).unwrap();
    assert_eq!(t.steps[3].fired, "choose:out_true");
    // ... among those that fit the whole witness: only `out_false` lets `b` fire next.
    let t = follow(&net, &["src", "split", "test", "choose", "b"]).unwrap();
    assert_eq!(t.steps[3].fired, "choose:out_false");
    match follow(&net, &["src", "split", "test", "choose", "b", "a"]) {
        Err(e @ FollowError::NotEnabled { step: 6, .. }) => {
            assert!(e.to_string().contains("possible: `out_b`"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let t = follow(&net, &["src", "split", "test", "choose:out_false"]).unwrap();
    let last = &t.steps[3];
    assert_eq!(last.fired, "choose:out_false");
    assert!(
        last.changes
            .iter()
            .any(|c| c.conn == "choose.out_false -> b.in_data" && c.to == "NEW")
    );
    assert_eq!(
        t.end,
        TraceEnd::Running {
            enabled: vec!["b".into()]
        }
    );
}

#[test]
fn human_report_names_every_property() {
    let text = check(&bad_xor_split_and_join()).to_string();
    for needle in [
        "deadlock-free",
        "option to complete",
        "no dead operators",
        "1-safe",
        "witness: src → split → test → choose:out_true → a",
        "`both` never fires",
        "verdict: a property fails",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

/// Runs the real engine on `net()` and checks every firing against the abstraction: after each
/// step the engine's marking is the abstract state reached by the same firing (with the emission
/// set the data chose), and the run ends where the abstraction says it can.
fn engine_run_is_a_path_of_the_abstraction(net: impl Fn() -> Net) -> Result<(), String> {
    let model_net = net();
    let mut cvm = Cvm::builder(net()).max_steps(60).build();
    let mut labels: Vec<String> = Vec::new();
    loop {
        match cvm.step() {
            Ok(Step::Fired { ops, .. }) => {
                let name = model_net.op(ops[0]).name.clone();
                let real: Vec<ConnState> = cvm.marking().0.iter().map(|(s, _)| *s).collect();
                // Every firing of that operator the abstraction allows here.
                let here = follow(&model_net, &labels).map_err(|e| e.to_string())?;
                let TraceEnd::Running { enabled } = here.end else {
                    return Err(format!(
                        "{}: engine fired `{name}` in a terminal state",
                        model_net.name()
                    ));
                };
                let mine = |l: &String| {
                    *l == name
                        || l.strip_prefix(name.as_str())
                            .is_some_and(|rest| rest.starts_with(':'))
                };
                let mut found = None;
                for label in enabled.into_iter().filter(mine) {
                    let mut w = labels.clone();
                    w.push(label);
                    let t = follow(&model_net, &w).map_err(|e| e.to_string())?;
                    let abs: Vec<ConnState> = t.marking.iter().map(|(_, s)| *s).collect();
                    if abs == real {
                        found = Some(w);
                        break;
                    }
                }
                labels = found.ok_or_else(|| {
                    format!("{}: no abstract firing of `{name}` gives the engine's marking after {labels:?}", model_net.name())
                })?;
            }
            Ok(Step::Ended(end)) => {
                let t = follow(&model_net, &labels).map_err(|e| e.to_string())?;
                let agrees = matches!(
                    (&end, &t.end),
                    (EndState::Completed, TraceEnd::Completed)
                        | (EndState::Deadlock { .. }, TraceEnd::Deadlock { .. })
                        | (
                            EndState::StepLimit { .. } | EndState::LoopLimit { .. },
                            TraceEnd::Running { .. }
                        )
                );
                return if agrees {
                    Ok(())
                } else {
                    Err(format!(
                        "{}: engine ended {end:?}, abstraction {:?}",
                        model_net.name(),
                        t.end
                    ))
                };
            }
            Err(_) => return Ok(()), // an operator failed on its data: outside the abstraction
        }
    }
}

#[test]
fn engine_runs_of_the_examples_are_paths_of_the_abstraction() {
    let nets: [fn() -> Net; 11] = [
        wcp1_sequence,
        wcp2_parallel_split,
        wcp3_synchronization,
        wcp4_exclusive_choice,
        wcp5_simple_merge,
        wcp10_arbitrary_cycles,
        wcp11_implicit_termination,
        wcp21_structured_loop,
        bad_xor_split_and_join,
        bad_loop_without_exit,
        bad_accumulator_never_done,
    ];
    for net in nets {
        engine_run_is_a_path_of_the_abstraction(net).unwrap();
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    #[test]
    fn engine_runs_of_random_nets_are_paths_of_the_abstraction(
        sources in 1usize..=2,
        kinds in proptest::collection::vec(kind(), 1..=10),
        picks in proptest::collection::vec(0usize..64, 1..=32),
    ) {
        engine_run_is_a_path_of_the_abstraction(|| random_net(sources, &kinds, &picks))
            .map_err(proptest::test_runner::TestCaseError::fail)?;
    }
}

#[test]
fn a_replayed_trace_serializes_its_marking_and_end_flat() {
    let t = follow(
        &bad_xor_split_and_join(),
        &["src", "split", "test", "choose:out_true", "a"],
    )
    .unwrap();
    let j = serde_json::to_value(&t).unwrap();
    assert_eq!(j["end"], "DEADLOCK");
    assert_eq!(j["stuck"][0], "a.out_data -> both.in_a");
    assert_eq!(j["marking"]["a.out_data -> both.in_a"], "NEW");
    assert_eq!(j["marking"]["b.out_data -> both.in_b"], "EMPTY");
    assert_eq!(j["steps"][4]["fired"], "a");
}

#[test]
fn the_shipped_cm_files_are_the_verified_nets() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let mut nets = wcp_nets();
    nets.push(("bad/xor-split-and-join", bad_xor_split_and_join()));
    nets.push(("bad/loop-without-exit", bad_loop_without_exit()));
    nets.push(("bad/accumulator-never-done", bad_accumulator_never_done()));
    for (stem, net) in nets {
        let path = dir.join(format!("{stem}.cm"));
        let loaded = Net::from_cm_file(&path).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(loaded, net, "{stem}");
        assert_eq!(check(&loaded).to_json(), check(&net).to_json(), "{stem}");
    }
}

/// Threads (docs/semantics.md §8.8), with the library's own sharing out: the parallel split of 8
/// branches (65 540 states, levels of up to ~10 000 states, shared between the threads, and
/// partitioned tables past 65 536 states) gives the report of one thread — whole, and cut by the
/// state budget in the middle of a shared level.
#[test]
fn threads_report_what_one_thread_reports() {
    let net = parallel_split(8);
    for max_states in [10_000_000, 30_000] {
        let opts = VerifyOptions::default()
            .reduce(Reduction::None)
            .max_states(max_states);
        let one = verify(&net, &opts.threads(1));
        if max_states > 65_540 {
            assert_eq!(one.states, 4u64.pow(8) + 4);
            assert_eq!(one.verdict, Verdict::Holds);
        } else {
            assert_eq!(one.states, max_states);
            assert_eq!(one.verdict, Verdict::Inconclusive);
        }
        for threads in [2, 4, 0] {
            let many = verify(&net, &opts.threads(threads));
            assert_eq!(one.to_json(), many.to_json(), "{threads} threads");
            assert_eq!(one.to_string(), many.to_string(), "{threads} threads");
        }
    }
}
