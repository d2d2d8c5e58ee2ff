//! Durable runs (docs/semantics.md §5.5): what the journal records, resuming without running
//! operators, the history tree on disk, durability modes, and bad files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

use cameleon::StepError;
use cameleon::engine::Marking;
use cameleon::journal::{Durability, Journal, JournalError, RunOptions};
use cameleon::operator::OpState;
use cameleon::prelude::*;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Test operators (declared with `#[operator]`: a journaled net is rebuilt from its `.cm`)

/// Per test tag: how many times `run` was called, and the idempotency keys seen.
static CALLS: LazyLock<Mutex<HashMap<String, Vec<String>>>> = LazyLock::new(Mutex::default);
/// Tags whose `Fragile` values refuse to serialise.
static FRAGILE: LazyLock<Mutex<Vec<String>>> = LazyLock::new(Mutex::default);
/// Tags whose `jt_fragile` operators emit a `Fragile` value (else a plain string).
static SERDE_FAILS: AtomicUsize = AtomicUsize::new(0);

fn calls(tag: &str) -> Vec<String> {
    CALLS.lock().unwrap().get(tag).cloned().unwrap_or_default()
}

/// Passes its input on and counts its firings (keyed by `tag`), remembering each firing's
/// idempotency key.
#[operator(id = "jt_counted", family = behavioral)]
pub struct Counted {
    #[param(default = "")]
    tag: String,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for Counted {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        CALLS
            .lock()
            .unwrap()
            .entry(self.tag.clone())
            .or_default()
            .push(cx.idempotency_key());
        let v = cx.get(Self::in_data)?.clone();
        cx.emit(Self::out_data, v);
        Ok(())
    }
}

/// A value whose `Serialize` fails while its tag is in `FRAGILE`.
#[derive(Clone, Debug, Deserialize)]
pub struct Fragile {
    tag: String,
    text: String,
}
cameleon::data_type!(Fragile);

impl Serialize for Fragile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if FRAGILE.lock().unwrap().contains(&self.tag) {
            SERDE_FAILS.fetch_add(1, Ordering::SeqCst);
            return Err(serde::ser::Error::custom(
                "this value refuses to be written",
            ));
        }
        #[derive(Serialize)]
        struct Plain<'a> {
            tag: &'a str,
            text: &'a str,
        }
        Plain {
            tag: &self.tag,
            text: &self.text,
        }
        .serialize(s)
    }
}

/// Turns a JSON value into a `Fragile` value, counting its firings and keys like `jt_counted`.
#[operator(id = "jt_fragile", family = behavioral)]
pub struct MakeFragile {
    #[param(default = "")]
    tag: String,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<Fragile>,
}

impl Run for MakeFragile {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        CALLS
            .lock()
            .unwrap()
            .entry(self.tag.clone())
            .or_default()
            .push(cx.idempotency_key());
        let v = cx.get(Self::in_data)?;
        cx.emit(
            Self::out_data,
            Fragile {
                tag: self.tag.clone(),
                text: v.0.to_string(),
            },
        );
        Ok(())
    }
}

/// A hand-written stateful operator whose state has no serde form.
struct Opaque {
    n: u32,
}

