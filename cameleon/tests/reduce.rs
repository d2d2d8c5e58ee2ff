//! The partial-order reduction of the verifier (docs/semantics.md §8.6), checked against the
//! full exploration and the engine: on random nets the reduced and the full state spaces give
//! the same verdicts, and every witness the reduced exploration reports is a real firing
//! sequence — the engine itself, driven along it with `Cvm::fire_op`, goes where the witness
//! says.

mod nets;

use std::sync::{Arc, Mutex};

use cameleon::engine::Marking;
use cameleon::ops::{Fork, Guard, Merge, Sink, Source, Test, Transform};
use cameleon::prelude::*;
use cameleon::verify::{
    NOT_CHECKED_UNDER_REDUCTION, Reduction, Report, TraceEnd, Verdict, VerifyOptions, follow,
    verify,
};
use cameleon::{BuildContext, Catalogue, InputSet, Params, StepError};
use nets::*;
use proptest::prelude::*;
use serde_json::json;

fn reduced(net: &Net) -> Report {
    verify(net, &VerifyOptions::default())
}

fn full(net: &Net) -> Report {
    verify(net, &VerifyOptions::default().reduce(Reduction::None))
}

// ---------------------------------------------------------------------------------------------
// Driving the engine along a witness

/// The emission set the next firing of a data-dependent operator must take (port indices).
type Choice = Arc<Mutex<Option<Vec<u16>>>>;

/// An operator whose choice of outputs depends on data (several emission sets, no declared
/// control), with that choice forced: the abstraction explores every choice, and a witness
/// names the one it took, which the data of a test run would not always take. Everything else
/// — the rule, consumption, back-pressure, applying the firing — is the engine's.
struct Forced {
    inner: Box<dyn Operator>,
    choice: Choice,
}

impl Operator for Forced {
    fn spec(&self) -> OpSpec {
        self.inner.spec()
    }
    fn params(&self) -> Params {
        self.inner.params()
    }
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        self.inner.can_fire(e)
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        self.inner.consumes(inputs)
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let forced = self
            .choice
            .lock()
            .map_err(|_| OpError::new("poisoned"))?
            .take();
        match forced {
            Some(ports) => {
                let value = cx
                    .value_at(0)
                    .cloned()
                    .ok_or_else(|| OpError::new("no input value to route"))?;
                for p in ports {
                    cx.emit_at(p as usize, value.clone());
                }
                Ok(())
            }
            None => self.inner.run(cx),
        }
    }
}

/// A copy of `net` (built again from the catalogue) whose data-dependent operators take the
/// choice put in `choice`.
fn steered(net: &Net, choice: &Choice) -> Net {
    let mut b = Net::builder(net.name());
    for node in net.operators() {
        let op = node.operator();
        let copy = Catalogue::global()
            .build(&op.spec().type_id, &node.params(), &BuildContext::default())
            .expect("a catalogued operator");
        let copy: Box<dyn Operator> =
            if op.spec().emission_sets().len() > 1 && op.control().is_none() {
                Box::new(Forced {
                    inner: copy,
                    choice: choice.clone(),
                })
            } else {
                copy
            };
        b.add_boxed(node.name.clone(), copy);
    }
    for c in net.connections() {
        b.connect(net.output_name(c.from), net.input_name(c.to));
    }
    b.build().expect("the same net")
}

