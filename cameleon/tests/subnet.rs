//! One test per rule of docs/semantics.md §10.1–§10.3 (sub-nets and `map`), named after the
//! rule. The inner nets are in `tests/subnets/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use cameleon::cm::{CmProblemKind, Loader};
use cameleon::operator::PortSpec;
use cameleon::ops::{Map, Subnet, inner_runs};
use cameleon::prelude::*;
use serde_json::json;

/// Counts its firings and compensations, process-wide (tests that read the counters hold
/// [`counting`]).
static RUNS: AtomicUsize = AtomicUsize::new(0);
static UNDONE: AtomicUsize = AtomicUsize::new(0);
static COUNTING: Mutex<()> = Mutex::new(());

fn counting() -> MutexGuard<'static, ()> {
    let g = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    RUNS.store(0, Ordering::SeqCst);
    UNDONE.store(0, Ordering::SeqCst);
    g
}

/// Passes its input on and counts the firing; its compensation counts the undo.
#[operator(id = "test_counting", label = "Counting", exec = inline)]
#[derive(Debug, Default)]
pub struct Counting {
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for Counting {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        let v = cx.get(Self::in_data)?.clone();
        cx.emit(Self::out_data, v);
        Ok(())
    }
    fn rollback(&mut self, _emitted: &Emitted<'_, Self>) {
        UNDONE.fetch_add(1, Ordering::SeqCst);
    }
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/subnets")
}

/// Loads `text` as if it were a file in `tests/subnets/` (so `net:` paths are relative there).
fn load(text: &str) -> Result<Net, cameleon::cm::CmError> {
    Loader::new()
        .base_dir(dir())
        .file_name("outer.cm")
        .load_str(text)
}

fn outer(sub: &str, value: &str) -> String {
    format!(
        "
name: outer
operators:
  - {{id: v, type: const, params: {{value: {value}}}}}
  - {{id: sub, type: subnet, params: {{net: {sub}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: v.out_data, to: sub.in_x}}
  - {{from: sub.out_y, to: out.in_data}}
"
    )
}

fn got(cvm: &Cvm, sink: &str) -> Vec<serde_json::Value> {
    cvm.received(sink).iter().map(|v| v.to_json()).collect()
}

fn subnet_of<'c>(cvm: &'c Cvm, name: &str) -> &'c Subnet {
    let id = cvm.net().op_id(name).unwrap();
    cvm.net().op(id).downcast_ref::<Subnet>().unwrap()
}

// ---------------------------------------------------------------------------------------------
// §10.1 The boundary

#[test]
fn subnet_ports_are_the_inner_boundary_typed_from_the_inner_connections() {
    let net = load(&outer("counted.cm", "1")).unwrap();
    let sub = &net.operators()[1];
    let ports = |ps: &[PortSpec]| -> Vec<(String, String)> {
        ps.iter()
            .map(|p| (p.name.to_string(), p.ty.display_name().into_owned()))
            .collect()
    };
    assert_eq!(
        ports(&sub.spec.inputs),
        [("in_x".into(), "DataJSON".into())]
    );
    assert_eq!(
        ports(&sub.spec.outputs),
        [("out_y".into(), "DataJSON".into())]
    );
}

#[test]
fn a_type_mismatch_on_a_subnet_port_names_the_inner_operator_and_both_types() {
    let text = "
operators:
  - {id: v, type: source, params: {value: one}}
  - {id: sub, type: subnet, params: {net: counted.cm}}
  - {id: out, type: sink}
connections:
  - {from: v.out_data, to: sub.in_x}
  - {from: sub.out_y, to: out.in_data}
";
    let e = load(text).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(
        p.kind,
        CmProblemKind::Net(cameleon::net::ProblemKind::TypeMismatch)
    );
    assert_eq!((p.line, p.column), (7, 6), "at the connection");
    assert!(
        p.message
            .contains("`v.out_data` gives DataString, but `sub.in_x` expects DataJSON"),
        "{}",
        p.message
    );
    assert!(
        p.message.contains(
            "`in_x` is typed by `input` `x` of sub-net `counted.cm`, which feeds `count.in_data`"
        ),
        "{}",
        p.message
    );
}