impl Operator for Opaque {
    fn spec(&self) -> OpSpec {
        OpSpec::new("jt_opaque", "Opaque", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<DataJSON>())
            .output("out_data", TypeRef::of::<DataJSON>())
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        self.n += 1;
        let v = cx.value_at(0).cloned().ok_or("no input")?;
        cx.emit_at(0, v);
        Ok(())
    }
    fn save_state(&self) -> Option<OpState> {
        Some(OpState::new(self.n))
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// A journal's path in a folder of its own, removed with it at the end of the test.
struct Db {
    _dir: test_support::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for Db {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for Db {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

fn db(name: &str) -> Db {
    let dir = test_support::TempDir::new(&format!("journal-{name}"));
    let path = dir.join(format!("{name}.db"));
    Db { _dir: dir, path }
}

/// `const 0 → jt_counted × n → sink`, counted under `tag`.
fn chain(tag: &str, n: usize) -> Net {
    let mut cm =
        String::from("name: chain\noperators:\n  - {id: src, type: const, params: {value: 0}}\n");
    for i in 0..n {
        cm.push_str(&format!(
            "  - {{id: c{i}, type: jt_counted, params: {{tag: {tag}}}}}\n"
        ));
    }
    cm.push_str("  - {id: out, type: sink}\nconnections:\n");
    let mut prev = "src.out_data".to_owned();
    for i in 0..n {
        cm.push_str(&format!("  - {{from: {prev}, to: c{i}.in_data}}\n"));
        prev = format!("c{i}.out_data");
    }
    cm.push_str(&format!("  - {{from: {prev}, to: out.in_data}}\n"));
    Net::from_cm(&cm).unwrap()
}

/// The counter loop of examples/counter.cm: merge, counter, guard (< 5), an accumulator of 2
/// (internal state) and two sinks.
fn counter_loop() -> Net {
    Net::from_cm(
        "name: loop
operators:
  - {id: zero, type: const, params: {value: 0}}
  - {id: loop, type: merge}
  - {id: inc, type: counter}
  - {id: tap, type: fork}
  - {id: check, type: guard, params: {continue_if: {lt: 5}}}
  - {id: collect, type: accumulator, params: {n: 2}}
  - {id: done, type: sink}
  - {id: pairs, type: sink}
connections:
  - {from: zero.out_data, to: loop.in_a}
  - {from: check.out_continue, to: loop.in_b}
  - {from: loop.out_data, to: inc.in_data}
  - {from: inc.out_data, to: tap.in_data}
  - {from: tap.out_a, to: check.in_data}
  - {from: tap.out_b, to: collect.in_data}
  - {from: check.out_exit, to: done.in_data}
  - {from: collect.out_data, to: pairs.in_data}
",
    )
    .unwrap()
}

/// What a finished run shows: end, sinks, and every history entry's ops and emitted values.
fn outcome(cvm: &Cvm, end: &EndState) -> (String, Vec<String>, Vec<String>) {
    let sinks = ["out", "done", "pairs"]
        .iter()
        .map(|s| {
            let v: Vec<serde_json::Value> = cvm.received(s).iter().map(|v| v.to_json()).collect();
            format!("{s}={}", serde_json::Value::Array(v))
        })
        .collect();
    let entries = cvm
        .history()
        .entries()
        .iter()
        .map(|e| {
            e.firings
                .iter()
                .map(|f| {
                    let vals: Vec<String> = f
                        .written
                        .iter()
                        .map(|(c, t)| format!("{}={}", c.0, cvm.token(*t).unwrap().value.to_json()))
                        .collect();
                    format!("{}:{}:{}", e.step, cvm.net().op(f.op).name, vals.join(","))
                })
                .collect::<Vec<_>>()
                .join(";")
        })
        .collect();
    (end.name().to_owned(), sinks, entries)
}

fn rows(path: &PathBuf, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Resume

#[test]
fn resume_restores_committed_steps_without_running_any_operator() {
    let path = db("no-rerun");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("no-rerun", 4));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    for _ in 0..4 {
        cvm.step().unwrap(); // src, c0, c1, c2
    }
    let marking = cvm.marking();
    assert_eq!(calls("no-rerun").len(), 3);
    drop(cvm); // a crash after step 4

    let resumed = journal.resume(Some(&id)).unwrap();
    assert_eq!(calls("no-rerun").len(), 3, "restoring ran an operator");
    let mut cvm = resumed.cvm;
    assert_eq!(cvm.depth(), 4);
    assert_eq!(cvm.fireable(), ["c3"]);
    let restored = cvm.marking();
    // Same states and values (not the same allocations: they were read back from disk).
    assert_eq!(marking.0.len(), restored.0.len());
    for (a, b) in marking.0.iter().zip(&restored.0) {
        assert_eq!(a.0, b.0);
        assert_eq!(
            a.1.as_ref().map(|t| (t.value.to_json(), t.step, t.op)),
            b.1.as_ref().map(|t| (t.value.to_json(), t.step, t.op))
        );
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        calls("no-rerun").len(),
        4,
        "each counted operator ran exactly once overall"
    );
    assert_eq!(cvm.received("out")[0].to_json(), 0);
    assert_eq!(journal.runs().unwrap()[0].status, "COMPLETED");
}

// ---------------------------------------------------------------------------------------------
// Crashes: a child process aborts inside a firing

/// In a child started by [`crash`]: the run to start and where it aborts (JSON of [`Crash`]).
const CRASH_CHILD: &str = "CAMELEON_JOURNAL_TEST_CRASH";
/// In the child: `jt_crash`'s N-th firing in this process aborts it, right after its effect.
const ABORT_AT: &str = "CAMELEON_JOURNAL_TEST_ABORT_AT";
/// In the child: before aborting, `jt_crash` waits until this journal file holds every step
/// before its own (a `batch` run whose flusher has closed the window).
const WAIT_COMMITTED: &str = "CAMELEON_JOURNAL_TEST_WAIT_COMMITTED";

/// `jt_crash`'s firings in this process.
static CRASH_FIRINGS: AtomicUsize = AtomicUsize::new(0);

/// Appends its firing's idempotency key and a newline to the file `log` (an effect outside the
/// net) and passes its input on. In a child process with `CAMELEON_JOURNAL_TEST_ABORT_AT` = N,
/// its N-th firing there calls `std::process::abort()` right after the append: the effect is
/// made, the firing never returns — a crash, with whatever the journal had committed.
#[operator(id = "jt_crash", family = behavioral)]
pub struct CrashOp {
    #[param(default = "")]
    log: String,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for CrashOp {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        use std::io::Write as _;
        let v = cx.get(Self::in_data)?.clone();
        let key = cx.idempotency_key();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .and_then(|mut f| f.write_all(format!("{key}\n").as_bytes()))
            .map_err(|e| e.to_string())?;
        let n = CRASH_FIRINGS.fetch_add(1, Ordering::SeqCst) + 1;
        let abort_at = std::env::var(ABORT_AT).ok().and_then(|a| a.parse().ok());
        if abort_at == Some(n) {
            if let Ok(db) = std::env::var(WAIT_COMMITTED) {
                // `RUN/BRANCH/STEP/OP`: every step before this one on disk, then the crash.
                let parts: Vec<&str> = key.split('/').collect();
                let before: usize = parts[2].parse::<usize>().map_err(|e| e.to_string())? - 1;
                test_support::wait_until(
                    "the batch flusher commits the steps before the crash",
                    test_support::WAIT_TIMEOUT,
                    || {
                        Journal::open(&db)
                            .and_then(|j| j.history(parts[0]))
                            .is_ok_and(|h| h.entries.len() >= before)
                    },
                );
            }
            std::process::abort();
        }
        cx.emit(Self::out_data, v);
        Ok(())
    }
}

/// The counter loop of examples/counter.cm with an effect in it: merge, counter, `fx`
/// (`jt_crash`, appending to `log`), guard (< 5), an accumulator of 2 (internal state), two
/// sinks. Five rounds: `fx` fires five times.
fn effect_loop(log: &Path) -> Net {
    Net::from_cm(&format!(
        "name: effect-loop
operators:
  - {{id: zero, type: const, params: {{value: 0}}}}
  - {{id: loop, type: merge}}
  - {{id: inc, type: counter}}
  - {{id: fx, type: jt_crash, params: {{log: {log:?}}}}}
  - {{id: tap, type: fork}}
  - {{id: check, type: guard, params: {{continue_if: {{lt: 5}}}}}}
  - {{id: collect, type: accumulator, params: {{n: 2}}}}
  - {{id: done, type: sink}}
  - {{id: pairs, type: sink}}
connections:
  - {{from: zero.out_data, to: loop.in_a}}
  - {{from: check.out_continue, to: loop.in_b}}
  - {{from: loop.out_data, to: inc.in_data}}
  - {{from: inc.out_data, to: fx.in_data}}
  - {{from: fx.out_data, to: tap.in_data}}
  - {{from: tap.out_a, to: check.in_data}}
  - {{from: tap.out_b, to: collect.in_data}}
  - {{from: check.out_exit, to: done.in_data}}
  - {{from: collect.out_data, to: pairs.in_data}}
",
        log = log.display().to_string()
    ))
    .unwrap()
}

/// A crash to stage: the run's mode and durability, the `fx` firing that aborts.
#[derive(Debug, Serialize, Deserialize)]
struct Crash {
    db: PathBuf,
    log: PathBuf,
    parallel: bool,
    /// `sync`, `exit`, or `batch` with `batch_ms`.
    durability: String,
    batch_ms: u64,
    abort_at: usize,
    /// Abort only once the flusher committed every step before (`batch`).
    wait_committed: bool,
}

impl Crash {
    fn mode(&self) -> Mode {
        if self.parallel {
            Mode::Parallel
        } else {
            Mode::Sequential
        }
    }
    fn durability(&self) -> Durability {
        match self.durability.as_str() {
            "sync" => Durability::Sync,
            "exit" => Durability::Exit,
            _ => Durability::Batch { ms: self.batch_ms },
        }
    }
}

/// The child's entry: with `CAMELEON_JOURNAL_TEST_CRASH` set, starts the journaled run it
/// describes, which aborts the process inside a firing. Run as a test, it does nothing.
#[test]
fn crash_child_process() {
    let Ok(spec) = std::env::var(CRASH_CHILD) else {
        return;
    };
    let c: Crash = serde_json::from_str(&spec).expect("the crash to stage");
    let journal = Journal::create(&c.db).expect("a journal");
    let mut cvm = Cvm::builder(effect_loop(&c.log)).mode(c.mode()).build();
    let opts = RunOptions {
        durability: c.durability(),
        ..RunOptions::default()
    };
    journal.start(&mut cvm, &opts).expect("the run starts");
    let end = cvm.run();
    eprintln!("the run ended without a crash: {end:?}");
    std::process::exit(3);
}

fn log_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `(branch, step)` of an idempotency key `RUN/BRANCH/STEP/OP`.
fn step_of(key: &str) -> (u32, u32) {
    let p: Vec<&str> = key.split('/').collect();
    (p[1].parse().unwrap(), p[2].parse().unwrap())
}

/// Stages `c` in a child process (which aborts), checks what the journal kept — `expected`
/// committed steps, a function of the step the crash happened in — then resumes the run here
/// and checks it ends as an uncrashed run does (driven by `run_async` when `asynchronous`),
/// without calling the operator of any committed step again.
fn crash(c: Crash, asynchronous: bool, expected: impl Fn(u32) -> u32) {
    let context = format!("{c:?}");
    let reference = {
        let dir = test_support::TempDir::new("journal-crash-reference");
        let mut cvm = Cvm::builder(effect_loop(&dir.join("fx.log")))
            .mode(c.mode())
            .build();
        let end = cvm.run().unwrap();
        let steps: Vec<(u32, u32)> = log_lines(&dir.join("fx.log"))
            .iter()
            .map(|k| step_of(k))
            .collect();
        (outcome(&cvm, &end), steps)
    };
    assert_eq!(reference.1.len(), 5, "five rounds");
    let crash_step = reference.1[c.abort_at - 1].1;

    let mut cmd = test_support::Cmd::new(std::env::current_exe().unwrap())
        .args([
            "crash_child_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_CHILD, serde_json::to_string(&c).unwrap())
        .env(ABORT_AT, c.abort_at.to_string());
    if c.wait_committed {
        cmd = cmd.env(WAIT_COMMITTED, &c.db);
    }
    let o = cmd.run();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(6),
        "{context}: the child aborts (SIGABRT): {}",
        test_support::stderr(&o)
    );
    let before = log_lines(&c.log);
    assert_eq!(
        before.len(),
        c.abort_at,
        "{context}: effects before the crash"
    );

    // What the journal kept: the committed steps, no more.
    let journal = Journal::open(&c.db).unwrap();
    let runs = journal.runs().unwrap();
    assert_eq!(runs.len(), 1, "{context}");
    assert_eq!(runs[0].status, "RUNNING", "{context}: crashed, not ended");
    let id = runs[0].id.clone();
    let committed = journal.history(&id).unwrap().entries;
    let k = committed.len() as u32;
    assert_eq!(
        k,
        expected(crash_step),
        "{context}: committed steps (the crash in step {crash_step})"
    );

    // Resumed here: the committed steps are restored, the lost ones run again, the run ends as
    // an uncrashed one.
    let resumed = journal.resume(Some(&id)).unwrap();
    assert!(!resumed.is_finished(), "{context}");
    let mut cvm = resumed.cvm;
    assert_eq!(cvm.depth() as u32, k, "{context}: restored");
    assert_eq!(
        log_lines(&c.log).len(),
        before.len(),
        "{context}: restoring ran an operator"
    );
    let end = if asynchronous {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(cvm.run_async()).unwrap()
    } else {
        cvm.run().unwrap()
    };
    assert_eq!(outcome(&cvm, &end), reference.0, "{context}");
    let after = log_lines(&c.log)[before.len()..].to_vec();
    // The committed steps' effects: once, in the crashed process. The steps after them (the
    // window `batch` or `exit` had not committed, and the step of the crash): twice.
    for key in before.iter().chain(&after) {
        let (_, step) = step_of(key);
        let n = before.iter().chain(&after).filter(|k| *k == key).count();
        let lost = step > k && step <= crash_step;
        assert_eq!(n, if lost { 2 } else { 1 }, "{context}: {key}");
        if step <= k {
            assert!(!after.contains(key), "{context}: committed {key} ran again");
        }
    }
    let mut all: Vec<(u32, u32)> = after.iter().map(|k| step_of(k)).collect();
    all.extend(before.iter().map(|k| step_of(k)).filter(|&(_, s)| s <= k));
    all.sort_unstable();
    assert_eq!(
        all, reference.1,
        "{context}: every effect of the run, each once in the end"
    );
    let again = journal.resume(Some(&id)).unwrap();
    assert!(again.is_finished(), "{context}");
}

fn staged(
    tag: &str,
    parallel: bool,
    durability: &str,
    batch_ms: u64,
    abort_at: usize,
) -> (test_support::TempDir, Crash) {
    let dir = test_support::TempDir::new(&format!("journal-crash-{tag}"));
    let c = Crash {
        db: dir.join("runs.db"),
        log: dir.join("fx.log"),
        parallel,
        durability: durability.into(),
        batch_ms,
        abort_at,
        wait_committed: false,
    };
    (dir, c)
}

#[test]
fn an_abort_in_a_sync_run_loses_only_the_step_in_flight() {
    for parallel in [false, true] {
        for abort_at in [1, 3, 5] {
            let (_dir, c) = staged("sync", parallel, "sync", 0, abort_at);
            crash(c, abort_at == 3, |step| step - 1);
        }
    }
}

#[test]
fn an_abort_in_an_exit_run_loses_everything_and_resume_runs_it_all_again() {
    for parallel in [false, true] {
        let (_dir, c) = staged("exit", parallel, "exit", 0, 4);
        crash(c, parallel, |_| 0);
    }
}

#[test]
fn an_abort_in_a_batch_run_loses_the_window_not_yet_committed() {
    for parallel in [false, true] {
        // A window that never closes (ten minutes): everything since the start is lost.
        let (_dir, c) = staged("batch-open", parallel, "batch", 600_000, 3);
        crash(c, false, |_| 0);
        // A window the flusher closed before the crash: only the step in flight is lost.
        let (_dir, mut c) = staged("batch-closed", parallel, "batch", 1, 4);
        c.wait_committed = true;
        crash(c, true, |step| step - 1);
    }
}

#[test]
fn the_accumulators_state_is_restored_mid_collection() {
    let path = db("state");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(counter_loop());
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    // Up to the accumulator's first firing: it holds [1] and has emitted nothing.
    while cvm.fire_count(cvm.net().op_id("collect").unwrap()) == 0 {
        cvm.step().unwrap();
    }
    let collect = cvm.net().op_id("collect").unwrap();
    let held = |cvm: &Cvm| {
        cvm.net()
            .op(collect)
            .operator()
            .save_state()
            .unwrap()
            .to_json()
            .unwrap()
    };
    assert_eq!(held(&cvm), serde_json::json!([[1]]));
    drop(cvm);
    let mut cvm = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(held(&cvm), serde_json::json!([[1]]));
    cvm.run().unwrap();
    let pairs: Vec<_> = cvm.received("pairs").iter().map(|v| v.to_json()).collect();
    assert_eq!(
        pairs,
        [serde_json::json!([1, 2]), serde_json::json!([3, 4])]
    );
}

#[test]
fn back_refire_and_checkout_are_journaled_as_a_tree() {
    let path = db("tree");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("tree", 3));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    for _ in 0..3 {
        cvm.step().unwrap(); // src, c0, c1
    }
    cvm.back().unwrap(); // c1 undone, kept for replay
    cvm.refire().unwrap(); // c1 again: a second branch
    cvm.step().unwrap(); // c2 on branch 2
    let branches = cvm.branches();
    assert_eq!(branches.len(), 2);
    let old = branches.iter().find(|b| !b.current).unwrap().id;
    drop(cvm);

    let h = journal.history(&id).unwrap();
    let shape: Vec<(u32, u32, String)> = h
        .entries
        .iter()
        .map(|e| (e.step, e.branch, e.ops.join(",")))
        .collect();
    assert_eq!(
        shape,
        [
            (1, 1, "src".into()),
            (2, 1, "c0".into()),
            (3, 1, "c1".into()),
            (3, 2, "c1".into()),
            (4, 2, "c2".into())
        ]
    );
    assert_eq!(h.branches.len(), 2);
    assert!(h.branches[1].current && !h.branches[0].current);
    assert_eq!((h.branches[1].from_step, h.branches[1].steps), (3, 4));

    // Resumed: the same tree, at the same position; the old branch can be checked out.
    let mut cvm = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(cvm.depth(), 4);
    assert_eq!(cvm.branches().len(), 2);
    let before = calls("tree").len();
    cvm.checkout(old).unwrap();
    assert_eq!(cvm.depth(), 3);
    assert_eq!(
        calls("tree").len(),
        before,
        "checkout replays, it does not run"
    );
    drop(cvm);
    // The checkout is on disk: resuming puts us on the old branch, its tip at step 3.
    let cvm = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(cvm.depth(), 3);
    assert_eq!(cvm.fireable(), ["c2"]);
    let h = journal.history(&id).unwrap();
    assert!(h.branches[0].current && !h.branches[1].current);
}

#[test]
fn backward_steps_are_on_disk_and_replay_after_resume() {
    let path = db("back");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("back", 2));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    cvm.back().unwrap();
    cvm.back().unwrap();
    let at = cvm.marking();
    let depth = cvm.depth();
    drop(cvm);
    let runs_before = calls("back").len();
    let mut cvm = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(cvm.depth(), depth);
    assert_eq!(cvm.history().redo_len(), 2);
    assert_eq!(
        at.0.iter().map(|c| c.0).collect::<Vec<_>>(),
        cvm.marking().0.iter().map(|c| c.0).collect::<Vec<_>>()
    );
    assert!(matches!(
        cvm.step().unwrap(),
        Step::Fired { replayed: true, .. }
    ));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls("back").len(), runs_before, "replayed, not run again");
}

// ---------------------------------------------------------------------------------------------
// Failures at the firing; idempotency keys

#[test]
fn an_unserialisable_value_undoes_its_step_and_its_rerun_has_the_same_idempotency_key() {
    let tag = "fragile";
    let net = Net::from_cm(&format!(
        "operators:
  - {{id: src, type: const, params: {{value: 1}}}}
  - {{id: a, type: jt_counted, params: {{tag: {tag}}}}}
  - {{id: f, type: jt_fragile, params: {{tag: {tag}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: src.out_data, to: a.in_data}}
  - {{from: a.out_data, to: f.in_data}}
  - {{from: f.out_data, to: out.in_data}}
"
    ))
    .unwrap();
    let path = db("fragile");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(net);
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap();
    let before: Marking = cvm.marking();
    FRAGILE.lock().unwrap().push(tag.into());
    let err = cvm.step().unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StepError::Record(_)), "{msg}");
    assert!(
        msg.contains("`f` emitted a Fragile that cannot be written as JSON"),
        "{msg}"
    );
    assert!(msg.contains("refuses to be written"), "{msg}");
    assert_eq!(cvm.depth(), 2, "the step was undone");
    assert_eq!(cvm.marking(), before);
    assert_eq!(
        rows(&path, "SELECT count(*) FROM entries"),
        2,
        "nothing of it on disk"
    );
    drop(cvm);

    // The firing that could not be journaled runs again on resume, with the same key.
    FRAGILE.lock().unwrap().retain(|t| t != tag);
    let mut cvm = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let keys = calls(tag);
    assert_eq!(keys.len(), 3, "{keys:?}"); // a once, f twice
    assert_eq!(keys[0], format!("{id}/1/2/a"));
    assert_eq!(keys[1], format!("{id}/1/3/f"));
    assert_eq!(keys[1], keys[2], "the re-run has the same idempotency key");
    assert!(SERDE_FAILS.load(Ordering::SeqCst) >= 1);
}

#[test]
fn refire_starts_a_branch_and_its_idempotency_key_says_so() {
    let tag = "key-branch";
    let mut cvm = Cvm::builder(chain(tag, 1)).run_id("r").build();
    cvm.step().unwrap();
    cvm.step().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    assert_eq!(calls(tag), ["r/1/2/c0", "r/2/2/c0"]);
}

// ---------------------------------------------------------------------------------------------
// What cannot be journaled

#[test]
fn an_operator_whose_state_has_no_serde_form_is_refused_naming_it() {
    let mut b = Net::builder("opaque");
    b.add("src", cameleon::ops::Const::new(serde_json::json!(1)));
    b.add("secret", Opaque { n: 0 });
    b.add("out", cameleon::ops::Sink::new());
    b.connect("src.out_data", "secret.in_data");
    b.connect("secret.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    let path = db("opaque");
    let journal = Journal::create(&path).unwrap();
    let err = journal.start(&mut cvm, &RunOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, JournalError::NotJournalable(_)), "{msg}");
    assert!(
        msg.contains("operator `secret` (type `jt_opaque`)"),
        "{msg}"
    );
    assert!(msg.contains("OpState::serde"), "{msg}");
    assert!(journal.runs().unwrap().is_empty());
    // Un-journaled, it runs.
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
}

#[test]
fn a_net_that_does_not_load_back_from_its_cm_is_refused_at_start() {
    struct Unlisted;
    impl Operator for Unlisted {
        fn spec(&self) -> OpSpec {
            OpSpec::new("jt_unlisted", "Unlisted", Family::Behavioral, Policy::Any)
                .input("in_data", TypeRef::of::<DataJSON>())
        }
        fn run(&mut self, _: &mut Firing<'_>) -> Result<(), OpError> {
            Ok(())
        }
    }
    let mut b = Net::builder("unlisted");
    b.add("src", cameleon::ops::Const::new(serde_json::json!(1)));
    b.add("x", Unlisted);
    b.connect("src.out_data", "x.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    let path = db("unlisted");
    let journal = Journal::create(&path).unwrap();
    let msg = journal
        .start(&mut cvm, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("does not load back"), "{msg}");
    assert!(msg.contains("jt_unlisted"), "{msg}");
}

#[test]
fn a_journal_starts_on_a_fresh_engine_only() {
    let mut cvm = Cvm::new(chain("fresh", 1));
    cvm.step().unwrap();
    let path = db("fresh");
    let journal = Journal::create(&path).unwrap();
    let msg = journal
        .start(&mut cvm, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("fresh engine"), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// Durability

#[test]
fn sync_commits_each_step_before_the_next_and_exit_only_at_the_end() {
    for (durability, per_step) in [
        (Durability::Sync, true),
        (Durability::Strict, true),
        (Durability::Exit, false),
    ] {
        let path = db(&format!("durability-{}", durability.name()));
        let journal = Journal::create(&path).unwrap();
        let mut cvm = Cvm::new(chain("durability", 3));
        let opts = RunOptions {
            durability,
            ..RunOptions::default()
        };
        journal.start(&mut cvm, &opts).unwrap();
        for k in 1..=3 {
            cvm.step().unwrap();
            let on_disk = rows(&path, "SELECT count(*) FROM entries");
            assert_eq!(
                on_disk,
                if per_step { k } else { 0 },
                "{}",
                durability.name()
            );
        }
        assert_eq!(cvm.run().unwrap(), EndState::Completed);
        assert_eq!(rows(&path, "SELECT count(*) FROM entries"), 5);
        assert_eq!(rows(&path, "SELECT steps FROM progress"), 5);
    }
}

#[test]
fn batch_commits_what_waits_from_its_own_thread() {
    let path = db("batch");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("batch", 3));
    let opts = RunOptions {
        durability: Durability::Batch { ms: 5 },
        ..RunOptions::default()
    };
    journal.start(&mut cvm, &opts).unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap();
    // No further step: the flusher thread commits them by itself.
    let mut waited = 0;
    while rows(&path, "SELECT count(*) FROM entries") < 2 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        waited += 1;
        assert!(waited < 12_000, "the batch was never committed");
    }
    assert_eq!(rows(&path, "SELECT steps FROM progress"), 2);
    assert_eq!(
        journal.runs().unwrap()[0].status,
        "RUNNING",
        "not ended yet"
    );
}

#[test]
fn two_runs_journal_into_one_file_at_once() {
    let path = db("shared");
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                let journal = Journal::create(&path).unwrap();
                let mut cvm = Cvm::new(chain(&format!("shared-{i}"), 40));
                let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
                assert_eq!(cvm.run().unwrap(), EndState::Completed);
                id
            })
        })
        .collect();
    let ids: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let journal = Journal::open(&path).unwrap();
    for id in &ids {
        let h = journal.history(id).unwrap();
        assert_eq!(h.entries.len(), 42);
        let cvm = journal.resume(Some(id)).unwrap();
        assert!(cvm.is_finished());
        assert_eq!(cvm.cvm.depth(), 42);
    }
    assert!(
        journal
            .runs()
            .unwrap()
            .iter()
            .all(|r| r.status == "COMPLETED")
    );
}