/// Fires `labels` (as a witness's `path` writes them) one by one in a real engine running `net`
/// (its data-dependent operators forced to the choice each label names), and checks after
/// each firing that the engine's marking is the abstraction's (`follow`). Returns the engine
/// at the end.
fn drive(net: &Net, labels: &[String]) -> Result<Cvm, String> {
    let choice: Choice = Arc::new(Mutex::new(None));
    let mut cvm = Cvm::builder(steered(net, &choice)).build();
    for (i, label) in labels.iter().enumerate() {
        let (name, ports) = match label.split_once(':') {
            Some((name, ports)) => (name, Some(ports)),
            None => (label.as_str(), None),
        };
        let id = net
            .op_id(name)
            .ok_or_else(|| format!("step {}: no operator `{name}`", i + 1))?;
        let node = net.op(id);
        if let Some(ports) = ports.filter(|_| node.operator().control().is_none()) {
            let outs = &node.operator().spec().outputs;
            let set: Vec<u16> = if ports == "none" {
                Vec::new()
            } else {
                ports
                    .split('+')
                    .map(|p| {
                        outs.iter()
                            .position(|o| o.name == p)
                            .map(|i| i as u16)
                            .ok_or_else(|| format!("no output `{p}` on `{name}`"))
                    })
                    .collect::<Result<_, _>>()?
            };
            *choice.lock().map_err(|e| e.to_string())? = Some(set);
        }
        match cvm.fire_op(id) {
            Ok(Step::Fired { .. }) => {}
            other => {
                return Err(format!(
                    "step {}: the engine cannot fire `{label}` after {:?}: {other:?}",
                    i + 1,
                    &labels[..i]
                ));
            }
        }
        let real: Vec<ConnState> = cvm.marking().0.iter().map(|(s, _)| *s).collect();
        let abs: Vec<ConnState> = follow(net, &labels[..=i])
            .map_err(|e| e.to_string())?
            .marking
            .iter()
            .map(|(_, s)| *s)
            .collect();
        if real != abs {
            return Err(format!(
                "step {}: after {:?} the engine's marking {real:?} is not the abstraction's {abs:?}",
                i + 1,
                &labels[..=i]
            ));
        }
    }
    Ok(cvm)
}

/// Every witness of `r` (a report on `net`) replays in the engine: the deadlock witness ends
/// in the engine's DEADLOCK, the lasso's cycle comes back to the marking it started from.
fn witnesses_replay(net: &Net, r: &Report) -> Result<(), String> {
    let p = &r.properties;
    for (what, path) in [
        ("1-safety", &p.one_safe.path),
        ("deadlock", &p.deadlock_free.path),
        ("option to complete", &p.option_to_complete.path),
        ("witness", &r.witness_path),
    ] {
        let Some(path) = path else { continue };
        let cvm = drive(net, path).map_err(|e| format!("{what}: {e}"))?;
        if what == "deadlock" && !matches!(cvm.terminal_state(), Some(EndState::Deadlock { .. })) {
            return Err(format!(
                "the deadlock witness {path:?} ends in {:?} in the engine",
                cvm.terminal_state()
            ));
        }
    }
    if let (Some(prefix), Some(cycle)) = (&p.may_loop.prefix_path, &p.may_loop.cycle_path) {
        let at = drive(net, prefix)?.marking();
        let lasso: Vec<String> = prefix.iter().chain(cycle).cloned().collect();
        let back = drive(net, &lasso)?.marking();
        let states = |m: &Marking| m.0.iter().map(|(s, _)| *s).collect::<Vec<_>>();
        if states(&at) != states(&back) || cycle.is_empty() {
            return Err(format!("the lasso {prefix:?} + {cycle:?} is not a cycle"));
        }
    }
    Ok(())
}

/// Whether a net was compared, or why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compared {
    /// Reduced and full explorations ran to their end and agree; the witnesses replay.
    Yes,
    /// The reduced state space exceeds the budget: nothing compared.
    ReducedOverBudget,
    /// The full state space exceeds the budget: the reduced witnesses replay, nothing else is
    /// compared.
    FullOverBudget,
}

/// The state budget of the comparisons.
const BUDGET: u64 = 20_000;

/// Reduced and full explorations agree on `net`, and the reduced witnesses replay.
fn reduction_is_exact(net: &Net) -> Result<(), String> {
    match reduction_is_exact_within(net, true)? {
        Compared::Yes => Ok(()),
        other => Err(format!("{}: not compared ({other:?})", net.name())),
    }
}

