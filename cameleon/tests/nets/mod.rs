//! Nets shared by the verifier's tests: the workflow control-flow patterns (WCP) as Caméléon
//! nets, known-bad nets, and the parallel-split family of the benchmark.
#![allow(dead_code)] // each test binary uses a different subset of these nets

use cameleon::ops::{
    Accumulator, Const, Counter, Fork, Gate, Guard, Join, Merge, Predicate, Sink, Source, Test,
    Transform,
};
use cameleon::{Net, NetBuilder};
use serde_json::json;

fn test(j: serde_json::Value) -> Test {
    Test::parse(&j).expect("a valid test expression")
}

fn build(b: NetBuilder) -> Net {
    b.build().expect("a valid net")
}

/// An exclusive choice on `src`'s value: `split` copies it to the gate's data input and to a
/// predicate deciding the branch (`choose.out_true`, `choose.out_false`).
fn choice(b: &mut NetBuilder) {
    b.add("src", Source::new("x"));
    b.add("split", Fork::default());
    b.add("test", Predicate::new(test(json!({"eq": "x"}))));
    b.add("choose", Gate);
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "choose.in_data")
        .connect("split.out_b", "test.in_data")
        .connect("test.out_data", "choose.in_condition");
}

/// WCP-1 sequence: src → a → b → out.
pub fn wcp1_sequence() -> Net {
    let mut b = Net::builder("wcp-1-sequence");
    b.add("src", Source::new("x"));
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "a.in_data")
        .connect("a.out_data", "b.in_data")
        .connect("b.out_data", "out.in_data");
    build(b)
}

/// WCP-2 parallel split: src → split → (a → out_a) ∥ (b → out_b).
pub fn wcp2_parallel_split() -> Net {
    let mut b = Net::builder("wcp-2-parallel-split");
    b.add("src", Source::new("x"));
    b.add("split", Fork::default());
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("out_a", Sink::new());
    b.add("out_b", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "a.in_data")
        .connect("split.out_b", "b.in_data")
        .connect("a.out_data", "out_a.in_data")
        .connect("b.out_data", "out_b.in_data");
    build(b)
}

/// WCP-3 synchronization: src → split → a ∥ b → both (join) → out.
pub fn wcp3_synchronization() -> Net {
    let mut b = Net::builder("wcp-3-synchronization");
    b.add("src", Source::new("x"));
    b.add("split", Fork::default());
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("both", Join::default());
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "a.in_data")
        .connect("split.out_b", "b.in_data")
        .connect("a.out_data", "both.in_a")
        .connect("b.out_data", "both.in_b")
        .connect("both.out_data", "out.in_data");
    build(b)
}

/// WCP-4 exclusive choice: a gate sends `src` to `a → out_a` or to `b → out_b`.
pub fn wcp4_exclusive_choice() -> Net {
    let mut b = Net::builder("wcp-4-exclusive-choice");
    choice(&mut b);
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("out_a", Sink::new());
    b.add("out_b", Sink::new());
    b.connect("choose.out_true", "a.in_data")
        .connect("choose.out_false", "b.in_data")
        .connect("a.out_data", "out_a.in_data")
        .connect("b.out_data", "out_b.in_data");
    build(b)
}

/// WCP-5 simple merge: the two branches of an exclusive choice meet in a merge.
pub fn wcp5_simple_merge() -> Net {
    let mut b = Net::builder("wcp-5-simple-merge");
    choice(&mut b);
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("either", Merge::default());
    b.add("out", Sink::new());
    b.connect("choose.out_true", "a.in_data")
        .connect("choose.out_false", "b.in_data")
        .connect("a.out_data", "either.in_a")
        .connect("b.out_data", "either.in_b")
        .connect("either.out_data", "out.in_data");
    build(b)
}

/// WCP-10 arbitrary cycles: two overlapping loops with two entry points each
/// (`enter_a` is entered from `src` and from `again_a`, `enter_b` from `step_a` and `again_b`).
pub fn wcp10_arbitrary_cycles() -> Net {
    let mut b = Net::builder("wcp-10-arbitrary-cycles");
    b.add("src", Const::new(json!(0)));
    b.add("enter_a", Merge::default());
    b.add("step_a", Counter::new());
    b.add("enter_b", Merge::default());
    b.add("step_b", Counter::new());
    b.add("again_a", Guard::new(test(json!({"lt": 3}))));
    b.add("again_b", Guard::new(test(json!({"lt": 6}))));
    b.add("out", Sink::new());
    b.connect("src.out_data", "enter_a.in_a")
        .connect("enter_a.out_data", "step_a.in_data")
        .connect("step_a.out_data", "enter_b.in_a")
        .connect("enter_b.out_data", "step_b.in_data")
        .connect("step_b.out_data", "again_a.in_data")
        .connect("again_a.out_continue", "enter_a.in_b")
        .connect("again_a.out_exit", "again_b.in_data")
        .connect("again_b.out_continue", "enter_b.in_b")
        .connect("again_b.out_exit", "out.in_data");
    build(b)
}

