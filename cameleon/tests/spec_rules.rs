//! One test per rule of docs/semantics.md §1–§6, named after the rule.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cameleon::StepError;
use cameleon::engine::StuckReason;
use cameleon::net::ProblemKind;
use cameleon::operator::OpState;
use cameleon::ops::*;
use cameleon::prelude::*;
use common::*;
use serde_json::json;

fn test(v: serde_json::Value) -> Test {
    Test::parse(&v).unwrap()
}

fn problems(b: NetBuilder) -> Vec<(ProblemKind, String)> {
    b.build()
        .expect_err("the net should be invalid")
        .problems
        .into_iter()
        .map(|p| (p.kind, p.to_string()))
        .collect()
}

/// src -> t -> out
fn linear() -> NetBuilder {
    let mut b = Net::builder("linear");
    b.add("src", Source::new("hi"));
    b.add("t", Transform::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "t.in_data");
    b.connect("t.out_data", "out.in_data");
    b
}

// ---------------------------------------------------------------------------------------------
// §1 The net

#[test]
fn input_with_no_connection_is_rejected() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("t", Transform::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "t.in_data");
    let p = problems(b);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ProblemKind::UnconnectedInput);
    assert!(
        p[0].1.contains("input `out.in_data` is not connected"),
        "{}",
        p[0].1
    );
}

#[test]
fn input_with_two_connections_is_rejected_with_a_merge_hint() {
    let mut b = Net::builder("n");
    b.add("a", Source::new("x"));
    b.add("b", Source::new("y"));
    b.add("out", Sink::new());
    b.connect("a.out_data", "out.in_data");
    b.connect("b.out_data", "out.in_data");
    let p = problems(b);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ProblemKind::InputHasManyConnections);
    assert!(
        p[0].1.contains("`out.in_data` has 2 connections"),
        "{}",
        p[0].1
    );
    assert!(p[0].1.contains("join them with a merge"), "{}", p[0].1);
}

#[test]
fn optional_input_may_stay_unconnected_and_counts_as_old() {
    let mut b = Net::builder("n");
    b.add("src", Const::new(json!(1)));
    b.add("acc", Accumulator::new(1));
    b.add("out", Sink::new());
    b.connect("src.out_data", "acc.in_data");
    b.connect("acc.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().expect("in_done is optional"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "out"), [json!([1])]);
}

#[test]
fn fan_out_shares_one_value_among_its_connections() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("shared"));
    b.add("x", Sink::new());
    b.add("y", Sink::new());
    b.connect("src.out_data", "x.in_data");
    b.connect("src.out_data", "y.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.step().unwrap();
    let a = cvm.state_of("src.out_data -> x.in_data").unwrap();
    let c = cvm.state_of("src.out_data -> y.in_data").unwrap();
    assert_eq!((a.state, c.state), (ConnState::New, ConnState::New));
    assert!(
        Value::ptr_eq(a.value().unwrap(), c.value().unwrap()),
        "fan-out must not copy"
    );
}

#[test]
fn type_mismatch_names_both_ports_and_both_types() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("g", Gate::<Any>::new());
    b.add("cond", Source::new("not a bool"));
    b.add("out", Sink::new());
    b.connect("src.out_data", "g.in_data");
    b.connect("cond.out_data", "g.in_condition");
    b.connect("g.out_true", "out.in_data");
    let p = problems(b);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ProblemKind::TypeMismatch);
    let m = &p[0].1;
    for needle in [
        "`cond.out_data`",
        "`g.in_condition`",
        "DataString",
        "DataBool",
    ] {
        assert!(m.contains(needle), "{m} should mention {needle}");
    }
}

#[test]
fn any_input_of_a_behavioral_operator_accepts_every_type() {
    let mut b = Net::builder("n");
    b.add("b", BoolSource(true));
    b.add("t", Transform::new());
    b.add("out", Sink::new());
    b.connect("b.out_data", "t.in_data");
    b.connect("t.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "out"), [json!("true")]);
}

fn through_fork(src: impl Operator) -> NetBuilder {
    let mut b = Net::builder("n");
    b.add("src", src);
    b.add("meta", Source::new("m"));
    b.add("fork", Fork::<Any>::default());
    b.add("fmt", Format::default());
    b.add("out", Sink::new());
    b.add("other", Sink::new());
    b.connect("src.out_data", "fork.in_data");
    b.connect("fork.out_a", "fmt.in_main");
    b.connect("fork.out_b", "other.in_data");
    b.connect("meta.out_data", "fmt.in_meta");
    b.connect("fmt.out_data", "out.in_data");
    b
}

#[test]
fn structural_any_ports_are_type_variables() {
    let net = through_fork(Source::new("s"))
        .build()
        .expect("DataString through a fork is a DataString");
    let fork = &net.operators()[net.op_id("fork").unwrap().index()];
    assert_eq!(fork.out_types[1].name, "DataString");
    let p = problems(through_fork(BoolSource(true)));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ProblemKind::TypeMismatch);
    assert!(
        p[0].1.contains("DataBool") && p[0].1.contains("fmt.in_main"),
        "{}",
        p[0].1
    );
    assert!(
        p[0].1.contains("src.out_data -> fork.in_data"),
        "the binding connection is named: {}",
        p[0].1
    );
}

