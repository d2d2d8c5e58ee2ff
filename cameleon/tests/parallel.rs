//! Parallel (maximal-step) mode, async operators, timeouts, retries, cancellation and events
//! (docs/semantics.md §7).

mod probe;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cameleon::engine::Marking;
use cameleon::net::ProblemKind;
use cameleon::operator::OpState;
use cameleon::ops::{Delay, Fork, Join, Merge, Sink, Source, Transform};
use cameleon::policy::Policy;
use cameleon::prelude::*;
use cameleon::{Catalogue, Event, OpSettings, Params, Retry};
use probe::{Probe, marking_json, trace};

/// A fan-out of eight delays: source → fork(8) → 8 delays → join(8) → sink.
fn fan_out(ms: u64, mode: Mode) -> Cvm {
    let mut b = Net::builder("fan-out");
    b.add("src", Source::new("payload"));
    b.add("fork", Fork::<Any>::new(8).unwrap());
    for i in 0..8 {
        b.add(format!("wait_{i}"), Delay::new(ms));
    }
    b.add("join", Join::<Any>::new(8).unwrap());
    b.add("out", Sink::new());
    b.connect("src.out_data", "fork.in_data");
    for i in 0..8 {
        let l = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{l}"), format!("wait_{i}.in_data"));
        b.connect(format!("wait_{i}.out_data"), format!("join.in_{l}"));
    }
    b.connect("join.out_data", "out.in_data");
    Cvm::builder(b.build().unwrap()).mode(mode).build()
}

/// On a paused clock (see `the_fan_out_example_runs_its_delays_in_one_step`): the eight delays
/// of 100 ms take 100 ms together.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn fan_out_to_eight_delays_waits_for_them_at_once() {
    let mut cvm = fan_out(100, Mode::Parallel);
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    cvm.on_event(move |e| log.lock().unwrap().push(e.clone()));
    let t = tokio::time::Instant::now();
    assert_eq!(cvm.run_async().await.unwrap(), EndState::Completed);
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_millis(200),
        "waited together, not one after the other: {waited:?} of paused-clock time"
    );
    // The eight firings of the step were started, then each finished once.
    let events = events.lock().unwrap();
    let started =
        |e: &Event| matches!(e, Event::FiringStarted { op, .. } if op.starts_with("wait_"));
    let finished =
        |e: &Event| matches!(e, Event::FiringFinished { op, .. } if op.starts_with("wait_"));
    let first_finish = events
        .iter()
        .position(finished)
        .expect("the delays finished");
    assert_eq!(
        events[..first_finish].iter().filter(|e| started(e)).count(),
        8,
        "{events:?}"
    );
    assert_eq!(cvm.received("out")[0].to_json(), "payload");
    // src, fork, the 8 delays as one step, join, out.
    assert_eq!(cvm.depth(), 5);
    let entries = cvm.history().entries();
    let names: Vec<&str> = entries[2]
        .firings
        .iter()
        .map(|f| cvm.net().op(f.op).name.as_str())
        .collect();
    assert_eq!(
        names,
        (0..8).map(|i| format!("wait_{i}")).collect::<Vec<_>>()
    );
    // every firing of the maximal step got the step's number
    for f in &entries[2].firings {
        assert_eq!(cvm.token(f.written[0].1).unwrap().step, 3);
    }
}

#[test]
fn sequential_and_parallel_modes_agree_on_the_fan_out() {
    let mut seq = fan_out(1, Mode::Sequential);
    let mut par = fan_out(1, Mode::Parallel);
    assert_eq!(seq.run().unwrap(), EndState::Completed);
    assert_eq!(par.run().unwrap(), EndState::Completed);
    assert_eq!(marking_json(&seq), marking_json(&par));
    assert_eq!(seq.depth(), 12);
    assert_eq!(par.depth(), 5);
}

#[test]
fn sync_step_in_parallel_mode_fires_every_enabled_operator() {
    let mut cvm = fan_out(1, Mode::Parallel);
    cvm.step().unwrap();
    cvm.step().unwrap();
    assert_eq!(cvm.fireable().len(), 8);
    match cvm.step().unwrap() {
        Step::Fired {
            ops,
            step,
            replayed,
        } => {
            assert_eq!(ops.len(), 8);
            assert_eq!(step, 3);
            assert!(!replayed);
        }
        other => panic!("expected a step, got {other:?}"),
    }
    assert_eq!(cvm.fireable(), ["join"]);
}

#[tokio::test(flavor = "current_thread")]
async fn sync_run_in_parallel_mode_works_inside_a_runtime() {
    let mut cvm = fan_out(5, Mode::Parallel);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.depth(), 5);
}

#[test]
fn parallel_mode_comes_from_the_net_config() {
    let mut net = fan_out(1, Mode::Sequential).into_net_for_test();
    net.config_mut().mode = Mode::Parallel;
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.mode(), Mode::Parallel);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.depth(), 5);
}

trait IntoNet {
    fn into_net_for_test(self) -> Net;
}
impl IntoNet for Cvm {
    fn into_net_for_test(self) -> Net {
        // Rebuild the same description: a Cvm does not give its net back.
        let _ = self;
        let mut b = Net::builder("fan-out");
        b.add("src", Source::new("payload"));
        b.add("fork", Fork::<Any>::new(8).unwrap());
        for i in 0..8 {
            b.add(format!("wait_{i}"), Delay::new(1));
        }
        b.add("join", Join::<Any>::new(8).unwrap());
        b.add("out", Sink::new());
        b.connect("src.out_data", "fork.in_data");
        for i in 0..8 {
            let l = (b'a' + i as u8) as char;
            b.connect(format!("fork.out_{l}"), format!("wait_{i}.in_data"));
            b.connect(format!("wait_{i}.out_data"), format!("join.in_{l}"));
        }
        b.connect("join.out_data", "out.in_data");
        b.build().unwrap()
    }
}

/// Fires when any input is NEW and claims to consume every input, whatever its state.
struct Greedy;

impl Operator for Greedy {
    fn spec(&self) -> OpSpec {
        OpSpec::new("greedy", "Greedy", Family::Structural, Policy::AnyNoGuard)
            .input("in_a", TypeRef::Var(0))
            .input("in_b", TypeRef::Var(0))
    }
    fn consumes(&self, _inputs: &[ConnState]) -> InputSet {
        InputSet(u64::MAX)
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Ok(())
    }
}

