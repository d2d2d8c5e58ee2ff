//! One test per rule of docs/semantics.md §4.11 and §10.4–§10.10 (the workflow operators),
//! named after the rule: in the engine (sequential and parallel), under `back` and replay, and
//! in the verifier.

use cameleon::InputSet;
use cameleon::net::ProblemKind;
use cameleon::operator::FiniteControl;
use cameleon::prelude::*;
use cameleon::verify::{Verdict, VerifyOptions, verify};
use serde_json::json;

fn net(text: &str) -> Net {
    Net::from_cm(text).unwrap_or_else(|e| panic!("{e}"))
}

fn run(net: Net) -> Cvm {
    let mut cvm = Cvm::new(net);
    let end = cvm.run().unwrap();
    assert_eq!(end, EndState::Completed, "{end}");
    cvm
}

fn got(cvm: &Cvm, sink: &str) -> Vec<serde_json::Value> {
    cvm.received(sink).iter().map(|v| v.to_json()).collect()
}

fn state(cvm: &Cvm, conn: &str) -> ConnState {
    cvm.state_of(conn)
        .unwrap_or_else(|| panic!("no connection {conn}"))
        .state
}

fn sound(net: &Net) {
    let r = verify(net, &VerifyOptions::default());
    assert_eq!(r.verdict, Verdict::Holds, "{}: {r}", net.name());
}

/// src → split → (stop: cancel [work]) ∥ (work → done); stop is declared first, so it fires
/// before `work` in sequential mode.
const CANCEL_TASK: &str = "
name: cancel-task
operators:
  - {id: src, type: source, params: {value: job}}
  - {id: split, type: fork}
  - {id: stop, type: cancel, params: {region: [work]}}
  - {id: work, type: transform}
  - {id: done, type: sink}
  - {id: stopped, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: stop.in_data}
  - {from: split.out_b, to: work.in_data}
  - {from: work.out_data, to: done.in_data}
  - {from: stop.out_data, to: stopped.in_data}
";

// ---------------------------------------------------------------------------------------------
// §10.4 Cancellation

#[test]
fn cancel_consumes_every_new_connection_of_its_region() {
    let cvm = run(net(CANCEL_TASK));
    assert_eq!(state(&cvm, "split.out_b -> work.in_data"), ConnState::Old);
    assert_eq!(cvm.fire_count(cvm.net().op_id("work").unwrap()), 0);
    assert!(got(&cvm, "done").is_empty());
    assert_eq!(got(&cvm, "stopped"), [json!("job")]);
}

#[test]
fn a_cancellation_is_recorded_among_the_firings_consumed_connections() {
    let cvm = run(net(CANCEL_TASK));
    let net = cvm.net();
    let stop = net.op_id("stop").unwrap();
    let entry = cvm
        .history()
        .entries()
        .into_iter()
        .find(|e| e.firings[0].op == stop)
        .unwrap();
    let consumed: Vec<&str> = entry.firings[0]
        .consumed
        .iter()
        .map(|c| net.connections()[c.index()].name.as_str())
        .collect();
    assert_eq!(
        consumed,
        ["split.out_a -> stop.in_data", "split.out_b -> work.in_data"]
    );
    // What `stop` received is its own input only.
    assert_eq!(got(&cvm, "stop"), [json!("job")]);
}

#[test]
fn back_after_a_cancellation_gives_the_withdrawn_tokens_back() {
    let mut cvm = Cvm::new(net(CANCEL_TASK));
    for _ in 0..3 {
        cvm.step().unwrap(); // src, split, stop
    }
    assert_eq!(state(&cvm, "split.out_b -> work.in_data"), ConnState::Old);
    assert!(!cvm.fireable().contains(&"work"));
    cvm.back().unwrap();
    assert_eq!(state(&cvm, "split.out_b -> work.in_data"), ConnState::New);
    assert!(cvm.fireable().contains(&"work"));
    // Forward again replays the cancellation.
    assert!(matches!(
        cvm.step().unwrap(),
        Step::Fired { replayed: true, .. }
    ));
    assert_eq!(state(&cvm, "split.out_b -> work.in_data"), ConnState::Old);
}

