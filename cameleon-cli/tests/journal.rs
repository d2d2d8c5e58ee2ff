//! Durable runs through the command line (docs/cli.md, "Durable runs"): `run --journal`,
//! `resume` after SIGKILL mid-run, `runs`, `history`, exit codes, bad files.
//!
//! The crash tests need an operator with an effect outside the net, which the `cameleon` binary
//! does not have. So this test binary is also the command line: run with `CLI_CHILD_ARGS` set,
//! its test `cli_child_process` calls `cameleon_cli::run_cli` — what the binary's `main` calls
//! — with those arguments, and this file's `jt_effect` operator is linked in (as a crate's own
//! operators are in its `cameleon_cli::main()`, docs/cli.md). `jt_effect` appends its firing's
//! idempotency key to a file: the file says which firings ran, in which process, how often.

use std::path::Path;

use serde_json::Value;
use test_support::{Bin, TempDir, code, json, s, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

use test_support::example;

/// The report without the run id (a journaled run's only difference).
fn without_id(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("run_id");
    }
    v
}

// ---------------------------------------------------------------------------------------------
// run --journal, resume, runs, history

#[test]
fn a_journaled_run_names_its_id_first_on_stderr_and_in_json() {
    let d = TempDir::new("cli-journal-id");
    let db = d.join("runs.db");
    let o = CAMELEON.run(&[
        "run",
        &example("counter.cm"),
        "--journal",
        &s(&db),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let first = err.lines().next().unwrap_or_default();
    let id = first.strip_prefix("run ").expect(&err).to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let v = json(&o);
    assert_eq!(v["run_id"], id.as_str());
    let plain = json(&CAMELEON.run(&["run", &example("counter.cm"), "--json"]));
    assert_eq!(without_id(v), plain);

    let runs = json(&CAMELEON.run(&["runs", &s(&db), "--json"]));
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let keys: Vec<&str> = runs[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["id", "name", "status", "steps", "started"]);
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(runs[0]["name"], "count-to-five");
    assert_eq!(runs[0]["status"], "COMPLETED");
    assert_eq!(runs[0]["steps"], plain["steps"]);

    let h = json(&CAMELEON.run(&["history", &s(&db), &id, "--json"]));
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(entries.len() as u64, plain["steps"].as_u64().unwrap());
    assert_eq!(
        entries[0],
        serde_json::json!({"step": 1, "ops": ["zero"], "branch": 1})
    );
    assert_eq!(h["branches"].as_array().unwrap().len(), 1);
    assert_eq!(h["branches"][0]["current"], true);
    // The text forms.
    let t = stdout(&CAMELEON.run(&["runs", &s(&db)]));
    assert!(
        t.contains(&id) && t.contains("COMPLETED") && t.contains("count-to-five"),
        "{t}"
    );
    let t = stdout(&CAMELEON.run(&["history", &s(&db), &id]));
    assert!(t.contains("branch 1: steps 1–28 (current)"), "{t}");
}

#[test]
fn resuming_a_finished_run_prints_its_end_with_its_exit_code_firing_nothing() {
    let d = TempDir::new("cli-journal-finished");
    for (file, exit) in [("counter.cm", 0), ("deadlock.cm", 3), ("runaway.cm", 4)] {
        let db = d.join(format!("{file}.db"));
        let trace = d.join(format!("{file}.jsonl"));
        let first = CAMELEON.run(&[
            "run",
            &example(file),
            "--journal",
            &s(&db),
            "--json",
            "--trace",
            &s(&trace),
        ]);
        assert_eq!(code(&first), exit, "{file}: {}", stderr(&first));
        let id = stderr(&first).lines().next().unwrap()[4..].to_owned();
        let size = std::fs::metadata(&db).unwrap().len();
        let again_trace = d.join(format!("{file}.again.jsonl"));
        // The journal is not kept beside the net: the user names its folder.
        let again = CAMELEON.run(&[
            "resume",
            &s(&db),
            &id,
            "--json",
            "--trace",
            &s(&again_trace),
            "--base",
            &example(""),
        ]);
        assert_eq!(code(&again), exit, "{file}: {}", stderr(&again));
        assert_eq!(
            stderr(&again).lines().next(),
            Some(format!("run {id}").as_str())
        );
        assert_eq!(json(&again), json(&first), "{file}");
        assert!(
            std::fs::read(&trace).unwrap() == std::fs::read(&again_trace).unwrap(),
            "{file}: the traces differ"
        );
        let h = json(&CAMELEON.run(&["history", &s(&db), &id, "--json"]));
        assert_eq!(
            h["entries"].as_array().unwrap().len() as u64,
            json(&first)["steps"].as_u64().unwrap(),
            "{file}: resuming recorded nothing new"
        );
        assert!(std::fs::metadata(&db).unwrap().len() <= size.max(4096 * 8));
        // Without an id: nothing left to resume.
        let none = CAMELEON.run(&["resume", &s(&db)]);
        assert_eq!(code(&none), 2, "{file}");
        assert!(
            stderr(&none).contains("nothing to resume"),
            "{}",
            stderr(&none)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The crash test: SIGKILL while the journal holds committed steps, then `resume`

/// The child's arguments (a JSON array, after the program name); set, this test binary is the
/// command line (see the top of the file).
const CHILD_ARGS: &str = "CAMELEON_CLI_TEST_CHILD_ARGS";
/// The file `jt_effect` appends its keys to.
const EFFECTS: &str = "CAMELEON_CLI_TEST_EFFECTS";
/// In the child: `jt_effect`'s N-th append in this process, and every later one, holds its
/// firing until the process is killed.
const HOLD_AT: &str = "CAMELEON_CLI_TEST_HOLD_AT";
/// Printed by the child before what the command wrote on standard output (the test harness
/// prints its own lines first).
const STDOUT_MARK: &str = "\n--- cameleon stdout ---\n";

/// `jt_effect`, declared apart from this file's uses of `serde_json::Value`.
mod effect {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use cameleon::prelude::*;

    /// `jt_effect`'s appends in this process.
    static APPENDS: AtomicUsize = AtomicUsize::new(0);

    /// Appends its firing's idempotency key (`RUN/BRANCH/STEP/OP`) and a newline to the file
    /// named by `$CAMELEON_CLI_TEST_EFFECTS` — an effect outside the net, made once per call of
    /// `run` — then passes its input on. Blocking (the default `exec`): the firings of a
    /// parallel step run at the same time, each on a thread of tokio's blocking pool.
    #[operator(id = "jt_effect", family = behavioral)]
    pub struct Effect {
        #[input]
        in_data: In<DataJSON>,
        #[output]
        out_data: Out<DataJSON>,
    }

    impl Run for Effect {
        fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
            let v = cx.get(Self::in_data)?.clone();
            let path = std::env::var(super::EFFECTS).map_err(|_| "no effects file")?;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| e.to_string())?;
            // One write of a short line in append mode: lines never interleave.
            f.write_all(format!("{}\n", cx.idempotency_key()).as_bytes())
                .map_err(|e| e.to_string())?;
            let n = APPENDS.fetch_add(1, Ordering::SeqCst) + 1;
            let hold: usize = std::env::var(super::HOLD_AT)
                .ok()
                .and_then(|h| h.parse().ok())
                .unwrap_or(usize::MAX);
            if n >= hold {
                // Held: the test kills the process now. (Bounded, so no orphan lingers.)
                std::thread::sleep(std::time::Duration::from_secs(300));
                std::process::exit(99);
            }
            cx.emit(Self::out_data, v);
            Ok(())
        }
    }
}

/// The child's entry: with `CAMELEON_CLI_TEST_CHILD_ARGS` set, runs the command line with those
/// arguments and exits with its code. Run as a test, it does nothing.
#[test]
fn cli_child_process() {
    let Ok(args) = std::env::var(CHILD_ARGS) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).expect("the child's arguments");
    let mut out = Vec::new();
    let (mut err, mut input) = (std::io::stderr(), std::io::empty());
    let mut io = cameleon_cli::Io {
        stdout: &mut out,
        stderr: &mut err,
        stdin: &mut input,
        color: false,
        progress: false,
        prompt: false,
        interrupt: None,
    };
    let code = cameleon_cli::run_cli(std::iter::once("cameleon".to_owned()).chain(args), &mut io);
    use std::io::Write as _;
    let mut o = std::io::stdout();
    let _ = o.write_all(STDOUT_MARK.as_bytes());
    let _ = o.write_all(&out);
    let _ = o.flush();
    std::process::exit(code);
}

/// This test binary as the command line with `args`, its effects appended to `effects`, its
/// `hold`-th effect held.
fn child(args: &[&str], effects: &Path, hold: Option<usize>) -> test_support::Cmd {
    let mut c = test_support::Cmd::new(std::env::current_exe().expect("the test binary"))
        .args([
            "cli_child_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ARGS, serde_json::to_string(args).expect("JSON"))
        .env(EFFECTS, effects)
        .env_remove(HOLD_AT);
    if let Some(n) = hold {
        c = c.env(HOLD_AT, n.to_string());
    }
    c
}

/// What the child's command wrote on standard output.
fn child_stdout(o: &std::process::Output) -> String {
    let out = stdout(o);
    match out.split_once(STDOUT_MARK) {
        Some((_, after)) => after.to_owned(),
        None => panic!(
            "the child printed no output mark: {out}\nstderr: {}",
            stderr(o)
        ),
    }
}

fn child_json(o: &std::process::Output) -> Value {
    let out = child_stdout(o);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{}", stderr(o)))
}

/// Rounds of the crash-test net's loop: each round fires `a` and `b` once.
const ROUNDS: usize = 6;

/// A loop of `ROUNDS` rounds whose `fork` feeds two effects, `a` and `b`, enabled together:
/// in parallel mode every round has a step of two concurrent firings, `{a, b}`. `b` feeds an
/// accumulator (internal state, restored by `resume`), `a` the loop's guard.
fn crash_net(dir: &Path) -> String {
    let text = format!(
        "name: effects
operators:
  - {{id: zero, type: const, params: {{value: 0}}}}
  - {{id: loop, type: merge}}
  - {{id: inc, type: counter}}
  - {{id: split, type: fork}}
  - {{id: a, type: jt_effect}}
  - {{id: b, type: jt_effect}}
  - {{id: check, type: guard, params: {{continue_if: {{lt: {ROUNDS}}}}}}}
  - {{id: collect, type: accumulator, params: {{n: 4}}}}
  - {{id: done, type: sink}}
  - {{id: batches, type: sink}}
connections:
  - {{from: zero.out_data, to: loop.in_a}}
  - {{from: check.out_continue, to: loop.in_b}}
  - {{from: loop.out_data, to: inc.in_data}}
  - {{from: inc.out_data, to: split.in_data}}
  - {{from: split.out_a, to: a.in_data}}
  - {{from: split.out_b, to: b.in_data}}
  - {{from: a.out_data, to: check.in_data}}
  - {{from: b.out_data, to: collect.in_data}}
  - {{from: check.out_exit, to: done.in_data}}
  - {{from: collect.out_data, to: batches.in_data}}
"
    );
    let p = dir.join("effects.cm");
    std::fs::write(&p, text).expect("the net is written");
    s(&p)
}

/// An effect key `RUN/BRANCH/STEP/OP` as `(branch, step, op)`.
fn firing_of(key: &str) -> (u64, u64, String) {
    let parts: Vec<&str> = key.split('/').collect();
    assert_eq!(parts.len(), 4, "not an idempotency key: {key}");
    let n = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{key}"));
    (n(parts[1]), n(parts[2]), parts[3].to_owned())
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// How many times `key` is in `keys`.
fn times(keys: &[String], key: &str) -> usize {
    keys.iter().filter(|k| *k == key).count()
}

/// One mode's crash test: rounds of `run --journal` held at a random effect (seeded) and killed
/// there with SIGKILL, then `resume`. A round counts when the killed run's journal held k ≥ 1
/// committed steps; every round is checked.
fn crash_test(mode: &str, seed: u64) {
    let d = TempDir::new(&format!("cli-crash-{mode}"));
    let net = crash_net(&d);
    // The uninterrupted run: its report, trace and effects.
    let ref_trace = d.join("reference.jsonl");
    let ref_effects = d.join("reference.effects");
    let reference = child(
        &[
            "run",
            &net,
            "--mode",
            mode,
            "--json",
            "--trace",
            &s(&ref_trace),
        ],
        &ref_effects,
        None,
    )
    .run();
    assert_eq!(code(&reference), 0, "{}", stderr(&reference));
    let reference_json = child_json(&reference);
    let reference_trace = std::fs::read(&ref_trace).expect("the reference trace");
    let mut reference_firings: Vec<(u64, u64, String)> =
        lines(&ref_effects).iter().map(|k| firing_of(k)).collect();
    reference_firings.sort();
    assert_eq!(reference_firings.len(), 2 * ROUNDS, "{reference_firings:?}");

    let mut rng = test_support::Rng::new(seed);
    let mut counted = 0;
    let durabilities = ["sync", "batch", "strict", "exit", "sync", "batch", "sync"];
    for (round, durability) in durabilities.iter().enumerate() {
        let db = d.join(format!("round{round}.db"));
        let effects = d.join(format!("round{round}.effects"));
        let hold = rng.between(1, 2 * ROUNDS);
        let context = format!("{mode} round {round} ({durability}, held at effect {hold})");
        let mut first = child(
            &[
                "run",
                &net,
                "--mode",
                mode,
                "--journal",
                &s(&db),
                "--durability",
                durability,
                "--batch-ms",
                "5",
                "--json",
            ],
            &effects,
            Some(hold),
        )
        .spawn();
        let id = first
            .stderr_line(1, test_support::WAIT_TIMEOUT)
            .strip_prefix("run ")
            .unwrap_or_else(|| panic!("{context}: no `run <ID>` first on stderr"))
            .to_owned();
        // Held at the `hold`-th effect. In parallel mode the two effects of a step start
        // together and neither waits for the other: wait for both (the pair's appends are
        // lines 2j-1 and 2j), so the kill cuts a step with two firings under way.
        let want = if mode == "parallel" {
            hold.div_ceil(2) * 2
        } else {
            hold
        };
        test_support::wait_until(
            &format!("{context}: {want} effects appended"),
            test_support::WAIT_TIMEOUT,
            || lines(&effects).len() >= want,
        );
        assert!(first.running(), "{context}: the run ended before the kill");
        first.signal(test_support::Signal::Kill);
        let status = first.wait(test_support::WAIT_TIMEOUT);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{context}: killed by SIGKILL"
        );
        let before = lines(&effects);
        assert_eq!(before.len(), want, "{context}: nothing ran past the hold");

        // What the journal holds after the kill: k committed steps.
        let h = json(&CAMELEON.run(&["history", &s(&db), &id, "--json"]));
        let committed: Vec<(u64, u64, Vec<String>)> = h["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{context}: {h}"))
            .iter()
            .map(|e| {
                let ops = e["ops"].as_array().expect("ops");
                (
                    e["branch"].as_u64().expect("a branch"),
                    e["step"].as_u64().expect("a step"),
                    ops.iter()
                        .map(|o| o.as_str().unwrap_or("").to_owned())
                        .collect(),
                )
            })
            .collect();
        let k = committed.len() as u64;
        let held_step = firing_of(before.last().expect("an effect")).1;
        match *durability {
            "sync" => assert_eq!(k, held_step - 1, "{context}: sync commits every step"),
            "exit" => assert_eq!(k, 0, "{context}: exit commits nothing before the end"),
            _ => assert!(k < held_step, "{context}: the held step was not committed"),
        }
        counted += usize::from(k >= 1);

        let trace = d.join(format!("round{round}.jsonl"));
        let last = child(
            &["resume", &s(&db), "--json", "--trace", &s(&trace)],
            &effects,
            None,
        )
        .run();
        // The effects: what the killed run did, then what `resume` did.
        let all = lines(&effects);
        let after = all[before.len()..].to_vec();
        for key in &all {
            assert!(
                key.starts_with(&format!("{id}/")),
                "{context}: a key of another run: {key}"
            );
        }
        // Restored, not re-run: the effect of every committed step appears exactly once, from
        // the killed run, and `resume` never calls those operators again.
        for (branch, step, ops) in &committed {
            for op in ops.iter().filter(|o| *o == "a" || *o == "b") {
                let key = format!("{id}/{branch}/{step}/{op}");
                assert_eq!(times(&before, &key), 1, "{context}: {key} before the kill");
                assert_eq!(
                    times(&after, &key),
                    0,
                    "{context}: `resume` called the operator of committed step {step} again ({key})"
                );
            }
        }
        assert_eq!(code(&last), 0, "{context}: {}", stderr(&last));
        assert_eq!(
            stderr(&last).lines().next(),
            Some(format!("run {id}").as_str()),
            "{context}"
        );
        assert_eq!(without_id(child_json(&last)), reference_json, "{context}");
        assert!(
            std::fs::read(&trace).expect("the resumed trace") == reference_trace,
            "{context}: the trace differs from the uninterrupted run's ({})",
            trace.display()
        );
        let runs = json(&CAMELEON.run(&["runs", &s(&db), "--json"]));
        assert_eq!(runs[0]["status"], "COMPLETED", "{context}");
        assert_eq!(runs[0]["steps"], reference_json["steps"], "{context}");

        // Every firing happened, each at most once per process: at most twice in all, and
        // twice only for a step that was not committed (with `sync`, the step in flight).
        let mut firings: Vec<(u64, u64, String)> = all.iter().map(|k| firing_of(k)).collect();
        firings.sort();
        firings.dedup();
        assert_eq!(
            firings, reference_firings,
            "{context}: the effects of the run"
        );
        for key in &all {
            let (b, a) = (times(&before, key), times(&after, key));
            assert!(b <= 1 && a <= 1, "{context}: {key} {b} + {a} times");
            if b + a == 2 {
                let step = firing_of(key).1;
                assert!(step > k, "{context}: committed step {step} ran again");
                if *durability == "sync" {
                    assert_eq!(
                        step, held_step,
                        "{context}: only the step in flight ran twice"
                    );
                }
            }
        }
        if mode == "parallel" {
            // The kill cut a step of two concurrent firings: both ran, and run again.
            let in_flight: Vec<&String> = before
                .iter()
                .filter(|k| firing_of(k).1 == held_step)
                .collect();
            assert_eq!(in_flight.len(), 2, "{context}: {in_flight:?}");
            for key in in_flight {
                assert_eq!(times(&all, key), 2, "{context}: {key}");
            }
        }
    }
    // Every `sync` round and most others killed a run whose journal held committed steps.
    assert!(
        counted >= 4,
        "{mode}: only {counted} of {} rounds were killed with a committed step",
        durabilities.len()
    );
}

#[test]
fn sigkill_with_committed_steps_then_resume_restores_them_without_running_them_sequential() {
    crash_test("sequential", 0x5eed_0001);
}

#[test]
fn sigkill_with_committed_steps_then_resume_restores_them_without_running_them_parallel() {
    crash_test("parallel", 0x5eed_0002);
}

#[test]
fn two_processes_journal_into_one_file_at_once_and_both_complete() {
    let d = TempDir::new("cli-journal-two");
    let db = d.join("shared.db");
    let reference = json(&CAMELEON.run(&["run", &example("slow_count.cm"), "--json"]));
    let children: Vec<test_support::Proc> = ["sequential", "parallel"]
        .iter()
        .map(|mode| {
            CAMELEON
                .cmd()
                .args(["run", &example("slow_count.cm"), "--journal", &s(&db)])
                .args(["--mode", mode, "--json"])
                .spawn()
        })
        .collect();
    let mut ids = Vec::new();
    for c in children {
        let o = c.wait_output(test_support::RUN_TIMEOUT);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v = json(&o);
        ids.push(v["run_id"].as_str().unwrap().to_owned());
        assert_eq!(v["sinks"], reference["sinks"]);
    }
    let runs = json(&CAMELEON.run(&["runs", &s(&db), "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 2);
    for id in &ids {
        let r = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap();
        assert_eq!(r["status"], "COMPLETED");
        let h = json(&CAMELEON.run(&["history", &s(&db), id, "--json"]));
        assert_eq!(
            h["entries"].as_array().unwrap().len() as u64,
            r["steps"].as_u64().unwrap(),
            "nothing lost"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input: exit 2, the file untouched

fn expect_invalid(args: &[&str], says: &str) {
    let o = CAMELEON.run(args);
    assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
}

#[test]
fn a_file_that_is_not_a_journal_exits_2_untouched() {
    let d = TempDir::new("cli-journal-bad");
    let text = d.join("notes.txt");
    std::fs::write(&text, "not a database").unwrap();
    for args in [
        vec!["resume", &s(&text)],
        vec!["runs", &s(&text)],
        vec!["history", &s(&text), "x"],
        vec!["run", &example("linear.cm"), "--journal", &s(&text)],
    ] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_invalid(
            &args,
            "is not a Caméléon journal: it is not a SQLite database",
        );
    }
    assert!(std::fs::read(&text).unwrap() == b"not a database");
    let missing = d.join("missing.db");
    expect_invalid(&["resume", &s(&missing)], "the file does not exist");
    assert!(!missing.exists());
    let o = CAMELEON.run(&["runs", &s(&missing), "--json"]);
    assert_eq!(code(&o), 2);
    assert!(
        json(&o)["error"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
}

#[test]
fn a_truncated_journal_exits_2_untouched() {
    let d = TempDir::new("cli-journal-truncated");
    let db = d.join("runs.db");
    for _ in 0..3 {
        let o = CAMELEON.run(&["run", &example("digest.cm"), "--journal", &s(&db)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let full = std::fs::read(&db).unwrap();
    std::fs::write(&db, &full[..full.len() * 2 / 3]).unwrap();
    let before = std::fs::read(&db).unwrap();
    let id = "01a22d20-0000-7000-8000-000000000000";
    let o = CAMELEON.run(&["resume", &s(&db), id]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is damaged"), "{}", stderr(&o));
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the damaged file was modified"
    );
}

#[test]
fn an_unknown_run_id_exits_2_naming_the_known_ones() {
    let d = TempDir::new("cli-journal-unknown");
    let db = d.join("runs.db");
    let o = CAMELEON.run(&["run", &example("linear.cm"), "--journal", &s(&db)]);
    let id = stderr(&o).lines().next().unwrap()[4..].to_owned();
    for cmd in ["resume", "history"] {
        let o = CAMELEON.run(&[cmd, &s(&db), "no-such-run"]);
        assert_eq!(code(&o), 2);
        let e = stderr(&o);
        assert!(e.contains("no run `no-such-run`") && e.contains(&id), "{e}");
    }
}

#[test]
fn a_stored_net_whose_operator_types_this_program_lacks_exits_2_naming_them() {
    let d = TempDir::new("cli-journal-types");
    let db = d.join("runs.db");
    let o = CAMELEON.run(&["run", &example("linear.cm"), "--journal", &s(&db)]);
    assert_eq!(code(&o), 0);
    let id = stderr(&o).lines().next().unwrap()[4..].to_owned();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let cm: String = c
            .query_row("SELECT cm FROM runs", [], |r| r.get(0))
            .unwrap();
        let cm = cm.replacen("type: sink", "type: acme_publish", 1);
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
        c.execute("UPDATE progress SET status = 'RUNNING'", [])
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let o = CAMELEON.run(&["resume", &s(&db), &id, "--base", &example("")]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("its stored net does not load with this program"),
        "{e}"
    );
    assert!(e.contains("acme_publish"), "{e}");
    assert!(std::fs::read(&db).unwrap() == before);
}

#[test]
fn durability_without_a_journal_is_a_usage_error() {
    let o = CAMELEON.run(&["run", &example("linear.cm"), "--durability", "batch"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--journal"), "{}", stderr(&o));
}

#[test]
fn a_net_with_sub_nets_is_journaled_and_its_resumed_trace_has_the_inner_runs() {
    let d = TempDir::new("cli-journal-subnet");
    let db = d.join("runs.db");
    let plain = d.join("plain.jsonl");
    let o = CAMELEON.run(&["run", &example("subnet.cm"), "--trace", &s(&plain)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let traced = d.join("journaled.jsonl");
    let o = CAMELEON.run(&[
        "run",
        &example("subnet.cm"),
        "--journal",
        &s(&db),
        "--trace",
        &s(&traced),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = json(&o)["run_id"].as_str().unwrap().to_owned();
    // A finished run: resume restores every step (the sub-nets' inner runs with them) and
    // fires nothing; its trace holds every firing from step 1, inner runs included.
    let resumed = d.join("resumed.jsonl");
    let o = CAMELEON.run(&[
        "resume",
        &s(&db),
        &id,
        "--trace",
        &s(&resumed),
        "--base",
        &example(""),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let plain = std::fs::read_to_string(&plain).unwrap();
    assert!(plain.contains("\"inner\":[{"), "{plain}");
    assert_eq!(std::fs::read_to_string(&traced).unwrap(), plain);
    assert_eq!(std::fs::read_to_string(&resumed).unwrap(), plain);
}
