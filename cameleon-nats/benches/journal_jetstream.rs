//! The journal on JetStream next to the SQLite journal, on the nets of `cameleon`'s `journal`
//! bench (a chain of 1 000 structural operators, the merge/counter/guard loop of 1 000 rounds):
//! the per-firing cost of `sync` and `batch` (50 ms) on each store, against the in-memory
//! engine; resuming a run of 10 000 entries from each; and reading a run of 10 000 entries
//! into the in-memory key index `run --reuse nats://…` builds (docs/journal.md "Reuse from
//! JetStream").
//!
//! `cargo bench -p cameleon-nats --features journal --bench journal_jetstream` (needs
//! `nats-server`). The bench starts its own `nats-server -js` on a free loopback port, storing
//! into a temporary folder (a disk, not memory, on most machines), as the tests do; the
//! SQLite journals are in a temporary folder too.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use cameleon::journal::{Durability, Journal, Names, ResumeOptions, RunOptions};
use cameleon::operator::capability::Capabilities;
use cameleon::prelude::*;
use cameleon_nats::{JetStreamJournal, NatsOptions, NatsServer};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group};

/// The trivial structural operator: passes its input's value (a shared reference) through.
#[operator(id = "bench_js_pass", family = structural)]
pub struct Pass {
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataString>,
}

impl Run for Pass {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
}

