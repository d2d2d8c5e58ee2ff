//! `cameleon check --verify`, `export --pnml` and `run --follow` through the real binary, on the
//! workflow-pattern examples (`examples/wcp/`) and the known-bad nets (`examples/wcp/bad/`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use test_support::{Bin, TempDir, code, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn wcp(name: &str) -> String {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    dir.join(name).display().to_string()
}

fn verify_json(file: &str) -> (i32, Value) {
    let o = CAMELEON.run(&["check", &wcp(file), "--verify", "--json"]);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| {
        panic!("{file}: not JSON ({e}): {}", stdout(&o));
    });
    (code(&o), v)
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn every_workflow_pattern_verifies_sound_with_exit_0() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cm") {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let (code, v) = verify_json(&name);
            assert_eq!(code, 0, "{name}: {v}");
            assert_eq!(v["valid"], true);
            assert_eq!(v["verdict"], "holds", "{name}");
            assert_eq!(v["deadlock_free"], true, "{name}");
            assert_eq!(v["witness"], Value::Null, "{name}");
            assert!(v["states"].as_u64().unwrap() > 0);
            seen += 1;
        }
    }
    assert!(seen >= 36, "{seen} workflow patterns");
}

/// The examples docs/patterns.md lists: `(number, example)` of each supported pattern.
fn table() -> Vec<(u32, String)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/patterns.md"))
            .unwrap();
    doc.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let n: u32 = cells.get(1)?.parse().ok()?;
            let file = cells
                .iter()
                .find_map(|c| c.split('`').find(|s| s.ends_with(".cm")))?;
            Some((n, file.to_owned()))
        })
        .collect()
}

#[test]
fn every_workflow_pattern_example_runs_and_verifies_through_the_cli() {
    let rows = table();
    assert!(
        rows.len() >= 36,
        "docs/patterns.md lists {} supported patterns",
        rows.len()
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for (n, file) in &rows {
        let path = dir.join(file).display().to_string();
        assert!(
            file.starts_with(&format!("wcp/wcp{n:02}-")),
            "WCP-{n}: {file} is not its example"
        );
        let o = CAMELEON.run(&["run", &path, "--json"]);
        assert_eq!(code(&o), 0, "WCP-{n} {file}: {}", stdout(&o));
        let o = CAMELEON.run(&["check", &path, "--verify"]);
        assert_eq!(code(&o), 0, "WCP-{n} {file}: {}", stdout(&o));
        let o = CAMELEON.run(&["fmt", &path, "--check"]);
        assert_eq!(code(&o), 0, "WCP-{n} {file}: not canonical");
    }
    // The tests the table names exist.
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/patterns.md"))
            .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in doc.split('`').filter(|s| {
        let word = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        s.split_once("::").is_some_and(|(m, f)| word(m) && word(f))
    }) {
        let (module, test) = name.split_once("::").unwrap();
        let found = ["cameleon/tests", "cameleon-cli/tests"].iter().any(|d| {
            std::fs::read_to_string(root.join(d).join(format!("{module}.rs")))
                .is_ok_and(|src| src.contains(&format!("fn {test}(")))
        });
        assert!(
            found,
            "docs/patterns.md names `{name}`, which does not exist"
        );
    }
    // And every example is in the table.
    for entry in std::fs::read_dir(dir.join("wcp")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".cm") {
            assert!(
                rows.iter().any(|(_, f)| *f == format!("wcp/{name}")),
                "{name} is not in docs/patterns.md"
            );
        }
    }
}

