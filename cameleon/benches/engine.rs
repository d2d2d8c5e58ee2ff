//! Engine benchmarks: forward firing cost with history on, chains of 10 and 10 000
//! trivial structural operators beside a hand-written Rust chain doing the same work; a
//! 1 000-iteration merge/counter/guard loop; backward step cost; history bytes per firing.
//!
//! `cargo bench -p cameleon --bench engine`

use std::hint::black_box;
use std::sync::Arc;

use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Source, Test};
use cameleon::prelude::*;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// The trivial structural operator: passes its input's value (a shared reference) through.
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

/// source -> n x pass -> sink: n + 2 firings.
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

/// One stage of the hand-written chain.
type Stage = Box<dyn Fn(Arc<String>) -> Arc<String>>;

/// The same work as `chain(n)` without an engine: n boxed stages passing a shared value.
fn rust_chain(n: usize) -> Vec<Stage> {
    (0..n)
        .map(|_| Box::new(|v: Arc<String>| v) as Stage)
        .collect()
}

fn forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("forward_chain");
    for n in [10usize, 10_000] {
        let firings = n as u64 + 2;
        g.throughput(Throughput::Elements(firings));
        g.bench_with_input(BenchmarkId::new("cvm", n), &n, |b, &n| {
            b.iter_batched_ref(
                || Cvm::new(chain(n)),
                |cvm| black_box(cvm.run().unwrap()),
                BatchSize::LargeInput,
            )
        });
        g.bench_with_input(BenchmarkId::new("rust_fn_chain", n), &n, |b, &n| {
            let stages = rust_chain(n);
            b.iter(|| {
                let mut v = Arc::new(String::from("payload"));
                for s in &stages {
                    v = s(black_box(v));
                }
                black_box(v)
            })
        });
    }
    g.finish();
}

fn backward(c: &mut Criterion) {
    let mut g = c.benchmark_group("backward_chain");
    for n in [10usize, 10_000] {
        g.throughput(Throughput::Elements(n as u64 + 2));
        g.bench_with_input(BenchmarkId::new("cvm", n), &n, |b, &n| {
            b.iter_batched_ref(
                || {
                    let mut cvm = Cvm::new(chain(n));
                    cvm.run().unwrap();
                    cvm
                },
                |cvm| cvm.rewind(),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn loops(c: &mut Criterion) {
    let mut g = c.benchmark_group("merge_counter_guard_loop");
    // 1 000 iterations of merge + counter + guard, plus const and sink.
    g.throughput(Throughput::Elements(3 * 1_000 + 2));
    g.bench_function("cvm_1000_iterations", |b| {
        b.iter_batched_ref(
            || Cvm::new(counter_loop(1_000)),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("rust_loop_1000_iterations", |b| {
        b.iter(|| {
            let mut v = json!(0);
            loop {
                v = json!(v.as_i64().unwrap() + 1);
                if v.as_i64().unwrap() >= black_box(1_000) {
                    break black_box(v);
                }
            }
        })
    });
    g.finish();
}

fn history_size(_c: &mut Criterion) {
    for n in [10usize, 10_000] {
        let mut cvm = Cvm::new(chain(n));
        cvm.run().unwrap();
        let h = cvm.history();
        let per = h.footprint_bytes() as f64 / h.recorded_firings() as f64;
        println!("history bytes per firing (chain {n}, payloads excluded): {per:.1}");
    }
}

criterion_group!(benches, forward, backward, loops, history_size);
criterion_main!(benches);