/// [`reduction_is_exact`]; with `small` false, a reduced state space beyond the budget is not
/// a failure but a net too large to compare (the caller counts it): nets with the patterns'
/// operators, where cancellation regions (a `terminate`'s is the whole net) and controls
/// (mutexes, milestones, partial joins) conflict with much of the net and the reduction keeps
/// more interleavings.
fn reduction_is_exact_within(net: &Net, small: bool) -> Result<Compared, String> {
    let opts = VerifyOptions::default().max_states(BUDGET);
    let f = verify(net, &opts.reduce(Reduction::None));
    let r = verify(net, &opts);
    if !r.complete && !small {
        return Ok(Compared::ReducedOverBudget);
    }
    if !r.complete {
        return Err(format!(
            "the reduced state space of {} exceeds {BUDGET} states",
            net.name()
        ));
    }
    witnesses_replay(net, &r)?;
    if !f.complete {
        return Ok(Compared::FullOverBudget);
    }
    let same = |what: &str, a: String, b: String| {
        if a == b {
            Ok(())
        } else {
            Err(format!(
                "{what}: full {a}, reduced {b}\nfull:\n{f}\nreduced:\n{r}"
            ))
        }
    };
    if r.states > f.states {
        return Err(format!("{} reduced states, {} in full", r.states, f.states));
    }
    same(
        "verdict",
        format!("{:?}", f.verdict),
        format!("{:?}", r.verdict),
    )?;
    same(
        "deadlock-free",
        format!("{:?}", f.deadlock_free),
        format!("{:?}", r.deadlock_free),
    )?;
    same(
        "option to complete",
        format!("{:?}", f.option_to_complete),
        format!("{:?}", r.option_to_complete),
    )?;
    same(
        "1-safe",
        format!("{:?}", f.one_safe),
        format!("{:?}", r.one_safe),
    )?;
    same(
        "dead operators",
        format!("{:?}", f.properties.no_dead_operators),
        format!("{:?}", r.properties.no_dead_operators),
    )?;
    same(
        "may loop",
        format!("{:?}", f.may_loop),
        format!("{:?}", r.may_loop),
    )?;
    // A deadlock is reached in as few firings in the reduced graph as in the full one.
    same(
        "deadlock witness length",
        format!(
            "{:?}",
            f.properties.deadlock_free.path.as_ref().map(Vec::len)
        ),
        format!(
            "{:?}",
            r.properties.deadlock_free.path.as_ref().map(Vec::len)
        ),
    )?;
    // With the full state space within the budget, the lasso is the full one: the shortest.
    same(
        "lasso",
        format!("{:?}", f.properties.may_loop),
        format!("{:?}", r.properties.may_loop),
    )?;
    Ok(Compared::Yes)
}

/// The smallest share of generated nets that must be compared (not skipped by the budget).
const MIN_COMPARED: f64 = 0.8;

/// Runs `cases` random nets of `strategy` through [`reduction_is_exact_within`] (`small` says
/// whether a net's reduced space must fit the budget), counts how many were compared, reports
/// the ones the budget skipped, and fails when fewer than [`MIN_COMPARED`] were compared.
fn counted<S>(what: &str, cases: u32, strategy: S, net_of: impl Fn(&S::Value) -> (Net, bool))
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    use std::cell::RefCell;
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let tally: RefCell<Vec<(Compared, String)>> = RefCell::new(Vec::new());
    let result = runner.run(&strategy, |v| {
        let (net, small) = net_of(&v);
        let c = reduction_is_exact_within(&net, small).map_err(TestCaseError::fail)?;
        tally.borrow_mut().push((c, format!("{v:?}")));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{what}: {e}");
    }
    let tally = tally.into_inner();
    let compared = tally.iter().filter(|(c, _)| *c == Compared::Yes).count();
    let skipped: Vec<&(Compared, String)> =
        tally.iter().filter(|(c, _)| *c != Compared::Yes).collect();
    eprintln!(
        "{what}: {compared} of {} random nets compared, {} skipped by the budget of {BUDGET} states",
        tally.len(),
        skipped.len()
    );
    for (why, net) in &skipped {
        eprintln!("  skipped ({why:?}): {net}");
    }
    assert_eq!(tally.len(), cases as usize, "{what}: every case ran once");
    assert!(
        compared as f64 >= MIN_COMPARED * tally.len() as f64,
        "{what}: only {compared} of {} random nets were compared ({} skipped by the budget, listed above)",
        tally.len(),
        skipped.len()
    );
}

