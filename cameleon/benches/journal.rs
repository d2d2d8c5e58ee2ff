//! Journal benchmarks: the per-firing cost of journaling in `sync`, `batch` and
//! `exit` modes against the in-memory engine, on a chain and on the merge/counter/guard loop;
//! journal bytes per firing; resuming a run of 10 000 entries; the reuse lookup of a firing key
//! among 100 000 recorded firings (docs/semantics.md §5.9).
//!
//! `cargo bench -p cameleon --bench journal`
//!
//! The journal files live in the system's temporary folder (a disk, not memory, on most
//! machines); `sync` commits each step without an fsync (WAL, `synchronous = NORMAL`), `strict`
//! with one (`synchronous = FULL`). `journal_bare_commit` is the floor they are measured against:
//! a bare prepared `BEGIN`/`INSERT`/`COMMIT` of one row of the same bytes per step, in a table of
//! the journal's shape, with the same settings.

use std::hint::black_box;
use std::path::PathBuf;

use cameleon::journal::{Durability, Journal, RunOptions};
use cameleon::prelude::*;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group};

/// The trivial structural operator: passes its input's value (a shared reference) through.
#[operator(id = "bench_pass", family = structural)]
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

/// source -> n x pass -> sink: n + 2 firings (from `.cm`, as a journaled run is resumed).
fn chain(n: usize) -> Net {
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

/// `iterations` rounds of merge + counter + guard, plus const and sink.
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

/// The benchmark's journals, in a temporary folder of its own: hundreds of MB, removed when the
/// benchmarks end (`main`; a static is never dropped).
static DIR: std::sync::LazyLock<test_support::TempDir> =
    std::sync::LazyLock::new(|| test_support::TempDir::new("bench-journal"));

fn db(name: &str) -> PathBuf {
    let p = DIR.join(format!("{name}.db"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", p.display()));
    }
    p
}

const MODES: [(&str, Option<Durability>); 5] = [
    ("in_memory", None),
    ("sync", Some(Durability::Sync)),
    ("strict", Some(Durability::Strict)),
    ("batch_50ms", Some(Durability::Batch { ms: 50 })),
    ("exit", Some(Durability::Exit)),
];

/// Runs `make()` to its end, journaled as `mode` says, per iteration.
fn bench_net(c: &mut Criterion, group: &str, firings: u64, make: &dyn Fn() -> Net) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(firings));
    g.sample_size(20);
    for (name, durability) in MODES {
        let journal =
            durability.map(|_| Journal::create(db(&format!("{group}-{name}"))).expect("journal"));
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched_ref(
                || {
                    let mut cvm = Cvm::new(make());
                    if let (Some(j), Some(d)) = (&journal, durability) {
                        let opts = RunOptions {
                            durability: d,
                            ..RunOptions::default()
                        };
                        j.start(&mut cvm, &opts).expect("journaled");
                    }
                    cvm
                },
                |cvm| black_box(cvm.run().expect("runs")),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn journaled_chain(c: &mut Criterion) {
    bench_net(c, "journal_chain_1000", 1_002, &|| chain(1_000));
}

fn journaled_loop(c: &mut Criterion) {
    bench_net(c, "journal_loop_1000", 3 * 1_000 + 2, &|| {
        counter_loop(1_000)
    });
}

/// The floor of `sync` and `strict`: per element, one `BEGIN IMMEDIATE`, a prepared `INSERT` of
/// a row of the bytes a step of the loop journals (`entries`' shape), `COMMIT` — WAL, with
/// `synchronous` NORMAL (as `sync`) and FULL (as `strict`).
fn bare_commit(c: &mut Criterion) {
    const ROWS: u64 = 1_000;
    // The body and ops of a step of the loop (`inc` firing: its consumed, written, token and
    // states), about the bytes per firing `bytes_per_firing` prints.
    let body = r#"{"parent":1233,"firings":[{"op":2,"consumed":[1],"written":[[2,1232,1234]],"tokens":[{"type":"DataInt","value":412}],"before":{"count":411},"after":{"count":412}}]}"#;
    let ops = r#"["inc"]"#;
    let mut g = c.benchmark_group("journal_bare_commit");
    g.throughput(Throughput::Elements(ROWS));
    g.sample_size(20);
    for sync in ["NORMAL", "FULL"] {
        let path = db(&format!("bare-{sync}"));
        let conn = rusqlite::Connection::open(&path).expect("opens");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("wal");
        conn.pragma_update(None, "synchronous", sync).expect("sync");
        conn.execute_batch(
            "CREATE TABLE entries (id INTEGER PRIMARY KEY, run INTEGER NOT NULL,
             node INTEGER NOT NULL, parent INTEGER, step INTEGER NOT NULL,
             branch INTEGER NOT NULL, ops TEXT NOT NULL, body TEXT NOT NULL)",
        )
        .expect("table");
        let mut next = 0i64;
        g.bench_function(BenchmarkId::from_parameter(sync.to_lowercase()), |b| {
            b.iter(|| {
                for _ in 0..ROWS {
                    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
                    conn.prepare_cached(
                        "INSERT INTO entries (id, run, node, parent, step, branch, ops, body)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    )
                    .expect("prepares")
                    .execute((next, 1, next, next - 1, next, 0, ops, body))
                    .expect("inserts");
                    conn.execute_batch("COMMIT").expect("commits");
                    next += 1;
                }
            })
        });
    }
    g.finish();
    println!(
        "bare row: {} bytes (body + ops + keys)",
        body.len() + ops.len() + 24
    );
}

fn resume(c: &mut Criterion) {
    let path = db("resume");
    let journal = Journal::create(&path).expect("journal");
    // 3 333 rounds of the loop: 10 001 entries. (A chain of 10 000 operators is over the `.cm`
    // loader's size limits, and a journaled run is resumed from its `.cm`.)
    let mut cvm = Cvm::new(counter_loop(3_333));
    let opts = RunOptions {
        durability: Durability::Exit,
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).expect("journaled");
    cvm.run().expect("runs");
    drop(cvm);
    let mut g = c.benchmark_group("journal_resume");
    g.sample_size(20);
    g.throughput(Throughput::Elements(10_001));
    g.bench_function("10000_entries", |b| {
        b.iter(|| {
            let r = journal.resume(Some(&id)).expect("resumes");
            assert_eq!(r.cvm.depth(), 10_001);
            black_box(r)
        })
    });
    g.finish();
}

fn bytes_per_firing(_c: &mut Criterion) {
    for (name, make, firings) in [
        (
            "chain 1000",
            &(|| chain(1_000)) as &dyn Fn() -> Net,
            1_002u64,
        ),
        (
            "loop 1000",
            &(|| counter_loop(1_000)) as &dyn Fn() -> Net,
            3_002,
        ),
    ] {
        let path = db("bytes");
        let journal = Journal::create(&path).expect("journal");
        let mut cvm = Cvm::new(make());
        journal
            .start(&mut cvm, &RunOptions::default())
            .expect("journaled");
        cvm.run().expect("runs");
        drop(cvm);
        drop(journal); // checkpoints the WAL into the file
        let c = rusqlite::Connection::open(&path).expect("opens");
        let payload: i64 = c
            .query_row(
                "SELECT sum(length(body) + length(ops) + 24) FROM entries",
                [],
                |r| r.get(0),
            )
            .expect("sums");
        // The reuse keys each entry holds.
        let keys: i64 = c
            .query_row(
                "SELECT coalesce(sum(length(keys)), 0) FROM entries",
                [],
                |r| r.get(0),
            )
            .expect("sums");
        drop(c);
        let file = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!(
            "journal bytes per firing ({name}): {:.1} in entries (body + ops + ids), {:.1} of reuse keys (entries.keys), {:.1} of file",
            payload as f64 / firings as f64,
            keys as f64 / firings as f64,
            file as f64 / firings as f64
        );
    }
}

/// The lookup every reusable firing pays when a run reuses a journal of 100 000 recorded
/// firings: `find_miss` (a key not found: what most firings pay) and `find_hit` (the key found,
/// its entry read and decoded) are `ReuseSource::find`, the engine's call; `probe_hit` and
/// `probe_miss` the key index alone. `sql_probe_*` is the key probed in SQLite for each firing
/// (a read of a table of schema 3's `firing_keys` shape by primary key), as the lookup did
/// before the keys were read into memory at open: the same run's baseline. The time to open the journal (reading the index) is
/// printed.
fn reuse_lookup(c: &mut Criterion) {
    use cameleon::engine::ReuseSource;
    const RECORDED: u64 = 100_000;
    let path = db("reuse");
    let journal = Journal::create(&path).expect("journal");
    // A real run first (its keys point to real entries), then synthetic keys up to RECORDED.
    let mut cvm = Cvm::new(counter_loop(100));
    let opts = RunOptions {
        durability: Durability::Exit,
        ..RunOptions::default()
    };
    journal.start(&mut cvm, &opts).expect("journaled");
    cvm.run().expect("runs");
    drop(cvm);
    drop(journal);
    let conn = rusqlite::Connection::open(&path).expect("opens");
    // The real keys: the first 16 bytes of each keyed entry's `keys` (one firing per step).
    let real: Vec<Vec<u8>> = {
        let mut st = conn
            .prepare("SELECT substr(keys, 1, 16) FROM entries WHERE keys IS NOT NULL")
            .expect("prepares");
        st.query_map([], |r| r.get(0))
            .expect("reads")
            .collect::<Result<_, _>>()
            .expect("keys")
    };
    assert!(!real.is_empty(), "the loop's counter firings are keyed");
    // Synthetic entries, one keyed firing each (key, firing 0, one token on port 0), and the
    // same keys in a table of schema 3's `firing_keys` shape, for the SQL baseline.
    conn.execute_batch(
        "CREATE TABLE old_keys (key BLOB NOT NULL, run INTEGER NOT NULL, node INTEGER NOT NULL,
         firing INTEGER NOT NULL, ports TEXT NOT NULL, PRIMARY KEY (key, run, node, firing))
         WITHOUT ROWID;
         INSERT INTO old_keys SELECT substr(keys, 1, 16), run, node, 0, '0' FROM entries
         WHERE keys IS NOT NULL;",
    )
    .expect("baseline table");
    let mut rng = test_support::Rng::new(7);
    let mut synthetic: Vec<u128> = Vec::new();
    conn.execute_batch("BEGIN").expect("begin");
    let first = 1_000_000i64;
    for i in real.len() as u64..RECORDED {
        let key: Vec<u8> = (0..16).map(|_| rng.below(256) as u8).collect();
        synthetic.push(u128::from_be_bytes(key.as_slice().try_into().expect("16")));
        let node = first + i as i64;
        // One firing of `inc` (a counter), as the loop's entries hold.
        let body = format!(
            r#"{{"parent":null,"firings":[{{"op":2,"consumed":[1],"written":[[2,{i},{node}]],"tokens":[{{"type":"DataInt","value":{i}}}],"before":{{"count":{}}},"after":{{"count":{i}}}}}]}}"#,
            i as i64 - 1
        );
        let mut blob = key.clone();
        blob.extend_from_slice(&0u32.to_le_bytes());
        blob.extend_from_slice(&1u32.to_le_bytes());
        blob.extend_from_slice(&0u16.to_le_bytes());
        conn.execute(
            "INSERT INTO entries (id, run, node, parent, step, branch, ops, body, keys)
             VALUES ((1 << 32) + ?1, 1, ?1, NULL, 1, 1, '[\"inc\"]', ?3, ?2)",
            (node, blob, body),
        )
        .expect("inserts");
        conn.execute(
            "INSERT OR IGNORE INTO old_keys (key, run, node, firing, ports) VALUES (?1, 1, ?2, 0, '0')",
            (key, node),
        )
        .expect("inserts");
    }
    conn.execute_batch("COMMIT").expect("commit");
    let opened = std::time::Instant::now();
    let source = cameleon::journal::ReuseJournal::open(&path, None).expect("opens");
    println!(
        "reuse journal of {} keys opened (index read) in {:.1} ms",
        source.keys(),
        opened.elapsed().as_secs_f64() * 1e3
    );
    let found = u128::from_be_bytes(real[real.len() / 2].as_slice().try_into().expect("16"));
    assert!(
        source.find(found).expect("reads").is_some(),
        "a real key's entry reads back"
    );
    let mut g = c.benchmark_group("reuse_lookup_100000");
    g.sample_size(20);
    g.bench_function("find_hit", |b| {
        b.iter(|| black_box(source.find(black_box(found)).expect("reads")))
    });
    // Hits spread over the file: each a different synthetic entry (a different page, mostly).
    let mut spread = synthetic.clone();
    for i in (1..spread.len()).rev() {
        spread.swap(i, rng.below(i + 1));
    }
    assert!(
        source.find(spread[0]).expect("reads").is_some(),
        "a synthetic key's entry reads back"
    );
    g.bench_function("find_hit_spread", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 1) % spread.len();
            black_box(source.find(black_box(spread[i])).expect("reads"))
        })
    });
    g.bench_function("find_miss", |b| {
        let mut k = 0u128;
        b.iter(|| {
            k = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
            black_box(source.find(black_box(k)).expect("reads"))
        })
    });
    g.bench_function("probe_hit", |b| {
        b.iter(|| black_box(source.probe(black_box(found)).expect("reads")))
    });
    g.bench_function("probe_miss", |b| {
        let mut k = 0u128;
        b.iter(|| {
            k = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
            black_box(source.probe(black_box(k)).expect("reads"))
        })
    });
    let sql = |key: u128| -> Option<(i64, i64, i64, String)> {
        conn.prepare_cached(
            "SELECT run, node, firing, ports FROM old_keys
             WHERE key = ?1 ORDER BY run DESC LIMIT 1",
        )
        .expect("prepares")
        .query_row([&key.to_be_bytes()[..]], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .ok()
    };
    g.bench_function("sql_probe_hit", |b| {
        b.iter(|| black_box(sql(black_box(found))))
    });
    g.bench_function("sql_probe_miss", |b| {
        let mut k = 0u128;
        b.iter(|| {
            k = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
            black_box(sql(black_box(k)))
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    reuse_lookup,
    bare_commit,
    journaled_chain,
    journaled_loop,
    resume,
    bytes_per_firing
);
fn main() {
    // What `criterion_main!` does, then the journals go.
    benches();
    Criterion::default().configure_from_args().final_summary();
    let _ = std::fs::remove_dir_all(DIR.path());
}
