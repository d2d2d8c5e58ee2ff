//! A driver for instruction counts: builds one benchmark's net, then runs it once, so that
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*Cvm*run*'` counts the
//! instructions of the run alone (the nets are the ones of `benches/engine.rs`, `map.rs` and
//! `journal.rs`).
//!
//! `cargo build --profile bench -p cameleon --example engine_probe`, then
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*Cvm*run*' \
//!   target/release/examples/engine_probe chain_10000`
//! (scenarios: `chain_10000`, `loop_1000`, `map_1000`, `one_net_1000`, `journal_chain_1000`;
//! journaled in `batch` mode: `journal_chain_1000_batch`, `journal_loop_1000_batch`, with
//! `--separate-threads=yes` to count the flusher thread apart). Add
//! `--toggle-collect='*writer*flusher*'` to count the flusher thread's work too: the run's cost
//! on both threads, whichever thread happened to commit the rows (under valgrind the flusher
//! often gets no turn before the run ends, and the engine commits them all).

use std::hint::black_box;

use cameleon::ops::{Const, Counter, Guard, Map, Merge, Sink, Source, Test};
use cameleon::prelude::*;
use serde_json::json;

/// The trivial structural operator of `benches/engine.rs`.
struct Pass;

impl Operator for Pass {
    fn spec(&self) -> OpSpec {
        OpSpec::new("pass", "Pass", Family::Structural, Policy::Any)
            .input("in_data", TypeRef::Var(0))
            .output("out_data", TypeRef::Var(0))
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = cx.value_at(0).ok_or("no input")?.clone();
        cx.emit_at(0, v);
        Ok(())
    }
}

/// The trivial operator of `benches/journal.rs` (written with the macro).
#[operator(id = "bench_pass", family = structural)]
pub struct MacroPass {
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataString>,
}

impl Run for MacroPass {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
}

fn chain(n: usize) -> Net {
    let mut b = Net::builder("chain");
    b.add("src", Source::new("payload"));
    let mut prev = "src.out_data".to_owned();
    for i in 0..n {
        b.add(format!("p{i}"), Pass);
        b.connect(prev, format!("p{i}.in_data"));
        prev = format!("p{i}.out_data");
    }
    b.add("out", Sink::new());
    b.connect(prev, "out.in_data");
    b.build().expect("valid chain")
}

fn macro_chain(n: usize) -> Net {
    let mut cm =
        String::from("operators:\n  - {id: src, type: source, params: {value: payload}}\n");
    for i in 0..n {
        cm.push_str(&format!("  - {{id: p{i}, type: bench_pass}}\n"));
    }
    cm.push_str("  - {id: out, type: sink}\nconnections:\n");
    let mut prev = "src.out_data".to_owned();
    for i in 0..n {
        cm.push_str(&format!("  - {{from: {prev}, to: p{i}.in_data}}\n"));
        prev = format!("p{i}.out_data");
    }
    cm.push_str(&format!("  - {{from: {prev}, to: out.in_data}}\n"));
    Net::from_cm(&cm).expect("valid chain")
}

fn counter_loop(iterations: i64) -> Net {
    let mut b = Net::builder("loop");
    b.add("zero", Const::new(json!(0)));
    b.add("m", Merge::<Any>::default());
    b.add("inc", Counter::new());
    b.add(
        "g",
        Guard::<Any>::new(Test::parse(&json!({"lt": iterations})).unwrap()),
    );
    b.add("out", Sink::new());
    b.connect("zero.out_data", "m.in_a");
    b.connect("m.out_data", "inc.in_data");
    b.connect("inc.out_data", "g.in_data");
    b.connect("g.out_continue", "m.in_b");
    b.connect("g.out_exit", "out.in_data");
    b.build().expect("valid loop")
}

fn trivial() -> Net {
    Net::from_cm(
        "
name: trivial
operators:
  - {id: item, type: input, params: {name: item}}
  - {id: work, type: counter}
  - {id: result, type: output, params: {name: result}}
connections:
  - {from: item.out_data, to: work.in_data}
  - {from: work.out_data, to: result.in_data}
",
    )
    .expect("a valid inner net")
}

fn map_net(items: usize) -> Net {
    let mut b = Net::builder("map");
    b.add("items", Const::new(json!((0..items).collect::<Vec<_>>())));
    b.add(
        "each",
        Map::new(trivial()).expect("a map's net").concurrency(4),
    );
    b.add("out", Sink::new());
    b.connect("items.out_data", "each.in_items")
        .connect("each.out_results", "out.in_data");
    b.build().expect("a valid net")
}

fn one_net(n: usize) -> Net {
    let mut b = Net::builder("chain");
    b.add("zero", Const::new(json!(0)));
    let mut prev = "zero.out_data".to_owned();
    for i in 0..n {
        b.add(format!("c{i}"), Counter::new());
        b.connect(prev, format!("c{i}.in_data"));
        prev = format!("c{i}.out_data");
    }
    b.add("out", Sink::new());
    b.connect(prev, "out.in_data");
    b.build().expect("a valid chain")
}

fn main() {
    let scenario = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "chain_10000".into());
    let net = match scenario.as_str() {
        "chain_10000" => chain(10_000),
        "loop_1000" => counter_loop(1_000),
        "map_1000" => map_net(1_000),
        "one_net_1000" => one_net(1_000),
        "journal_chain_1000" | "journal_chain_1000_batch" => macro_chain(1_000),
        "journal_loop_1000_batch" => counter_loop(1_000),
        other => {
            eprintln!("unknown scenario {other}");
            std::process::exit(2);
        }
    };
    let mut cvm = Cvm::new(net);
    // The `_batch` scenarios: journaled in `batch` mode (50 ms), as `benches/journal.rs` does, in
    // a journal file of the system's temporary folder (callgrind's `--separate-threads=yes` counts
    // the engine's thread and the flusher's apart).
    let _journal = scenario.ends_with("_batch").then(|| {
        let path = std::env::temp_dir().join(format!("engine-probe-{}.db", std::process::id()));
        let journal = cameleon::journal::Journal::create(&path).expect("a journal");
        let opts = cameleon::journal::RunOptions {
            durability: cameleon::journal::Durability::Batch { ms: 50 },
            ..Default::default()
        };
        journal.start(&mut cvm, &opts).expect("journaled");
        (journal, path)
    });
    black_box(cvm.run().expect("runs"));
    drop(cvm);
    if let Some((journal, path)) = _journal {
        drop(journal);
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
    }
}
