//! Nets shared by the verifier's tests: the workflow control-flow patterns (WCP) as Caméléon
//! nets, known-bad nets, and the parallel-split family of the benchmark.
#![allow(dead_code)] // each test binary uses a different subset of these nets

use cameleon::ops::{
    Accumulator, Barrier, Cancel, Const, Counter, Fork, Gate, Guard, Join, Merge, Milestone, Mutex,
    Predicate, Sink, Source, Terminate, Test, Transform, Trigger,
};
use cameleon::types::Any;
use cameleon::{Net, NetBuilder};
use proptest::prelude::*;
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
    b.add("split", Fork::<Any>::default());
    b.add("test", Predicate::new(test(json!({"eq": "x"}))));
    b.add("choose", Gate::<Any>::new());
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
    b.add("split", Fork::<Any>::default());
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
    b.add("split", Fork::<Any>::default());
    b.add("a", Transform::new());
    b.add("b", Transform::new());
    b.add("both", Join::<Any>::default());
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
    b.add("either", Merge::<Any>::default());
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
    b.add("enter_a", Merge::<Any>::default());
    b.add("step_a", Counter::new());
    b.add("enter_b", Merge::<Any>::default());
    b.add("step_b", Counter::new());
    b.add("again_a", Guard::<Any>::new(test(json!({"lt": 3}))));
    b.add("again_b", Guard::<Any>::new(test(json!({"lt": 6}))));
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
    b.add("split", Fork::<Any>::new(3).expect("arity 3"));
    b.add("a", Transform::new());
    b.add("out_a", Sink::new());
    b.add("test", Predicate::new(test(json!({"eq": "x"}))));
    b.add("choose", Gate::<Any>::new());
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
    b.add("loop", Merge::<Any>::default());
    b.add("inc", Counter::new());
    b.add("check", Guard::<Any>::new(test(json!({"lt": 3}))));
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
    b.add("both", Join::<Any>::default());
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
    b.add("spin", Merge::<Any>::default());
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
    b.add("split", Fork::<Any>::new(n).expect("arity 2..=26"));
    b.add("sync", Join::<Any>::new(n).expect("arity 2..=26"));
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

// ---------------------------------------------------------------------------------------------
// Random nets

/// Operator kinds of random nets. Data flows as `DataString` except the predicate's `DataBool`
/// (only into gate conditions) and the accumulator's `DataJSON` (only into `Any` inputs).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Transform,
    Fork,
    Join,
    Merge,
    Barrier,
    Gate,
    Guard,
    Sink,
    Accumulator(usize),
    /// `cancel` with a region picked by the seed among the plain operators of the net.
    Cancel(usize),
    Terminate,
    /// A `mutex` of two requests.
    Mutex,
    Milestone,
    Trigger,
    /// A partial join (`arity`, `quorum`), cancelling a region picked by the seed if any.
    PartialJoin(usize, usize, Option<usize>),
}

impl Kind {
    /// Whether it is one of the workflow patterns' operators ([`pattern_kind`]).
    pub fn is_pattern(self) -> bool {
        matches!(
            self,
            Kind::Cancel(_)
                | Kind::Terminate
                | Kind::Mutex
                | Kind::Milestone
                | Kind::Trigger
                | Kind::PartialJoin(..)
        )
    }

    /// Whether a cancellation region may hold it (it keeps no control state).
    fn plain(self) -> bool {
        matches!(
            self,
            Kind::Transform | Kind::Fork | Kind::Join | Kind::Merge | Kind::Barrier | Kind::Sink
        )
    }
}

pub fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Transform),
        Just(Kind::Fork),
        Just(Kind::Join),
        Just(Kind::Merge),
        Just(Kind::Barrier),
        Just(Kind::Gate),
        Just(Kind::Guard),
        Just(Kind::Sink),
        (0usize..3).prop_map(Kind::Accumulator),
    ]
}

/// [`kind`], and the operators of the workflow patterns (docs/semantics.md §10.4–§10.8):
/// cancellation regions, termination, mutexes, milestones, transient triggers, partial joins
/// (discriminators), cancelling or not.
pub fn pattern_kind() -> impl Strategy<Value = Kind> {
    pattern_kinds(true)
}

/// [`pattern_kind`] without `terminate`, whose region is the whole net: for components meant
/// to be independent of each other (cancellation regions stay inside their component).
pub fn local_pattern_kind() -> impl Strategy<Value = Kind> {
    pattern_kinds(false)
}