#[test]
fn an_input_runs_on_its_own_with_its_value_and_fails_without() {
    let _g = counting();
    let alone = Net::from_cm(
        "
operators:
  - {id: x, type: input, params: {name: x, value: 41}}
  - {id: inc, type: counter}
  - {id: y, type: output, params: {name: y}}
connections:
  - {from: x.out_data, to: inc.in_data}
  - {from: inc.out_data, to: y.in_data}
",
    )
    .unwrap();
    let mut cvm = Cvm::new(alone);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "y"), [json!(42)]);

    let net = Net::from_cm(&std::fs::read_to_string(dir().join("counted.cm")).unwrap()).unwrap();
    let mut cvm = Cvm::new(net);
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "x");
            assert!(
                error.contains("received no value: this net is a sub-net"),
                "{error}"
            );
        }
        other => panic!("{other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// §10.2 Sub-nets

#[test]
fn a_subnet_firing_runs_the_inner_net_to_its_end() {
    let _g = counting();
    let mut cvm = Cvm::new(load(&outer("counted.cm", "41")).unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!(42)]);
    assert_eq!(cvm.depth(), 3, "one outer step for the whole inner run");
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    let runs = subnet_of(&cvm, "sub").runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0][0].end(), &EndState::Completed);
    assert_eq!(runs[0][0].steps(), 4);
}

#[test]
fn the_inner_history_is_kept_and_viewable() {
    let _g = counting();
    let mut cvm = Cvm::new(load(&outer("counted.cm", "1")).unwrap());
    cvm.run().unwrap();
    let run = &subnet_of(&cvm, "sub").runs()[0][0];
    assert_eq!(run.net(), "counted");
    let ops: Vec<String> = run
        .with_cvm(|inner| {
            inner
                .history()
                .entries()
                .iter()
                .map(|e| inner.net().op(e.firings[0].op).name.clone())
                .collect()
        })
        .unwrap();
    assert_eq!(ops, ["x", "count", "inc", "y"]);
    let trace = run.with_cvm(Cvm::trace_lines).unwrap();
    assert_eq!(trace.len(), 4);
    assert_eq!(trace[2]["op"], "inc");
    assert_eq!(trace[2]["emitted"][0]["value"], json!(2));
    assert_eq!(run.received("y")[0].to_json(), json!(2));
    // Through the helper the CLI uses, too.
    let node = cvm.net().op(cvm.net().op_id("sub").unwrap());
    assert_eq!(inner_runs(node).unwrap()[0].len(), 1);
}

#[test]
fn an_inner_deadlock_fails_the_firing_clearly() {
    let mut cvm = Cvm::new(load(&outer("stuck.cm", "1")).unwrap());
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "sub");
            assert!(
                error.starts_with("sub-net `stuck.cm` ended in DEADLOCK"),
                "{error}"
            );
            assert!(error.contains("`j` waits on input `in_b`"), "{error}");
        }
        other => panic!("{other}"),
    }
    // Nothing of the failed firing was applied.
    assert_eq!(
        cvm.state_of("v.out_data -> sub.in_x").unwrap().state,
        ConnState::New
    );
    assert!(subnet_of(&cvm, "sub").runs().is_empty());
}

