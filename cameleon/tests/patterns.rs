//! The workflow-pattern examples (`examples/wcp/`, docs/patterns.md) in the library: each runs
//! to COMPLETED in both modes, and the sequential run is a path of the verifier's abstraction
//! that ends in the same marking — the engine and the verifier agree on every new operator.

use std::path::{Path, PathBuf};

use cameleon::cm::Loader;
use cameleon::prelude::*;
use cameleon::verify::{TraceEnd, follow};
use serde_json::{Value as Json, json};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cm"))
        .collect();
    v.sort();
    v
}

fn load(p: &Path) -> Net {
    Loader::new()
        .load_file(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_pattern_example_completes_in_both_modes() {
    let all = examples();
    assert!(all.len() >= 36, "{} examples", all.len());
    for p in &all {
        for mode in [Mode::Sequential, Mode::Parallel] {
            let mut cvm = Cvm::builder(load(p)).mode(mode).build();
            let end = cvm.run().unwrap();
            assert_eq!(end, EndState::Completed, "{} ({mode}): {end}", p.display());
        }
    }
}

#[test]
fn every_sequential_run_is_a_path_of_the_verifiers_abstraction() {
    for p in examples() {
        let net = load(&p);
        let mut cvm = Cvm::new(load(&p));
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{}", p.display());
        let fired: Vec<String> = cvm
            .history()
            .entries()
            .iter()
            .map(|e| net.op(e.firings[0].op).name.clone())
            .collect();
        let trace = follow(&net, &fired)
            .unwrap_or_else(|e| panic!("{}: the run is not a path: {e}", p.display()));
        assert_eq!(trace.end, TraceEnd::Completed, "{}", p.display());
        let engine: Vec<ConnState> = (0..net.connections().len())
            .map(|c| cvm.conn(cameleon::connection::ConnId(c as u32)).state)
            .collect();
        let abstraction: Vec<ConnState> = trace.marking.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            engine,
            abstraction,
            "{}: final markings differ",
            p.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Each pattern does what its name says: what reaches which sink, what was withdrawn

/// `examples/wcp/NAME.cm`, loaded.
fn example(name: &str) -> Net {
    load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/wcp/{name}.cm")))
}

/// The example run to its end in `mode` (it completes), and its trace (the lines of
/// `cameleon run --trace`).
fn run(name: &str, mode: Mode) -> (Cvm, Vec<Json>) {
    let mut cvm = Cvm::builder(example(name)).mode(mode).build();
    let end = cvm.run().unwrap();
    assert_eq!(end, EndState::Completed, "{name} ({mode}): {end}");
    let trace = cvm.trace_lines();
    (cvm, trace)
}

/// The example driven along `ops` (each fired alone, in that order: an order the environment
/// may choose), then run to its end sequentially; and its trace.
fn drive(name: &str, ops: &[&str]) -> (Cvm, Vec<Json>) {
    let mut cvm = Cvm::new(example(name));
    for (i, op) in ops.iter().enumerate() {
        let id = cvm
            .net()
            .op_id(op)
            .unwrap_or_else(|| panic!("{name}: no `{op}`"));
        match cvm.fire_op(id) {
            Ok(Step::Fired { .. }) => {}
            other => panic!("{name}: `{op}` (firing {}) cannot fire: {other:?}", i + 1),
        }
    }
    let end = cvm.run().unwrap();
    assert_eq!(
        end,
        EndState::Completed,
        "{name} driven along {ops:?}: {end}"
    );
    let trace = cvm.trace_lines();
    (cvm, trace)
}

/// What sink `sink` received.
fn got(cvm: &Cvm, sink: &str) -> Vec<Json> {
    cvm.received(sink).iter().map(|v| v.to_json()).collect()
}

/// How many times `op` fired.
fn fired(cvm: &Cvm, op: &str) -> u32 {
    cvm.fire_count(cvm.net().op_id(op).unwrap_or_else(|| panic!("no `{op}`")))
}

/// The tokens `op`'s firings withdrew: the connections they consumed that are not inputs of
/// `op` itself (docs/semantics.md §10.4), firing by firing.
fn withdrawn(trace: &[Json], op: &str) -> Vec<Vec<String>> {
    trace
        .iter()
        .filter(|l| l["op"] == op)
        .map(|l| {
            l["consumed"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Json::as_str)
                .filter(|c| !c.contains(&format!("-> {op}.")))
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// How many values each firing of `op` emitted, firing by firing.
fn emitted_by(trace: &[Json], op: &str) -> Vec<usize> {
    trace
        .iter()
        .filter(|l| l["op"] == op)
        .map(|l| l["emitted"].as_array().unwrap().len())
        .collect()
}

/// The connections each firing of `op` consumed, firing by firing.
fn consumed_by(trace: &[Json], op: &str) -> Vec<Vec<String>> {
    trace
        .iter()
        .filter(|l| l["op"] == op)
        .map(|l| {
            l["consumed"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// The state of connection `conn` at the end.
fn state(cvm: &Cvm, conn: &str) -> ConnState {
    cvm.state_of(conn)
        .unwrap_or_else(|| panic!("no connection `{conn}`"))
        .state
}

const BOTH: [Mode; 2] = [Mode::Sequential, Mode::Parallel];

#[test]
fn structured_discriminator_passes_on_the_first_branch_only_and_absorbs_the_others() {
    // `a` arrives first: the join passes it on at once, then takes `b` and `c` silently.
    let (cvm, trace) = drive(
        "wcp09-structured-discriminator",
        &["src", "split", "a", "first", "b", "c"],
    );
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    assert_eq!(
        emitted_by(&trace, "first"),
        [1, 0],
        "only the first arrival goes on"
    );
    for mode in BOTH {
        let (cvm, _) = run("wcp09-structured-discriminator", mode);
        assert_eq!(got(&cvm, "out"), [json!("x")], "{mode}");
        for b in ["a", "b", "c"] {
            assert_eq!(fired(&cvm, b), 1, "{mode}: every branch runs");
        }
    }
}

#[test]
fn blocking_discriminator_passes_on_the_first_of_each_round_and_holds_the_next_round_back() {
    // Round 1's `a` goes on; round 2's `a` arrives before round 1's `b` and `c`: it waits
    // (NEW) while the join takes round 1's others.
    let (cvm, trace) = drive(
        "wcp28-blocking-discriminator",
        &[
            "src", "rounds", "split", "a", "first", "out", "b", "c", "rounds", "split", "a",
            "first",
        ],
    );
    assert_eq!(got(&cvm, "out"), [json!("x"), json!("x")], "one per round");
    let first = consumed_by(&trace, "first");
    assert_eq!(first[0], ["a.out_data -> first.in_a"]);
    assert_eq!(
        first[1],
        ["b.out_data -> first.in_b", "c.out_data -> first.in_c"],
        "round 2's `a` was not taken while round 1 was incomplete"
    );
    assert_eq!(
        first[2],
        [
            "a.out_data -> first.in_a",
            "b.out_data -> first.in_b",
            "c.out_data -> first.in_c"
        ],
        "round 2, whole"
    );
    assert_eq!(emitted_by(&trace, "first")[..3], [1, 0, 1]);
    for mode in BOTH {
        let (cvm, trace) = run("wcp28-blocking-discriminator", mode);
        assert_eq!(got(&cvm, "out"), [json!("x"), json!("x")], "{mode}");
        assert_eq!(
            emitted_by(&trace, "first").iter().sum::<usize>(),
            2,
            "{mode}"
        );
    }
}

#[test]
fn cancelling_discriminator_passes_on_the_first_branch_and_withdraws_the_others() {
    let (cvm, trace) = drive(
        "wcp29-cancelling-discriminator",
        &["src", "split", "a", "first"],
    );
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    assert_eq!(
        withdrawn(&trace, "first")[0],
        ["split.out_b -> b.in_data", "split.out_c -> c.in_data"],
        "the same firing withdrew the other branches"
    );
    assert_eq!((fired(&cvm, "b"), fired(&cvm, "c")), (0, 0));
    assert_eq!(fired(&cvm, "first"), 1, "nothing left for the join to take");
}

#[test]
fn structured_partial_join_goes_on_at_two_of_three_and_takes_the_third_silently() {
    // One arrival is counted, the second goes on, the third is taken without going on.
    let (cvm, trace) = drive(
        "wcp30-structured-partial-join",
        &["src", "split", "a", "two", "b", "two", "c"],
    );
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    let two = consumed_by(&trace, "two");
    assert_eq!(two[0], ["a.out_data -> two.in_a"]);
    assert_eq!(two[1], ["b.out_data -> two.in_b"]);
    assert_eq!(two[2], ["c.out_data -> two.in_c"]);
    assert_eq!(emitted_by(&trace, "two"), [0, 1, 0]);
}

#[test]
fn blocking_partial_join_goes_on_at_two_of_each_round_and_holds_the_next_round_back() {
    let (cvm, trace) = drive(
        "wcp31-blocking-partial-join",
        &[
            "src", "rounds", "split", "a", "b", "two", "out", "c", "rounds", "split", "a", "two",
        ],
    );
    assert_eq!(got(&cvm, "out"), [json!("x"), json!("x")]);
    let two = consumed_by(&trace, "two");
    assert_eq!(two[0], ["a.out_data -> two.in_a", "b.out_data -> two.in_b"]);
    assert_eq!(
        two[1],
        ["c.out_data -> two.in_c"],
        "round 2's `a` waits for round 1's `c`"
    );
    assert_eq!(emitted_by(&trace, "two")[..2], [1, 0]);
    for mode in BOTH {
        let (cvm, trace) = run("wcp31-blocking-partial-join", mode);
        assert_eq!(got(&cvm, "out"), [json!("x"), json!("x")], "{mode}");
        assert_eq!(emitted_by(&trace, "two").iter().sum::<usize>(), 2, "{mode}");
    }
}

#[test]
fn cancelling_partial_join_goes_on_at_two_of_three_and_withdraws_the_third() {
    let (cvm, trace) = drive(
        "wcp32-cancelling-partial-join",
        &["src", "split", "a", "b", "two"],
    );
    assert_eq!(got(&cvm, "out"), [json!("x")]);
    assert_eq!(withdrawn(&trace, "two")[0], ["split.out_c -> c.in_data"]);
    assert_eq!(fired(&cvm, "c"), 0, "the third branch never ran");
}

#[test]
fn multiple_instances_without_synchronization_run_three_times_and_nothing_waits_for_them() {
    // The main thread goes on before any instance has run.
    let (cvm, trace) = drive(
        "wcp12-mi-without-synchronization",
        &["src", "split", "main"],
    );
    assert_eq!(got(&cvm, "main"), [json!(1)]);
    assert_eq!(got(&cvm, "results"), [json!(2), json!(2), json!(2)]);
    assert_eq!(fired(&cvm, "task"), 3);
    let order: Vec<&str> = trace.iter().filter_map(|l| l["op"].as_str()).collect();
    let main_at = order.iter().position(|o| *o == "main").unwrap();
    let task_at = order.iter().position(|o| *o == "task").unwrap();
    assert!(main_at < task_at, "{order:?}");
}

/// The inner runs of `op` (a `subnet` or a `map`), every firing's: each run as JSON (`item`,
/// `end`, `trace`…).
fn inner(cvm: &Cvm, op: &str) -> Vec<Json> {
    let node = &cvm.net().operators()[cvm.net().op_id(op).unwrap().index()];
    cameleon::ops::inner_runs(node)
        .unwrap_or_else(|| panic!("`{op}` runs no inner net"))
        .iter()
        .flatten()
        .map(|r| shown(r))
        .collect()
}

#[test]
fn multiple_instances_with_design_time_knowledge_run_once_per_item_and_wait_for_all() {
    for mode in BOTH {
        let (cvm, _) = run("wcp13-mi-design-time", mode);
        assert_eq!(
            got(&cvm, "out"),
            [json!([2, 3, 4])],
            "{mode}: every result, in item order"
        );
        assert_eq!(
            inner(&cvm, "each").len(),
            3,
            "{mode}: one instance per item"
        );
        assert_eq!(fired(&cvm, "each"), 1, "{mode}: one firing waits for all");
    }
}

#[test]
fn multiple_instances_with_run_time_knowledge_run_once_per_item_of_the_list_that_arrives() {
    for mode in BOTH {
        let (cvm, _) = run("wcp14-mi-run-time", mode);
        assert_eq!(got(&cvm, "out"), [json!([11, 21, 31, 41])], "{mode}");
        assert_eq!(
            inner(&cvm, "each").len(),
            4,
            "{mode}: as many as the order's lines"
        );
    }
}

#[test]
fn multiple_instances_without_a_priori_knowledge_are_created_until_one_says_enough() {
    for mode in BOTH {
        let (cvm, _) = run("wcp15-mi-no-a-priori-knowledge", mode);
        assert_eq!(
            got(&cvm, "out"),
            [json!([1, 2, 3])],
            "{mode}: every instance's result"
        );
        assert_eq!(
            fired(&cvm, "instance"),
            3,
            "{mode}: three instances, decided as they ran"
        );
        assert_eq!(
            fired(&cvm, "more"),
            3,
            "{mode}: each instance's result decided"
        );
    }
}

#[test]
fn deferred_choice_takes_the_first_branch_taken_and_withdraws_the_other() {
    // The environment delivers: the return is withdrawn.
    let (cvm, trace) = drive("wcp16-deferred-choice", &["offer", "split", "delivered"]);
    assert_eq!(got(&cvm, "invoice"), [json!("parcel")]);
    assert!(got(&cvm, "refund").is_empty());
    assert_eq!(
        withdrawn(&trace, "delivered")[0],
        ["split.out_b -> returned.in_data"]
    );
    assert_eq!(fired(&cvm, "returned"), 0);
    // The environment returns the parcel: the delivery is withdrawn.
    let (cvm, trace) = drive("wcp16-deferred-choice", &["offer", "split", "returned"]);
    assert_eq!(got(&cvm, "refund"), [json!("parcel")]);
    assert!(got(&cvm, "invoice").is_empty());
    assert_eq!(
        withdrawn(&trace, "returned")[0],
        ["split.out_a -> delivered.in_data"]
    );
    assert_eq!(fired(&cvm, "delivered"), 0);
}

/// The order in which operators `ops` fired, from a trace.
fn order_of(trace: &[Json], ops: &[&str]) -> Vec<String> {
    trace
        .iter()
        .filter_map(|l| l["op"].as_str())
        .filter(|o| ops.contains(o))
        .map(str::to_owned)
        .collect()
}

#[test]
fn interleaved_parallel_routing_runs_a1_before_a2_and_b_between_or_around_never_at_once() {
    for mode in BOTH {
        let (cvm, trace) = run("wcp17-interleaved-parallel-routing", mode);
        assert_eq!(got(&cvm, "out"), [json!("x")], "{mode}");
        let order = order_of(&trace, &["a1", "a2", "b"]);
        assert_eq!(order.len(), 3, "{mode}: each task once: {order:?}");
        let at = |t: &str| order.iter().position(|o| o == t).unwrap();
        assert!(at("a1") < at("a2"), "{mode}: {order:?}");
        // Never two at once: no step of the run fires two of the tasks.
        for step in trace.iter().map(|l| &l["step"]) {
            let in_step = trace
                .iter()
                .filter(|l| {
                    &l["step"] == step
                        && ["a1", "a2", "b"].contains(&l["op"].as_str().unwrap_or(""))
                })
                .count();
            assert!(in_step <= 1, "{mode}: step {step} fires {in_step} tasks");
        }
    }
}

#[test]
fn milestone_lets_the_change_through_only_between_confirmation_and_issue() {
    // Confirmed, then the change: it goes through; then the ticket is issued.
    let (cvm, _) = drive(
        "wcp18-milestone",
        &[
            "booking",
            "split",
            "confirm",
            "ask_change",
            "window",
            "ready",
        ],
    );
    assert_eq!(got(&cvm, "changed"), [json!("AF123")]);
    assert!(got(&cvm, "refused").is_empty());
    assert_eq!(got(&cvm, "issued"), [json!("AF123")]);
    // Issued before the change is asked: the change is refused.
    let (cvm, _) = drive(
        "wcp18-milestone",
        &[
            "booking",
            "split",
            "confirm",
            "ready",
            "window",
            "ask_change",
        ],
    );
    assert!(got(&cvm, "changed").is_empty());
    assert_eq!(got(&cvm, "refused"), [json!("AF123")]);
    assert_eq!(got(&cvm, "issued"), [json!("AF123")]);
    // Asked before the confirmation: the change waits, then goes through.
    let mut cvm = Cvm::new(example("wcp18-milestone"));
    for op in ["booking", "split", "ask_change"] {
        cvm.fire_op(cvm.net().op_id(op).unwrap()).unwrap();
    }
    assert!(!cvm.fireable().contains(&"window"), "{:?}", cvm.fireable());
    assert_eq!(
        state(&cvm, "ask_change.out_data -> window.in_data"),
        ConnState::New
    );
    for op in ["confirm", "window"] {
        cvm.fire_op(cvm.net().op_id(op).unwrap()).unwrap();
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "changed"), [json!("AF123")]);
}

#[test]
fn cancel_task_withdraws_the_waiting_task_or_finds_nothing_left() {
    // The cancellation comes first: `ship` never runs.
    let (cvm, trace) = drive("wcp19-cancel-task", &["order", "split", "cancel_order"]);
    assert!(got(&cvm, "shipped").is_empty());
    assert_eq!(got(&cvm, "cancelled"), [json!("order 42")]);
    assert_eq!(
        withdrawn(&trace, "cancel_order")[0],
        ["split.out_b -> ship.in_data"]
    );
    assert_eq!(fired(&cvm, "ship"), 0);
    // `ship` came first: nothing to withdraw.
    let (cvm, trace) = drive("wcp19-cancel-task", &["order", "split", "ship"]);
    assert_eq!(got(&cvm, "shipped"), [json!("order 42")]);
    assert_eq!(withdrawn(&trace, "cancel_order")[0], Vec::<String>::new());
}

#[test]
fn cancel_case_withdraws_every_token_of_the_net_wherever_the_work_is() {
    // The work is half-way (`approve` waits) when the abort comes.
    let (cvm, trace) = drive("wcp20-cancel-case", &["case", "split", "check", "abort"]);
    assert!(got(&cvm, "paid").is_empty());
    assert_eq!(
        withdrawn(&trace, "abort")[0],
        ["check.out_data -> approve.in_data"]
    );
    assert_eq!((fired(&cvm, "approve"), fired(&cvm, "pay")), (0, 0));
    for mode in BOTH {
        let (cvm, _) = run("wcp20-cancel-case", mode);
        assert!(got(&cvm, "paid").is_empty(), "{mode}");
        assert!(
            cvm.marking().0.iter().all(|(s, _)| *s != ConnState::New),
            "{mode}: no token left"
        );
    }
}

#[test]
fn recursion_runs_the_net_within_itself_one_level_per_count_within_its_depth() {
    for mode in BOTH {
        let (cvm, _) = run("wcp22-recursion", mode);
        assert_eq!(got(&cvm, "out"), [json!(3)], "{mode}");
        // The top level (n = 0) ran itself once, on 1, which came back as 3: two more levels
        // below it counted the rest (a counter adds one per level).
        let top = inner(&cvm, "up");
        assert_eq!(top.len(), 1, "{mode}");
        let deeper: Vec<&Json> = top[0]["trace"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["op"] == "deeper")
            .collect();
        assert_eq!(deeper.len(), 1, "{mode}: {top:?}");
        assert_eq!(deeper[0]["emitted"][0]["value"], json!(3), "{mode}");
    }
    // From -20 it would need 23 levels: past `max_depth` (10) the firing fails.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let text = std::fs::read_to_string(dir.join("wcp22-recursion.cm"))
        .unwrap()
        .replace("value: 0", "value: -20");
    let net = Loader::new().base_dir(&dir).load_str(&text).unwrap();
    let mut cvm = Cvm::new(net);
    let end = cvm.run().unwrap();
    assert!(matches!(end, EndState::Error { .. }), "{end}");
    assert!(end.to_string().contains("depth"), "{end}");
    assert!(got(&cvm, "out").is_empty());
}

#[test]
fn transient_trigger_is_lost_when_nobody_waits_and_releases_a_waiting_job() {
    // The first ring comes before the job is ready: lost (to `retry`); the next one releases it.
    let (cvm, trace) = drive("wcp23-transient-trigger", &["ring", "rings", "bell"]);
    assert_eq!(got(&cvm, "done"), [json!("job")]);
    assert_eq!(
        fired(&cvm, "retry"),
        1,
        "the ring nobody waited for was lost"
    );
    let bell: Vec<Vec<String>> = trace
        .iter()
        .filter(|l| l["op"] == "bell")
        .map(|l| {
            l["emitted"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["conn"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect();
    assert_eq!(bell[0], ["bell.out_lost -> retry.in_data"]);
    assert_eq!(bell.last().unwrap(), &["bell.out_data -> done.in_data"]);
    // The job waits first: the first ring releases it, nothing is lost.
    let (cvm, _) = drive(
        "wcp23-transient-trigger",
        &["job", "prepare", "ring", "rings", "bell"],
    );
    assert_eq!(got(&cvm, "done"), [json!("job")]);
    assert_eq!(fired(&cvm, "retry"), 0);
}

#[test]
fn persistent_trigger_is_kept_until_the_job_is_ready() {
    // The ring first: it waits (NEW) on its connection until the job comes.
    let mut cvm = Cvm::new(example("wcp24-persistent-trigger"));
    cvm.fire_op(cvm.net().op_id("ring").unwrap()).unwrap();
    assert_eq!(state(&cvm, "ring.out_data -> go.in_b"), ConnState::New);
    assert!(!cvm.fireable().contains(&"go"));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "done"), [json!("job")]);
}

#[test]
fn cancel_region_withdraws_the_branch_wherever_its_work_stands() {
    // Before the branch started, and half-way through it.
    for (ops, gone) in [
        (
            &["request", "split", "withdraw"][..],
            "split.out_b -> assess.in_data",
        ),
        (
            &["request", "split", "assess", "withdraw"][..],
            "assess.out_data -> decide.in_data",
        ),
    ] {
        let (cvm, trace) = drive("wcp25-cancel-region", ops);
        assert!(got(&cvm, "decided").is_empty(), "{ops:?}");
        assert_eq!(got(&cvm, "withdrawn"), [json!("loan")]);
        assert_eq!(withdrawn(&trace, "withdraw")[0], [gone], "{ops:?}");
        assert_eq!(fired(&cvm, "decide"), 0);
    }
}

#[test]
fn cancel_multiple_instance_activity_withdraws_the_unfinished_instances_or_is_withdrawn() {
    // Cancelled with one instance done: the others and what the join holds are withdrawn.
    let (cvm, trace) = drive(
        "wcp26-cancel-mi-activity",
        &["job", "split", "spawn", "i1", "stop"],
    );
    assert!(got(&cvm, "finished").is_empty());
    assert_eq!(got(&cvm, "stopped"), [json!("job")]);
    assert_eq!(
        withdrawn(&trace, "stop")[0],
        [
            "spawn.out_b -> i2.in_data",
            "spawn.out_c -> i3.in_data",
            "i1.out_data -> all.in_a"
        ]
    );
    // Every instance finishes first: the join withdraws the cancellation.
    let (cvm, trace) = drive(
        "wcp26-cancel-mi-activity",
        &["job", "split", "spawn", "i1", "i2", "i3", "all"],
    );
    assert_eq!(got(&cvm, "finished"), [json!("job")]);
    assert!(got(&cvm, "stopped").is_empty());
    assert_eq!(withdrawn(&trace, "all")[0], ["split.out_b -> stop.in_data"]);
}

#[test]
fn complete_multiple_instance_activity_closes_the_list_with_the_instances_done_so_far() {
    // Two instances done (one collected, one waiting in the merge), then `finish`.
    let (cvm, trace) = drive(
        "wcp27-complete-mi-activity",
        &[
            "job", "split", "spawn", "i1", "results", "collect", "i2", "finish",
        ],
    );
    assert_eq!(got(&cvm, "out"), [json!(["job"])], "the one collected");
    assert_eq!(
        withdrawn(&trace, "finish")[0],
        ["spawn.out_c -> i3.in_data", "i2.out_data -> results.in_b"]
    );
    assert_eq!(fired(&cvm, "i3"), 0);
}

#[test]
fn static_partial_join_for_instances_goes_on_at_three_and_lets_the_others_finish() {
    let (cvm, _) = run("wcp34-static-partial-join-mi", Mode::Sequential);
    assert_eq!(got(&cvm, "out"), [json!([2, 3, 4])], "the quorum's results");
    let runs = inner(&cvm, "each");
    assert_eq!(runs.len(), 5, "every instance ran: {runs:?}");
    assert!(runs.iter().all(|r| r["end"] == "COMPLETED"), "{runs:?}");
}

#[test]
fn cancelling_partial_join_for_instances_goes_on_at_three_and_cancels_the_rest() {
    let (cvm, _) = run("wcp35-cancelling-partial-join-mi", Mode::Sequential);
    assert_eq!(got(&cvm, "out"), [json!([2, 3, 4])]);
    let runs = inner(&cvm, "each");
    assert_eq!(
        runs.iter().map(|r| r["item"].clone()).collect::<Vec<_>>(),
        [json!(0), json!(1), json!(2)],
        "the instances after the quorum never ran"
    );
}

#[test]
fn dynamic_partial_join_for_instances_stops_creating_instances_at_its_condition() {
    for mode in BOTH {
        let (cvm, _) = run("wcp36-dynamic-partial-join-mi", mode);
        assert_eq!(got(&cvm, "out"), [json!([6, 7, 8])], "{mode}");
        assert_eq!(
            fired(&cvm, "instance"),
            3,
            "{mode}: none after the condition held"
        );
    }
}

#[test]
fn critical_section_runs_each_section_whole_one_after_the_other() {
    for mode in BOTH {
        let (cvm, trace) = run("wcp39-critical-section", mode);
        assert_eq!(got(&cvm, "out"), [json!("x")], "{mode}");
        let order = order_of(&trace, &["read_a", "write_a", "read_b", "write_b"]);
        assert!(
            order == ["read_a", "write_a", "read_b", "write_b"]
                || order == ["read_b", "write_b", "read_a", "write_a"],
            "{mode}: the sections interleave: {order:?}"
        );
    }
}

#[test]
fn interleaved_routing_runs_each_task_once_never_two_at_once() {
    for mode in BOTH {
        let (cvm, trace) = run("wcp40-interleaved-routing", mode);
        assert_eq!(got(&cvm, "out"), [json!("x")], "{mode}");
        let order = order_of(&trace, &["a", "b", "c", "ends"]);
        // Each task, then its release, before the next task.
        assert_eq!(order.len(), 6, "{mode}: {order:?}");
        for pair in order.chunks(2) {
            assert!(pair[0] != "ends" && pair[1] == "ends", "{mode}: {order:?}");
        }
        let mut tasks: Vec<&String> = order.iter().step_by(2).collect();
        tasks.sort();
        assert_eq!(tasks, ["a", "b", "c"], "{mode}");
    }
}

#[test]
fn thread_merge_makes_the_three_threads_one() {
    for mode in BOTH {
        let (cvm, _) = run("wcp41-thread-merge", mode);
        assert_eq!(fired(&cvm, "work"), 3, "{mode}: three threads ran");
        assert_eq!(got(&cvm, "out"), [json!("x")], "{mode}: one came out");
    }
}

#[test]
fn thread_split_makes_one_thread_three_on_the_same_branch() {
    for mode in BOTH {
        let (cvm, _) = run("wcp42-thread-split", mode);
        assert_eq!(fired(&cvm, "threads"), 3, "{mode}: one firing per thread");
        assert_eq!(fired(&cvm, "work"), 3, "{mode}");
        assert_eq!(
            got(&cvm, "out"),
            [json!("x"), json!("x"), json!("x")],
            "{mode}"
        );
    }
}

#[test]
fn explicit_termination_completes_at_the_end_node_withdrawing_the_work_left() {
    // The long branch is half-way when the quick one reaches `end`.
    let (cvm, trace) = drive(
        "wcp43-explicit-termination",
        &["start", "split", "long_1", "quick", "end"],
    );
    assert!(got(&cvm, "report").is_empty());
    assert_eq!(
        withdrawn(&trace, "end")[0],
        ["long_1.out_data -> long_2.in_data"]
    );
    assert_eq!(fired(&cvm, "long_2"), 0);
}

#[test]
fn the_patterns_page_supports_42_of_the_43_patterns_and_says_so() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/patterns.md"))
            .unwrap();
    // The table's rows: `| # | pattern | how | example | test | verified |`.
    let rows: Vec<Vec<&str>> = doc
        .lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .filter(|cells| cells.len() == 8 && cells[1].parse::<u32>().is_ok())
        .collect();
    let numbers: Vec<u32> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(
        numbers,
        (1..=43).collect::<Vec<_>>(),
        "one row per pattern, in order"
    );
    let supported: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[4].ends_with(".cm`") && !r[3].contains("not supported"))
        .collect();
    let unsupported: Vec<&str> = rows
        .iter()
        .filter(|r| r[3].contains("not supported"))
        .map(|r| r[1])
        .collect();
    assert_eq!(unsupported, ["38"], "only WCP-38 is not supported");
    assert_eq!(supported.len() + unsupported.len(), rows.len());
    let claim = format!("{} of {} are supported", supported.len(), rows.len());
    assert_eq!(claim, "42 of 43 are supported");
    assert!(
        doc.replace('\n', " ").contains(&claim),
        "the page says how many it supports: `{claim}`"
    );
}

/// An inner run as the CLI shows it (its end's fields at the top), its trace included.
fn shown(r: &cameleon::ops::InnerRun) -> serde_json::Value {
    let mut j = serde_json::to_value(r.end()).unwrap();
    j["net"] = r.net().into();
    if let Some(i) = r.item() {
        j["item"] = i.into();
    }
    j["steps"] = r.steps().into();
    j["firings"] = r.firings().into();
    j["trace"] = r.with_cvm(Cvm::trace_lines).unwrap_or_default().into();
    j
}