fn pattern_kinds(terminate: bool) -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => kind(),
        1 => (0usize..64).prop_map(Kind::Cancel),
        1 => Just(if terminate { Kind::Terminate } else { Kind::Sink }),
        1 => Just(Kind::Mutex),
        1 => Just(Kind::Milestone),
        1 => Just(Kind::Trigger),
        1 => (2usize..=3, 1usize..=2, proptest::option::of(0usize..64))
            .prop_map(|(a, q, c)| Kind::PartialJoin(a, q.min(a - 1), c)),
    ]
}

#[derive(Clone, Copy, PartialEq)]
pub enum Class {
    Str,
    Bool,
    Json,
}

/// An input port and the classes it accepts.
type PortClass = (&'static str, &'static [Class]);

/// Builds a random valid net: `sources` string sources, the operators `kinds`, each input fed
/// by an output of a compatible class chosen by `picks`; a source nobody reads feeds a sink.
pub fn random_net(sources: usize, kinds: &[Kind], picks: &[usize]) -> Net {
    let mut b = Net::builder("random");
    add_random(&mut b, "", sources, kinds, picks);
    b.build().expect("random nets are valid by construction")
}

/// One random net per part, side by side (names prefixed `p0_`, `p1_`, …): independent
/// components running in parallel, the case partial-order reduction is for.
pub fn random_parallel_net(parts: &[(usize, Vec<Kind>, Vec<usize>)]) -> Net {
    let mut b = Net::builder("random-parallel");
    for (i, (sources, kinds, picks)) in parts.iter().enumerate() {
        add_random(&mut b, &format!("p{i}_"), *sources, kinds, picks);
    }
    b.build().expect("random nets are valid by construction")
}

/// A cancellation region for operator `i`: one or two plain operators of the net picked by
/// `seed`, or `i` itself when there is none.
fn region(prefix: &str, kinds: &[Kind], i: usize, seed: usize) -> Vec<String> {
    let plain: Vec<usize> = (0..kinds.len())
        .filter(|&j| j != i && kinds[j].plain())
        .collect();
    if plain.is_empty() {
        return vec![format!("{prefix}o{i}")];
    }
    let mut r = vec![plain[seed % plain.len()]];
    let second = plain[seed / 7 % plain.len()];
    if seed % 2 == 1 && second != r[0] {
        r.push(second);
    }
    r.into_iter().map(|j| format!("{prefix}o{j}")).collect()
}