#[test]
fn an_inner_error_fails_the_firing_clearly() {
    let text = "
operators:
  - {id: v, type: source, params: {value: '{not json'}}
  - {id: sub, type: subnet, params: {net: broken_json.cm}}
  - {id: out, type: sink}
connections:
  - {from: v.out_data, to: sub.in_x}
  - {from: sub.out_y, to: out.in_data}
";
    let mut cvm = Cvm::new(load(text).unwrap());
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "sub");
            assert!(
                error.starts_with("sub-net `broken_json.cm` failed: `parse` failed: invalid JSON"),
                "{error}"
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn back_undoes_the_whole_inner_run_and_replay_does_not_run_it_again() {
    let _g = counting();
    let mut cvm = Cvm::new(load(&outer("counted.cm", "1")).unwrap());
    cvm.step().unwrap(); // v
    cvm.step().unwrap(); // sub: the inner run
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    let run = subnet_of(&cvm, "sub").runs()[0][0].clone();
    assert_eq!(run.with_cvm(|c| c.depth()), Some(4));

    cvm.back().unwrap();
    // The inner run is undone whole: its operators' compensations ran, its engine is rewound,
    // and the sub-net's record of it is gone.
    assert_eq!(UNDONE.load(Ordering::SeqCst), 1);
    assert_eq!(run.with_cvm(|c| c.depth()), Some(0));
    assert!(subnet_of(&cvm, "sub").runs().is_empty());
    assert_eq!(
        cvm.state_of("v.out_data -> sub.in_x").unwrap().state,
        ConnState::New
    );

    // Forward again: replayed, not re-run.
    assert!(matches!(
        cvm.step().unwrap(),
        Step::Fired { replayed: true, .. }
    ));
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
    assert_eq!(run.with_cvm(|c| c.depth()), Some(4));
    assert_eq!(subnet_of(&cvm, "sub").runs().len(), 1);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!(2)]);
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[test]
fn recursion_nests_the_subnet_within_its_depth_limit() {
    let text = "
operators:
  - {id: v, type: const, params: {value: 0}}
  - {id: up, type: subnet, params: {net: count_up.cm, max_depth: 10}}
  - {id: out, type: sink}
connections:
  - {from: v.out_data, to: up.in_n}
  - {from: up.out_result, to: out.in_data}
";
    let mut cvm = Cvm::new(load(text).unwrap());
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!(3)]);
    // Three levels below the top one: 0 → 1 → 2 → 3.
    let run = &subnet_of(&cvm, "up").runs()[0][0];
    let nested = run
        .with_cvm(|c| subnet_of(c, "deeper").runs().len())
        .unwrap();
    assert_eq!(nested, 1);
}

#[test]
fn a_recursion_past_its_depth_limit_fails_clearly() {
    let text = "
operators:
  - {id: v, type: const, params: {value: 0}}
  - {id: deep, type: subnet, params: {net: runaway.cm}}
  - {id: out, type: sink}
connections:
  - {from: v.out_data, to: deep.in_n}
  - {from: deep.out_result, to: out.in_data}
";
    let mut cvm = Cvm::new(load(text).unwrap());
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "deep");
            assert!(
                error.contains(
                    "sub-net `runaway.cm` is nested 6 deep, deeper than its max_depth of 5"
                ),
                "{error}"
            );
        }
        other => panic!("{other}"),
    }
}

// Bad input: clear errors at the `net:` param (the CLI exits 2 on them).

#[test]
fn a_missing_subnet_file_is_an_error_at_its_net_param() {
    let e = load(&outer("nowhere.cm", "1")).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.kind, CmProblemKind::Param);
    assert_eq!(p.line, 5);
    assert!(
        p.message
            .starts_with("`sub` (subnet): sub-net file `nowhere.cm` cannot be read"),
        "{}",
        p.message
    );
    assert_eq!(
        p.hint.as_deref(),
        Some("the path is relative to the folder of the .cm file that names it")
    );
    // Connections to the sub-net's ports are not reported again.
    assert_eq!(e.problems().len(), 1, "{e}");
}

#[test]
fn a_subnet_without_boundary_is_rejected() {
    let e = load(&outer("no_boundary.cm", "1")).unwrap_err();
    assert!(
        e.problems()[0].message.contains(
            "sub-net `no_boundary.cm` has no boundary: it has no `input` and no `output` operator"
        ),
        "{e}"
    );
}

#[test]
fn colliding_boundary_names_are_rejected() {
    let e = load(&outer("collide.cm", "1")).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("sub-net `collide.cm` has two `input` operators named `x` (`a` and `b`)"),
        "{e}"
    );
}