/// Choices (gates, guards), loops, deadlocks, accumulators, joins and merges, and the workflow
/// patterns' operators (cancellation regions, terminate, mutex, milestone, trigger, partial and
/// cancelling joins), with up to three sources running in parallel.
#[test]
fn reduced_and_full_exploration_agree_and_reduced_witnesses_replay_in_the_engine() {
    let strategy = (
        1usize..=3,
        proptest::collection::vec(nets::pattern_kind(), 1..=12),
        proptest::collection::vec(0usize..64, 1..=32),
    );
    counted("random nets", 256, strategy, |(sources, kinds, picks)| {
        let small = !kinds.iter().any(|k| k.is_pattern());
        (random_net(*sources, kinds, picks), small)
    });
}

/// Two or three independent random components side by side: loops beside work, deadlocks
/// beside loops — where a reduction that ignores a component would go wrong. Their pattern
/// operators cancel inside their own component (no `terminate`, whose region is the whole net
/// and would make them one component).
#[test]
fn reduction_is_exact_on_independent_components() {
    let strategy = proptest::collection::vec(
        (
            1usize..=2,
            proptest::collection::vec(nets::local_pattern_kind(), 1..=6),
            proptest::collection::vec(0usize..64, 1..=16),
        ),
        2..=3,
    );
    counted("random components", 256, strategy, |parts| {
        let small = !parts.iter().flat_map(|p| &p.1).any(|k| k.is_pattern());
        (random_parallel_net(parts), small)
    });
}

#[test]
fn the_known_bad_nets_and_the_patterns_verify_the_same_reduced() {
    let mut all: Vec<fn() -> Net> = vec![
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
    all.push(|| parallel_split(4));
    for net in all {
        let net = net();
        reduction_is_exact(&net).unwrap_or_else(|e| panic!("{}: {e}", net.name()));
    }
}

// ---------------------------------------------------------------------------------------------
// Known nets

#[test]
fn parallel_split_reduces_to_one_interleaving() {
    // src, split, then each branch's 3 firings one branch after the other, the join, the sink:
    // 3n + 5 states on a single path, where the full state space has 4^n + 4.
    for n in [2usize, 5, 10, 20] {
        let r = reduced(&parallel_split(n));
        assert!(r.reduced && r.complete, "n = {n}");
        assert_eq!(r.verdict, Verdict::Holds, "n = {n}\n{r}");
        assert_eq!(
            (r.states, r.edges),
            (3 * n as u64 + 5, 3 * n as u64 + 4),
            "n = {n}"
        );
        assert_eq!(r.deadlock_free, Some(true));
        assert_eq!(r.option_to_complete, Some(true));
        assert_eq!(r.no_dead_operators, Some(true));
        assert_eq!(r.may_loop, Some(false));
        assert_eq!(r.exploration.proviso_expansions, 0);
    }
}

/// `src` forks to a loop that never ends (`spin` ↔ `body`) and to `b → out_b`. The loop is
/// declared first, so the stubborn sets pick it whenever they can.
fn livelock_beside_work() -> Net {
    let mut b = Net::builder("livelock-beside-work");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::default());
    b.add("spin", Merge::<Any>::default());
    b.add("body", Transform::new());
    b.add("b", Transform::new());
    b.add("out_b", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "spin.in_a")
        .connect("spin.out_data", "body.in_data")
        .connect("body.out_data", "spin.in_b")
        .connect("split.out_b", "b.in_data")
        .connect("b.out_data", "out_b.in_data");
    b.build().expect("valid")
}

