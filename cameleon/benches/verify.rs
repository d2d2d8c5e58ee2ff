//! The verifier (docs/semantics.md §8) on the parallel-split family: `n` branches of 3
//! transforms between a fork and a join — 4^n + 4 reachable states, 3n + 5 once reduced.
//!
//! `cargo bench -p cameleon --bench verify` first prints two tables:
//!
//! - the full exploration (`--reduce none`) for n = 6…12 (n = 12: 16.8 million states): states,
//!   edges, seconds, states per second by the wall clock and per CPU second, bytes per stored
//!   state (the store's allocated memory) and the process's peak resident memory;
//! - the reduced exploration (the default) for n = 12, 16, 20: states and time;
//! - the full exploration of n = 11 (4.2 million states) on 1 thread, 2 threads and one per
//!   core (`VerifyOptions::threads`, docs/semantics.md §8.8): seconds, states per second, the
//!   speed-up over one thread, the process's CPU seconds, the seconds during which one thread
//!   worked alone (`Stats::serial`), the critical path (`Stats::critical`: serial sections plus
//!   each parallel phase's busiest thread, in CPU time — what the run takes on idle cores) and
//!   its speed-up over one thread (a figure the machine's load does not distort), bytes per
//!   stored state;
//!
//! then runs criterion on a few sizes of each, and on n = 11 with 1 and 2 threads
//! (`verify/parallel-split/threads`). The machine's load average is printed first: on a shared
//! machine the figures depend on it.

use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};

#[path = "../tests/nets/mod.rs"]
mod nets;

use cameleon::verify::{Reduction, VerifyOptions, verify};

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