#[test]
fn a_subnet_including_itself_without_a_depth_limit_is_rejected() {
    // Reported in the file that includes itself, at its `net:` param (nested in the outer
    // file's problem here, since the outer file names it).
    let e = load(&outer("itself.cm", "1")).unwrap_err();
    let m = &e.problems()[0].message;
    assert!(
        m.contains("itself.cm:5:40: `again` (subnet): sub-net `itself.cm` includes itself (itself.cm → itself.cm) without a depth limit"),
        "{m}"
    );
    assert!(m.contains("give this `subnet` a `max_depth`"), "{m}");
}

#[test]
fn an_invalid_subnet_file_reports_its_own_problems() {
    let e = load(&outer("../subnet.rs", "1")).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("leaves the pipeline's folder"),
        "{e}"
    );
    let tmp = test_support::TempDir::new("subnet-bad-inner");
    tmp.write("bad_inner.cm", "operators:\n  - {id: x, type: inptu}\n");
    let e = Loader::new()
        .base_dir(tmp.path())
        .load_str(&outer("bad_inner.cm", "1"))
        .unwrap_err();
    let m = &e.problems()[0].message;
    assert!(
        m.contains("sub-net `bad_inner.cm` is not a valid net"),
        "{m}"
    );
    assert!(
        m.contains("bad_inner.cm:2:19: unknown operator type `inptu`"),
        "{m}"
    );
}

#[test]
fn a_subnet_built_in_code_checks_its_boundary_against_a_declared_one() {
    cameleon::boundary! {
        /// Wrongly typed on purpose.
        struct Wrong {
            inputs { in_x: DataString }
            outputs { out_y: DataJSON }
        }
    }
    cameleon::boundary! {
        struct Right {
            inputs { in_x: DataJSON }
            outputs { out_y: DataJSON }
        }
    }
    let inner = || Loader::new().load_file(dir().join("counted.cm")).unwrap();
    let e = Subnet::<Wrong>::typed(inner()).unwrap_err();
    assert!(
        e.0.contains("`in_x` is DataJSON but boundary `Wrong` declares DataString"),
        "{e}"
    );
    assert!(e.0.contains("typed by `input` `x`"), "{e}");
    assert!(Subnet::<Right>::typed(inner()).is_ok());
}

// ---------------------------------------------------------------------------------------------
// §10.3 Map

fn map_net(items: &str, extra: &str, error: bool) -> Net {
    let mut text = format!(
        "
name: mapping
operators:
  - {{id: items, type: const, params: {{value: {items}}}}}
  - {{id: each, type: map, params: {{net: items.cm{extra}}}}}
  - {{id: out, type: sink}}
"
    );
    if error {
        text.push_str("  - {id: failed, type: sink}\n");
    }
    text.push_str(
        "connections:
  - {from: items.out_data, to: each.in_items}
  - {from: each.out_results, to: out.in_data}
",
    );
    if error {
        text.push_str("  - {from: each.error, to: failed.in_data}\n");
    }
    load(&text).unwrap()
}

fn map_of(cvm: &Cvm) -> &Map {
    let id = cvm.net().op_id("each").unwrap();
    cvm.net().op(id).downcast_ref::<Map>().unwrap()
}

#[test]
fn map_runs_the_inner_net_once_per_item_and_keeps_item_order() {
    let _g = counting();
    for mode in [Mode::Sequential, Mode::Parallel] {
        RUNS.store(0, Ordering::SeqCst);
        let mut cvm = Cvm::builder(map_net("[1, 2, 3, 4, 5, 6, 7]", "", false))
            .mode(mode)
            .build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed);
        assert_eq!(got(&cvm, "out"), [json!([2, 3, 4, 5, 6, 7, 8])], "{mode}");
        assert_eq!(RUNS.load(Ordering::SeqCst), 7);
        let batch = &map_of(&cvm).runs()[0];
        let items: Vec<Option<usize>> = batch.iter().map(|r| r.item()).collect();
        assert_eq!(items, (0..7).map(Some).collect::<Vec<_>>());
    }
}