/// WCP-11 implicit termination: a parallel branch and a choice whose `false` branch goes
/// nowhere; the run ends when nothing is left to do, with no single end operator.
pub fn wcp11_implicit_termination() -> Net {
    let mut b = Net::builder("wcp-11-implicit-termination");
    b.add("src", Source::new("x"));
    b.add("split", Fork::new(3).expect("arity 3"));
    b.add("a", Transform::new());
    b.add("out_a", Sink::new());
    b.add("test", Predicate::new(test(json!({"eq": "x"}))));
    b.add("choose", Gate);
    b.add("b", Transform::new());
    b.add("out_b", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "a.in_data")
        .connect("a.out_data", "out_a.in_data")
        .connect("split.out_b", "choose.in_data")
        .connect("split.out_c", "test.in_data")
        .connect("test.out_data", "choose.in_condition")
        .connect("choose.out_true", "b.in_data")
        .connect("b.out_data", "out_b.in_data");
    build(b)
}

/// WCP-21 structured loop: 0 → loop (merge) → inc → check (guard) → back to loop, or out.
pub fn wcp21_structured_loop() -> Net {
    let mut b = Net::builder("wcp-21-structured-loop");
    b.add("zero", Const::new(json!(0)));
    b.add("loop", Merge::default());
    b.add("inc", Counter::new());
    b.add("check", Guard::new(test(json!({"lt": 3}))));
    b.add("out", Sink::new());
    b.connect("zero.out_data", "loop.in_a")
        .connect("loop.out_data", "inc.in_data")
        .connect("inc.out_data", "check.in_data")
        .connect("check.out_continue", "loop.in_b")
        .connect("check.out_exit", "out.in_data");
    build(b)
}

/// Every WCP net, by file stem.
pub fn wcp_nets() -> Vec<(&'static str, Net)> {
    vec![
        ("wcp01-sequence", wcp1_sequence()),
        ("wcp02-parallel-split", wcp2_parallel_split()),
        ("wcp03-synchronization", wcp3_synchronization()),
        ("wcp04-exclusive-choice", wcp4_exclusive_choice()),
        ("wcp05-simple-merge", wcp5_simple_merge()),
        ("wcp10-arbitrary-cycles", wcp10_arbitrary_cycles()),
        ("wcp11-implicit-termination", wcp11_implicit_termination()),
        ("wcp21-structured-loop", wcp21_structured_loop()),
    ]
}

/// Known bad: an exclusive choice closed by an AND-join. Whichever branch is taken, the join
/// waits forever for the other: DEADLOCK, and `both`, `out` never fire.
pub fn bad_xor_split_and_join() -> Net {
    let mut b = Net::builder("bad-xor-split-and-join");
    choice(&mut b);
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("both", Join::default());
    b.add("out", Sink::new());
    b.connect("choose.out_true", "a.in_data")
        .connect("choose.out_false", "b.in_data")
        .connect("a.out_data", "both.in_a")
        .connect("b.out_data", "both.in_b")
        .connect("both.out_data", "out.in_data");
    build(b)
}

/// Known bad: the `false` branch of a choice enters a loop with no exit — a livelock trap.
pub fn bad_loop_without_exit() -> Net {
    let mut b = Net::builder("bad-loop-without-exit");
    choice(&mut b);
    b.add("out", Sink::new());
    b.add("spin", Merge::default());
    b.add("body", Transform::new());
    b.connect("choose.out_true", "out.in_data")
        .connect("choose.out_false", "spin.in_a")
        .connect("spin.out_data", "body.in_data")
        .connect("body.out_data", "spin.in_b");
    build(b)
}

/// Known bad: an accumulator waiting for a `done` signal nobody sends (`n: 0`, `in_done`
/// unconnected) never emits, so `out` is dead — though every run completes.
pub fn bad_accumulator_never_done() -> Net {
    let mut b = Net::builder("bad-accumulator-never-done");
    b.add("src", Source::new("x"));
    b.add("collect", Accumulator::new(0));
    b.add("out", Sink::new());
    b.connect("src.out_data", "collect.in_data")
        .connect("collect.out_data", "out.in_data");
    build(b)
}

/// Parallel split of `n` branches of 3 transforms each, joined again: the benchmark family.
pub fn parallel_split(n: usize) -> Net {
    let mut b = Net::builder(format!("parallel-split-{n}"));
    b.add("src", Source::new("x"));
    b.add("split", Fork::new(n).expect("arity 2..=26"));
    b.add("sync", Join::new(n).expect("arity 2..=26"));
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data");
    b.connect("sync.out_data", "out.in_data");
    for i in 0..n {
        let letter = (b'a' + i as u8) as char;
        for s in 0..3 {
            b.add(format!("t{i}_{s}"), Transform::new());
        }
        b.connect(format!("split.out_{letter}"), format!("t{i}_0.in_data"));
        b.connect(format!("t{i}_0.out_data"), format!("t{i}_1.in_data"));
        b.connect(format!("t{i}_1.out_data"), format!("t{i}_2.in_data"));
        b.connect(format!("t{i}_2.out_data"), format!("sync.in_{letter}"));
    }
    build(b)
}
