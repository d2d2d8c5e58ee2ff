//! Satellites on a loopback `nats-server`: the round trip of a trivial remote firing against
//! the same firing in process and against the floor — a plain `async-nats` request and reply
//! of the same size through the same server and runtime (with p50/p99 printed, with and without
//! a core kept awake for replies: docs/wire.md, "Latency"), eight 10 ms `delay`s over two
//! satellites in parallel mode, the throughput of 1 000 remote firings over two satellites,
//! and a parallel-mode step of 200 remote firings (sent together) over two satellites.
//!
//! `cargo bench -p cameleon-nats` (needs `nats-server`: `apt-get install -y nats-server`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cameleon::catalogue::{BuildContext, Catalogue};
use cameleon::connection::ConnState;
use cameleon::operator::DetachedInputs;
use cameleon::operator::capability::Capabilities;
use cameleon::types::{DataJSON, TypedValue, Value};
use cameleon::{Cvm, EndState};
use cameleon_nats::wire::{OpRequest, WireInput, WireState};
use cameleon_nats::{NatsOptions, NatsServer, Remote, Satellite, SatelliteConfig, WIRE_VERSION};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

static KEY: AtomicU64 = AtomicU64::new(0);

/// A firing of `counter` on input 1, under a fresh idempotency key (no cache hit).
fn request() -> OpRequest {
    let k = KEY.fetch_add(1, Ordering::Relaxed);
    OpRequest {
        v: WIRE_VERSION,
        run: "bench".into(),
        branch: 1,
        step: k as u32,
        instance: "inc".into(),
        key: format!("bench/1/{k}/inc"),
        ty: "counter".into(),
        params: serde_json::Map::new(),
        inputs: vec![WireInput {
            state: WireState::New,
            value: Some(TypedValue(Value::new(DataJSON(json!(1))))),
        }],
        outputs: vec![true],
        parallel: false,
        state: None,
        tools: None,
    }
}

/// Eight `delay`s of `ms` on satellites, fanned out and joined, in parallel mode.
fn fan_out(ms: u64) -> String {
    let mut s = String::from(
        "cameleon: 1\nname: fan-out\nconfig:\n  mode: parallel\noperators:\n  - id: src\n    type: source\n    params:\n      value: hello\n  - id: fork\n    type: fork\n    params:\n      arity: 8\n",
    );
    for i in 0..8 {
        s += &format!(
            "  - id: wait_{i}\n    type: delay\n    params:\n      ms: {ms}\n    placement: remote\n"
        );
    }
    s += "  - id: join\n    type: join\n    params:\n      arity: 8\n  - id: out\n    type: sink\nconnections:\n  - from: src.out_data\n    to: fork.in_data\n";
    for (i, p) in "abcdefgh".chars().enumerate() {
        s += &format!(
            "  - from: fork.out_{p}\n    to: wait_{i}.in_data\n  - from: wait_{i}.out_data\n    to: join.in_{p}\n"
        );
    }
    s += "  - from: join.out_data\n    to: out.in_data\n";
    s
}

/// `n` remote `counter`s fed by a `const` each, their sinks: in parallel mode, one step fires
/// the `n` counters on satellites.
fn wide_step(n: usize) -> String {
    let mut s = String::from("cameleon: 1\nname: wide\nconfig:\n  mode: parallel\noperators:\n");
    for i in 0..n {
        s += &format!(
            "  - id: c{i}\n    type: const\n    params:\n      value: {i}\n  - id: inc{i}\n    type: counter\n    placement: remote\n  - id: out{i}\n    type: sink\n"
        );
    }
    s += "connections:\n";
    for i in 0..n {
        s += &format!(
            "  - from: c{i}.out_data\n    to: inc{i}.in_data\n  - from: inc{i}.out_data\n    to: out{i}.in_data\n"
        );
    }
    s
}

/// The CPU time (user and system) process `pid` has used, from `/proc` (Linux; `None`
/// elsewhere). Clock ticks of 10 ms.
fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's `)`: state is field 3, utime and stime fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.99))
}

