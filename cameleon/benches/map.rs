//! `map` overhead (docs/semantics.md §10.3): 1 000 items through a trivial inner net
//! (`input → counter → output`), sequential and parallel (4 items at once), beside the same
//! work as 1 000 operators in one net (a chain of 1 000 counters): the overhead per item is
//! `(map_sequential − one_net_1000_operators) / 1 000`; 100 items that each wait 1 ms,
//! sequential and parallel; 1 000 items that each wait 1 ms, then 10 ms, 16 at once (the
//! ideal is 1 000 / 16 × 1 ms = 62.5 ms, then 625 ms); and one `subnet` firing.
//!
//! `cargo bench -p cameleon --bench map`

use std::hint::black_box;

use cameleon::ops::{Const, Counter, Delay, Map, Sink, Subnet};
use cameleon::prelude::*;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const ITEMS: usize = 1_000;

fn inner() -> Net {
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

/// const [0, 1, …] → map(trivial) → sink.
fn map_net(concurrency: usize) -> Net {
    let mut b = Net::builder("map");
    b.add("items", Const::new(json!((0..ITEMS).collect::<Vec<_>>())));
    b.add(
        "each",
        Map::new(inner())
            .expect("a map's net")
            .concurrency(concurrency),
    );
    b.add("out", Sink::new());
    b.connect("items.out_data", "each.in_items")
        .connect("each.out_results", "out.in_data");
    b.build().expect("a valid net")
}

/// const [0 … 99] → map(input → delay 1 ms → output) → sink: items that wait, where running
/// them at once pays.
fn waiting_net(concurrency: usize) -> Net {
    waiting(100, 1, concurrency)
}

/// const [0 … items − 1] → map(input → delay `ms` → output) → sink.
fn waiting(items: usize, ms: u64, concurrency: usize) -> Net {
    let mut b = Net::builder("inner");
    b.add("item", cameleon::ops::SubnetInput::<Any>::new("item"));
    b.add("wait", Delay::new(ms));
    b.add("result", cameleon::ops::SubnetOutput::<Any>::new("result"));
    b.connect("item.out_data", "wait.in_data")
        .connect("wait.out_data", "result.in_data");
    let inner = b.build().expect("a valid inner net");
    let mut b = Net::builder("waiting");
    b.add("items", Const::new(json!((0..items).collect::<Vec<_>>())));
    b.add(
        "each",
        Map::new(inner)
            .expect("a map's net")
            .concurrency(concurrency),
    );
    b.add("out", Sink::new());
    b.connect("items.out_data", "each.in_items")
        .connect("each.out_results", "out.in_data");
    b.build().expect("a valid net")
}

/// const 0 → 1 000 counters → sink: the same work, as operators of one net.
fn chain_net() -> Net {
    let mut b = Net::builder("chain");
    b.add("zero", Const::new(json!(0)));
    let mut prev = "zero.out_data".to_owned();
    for i in 0..ITEMS {
        b.add(format!("c{i}"), Counter::new());
        b.connect(prev, format!("c{i}.in_data"));
        prev = format!("c{i}.out_data");
    }
    b.add("out", Sink::new());
    b.connect(prev, "out.in_data");
    b.build().expect("a valid chain")
}

/// const 0 → subnet(trivial) → sink: one sub-net firing.
fn subnet_net() -> Net {
    let mut b = Net::builder("subnet");
    b.add("zero", Const::new(json!(0)));
    b.add("sub", Subnet::new(inner()).expect("a sub-net"));
    b.add("out", Sink::new());
    b.connect("zero.out_data", "sub.in_item")
        .connect("sub.out_result", "out.in_data");
    b.build().expect("a valid net")
}

fn map_vs_operators(c: &mut Criterion) {
    let mut g = c.benchmark_group("map_1000_items");
    g.throughput(Throughput::Elements(ITEMS as u64));
    g.sample_size(20);
    g.bench_function("map_sequential", |b| {
        b.iter_batched_ref(
            || Cvm::new(map_net(4)),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("map_parallel_4", |b| {
        b.iter_batched_ref(
            || Cvm::builder(map_net(4)).mode(Mode::Parallel).build(),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("one_net_1000_operators", |b| {
        b.iter_batched_ref(
            || Cvm::new(chain_net()),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
    let mut g = c.benchmark_group("map_100_items_waiting_1ms");
    g.sample_size(10);
    g.bench_function("sequential", |b| {
        b.iter_batched_ref(
            || Cvm::new(waiting_net(4)),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    for concurrency in [4, 16] {
        g.bench_function(format!("parallel_{concurrency}"), |b| {
            b.iter_batched_ref(
                || {
                    Cvm::builder(waiting_net(concurrency))
                        .mode(Mode::Parallel)
                        .build()
                },
                |cvm| black_box(cvm.run().unwrap()),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
    // The figure: 1 000 items × 1 ms at concurrency 16; the ideal is 62.5 ms (a delay
    // of 1 ms waits a little over 1 ms: docs/semantics.md §7, "Timing").
    let mut g = c.benchmark_group("map_1000_items_waiting_1ms");
    g.sample_size(10);
    g.bench_function("parallel_16", |b| {
        b.iter_batched_ref(
            || {
                Cvm::builder(waiting(1_000, 1, 16))
                    .mode(Mode::Parallel)
                    .build()
            },
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
    let mut g = c.benchmark_group("map_1000_items_waiting_10ms");
    g.sample_size(10);
    g.bench_function("parallel_16", |b| {
        b.iter_batched_ref(
            || {
                Cvm::builder(waiting(1_000, 10, 16))
                    .mode(Mode::Parallel)
                    .build()
            },
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
    let mut g = c.benchmark_group("subnet");
    g.bench_function("one_firing_of_a_3_operator_net", |b| {
        b.iter_batched_ref(
            || Cvm::new(subnet_net()),
            |cvm| black_box(cvm.run().unwrap()),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, map_vs_operators);
criterion_main!(benches);
