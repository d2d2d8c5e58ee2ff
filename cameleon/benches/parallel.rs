use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
use cameleon::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn count_loop(n: i64) -> Net {
    let mut b = Net::builder("count");
    b.add("zero", Const::new(json!(0)));
    b.add("loop", Merge::default());
    b.add("inc", Counter::new());
    b.add("check", Guard::new(Test::parse(&json!({"lt": n})).unwrap()));
    b.add("out", Sink::new());
    b.connect("zero.out_data", "loop.in_a")
        .connect("loop.out_data", "inc.in_data")
        .connect("inc.out_data", "check.in_data")
        .connect("check.out_continue", "loop.in_b")
        .connect("check.out_exit", "out.in_data");
    b.build().unwrap()
}

fn seq(c: &mut Criterion) {
    c.bench_function("sequential count loop 3000 firings", |b| {
        b.iter_batched(
            || {
                Cvm::builder(count_loop(1000))
                    .max_loop_iterations(1_000_000)
                    .build()
            },
            |mut cvm| cvm.run().unwrap(),
            criterion::BatchSize::LargeInput,
        )
    });
}
criterion_group!(benches, seq);
criterion_main!(benches);