// ---------------------------------------------------------------------------------------------
// Bad files, unknown ids, nets this program cannot build

fn bytes(p: &PathBuf) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Asserts the file holds `before` (without printing megabytes on failure).
fn untouched(p: &PathBuf, before: &[u8]) {
    assert!(bytes(p) == before, "`{}` was modified", p.display());
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_untouched() {
    // Text.
    let text = db("text");
    std::fs::write(&text, "hello, not a database\n").unwrap();
    for r in [Journal::open(&text), Journal::create(&text)] {
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("is not a Caméléon journal: it is not a SQLite database"),
            "{msg}"
        );
    }
    untouched(&text, b"hello, not a database\n");
    // Another program's SQLite database.
    let foreign = db("foreign");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch(
            "CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('ada');",
        )
        .unwrap();
    }
    let before = bytes(&foreign);
    for r in [Journal::open(&foreign), Journal::create(&foreign)] {
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("SQLite database of another program (tables: customers)"),
            "{msg}"
        );
    }
    untouched(&foreign, &before);
    assert!(!PathBuf::from(format!("{}-wal", foreign.display())).exists());
    // Missing.
    let missing = db("missing");
    let msg = Journal::open(&missing).unwrap_err().to_string();
    assert!(msg.contains("the file does not exist"), "{msg}");
    assert!(!missing.exists(), "opening for reading created it");
}