#[test]
fn a_cancellation_whose_region_has_no_token_withdraws_nothing() {
    // `work` declared first: it has consumed its token when `stop` fires.
    let text = CANCEL_TASK.replace(
        "  - {id: stop, type: cancel, params: {region: [work]}}\n  - {id: work, type: transform}",
        "  - {id: work, type: transform}\n  - {id: stop, type: cancel, params: {region: [work]}}",
    );
    let cvm = run(net(&text));
    assert_eq!(got(&cvm, "done"), [json!("job")]);
    assert_eq!(got(&cvm, "stopped"), [json!("job")]);
}

#[test]
fn a_region_naming_an_unknown_operator_is_invalid() {
    let e = Net::from_cm(&CANCEL_TASK.replace("region: [work]", "region: [wrok]")).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(
        p.kind,
        cameleon::cm::CmProblemKind::Net(ProblemKind::BadOperator)
    );
    assert!(
        p.message
            .contains("`stop` cancels `wrok`, which the net does not have")
    );
    assert_eq!(p.hint.as_deref(), Some("did you mean `work`?"));
}

#[test]
fn a_region_may_not_hold_an_operator_with_a_control_state() {
    let text = "
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: stop, type: cancel, params: {region: [acc]}}
  - {id: acc, type: accumulator, params: {n: 2}}
  - {id: out, type: sink}
  - {id: out2, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: stop.in_data}
  - {from: split.out_b, to: acc.in_data}
  - {from: acc.out_data, to: out.in_data}
  - {from: stop.out_data, to: out2.in_data}
";
    let e = Net::from_cm(text).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("`stop` cancels `acc` (accumulator), which keeps a control state"),
        "{e}"
    );
}

#[test]
fn terminate_withdraws_every_token_and_the_run_completes() {
    // The end node is reached while `slow` still has work waiting: it is withdrawn.
    let text = "
name: end
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: end, type: terminate}
  - {id: slow, type: transform}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: end.in_data}
  - {from: split.out_b, to: slow.in_data}
  - {from: slow.out_data, to: out.in_data}
";
    let cvm = run(net(text));
    assert!(got(&cvm, "out").is_empty());
    assert_eq!(got(&cvm, "end"), [json!("x")]);
    assert_eq!(state(&cvm, "split.out_b -> slow.in_data"), ConnState::Old);
    sound(&net(text));
}

#[test]
fn parallel_mode_holds_back_the_region_of_an_enabled_cancellation() {
    // Declared after `stop`, `work` would fire in the same maximal step; it is held back, and
    // the cancellation withdraws its token.
    let text = CANCEL_TASK.replace(
        "  - {id: stop, type: cancel, params: {region: [work]}}\n  - {id: work, type: transform}",
        "  - {id: work, type: transform}\n  - {id: stop, type: cancel, params: {region: [work]}}",
    );
    let mut cvm = Cvm::builder(net(&text)).mode(Mode::Parallel).build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(got(&cvm, "done").is_empty());
    assert_eq!(got(&cvm, "stopped"), [json!("job")]);
}

#[test]
fn deferred_choice_by_two_cancels_takes_one_branch_and_verifies() {
    let text = "
name: deferred
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: take_a, type: cancel, params: {region: [take_b]}}
  - {id: take_b, type: cancel, params: {region: [take_a]}}
  - {id: a, type: sink}
  - {id: b, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: take_a.in_data}
  - {from: split.out_b, to: take_b.in_data}
  - {from: take_a.out_data, to: a.in_data}
  - {from: take_b.out_data, to: b.in_data}
";
    let cvm = run(net(text));
    assert_eq!(got(&cvm, "a"), [json!("x")]);
    assert!(got(&cvm, "b").is_empty());
    let r = verify(&net(text), &VerifyOptions::default());
    assert_eq!(r.verdict, Verdict::Holds, "{r}");
    // Either branch can be taken: no operator is dead.
    assert_eq!(r.no_dead_operators, Some(true));
}

// ---------------------------------------------------------------------------------------------
// §10.5 Partial joins

fn branches(join: &str, n: usize) -> String {
    let letters = ["a", "b", "c"];
    let mut ops = String::from(
        "operators:\n  - {id: src, type: source, params: {value: x}}\n  - {id: split, type: fork, params: {arity: 3}}\n",
    );
    let mut conns = String::from("connections:\n  - {from: src.out_data, to: split.in_data}\n");
    for l in &letters[..n] {
        ops.push_str(&format!("  - {{id: t_{l}, type: transform}}\n"));
        conns.push_str(&format!(
            "  - {{from: split.out_{l}, to: t_{l}.in_data}}\n  - {{from: t_{l}.out_data, to: j.in_{l}}}\n"
        ));
    }
    ops.push_str(&format!("  - {{id: j, type: join, params: {join}}}\n"));
    ops.push_str("  - {id: out, type: sink}\n");
    conns.push_str("  - {from: j.out_data, to: out.in_data}\n");
    format!("name: partial\n{ops}{conns}")
}

