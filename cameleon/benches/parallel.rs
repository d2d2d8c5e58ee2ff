//! Parallel mode: wall time of fork → 8 × (await 10 ms) → join, beside sequential mode; engine
//! overhead of parallel mode on trivial operators; and the sequential hot path, which parallel
//! mode must not slow down.
//!
//! `cargo bench -p cameleon --bench parallel -- --warm-up-time 1 --measurement-time 3`

use std::time::Duration;

use cameleon::ops::{
    Const, Counter, Delay, Fork, Guard, Join, Merge, Sink, Source, Test, Transform,
};
use cameleon::prelude::*;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;

/// source → fork(width) → width × op → join(width) → sink.
fn fan_out(width: usize, mode: Mode, op: impl Fn() -> Box<dyn Operator>) -> Cvm {
    let mut b = Net::builder("fan-out");
    b.add("src", Source::new("payload"));
    b.add("fork", Fork::<Any>::new(width).expect("arity"));
    for i in 0..width {
        b.add_boxed(format!("work_{i}"), op());
    }
    b.add("join", Join::<Any>::new(width).expect("arity"));
    b.add("out", Sink::new());
    b.connect("src.out_data", "fork.in_data");
    for i in 0..width {
        let l = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{l}"), format!("work_{i}.in_data"));
        b.connect(format!("work_{i}.out_data"), format!("join.in_{l}"));
    }
    b.connect("join.out_data", "out.in_data");
    Cvm::builder(b.build().expect("valid net"))
        .mode(mode)
        .build()
}

/// A pass-through that does nothing else, run as `kind` in parallel mode.
struct Pass(Execution);

impl Operator for Pass {
    fn spec(&self) -> OpSpec {
        OpSpec::new("pass", "Pass", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::Var(0))
            .output("out_data", TypeRef::Var(0))
    }
    fn execution(&self) -> Execution {
        self.0
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = cx.value_at(0).cloned().ok_or("no input")?;
        cx.emit_at(0, v);
        Ok(())
    }
}

/// Emits one string, or swallows its input: the ends of the ladder, run as `kind`.
struct End(Execution, bool);

impl Operator for End {
    fn spec(&self) -> OpSpec {
        if self.1 {
            OpSpec::new("emit", "Emit", Family::Behavioral, Policy::Source)
                .output("out_data", TypeRef::of::<DataString>())
        } else {
            OpSpec::new("drop", "Drop", Family::Behavioral, Policy::Any)
                .input("in_data", TypeRef::of::<Any>())
        }
    }
    fn execution(&self) -> Execution {
        self.0
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        if self.1 {
            cx.emit_at(0, DataString("payload".into()));
        }
        Ok(())
    }
}

/// source → fork(8) → 8 chains of `depth` pass-throughs → join(8) → sink, every behavioral
/// operator run as `kind`: 4 + 8 × depth firings, 4 + depth maximal steps.
fn ladder(depth: usize, mode: Mode, kind: Execution) -> Cvm {
    let mut b = Net::builder("ladder");
    b.add("src", End(kind, true));
    b.add("fork", Fork::<Any>::new(8).expect("arity"));
    b.add("join", Join::<Any>::new(8).expect("arity"));
    b.add("out", End(kind, false));
    for i in 0..8 {
        let l = (b'a' + i as u8) as char;
        let mut from = format!("fork.out_{l}");
        for d in 0..depth {
            let name = format!("p{i}_{d}");
            b.add(name.clone(), Pass(kind));
            b.connect(from, format!("{name}.in_data"));
            from = format!("{name}.out_data");
        }
        b.connect(from, format!("join.in_{l}"));
    }
    b.connect("src.out_data", "fork.in_data");
    b.connect("join.out_data", "out.in_data");
    Cvm::builder(b.build().expect("valid net"))
        .mode(mode)
        .build()
}

