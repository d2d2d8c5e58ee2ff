//! `cameleon run` with `ask` operators: WAITING is exit 6 with the questions listed; answers
//! come from `--answer`, `--answers` or the terminal prompt (docs/semantics.md §6.1).

use std::path::Path;

use serde_json::{Value, json};
use test_support::{Bin, TempDir, example, json as json_of};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

#[test]
fn a_run_without_answers_stops_waiting_with_exit_6() {
    let o = CAMELEON.run(&["run", &example("ask.cm"), "--json"]);
    assert_eq!(o.status.code(), Some(6));
    let v = json_of(&o);
    assert_eq!(v["end"], "WAITING");
    assert_eq!(
        v["waiting"],
        json!([{"op": "approve", "prompt": "Send this letter?"},
               {"op": "reviewer", "prompt": "Who reviewed it?"}])
    );
    let text = CAMELEON.run(&["run", &example("ask.cm")]);
    assert_eq!(text.status.code(), Some(6));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("review: WAITING after 2 steps"), "{out}");
    assert!(
        out.contains("`approve` asks: Send this letter? (DataBool)"),
        "{out}"
    );
    assert!(out.contains("--answer approve=VALUE"), "{out}");
}

#[test]
fn answers_on_the_command_line_complete_the_run() {
    let o = CAMELEON.run(&[
        "run",
        &example("ask.cm"),
        "--json",
        "--answer",
        "reviewer=Ada",
        "--answer",
        "approve=no",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json_of(&o);
    assert_eq!(v["sinks"]["reviewers"], json!(["Ada"]));
    assert_eq!(
        v["sinks"]["kept"],
        json!(["Dear Grace, the pipeline is ready."])
    );
    assert_eq!(v["sinks"]["sent"], json!([]));

    // One answer of two: still waiting, for the other only.
    let o = CAMELEON.run(&[
        "run",
        &example("ask.cm"),
        "--json",
        "--answer",
        "reviewer=Ada",
    ]);
    assert_eq!(o.status.code(), Some(6));
    assert_eq!(
        json_of(&o)["waiting"],
        json!([{"op": "approve", "prompt": "Send this letter?"}])
    );
}

#[test]
fn answers_from_a_json_file() {
    let dir = TempDir::new("ask-answers");
    let f = dir.join("answers.json");
    std::fs::write(&f, r#"{"approve": true, "reviewer": "Grace"}"#).unwrap();
    let o = CAMELEON.run(&[
        "run",
        &example("ask.cm"),
        "--json",
        "--answers",
        f.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json_of(&o);
    assert_eq!(
        v["sinks"]["sent"],
        json!(["Dear Grace, the pipeline is ready."])
    );
    assert_eq!(v["sinks"]["reviewers"], json!(["Grace"]));

    std::fs::write(&f, r#"{"approve": "sure"}"#).unwrap();
    let o = CAMELEON.run(&["run", &example("ask.cm"), "--answers", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("wrong answer for `approve`"), "{err}");
    assert!(err.contains("is not a DataBool"), "{err}");
}

#[test]
fn a_bad_answer_is_a_clear_error_naming_the_fix() {
    let o = CAMELEON.run(&["run", &example("ask.cm"), "--answer", "approve=maybe"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`maybe` is not a DataBool: answer yes or no"),
        "{err}"
    );

    let o = CAMELEON.run(&["run", &example("ask.cm"), "--answer", "draft=x"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot answer `draft`: it asks no question"),
        "{err}"
    );
    assert!(err.contains("approve, reviewer"), "{err}");

    let o = CAMELEON.run(&["run", &example("ask.cm"), "--answer", "approve"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("write `--answer OP=VALUE`"));
}

#[test]
fn on_a_terminal_the_questions_are_asked_until_answered_well() {
    // `run_cli` with `prompt` on stands for a terminal on standard input.
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut stdin: &[u8] = b"maybe\nyes\nAda\n";
    let mut io = cameleon_cli::Io {
        stdout: &mut stdout,
        stderr: &mut stderr,
        stdin: &mut stdin,
        color: false,
        progress: false,
        prompt: true,
        interrupt: None,
    };
    let code = cameleon_cli::run_cli(["cameleon", "run", &example("ask.cm"), "--json"], &mut io);
    let err = String::from_utf8_lossy(&stderr);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("`approve` shows: \"Dear Grace, the pipeline is ready.\""),
        "{err}"
    );
    assert!(
        err.contains("Send this letter? [yes/no] (`approve`, empty to stop): "),
        "{err}"
    );
    assert!(
        err.contains("`maybe` is not a DataBool"),
        "the bad answer is refused: {err}"
    );
    let v: Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(
        v["sinks"]["sent"],
        json!(["Dear Grace, the pipeline is ready."])
    );
    assert_eq!(v["sinks"]["reviewers"], json!(["Ada"]));

    // An empty line stops asking: the run stays WAITING.
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut stdin: &[u8] = b"\n";
    let mut io = cameleon_cli::Io {
        stdout: &mut stdout,
        stderr: &mut stderr,
        stdin: &mut stdin,
        color: false,
        progress: false,
        prompt: true,
        interrupt: None,
    };
    let code = cameleon_cli::run_cli(["cameleon", "run", &example("ask.cm")], &mut io);
    assert_eq!(code, 6);
}

/// A journaled run that stops WAITING is resumed with its answers (`resume DB --answer`), and
/// ends as the same run answered at once: same end, same sinks, the same trace bytes.
#[test]
fn a_waiting_journaled_run_is_resumed_with_its_answers() {
    let dir = TempDir::new("ask-resume");
    let s = |p: &Path| p.display().to_string();
    let (db, trace, direct_trace) = (
        dir.join("runs.db"),
        dir.join("resumed.jsonl"),
        dir.join("direct.jsonl"),
    );
    let waiting = CAMELEON.run(&["run", &example("ask.cm"), "--journal", &s(&db), "--json"]);
    assert_eq!(waiting.status.code(), Some(6), "{waiting:?}");
    assert_eq!(json_of(&waiting)["end"], "WAITING");
    let runs = CAMELEON.run(&["runs", &s(&db), "--json"]);
    assert_eq!(json_of(&runs)[0]["status"], "WAITING");

    // A wrong answer: exit 2, the run still waits.
    let wrong = CAMELEON.run(&["resume", &s(&db), "--answer", "approve=perhaps"]);
    assert_eq!(wrong.status.code(), Some(2));
    let runs = CAMELEON.run(&["runs", &s(&db), "--json"]);
    assert_eq!(json_of(&runs)[0]["status"], "WAITING");

    let resumed = CAMELEON.run(&[
        "resume",
        &s(&db),
        "--answer",
        "approve=yes",
        "--answer",
        "reviewer=Ada",
        "--json",
        "--trace",
        &s(&trace),
        // The journal is not kept beside the net: the user names its folder.
        "--base",
        &example(""),
    ]);
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    let direct = CAMELEON.run(&[
        "run",
        &example("ask.cm"),
        "--answer",
        "approve=yes",
        "--answer",
        "reviewer=Ada",
        "--json",
        "--trace",
        &s(&direct_trace),
    ]);
    assert_eq!(direct.status.code(), Some(0));
    let (mut a, mut b) = (json_of(&resumed), json_of(&direct));
    a.as_object_mut().unwrap().remove("run_id");
    b.as_object_mut().unwrap().remove("run_id");
    assert_eq!(a, b);
    assert_eq!(
        a["sinks"]["sent"],
        json!(["Dear Grace, the pipeline is ready."])
    );
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        std::fs::read_to_string(&direct_trace).unwrap()
    );
}