#[test]
fn output_with_no_connection_drops_what_it_emits() {
    // The gate's false branch is wired to nothing: routing there is fine and loses nothing else.
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("c", BoolSource(false));
    b.add("g", Gate::<Any>::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "g.in_data");
    b.connect("c.out_data", "g.in_condition");
    b.connect("g.out_true", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(received(&cvm, "out").is_empty());
}

#[test]
fn source_that_feeds_nothing_is_rejected() {
    let mut b = linear();
    b.add("lonely", Source::new("x"));
    let p = problems(b);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ProblemKind::SourceFeedsNothing);
    assert!(
        p[0].1.contains("source `lonely` feeds nothing"),
        "{}",
        p[0].1
    );
}

#[test]
fn unknown_port_suggests_the_close_name() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("out", Sink::new());
    b.connect("src.out_dta", "out.in_data");
    let p = problems(b);
    assert!(
        p.iter()
            .any(|(k, m)| *k == ProblemKind::UnknownPort && m.contains("did you mean `out_data`?")),
        "{p:?}"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("src", Source::new("y"));
    b.add("t", Transform::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "t.in_data");
    b.connect("t.in_data", "out.in_data");
    b.connect("nobody.out_data", "out.in_data");
    let kinds: Vec<ProblemKind> = problems(b).into_iter().map(|p| p.0).collect();
    for k in [
        ProblemKind::DuplicateOperator,
        ProblemKind::WrongDirection,
        ProblemKind::UnknownOperator,
    ] {
        assert!(kinds.contains(&k), "{k:?} missing from {kinds:?}");
    }
}

#[test]
fn typed_and_type_variable_forms_of_a_net_are_equal() {
    fn build<T: cameleon::PortType>(fork: Fork<T>) -> Net {
        let mut b = Net::builder("n");
        b.add("src", Source::new("s"));
        b.add("fork", fork);
        b.add("x", Sink::new());
        b.add("y", Sink::new());
        b.connect("src.out_data", "fork.in_data");
        b.connect("fork.out_a", "x.in_data");
        b.connect("fork.out_b", "y.in_data");
        b.build().unwrap()
    }
    let typed = build(Fork::<DataString>::default());
    let variable = build(Fork::<Any>::default());
    assert_eq!(
        typed, variable,
        "the same net, whether the fork's type is named or inferred"
    );
    assert_ne!(
        typed,
        build(Fork::<DataString>::new(3).unwrap()),
        "params differ"
    );
}

// ---------------------------------------------------------------------------------------------
// §2 Connection state

#[test]
fn initial_marking_is_every_connection_empty() {
    let cvm = Cvm::new(linear().build().unwrap());
    assert!(
        cvm.marking()
            .0
            .iter()
            .all(|(s, t)| *s == ConnState::Empty && t.is_none())
    );
}

#[test]
fn consumed_token_becomes_old_and_keeps_its_value() {
    let mut cvm = Cvm::new(linear().build().unwrap());
    cvm.step().unwrap();
    cvm.step().unwrap();
    let c = cvm.state_of("src.out_data -> t.in_data").unwrap();
    assert_eq!(c.state, ConnState::Old);
    assert_eq!(c.value().unwrap().to_json(), json!("hi"));
}

// ---------------------------------------------------------------------------------------------
// §3 Enabling

/// s1 -> pair.in_a, s2 -> pair.in_b (with a probe on b so it arrives later).
fn pair_net(policy: Policy) -> (NetBuilder, Arc<std::sync::Mutex<Vec<[ConnState; 2]>>>) {
    let pair = Pair::new(policy);
    let log = pair.log.clone();
    let mut b = Net::builder("pair");
    b.add("s1", Source::new("a"));
    b.add("s2", Source::new("b"));
    b.add("m", Merge::<Any>::default());
    b.add("s3", Source::new("a2"));
    b.add("pair", pair);
    b.add("out", Sink::new());
    b.connect("s1.out_data", "pair.in_a");
    b.connect("s2.out_data", "m.in_a");
    b.connect("s3.out_data", "m.in_b");
    b.connect("m.out_data", "pair.in_b");
    b.connect("pair.out_data", "out.in_data");
    (b, log)
}