#[test]
fn map_of_an_empty_list_emits_an_empty_list() {
    let _g = counting();
    let mut cvm = Cvm::new(map_net("[]", "", false));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!([])]);
}

#[test]
fn map_fails_fast_at_the_first_failed_item_without_an_error_output() {
    let _g = counting();
    // One item after the other (sequential mode): nothing after the failed item runs.
    let mut cvm = Cvm::new(map_net("[1, \"two\", 3, \"four\"]", "", false));
    assert!(matches!(cvm.run().unwrap(), EndState::Error { .. }));
    assert_eq!(RUNS.load(Ordering::SeqCst), 2, "items 2 and 3 never ran");
    let mut cvm = Cvm::builder(map_net(
        "[1, \"two\", 3, \"four\"]",
        ", concurrency: 2",
        false,
    ))
    .mode(Mode::Parallel)
    .build();
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "each");
            assert!(
                error.starts_with("item 1 failed: sub-net `items.cm` failed"),
                "{error}"
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn map_with_error_connected_runs_every_item_and_lists_the_failed_ones() {
    let _g = counting();
    let mut cvm = Cvm::builder(map_net("[1, \"two\", 3, \"four\"]", "", true))
        .mode(Mode::Parallel)
        .build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!([2, null, 4, null])]);
    let failed = got(&cvm, "failed");
    assert_eq!(failed[0]["operator"], "each");
    let message = failed[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("2 of 4 items failed: item 1: "),
        "{message}"
    );
    assert!(message.contains("; item 3: "), "{message}");
    // The failed items' runs are kept too, with how they ended.
    let batch = &map_of(&cvm).runs()[0];
    assert_eq!(batch.len(), 4);
    assert_eq!(batch[1].end().name(), "ERROR");
}

/// Passes on the first value it receives; any later firing of the same instance emits
/// `"leaked"`: state an instance kept from an earlier run.
#[operator(id = "test_first_only", label = "First only", exec = inline)]
#[derive(Debug, Default)]
pub struct FirstOnly {
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
    fired: bool,
}

impl Run for FirstOnly {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = if self.fired {
            DataJSON(json!("leaked"))
        } else {
            cx.get(Self::in_data)?.clone()
        };
        self.fired = true;
        cx.emit(Self::out_data, v);
        Ok(())
    }
}

#[test]
fn map_items_start_from_fresh_operators_and_an_initial_marking() {
    // Each item runs on its own instance of the inner net: an operator's state, the tokens
    // and the operators' fire counts of one item never reach the next (the engines of the
    // items share only the net's immutable tables).
    let inner = || {
        Net::from_cm(
            "
name: first
config: {max_loop_iterations: 1}
operators:
  - {id: item, type: input, params: {name: item}}
  - {id: once, type: test_first_only}
  - {id: result, type: output, params: {name: result}}
connections:
  - {from: item.out_data, to: once.in_data}
  - {from: once.out_data, to: result.in_data}
",
        )
        .unwrap()
    };
    for mode in [Mode::Sequential, Mode::Parallel] {
        let mut b = Net::builder("outer");
        b.add("items", cameleon::ops::Const::new(json!([1, 2, 3])));
        b.add("each", Map::new(inner()).unwrap().concurrency(2));
        b.add("out", cameleon::ops::Sink::new());
        b.connect("items.out_data", "each.in_items")
            .connect("each.out_results", "out.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode}");
        assert_eq!(got(&cvm, "out"), [json!([1, 2, 3])], "{mode}");
        let runs = &map_of_named(&cvm, "each").runs()[0];
        for (i, run) in runs.iter().enumerate() {
            assert_eq!(run.steps(), 3, "item {i}, {mode}");
            assert_eq!(run.received("result").len(), 1, "item {i}, {mode}");
        }
    }
}

fn map_of_named<'c>(cvm: &'c Cvm, name: &str) -> &'c Map {
    let id = cvm.net().op_id(name).unwrap();
    cvm.net().op(id).downcast_ref::<Map>().unwrap()
}