#[test]
fn partial_join_passes_on_at_the_quorum_and_consumes_the_rest() {
    let text = branches("{arity: 3, quorum: 2}", 3);
    let cvm = run(net(&text));
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    // The three branches arrived before the join's turn: one firing consumed them all.
    let j = cvm.net().op_id("j").unwrap();
    assert_eq!(cvm.fire_count(j), 1);
    for l in ["a", "b", "c"] {
        assert_eq!(
            state(&cvm, &format!("t_{l}.out_data -> j.in_{l}")),
            ConnState::Old
        );
    }
    sound(&net(&text));
}

#[test]
fn discriminator_passes_on_the_first_arrival_only() {
    let text = branches("{arity: 3, quorum: 1}", 3);
    let cvm = run(net(&text));
    assert_eq!(got(&cvm, "out").len(), 1);
    sound(&net(&text));
}

#[test]
fn partial_join_counts_each_input_once_per_round() {
    // Two rounds through a thread split: the join resets after its three inputs, so it passes
    // on once per round.
    let text = "
name: rounds
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: twice, type: thread_split, params: {n: 2}}
  - {id: split, type: fork, params: {arity: 3}}
  - {id: j, type: join, params: {arity: 3, quorum: 1}}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: twice.in_data}
  - {from: twice.out_data, to: split.in_data}
  - {from: split.out_a, to: j.in_a}
  - {from: split.out_b, to: j.in_b}
  - {from: split.out_c, to: j.in_c}
  - {from: j.out_data, to: out.in_data}
";
    let cvm = run(net(text));
    assert_eq!(got(&cvm, "out").len(), 2);
    sound(&net(text));
}

#[test]
fn partial_join_does_not_consume_a_second_token_on_a_counted_input() {
    let j = cameleon::ops::Join::<Any>::partial(3, 2).unwrap();
    let n = ConnState::New;
    let o = ConnState::Old;
    assert_eq!(Operator::consumes(&j, &[n, o, n]), InputSet(0b101));
    // Counted `in_a` already this round: its second token waits.
    let c = Operator::control(&j).unwrap();
    assert_eq!(c.consumes(0b001, &[n, n, o]), Some(InputSet(0b010)));
    assert_eq!(c.fire(0b001, &[n, n, o]), vec![(1, 0b011)]);
    assert_eq!(c.fire(0b011, &[o, o, n]), vec![(0, 0)]);
}

#[test]
fn cancelling_partial_join_withdraws_the_rest_and_resets() {
    // quorum 1 of 3 with the branches' operators as its region, declared right after the
    // first branch: the first arrival wins, the others' tokens are withdrawn.
    let text = "
name: cancelling
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork, params: {arity: 3}}
  - {id: t_a, type: transform}
  - {id: j, type: join, params: {arity: 3, quorum: 1, cancel: [t_a, t_b, t_c]}}
  - {id: t_b, type: transform}
  - {id: t_c, type: transform}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: t_a.in_data}
  - {from: split.out_b, to: t_b.in_data}
  - {from: split.out_c, to: t_c.in_data}
  - {from: t_a.out_data, to: j.in_a}
  - {from: t_b.out_data, to: j.in_b}
  - {from: t_c.out_data, to: j.in_c}
  - {from: j.out_data, to: out.in_data}
";
    let cvm = run(net(text));
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    let fired: Vec<u32> = ["t_a", "t_b", "t_c"]
        .iter()
        .map(|t| cvm.fire_count(cvm.net().op_id(t).unwrap()))
        .collect();
    assert_eq!(fired, [1, 0, 0], "only the first branch ran");
    assert_eq!(state(&cvm, "split.out_b -> t_b.in_data"), ConnState::Old);
    sound(&net(text));
}