#[test]
fn any_policy_waits_for_every_input_then_fires_on_each_refresh() {
    let (b, log) = pair_net(Policy::Any);
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let log = log.lock().unwrap().clone();
    use ConnState::{New, Old};
    // First firing needs both inputs non-EMPTY; then it is reactive to the second merge output.
    assert_eq!(log, vec![[New, New], [Old, New]]);
}

#[test]
fn all_policy_needs_every_input_new() {
    let (b, log) = pair_net(Policy::All);
    let mut cvm = Cvm::new(b.build().unwrap());
    let end = cvm.run().unwrap();
    // The second merged token arrives while in_a is OLD: an `all` operator cannot fire on it.
    let EndState::Deadlock { stuck } = end else {
        panic!("expected a deadlock, got {end}")
    };
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(stuck[0].op, "pair");
    assert_eq!(stuck[0].input.as_deref(), Some("in_a"));
    assert_eq!(stuck[0].reason, StuckReason::Old);
}

#[test]
fn merge_fires_while_an_input_is_empty() {
    let mut b = Net::builder("n");
    b.add("s", Source::new("x"));
    b.add("m", Merge::<Any>::default());
    b.add("out", Sink::new());
    b.add("c", BoolSource(false));
    b.add("g", Gate::<Any>::new());
    b.add("s2", Source::new("never"));
    b.connect("s.out_data", "m.in_a");
    b.connect("s2.out_data", "g.in_data");
    b.connect("c.out_data", "g.in_condition");
    b.connect("g.out_true", "m.in_b");
    b.connect("m.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.step().unwrap(); // s
    assert_eq!(cvm.fireable(), ["m", "c", "s2"]);
    assert_eq!(st(&cvm, "g.out_true -> m.in_b"), ConnState::Empty);
}

#[test]
fn source_fires_once() {
    let mut cvm = Cvm::new(linear().build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(fired(&cvm), ["src", "t", "out"]);
}

#[test]
fn gate_fires_on_new_data_with_a_kept_condition() {
    // Two data tokens, one condition: the OLD condition is re-used for the second.
    let mut b = Net::builder("n");
    b.add("d1", Source::new("first"));
    b.add("d2", Source::new("second"));
    b.add("m", Merge::<Any>::default());
    b.add("c", BoolSource(true));
    b.add("g", Gate::<Any>::new());
    b.add("yes", Sink::new());
    b.add("no", Sink::new());
    b.connect("d1.out_data", "m.in_a");
    b.connect("d2.out_data", "m.in_b");
    b.connect("m.out_data", "g.in_data");
    b.connect("c.out_data", "g.in_condition");
    b.connect("g.out_true", "yes.in_data");
    b.connect("g.out_false", "no.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "yes"), [json!("first"), json!("second")]);
    assert!(received(&cvm, "no").is_empty());
    assert_eq!(cvm.unreached(), ["g.out_false -> no.in_data"]);
}

#[test]
fn operator_is_blocked_while_an_output_is_new() {
    let (b, _) = pair_net(Policy::Any);
    let mut cvm = Cvm::new(b.build().unwrap());
    for _ in 0..4 {
        cvm.step().unwrap(); // s1, s2, m (merges s2's token), s3
    }
    assert_eq!(fired(&cvm), ["s1", "s2", "m", "s3"]);
    // m.in_b is NEW, but m.out_data is still NEW (pair has not consumed it).
    assert_eq!(st(&cvm, "s3.out_data -> m.in_b"), ConnState::New);
    assert_eq!(st(&cvm, "m.out_data -> pair.in_b"), ConnState::New);
    assert_eq!(cvm.fireable(), ["pair"], "merge must wait: back-pressure");
    cvm.step().unwrap(); // pair consumes
    assert_eq!(cvm.fireable(), ["m", "out"]);
}

#[test]
fn self_loop_writes_its_own_consumed_input() {
    let mut b = Net::builder("n");
    b.add("start", Const::new(json!(3)));
    b.add("cd", Countdown);
    b.add("out", Sink::new());
    b.connect("start.out_data", "cd.in_start");
    b.connect("cd.out_self", "cd.in_self");
    b.connect("cd.out_done", "out.in_data");
    let mut cvm = Cvm::new(b.build().expect("self-loops are allowed"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(fired(&cvm), ["start", "cd", "cd", "cd", "cd", "out"]);
    assert_eq!(received(&cvm, "out"), [json!(0)]);
}

// ---------------------------------------------------------------------------------------------
// §4 Firing

#[test]
fn first_enabled_operator_in_declaration_order_fires() {
    let mut b = Net::builder("n");
    b.add("late", Source::new("1"));
    b.add("early", Source::new("2"));
    b.add("x", Sink::new());
    b.add("y", Sink::new());
    b.connect("early.out_data", "x.in_data");
    b.connect("late.out_data", "y.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.fireable(), ["late", "early"]);
    cvm.run().unwrap();
    assert_eq!(fired(&cvm), ["late", "early", "x", "y"]);
}

#[test]
fn run_sees_each_input_value_with_its_state() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("v"));
    b.add("p", Probe::default());
    b.add("out", Sink::new());
    b.connect("src.out_data", "p.in_data");
    b.connect("p.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.run().unwrap();
    let p = cvm.net().operators()[1].downcast_ref::<Probe>().unwrap();
    assert_eq!(p.seen, [("v".to_owned(), ConnState::New)]);
}

#[test]
fn merge_forwards_first_new_input_and_keeps_the_other_new() {
    let mut b = Net::builder("n");
    b.add("a", Source::new("A"));
    b.add("b", Source::new("B"));
    b.add("m", Merge::<Any>::default());
    b.add("out", Sink::new());
    b.connect("a.out_data", "m.in_a");
    b.connect("b.out_data", "m.in_b");
    b.connect("m.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.step().unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap(); // m: both inputs NEW
    assert_eq!(fired(&cvm), ["a", "b", "m"]);
    assert_eq!(st(&cvm, "a.out_data -> m.in_a"), ConnState::Old);
    assert_eq!(st(&cvm, "b.out_data -> m.in_b"), ConnState::New);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "out"), [json!("A"), json!("B")]);
}

fn counted_loop(limit: i64) -> NetBuilder {
    let mut b = Net::builder("loop");
    b.add("zero", Const::new(json!(0)));
    b.add("m", Merge::<Any>::default());
    b.add("inc", Counter::new());
    b.add("g", Guard::<Any>::new(test(json!({"lt": limit}))));
    b.add("out", Sink::new());
    b.connect("zero.out_data", "m.in_a");
    b.connect("m.out_data", "inc.in_data");
    b.connect("inc.out_data", "g.in_data");
    b.connect("g.out_continue", "m.in_b");
    b.connect("g.out_exit", "out.in_data");
    b
}

#[test]
fn loop_limit_stops_before_the_extra_firing_and_names_the_operator() {
    let mut cvm = Cvm::builder(counted_loop(1_000).build().unwrap())
        .max_loop_iterations(5)
        .build();
    let end = cvm.run().unwrap();
    assert_eq!(
        end,
        EndState::LoopLimit {
            op: "m".into(),
            limit: 5
        }
    );
    let m = cvm.net().op_id("m").unwrap();
    assert_eq!(cvm.fire_count(m), 5);
    // The marking is intact: stepping back and forth still works.
    cvm.back().unwrap();
    assert!(matches!(
        cvm.step().unwrap(),
        Step::Fired { replayed: true, .. }
    ));
}

#[test]
fn step_limit_stops_before_the_first_step_past_the_budget() {
    let mut cvm = Cvm::builder(counted_loop(1_000).build().unwrap())
        .max_steps(7)
        .build();
    assert_eq!(cvm.run().unwrap(), EndState::StepLimit { limit: 7 });
    assert_eq!(cvm.depth(), 7);
}

#[test]
fn loop_with_merge_counter_and_guard_completes() {
    let mut cvm = Cvm::new(counted_loop(10).build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "out"), [json!(10)]);
    let inc = cvm.net().op_id("inc").unwrap();
    assert_eq!(cvm.fire_count(inc), 10);
}

fn failing_net(panic: bool) -> NetBuilder {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::default());
    b.add("bad", Failing { panic });
    b.add("ok", Sink::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "fork.in_data");
    b.connect("fork.out_a", "bad.in_data");
    b.connect("fork.out_b", "ok.in_data");
    b.connect("bad.out_data", "out.in_data");
    b
}

#[test]
fn failing_run_applies_nothing_and_names_the_operator() {
    for panic in [false, true] {
        let mut cvm = Cvm::new(failing_net(panic).build().unwrap());
        cvm.step().unwrap();
        cvm.step().unwrap();
        let before = cvm.marking();
        let depth = cvm.depth();
        let err = cvm.step().unwrap_err();
        let StepError::Operator { op, error } = &err else {
            panic!("unexpected {err}")
        };
        assert_eq!(op, "bad");
        let expected = if panic {
            "boom"
        } else {
            "the model is unavailable"
        };
        assert!(error.to_string().contains(expected), "{error}");
        assert_eq!(cvm.marking(), before, "marking untouched");
        assert_eq!(cvm.depth(), depth, "no history entry");
        // The run as a whole ends in ERROR, and the net can still go back and forth.
        let end = cvm.run().unwrap();
        assert!(
            matches!(&end, EndState::Error { op, .. } if op == "bad"),
            "{end}"
        );
        cvm.back().unwrap();
        cvm.step().unwrap();
        assert_eq!(cvm.marking(), before);
    }
}

#[test]
fn failure_of_an_operator_with_an_error_output_is_emitted_there() {
    for mode in [Mode::Sequential, Mode::Parallel] {
        let mut b = Net::builder("n");
        b.add("src", Source::new("x"));
        b.add("fragile", Fragile);
        b.add("ok", Sink::new());
        b.add("errors", Sink::new());
        b.connect("src.out_data", "fragile.in_data");
        b.connect("fragile.out_data", "ok.in_data");
        b.connect("fragile.error", "errors.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode}");
        assert!(
            received(&cvm, "ok").is_empty(),
            "nothing of the failed firing is kept"
        );
        assert_eq!(
            received(&cvm, "errors"),
            [json!({"operator": "fragile", "message": "the model is unavailable"})],
            "{mode}"
        );
    }
}

#[test]
fn emitting_a_value_of_the_wrong_type_is_an_error() {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("w", WrongType);
    b.add("out", Sink::new());
    b.connect("src.out_data", "w.in_data");
    b.connect("w.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    let end = cvm.run().unwrap();
    let EndState::Error { op, error } = end else {
        panic!("expected ERROR")
    };
    assert_eq!(op, "w");
    assert!(
        error.contains("DataBool") && error.contains("DataString"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// §5 History

#[test]
fn back_restores_the_marking_bit_for_bit() {
    let mut cvm = Cvm::new(counted_loop(4).build().unwrap());
    let mut markings = vec![cvm.marking()];
    while let Step::Fired { .. } = cvm.step().unwrap() {
        markings.push(cvm.marking());
    }
    while cvm.depth() > 0 {
        markings.pop();
        cvm.back().unwrap();
        assert_eq!(
            &cvm.marking(),
            markings.last().unwrap(),
            "at depth {}",
            cvm.depth()
        );
    }
    assert_eq!(cvm.back(), Err(cameleon::engine::BackError::AtStart));
}

#[test]
fn forward_after_back_replays_without_running() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("llm", Counting::wrap(Transform::new(), &calls));
    b.add("out", Sink::new());
    b.connect("src.out_data", "llm.in_data");
    b.connect("llm.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.run().unwrap();
    let after = cvm.marking();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    cvm.rewind();
    assert_eq!(cvm.history().redo_len(), 3);
    cvm.run().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "replay must not call run");
    assert_eq!(cvm.marking(), after, "replay gives the very same tokens");
}

#[test]
fn refire_executes_again_and_keeps_the_discarded_future_as_a_branch() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("llm", Counting::wrap(Transform::new(), &calls));
    b.add("out", Sink::new());
    b.connect("src.out_data", "llm.in_data");
    b.connect("llm.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.run().unwrap();
    let first = cvm.marking();
    cvm.back().unwrap();
    cvm.back().unwrap(); // before llm
    let step = cvm.refire().unwrap();
    assert!(matches!(
        step,
        Step::Fired {
            replayed: false,
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "re-fire executes");
    cvm.run().unwrap();
    assert_ne!(cvm.marking(), first, "a new token, not the recorded one");
    let branches = cvm.branches();
    assert_eq!(branches.len(), 2, "{branches:?}");
    assert_eq!(
        cvm.history().branches(),
        branches,
        "the history view lists the same branches"
    );
    assert_eq!(branches.iter().filter(|b| b.current).count(), 1);
    let old = branches.iter().find(|b| !b.current).unwrap();
    cvm.checkout(old.id).unwrap();
    assert_eq!(
        cvm.marking(),
        first,
        "switching back restores the first future exactly"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(cvm.branches().iter().any(|b| b.id == old.id && b.current));
    // After a checkout the history is an ordinary one: back then forward replays.
    let before_out = {
        cvm.back().unwrap();
        cvm.marking()
    };
    assert_eq!(cvm.history().redo_len(), 1);
    assert_eq!(
        cvm.step().unwrap(),
        Step::Fired {
            ops: vec![cvm.net().op_id("out").unwrap()],
            step: 3,
            replayed: true
        }
    );
    assert_eq!(cvm.marking(), first, "the very same tokens again");
    assert_ne!(cvm.marking(), before_out);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "replay does not run");
}

/// Succeeds its first `ok` firings, then fails.
struct FailsAfter {
    ok: usize,
    calls: Arc<AtomicUsize>,
}

impl Operator for FailsAfter {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "fails_after",
            "Fails after",
            Family::Behavioral,
            Policy::Any,
        )
        .input("in_data", TypeRef::of::<Any>())
        .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        Execution::Inline
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n > self.ok {
            return Err(OpError::new(format!("call #{n} fails")));
        }
        cx.emit_at(0, DataString(format!("call #{n}")));
        Ok(())
    }
}

/// docs/semantics.md §5.4: a `refire` that fails changes nothing — the recorded future stays,
/// and the next step replays it.
#[test]
fn a_failing_refire_keeps_the_recorded_future() {
    for mode in [Mode::Sequential, Mode::Parallel] {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut b = Net::builder("n");
        b.add("src", Source::new("x"));
        b.add(
            "llm",
            FailsAfter {
                ok: 1,
                calls: Arc::clone(&calls),
            },
        );
        b.add("out", Sink::new());
        b.connect("src.out_data", "llm.in_data")
            .connect("llm.out_data", "out.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode:?}");
        let recorded = cvm.marking();
        cvm.back().unwrap();
        cvm.back().unwrap();
        let before = cvm.marking();
        let branches = cvm.branches();
        // `refire`, then `refire_async`: each fails (calls #2, #3) and keeps the future.
        for (n, asynchronous) in [(2, false), (3, true)] {
            let result = if asynchronous {
                cameleon::runtime::block_on(cvm.refire_async())
            } else {
                cvm.refire()
            };
            match result {
                Err(StepError::Operator { op, error }) => {
                    assert_eq!(op, "llm", "{mode:?}");
                    assert_eq!(error.to_string(), format!("call #{n} fails"), "{mode:?}");
                }
                other => panic!("{mode:?}: expected the operator's failure, got {other:?}"),
            }
            assert_eq!(cvm.marking(), before, "{mode:?}");
            assert_eq!(cvm.depth(), 1, "{mode:?}");
            assert_eq!(cvm.history().redo_len(), 2, "{mode:?}: the future is kept");
            assert_eq!(cvm.branches(), branches, "{mode:?}: no new branch");
        }
        // The next step replays the recorded firing, not a new one.
        assert!(
            matches!(cvm.step().unwrap(), Step::Fired { replayed: true, .. }),
            "{mode:?}"
        );
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode:?}");
        assert_eq!(cvm.marking(), recorded, "{mode:?}: the recorded tokens");
        assert_eq!(calls.load(Ordering::SeqCst), 3, "{mode:?}");
        assert_eq!(received(&cvm, "out"), [json!("call #1")], "{mode:?}");
    }
}

/// Fires while it has credits left (a custom rule on its internal state). Its `rollback`
/// compensates nothing: a credit spent stays spent, as a paid API call would.
struct Quota {
    credits: u32,
}

impl Operator for Quota {
    fn spec(&self) -> OpSpec {
        OpSpec::new("quota", "Quota", Family::Behavioral, Policy::Custom)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs[0] == ConnState::New && self.credits > 0
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.credits -= 1;
        cx.emit_at(0, DataString(format!("{} left", self.credits)));
        Ok(())
    }
    fn rollback(&mut self, _before: Option<&OpState>, _emitted: &[(u16, Value)]) {}
}

fn quota_net(credits: u32) -> Cvm {
    let mut b = Net::builder("n");
    b.add("src", Source::new("x"));
    b.add("quota", Quota { credits });
    b.add("out", Sink::new());
    b.connect("src.out_data", "quota.in_data")
        .connect("quota.out_data", "out.in_data");
    Cvm::new(b.build().unwrap())
}

/// docs/semantics.md §5.3: "If its operator is no longer enabled …, the step is refused and
/// nothing changes" — by `step`, `run` and `checkout` alike.
#[test]
fn a_recorded_step_whose_operator_is_no_longer_enabled_is_not_replayed() {
    let mut cvm = quota_net(1);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    cvm.back().unwrap();
    cvm.back().unwrap(); // before `quota`: its credit is not refunded
    let before = cvm.marking();
    assert_eq!(cvm.fireable(), Vec::<&str>::new());
    for _ in 0..2 {
        match cvm.step() {
            Err(e @ StepError::ReplayDiverged { step: 2, .. }) => {
                assert_eq!(
                    e.to_string(),
                    "cannot replay step 2: `quota` is not enabled"
                );
            }
            other => panic!("expected ReplayDiverged, got {other:?}"),
        }
        assert_eq!(cvm.marking(), before);
        assert_eq!(cvm.depth(), 1);
        assert_eq!(cvm.history().redo_len(), 2, "the recorded steps wait");
    }
    assert!(matches!(
        cvm.run(),
        Err(cameleon::RunError::Step(StepError::ReplayDiverged {
            step: 2,
            ..
        }))
    ));
    assert_eq!(cvm.marking(), before);

    // Two credits: a second branch can be made by re-firing; switching back to the first then
    // needs a third credit.
    let mut cvm = quota_net(2);
    cvm.run().unwrap();
    let first = cvm.branches()[0].id;
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    cvm.run().unwrap();
    assert_eq!(received(&cvm, "out"), [json!("0 left")]);
    assert_eq!(cvm.branches().len(), 2);
    match cvm.checkout(first) {
        Err(cameleon::engine::CheckoutError::Step(StepError::ReplayDiverged { step: 2, op })) => {
            assert_eq!(op, "quota")
        }
        other => panic!("expected ReplayDiverged, got {other:?}"),
    }
    assert_eq!(cvm.depth(), 1, "back where the branches part");
    assert_eq!(st(&cvm, "src.out_data -> quota.in_data"), ConnState::New);
}

/// A branch id names a node of one engine's history; another engine's may name none of its
/// own.
#[test]
fn checking_out_a_branch_this_history_does_not_have_is_refused() {
    let mut long = Cvm::new(counted_loop(4).build().unwrap());
    long.run().unwrap();
    let foreign = long.branches()[0].id;
    let mut cvm = Cvm::new(linear().build().unwrap());
    cvm.step().unwrap();
    let before = cvm.marking();
    match cvm.checkout(foreign) {
        Err(e @ cameleon::engine::CheckoutError::UnknownBranch(id)) => {
            assert_eq!(id, foreign);
            assert!(e.to_string().starts_with("no branch "), "{e}");
        }
        other => panic!("expected UnknownBranch, got {other:?}"),
    }
    assert_eq!(cvm.marking(), before);
    assert_eq!(cvm.depth(), 1);
}

#[test]
fn back_restores_a_stateful_operators_internal_state() {
    let mut b = Net::builder("n");
    b.add("a", Const::new(json!("a")));
    b.add("b", Const::new(json!("b")));
    b.add("m", Merge::<Any>::default());
    b.add("acc", Accumulator::new(2));
    b.add("out", Sink::new());
    b.connect("a.out_data", "m.in_a");
    b.connect("b.out_data", "m.in_b");
    b.connect("m.out_data", "acc.in_data");
    b.connect("acc.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(received(&cvm, "out"), [json!(["a", "b"])]);
    assert_eq!(fired(&cvm), ["a", "b", "m", "acc", "m", "acc", "out"]);
    // Step back over the accumulator's second firing only (and the sink's): its list must be
    // ["a"] again, as it was before that firing. Re-executed, it emits ["a", "b"]; with the
    // list it had after the firing (emptied, or still ["a", "b"]), it would emit nothing or
    // three items.
    cvm.back().unwrap();
    cvm.back().unwrap();
    assert_eq!(fired(&cvm), ["a", "b", "m", "acc", "m"]);
    assert_eq!(
        st(&cvm, "acc.out_data -> out.in_data"),
        ConnState::Empty,
        "the emission is undone"
    );
    let acc = cvm.net().op_id("acc").unwrap();
    assert_eq!(cvm.fire_count(acc), 1);
    assert!(matches!(
        cvm.refire().unwrap(),
        Step::Fired {
            replayed: false,
            ..
        }
    ));
    assert_eq!(fired(&cvm), ["a", "b", "m", "acc", "m", "acc"]);
    assert_eq!(st(&cvm, "acc.out_data -> out.in_data"), ConnState::New);
    while let Step::Fired { .. } = cvm.refire().unwrap() {}
    assert_eq!(received(&cvm, "out"), [json!(["a", "b"])]);
    // Back past both firings: the list is empty again, and a re-execution collects anew.
    while fired(&cvm).iter().any(|n| n == "acc") {
        cvm.back().unwrap();
    }
    while let Step::Fired { .. } = cvm.refire().unwrap() {}
    assert_eq!(received(&cvm, "out"), [json!(["a", "b"])]);
}

#[test]
fn token_metadata_is_a_logical_clock() {
    let mut cvm = Cvm::new(linear().build().unwrap());
    cvm.run().unwrap();
    let t = cvm
        .state_of("t.out_data -> out.in_data")
        .unwrap()
        .token
        .unwrap();
    assert_eq!(t.step, 2);
    assert_eq!(cvm.net().op(t.op).name, "t");
}

// ---------------------------------------------------------------------------------------------
// §6 Terminal states

#[test]
fn completed_when_no_connection_is_new() {
    let mut cvm = Cvm::new(linear().build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(cvm.marking().0.iter().all(|(s, _)| *s != ConnState::New));
    assert_eq!(cvm.terminal_state(), Some(EndState::Completed));
}

/// A join whose second input comes from a gate branch that is never taken.
fn stuck_join() -> NetBuilder {
    let mut b = Net::builder("n");
    b.add("s1", Source::new("a"));
    b.add("s2", Source::new("b"));
    b.add("m", Merge::<Any>::default());
    b.add("d", Source::new("d"));
    b.add("c", BoolSource(false));
    b.add("g", Gate::<Any>::new());
    b.add("join", Join::<Any>::default());
    b.add("out", Sink::new());
    b.add("no", Sink::new());
    b.connect("s1.out_data", "m.in_a");
    b.connect("s2.out_data", "m.in_b");
    b.connect("m.out_data", "join.in_a");
    b.connect("d.out_data", "g.in_data");
    b.connect("c.out_data", "g.in_condition");
    b.connect("g.out_true", "join.in_b");
    b.connect("g.out_false", "no.in_data");
    b.connect("join.out_data", "out.in_data");
    b
}

#[test]
fn deadlock_report_names_the_empty_input() {
    let mut cvm = Cvm::new(stuck_join().build().unwrap());
    let end = cvm.run().unwrap();
    let EndState::Deadlock { stuck } = &end else {
        panic!("expected DEADLOCK, got {end}")
    };
    let join = stuck
        .iter()
        .find(|s| s.op == "join")
        .expect("join is stuck");
    assert_eq!(join.input.as_deref(), Some("in_b"));
    assert_eq!(join.reason, StuckReason::Empty);
    assert!(
        join.message.contains("`in_b`") && join.message.contains("EMPTY"),
        "{}",
        join.message
    );
}

#[test]
fn deadlock_report_names_back_pressure() {
    let mut cvm = Cvm::new(stuck_join().build().unwrap());
    let EndState::Deadlock { stuck } = cvm.run().unwrap() else {
        panic!("expected DEADLOCK")
    };
    let m = stuck
        .iter()
        .find(|s| s.op == "m")
        .expect("merge is stuck behind join");
    assert_eq!(m.reason, StuckReason::BackPressure);
    assert_eq!(m.output.as_deref(), Some("out_data"));
    let json = serde_json::to_value(EndState::Deadlock {
        stuck: stuck.clone(),
    })
    .unwrap();
    assert_eq!(json["end"], "DEADLOCK");
    let join = json["stuck"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "join")
        .unwrap();
    assert_eq!(join["input"], "in_b");
    assert_eq!(join["reason"], "EMPTY");
}

#[test]
fn branch_never_taken_is_unreached_not_a_deadlock() {
    let mut b = Net::builder("n");
    b.add("d", Source::new("x"));
    b.add("c", BoolSource(true));
    b.add("g", Gate::<Any>::new());
    b.add("yes", Sink::new());
    b.add("no", Sink::new());
    b.connect("d.out_data", "g.in_data");
    b.connect("c.out_data", "g.in_condition");
    b.connect("g.out_true", "yes.in_data");
    b.connect("g.out_false", "no.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.unreached(), ["g.out_false -> no.in_data"]);
}

#[test]
fn history_costs_at_most_64_bytes_per_firing_excluding_payloads() {
    // A chain of 1 000 transforms: every firing consumes one connection and writes one.
    let mut b = Net::builder("chain");
    b.add("src", Source::new("x"));
    let mut prev = "src.out_data".to_owned();
    for i in 0..1_000 {
        b.add(format!("t{i}"), Transform::new());
        b.connect(prev, format!("t{i}.in_data"));
        prev = format!("t{i}.out_data");
    }
    b.add("out", Sink::new());
    b.connect(prev, "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    cvm.run().unwrap();
    let h = cvm.history();
    let per_firing = h.footprint_bytes() / h.recorded_firings();
    assert!(per_firing <= 64, "{per_firing} bytes per firing");
    assert!(
        per_firing >= 40,
        "the count must include the delta records and token handles"
    );
}