/// An operator that claims every input still consumes only what was NEW at the start of its
/// step: `t` writes `g.in_a` in the step in which `g` fires, and `in_a` stays NEW after it
/// (docs/semantics.md §7).
#[test]
fn what_an_operator_claims_beyond_its_new_inputs_is_not_consumed_in_a_step() {
    let mut b = Net::builder("greedy");
    b.add("s1", Source::new("one"));
    b.add("s2", Source::new("two"));
    b.add("t", Transform::new());
    b.add("g", Greedy);
    b.connect("s1.out_data", "t.in_data")
        .connect("s2.out_data", "g.in_b")
        .connect("t.out_data", "g.in_a");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    cvm.step().unwrap(); // s1, s2
    assert_eq!(cvm.fireable(), ["t", "g"]);
    cvm.step().unwrap(); // t and g together
    assert_eq!(
        cvm.state_of("t.out_data -> g.in_a").unwrap().state,
        ConnState::New
    );
    assert_eq!(
        cvm.state_of("s2.out_data -> g.in_b").unwrap().state,
        ConnState::Old
    );
}

/// The same alone in a sequential step: `g` fires before `t` has written `g.in_a`, which
/// stays EMPTY (only NEW inputs are consumed, docs/semantics.md §4.4).
#[test]
fn what_an_operator_claims_beyond_its_new_inputs_is_not_consumed_alone() {
    let mut b = Net::builder("greedy");
    b.add("s1", Source::new("one"));
    b.add("s2", Source::new("two"));
    b.add("g", Greedy);
    b.add("t", Transform::new());
    b.connect("s1.out_data", "t.in_data")
        .connect("s2.out_data", "g.in_b")
        .connect("t.out_data", "g.in_a");
    let mut cvm = Cvm::builder(b.build().unwrap()).build();
    cvm.step().unwrap(); // s1
    cvm.step().unwrap(); // s2
    assert_eq!(cvm.fireable(), ["g", "t"]);
    cvm.step().unwrap(); // g alone
    assert_eq!(
        cvm.state_of("t.out_data -> g.in_a").unwrap().state,
        ConnState::Empty
    );
    assert_eq!(
        cvm.state_of("s2.out_data -> g.in_b").unwrap().state,
        ConnState::Old
    );
}

/// `t` writes `m.in_a` in the same step in which `m` consumes `m.in_b`: `m` must consume what
/// was NEW at the start of the step (`in_b`), and `in_a` must stay NEW after it.
#[test]
fn a_connection_written_in_a_step_is_not_consumed_in_that_step() {
    let mut b = Net::builder("same-step");
    b.add("s1", Source::new("one"));
    b.add("s2", Source::new("two"));
    b.add("t", Transform::new());
    b.add("m", Merge::<Any>::default());
    b.add("out", Sink::new());
    b.connect("s1.out_data", "t.in_data")
        .connect("s2.out_data", "m.in_b")
        .connect("t.out_data", "m.in_a")
        .connect("m.out_data", "out.in_data");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    cvm.step().unwrap(); // s1, s2
    assert_eq!(cvm.fireable(), ["t", "m"]);
    cvm.step().unwrap(); // t and m together
    assert_eq!(
        cvm.state_of("t.out_data -> m.in_a").unwrap().state,
        ConnState::New
    );
    assert_eq!(
        cvm.state_of("s2.out_data -> m.in_b").unwrap().state,
        ConnState::Old
    );
    let entry = cvm.history().entries().pop().unwrap();
    let m = cvm.net().op_id("m").unwrap();
    let m_firing = entry.firings.iter().find(|f| f.op == m).unwrap();
    assert_eq!(
        m_firing.consumed,
        [cvm.net().conn_id("s2.out_data -> m.in_b").unwrap()]
    );
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let got: Vec<_> = cvm.received("out").iter().map(|v| v.to_json()).collect();
    assert_eq!(got, ["two", "one"]);
}

/// src → fork(3) → [a: probe, bad: failing probe, c: probe] → sinks.
fn three_way(bad: Probe, a: Probe, c: Probe) -> Cvm {
    let mut b = Net::builder("three");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::new(3).unwrap());
    b.add("a", a);
    b.add("bad", bad);
    b.add("c", c);
    for (i, n) in ["a", "bad", "c"].iter().enumerate() {
        let l = (b'a' + i as u8) as char;
        b.add(format!("out_{n}"), Sink::new());
        b.connect(format!("fork.out_{l}"), format!("{n}.in_0"));
        b.connect(format!("{n}.out_0"), format!("out_{n}.in_data"));
    }
    b.connect("src.out_data", "fork.in_data");
    Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_firing_discards_the_whole_step() {
    let a = Probe::new(1, 1, Execution::Inline);
    let a_rollbacks = Arc::clone(&a.rollbacks);
    let c = Probe::new(1, 1, Execution::Blocking).sleep(10);
    let c_rollbacks = Arc::clone(&c.rollbacks);
    let bad = Probe::new(1, 1, Execution::Async).sleep(30).failing(1);
    let mut cvm = three_way(bad, a, c);
    cvm.step_async().await.unwrap();
    cvm.step_async().await.unwrap();
    let before = cvm.marking();
    let depth = cvm.depth();
    let recorded = cvm.history().recorded_firings();

    let end = cvm.run_async().await.unwrap();
    assert_eq!(
        end,
        EndState::Error {
            op: "bad".into(),
            error: "transient failure #1".into()
        }
    );
    assert_eq!(
        cvm.marking(),
        before,
        "the marking is as before the failed step"
    );
    assert_eq!(cvm.depth(), depth);
    assert_eq!(
        cvm.history().recorded_firings(),
        recorded,
        "nothing of the step recorded"
    );
    // the firings that succeeded were rolled back, and every state is as before
    assert_eq!(a_rollbacks.load(Ordering::SeqCst), 1);
    assert_eq!(c_rollbacks.load(Ordering::SeqCst), 1);
    for name in ["a", "bad", "c"] {
        let op = cvm
            .net()
            .operators()
            .iter()
            .find(|o| o.name == name)
            .unwrap();
        assert_eq!(
            op.downcast_ref::<Probe>().unwrap().state,
            0,
            "state of `{name}`"
        );
    }
    assert_eq!(cvm.fireable(), ["a", "bad", "c"]);
}

#[test]
fn the_error_names_the_first_failing_operator_in_declaration_order() {
    for _ in 0..3 {
        // `a` (declared first) fails late; `bad` fails at once.
        let a = Probe::new(1, 1, Execution::Async).sleep(60).failing(1);
        let bad = Probe::new(1, 1, Execution::Async).failing(1);
        let c = Probe::new(1, 1, Execution::Async);
        let mut cvm = three_way(bad, a, c);
        match cvm.run().unwrap() {
            EndState::Error { op, .. } => assert_eq!(op, "a"),
            other => panic!("expected ERROR, got {other:?}"),
        }
    }
}