#[test]
fn the_cycle_proviso_keeps_operators_a_loop_would_ignore() {
    // Without the proviso the reduced graph would spin in the loop for ever and never fire `b`
    // and `out_b` (reported dead). The loop's bottom component is expanded fully once.
    let net = livelock_beside_work();
    let r = reduced(&net);
    assert!(r.exploration.proviso_expansions > 0, "{r}");
    assert_eq!(r.no_dead_operators, Some(true), "{r}");
    assert_eq!(r.option_to_complete, Some(false));
    assert!(
        r.properties
            .option_to_complete
            .message
            .as_deref()
            .unwrap_or("")
            .contains("livelock"),
        "{r}"
    );
    assert_eq!(r.may_loop, Some(true));
    reduction_is_exact(&net).unwrap();
    assert!(r.states < full(&net).states);
}

/// A structured loop (`loop` ↔ `body` → `check`, exit to `done`) beside `n` branches of 3
/// transforms.
fn loop_beside_branches(n: usize) -> Net {
    let mut b = Net::builder("loop-beside-branches");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::new(n + 1).expect("arity"));
    b.add("loop", Merge::<Any>::default());
    b.add("body", Transform::new());
    let test = Test::parse(&json!({"eq": "x"})).expect("a test");
    b.add("check", Guard::<Any>::new(test));
    b.add("done", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "loop.in_a")
        .connect("loop.out_data", "body.in_data")
        .connect("body.out_data", "check.in_data")
        .connect("check.out_continue", "loop.in_b")
        .connect("check.out_exit", "done.in_data");
    for i in 0..n {
        let letter = (b'b' + i as u8) as char;
        for s in 0..3 {
            b.add(format!("t{i}_{s}"), Transform::new());
        }
        b.add(format!("end{i}"), Sink::new());
        b.connect(format!("split.out_{letter}"), format!("t{i}_0.in_data"));
        b.connect(format!("t{i}_0.out_data"), format!("t{i}_1.in_data"));
        b.connect(format!("t{i}_1.out_data"), format!("t{i}_2.in_data"));
        b.connect(format!("t{i}_2.out_data"), format!("end{i}.in_data"));
    }
    b.build().expect("valid")
}

#[test]
fn the_shortest_lasso_comes_from_a_full_exploration_within_the_budget() {
    let net = loop_beside_branches(3);
    let f = full(&net);
    let r = reduced(&net);
    assert!(r.states < f.states);
    assert_eq!(r.may_loop, Some(true));
    assert_eq!(r.properties.may_loop, f.properties.may_loop, "{r}");
    assert_eq!(
        r.properties.may_loop.cycle_path.as_deref(),
        Some(&["loop", "body", "check:out_continue"].map(String::from)[..])
    );
    // A budget the reduced state space fits in but the full one does not: a cycle is
    // reachable, its shortest lasso is not known.
    let budget = r.states + 10;
    assert!(budget < f.states);
    let small = verify(&net, &VerifyOptions::default().max_states(budget));
    assert!(small.complete, "{small}");
    assert_eq!(small.verdict, Verdict::Holds);
    assert_eq!(small.may_loop, Some(true));
    let l = &small.properties.may_loop;
    assert_eq!(l.lasso, Some(NOT_CHECKED_UNDER_REDUCTION));
    assert_eq!((l.prefix.as_ref(), l.cycle.as_ref()), (None, None));
    let j = small.to_json();
    assert_eq!(
        j["properties"]["may_loop"]["lasso"],
        "not_checked_under_reduction"
    );
    assert_eq!(j["may_loop"], true);
    assert!(
        small.to_string().contains("not checked under reduction"),
        "{small}"
    );
}

#[test]
fn the_report_says_whether_it_was_reduced() {
    let net = wcp3_synchronization();
    let (r, f) = (reduced(&net), full(&net));
    assert!(r.reduced && !f.reduced);
    assert_eq!(r.to_json()["reduced"], true);
    assert_eq!(f.to_json()["reduced"], false);
    assert_eq!(f.states, 8);
    assert_eq!(r.states, 7);
    assert!(r.to_string().contains("reduced"), "{r}");
    assert!(!f.to_string().contains("reduced"), "{f}");
}

