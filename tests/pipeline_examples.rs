//! The example pipelines built with `pipeline!` (`examples/*.rs`): each is the net its
//! declarations describe, runs to completion with the expected results, runs to the same trace
//! every time, and round-trips through `.cm` to an equal net with the same trace.

#[allow(dead_code)] // the examples' `main`s are not called here
#[path = "../examples/text_pipeline.rs"]
mod text_pipeline;

#[allow(dead_code)]
#[path = "../examples/fork_join.rs"]
mod fork_join;

#[allow(dead_code)]
#[path = "../examples/count_loop.rs"]
mod count_loop;

#[allow(dead_code)]
#[path = "../examples/rag.rs"]
mod rag;

use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
use cameleon::prelude::*;
use serde_json::json;

/// An example pipeline: its name and the function building it.
type Example = (&'static str, fn() -> Net);

/// Every example pipeline.
fn examples() -> Vec<Example> {
    vec![
        ("text_pipeline", text_pipeline::net),
        ("fork_join", fork_join::net),
        ("count_loop", count_loop::net),
    ]
}

/// Runs `net` to its end; the trace lists each step's firings and what each wrote, as text.
/// An engine for `net` with the offline default capabilities (what `cameleon run` gives a net
/// with no `cameleon.yaml`): the models of `rag` are the `extractive`, `hash` and `flat` ones.
fn engine(net: Net) -> Cvm {
    cameleon::capabilities::Runtime::default()
        .cvm(net, ".")
        .build()
}

fn run_trace(net: Net) -> (EndState, Vec<String>) {
    let mut cvm = engine(net);
    let end = cvm
        .run()
        .expect("the example runs without an operator error");
    let mut trace = Vec::new();
    for entry in cvm.history().entries() {
        for f in &entry.firings {
            let mut line = format!("{} {}", entry.step, cvm.net().op(f.op).name);
            for (conn, token) in &f.written {
                let value = cvm.token(*token).map(|t| t.value.to_json());
                let conn = &cvm.net().connections()[conn.index()].name;
                line.push_str(&format!(" | {conn} = {}", value.unwrap_or_default()));
            }
            trace.push(line);
        }
    }
    (end, trace)
}

#[test]
fn every_example_pipeline_runs_to_completion() {
    for (name, net) in examples() {
        let (end, trace) = run_trace(net());
        assert_eq!(end, EndState::Completed, "{name}");
        assert!(!trace.is_empty(), "{name} fired nothing");
    }
}

#[test]
fn every_example_pipeline_runs_to_the_same_trace_twice() {
    for (name, net) in examples() {
        assert_eq!(run_trace(net()), run_trace(net()), "{name}");
    }
}

#[test]
fn every_example_pipeline_round_trips_through_cm_byte_for_byte() {
    for (name, net) in examples() {
        let built = net();
        let text = built.to_cm();
        let loaded = Net::from_cm(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(loaded.to_cm(), text, "{name}: writing the loaded net again");
        assert_eq!(loaded, built, "{name}: the loaded net is the built one");
        assert_eq!(run_trace(loaded), run_trace(net()), "{name}: same trace");
    }
}

#[test]
fn a_pipeline_equals_the_net_its_hand_written_cm_file_loads() {
    use cameleon::ops::{Barrier, Fork, Format, Join, Source, Transform};

    // `examples/fork_join.cm`, written by hand (comments, no layout), in `pipeline!`.
    let net = pipeline! {
        name = "fork-join";
        let word = Source::new("Caméléon");
        let copy = Fork::new(3).expect("arity 3");
        let pair = Format { separator: " & ".into() };
        let status = Const::new(json!({"ready": true}));
        let text = Transform::new();
        let sync = Barrier::default();
        let both = Join::default();
        let joined = Sink::new();
        let statuses = Sink::new();
        word.out_data -> copy.in_data;
        copy.out_a -> pair.in_main;
        copy.out_b -> pair.in_meta;
        status.out_data -> text.in_data;
        copy.out_c -> sync.in_a;
        text.out_data -> sync.in_b;
        pair.out_data -> both.in_a;
        sync.out_a -> both.in_b;
        both.out_data -> joined.in_data;
        sync.out_b -> statuses.in_data;
    };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fork_join.cm");
    let file = std::fs::read_to_string(path).expect("examples/fork_join.cm");
    let loaded = Net::from_cm(&file).expect("the example loads");
    assert_eq!(net, loaded);
    assert_eq!(run_trace(net), run_trace(loaded));
}

/// `examples/rag.rs` is not in [`examples`]: its document is read relative to `examples/`, so
/// its `.cm` form loads with that folder as base (as the command line loads `rag.cm`).
#[test]
fn rag_is_the_net_of_its_cm_file_and_answers_by_quoting_the_document() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rag.cm");
    let loaded = Net::from_cm_file(path).expect("the example loads");
    assert_eq!(rag::net(), loaded);
    let written = rag::net().to_cm();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let reloaded = cameleon::cm::Loader::new()
        .base_dir(dir)
        .load_str(&written)
        .expect("its .cm form loads");
    assert_eq!(reloaded.to_cm(), written, "the written form is canonical");

    let (end, trace) = run_trace(rag::net());
    assert_eq!(end, EndState::Completed);
    assert_eq!(
        run_trace(loaded),
        (end, trace.clone()),
        "same trace from the .cm file"
    );
    assert_eq!(run_trace(rag::net()).1, trace, "same trace every time");
    let answer = trace.last().expect("the sink fired");
    let mut cvm = engine(rag::net());
    cvm.run().unwrap();
    let answer_value = cvm.received("out")[0].to_json();
    assert!(
        answer_value.as_str().unwrap().starts_with(
            "Chameleons change colour mainly to signal their mood to other chameleons and to \
             regulate their body temperature."
        ),
        "{answer}"
    );
}

#[test]
fn count_loop_is_the_net_its_declarations_describe() {
    let mut b = Net::builder("count-loop");
    b.config(cameleon::net::NetConfig {
        max_loop_iterations: 100,
        ..Default::default()
    });
    b.add("zero", Const::new(json!(0))).at(40.0, 100.0);
    b.add("entry", Merge::<DataJSON>::default())
        .at(200.0, 100.0)
        .label("Loop entry");
    b.add("inc", Counter::new()).at(360.0, 100.0);
    b.add("check", Guard::<DataJSON>::new(Test::Lt(json!(5))))
        .at(520.0, 100.0);
    b.add("done", Sink::new()).at(680.0, 100.0);
    b.connect("zero.out_data", "entry.in_a");
    b.connect("entry.out_data", "inc.in_data");
    b.connect("inc.out_data", "check.in_data");
    b.connect("check.out_continue", "entry.in_b");
    b.connect("check.out_exit", "done.in_data");
    assert_eq!(count_loop::net(), b.build().unwrap());
}

#[test]
fn example_results_are_what_the_pipelines_compute() {
    let mut cvm = Cvm::new(count_loop::net());
    cvm.run().unwrap();
    assert_eq!(cvm.received("done")[0].to_json(), json!(5));

    let mut cvm = Cvm::new(fork_join::net());
    cvm.run().unwrap();
    assert_eq!(cvm.received("flag")[0].to_json(), json!(true));
    let joined = cvm.received("out")[0].to_json();
    let chunks: Vec<String> = serde_json::from_str(joined.as_str().unwrap()).unwrap();
    assert_eq!(
        chunks.concat(),
        "Connections are places and operators are transitions of a Petri net."
    );

    let mut cvm = Cvm::new(text_pipeline::net());
    cvm.run().unwrap();
    let text = cvm.received("out")[0].to_json();
    let chunks: Vec<String> = serde_json::from_str(text.as_str().unwrap()).unwrap();
    assert!(chunks.iter().all(|c| c.chars().count() <= 48));
    assert!(chunks.len() > 1);
}