/// Adds the operators and connections of [`random_net`] to `b`, names prefixed by `prefix`.
fn add_random(b: &mut NetBuilder, prefix: &str, sources: usize, kinds: &[Kind], picks: &[usize]) {
    // (instance.port, class) of every output; inputs as (instance.port, accepts).
    let mut outputs: Vec<(String, Class)> = Vec::new();
    let mut inputs: Vec<(String, &'static [Class], usize)> = Vec::new();
    const ANY: &[Class] = &[Class::Str, Class::Bool, Class::Json];
    const STR: &[Class] = &[Class::Str];
    const BOOL: &[Class] = &[Class::Bool];
    for s in 0..sources {
        b.add(format!("{prefix}s{s}"), Source::new("x"));
        outputs.push((format!("{prefix}s{s}.out_data"), Class::Str));
    }
    let test = || Test::parse(&json!({"eq": "x"})).unwrap();
    for (i, k) in kinds.iter().enumerate() {
        let n = format!("{prefix}o{i}");
        let (ins, outs): (Vec<PortClass>, Vec<(&str, Class)>) = match k {
            Kind::Transform => {
                b.add(&n, Transform::new());
                (vec![("in_data", ANY)], vec![("out_data", Class::Str)])
            }
            Kind::Fork => {
                b.add(&n, Fork::<Any>::default());
                (
                    vec![("in_data", STR)],
                    vec![("out_a", Class::Str), ("out_b", Class::Str)],
                )
            }
            Kind::Join => {
                b.add(&n, Join::<Any>::default());
                (
                    vec![("in_a", STR), ("in_b", STR)],
                    vec![("out_data", Class::Str)],
                )
            }
            Kind::Merge => {
                b.add(&n, Merge::<Any>::default());
                (
                    vec![("in_a", STR), ("in_b", STR)],
                    vec![("out_data", Class::Str)],
                )
            }
            Kind::Barrier => {
                b.add(&n, Barrier::<Any, Any>::default());
                (
                    vec![("in_a", STR), ("in_b", STR)],
                    vec![("out_a", Class::Str), ("out_b", Class::Str)],
                )
            }
            Kind::Gate => {
                b.add(&n, Gate::<Any>::new());
                let p = format!("{n}_test");
                b.add(&p, Predicate::new(test()));
                inputs.push((format!("{p}.in_data"), ANY, outputs.len()));
                outputs.push((format!("{p}.out_data"), Class::Bool));
                (
                    vec![("in_data", STR), ("in_condition", BOOL)],
                    vec![("out_true", Class::Str), ("out_false", Class::Str)],
                )
            }
            Kind::Guard => {
                b.add(&n, Guard::<Any>::new(test()));
                (
                    vec![("in_data", STR)],
                    vec![("out_continue", Class::Str), ("out_exit", Class::Str)],
                )
            }
            Kind::Sink => {
                b.add(&n, Sink::new());
                (vec![("in_data", ANY)], vec![])
            }
            Kind::Accumulator(size) => {
                b.add(&n, Accumulator::new(*size));
                (vec![("in_data", ANY)], vec![("out_data", Class::Json)])
            }
            Kind::Cancel(seed) => {
                b.add(&n, Cancel::<Any>::new(region(prefix, kinds, i, *seed)));
                (vec![("in_data", STR)], vec![("out_data", Class::Str)])
            }
            Kind::Terminate => {
                b.add(&n, Terminate::<Any>::new());
                (vec![("in_data", ANY)], vec![])
            }
            Kind::Mutex => {
                b.add(&n, Mutex::<Any>::new(2).unwrap());
                (
                    vec![("in_done", ANY), ("in_a", STR), ("in_b", STR)],
                    vec![("out_a", Class::Str), ("out_b", Class::Str)],
                )
            }
            Kind::Milestone => {
                b.add(&n, Milestone::<Any, Any>::new());
                (
                    vec![("in_data", STR), ("in_reached", STR), ("in_expire", ANY)],
                    vec![
                        ("out_data", Class::Str),
                        ("out_passed", Class::Str),
                        ("out_late", Class::Str),
                    ],
                )
            }
            Kind::Trigger => {
                b.add(&n, Trigger::<Any, Any>::new());
                (
                    vec![("in_data", STR), ("in_trigger", STR)],
                    vec![("out_data", Class::Str), ("out_lost", Class::Str)],
                )
            }
            Kind::PartialJoin(arity, quorum, cancel) => {
                let mut j = Join::<Any>::partial(*arity, *quorum).unwrap();
                if let Some(seed) = cancel {
                    j = j.cancelling(region(prefix, kinds, i, *seed));
                }
                b.add(&n, j);
                let ins = ["in_a", "in_b", "in_c"][..*arity]
                    .iter()
                    .map(|p| (*p, STR))
                    .collect();
                (ins, vec![("out_data", Class::Str)])
            }
        };
        let before = outputs.len();
        inputs.extend(
            ins.into_iter()
                .map(|(p, c)| (format!("{n}.{p}"), c, before)),
        );
        outputs.extend(outs.into_iter().map(|(p, c)| (format!("{n}.{p}"), c)));
    }
    let mut used = vec![false; outputs.len()];
    for (j, (input, accepts, before)) in inputs.iter().enumerate() {
        // Mostly feed-forward (from outputs declared earlier), so tokens flow; sometimes any
        // output, so loops and self-loops appear too.
        let pick = picks[j % picks.len()];
        let upstream: Vec<usize> = (0..*before)
            .filter(|&o| accepts.contains(&outputs[o].1))
            .collect();
        let candidates: Vec<usize> = if !pick.is_multiple_of(4) && !upstream.is_empty() {
            upstream
        } else {
            (0..outputs.len())
                .filter(|&o| accepts.contains(&outputs[o].1))
                .collect()
        };
        let o = candidates[pick / 4 % candidates.len()];
        used[o] = true;
        b.connect(outputs[o].0.clone(), input.clone());
    }
    for (o, (out, _)) in outputs.iter().enumerate() {
        if !used[o] && out[prefix.len()..].starts_with('s') {
            b.add(
                format!("{}_sink", out.split('.').next().unwrap()),
                Sink::new(),
            );
            b.connect(
                out.clone(),
                format!("{}_sink.in_data", out.split('.').next().unwrap()),
            );
        }
    }
}
