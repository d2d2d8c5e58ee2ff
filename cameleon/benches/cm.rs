//! How fast the `.cm` loader refuses hostile input, beside a normal file.
//!
//! `cargo bench -p cameleon --bench cm`

use std::hint::black_box;

use cameleon::Net;
use cameleon::cm::limits;
use criterion::{Criterion, criterion_group, criterion_main};

fn alias_bomb() -> String {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("operators: []\n");
    text
}

fn hostile(c: &mut Criterion) {
    let mut g = c.benchmark_group("cm_load");
    let normal = include_str!("../../examples/counter.cm");
    g.bench_function("counter_example", |b| {
        b.iter(|| black_box(Net::from_cm(black_box(normal)).is_ok()))
    });
    let bomb = alias_bomb();
    g.bench_function("refuse_alias_bomb_9_pow_12", |b| {
        b.iter(|| black_box(Net::from_cm(black_box(&bomb)).is_err()))
    });
    let deep = format!(
        "operators: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    g.bench_function("refuse_100k_nested_lists", |b| {
        b.iter(|| black_box(Net::from_cm(black_box(&deep)).is_err()))
    });
    let many = format!(
        "x: [{}]\noperators: []\n",
        vec!["1"; limits::MAX_NODES + 10].join(",")
    );
    g.bench_function("refuse_too_many_values", |b| {
        b.iter(|| black_box(Net::from_cm(black_box(&many)).is_err()))
    });
    let huge = format!(
        "name: \"{}\"\noperators: []\n",
        "x".repeat(limits::MAX_FILE_BYTES)
    );
    g.bench_function("refuse_oversized_file", |b| {
        b.iter(|| black_box(Net::from_cm(black_box(&huge)).is_err()))
    });
    g.finish();
}

criterion_group!(benches, hostile);
criterion_main!(benches);