#[test]
fn map_results_and_runs_never_depend_on_timing() {
    let _g = counting();
    let render = |cvm: &Cvm| -> String {
        let runs: Vec<serde_json::Value> = map_of(cvm).runs()[0].iter().map(|r| shown(r)).collect();
        format!("{:?} {}", got(cvm, "out"), serde_json::Value::Array(runs))
    };
    let mut first = None;
    for concurrency in [1, 2, 3, 8] {
        let extra = format!(", concurrency: {concurrency}, quorum: 5");
        let mut cvm = Cvm::builder(map_net("[1, 2, \"x\", 4, 5, 6, 7, 8, 9]", &extra, true))
            .mode(Mode::Parallel)
            .build();
        cvm.run().unwrap();
        let r = render(&cvm);
        match &first {
            None => first = Some(r),
            Some(f) => assert_eq!(&r, f, "concurrency {concurrency}"),
        }
    }
}

#[test]
fn map_with_a_quorum_stops_at_the_quorums_item_and_cancels_the_rest() {
    let _g = counting();
    let mut cvm = Cvm::new(map_net("[1, 2, 3, 4, 5]", ", quorum: 2", false));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(got(&cvm, "out"), [json!([2, 3])]);
    assert_eq!(
        RUNS.load(Ordering::SeqCst),
        2,
        "items after the quorum never ran"
    );
    // With `cancel_rest: false` they run, their results left out.
    RUNS.store(0, Ordering::SeqCst);
    let mut cvm = Cvm::new(map_net(
        "[1, 2, 3, 4, 5]",
        ", quorum: 2, cancel_rest: false",
        false,
    ));
    cvm.run().unwrap();
    assert_eq!(got(&cvm, "out"), [json!([2, 3])]);
    assert_eq!(RUNS.load(Ordering::SeqCst), 5);
    assert_eq!(map_of(&cvm).runs()[0].len(), 5);
}

#[test]
fn map_rejects_a_net_without_one_input_and_one_output() {
    let e = load(
        "
operators:
  - {id: items, type: const, params: {value: [1]}}
  - {id: each, type: map, params: {net: collide.cm}}
  - {id: out, type: sink}
connections:
  - {from: items.out_data, to: each.in_items}
  - {from: each.out_results, to: out.in_data}
",
    )
    .unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("has two `input` operators named `x`")
            || e.problems()[0]
                .message
                .contains("has one `input` and one `output`"),
        "{e}"
    );
}

#[test]
fn map_input_must_be_a_json_array() {
    let _g = counting();
    let mut cvm = Cvm::new(map_net("{a: 1}", "", false));
    match cvm.run().unwrap() {
        EndState::Error { error, .. } => {
            assert_eq!(error, "`in_items` must be a JSON array, not an object")
        }
        other => panic!("{other}"),
    }
}