#[test]
fn a_journal_of_a_newer_schema_is_refused_untouched() {
    let path = db("newer");
    drop(Journal::create(&path).unwrap());
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute("UPDATE meta SET value = '99' WHERE key = 'schema'", [])
            .unwrap();
    }
    let before = bytes(&path);
    let err = Journal::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            JournalError::TooNew {
                version: 99,
                supported: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("use a newer cameleon"));
    untouched(&path, &before);
}

#[test]
fn a_truncated_journal_is_reported_damaged_untouched() {
    let path = db("truncated");
    {
        let journal = Journal::create(&path).unwrap();
        let mut cvm = Cvm::new(chain("truncated", 300));
        journal.start(&mut cvm, &RunOptions::default()).unwrap();
        cvm.run().unwrap();
    } // the last connection closed: the WAL is checkpointed into the file
    let full = bytes(&path);
    assert!(full.len() > 8192, "{}", full.len());
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    let before = bytes(&path);
    let err = Journal::open(&path)
        .and_then(|j| {
            let id = j.runs()?[0].id.clone();
            j.resume(Some(&id)).map(|_| ())
        })
        .unwrap_err();
    assert!(matches!(err, JournalError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("is damaged"), "{err}");
    untouched(&path, &before);
}

#[test]
fn an_unknown_run_id_or_nothing_to_resume_is_an_error() {
    let path = db("ids");
    let journal = Journal::create(&path).unwrap();
    let err = journal.resume(None).unwrap_err();
    assert!(matches!(err, JournalError::NothingToResume { .. }), "{err}");
    let mut cvm = Cvm::new(chain("ids", 1));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.run().unwrap();
    let err = journal.resume(Some("nope")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, JournalError::UnknownRun { .. }), "{msg}");
    assert!(msg.contains(&format!("most recent: {id}")), "{msg}");
    assert!(matches!(
        journal.history("nope"),
        Err(JournalError::UnknownRun { .. })
    ));
    assert!(matches!(
        journal.resume(None),
        Err(JournalError::NothingToResume { .. })
    ));
}

