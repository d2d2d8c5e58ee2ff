//! Durable runs through the real binary (docs/cli.md, "Durable runs"): `run --journal`,
//! `resume` after `kill -9` at random instants, `runs`, `history`, exit codes, bad files.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cameleon"));
    c.stdin(Stdio::null());
    c
}

fn cameleon(args: &[&str]) -> Output {
    bin().args(args).output().expect("the cameleon binary runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
        .display()
        .to_string()
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cameleon-cli-journal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

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
    let d = dir("id");
    let db = d.join("runs.db");
    let o = cameleon(&[
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
    let plain = json(&cameleon(&["run", &example("counter.cm"), "--json"]));
    assert_eq!(without_id(v), plain);

    let runs = json(&cameleon(&["runs", &s(&db), "--json"]));
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

    let h = json(&cameleon(&["history", &s(&db), &id, "--json"]));
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(entries.len() as u64, plain["steps"].as_u64().unwrap());
    assert_eq!(
        entries[0],
        serde_json::json!({"step": 1, "ops": ["zero"], "branch": 1})
    );
    assert_eq!(h["branches"].as_array().unwrap().len(), 1);
    assert_eq!(h["branches"][0]["current"], true);
    // The text forms.
    let t = stdout(&cameleon(&["runs", &s(&db)]));
    assert!(
        t.contains(&id) && t.contains("COMPLETED") && t.contains("count-to-five"),
        "{t}"
    );
    let t = stdout(&cameleon(&["history", &s(&db), &id]));
    assert!(t.contains("branch 1: steps 1–28 (current)"), "{t}");
}

#[test]
fn resuming_a_finished_run_prints_its_end_with_its_exit_code_firing_nothing() {
    let d = dir("finished");
    for (file, exit) in [("counter.cm", 0), ("deadlock.cm", 3), ("runaway.cm", 4)] {
        let db = d.join(format!("{file}.db"));
        let trace = d.join(format!("{file}.jsonl"));
        let first = cameleon(&[
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
        let again = cameleon(&[
            "resume",
            &s(&db),
            &id,
            "--json",
            "--trace",
            &s(&again_trace),
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
        let h = json(&cameleon(&["history", &s(&db), &id, "--json"]));
        assert_eq!(
            h["entries"].as_array().unwrap().len() as u64,
            json(&first)["steps"].as_u64().unwrap(),
            "{file}: resuming recorded nothing new"
        );
        assert!(std::fs::metadata(&db).unwrap().len() <= size.max(4096 * 8));
        // Without an id: nothing left to resume.
        let none = cameleon(&["resume", &s(&db)]);
        assert_eq!(code(&none), 2, "{file}");
        assert!(
            stderr(&none).contains("nothing to resume"),
            "{}",
            stderr(&none)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The crash test

/// A small seeded generator (xorshift64*): the kill instants are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn spawn(args: &[&str], out: &Path) -> Child {
    bin()
        .args(args)
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
        .spawn()
        .expect("the cameleon binary starts")
}

/// Starts `args`, kills it with SIGKILL after `ms` milliseconds (if still running).
fn kill_after(args: &[&str], out: &Path, ms: u64) -> bool {
    let mut child = spawn(args, out);
    std::thread::sleep(Duration::from_millis(ms));
    let killed = matches!(child.try_wait(), Ok(None));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    killed
}

fn crash_test(mode: &str, seed: u64) {
    let d = dir(&format!("crash-{mode}"));
    let ref_trace = d.join("reference.jsonl");
    let reference = cameleon(&[
        "run",
        &example("slow_count.cm"),
        "--mode",
        mode,
        "--json",
        "--trace",
        &s(&ref_trace),
    ]);
    assert_eq!(code(&reference), 0, "{}", stderr(&reference));
    let reference_json = json(&reference);
    let reference_trace = std::fs::read(&ref_trace).unwrap();
    let mut rng = Rng(seed);
    let mut kills = 0;
    for round in 0..6 {
        let durability = ["sync", "batch", "exit"][round % 3];
        let db = d.join(format!("round{round}.db"));
        let run_args = [
            "run",
            &example("slow_count.cm"),
            "--mode",
            mode,
            "--journal",
            &s(&db),
            "--durability",
            durability,
            "--batch-ms",
            "20",
            "--json",
        ];
        let first = rng.below(1100);
        kills += usize::from(kill_after(
            &run_args,
            &d.join(format!("round{round}.run.out")),
            first,
        ));
        // Sometimes the resume is killed too.
        let mut second = None;
        if rng.below(3) == 0 {
            let ms = rng.below(700);
            second = Some(ms);
            kills += usize::from(kill_after(
                &["resume", &s(&db), "--json"],
                &d.join(format!("round{round}.resume1.out")),
                ms,
            ));
        }
        let trace = d.join(format!("round{round}.jsonl"));
        let mut last = cameleon(&["resume", &s(&db), "--json", "--trace", &s(&trace)]);
        if code(&last) == 2 {
            // Killed before the run was journaled (before `run <ID>`): nothing to resume, as
            // the message says; the user runs it again.
            let why = stderr(&last);
            assert!(
                why.contains("does not exist")
                    || why.contains("the file is empty")
                    || why.contains("nothing to resume")
                    || why.contains("no tables"),
                "round {round} ({durability}, killed at {first} ms): {why}"
            );
            let rerun = cameleon(&[&run_args[..], &["--trace", &s(&trace)]].concat());
            last = rerun;
        }
        let context =
            format!("{mode} round {round} ({durability}, killed at {first} ms, then {second:?})");
        assert_eq!(code(&last), 0, "{context}: {}", stderr(&last));
        assert_eq!(without_id(json(&last)), reference_json, "{context}");
        assert!(
            std::fs::read(&trace).unwrap() == reference_trace,
            "{context}: the trace differs from the uninterrupted run's ({})",
            trace.display()
        );
        // The journal agrees: one run, COMPLETED, every step recorded.
        let runs = json(&cameleon(&["runs", &s(&db), "--json"]));
        assert_eq!(runs[0]["status"], "COMPLETED", "{context}");
        assert_eq!(runs[0]["steps"], reference_json["steps"], "{context}");
    }
    assert!(
        kills >= 3,
        "{mode}: only {kills} kills landed while a process ran"
    );
}

#[test]
fn kill_9_at_random_instants_then_resume_gives_the_uninterrupted_run_sequential() {
    crash_test("sequential", 0x5eed_0001);
}

#[test]
fn kill_9_at_random_instants_then_resume_gives_the_uninterrupted_run_parallel() {
    crash_test("parallel", 0x5eed_0002);
}

#[test]
fn two_processes_journal_into_one_file_at_once_and_both_complete() {
    let d = dir("two");
    let db = d.join("shared.db");
    let reference = json(&cameleon(&["run", &example("slow_count.cm"), "--json"]));
    let children: Vec<(Child, PathBuf)> = ["sequential", "parallel"]
        .iter()
        .map(|mode| {
            let out = d.join(format!("{mode}.out"));
            let c = spawn(
                &[
                    "run",
                    &example("slow_count.cm"),
                    "--journal",
                    &s(&db),
                    "--mode",
                    mode,
                    "--json",
                ],
                &out,
            );
            (c, out)
        })
        .collect();
    let mut ids = Vec::new();
    for (mut c, out) in children {
        let status = c.wait().unwrap();
        let err = std::fs::read_to_string(out.with_extension("err")).unwrap();
        assert!(status.success(), "{err}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        ids.push(v["run_id"].as_str().unwrap().to_owned());
        assert_eq!(v["sinks"], reference["sinks"]);
    }
    let runs = json(&cameleon(&["runs", &s(&db), "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 2);
    for id in &ids {
        let r = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap();
        assert_eq!(r["status"], "COMPLETED");
        let h = json(&cameleon(&["history", &s(&db), id, "--json"]));
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
    let o = cameleon(args);
    assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
}

#[test]
fn a_file_that_is_not_a_journal_exits_2_untouched() {
    let d = dir("bad");
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
    let o = cameleon(&["runs", &s(&missing), "--json"]);
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
    let d = dir("truncated");
    let db = d.join("runs.db");
    for _ in 0..3 {
        let o = cameleon(&["run", &example("digest.cm"), "--journal", &s(&db)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let full = std::fs::read(&db).unwrap();
    std::fs::write(&db, &full[..full.len() * 2 / 3]).unwrap();
    let before = std::fs::read(&db).unwrap();
    let id = "01a22d20-0000-7000-8000-000000000000";
    let o = cameleon(&["resume", &s(&db), id]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is damaged"), "{}", stderr(&o));
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the damaged file was modified"
    );
}

#[test]
fn an_unknown_run_id_exits_2_naming_the_known_ones() {
    let d = dir("unknown");
    let db = d.join("runs.db");
    let o = cameleon(&["run", &example("linear.cm"), "--journal", &s(&db)]);
    let id = stderr(&o).lines().next().unwrap()[4..].to_owned();
    for cmd in ["resume", "history"] {
        let o = cameleon(&[cmd, &s(&db), "no-such-run"]);
        assert_eq!(code(&o), 2);
        let e = stderr(&o);
        assert!(e.contains("no run `no-such-run`") && e.contains(&id), "{e}");
    }
}

#[test]
fn a_stored_net_whose_operator_types_this_program_lacks_exits_2_naming_them() {
    let d = dir("types");
    let db = d.join("runs.db");
    let o = cameleon(&["run", &example("linear.cm"), "--journal", &s(&db)]);
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
            "UPDATE runs SET cm = ?1, cm_hash = ?2, status = 'RUNNING'",
            (&cm, format!("{h:016x}")),
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let o = cameleon(&["resume", &s(&db), &id]);
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
    let o = cameleon(&["run", &example("linear.cm"), "--durability", "batch"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--journal"), "{}", stderr(&o));
}

#[test]
fn a_net_with_sub_nets_is_journaled_and_its_resumed_trace_has_the_inner_runs() {
    let d = dir("subnet");
    let db = d.join("runs.db");
    let plain = d.join("plain.jsonl");
    let o = cameleon(&["run", &example("subnet.cm"), "--trace", &s(&plain)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let traced = d.join("journaled.jsonl");
    let o = cameleon(&[
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
    let o = cameleon(&["resume", &s(&db), &id, "--trace", &s(&resumed)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let plain = std::fs::read_to_string(&plain).unwrap();
    assert!(plain.contains("\"inner\":[{"), "{plain}");
    assert_eq!(std::fs::read_to_string(&traced).unwrap(), plain);
    assert_eq!(std::fs::read_to_string(&resumed).unwrap(), plain);
}