#[test]
fn a_reduced_deadlock_witness_is_a_real_run_of_the_engine() {
    // The deadlock of the xor-split closed by an and-join, found in the reduced graph: the
    // engine, driven along the witness (the gate forced to the branch it names), deadlocks.
    let r = reduced(&bad_xor_split_and_join());
    assert!(r.reduced);
    assert_eq!(r.deadlock_free, Some(false));
    let net = bad_xor_split_and_join();
    witnesses_replay(&net, &r).unwrap();
    // The other branch too: the data says `out_true`; forced, the engine takes `out_false`.
    let path = ["src", "split", "test", "choose:out_false", "b"].map(String::from);
    let cvm = drive(&net, &path).unwrap();
    assert!(matches!(
        cvm.terminal_state(),
        Some(EndState::Deadlock { .. })
    ));
}

#[test]
fn fire_op_fires_the_operator_named_and_refuses_one_not_enabled() {
    let net = wcp2_parallel_split();
    let id = |n: &str| net.op_id(n).expect("an operator");
    let mut cvm = Cvm::new(wcp2_parallel_split());
    cvm.fire_op(id("src")).unwrap();
    cvm.fire_op(id("split")).unwrap();
    // Both `a` and `b` are enabled; a step would fire `a`, the first declared.
    let before = cvm.marking();
    match cvm.fire_op(id("out_b")) {
        Err(StepError::ReplayDiverged { step: 3, op }) => assert_eq!(op, "out_b"),
        other => panic!("{other:?}"),
    }
    assert!(cvm.marking() == before, "a refused firing changes nothing");
    match cvm.fire_op(id("b")).unwrap() {
        Step::Fired { ops, step: 3, .. } => assert_eq!(ops, [id("b")]),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        cvm.state_of("b.out_data -> out_b.in_data").map(|c| c.state),
        Some(ConnState::New)
    );
    assert_eq!(
        cvm.state_of("a.out_data -> out_a.in_data").map(|c| c.state),
        Some(ConnState::Empty)
    );
    // Backward undoes it like any step.
    cvm.back().unwrap();
    assert!(cvm.marking() == before);
}

#[test]
fn a_follow_of_a_reduced_witness_ends_where_the_report_says() {
    let r = reduced(&bad_loop_without_exit());
    assert!(r.reduced);
    let path = r
        .properties
        .option_to_complete
        .path
        .clone()
        .unwrap_or_default();
    let t = follow(&bad_loop_without_exit(), &path).unwrap();
    assert_eq!(
        t.end,
        TraceEnd::Running {
            enabled: vec!["spin".into()]
        }
    );
}

/// Found by the random nets with pattern operators: a held `mutex` whose grant loops back to
/// its own `in_done` consumes that connection when it fires (its control state says so), so
/// back-pressure does not hold it — in the verifier as in the engine (docs/semantics.md §3.2).
#[test]
fn a_held_mutex_whose_grant_loops_back_to_done_is_not_blocked() {
    let text = "name: m\noperators:\n  - {id: s0, type: source, params: {value: x}}\n  - {id: o0, type: mutex}\n  - {id: o1, type: fork}\nconnections:\n  - {from: o0.out_a, to: o0.in_done}\n  - {from: s0.out_data, to: o0.in_a}\n  - {from: o1.out_a, to: o0.in_b}\n  - {from: o0.out_a, to: o1.in_data}\n";
    let net = Net::from_cm(text).unwrap();
    let mut cvm = Cvm::new(Net::from_cm(text).unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    for reduce in [Reduction::None, Reduction::Stubborn] {
        let r = verify(&net, &VerifyOptions::default().reduce(reduce));
        assert_eq!(
            r.properties.deadlock_free.holds,
            Some(true),
            "{reduce:?}: {:?}",
            r.properties.deadlock_free
        );
        assert_eq!(
            r.properties.option_to_complete.holds,
            Some(true),
            "{reduce:?}"
        );
    }
    reduction_is_exact(&net).unwrap();
}