#[test]
fn an_all_inline_step_stops_at_its_first_failure_in_declaration_order() {
    let a = Probe::new(1, 1, Execution::Inline);
    let a_rollbacks = Arc::clone(&a.rollbacks);
    let c_calls = Arc::new(AtomicUsize::new(0));
    let c = Probe::new(1, 1, Execution::Inline).counting(&c_calls);
    let bad = Probe::new(1, 1, Execution::Inline).failing(1);
    let mut cvm = three_way(bad, a, c);
    assert_eq!(
        cvm.run().unwrap(),
        EndState::Error {
            op: "bad".into(),
            error: "transient failure #1".into()
        }
    );
    assert_eq!(cvm.depth(), 2);
    assert_eq!(
        a_rollbacks.load(Ordering::SeqCst),
        1,
        "`a` ran and was rolled back"
    );
    assert_eq!(c_calls.load(Ordering::SeqCst), 0, "`c` was not needed");
}

#[test]
fn a_panic_in_an_async_operator_is_an_error() {
    let bad = Probe::new(1, 1, Execution::Async).panicking();
    let mut cvm = three_way(
        bad,
        Probe::new(1, 1, Execution::Inline),
        Probe::new(1, 1, Execution::Inline),
    );
    assert_eq!(
        cvm.run().unwrap(),
        EndState::Error {
            op: "bad".into(),
            error: "panicked: boom".into()
        }
    );
}

#[test]
fn a_panic_in_a_blocking_operator_is_an_error_and_the_operator_comes_back() {
    let bad = Probe::new(1, 1, Execution::Blocking).panicking();
    let mut cvm = three_way(
        bad,
        Probe::new(1, 1, Execution::Inline),
        Probe::new(1, 1, Execution::Inline),
    );
    assert_eq!(
        cvm.run().unwrap(),
        EndState::Error {
            op: "bad".into(),
            error: "panicked: boom".into()
        }
    );
    let bad = cvm
        .net()
        .operators()
        .iter()
        .find(|o| o.name == "bad")
        .unwrap();
    assert!(bad.downcast_ref::<Probe>().is_some());
}