fn satellites(c: &mut Criterion) {
    let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = NatsOptions::new(nats.url());
    let (_a, _b, remote) = rt.block_on(async {
        // Room for the 1 000 calls in flight of the throughput bench: past its concurrency a
        // satellite answers `busy` (docs/wire.md, "Bounded intake").
        let mut ca = SatelliteConfig::new("bench-a").all_ops();
        ca.concurrency = 1024;
        let mut cb = SatelliteConfig::new("bench-b").all_ops();
        cb.concurrency = 1024;
        let a = Satellite::start(&options, ca).await.unwrap();
        let b = Satellite::start(&options, cb).await.unwrap();
        let r = Remote::connect_async(&options).await.unwrap();
        (a, b, r)
    });
    // The same run's connection with no core kept awake for replies (`--nats-keep-awake-us 0`).
    let mut cold_options = options.clone();
    cold_options.keep_awake = Duration::ZERO;
    let cold = rt.block_on(Remote::connect_async(&cold_options)).unwrap();
    let limit = Duration::from_secs(10);

    // The floor: a plain request and reply of the same sizes, on connections of their own,
    // through the same server and runtime; what a remote firing takes beyond it is Caméléon's.
    // Its samples alternate with the remote firing's, so both see the same load.
    let mut floor_times = Vec::with_capacity(2000);
    let mut remote_times = Vec::with_capacity(2000);
    let mut cold_floor_times = Vec::with_capacity(2000);
    let mut cold_times = Vec::with_capacity(2000);
    let mut local_times = Vec::with_capacity(2000);
    let caps = <dyn Capabilities>::none();
    let mut local_once = || {
        let t0 = Instant::now();
        let mut op = Catalogue::global()
            .build("counter", &serde_json::Map::new(), &BuildContext::default())
            .unwrap();
        let inputs = DetachedInputs::new(
            vec![(ConnState::New, Some(Value::new(DataJSON(json!(1)))))],
            1,
            &[true],
            1,
            "inc",
            "bench",
            1,
            false,
        );
        let mut emitted = Vec::new();
        op.run(&mut inputs.firing(&mut emitted, &caps)).unwrap();
        black_box(&emitted);
        t0.elapsed()
    };
    rt.block_on(async {
        let url = nats.url();
        let responder = async_nats::connect(&url).await.unwrap();
        let requester = async_nats::connect(&url).await.unwrap();
        let mut sub = responder.subscribe("floor.echo").await.unwrap();
        responder.flush().await.unwrap();
        let reply_body = bytes::Bytes::from(
            serde_json::to_vec(
                &json!({"v": WIRE_VERSION, "satellite": "bench-a", "ok": true,
                "emitted": [{"port": 0, "value": {"type": "Integer", "value": 1}}]}),
            )
            .unwrap(),
        );
        let echo = tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some(m) = sub.next().await {
                if let Some(to) = m.reply {
                    let _ = responder.publish(to, reply_body.clone()).await;
                }
            }
        });
        let body = bytes::Bytes::from(serde_json::to_vec(&request()).unwrap());
        // `flush` does not wait for the server to take the subscription: ask until it has.
        let mut tries = 0;
        while requester.request("floor.echo", body.clone()).await.is_err() {
            tries += 1;
            assert!(tries < 1000, "the floor's responder never answered");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for _ in 0..200 {
            requester.request("floor.echo", body.clone()).await.unwrap();
            remote.fire(&request(), limit).await.unwrap();
            cold.fire(&request(), limit).await.unwrap();
        }
        // First with no core kept awake (so that no window of the other connection's calls
        // is still open), then as a run connects by default.
        for _ in 0..2000 {
            let t0 = Instant::now();
            black_box(requester.request("floor.echo", body.clone()).await.unwrap());
            cold_floor_times.push(t0.elapsed());
            let req = request();
            let t0 = Instant::now();
            black_box(cold.fire(&req, limit).await.unwrap());
            cold_times.push(t0.elapsed());
        }
        for _ in 0..2000 {
            let t0 = Instant::now();
            black_box(requester.request("floor.echo", body.clone()).await.unwrap());
            floor_times.push(t0.elapsed());
            let req = request();
            let t0 = Instant::now();
            black_box(remote.fire(&req, limit).await.unwrap());
            remote_times.push(t0.elapsed());
        }
        echo.abort();
    });
    for _ in 0..2000 {
        local_times.push(local_once());
    }
    let (cfp50, cfp99) = percentiles(cold_floor_times);
    let (cp50, cp99) = percentiles(cold_times);
    println!(
        "no core kept awake (--nats-keep-awake-us 0), 2000 samples each: floor p50 {cfp50:?} p99 {cfp99:?}; remote trivial firing p50 {cp50:?} p99 {cp99:?}"
    );
    let (fp50, fp99) = percentiles(floor_times);
    println!(
        "floor: plain async-nats request/reply through the same server and runtime, 2000 samples: p50 {fp50:?} p99 {fp99:?}"
    );
    let (rp50, rp99) = percentiles(remote_times);
    let (lp50, lp99) = percentiles(local_times);
    println!(
        "round trip of a trivial firing (counter), 2000 samples: remote p50 {rp50:?} p99 {rp99:?}; local p50 {lp50:?} p99 {lp99:?}"
    );

    let mut g = c.benchmark_group("satellites");
    g.bench_function("round_trip_remote_trivial", |b| {
        b.iter(|| rt.block_on(async { black_box(remote.fire(&request(), limit).await.unwrap()) }))
    });
    g.bench_function("round_trip_local_trivial", |b| b.iter(&mut local_once));

    // 8 × 10 ms delays over 2 satellites, parallel mode: the whole run.
    let text = fan_out(10);
    let run_fan_out = || {
        let mut net = cameleon::cm::Loader::new().load_str(&text).unwrap();
        remote.place(&mut net);
        let mut cvm = Cvm::builder(net).build();
        let t0 = Instant::now();
        let end = cvm.run().unwrap();
        assert_eq!(end, EndState::Completed);
        t0.elapsed()
    };
    let mut walls: Vec<Duration> = (0..30).map(|_| run_fan_out()).collect();
    walls.sort();
    println!(
        "8 x 10 ms remote delays over 2 satellites, parallel mode, 30 runs: median wall {:?} (critical path 10 ms, sequential 80 ms)",
        walls[walls.len() / 2]
    );
    g.sample_size(20);
    g.bench_function("fan_out_8x10ms_over_2", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_fan_out()).sum())
    });

    // Throughput: 1 000 firings in flight together over the 2 satellites.
    let thousand = || {
        rt.block_on(async {
            let t0 = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..1000 {
                let r = remote.clone();
                tasks.spawn(async move { r.fire(&request(), limit).await.unwrap() });
            }
            while let Some(r) = tasks.join_next().await {
                black_box(r.unwrap());
            }
            t0.elapsed()
        })
    };
    let _ = thousand();
    // 20 rounds: the median rate, and the CPU time per firing of this process (the run and
    // both satellites) and of nats-server, which a loaded machine does not inflate as it does
    // wall-clock time.
    let rounds = 20;
    let before = (cpu_of(std::process::id()), cpu_of(nats.pid()));
    let mut walls: Vec<Duration> = (0..rounds).map(|_| thousand()).collect();
    let after = (cpu_of(std::process::id()), cpu_of(nats.pid()));
    walls.sort();
    let per_firing = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
        (Some(a), Some(b)) => format!(
            "{:.1} µs",
            (b - a).as_secs_f64() * 1e6 / (rounds * 1000) as f64
        ),
        _ => "?".to_owned(),
    };
    println!(
        "1000 remote firings over 2 satellites, {rounds} rounds: median {:?}, {:.0} firings/s (best {:.0}); CPU per firing: {} in the process (run and satellites), {} in nats-server",
        walls[rounds / 2],
        1000.0 / walls[rounds / 2].as_secs_f64(),
        1000.0 / walls[0].as_secs_f64(),
        per_firing(before.0, after.0),
        per_firing(before.1, after.1),
    );
    g.sample_size(10);
    g.bench_function("throughput_1000_over_2", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| thousand()).sum())
    });

    // A parallel-mode step of 200 remote firings: the run's wall, each step of it timed.
    let wide = wide_step(200);
    let run_wide = || {
        let mut net = cameleon::cm::Loader::new().load_str(&wide).unwrap();
        assert_eq!(remote.place(&mut net), 200);
        let mut cvm = Cvm::builder(net).build();
        let mut remote_step = Duration::ZERO;
        loop {
            let t0 = Instant::now();
            match cvm.step().unwrap() {
                cameleon::Step::Ended(end) => {
                    assert_eq!(end, EndState::Completed);
                    break;
                }
                cameleon::Step::Fired { step, .. } => {
                    // Step 1: the consts; step 2: the counters, on the satellites.
                    if step == 2 {
                        remote_step = t0.elapsed();
                    }
                }
            }
        }
        remote_step
    };
    let mut steps: Vec<Duration> = (0..30).map(|_| run_wide()).collect();
    steps.sort();
    let median = steps[steps.len() / 2];
    println!(
        "a parallel step of 200 remote firings over 2 satellites, 30 runs: median {median:?}, {:.0} firings/s",
        200.0 / median.as_secs_f64()
    );
    g.bench_function("step_of_200_remote_over_2", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_wide()).sum())
    });
    g.finish();
}

criterion_group!(benches, satellites);
criterion_main!(benches);