#[test]
fn a_stored_net_whose_operator_types_this_program_lacks_is_an_error_naming_them() {
    let path = db("types");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("types", 1));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.step().unwrap();
    drop(cvm);
    {
        // As if written by a program with an operator type this one does not have.
        let c = rusqlite::Connection::open(&path).unwrap();
        let cm: String = c
            .query_row("SELECT cm FROM runs", [], |r| r.get(0))
            .unwrap();
        let cm = cm.replace("type: jt_counted", "type: acme_summarize");
        // The stored hash is FNV-1a 64 of the text: recomputed, so only the type is at fault.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in cm.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        c.execute(
            "UPDATE runs SET cm = ?1, cm_hash = ?2",
            (&cm, format!("{h:016x}")),
        )
        .unwrap();
    }
    drop(journal); // the last connection: everything is in the file itself
    let before = bytes(&path);
    let journal = Journal::open(&path).unwrap();
    let err = journal.resume(Some(&id)).unwrap_err();
    let JournalError::Net { error, .. } = &err else {
        panic!("{err}");
    };
    let problems = format!("{:?}", error.problems());
    assert!(problems.contains("acme_summarize"), "{problems}");
    drop(journal);
    untouched(&path, &before);
}

#[test]
fn an_edited_stored_net_is_reported_damaged() {
    let path = db("edited");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("edited", 1));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    drop(cvm);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE runs SET cm = cm || '# edited'", [])
        .unwrap();
    let err = journal.resume(Some(&id)).unwrap_err();
    assert!(err.to_string().contains("does not match its hash"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// The engine's hook, without SQLite; reading a run without journaling

/// Keeps what it is told in memory, as another journal backend would: each step's record.
#[derive(Default)]
struct InMemory {
    steps: std::sync::Arc<Mutex<Vec<cameleon::history::StepRecord>>>,
    position: std::sync::Arc<Mutex<cameleon::engine::Position>>,
}

impl cameleon::engine::Recorder for InMemory {
    fn committed(
        &mut self,
        step: &cameleon::engine::Committed<'_>,
    ) -> Result<(), cameleon::engine::RecordError> {
        self.steps.lock().unwrap().push(step.record()?);
        *self.position.lock().unwrap() = step.position();
        Ok(())
    }
    fn moved(
        &mut self,
        at: cameleon::engine::Position,
    ) -> Result<(), cameleon::engine::RecordError> {
        *self.position.lock().unwrap() = at;
        Ok(())
    }
    fn ended(
        &mut self,
        _: &EndState,
        at: cameleon::engine::Position,
    ) -> Result<(), cameleon::engine::RecordError> {
        *self.position.lock().unwrap() = at;
        Ok(())
    }
}

#[test]
fn a_recorder_sees_every_step_and_restore_rebuilds_the_run_without_running_it() {
    let rec = InMemory::default();
    let (steps, position) = (rec.steps.clone(), rec.position.clone());
    let mut cvm = Cvm::new(chain("hook", 3));
    cvm.set_recorder(Box::new(rec));
    for _ in 0..4 {
        cvm.step().unwrap();
    }
    cvm.back().unwrap();
    let marking: Vec<_> = cvm
        .marking()
        .0
        .into_iter()
        .map(|(s, t)| (s, t.map(|t| t.value.to_json())))
        .collect();
    let ran = calls("hook").len();
    assert_eq!(steps.lock().unwrap().len(), 4);
    // The whole tree's record is the records of its steps as they were committed.
    assert_eq!(cvm.record().unwrap().nodes, *steps.lock().unwrap());
    let at = *position.lock().unwrap();
    assert_eq!((at.tip, at.redo_tip, at.depth), (Some(2), Some(3), 3));

    let mut fresh = Cvm::new(chain("hook", 3));
    fresh
        .restore(cameleon::history::Recorded {
            nodes: std::mem::take(&mut *steps.lock().unwrap()),
            tip: at.tip,
            redo_tip: at.redo_tip,
        })
        .unwrap();
    assert_eq!(calls("hook").len(), ran, "restore ran an operator");
    let restored: Vec<_> = fresh
        .marking()
        .0
        .into_iter()
        .map(|(s, t)| (s, t.map(|t| t.value.to_json())))
        .collect();
    assert_eq!(restored, marking);
    assert_eq!(fresh.position(), cvm.position());
    assert!(matches!(
        fresh.step().unwrap(),
        Step::Fired { replayed: true, .. }
    ));
    assert_eq!(
        calls("hook").len(),
        ran,
        "the recorded future is replayed, not run"
    );
    // A record that does not fit the net is refused.
    let mut other = Cvm::new(chain("hook", 3));
    let bad = cameleon::history::Recorded {
        nodes: vec![cameleon::history::StepRecord {
            parent: None,
            firings: vec![cameleon::history::FiringRecord {
                op: 1, // c0, which is not enabled at the start
                ..Default::default()
            }],
            ..Default::default()
        }],
        tip: Some(0),
        redo_tip: None,
    };
    let err = other.restore(bad).unwrap_err().to_string();
    assert!(err.contains("`c0` is not enabled there"), "{err}");
}

#[test]
fn the_record_of_the_whole_tree_is_the_records_of_its_steps_as_committed() {
    // Operators that fire again and again, a branch, an accumulator's state: each node's
    // tokens are its own range of the arena, found again exactly from the tree.
    let rec = InMemory::default();
    let steps = rec.steps.clone();
    let mut cvm = Cvm::new(counter_loop());
    cvm.set_recorder(Box::new(rec));
    for _ in 0..9 {
        cvm.step().unwrap();
    }
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.branches().len(), 2);
    let whole = cvm.record().unwrap();
    assert_eq!(whole.nodes, *steps.lock().unwrap());
    // Its serde form reads back as itself, and restores the run without running it.
    let json = serde_json::to_value(&whole).unwrap();
    let back: cameleon::history::Recorded = serde_json::from_value(json).unwrap();
    assert_eq!(back, whole);
    let mut fresh = Cvm::new(counter_loop());
    fresh.restore(back).unwrap();
    assert_eq!(fresh.record().unwrap(), whole);
    // Step by step, as a journal reads its entries: the same run, at the same position.
    let mut streamed = Cvm::new(counter_loop());
    let mut restoring = streamed.restoring().unwrap();
    for step in whole.nodes.iter().cloned() {
        restoring.push(step).unwrap();
    }
    restoring.finish(whole.tip, whole.redo_tip).unwrap();
    assert_eq!(streamed.record().unwrap(), whole);
    assert_eq!(streamed.position(), cvm.position());
    // A step whose parent comes after it is refused as it is pushed.
    let mut early = Cvm::new(counter_loop());
    let mut restoring = early.restoring().unwrap();
    let mut orphan = whole.nodes[1].clone();
    orphan.parent = Some(5);
    let err = restoring.push(orphan).unwrap_err().to_string();
    assert!(err.contains("its parent #5 comes after it"), "{err}");
    assert_eq!(
        fresh.received("done")[0].to_json(),
        cvm.received("done")[0].to_json()
    );
}

#[test]
fn open_run_travels_a_run_without_changing_its_journal() {
    let path = db("travel");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(chain("travel", 2));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.run().unwrap();
    drop(cvm);
    let mut run = journal.open_run(&id).unwrap();
    assert!(run.is_finished());
    run.cvm.rewind();
    assert_eq!(run.cvm.depth(), 0);
    assert_eq!(run.cvm.history().redo_len(), 4);
    drop(run);
    assert_eq!(rows(&path, "SELECT steps FROM progress"), 4);
    assert_eq!(
        rows(
            &path,
            "SELECT count(*) FROM progress WHERE redo_tip IS NULL"
        ),
        1
    );
    assert_eq!(journal.runs().unwrap()[0].status, "COMPLETED");
}

/// `ask q (DataJSON) → jt_counted → sink`, counted under `tag`.
fn asked(tag: &str) -> Net {
    Net::from_cm(&format!(
        "name: asked\noperators:\n  - {{id: q, type: ask, params: {{prompt: 'Which?', type: DataJSON}}}}\n  - {{id: c, type: jt_counted, params: {{tag: {tag}}}}}\n  - {{id: out, type: sink}}\nconnections:\n  - {{from: q.out_data, to: c.in_data}}\n  - {{from: c.out_data, to: out.in_data}}\n"
    ))
    .unwrap()
}

#[test]
fn an_answered_ask_is_restored_and_replayed_on_resume_without_asking_again() {
    // Restored on the path: the ask fired with its answer; resume needs no answer.
    let path = db("ask-restored");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(asked("ask_restored"));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.provide_json("q", serde_json::json!({"pick": 1}))
        .unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap();
    drop(cvm);
    let mut again = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(again.depth(), 2);
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(
        again.received("out")[0].to_json(),
        serde_json::json!({"pick": 1})
    );
    assert_eq!(
        calls("ask_restored").len(),
        1,
        "`c` ran once, before the crash"
    );

    // Recorded future: back over both firings, crash, resume replays them (nobody asked).
    let path = db("ask-replayed");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(asked("ask_replayed"));
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.provide_json("q", serde_json::json!("x")).unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap();
    cvm.back().unwrap();
    cvm.back().unwrap();
    drop(cvm);
    let mut again = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!((again.depth(), again.history().redo_len()), (0, 2));
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(again.received("out")[0].to_json(), "x");
    assert_eq!(calls("ask_replayed").len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Sub-nets and maps: their inner runs are journaled with their parent's firing

/// A folder holding `inner.cm` (`input x → jt_counted (tag) → output y`) and the outer net's
/// text: `const 1 → sub (subnet) → out`, `const [1,2,3] → m (map) → results`.
fn nested(tag: &str) -> (test_support::TempDir, String) {
    let dir = test_support::TempDir::new(&format!("journal-nested-{tag}"));
    std::fs::write(
        dir.join("inner.cm"),
        format!(
            "name: inner\noperators:\n  - {{id: x, type: input, params: {{name: x}}}}\n  - {{id: c, type: jt_counted, params: {{tag: {tag}}}}}\n  - {{id: y, type: output, params: {{name: y}}}}\nconnections:\n  - {{from: x.out_data, to: c.in_data}}\n  - {{from: c.out_data, to: y.in_data}}\n"
        ),
    )
    .unwrap();
    let outer = "name: outer\noperators:\n  - {id: one, type: const, params: {value: 1}}\n  - {id: sub, type: subnet, params: {net: inner.cm}}\n  - {id: out, type: sink}\n  - {id: items, type: const, params: {value: [1, 2, 3]}}\n  - {id: m, type: map, params: {net: inner.cm}}\n  - {id: results, type: sink}\nconnections:\n  - {from: one.out_data, to: sub.in_x}\n  - {from: sub.out_y, to: out.in_data}\n  - {from: items.out_data, to: m.in_items}\n  - {from: m.out_results, to: results.in_data}\n".to_owned();
    (dir, outer)
}

fn load_in(dir: &std::path::Path, text: &str) -> Net {
    cameleon::cm::Loader::new()
        .base_dir(dir)
        .load_str(text)
        .unwrap()
}

/// Each inner run of `op`, as JSON with its trace.
fn inner(cvm: &Cvm, op: &str) -> Vec<serde_json::Value> {
    let node = &cvm.net().operators()[cvm.net().op_id(op).unwrap().index()];
    cameleon::ops::inner_runs(node)
        .unwrap()
        .iter()
        .flatten()
        .map(|r| shown(r))
        .collect()
}

#[test]
fn inner_runs_are_restored_on_resume_without_running_an_inner_operator() {
    // Uninterrupted, for reference.
    let (dir, outer) = nested("nested_ref");
    let mut reference = Cvm::new(load_in(&dir, &outer));
    assert_eq!(reference.run().unwrap(), EndState::Completed);
    assert_eq!(
        calls("nested_ref").len(),
        4,
        "one sub-net run, three map items"
    );

    let (dir, outer) = nested("nested");
    let path = db("nested");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(load_in(&dir, &outer));
    let opts = RunOptions {
        base_dir: Some(dir.to_path_buf()),
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).unwrap();
    while calls("nested").len() < 4 {
        cvm.step().unwrap();
    }
    let depth = cvm.depth();
    drop(cvm); // a crash after both inner-net firings
    let mut again = journal.resume(Some(&id)).unwrap().cvm;
    assert_eq!(again.depth(), depth);
    assert_eq!(calls("nested").len(), 4, "restoring ran no inner operator");
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(calls("nested").len(), 4, "nor did finishing the run");
    assert_eq!(again.received("out")[0].to_json(), serde_json::json!(1));
    assert_eq!(
        again.received("results")[0].to_json(),
        serde_json::json!([1, 2, 3])
    );
    // The inner runs, their traces included, are the uninterrupted run's.
    for op in ["sub", "m"] {
        assert_eq!(inner(&again, op), inner(&reference, op), "{op}");
        assert!(!inner(&again, op)[0]["trace"].as_array().unwrap().is_empty());
    }
    // Back over everything and forward again: inner runs rewound and replayed, never re-run.
    again.rewind();
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(calls("nested").len(), 4);
    assert_eq!(inner(&again, "sub"), inner(&reference, "sub"));
}

#[test]
fn a_subnet_fired_twice_keeps_both_runs_across_resume_and_back() {
    let (dir, _) = nested("twice");
    let outer = "name: twice\noperators:\n  - {id: a, type: const, params: {value: 1}}\n  - {id: b, type: const, params: {value: 2}}\n  - {id: mm, type: merge}\n  - {id: sub, type: subnet, params: {net: inner.cm}}\n  - {id: out, type: sink}\nconnections:\n  - {from: a.out_data, to: mm.in_a}\n  - {from: b.out_data, to: mm.in_b}\n  - {from: mm.out_data, to: sub.in_x}\n  - {from: sub.out_y, to: out.in_data}\n";
    let mut reference = Cvm::new(load_in(&dir, outer));
    assert_eq!(reference.run().unwrap(), EndState::Completed);
    let runs = calls("twice").len();
    assert_eq!(runs, 2);

    let path = db("twice");
    let journal = Journal::create(&path).unwrap();
    let mut cvm = Cvm::new(load_in(&dir, outer));
    let opts = RunOptions {
        base_dir: Some(dir.to_path_buf()),
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    drop(cvm);
    let mut again = journal.open_run(&id).unwrap().cvm;
    assert_eq!(
        calls("twice").len(),
        4,
        "the journaled run ran it twice; restoring, never"
    );
    assert_eq!(inner(&again, "sub"), inner(&reference, "sub"));
    assert_eq!(inner(&again, "sub").len(), 2);
    // Back over the last sink and the second sub-net firing: one run left, with its trace.
    while inner(&again, "sub").len() == 2 {
        again.back().unwrap();
    }
    assert_eq!(inner(&again, "sub"), inner(&reference, "sub")[..1].to_vec());
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(inner(&again, "sub"), inner(&reference, "sub"));
    assert_eq!(calls("twice").len(), 4);
}

/// An inner run as the CLI shows it (its end's fields at the top), its trace included.
fn shown(r: &cameleon::ops::InnerRun) -> serde_json::Value {
    let mut j = serde_json::to_value(r.end()).unwrap();
    j["net"] = r.net().into();
    if let Some(i) = r.item() {
        j["item"] = i.into();
    }
    j["steps"] = r.steps().into();
    j["firings"] = r.firings().into();
    j["trace"] = r.with_cvm(Cvm::trace_lines).unwrap_or_default().into();
    j
}