#[test]
fn back_undoes_a_maximal_step_and_forward_replays_it_without_running() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut b = Net::builder("replay");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::new(3).unwrap());
    for i in 0..3 {
        b.add(
            format!("p{i}"),
            Probe::new(1, 1, Execution::Async).sleep(5).counting(&calls),
        );
        b.add(format!("out{i}"), Sink::new());
        let l = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{l}"), format!("p{i}.in_0"));
        b.connect(format!("p{i}.out_0"), format!("out{i}.in_data"));
    }
    b.connect("src.out_data", "fork.in_data");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    cvm.step().unwrap();
    cvm.step().unwrap();
    let before_step: Marking = cvm.marking();
    assert!(matches!(cvm.step().unwrap(), Step::Fired { ref ops, .. } if ops.len() == 3));
    let after_step = cvm.marking();
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    cvm.back().unwrap();
    assert_eq!(
        cvm.marking(),
        before_step,
        "back undoes all three firings at once"
    );
    assert_eq!(cvm.depth(), 2);
    for i in 0..3 {
        let op = cvm
            .net()
            .operators()
            .iter()
            .find(|o| o.name == format!("p{i}"))
            .unwrap();
        assert_eq!(op.downcast_ref::<Probe>().unwrap().state, 0);
    }

    match cvm.step().unwrap() {
        Step::Fired {
            ops,
            replayed,
            step,
        } => {
            assert!(replayed);
            assert_eq!(ops.len(), 3);
            assert_eq!(step, 3);
        }
        other => panic!("expected a replay, got {other:?}"),
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "replay does not run the operators"
    );
    assert_eq!(cvm.marking(), after_step, "replay is bit-identical");
    for i in 0..3 {
        let op = cvm
            .net()
            .operators()
            .iter()
            .find(|o| o.name == format!("p{i}"))
            .unwrap();
        assert_eq!(op.downcast_ref::<Probe>().unwrap().state, 1);
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let first_end = cvm.marking();

    // refire executes the step anew and keeps the old future as a branch
    cvm.rewind();
    cvm.step().unwrap();
    cvm.step().unwrap();
    assert!(matches!(
        cvm.refire().unwrap(),
        Step::Fired {
            replayed: false,
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    assert_eq!(cvm.branches().len(), 2);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let second_end = cvm.marking();
    assert_ne!(second_end, first_end, "new tokens");

    // checkout switches between the two futures, replaying maximal steps as units
    let branches = cvm.branches();
    let first = branches.iter().find(|b| !b.current).unwrap().id;
    let second = branches.iter().find(|b| b.current).unwrap().id;
    cvm.checkout(first).unwrap();
    assert_eq!(
        cvm.marking(),
        first_end,
        "the first future, token for token"
    );
    assert_eq!(cvm.depth(), 4); // src, fork, the probes, the sinks
    cvm.back().unwrap();
    cvm.back().unwrap(); // before the probes' step
    assert_eq!(cvm.marking(), before_step);
    assert!(
        matches!(cvm.step().unwrap(), Step::Fired { ref ops, replayed: true, step: 3 } if ops.len() == 3)
    );
    assert_eq!(cvm.marking(), after_step, "replayed after the checkout");
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.marking(), first_end);
    cvm.checkout(second).unwrap();
    assert_eq!(cvm.marking(), second_end);
    assert_eq!(calls.load(Ordering::SeqCst), 6, "switching runs nothing");
}

fn slow_chain(kind: Execution, ms: u64, settings: OpSettings, mode: Mode) -> Cvm {
    chain(Probe::new(1, 1, kind).sleep(ms), settings, mode)
}

/// src → slow → out, `slow` being `op` (its first input and output are `in_0`/`in_data` and
/// `out_0`/`out_data`).
fn chain(op: impl Operator, settings: OpSettings, mode: Mode) -> Cvm {
    let spec = op.spec();
    let (input, output) = (spec.inputs[0].name.clone(), spec.outputs[0].name.clone());
    let mut b = Net::builder("slow");
    b.add("src", Source::new("x"));
    b.add("slow", op).settings(settings);
    b.add("out", Sink::new());
    b.connect("src.out_data", format!("slow.{input}"))
        .connect(format!("slow.{output}"), "out.in_data");
    Cvm::builder(b.build().unwrap()).mode(mode).build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_ends_the_run_in_cancelled_with_the_marking_of_the_last_step() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut slow = Probe::new(1, 1, Execution::Async)
        .sleep(30_000)
        .counting(&calls);
    slow.dirty_before_wait = true;
    let mut cvm = chain(slow, OpSettings::NONE, Mode::Parallel);
    cvm.step_async().await.unwrap();
    let before = cvm.marking();
    // Cancel once the step has started `slow`'s firing: by the event stream, not by a timer.
    let token = cvm.cancel_token();
    let mut events = cvm.events();
    let canceller = tokio::spawn(async move {
        while let Some(e) = events.recv().await {
            if matches!(&e, Event::FiringStarted { op, .. } if op == "slow") {
                token.cancel();
                return true;
            }
        }
        false
    });
    assert_eq!(cvm.run_async().await.unwrap(), EndState::Cancelled);
    assert!(
        canceller.await.unwrap(),
        "cancelled on `slow`'s FiringStarted"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the async firing was dropped before its 30 s wait ended"
    );
    assert_eq!(cvm.marking(), before);
    assert_eq!(cvm.depth(), 1);
    assert!(
        !cvm.cancel_token().is_cancelled(),
        "the cancellation was consumed"
    );
    assert_eq!(cvm.fireable(), ["slow"]);
    let slow = cvm
        .net()
        .operators()
        .iter()
        .find(|o| o.name == "slow")
        .unwrap();
    assert_eq!(
        slow.downcast_ref::<Probe>().unwrap().state,
        0,
        "whatever the dropped firing changed is restored"
    );
}

#[test]
fn cancelling_a_sync_run_from_another_thread_waits_for_a_blocking_firing_then_discards_it() {
    let gate = probe::Gate::new();
    let held = probe::Held {
        gate: Arc::clone(&gate),
        state: 0,
    };
    let mut cvm = chain(held, OpSettings::NONE, Mode::Parallel);
    cvm.step().unwrap();
    let before = cvm.marking();
    let token = cvm.cancel_token();
    let mut events = cvm.events();
    let g = Arc::clone(&gate);
    // The canceller waits for the step to start `slow` and for its `run` to be under way,
    // cancels, and only then lets `run` return: the cancellation arrives while the blocking
    // firing is in flight, whatever the timing.
    let canceller = std::thread::spawn(move || {
        while let Some(e) = events.blocking_recv() {
            if matches!(&e, Event::FiringStarted { op, .. } if op == "slow") {
                break;
            }
        }
        let entered = g.wait_entered();
        token.cancel();
        g.release();
        entered
    });
    assert_eq!(cvm.run().unwrap(), EndState::Cancelled);
    assert_eq!(canceller.join().unwrap(), 1, "`run` was under way");
    assert_eq!(gate.entered(), 1);
    assert_eq!(cvm.marking(), before);
    assert_eq!(cvm.depth(), 1);
    let slow = cvm
        .net()
        .operators()
        .iter()
        .find(|o| o.name == "slow")
        .unwrap();
    assert_eq!(
        slow.downcast_ref::<probe::Held>()
            .expect("the operator is back in the net")
            .state,
        0,
        "state restored"
    );
    assert_eq!(cvm.fireable(), ["slow"]);
}

/// Cancels the run from inside its own firing (async, done at once): the cancellation arrives
/// while the step waits on that firing, whichever poll of the step sees it finish.
struct CancelsItsRun {
    token: cameleon::CancelToken,
}

impl Operator for CancelsItsRun {
    fn spec(&self) -> OpSpec {
        OpSpec::new("cancels", "Cancels", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        Execution::Async
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.token.cancel();
        cx.emit_at(0, DataString("done".into()));
        Ok(())
    }
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> cameleon::operator::OpFuture<'a> {
        Box::pin(async move { self.run(cx) })
    }
}

#[test]
fn a_cancellation_during_the_last_firing_of_a_step_discards_the_step() {
    for mode in [Mode::Parallel, Mode::Sequential] {
        let token = cameleon::CancelToken::new();
        let op = CancelsItsRun {
            token: token.clone(),
        };
        let mut b = Net::builder("self-cancel");
        b.add("src", Source::new("x"));
        b.add("slow", op);
        b.add("out", Sink::new());
        b.connect("src.out_data", "slow.in_data")
            .connect("slow.out_data", "out.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap())
            .mode(mode)
            .cancel_token(token)
            .build();
        cvm.step().unwrap();
        let before = cvm.marking();
        assert_eq!(cvm.run().unwrap(), EndState::Cancelled, "{mode:?}");
        assert_eq!(cvm.marking(), before, "{mode:?}: the step was discarded");
        assert_eq!(cvm.depth(), 1, "{mode:?}");
    }
}

#[test]
fn a_cancelled_token_stops_a_sequential_run_before_the_next_step() {
    let mut cvm = slow_chain(Execution::Inline, 0, OpSettings::NONE, Mode::Sequential);
    cvm.cancel_token().cancel();
    assert_eq!(cvm.run().unwrap(), EndState::Cancelled);
    assert_eq!(cvm.depth(), 0);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
}

#[test]
fn an_async_firing_past_its_timeout_fails_at_the_deadline() {
    for mode in [Mode::Parallel, Mode::Sequential] {
        let settings = OpSettings {
            timeout_ms: Some(50),
            retry: None,
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let slow = Probe::new(1, 1, Execution::Async)
            .sleep(30_000)
            .counting(&calls);
        let mut cvm = chain(slow, settings, mode);
        match cvm.run().unwrap() {
            EndState::Error { op, error } => {
                assert_eq!(op, "slow");
                // Cut short: a firing that returned late would say "ran for … ms, over its
                // timeout".
                assert!(error.contains("timed out after 50 ms"), "{error}");
            }
            other => panic!("expected ERROR, got {other:?} ({mode})"),
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "{mode}: dropped at the deadline, before its 30 s wait ended"
        );
        assert_eq!(cvm.depth(), 1);
    }
}

#[test]
fn a_blocking_firing_past_its_timeout_fails_when_it_returns() {
    let settings = OpSettings {
        timeout_ms: Some(20),
        retry: None,
    };
    let mut cvm = slow_chain(Execution::Blocking, 100, settings, Mode::Parallel);
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "slow");
            assert!(error.contains("over its timeout of 20 ms"), "{error}");
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
}

fn flaky(
    fail_first: usize,
    declared: OpSettings,
    instance: OpSettings,
    calls: &Arc<AtomicUsize>,
) -> Cvm {
    let mut p = Probe::new(1, 1, Execution::Async)
        .failing(fail_first)
        .counting(calls);
    p.declared = declared;
    let mut b = Net::builder("flaky");
    b.add("src", Source::new("x"));
    b.add("flaky", p).settings(instance);
    b.add("out", Sink::new());
    b.connect("src.out_data", "flaky.in_0")
        .connect("flaky.out_0", "out.in_data");
    Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build()
}

fn retry(max: u32, backoff_ms: u64) -> OpSettings {
    OpSettings {
        timeout_ms: None,
        retry: Some(Retry { max, backoff_ms }),
    }
}

#[test]
fn retries_absorb_transient_failures_with_backoff() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut cvm = flaky(2, OpSettings::NONE, retry(2, 20), &calls);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    cvm.on_event(move |e| sink.lock().unwrap().push(e.clone()));
    let t = Instant::now();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(
        t.elapsed() >= Duration::from_millis(60),
        "waits 20 then 40 ms"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let flaky = cvm
        .net()
        .operators()
        .iter()
        .find(|o| o.name == "flaky")
        .unwrap();
    assert_eq!(
        flaky.downcast_ref::<Probe>().unwrap().state,
        1,
        "one applied firing"
    );
    let retries: Vec<(u32, u64)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::FiringRetrying {
                attempt,
                backoff_ms,
                ..
            } => Some((*attempt, *backoff_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(1, 20), (2, 40)]);
    assert!(events.lock().unwrap().iter().any(|e| matches!(
        e,
        Event::FiringFinished {
            attempts: 3,
            error: None,
            ..
        }
    )));
}

#[test]
fn a_failure_counts_once_the_retries_are_used_up() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut cvm = flaky(2, OpSettings::NONE, retry(1, 0), &calls);
    assert_eq!(
        cvm.run().unwrap(),
        EndState::Error {
            op: "flaky".into(),
            error: "transient failure #2".into()
        }
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn instance_settings_override_the_declared_ones() {
    let calls = Arc::new(AtomicUsize::new(0));
    // declared: 5 retries; the instance says none
    let mut cvm = flaky(1, retry(5, 0), retry(0, 0), &calls);
    assert!(matches!(cvm.run().unwrap(), EndState::Error { .. }));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // declared retries apply when the instance sets nothing
    let calls = Arc::new(AtomicUsize::new(0));
    let mut cvm = flaky(1, retry(5, 0), OpSettings::NONE, &calls);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let node = &cvm.net().operators()[1];
    assert_eq!(node.effective_settings(), retry(5, 0));
}

#[test]
fn retries_apply_in_sequential_mode_too() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut p = Probe::new(1, 1, Execution::Inline)
        .failing(1)
        .counting(&calls);
    p.declared = retry(1, 0);
    let mut b = Net::builder("flaky");
    b.add("src", Source::new("x"));
    b.add("flaky", p);
    b.add("out", Sink::new());
    b.connect("src.out_data", "flaky.in_0")
        .connect("flaky.out_0", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(cvm.depth(), 3);
}

#[test]
fn a_zero_timeout_is_rejected_when_the_net_is_built() {
    let mut b = Net::builder("bad");
    b.add("src", Source::new("x"));
    b.add("slow", Delay::new(1)).timeout_ms(0);
    b.add("out", Sink::new());
    b.connect("src.out_data", "slow.in_data")
        .connect("slow.out_data", "out.in_data");
    let err = b.build().unwrap_err();
    assert_eq!(err.problems.len(), 1);
    assert_eq!(err.problems[0].kind, ProblemKind::BadOperator);
    assert!(
        err.problems[0].message.contains("`slow`"),
        "{}",
        err.problems[0].message
    );
}

#[test]
fn nets_differing_only_in_instance_settings_are_different() {
    let build = |t: Option<u64>| {
        let mut b = Net::builder("n");
        b.add("src", Source::new("x"));
        let o = b.add("wait", Delay::new(1));
        if let Some(t) = t {
            o.timeout_ms(t);
        }
        b.add("out", Sink::new());
        b.connect("src.out_data", "wait.in_data")
            .connect("wait.out_data", "out.in_data");
        b.build().unwrap()
    };
    assert_eq!(build(Some(5)), build(Some(5)));
    assert_ne!(build(Some(5)), build(None));
}

#[test]
fn blocking_operators_of_a_step_run_at_the_same_time() {
    // Each operator waits until all four are in flight: run one after the other, they fail.
    let meeting = probe::Meeting::new(4);
    let mut b = Net::builder("blocking");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::new(4).unwrap());
    for i in 0..4 {
        b.add(
            format!("p{i}"),
            probe::Rendezvous {
                meeting: Arc::clone(&meeting),
                kind: Execution::Blocking,
            },
        );
        b.add(format!("out{i}"), Sink::new());
        let l = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{l}"), format!("p{i}.in_data"));
        b.connect(format!("p{i}.out_data"), format!("out{i}.in_data"));
    }
    b.connect("src.out_data", "fork.in_data");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    cvm.step().unwrap();
    cvm.step().unwrap();
    let step = cvm.step().unwrap();
    assert!(
        matches!(&step, Step::Fired { ops, .. } if ops.len() == 4),
        "{step:?}"
    );
    assert_eq!(*meeting.arrived.lock().unwrap(), 4);
}

#[test]
fn async_operators_of_a_step_wait_together() {
    let meeting = probe::Meeting::new(3);
    let mut b = Net::builder("async");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::new(3).unwrap());
    for i in 0..3 {
        b.add(
            format!("p{i}"),
            probe::Rendezvous {
                meeting: Arc::clone(&meeting),
                kind: Execution::Async,
            },
        );
        b.add(format!("out{i}"), Sink::new());
        let l = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{l}"), format!("p{i}.in_data"));
        b.connect(format!("p{i}.out_data"), format!("out{i}.in_data"));
    }
    b.connect("src.out_data", "fork.in_data");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    for i in 0..3 {
        assert_eq!(cvm.received(&format!("out{i}"))[0].to_json(), "met");
    }
}

#[test]
fn the_loop_limit_names_the_first_operator_over_it_in_declaration_order() {
    let mut cvm = fan_out(1, Mode::Parallel);
    cvm.set_max_loop_iterations(0);
    assert_eq!(
        cvm.run().unwrap(),
        EndState::LoopLimit {
            op: "src".into(),
            limit: 0
        }
    );
}

/// src → split ─┬→ spin (a merge on a self-loop: fires every step)
///              └→ t → p → out
/// `p` is declared before `spin`: at step 4 both are enabled, `p` under the loop bound, `spin`
/// at it.
fn spin_beside_a_chain() -> Cvm {
    let mut b = Net::builder("spin");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::new(2).unwrap());
    b.add("t", Transform::new());
    b.add("p", Transform::new());
    b.add("spin", Merge::<Any>::default());
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "spin.in_a")
        .connect("spin.out_data", "spin.in_b")
        .connect("split.out_b", "t.in_data")
        .connect("t.out_data", "p.in_data")
        .connect("p.out_data", "out.in_data");
    Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .max_loop_iterations(1)
        .build()
}