#[test]
fn back_over_a_map_rewinds_every_item_run_and_replays_none() {
    let _g = counting();
    let mut cvm = Cvm::new(map_net("[1, 2, 3]", "", false));
    cvm.step().unwrap(); // items
    cvm.step().unwrap(); // each
    assert_eq!(RUNS.load(Ordering::SeqCst), 3);
    cvm.back().unwrap();
    assert_eq!(UNDONE.load(Ordering::SeqCst), 3);
    assert!(map_of(&cvm).runs().is_empty());
    cvm.step().unwrap();
    assert_eq!(RUNS.load(Ordering::SeqCst), 3, "replayed, not re-run");
    assert_eq!(map_of(&cvm).runs()[0].len(), 3);
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

/// The run id and idempotency key of every firing of [`Keyed`], with the value it passed on.
static KEYS: Mutex<Vec<(serde_json::Value, String, String)>> = Mutex::new(Vec::new());

/// Passes its input on and notes its firing's run id and idempotency key.
#[operator(id = "test_keyed", label = "Keyed", exec = inline)]
#[derive(Debug, Default)]
pub struct Keyed {
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for Keyed {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = cx.get(Self::in_data)?.clone();
        let noted = (v.0.clone(), cx.run_id().to_owned(), cx.idempotency_key());
        KEYS.lock().unwrap_or_else(|e| e.into_inner()).push(noted);
        cx.emit(Self::out_data, v);
        Ok(())
    }
}

#[test]
fn map_items_run_under_ids_of_their_own_which_their_kept_runs_keep() {
    // An effect outside the net deduplicates by the idempotency key: two items must never
    // share one, even when they run one after the other on one worker.
    let _g = counting();
    let inner = || {
        Net::from_cm(
            "
name: keyed
operators:
  - {id: item, type: input, params: {name: item}}
  - {id: key, type: test_keyed}
  - {id: result, type: output, params: {name: result}}
connections:
  - {from: item.out_data, to: key.in_data}
  - {from: key.out_data, to: result.in_data}
",
        )
        .unwrap()
    };
    for mode in [Mode::Sequential, Mode::Parallel] {
        KEYS.lock().unwrap().clear();
        let mut b = Net::builder("outer");
        b.add("items", cameleon::ops::Const::new(json!([0, 1, 2, 3, 4])));
        b.add("each", Map::new(inner()).unwrap().concurrency(2));
        b.add("out", cameleon::ops::Sink::new());
        b.connect("items.out_data", "each.in_items")
            .connect("each.out_results", "out.in_data");
        let mut cvm = Cvm::builder(b.build().unwrap()).mode(mode).build();
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{mode}");
        let noted = KEYS.lock().unwrap().clone();
        assert_eq!(noted.len(), 5, "{mode}");
        let mut keys: Vec<&String> = noted.iter().map(|n| &n.2).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 5, "one key per item, {mode}: {noted:?}");
        for run in &map_of_named(&cvm, "each").runs()[0] {
            let item = run.item().unwrap();
            let (_, id, _) = noted.iter().find(|n| n.0 == json!(item)).unwrap();
            assert_eq!(run.with_cvm(|c| c.run_id().to_owned()).as_ref(), Some(id));
        }
    }
}

#[test]
fn a_map_items_kept_run_is_the_engine_its_run_left() {
    // The same inner net on the same value, as a sub-net firing (which keeps the engine it ran
    // on) and as a map item (which keeps what its run left, and rebuilds the engine from it).
    let _g = counting();
    let sub = load(
        "
operators:
  - {id: v, type: const, params: {value: 5}}
  - {id: sub, type: subnet, params: {net: items.cm}}
  - {id: out, type: sink}
connections:
  - {from: v.out_data, to: sub.in_item}
  - {from: sub.out_result, to: out.in_data}
",
    )
    .unwrap();
    let mut by_subnet = Cvm::new(sub);
    by_subnet.run().unwrap();
    let mut by_map = Cvm::new(map_net("[4, 5]", "", false));
    by_map.run().unwrap();
    let a = subnet_of(&by_subnet, "sub").runs()[0][0].clone();
    let b = map_of(&by_map).runs()[0][1].clone();
    let seen = |r: &cameleon::ops::InnerRun| {
        r.with_cvm(|c| {
            let counts: Vec<u32> = (0..c.net().operators().len())
                .map(|o| c.fire_count(OpId(o as u32)))
                .collect();
            let marking: Vec<(ConnState, Option<serde_json::Value>)> = c
                .marking()
                .0
                .iter()
                .map(|(s, t)| (*s, t.as_ref().map(|t| t.value.to_json())))
                .collect();
            (
                c.trace_lines(),
                marking,
                counts,
                c.depth(),
                c.received("result").len(),
            )
        })
        .unwrap()
    };
    assert_eq!(seen(&a), seen(&b));
    assert_eq!((a.steps(), a.firings()), (b.steps(), b.firings()));
    // Undone the same way: each inner operator's compensation runs.
    let undone = UNDONE.load(Ordering::SeqCst);
    by_map.back().unwrap(); // out
    by_map.back().unwrap(); // each
    assert_eq!(
        UNDONE.load(Ordering::SeqCst),
        undone + 2,
        "both items undone"
    );
    assert_eq!(b.with_cvm(|c| c.depth()), Some(0));
}