/// The same ladder built of standard operators: source → fork(8) → 8 chains of `depth`
/// `transform`s → join(8) → sink, each run as the operator type declares (`exec`).
fn std_ladder(depth: usize, mode: Mode) -> Cvm {
    let mut b = Net::builder("std-ladder");
    b.add("src", Source::new("payload"));
    b.add("fork", Fork::<Any>::new(8).expect("arity"));
    b.add("join", Join::<Any>::new(8).expect("arity"));
    b.add("out", Sink::new());
    for i in 0..8 {
        let l = (b'a' + i as u8) as char;
        let mut from = format!("fork.out_{l}");
        for d in 0..depth {
            let name = format!("t{i}_{d}");
            b.add(name.clone(), Transform::new());
            b.connect(from, format!("{name}.in_data"));
            from = format!("{name}.out_data");
        }
        b.connect(from, format!("join.in_{l}"));
    }
    b.connect("src.out_data", "fork.in_data");
    b.connect("join.out_data", "out.in_data");
    Cvm::builder(b.build().expect("valid net"))
        .mode(mode)
        .build()
}

fn count_loop(n: i64) -> Cvm {
    let mut b = Net::builder("count");
    b.add("zero", Const::new(json!(0)));
    b.add("loop", Merge::<Any>::default());
    b.add("inc", Counter::new());
    b.add(
        "check",
        Guard::<Any>::new(Test::parse(&json!({"lt": n})).expect("test")),
    );
    b.add("out", Sink::new());
    b.connect("zero.out_data", "loop.in_a")
        .connect("loop.out_data", "inc.in_data")
        .connect("inc.out_data", "check.in_data")
        .connect("check.out_continue", "loop.in_b")
        .connect("check.out_exit", "out.in_data");
    Cvm::builder(b.build().expect("valid net"))
        .max_loop_iterations(1_000_000)
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn fan_out_delays(c: &mut Criterion) {
    let rt = runtime();
    let delay = || Box::new(Delay::new(10)) as Box<dyn Operator>;
    let mut g = c.benchmark_group("fork → 8 × await 10 ms → join");
    g.sample_size(30);
    g.bench_function("parallel, run_async", |b| {
        b.iter_batched(
            || fan_out(8, Mode::Parallel, delay),
            |mut cvm| {
                rt.block_on(cvm.run_async()).expect("run");
                cvm // dropped outside the measurement
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("parallel, sync run", |b| {
        b.iter_batched(
            || fan_out(8, Mode::Parallel, delay),
            |mut cvm| {
                cvm.run().expect("run");
                cvm
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("reference: one bare tokio sleep of 10 ms", |b| {
        b.iter(|| rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await }))
    });
    g.sample_size(10);
    g.bench_function("sequential, sync run", |b| {
        b.iter_batched(
            || fan_out(8, Mode::Sequential, delay),
            |mut cvm| {
                cvm.run().expect("run");
                cvm
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn overhead(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("ladder 8 × 10 pass-throughs (84 firings)");
    g.bench_function("sequential", |b| {
        b.iter_batched(
            || ladder(10, Mode::Sequential, Execution::Inline),
            |mut cvm| {
                cvm.run().expect("run");
                cvm
            },
            BatchSize::SmallInput,
        )
    });
    for kind in [Execution::Inline, Execution::Async, Execution::Blocking] {
        g.bench_function(format!("parallel, {} operators", kind.as_str()), |b| {
            b.iter_batched(
                || ladder(10, Mode::Parallel, kind),
                |mut cvm| {
                    rt.block_on(cvm.run_async()).expect("run");
                    cvm // dropped outside the measurement
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();

    // The standard operators, as they declare themselves: what a user's `.cm` pays.
    let mut g = c.benchmark_group("ladder 8 × 10 std transforms (84 firings)");
    g.bench_function("sequential", |b| {
        b.iter_batched(
            || std_ladder(10, Mode::Sequential),
            |mut cvm| {
                cvm.run().expect("run");
                cvm
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("parallel", |b| {
        b.iter_batched(
            || std_ladder(10, Mode::Parallel),
            |mut cvm| {
                rt.block_on(cvm.run_async()).expect("run");
                cvm
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn sequential_hot_path(c: &mut Criterion) {
    c.bench_function("sequential count loop (3000 firings)", |b| {
        b.iter_batched(
            || count_loop(1000),
            |mut cvm| {
                cvm.run().expect("run");
                cvm
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = fan_out_delays, overhead, sequential_hot_path
}
criterion_main!(benches);