/// docs/semantics.md §7: "if any operator of the step has reached `max_loop_iterations`, the
/// run stops in `LOOP_LIMIT` naming the first such operator" — also when it is not the first
/// operator of the step, and without firing the others.
#[test]
fn the_loop_limit_stops_a_maximal_step_whose_later_operator_is_at_its_bound() {
    let counts = |cvm: &Cvm| -> Vec<u32> {
        (0..cvm.net().operators().len())
            .map(|o| cvm.fire_count(cameleon::connection::OpId(o as u32)))
            .collect()
    };
    let limit = EndState::LoopLimit {
        op: "spin".into(),
        limit: 1,
    };
    for run in [false, true] {
        let mut cvm = spin_beside_a_chain();
        for _ in 0..3 {
            cvm.step().unwrap(); // src; split; spin and t
        }
        assert_eq!(cvm.fireable(), ["p", "spin"]);
        let (before, fired, recorded) = (
            cvm.marking(),
            counts(&cvm),
            cvm.history().recorded_firings(),
        );
        assert_eq!(fired, [1, 1, 1, 0, 1, 0]);
        let end = if run {
            cvm.run().unwrap()
        } else {
            match cvm.step().unwrap() {
                Step::Ended(end) => end,
                other => panic!("expected LOOP_LIMIT, got {other:?}"),
            }
        };
        assert_eq!(end, limit, "run: {run}");
        assert_eq!(cvm.depth(), 3, "run: {run}");
        assert!(
            cvm.marking() == before,
            "run: {run}: the marking is unchanged"
        );
        assert_eq!(counts(&cvm), fired, "run: {run}: `p` did not fire either");
        assert_eq!(cvm.history().recorded_firings(), recorded);
        // A higher bound lets the step go on, `p` and `spin` together.
        cvm.set_max_loop_iterations(2);
        match cvm.step().unwrap() {
            Step::Fired { ops, step: 4, .. } => assert_eq!(ops.len(), 2),
            other => panic!("expected step 4, got {other:?}"),
        }
    }
    // Replaying that step under the lower bound stops the same way.
    let mut cvm = spin_beside_a_chain();
    cvm.set_max_loop_iterations(2);
    for _ in 0..4 {
        cvm.step().unwrap();
    }
    cvm.back().unwrap();
    let (before, fired) = (cvm.marking(), counts(&cvm));
    cvm.set_max_loop_iterations(1);
    assert_eq!(cvm.step().unwrap(), Step::Ended(limit));
    assert!(cvm.marking() == before);
    assert_eq!(counts(&cvm), fired);
    assert_eq!(cvm.history().redo_len(), 1, "the recorded step waits");
}