/// Peak resident memory of this process in MB (`VmHWM`), on Linux.
fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn full_table() {
    println!("full exploration (--reduce none, one thread)");
    println!(
        "{:>3} {:>10} {:>10} {:>8} {:>11} {:>7} {:>13} {:>11} {:>9}",
        "n",
        "states",
        "edges",
        "seconds",
        "states/s",
        "cpu s",
        "states/cpu-s",
        "bytes/state",
        "peak MB"
    );
    // `VERIFY_BENCH_N=12` runs that size alone (for a profiler).
    let only: Option<usize> = std::env::var("VERIFY_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok());
    for n in 6..=12 {
        if only.is_some_and(|m| m != n) {
            continue;
        }
        let net = nets::parallel_split(n);
        let opts = VerifyOptions::default()
            .max_states(u32::MAX as u64 - 1)
            .reduce(Reduction::None)
            .threads(1);
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let r = verify(&net, &opts);
        let secs = t0.elapsed().as_secs_f64();
        let cpu = c0
            .zip(cpu_seconds())
            .map_or(secs, |(a, b)| (b - a).max(0.01));
        assert!(r.complete && r.deadlock_free == Some(true) && !r.reduced);
        println!(
            "{n:>3} {:>10} {:>10} {secs:>8.3} {:>11.0} {cpu:>7.2} {:>13.0} {:>11.1} {:>9.0}",
            r.states,
            r.edges,
            r.states as f64 / secs,
            r.states as f64 / cpu,
            r.stats.bytes as f64 / r.states as f64,
            peak_mb().unwrap_or(0.0),
        );
    }
}

fn reduced_table() {
    println!("reduced exploration (stubborn sets, the default)");
    println!(
        "{:>3} {:>8} {:>8} {:>10} {:>10}",
        "n", "states", "edges", "ms", "verdict"
    );
    for n in [12, 16, 20] {
        let net = nets::parallel_split(n);
        let t0 = Instant::now();
        let r = verify(&net, &VerifyOptions::default());
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        assert!(r.complete && r.reduced);
        assert_eq!(r.deadlock_free, Some(true));
        assert_eq!(r.option_to_complete, Some(true));
        println!(
            "{n:>3} {:>8} {:>8} {ms:>10.2} {:>10?}",
            r.states, r.edges, r.verdict
        );
    }
}

/// `k` sources into one merge, then a sink: the merge takes one value at a time, so the sources'
/// firings all depend on it and the stubborn sets cannot leave any out — the reduced
/// exploration's cost where it does not reduce.
fn fan_in(k: usize) -> cameleon::Net {
    use cameleon::ops::{Merge, Sink, Source};
    let mut b = cameleon::Net::builder(format!("fan-in-{k}"));
    b.add(
        "m",
        Merge::<cameleon::types::Any>::new(k).expect("arity 2..=26"),
    );
    b.add("out", Sink::new());
    b.connect("m.out_data", "out.in_data");
    for i in 0..k {
        let letter = (b'a' + i as u8) as char;
        b.add(format!("s{i}"), Source::new("x"));
        b.connect(format!("s{i}.out_data"), format!("m.in_{letter}"));
    }
    b.build().expect("valid")
}

fn unreduced_table() {
    println!("reduction that does not reduce (k sources into a merge)");
    println!(
        "{:>3} {:>9} {:>9} {:>9} {:>11} {:>9} {:>11}",
        "k", "states", "full s", "states/s", "reduced", "reduced s", "states/s"
    );
    for k in [10, 12] {
        let net = fan_in(k);
        let t0 = Instant::now();
        let f = verify(
            &net,
            &VerifyOptions::default()
                .max_states(u32::MAX as u64 - 1)
                .reduce(Reduction::None),
        );
        let fs = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let r = verify(
            &net,
            &VerifyOptions::default().max_states(u32::MAX as u64 - 1),
        );
        let rs = t0.elapsed().as_secs_f64();
        assert_eq!(f.verdict, r.verdict);
        println!(
            "{k:>3} {:>9} {fs:>9.3} {:>9.0} {:>11} {rs:>9.3} {:>11.0}",
            f.states,
            f.states as f64 / fs,
            r.states,
            r.states as f64 / rs
        );
    }
}

fn threads_table() {
    // `VERIFY_BENCH_N` another size, `VERIFY_BENCH_THREADS` one thread count (for a profiler).
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let n = env("VERIFY_BENCH_N").unwrap_or(11);
    let only = env("VERIFY_BENCH_THREADS");
    let net = nets::parallel_split(n);
    println!("full exploration of n = {n} on several threads");
    println!(
        "{:>7} {:>10} {:>8} {:>11} {:>8} {:>7} {:>8} {:>10} {:>9} {:>11}",
        "threads",
        "states",
        "seconds",
        "states/s",
        "speed-up",
        "cpu s",
        "serial s",
        "critical s",
        "crit. x",
        "bytes/state"
    );
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let mut one = None;
    for threads in [1, 2, cores] {
        if only.is_some_and(|t| t != threads) {
            continue;
        }
        let opts = VerifyOptions::default()
            .max_states(u32::MAX as u64 - 1)
            .reduce(Reduction::None)
            .threads(threads);
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let r = verify(&net, &opts);
        let secs = t0.elapsed().as_secs_f64();
        let cpu = c0.zip(cpu_seconds()).map_or(secs, |(a, b)| b - a);
        assert!(r.complete && r.deadlock_free == Some(true));
        let critical = r.stats.critical.as_secs_f64();
        let (base, base_critical) = *one.get_or_insert((secs, critical));
        println!(
            "{threads:>7} {:>10} {secs:>8.3} {:>11.0} {:>8.2} {cpu:>7.2} {:>8.3} {critical:>10.3} {:>9.2} {:>11.1}",
            r.states,
            r.states as f64 / secs,
            base / secs,
            r.stats.serial.as_secs_f64(),
            base_critical / critical,
            r.stats.bytes as f64 / r.states as f64,
        );
        if threads == cores {
            break;
        }
    }
}

/// The load average of the last minute (Linux).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify/parallel-split/full");
    g.sample_size(10);
    for n in [6, 8, 10] {
        let net = nets::parallel_split(n);
        let opts = VerifyOptions::default()
            .max_states(20_000_000)
            .reduce(Reduction::None)
            .threads(1);
        g.throughput(Throughput::Elements(4u64.pow(n as u32) + 4));
        g.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| verify(net, &opts))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("verify/parallel-split/reduced");
    g.sample_size(10);
    for n in [12, 16, 20] {
        let net = nets::parallel_split(n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| verify(net, &VerifyOptions::default()))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("verify/parallel-split/threads");
    g.sample_size(10);
    let n = 11;
    let net = nets::parallel_split(n);
    g.throughput(Throughput::Elements(4u64.pow(n as u32) + 4));
    for threads in [1, 2] {
        let opts = VerifyOptions::default()
            .max_states(20_000_000)
            .reduce(Reduction::None)
            .threads(threads);
        g.bench_with_input(BenchmarkId::from_parameter(threads), &net, |b, net| {
            b.iter(|| verify(net, &opts))
        });
    }
    g.finish();
}

fn main() {
    println!(
        "load average (1 min): {} on {} cores",
        load(),
        std::thread::available_parallelism().map_or(1, |c| c.get())
    );
    // `VERIFY_BENCH_TABLE=threads` prints that table alone (`VERIFY_BENCH_N=9` for another
    // size, `VERIFY_BENCH_THREADS=1` for one thread count).
    let table = std::env::var("VERIFY_BENCH_TABLE").ok();
    if table.as_deref().is_none_or(|t| t == "full") {
        full_table();
    }
    if table.is_none() {
        reduced_table();
        unreduced_table();
    }
    if table.as_deref().is_none_or(|t| t == "threads") {
        threads_table();
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