#[test]
fn a_quorum_outside_one_to_arity_is_a_param_error() {
    let e = Net::from_cm(&branches("{arity: 3, quorum: 4}", 3)).unwrap_err();
    assert!(
        e.to_string()
            .contains("quorum must be between 1 and the arity (3), not 4"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// §10.6 Critical sections

const INTERLEAVED: &str = "
name: interleaved
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: lock, type: mutex}
  - {id: a1, type: transform}
  - {id: a2, type: transform}
  - {id: b1, type: transform}
  - {id: a_end, type: fork}
  - {id: b_end, type: fork}
  - {id: ends, type: merge}
  - {id: both, type: join}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: lock.in_a}
  - {from: split.out_b, to: lock.in_b}
  - {from: lock.out_a, to: a1.in_data}
  - {from: a1.out_data, to: a2.in_data}
  - {from: a2.out_data, to: a_end.in_data}
  - {from: lock.out_b, to: b1.in_data}
  - {from: b1.out_data, to: b_end.in_data}
  - {from: a_end.out_a, to: ends.in_a}
  - {from: b_end.out_a, to: ends.in_b}
  - {from: ends.out_data, to: lock.in_done}
  - {from: a_end.out_b, to: both.in_a}
  - {from: b_end.out_b, to: both.in_b}
  - {from: both.out_data, to: out.in_data}
";

#[test]
fn mutex_grants_one_request_at_a_time() {
    let mut cvm = Cvm::new(net(INTERLEAVED));
    let n = cvm.net();
    let (a1, a2, b1) = (
        n.op_id("a1").unwrap(),
        n.op_id("a2").unwrap(),
        n.op_id("b1").unwrap(),
    );
    let mut order = Vec::new();
    let end = loop {
        match cvm.step().unwrap() {
            Step::Fired { ops, .. } => {
                order.extend(ops.into_iter().filter(|o| [a1, a2, b1].contains(o)))
            }
            Step::Ended(end) => break end,
        }
        // `b`'s request waits while section `a` runs.
        if cvm.fire_count(a1) == 1 && cvm.fire_count(a2) == 0 {
            assert_eq!(state(&cvm, "split.out_b -> lock.in_b"), ConnState::New);
        }
    };
    assert_eq!(end, EndState::Completed, "{end}");
    assert_eq!(order, [a1, a2, b1], "a's section whole, then b's");
    assert_eq!(got(&cvm, "out"), [json!("x")]);
}

/// `mutex` altered to grant twice: a grant leaves it free, so the next request is granted while
/// the first section still runs. The same ports, params and emission sets as `mutex`; only its
/// control state never becomes *held*. The exclusion test must fail on it.
#[operator(
    id = "tt_mutex_grants_twice",
    label = "Mutex granting twice",
    family = behavioral,
    firing = custom,
    exec = inline
)]
#[derive(Clone, Debug)]
pub struct GrantsTwice<T: PortType = Any> {
    /// number of requests
    #[param(default = 2)]
    arity: usize,
    #[input]
    in_done: In<Any>,
    #[input(variadic = arity)]
    in_a: In<T>,
    #[output(variadic = arity)]
    out_a: Out<T>,
}

impl<T: PortType> Default for GrantsTwice<T> {
    fn default() -> Self {
        GrantsTwice {
            arity: 2,
            __cameleon_ports: std::marker::PhantomData,
        }
    }
}

impl<T: PortType> GrantsTwice<T> {
    /// The input it takes: `in_done` when NEW (a release), else the first NEW request.
    fn taken(inputs: &[ConnState]) -> Option<usize> {
        (0..inputs.len()).find(|&i| inputs[i] == ConnState::New)
    }
}

impl<T: PortType> CanFire for GrantsTwice<T> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        FiniteControl::can_fire(self, 0, e)
    }
}

impl<T: PortType> Run for GrantsTwice<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let states: Vec<ConnState> = (0..cx.input_count()).map(|i| cx.state_at(i)).collect();
        match Self::taken(&states) {
            Some(0) | None => Ok(()),
            Some(i) => {
                let v = cx.value_at(i).cloned().ok_or("a request without a value")?;
                cx.emit_at(i - 1, v);
                Ok(())
            }
        }
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        FiniteControl::consumes(self, 0, inputs).unwrap_or_default()
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
    fn refine_spec(&self, mut spec: OpSpec) -> OpSpec {
        spec.emits = (0..=self.arity)
            .map(|k| {
                if k < self.arity {
                    vec![k as u16]
                } else {
                    vec![]
                }
            })
            .collect();
        spec
    }
}