#[test]
fn events_report_each_firing_and_each_committed_step() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let mut cvm = fan_out(5, Mode::Parallel);
    cvm.on_event(move |e| sink.lock().unwrap().push(e.clone()));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let events = events.lock().unwrap();
    let committed: Vec<Vec<String>> = events
        .iter()
        .filter_map(|e| match e {
            Event::StepCommitted {
                ops,
                replayed: false,
                ..
            } => Some(ops.clone()),
            _ => None,
        })
        .collect();
    let waits: Vec<String> = (0..8).map(|i| format!("wait_{i}")).collect();
    assert_eq!(
        committed,
        [
            vec!["src".to_string()],
            vec!["fork".into()],
            waits.clone(),
            vec!["join".into()],
            vec!["out".into()]
        ]
    );
    // the delays' step: started in declaration order, each finished once, then committed
    let step3: Vec<&Event> = events.iter().filter(|e| event_step(e) == Some(3)).collect();
    assert_eq!(
        step3[0],
        &Event::StepStarted {
            step: 3,
            ops: waits.clone()
        }
    );
    let started: Vec<&str> = step3
        .iter()
        .filter_map(|e| match e {
            Event::FiringStarted { op, .. } => Some(op.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, waits);
    let mut finished: Vec<&str> = step3
        .iter()
        .filter_map(|e| match e {
            Event::FiringFinished {
                op, error: None, ..
            } => Some(op.as_str()),
            _ => None,
        })
        .collect();
    finished.sort();
    assert_eq!(finished, waits);
    assert!(matches!(step3.last(), Some(Event::StepCommitted { .. })));
    assert_eq!(
        events.last(),
        Some(&Event::Ended {
            end: EndState::Completed
        })
    );
    assert_eq!(
        serde_json::to_value(events.last().unwrap()).unwrap(),
        serde_json::json!({"event": "ended", "end": "COMPLETED"})
    );
}

fn event_step(e: &Event) -> Option<u32> {
    match e {
        Event::StepStarted { step, .. }
        | Event::FiringStarted { step, .. }
        | Event::FiringRetrying { step, .. }
        | Event::FiringFinished { step, .. }
        | Event::Partial { step, .. }
        | Event::StepCommitted { step, .. }
        | Event::StepDiscarded { step, .. } => Some(*step),
        Event::Ended { .. } => None,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_event_channel_streams_sequential_runs_too() {
    let mut cvm = fan_out(1, Mode::Sequential);
    let mut rx = cvm.events();
    assert_eq!(cvm.run_async().await.unwrap(), EndState::Completed);
    let mut commits = 0;
    while let Ok(e) = rx.try_recv() {
        if matches!(e, Event::StepCommitted { .. }) {
            commits += 1;
        }
    }
    assert_eq!(commits, 12);
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_a_step_future_mid_way_leaves_the_engine_consistent() {
    let mut b = Net::builder("drop");
    b.add("src", Source::new("x"));
    b.add("fork", Fork::<Any>::new(2).unwrap());
    let mut slow_async = Probe::new(1, 1, Execution::Async).sleep(10_000);
    slow_async.dirty_before_wait = true;
    b.add("slow_async", slow_async);
    b.add(
        "slow_blocking",
        Probe::new(1, 1, Execution::Blocking).sleep(100),
    );
    b.add("o1", Sink::new());
    b.add("o2", Sink::new());
    b.connect("src.out_data", "fork.in_data")
        .connect("fork.out_a", "slow_async.in_0")
        .connect("fork.out_b", "slow_blocking.in_0")
        .connect("slow_async.out_0", "o1.in_data")
        .connect("slow_blocking.out_0", "o2.in_data");
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    cvm.step_async().await.unwrap();
    cvm.step_async().await.unwrap();
    let before = cvm.marking();
    let r = tokio::time::timeout(Duration::from_millis(30), cvm.step_async()).await;
    assert!(r.is_err(), "the step was still running");
    // Both operators are back in the net; the marking is as before the step.
    assert_eq!(cvm.marking(), before);
    for name in ["slow_async", "slow_blocking"] {
        let op = cvm
            .net()
            .operators()
            .iter()
            .find(|o| o.name == name)
            .unwrap();
        assert!(op.downcast_ref::<Probe>().is_some(), "`{name}` is back");
    }
    assert_eq!(cvm.fireable(), ["slow_async", "slow_blocking"]);
    let state = |cvm: &Cvm| {
        let op = cvm
            .net()
            .operators()
            .iter()
            .find(|o| o.name == "slow_async");
        op.unwrap().downcast_ref::<Probe>().unwrap().state
    };
    assert_eq!(state(&cvm), 100, "the dropped firing changed the state");
    cvm.back().unwrap();
    assert_eq!(state(&cvm), 0, "restored before the engine went on");
    assert_eq!(cvm.depth(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn step_async_in_sequential_mode_gives_the_sync_trace() {
    let make = || {
        let mut b = Net::builder("seq");
        b.add("src", Source::new("x"));
        b.add("fork", Fork::<Any>::new(2).unwrap());
        b.add("p", Probe::new(1, 1, Execution::Async).sleep(2));
        b.add("q", Probe::new(1, 1, Execution::Blocking).sleep(1));
        b.add("j", Join::<Any>::new(2).unwrap());
        b.add("out", Sink::new());
        b.connect("src.out_data", "fork.in_data")
            .connect("fork.out_a", "p.in_0")
            .connect("fork.out_b", "q.in_0")
            .connect("p.out_0", "j.in_a")
            .connect("q.out_0", "j.in_b")
            .connect("j.out_data", "out.in_data");
        Cvm::new(b.build().unwrap())
    };
    let mut a = make();
    let end_a = a.run_async().await.unwrap();
    let mut b = make();
    let end_b = tokio::task::spawn_blocking(move || {
        let end = b.run().unwrap();
        (b, end)
    })
    .await
    .unwrap();
    assert_eq!(trace(&a, &end_a), trace(&end_b.0, &end_b.1));
    assert_eq!(a.depth(), 6);
}

#[test]
fn delay_is_in_the_catalogue_as_a_behavioral_async_pass_through() {
    let cat = Catalogue::global();
    let e = cat.get("delay").expect("delay registered");
    assert_eq!(e.family, Family::Behavioral);
    assert_eq!(e.policy, Policy::Any);
    assert_eq!(e.params.len(), 1);
    assert_eq!(e.params[0].name, "ms");
    assert_eq!(
        e.params[0].default,
        Some(Delay::DEFAULT_MS.to_string().as_str())
    );
    let spec = (e.spec)();
    assert_eq!(spec.inputs[0].name, "in_data");
    assert_eq!(spec.outputs[0].name, "out_data");
    assert_eq!(spec.inputs[0].ty, spec.outputs[0].ty, "one type variable");

    let mut params = Params::new();
    params.insert("ms".into(), serde_json::json!(7));
    let op = cat.build("delay", &params, &Default::default()).unwrap();
    assert_eq!(op.params(), params);
    assert_eq!(op.execution(), Execution::Async);
    let defaulted = cat
        .build("delay", &Params::new(), &Default::default())
        .unwrap();
    assert_eq!(
        defaulted.params()["ms"],
        serde_json::json!(Delay::DEFAULT_MS)
    );
}

#[test]
fn delay_keeps_the_type_of_what_it_delays() {
    use cameleon::ops::Format;
    // DataString through a delay into format's DataString input: valid.
    let mut b = Net::builder("typed");
    b.add("a", Source::new("x"));
    b.add("b", Source::new("y"));
    b.add("wait", Delay::new(1));
    b.add("fmt", Format::default());
    b.add("out", Sink::new());
    b.connect("a.out_data", "wait.in_data")
        .connect("wait.out_data", "fmt.in_main")
        .connect("b.out_data", "fmt.in_meta")
        .connect("fmt.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), "x y");
    // DataJSON through a delay into a DataString input: rejected.
    let mut b = Net::builder("mistyped");
    b.add("a", cameleon::ops::Const::new(serde_json::json!(1)));
    b.add("b", Source::new("y"));
    b.add("wait", Delay::new(1));
    b.add("fmt", Format::default());
    b.add("out", Sink::new());
    b.connect("a.out_data", "wait.in_data")
        .connect("wait.out_data", "fmt.in_main")
        .connect("b.out_data", "fmt.in_meta")
        .connect("fmt.out_data", "out.in_data");
    let err = b.build().unwrap_err();
    assert_eq!(err.problems[0].kind, ProblemKind::TypeMismatch);
}

#[test]
fn the_engine_and_its_step_futures_can_move_between_threads() {
    fn is_send<T: Send>(_: &T) {}
    let mut cvm = fan_out(1, Mode::Parallel);
    is_send(&cvm);
    is_send(&cvm.step_async());
    is_send(&cvm.run_async());
}

// ---------------------------------------------------------------------------------------------
// `.cm`: mode, per-instance settings, the fan-out example

const FLAKY_CM: &str = "\
cameleon: 1
name: settings
config:
  mode: parallel
operators:
  - id: src
    type: source
    params:
      value: hi
  - id: wait
    type: delay
    params:
      ms: 500
    timeout_ms: 50
    retry: {max: 1, backoff_ms: 10}
  - id: out
    type: sink
connections:
  - from: src.out_data
    to: wait.in_data
  - from: wait.out_data
    to: out.in_data
";

#[test]
fn cm_instance_settings_load_apply_and_write_back() {
    let net = Net::from_cm(FLAKY_CM).unwrap();
    assert_eq!(net.config().mode, Mode::Parallel);
    let wait = &net.operators()[1];
    assert_eq!(
        wait.settings,
        OpSettings {
            timeout_ms: Some(50),
            retry: Some(Retry {
                max: 1,
                backoff_ms: 10
            })
        }
    );
    assert_eq!(net.to_cm(), FLAKY_CM, "canonical text round-trips");
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let mut cvm = Cvm::builder(net)
        .on_event(move |e| sink.lock().unwrap().push(e.clone()))
        .build();
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "wait");
            // Cut short at 50 ms (an attempt that ran its 500 ms would report "ran for … ms,
            // over its timeout").
            assert!(error.contains("timed out after 50 ms"), "{error}");
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    let retried = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::FiringRetrying { .. }))
        .count();
    assert_eq!(retried, 1);
}

#[test]
fn a_zero_timeout_in_cm_is_reported_at_the_key() {
    let text = FLAKY_CM.replace("timeout_ms: 50", "timeout_ms: 0");
    let e = Net::from_cm(&text).unwrap_err().to_string();
    assert!(e.starts_with("<input>:14:17:"), "{e}"); // the value of `timeout_ms`
    assert!(e.contains("`wait` has `timeout_ms: 0`"), "{e}");
}

#[test]
fn an_unknown_retry_key_in_cm_is_refused() {
    let text = FLAKY_CM.replace("backoff_ms: 10", "backof_ms: 10");
    let e = Net::from_cm(&text).unwrap_err().to_string();
    assert!(e.contains("unknown key `backof_ms`"), "{e}");
}

/// The runtime's clock is paused: it jumps to the next timer when every task waits, so the time
/// a run takes on it is exact — 200 ms for 8 delays of 200 ms waited together, 1600 ms one
/// after the other — and owes nothing to the machine's speed.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_fan_out_example_runs_its_delays_in_one_step() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/fan_out_delays.cm");
    let net = Net::from_cm_file(path).unwrap();
    assert_eq!(net.config().mode, Mode::Parallel);
    let mut cvm = Cvm::new(net);
    let t = tokio::time::Instant::now();
    assert_eq!(cvm.run_async().await.unwrap(), EndState::Completed);
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_millis(400),
        "8 × 200 ms waited together, not one after the other: {waited:?} of paused-clock time"
    );
    assert_eq!(cvm.depth(), 5);
    assert_eq!(cvm.history().entries()[2].firings.len(), 8);
    assert_eq!(cvm.received("out")[0].to_json(), "hello");
}

/// One firing routine in every mode: the `FiringFinished` event of a plain sequential firing
/// reports its measured time and its attempts, as a parallel one does.
#[test]
fn a_firing_reports_its_measured_time_and_attempts_in_both_modes() {
    for mode in [Mode::Sequential, Mode::Parallel] {
        let mut b = Net::builder("timed");
        b.add("src", Source::new("x"));
        b.add("slow", Probe::new(1, 1, Execution::Blocking).sleep(30));
        b.add("out", Sink::new());
        b.connect("src.out_data", "slow.in_0")
            .connect("slow.out_0", "out.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        cvm.on_event(move |e| sink.lock().unwrap().push(e.clone()));
        assert_eq!(cvm.run().unwrap(), EndState::Completed);
        let finished: Vec<(u32, u64)> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::FiringFinished {
                    op,
                    attempts,
                    elapsed_ms,
                    ..
                } if op == "slow" => Some((*attempts, *elapsed_ms)),
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 1, "{mode:?}: one firing of `slow`");
        let (attempts, elapsed_ms) = finished[0];
        assert_eq!(attempts, 1, "{mode:?}");
        assert!(
            elapsed_ms >= 30,
            "{mode:?}: a 30 ms firing reports {elapsed_ms} ms"
        );
    }
}

/// An operator that bumps its internal state, then fails, and catches its failures on
/// `error: DataError`.
struct Clumsy {
    state: u64,
}

impl Operator for Clumsy {
    fn spec(&self) -> OpSpec {
        OpSpec::new("clumsy", "Clumsy", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
            .output("error", TypeRef::of::<DataError>())
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.state += 1;
        Err(OpError::new("clumsy"))
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.state))
    }
    fn restore_state(&mut self, s: &OpState) {
        if let Some(v) = s.get::<u64>() {
            self.state = *v;
        }
    }
}

/// docs/semantics.md §4: a failed firing leaves nothing behind, even when the failure is caught
/// on `error` — the same in both modes, with and without retries.
#[test]
fn a_caught_failure_leaves_the_operators_state_as_before_in_every_mode() {
    for (mode, settings) in [
        (Mode::Sequential, OpSettings::NONE),
        (Mode::Parallel, OpSettings::NONE),
        (Mode::Sequential, retry(1, 0)),
        (Mode::Parallel, retry(1, 0)),
    ] {
        let mut b = Net::builder("caught");
        b.add("src", Source::new("x"));
        b.add("clumsy", Clumsy { state: 7 }).settings(settings);
        b.add("errors", Sink::new());
        b.connect("src.out_data", "clumsy.in_data")
            .connect("clumsy.error", "errors.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode:?}");
        assert_eq!(cvm.received("errors").len(), 1, "{mode:?}");
        let clumsy = cvm.net().operators()[1].downcast_ref::<Clumsy>().unwrap();
        assert_eq!(clumsy.state, 7, "{mode:?} {settings:?}: state restored");
    }
}

/// An async operator that waits `ms` of the runtime's clock and counts how often its firing is
/// polled.
struct Polled {
    ms: u64,
    polls: Arc<AtomicUsize>,
}

impl Operator for Polled {
    fn spec(&self) -> OpSpec {
        OpSpec::new("polled", "Polled", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        Execution::Async
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataString("woke".into()));
        Ok(())
    }
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> cameleon::operator::OpFuture<'a> {
        let polls = Arc::clone(&self.polls);
        let mut sleep = Box::pin(tokio::time::sleep(Duration::from_millis(self.ms)));
        Box::pin(async move {
            std::future::poll_fn(|c| {
                polls.fetch_add(1, Ordering::Relaxed);
                sleep.as_mut().poll(c)
            })
            .await;
            self.run(cx)
        })
    }
}

/// A wide step whose firings finish one at a time: each is polled when it starts and when its
/// own wait ends — not each time another firing of the step is woken.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_firing_of_a_wide_step_is_polled_only_when_it_is_woken() {
    const N: u64 = 24;
    let polls = Arc::new(AtomicUsize::new(0));
    let mut b = Net::builder("wide");
    for i in 0..N {
        b.add(format!("src_{i}"), Source::new("x"));
        b.add(
            format!("wait_{i}"),
            Polled {
                ms: i + 1,
                polls: Arc::clone(&polls),
            },
        );
        b.add(format!("out_{i}"), Sink::new());
        b.connect(format!("src_{i}.out_data"), format!("wait_{i}.in_data"))
            .connect(format!("wait_{i}.out_data"), format!("out_{i}.in_data"));
    }
    let mut cvm = Cvm::builder(b.build().unwrap())
        .mode(Mode::Parallel)
        .build();
    assert_eq!(cvm.run_async().await.unwrap(), EndState::Completed);
    for i in 0..N {
        assert_eq!(cvm.received(&format!("out_{i}")).len(), 1);
    }
    // Twice each: started, then woken by its own timer (every wake polling every firing left
    // would be N + N (N + 1) / 2).
    assert_eq!(polls.load(Ordering::Relaxed), 2 * N as usize);
}