#[test]
fn xor_split_and_join_fails_with_its_deadlock_witness_and_exit_3() {
    let (exit, v) = verify_json("bad/xor-split-and-join.cm");
    assert_eq!(exit, 3);
    assert_eq!(v["deadlock_free"], false);
    // The witness names operators (docs/cli.md); its path says which way the gate went.
    assert_eq!(
        strings(&v["witness"]),
        ["src", "split", "test", "choose", "a"]
    );
    assert_eq!(
        strings(&v["witness_path"]),
        ["src", "split", "test", "choose:out_true", "a"]
    );
    assert_eq!(strings(&v["dead_operators"]), ["both", "out"]);
    // The human form says the same.
    let o = CAMELEON.run(&["check", &wcp("bad/xor-split-and-join.cm"), "--verify"]);
    assert_eq!(code(&o), 3);
    assert!(
        stdout(&o).contains("witness: src → split → test → choose:out_true → a"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn loop_without_exit_fails_option_to_complete_with_exit_3() {
    let (code, v) = verify_json("bad/loop-without-exit.cm");
    assert_eq!(code, 3);
    assert_eq!(v["deadlock_free"], true);
    assert_eq!(v["option_to_complete"], false);
    assert_eq!(
        strings(&v["properties"]["option_to_complete"]["path"]),
        ["src", "split", "test", "choose:out_false"]
    );
    assert_eq!(v["may_loop"], true);
}

#[test]
fn accumulator_never_done_has_a_dead_operator_and_exit_3() {
    let (code, v) = verify_json("bad/accumulator-never-done.cm");
    assert_eq!(code, 3);
    assert_eq!(strings(&v["dead_operators"]), ["out"]);
    assert_eq!(v["option_to_complete"], true);
}

#[test]
fn a_state_budget_too_small_is_inconclusive_with_exit_4() {
    let o = CAMELEON.run(&[
        "check",
        &wcp("wcp02-parallel-split.cm"),
        "--verify",
        "--max-states",
        "4",
        "--json",
    ]);
    assert_eq!(code(&o), 4, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["exploration"]["budget_hit"], true);
    assert_eq!(v["states"], 4);
}

#[test]
fn export_pnml_writes_one_place_per_connection_state() {
    let o = CAMELEON.run(&["export", &wcp("wcp03-synchronization.cm"), "--pnml"]);
    assert_eq!(code(&o), 0);
    let xml = stdout(&o);
    assert!(xml.starts_with("<?xml"));
    // 6 connections × EMPTY/NEW/OLD.
    assert_eq!(xml.matches("<place ").count(), 18);
    assert_eq!(xml.matches("<initialMarking>").count(), 6);
}

#[test]
fn run_follow_replays_a_witness_to_its_deadlock() {
    let file = wcp("bad/xor-split-and-join.cm");
    // The witness exactly as `check --verify --json` prints it.
    let (_, v) = verify_json("bad/xor-split-and-join.cm");
    let o = CAMELEON.run(&["run", &file, "--follow", &v["witness"].to_string()]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    let o = CAMELEON.run(&["run", &file, "--follow", "src,split,test,choose:out_true,a"]);
    assert_eq!(code(&o), 3);
    let text = stdout(&o);
    assert!(
        text.contains("choose.out_true -> a.in_data: EMPTY → NEW"),
        "{text}"
    );
    assert!(text.contains("end: DEADLOCK"), "{text}");
    // The JSON array `check --verify --json` prints is accepted as is.
    let o = CAMELEON.run(&[
        "run",
        &file,
        "--json",
        "--follow",
        r#"["src","split","test","choose:out_false"]"#,
    ]);
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "RUNNING");
    assert_eq!(strings(&v["enabled"]), ["b"]);
    assert_eq!(v["marking"]["choose.out_false -> b.in_data"], "NEW");
    // A witness that does not replay says where and what could fire.
    let o = CAMELEON.run(&["run", &file, "--follow", "src,choose"]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("step 2: `choose` cannot fire here; possible: `split`"),
        "{err}"
    );
}

/// A `.cm` file of `n` parallel branches of 3 transforms between a fork and a join (4^n + 4
/// reachable states), in a fresh temporary folder (removed with it).
fn parallel_split_cm(n: usize) -> (TempDir, PathBuf) {
    let dir = TempDir::new(&format!("cli-verify-split{n}"));
    let mut cm = format!(
        "cameleon: 1\nname: parallel-split-{n}\noperators:\n  - id: src\n    type: source\n    params:\n      value: x\n  - id: split\n    type: fork\n    params:\n      arity: {n}\n  - id: sync\n    type: join\n    params:\n      arity: {n}\n  - id: out\n    type: sink\n"
    );
    for i in 0..n {
        for s in 0..3 {
            cm += &format!("  - id: t{i}_{s}\n    type: transform\n");
        }
    }
    cm += "connections:\n  - from: src.out_data\n    to: split.in_data\n  - from: sync.out_data\n    to: out.in_data\n";
    for i in 0..n {
        let letter = (b'a' + i as u8) as char;
        cm += &format!(
            "  - from: split.out_{letter}\n    to: t{i}_0.in_data\n  - from: t{i}_0.out_data\n    to: t{i}_1.in_data\n  - from: t{i}_1.out_data\n    to: t{i}_2.in_data\n  - from: t{i}_2.out_data\n    to: sync.in_{letter}\n"
        );
    }
    let path = dir.join(format!("parallel-split-{n}.cm"));
    std::fs::write(&path, cm).unwrap();
    (dir, path)
}

#[test]
fn twenty_parallel_branches_verify_sound_under_reduction_with_exit_0() {
    let (_dir, path) = parallel_split_cm(20);
    let file = path.display().to_string();
    let o = CAMELEON.run(&["check", &file, "--verify", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(code(&o), 0, "{v}");
    assert_eq!(v["reduced"], true);
    assert_eq!(v["verdict"], "holds");
    assert_eq!(v["deadlock_free"], true);
    assert_eq!(v["option_to_complete"], true);
    assert_eq!(v["no_dead_operators"], true);
    assert_eq!(v["may_loop"], false);
    // src, split, 3 firings per branch one branch after the other, sync, out: 3n + 5.
    assert_eq!(v["states"], 65);
    // The full state space has 4^20 + 4 states: a budget stops it, inconclusive.
    let o = CAMELEON.run(&[
        "check",
        &file,
        "--verify",
        "--reduce",
        "none",
        "--max-states",
        "5000",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(code(&o), 4, "{v}");
    assert_eq!(v["reduced"], false);
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["states"], 5000);
}

#[test]
fn reduce_none_explores_every_interleaving() {
    let file = wcp("wcp03-synchronization.cm");
    let run = |extra: &[&str]| {
        let mut args = vec!["check", &file, "--verify", "--json"];
        args.extend_from_slice(extra);
        let o = CAMELEON.run(&args);
        let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        (code(&o), v)
    };
    let (c, reduced) = run(&[]);
    assert_eq!(c, 0);
    assert_eq!(
        (reduced["reduced"].clone(), reduced["states"].clone()),
        (true.into(), 7.into())
    );
    let (c, full) = run(&["--reduce", "none"]);
    assert_eq!(c, 0);
    assert_eq!(
        (full["reduced"].clone(), full["states"].clone()),
        (false.into(), 8.into())
    );
    let (c, again) = run(&["--reduce", "stubborn"]);
    assert_eq!(c, 0);
    assert_eq!(again, reduced);
    // The human form says which.
    let o = CAMELEON.run(&["check", &file, "--verify"]);
    assert!(
        stdout(&o).contains("reduced by stubborn sets"),
        "{}",
        stdout(&o)
    );
    let o = CAMELEON.run(&["check", &file, "--verify", "--reduce", "none"]);
    assert!(stdout(&o).contains("8 reachable states"), "{}", stdout(&o));
}

#[test]
fn reduce_needs_verify_and_a_known_reduction() {
    let file = wcp("wcp03-synchronization.cm");
    let o = CAMELEON.run(&["check", &file, "--reduce", "none"]);
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--verify"));
    let o = CAMELEON.run(&["check", &file, "--verify", "--reduce", "partial"]);
    assert_eq!(code(&o), 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("possible values: none, stubborn"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `--threads N` gives the report of one thread, for every example and both state spaces; a
/// count outside 1..=1024 is refused with a message naming the range, and nothing is explored.
#[test]
fn threads_give_the_same_report_and_bad_counts_are_refused() {
    for file in ["wcp10-arbitrary-cycles.cm", "bad/xor-split-and-join.cm"] {
        for reduce in ["none", "stubborn"] {
            let run = |threads: &str| {
                let o = CAMELEON.run(&[
                    "check",
                    &wcp(file),
                    "--verify",
                    "--json",
                    "--reduce",
                    reduce,
                    "--threads",
                    threads,
                ]);
                (code(&o), stdout(&o))
            };
            let one = run("1");
            assert!(one.1.contains("\"verdict\""), "{file}: {}", one.1);
            for threads in ["2", "7", "1024"] {
                assert_eq!(
                    run(threads),
                    one,
                    "{file} --reduce {reduce} --threads {threads}"
                );
            }
        }
    }
    for bad in ["0", "1025", "-1", "two", ""] {
        let arg = format!("--threads={bad}");
        let o = CAMELEON.run(&["check", &wcp("wcp01-sequence.cm"), "--verify", &arg]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(code(&o), 2, "--threads {bad}: {err}");
        assert!(err.contains("--threads"), "--threads {bad}: {err}");
        assert!(stdout(&o).is_empty(), "--threads {bad}: nothing explored");
    }
    // Without --verify there is nothing to share out.
    let o = CAMELEON.run(&["check", &wcp("wcp01-sequence.cm"), "--threads", "2"]);
    assert_eq!(code(&o), 2);
}
