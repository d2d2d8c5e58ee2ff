//! Exploration throughput of the verifier (docs/semantics.md §8) on the parallel-split family: `n` branches
//! of 3 transforms between a fork and a join — 4^n + 4 reachable states.
//!
//! `cargo bench -p cameleon --bench verify` first prints one line per `n` (states, edges,
//! seconds, states per second by the wall clock and per CPU second, bytes per stored state) up
//! to the first `n` taking about a second, then runs criterion on a few sizes.

use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};

#[path = "../tests/nets/mod.rs"]
mod nets;

use cameleon::verify::{VerifyOptions, verify};

/// CPU time of this process in seconds (user + system), on Linux; `None` elsewhere. On a
/// shared machine the wall clock counts other processes' time too; this does not.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

fn table() {
    println!(
        "{:>3} {:>10} {:>10} {:>9} {:>12} {:>9} {:>14} {:>12}",
        "n", "states", "edges", "seconds", "states/s", "cpu s", "states/cpu-s", "bytes/state"
    );
    for n in 2..=12 {
        let net = nets::parallel_split(n);
        let opts = VerifyOptions::default().max_states(u32::MAX as u64 - 1);
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let r = verify(&net, &opts);
        let secs = t0.elapsed().as_secs_f64();
        let cpu = c0
            .zip(cpu_seconds())
            .map_or(secs, |(a, b)| (b - a).max(0.01));
        assert!(r.complete && r.deadlock_free == Some(true));
        println!(
            "{n:>3} {:>10} {:>10} {secs:>9.3} {:>12.0} {cpu:>9.2} {:>14.0} {:>12.1}",
            r.states,
            r.edges,
            r.states as f64 / secs,
            r.states as f64 / cpu,
            r.stats.bytes as f64 / r.states as f64
        );
        if secs > 1.0 {
            break;
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify/parallel-split");
    g.sample_size(10);
    for n in [6, 8, 10] {
        let net = nets::parallel_split(n);
        let states = verify(&net, &VerifyOptions::default()).states;
        g.throughput(Throughput::Elements(states));
        g.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| verify(net, &VerifyOptions::default().max_states(10_000_000)))
        });
    }
    g.finish();
}

fn main() {
    table();
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