/// One control state, *free*, for ever.
impl<T: PortType> FiniteControl for GrantsTwice<T> {
    fn count(&self) -> u32 {
        1
    }
    fn initial(&self) -> u32 {
        0
    }
    fn can_fire(&self, _: u32, e: &Enabling<'_>) -> bool {
        Self::taken(e.inputs).is_some()
    }
    fn consumes(&self, _: u32, inputs: &[ConnState]) -> Option<InputSet> {
        Some(Self::taken(inputs).map_or(InputSet(0), |i| InputSet(1 << i)))
    }
    fn fire(&self, _: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        match Self::taken(inputs) {
            Some(0) => vec![(self.arity, 0)],
            Some(i) => vec![(i - 1, 0)],
            None => Vec::new(),
        }
    }
}

/// A critical section: its name and the operators a token passes in it, from the grant to its
/// end (the `fork` whose firing releases the mutex). It is *inside* in a marking where an input
/// of one of them is NEW.
type Section = (&'static str, &'static [&'static str]);

/// Checks mutual exclusion on the full state space of `net`'s abstraction: no reachable marking
/// has two sections inside at once, and each section is inside in some marking (the check is
/// not empty). `Err` names the first marking that breaks it.
fn exclusive(net: &Net, sections: &[Section]) -> Result<usize, String> {
    let markings = cameleon::verify::reachable_markings(net, 1_000_000)
        .ok_or_else(|| format!("{}: the state space exceeds the budget", net.name()))?;
    let conns = net.connections();
    // Per section, the connections into its operators.
    let into: Vec<(&str, Vec<usize>)> = sections
        .iter()
        .map(|(name, ops)| {
            let ids: Vec<usize> = (0..conns.len())
                .filter(|&c| {
                    let to = conns[c].name.split(" -> ").nth(1).unwrap_or("");
                    ops.iter().any(|op| to.starts_with(&format!("{op}.")))
                })
                .collect();
            assert!(
                !ids.is_empty(),
                "section {name}: no connection into {ops:?}"
            );
            (*name, ids)
        })
        .collect();
    let mut seen_inside = vec![false; sections.len()];
    for m in &markings {
        let inside: Vec<&str> = into
            .iter()
            .enumerate()
            .filter(|(_, (_, ids))| ids.iter().any(|&c| m[c] == ConnState::New))
            .map(|(i, (name, _))| {
                seen_inside[i] = true;
                *name
            })
            .collect();
        if inside.len() > 1 {
            let new: Vec<&str> = (0..conns.len())
                .filter(|&c| m[c] == ConnState::New)
                .map(|c| conns[c].name.as_str())
                .collect();
            return Err(format!(
                "{}: sections {inside:?} are inside at once, in the reachable marking where {new:?} are NEW",
                net.name()
            ));
        }
    }
    for (i, inside) in seen_inside.iter().enumerate() {
        assert!(
            inside,
            "{}: section {} is never inside: the check would be empty",
            net.name(),
            sections[i].0
        );
    }
    Ok(markings.len())
}

/// The mutex examples and their sections.
fn mutex_examples() -> Vec<(String, Vec<Section>)> {
    let file = |f: &str| {
        std::fs::read_to_string(format!(
            "{}/../examples/wcp/{f}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap_or_else(|e| panic!("{f}: {e}"))
    };
    vec![
        (
            file("wcp39-critical-section.cm"),
            vec![
                ("a", &["read_a", "write_a", "end_a"][..]),
                ("b", &["read_b", "write_b", "end_b"]),
            ],
        ),
        (
            file("wcp40-interleaved-routing.cm"),
            vec![
                ("a", &["a", "end_a"][..]),
                ("b", &["b", "end_b"]),
                ("c", &["c", "end_c"]),
            ],
        ),
        (
            file("wcp17-interleaved-parallel-routing.cm"),
            vec![
                ("a1", &["a1", "a1_end"][..]),
                ("a2", &["a2", "a2_end"]),
                ("b", &["b", "b_end"]),
            ],
        ),
        (
            INTERLEAVED.to_owned(),
            vec![("a", &["a1", "a2", "a_end"][..]), ("b", &["b1", "b_end"])],
        ),
    ]
}

#[test]
fn mutex_sections_never_overlap_in_any_interleaving() {
    for (text, sections) in mutex_examples() {
        let n = net(&text);
        let states = exclusive(&n, &sections).unwrap_or_else(|e| panic!("{e}"));
        assert!(states > 10, "{}: {states} states", n.name());
        sound(&n);
    }
}

#[test]
fn a_mutex_altered_to_grant_twice_fails_the_exclusion_check() {
    // The same nets with the mutex granting twice: the check finds two sections inside.
    for (text, sections) in mutex_examples() {
        let altered = text.replace("type: mutex", "type: tt_mutex_grants_twice");
        assert_ne!(altered, text);
        let n = net(&altered);
        let e = exclusive(&n, &sections).expect_err("two sections inside at once");
        assert!(e.contains("are inside at once"), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// §10.7 Milestones

/// The milestone net, its sources and `m` declared in `order` (which decides who fires first).
fn milestone(order: [&str; 4]) -> String {
    let ops = |id: &str| match id {
        "ask" => "  - {id: ask, type: source, params: {value: change}}\n",
        "reach" => "  - {id: reach, type: source, params: {value: booked}}\n",
        "m" => "  - {id: m, type: milestone}\n",
        _ => "  - {id: expire, type: source, params: {value: issued}}\n",
    };
    let mut text = String::from("name: milestone\noperators:\n");
    for id in order {
        text.push_str(ops(id));
    }
    text.push_str(
        "  - {id: changed, type: sink}
  - {id: late, type: sink}
  - {id: passed, type: sink}
connections:
  - {from: ask.out_data, to: m.in_data}
  - {from: reach.out_data, to: m.in_reached}
  - {from: expire.out_data, to: m.in_expire}
  - {from: m.out_data, to: changed.in_data}
  - {from: m.out_late, to: late.in_data}
  - {from: m.out_passed, to: passed.in_data}
",
    );
    text
}

#[test]
fn milestone_lets_a_request_through_while_it_holds() {
    let cvm = run(net(&milestone(["reach", "ask", "expire", "m"])));
    assert_eq!(got(&cvm, "changed"), [json!("change")]);
    assert_eq!(got(&cvm, "passed"), [json!("booked")]);
    assert!(got(&cvm, "late").is_empty());
}

#[test]
fn milestone_sends_a_request_after_it_passed_to_out_late() {
    // `ask` arrives last: the milestone was reached and passed before.
    let order = ["reach", "expire", "m", "ask"];
    let mut cvm = Cvm::new(net(&milestone(order)));
    // reach, expire, m (passes), ask, m (late), sinks.
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert!(got(&cvm, "changed").is_empty());
    assert_eq!(got(&cvm, "late"), [json!("change")]);
    sound(&net(&milestone(order)));
}

#[test]
fn milestone_makes_an_early_request_wait_until_it_is_reached() {
    let mut cvm = Cvm::new(net(&milestone(["ask", "expire", "m", "reach"])));
    cvm.step().unwrap(); // ask
    cvm.step().unwrap(); // expire
    assert!(!cvm.fireable().contains(&"m"), "nothing reached yet");
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "changed"), [json!("change")]);
}

// ---------------------------------------------------------------------------------------------
// §10.8 Triggers

/// The trigger net, its two sources and `t` declared in `order`.
fn trigger(order: [&str; 3]) -> String {
    let mut text = String::from("name: trigger\noperators:\n");
    for id in order {
        text.push_str(&if id == "t" {
            "  - {id: t, type: trigger}\n".to_owned()
        } else {
            format!("  - {{id: {id}, type: source, params: {{value: {id}}}}}\n")
        });
    }
    text.push_str(
        "  - {id: went, type: sink}
  - {id: lost, type: sink}
connections:
  - {from: thread.out_data, to: t.in_data}
  - {from: ring.out_data, to: t.in_trigger}
  - {from: t.out_data, to: went.in_data}
  - {from: t.out_lost, to: lost.in_data}
",
    );
    text
}

#[test]
fn transient_trigger_releases_a_waiting_thread() {
    let cvm = run(net(&trigger(["thread", "ring", "t"])));
    assert_eq!(got(&cvm, "went"), [json!("thread")]);
    assert!(got(&cvm, "lost").is_empty());
}

#[test]
fn transient_trigger_is_lost_when_no_thread_waits() {
    // The trigger comes first and is lost; the thread then waits for good.
    let mut cvm = Cvm::new(net(&trigger(["ring", "t", "thread"])));
    cvm.step().unwrap(); // ring
    cvm.step().unwrap(); // t: nothing waits
    assert_eq!(state(&cvm, "ring.out_data -> t.in_trigger"), ConnState::Old);
    assert_eq!(state(&cvm, "t.out_lost -> lost.in_data"), ConnState::New);
    let end = cvm.run().unwrap();
    assert!(matches!(end, EndState::Deadlock { .. }), "{end}");
    assert_eq!(got(&cvm, "lost"), [json!("ring")]);
}

// ---------------------------------------------------------------------------------------------
// §10.10 Thread split and merge

#[test]
fn thread_split_emits_n_threads_and_thread_merge_makes_them_one() {
    let text = "
name: threads
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: thread_split, params: {n: 3}}
  - {id: work, type: transform}
  - {id: each, type: fork}
  - {id: merge, type: thread_merge, params: {n: 3}}
  - {id: all, type: sink}
  - {id: one, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_data, to: work.in_data}
  - {from: work.out_data, to: each.in_data}
  - {from: each.out_a, to: all.in_data}
  - {from: each.out_b, to: merge.in_data}
  - {from: merge.out_data, to: one.in_data}
";
    let cvm = run(net(text));
    assert_eq!(got(&cvm, "all"), [json!("x"), json!("x"), json!("x")]);
    assert_eq!(got(&cvm, "one"), [json!("x")]);
    sound(&net(text));
}

// ---------------------------------------------------------------------------------------------
// §4.11 Optional error outputs

/// Fails every firing; declares `error: DataError`.
#[derive(Debug)]
struct Fails;

impl Operator for Fails {
    fn spec(&self) -> OpSpec {
        OpSpec::new("fails", "Fails", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataString>())
            .output("error", TypeRef::of::<DataError>())
            .emits(&[&["out_data"], &["error"]])
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new("no luck"))
    }
}

fn failing(connect_error: bool) -> Net {
    let mut b = Net::builder("fails");
    b.add("src", cameleon::ops::Source::new("x"));
    b.add("f", Fails);
    b.add("out", cameleon::ops::Sink::new());
    b.connect("src.out_data", "f.in_data")
        .connect("f.out_data", "out.in_data");
    if connect_error {
        b.add("errors", cameleon::ops::Sink::new());
        b.connect("f.error", "errors.in_data");
    }
    b.build().unwrap()
}

#[test]
fn an_error_output_catches_a_failure_only_when_connected() {
    let mut caught = Cvm::new(failing(true));
    assert_eq!(caught.run().unwrap(), EndState::Completed);
    assert_eq!(
        got(&caught, "errors"),
        [json!({"operator": "f", "message": "no luck"})]
    );
    let mut uncaught = Cvm::new(failing(false));
    let end = uncaught.run().unwrap();
    assert_eq!(
        end,
        EndState::Error {
            op: "f".into(),
            error: "no luck".into()
        }
    );
}

#[test]
fn the_verifier_does_not_explore_an_unconnected_error_output() {
    // `f` feeds a join. With `error` unconnected, a failure is an ERROR, not an outcome: the
    // only outcome is `out_data`, and the net is sound. Connected, the error branch is an
    // outcome — one that leaves the join waiting: a deadlock the verifier must report.
    let net = |connect_error: bool| {
        let mut b = Net::builder("fails-into-a-join");
        b.add("src", cameleon::ops::Source::new("x"));
        b.add("split", cameleon::ops::Fork::<Any>::default());
        b.add("f", Fails);
        b.add("t", cameleon::ops::Transform::new());
        b.add("j", cameleon::ops::Join::<Any>::default());
        b.add("out", cameleon::ops::Sink::new());
        b.connect("src.out_data", "split.in_data")
            .connect("split.out_a", "f.in_data")
            .connect("split.out_b", "t.in_data")
            .connect("f.out_data", "j.in_a")
            .connect("t.out_data", "j.in_b")
            .connect("j.out_data", "out.in_data");
        if connect_error {
            b.add("errors", cameleon::ops::Sink::new());
            b.connect("f.error", "errors.in_data");
        }
        b.build().unwrap()
    };
    let r = verify(&net(false), &VerifyOptions::default());
    assert_eq!(r.verdict, Verdict::Holds, "{r}");
    let connected = verify(&net(true), &VerifyOptions::default());
    assert_eq!(connected.deadlock_free, Some(false), "{connected}");
}