/// source -> n x pass -> sink: n + 2 firings.
fn chain(n: usize) -> Net {
    let mut cm =
        String::from("operators:\n  - {id: src, type: source, params: {value: payload}}\n");
    for i in 0..n {
        cm.push_str(&format!("  - {{id: p{i}, type: bench_js_pass}}\n"));
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

/// `iterations` rounds of merge + counter + guard, plus const and sink: 3 x iterations + 2
/// firings.
fn counter_loop(iterations: i64) -> Net {
    Net::from_cm(&format!(
        "config: {{max_loop_iterations: 1000000}}
operators:
  - {{id: zero, type: const, params: {{value: 0}}}}
  - {{id: m, type: merge}}
  - {{id: inc, type: counter}}
  - {{id: g, type: guard, params: {{continue_if: {{lt: {iterations}}}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: zero.out_data, to: m.in_a}}
  - {{from: m.out_data, to: inc.in_data}}
  - {{from: inc.out_data, to: g.in_data}}
  - {{from: g.out_continue, to: m.in_b}}
  - {{from: g.out_exit, to: out.in_data}}
"
    ))
    .expect("valid loop")
}

/// The bench's files (the server's store, the SQLite journals), removed when it ends.
static DIR: std::sync::LazyLock<test_support::TempDir> =
    std::sync::LazyLock::new(|| test_support::TempDir::new("bench-journal-js"));

/// The loopback JetStream server, started on first use, stopped when the bench ends (`main`).
static SERVER: std::sync::Mutex<Option<NatsServer>> = std::sync::Mutex::new(None);

fn jetstream() -> JetStreamJournal {
    let url = {
        let mut s = SERVER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s.get_or_insert_with(|| {
            let store = DIR.join("nats");
            NatsServer::start_with(&["-js", "-sd", &store.display().to_string()])
                .unwrap_or_else(|e| panic!("{e} (is nats-server installed?)"))
        })
        .url()
    };
    JetStreamJournal::connect(
        &NatsOptions::new(url),
        cameleon_nats::journal::DEFAULT_LEASE_TTL,
    )
    .expect("the journal on JetStream")
}

fn db(name: &str) -> PathBuf {
    DIR.join(format!("{name}.db"))
}

/// Where a run is journaled.
#[derive(Clone, Copy)]
enum Store {
    Memory,
    Sqlite(Durability),
    JetStream(Durability),
}

const MODES: [(&str, Store); 5] = [
    ("in_memory", Store::Memory),
    ("sqlite_sync", Store::Sqlite(Durability::Sync)),
    (
        "sqlite_batch_50ms",
        Store::Sqlite(Durability::Batch { ms: 50 }),
    ),
    ("jetstream_sync", Store::JetStream(Durability::Sync)),
    (
        "jetstream_batch_50ms",
        Store::JetStream(Durability::Batch { ms: 50 }),
    ),
];

/// An engine journaled as `store` says, with what must live as long as its run (a lease).
type Started = (Cvm, Option<cameleon_nats::Lease>);

/// Runs `make()` to its end, journaled as each mode says, per iteration.
fn bench_net(c: &mut Criterion, group: &str, firings: u64, make: &dyn Fn() -> Net) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(firings));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_secs(1));
    let js = jetstream();
    for (name, store) in MODES {
        let file = match store {
            Store::Sqlite(_) => Some(Journal::create(db(&format!("{group}-{name}"))).expect("db")),
            _ => None,
        };
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched_ref(
                || -> Started {
                    let mut cvm = Cvm::new(make());
                    let opts = |durability| RunOptions {
                        durability,
                        ..RunOptions::default()
                    };
                    match store {
                        Store::Memory => (cvm, None),
                        Store::Sqlite(d) => {
                            let j = file.as_ref().expect("a journal file");
                            j.start(&mut cvm, &opts(d)).expect("journaled");
                            (cvm, None)
                        }
                        Store::JetStream(d) => {
                            let (_, lease) = js.start(&mut cvm, &opts(d)).expect("journaled");
                            (cvm, Some(lease))
                        }
                    }
                },
                |(cvm, _)| black_box(cvm.run().expect("runs")),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn journaled_chain(c: &mut Criterion) {
    bench_net(c, "journal_js_chain_1000", 1_002, &|| chain(1_000));
}

fn journaled_loop(c: &mut Criterion) {
    bench_net(c, "journal_js_loop_1000", 3 * 1_000 + 2, &|| {
        counter_loop(1_000)
    });
}

/// 3 333 rounds of the loop (10 001 entries) journaled on each store; then resumed from each,
/// and read into the in-memory reuse index from JetStream.
fn resume(c: &mut Criterion) {
    let opts = RunOptions {
        durability: Durability::Exit,
        ..RunOptions::default()
    };
    let file = Journal::create(db("resume")).expect("db");
    let mut cvm = Cvm::new(counter_loop(3_333));
    let file_id = file.start(&mut cvm, &opts).expect("journaled");
    cvm.run().expect("runs");
    drop(cvm);
    let js = jetstream();
    let mut cvm = Cvm::new(counter_loop(3_333));
    let (js_id, lease) = js.start(&mut cvm, &opts).expect("journaled");
    cvm.run().expect("runs");
    drop(cvm);
    drop(lease);

    let mut g = c.benchmark_group("journal_js_resume");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(10_001));
    g.bench_function("sqlite_10000_entries", |b| {
        b.iter(|| {
            let r = file.resume(Some(&file_id)).expect("resumes");
            assert_eq!(r.cvm.depth(), 10_001);
            black_box(r)
        })
    });
    g.bench_function("jetstream_10000_entries", |b| {
        b.iter(|| {
            let pin = Box::new(|_: &mut Net, _: &std::path::Path| <dyn Capabilities>::none());
            let (r, lease) = js
                .resume(
                    Some(&js_id),
                    &ResumeOptions::default(),
                    &Names::default(),
                    pin,
                )
                .expect("resumes");
            assert_eq!(r.cvm.depth(), 10_001);
            black_box((r, lease))
        })
    });
    g.bench_function("jetstream_reuse_index_10000_entries", |b| {
        b.iter(|| black_box(js.reuse(Some(&js_id)).expect("reads")))
    });
    g.finish();
}

criterion_group!(benches, journaled_chain, journaled_loop, resume);
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    drop(
        SERVER
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(),
    );
    let _ = std::fs::remove_dir_all(DIR.path());
}
