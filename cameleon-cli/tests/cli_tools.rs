//! `cameleon tools`, `cameleon call`, `run --capabilities`, `--log`, and a `.cm` written from
//! `catalogue --json` and `tools --json` alone (what an LLM has), through the real binary.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Bin, TempDir, code, json as json_out, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

#[test]
fn tools_json_lists_every_standard_tool_with_its_schemas() {
    let o = CAMELEON.run(&["tools", "--json"]);
    assert_eq!(code(&o), 0);
    let v = json_out(&o);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for t in ["calc", "json_query", "list_dir", "read_file", "write_file"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    assert!(names.is_sorted());
    for m in v.as_array().unwrap() {
        let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "description",
                "effects",
                "input_schema",
                "output_schema"
            ]
        );
    }
    let calc = &v[names.iter().position(|n| *n == "calc").unwrap()];
    assert_eq!(calc["input_schema"]["required"], json!(["expr"]));
    assert_eq!(calc["input_schema"]["properties"]["expr"]["type"], "string");
    assert_eq!(calc["output_schema"]["type"], "number");
    let text = stdout(&CAMELEON.run(&["tools"]));
    assert!(
        text.contains("calc — Evaluates an arithmetic expression"),
        "{text}"
    );
    assert!(text.contains("  arg expr (string, required)"), "{text}");
}

#[test]
fn call_prints_the_result_and_exits_0_when_ok_else_5() {
    let o = CAMELEON.run(&["call", "calc", r#"{"expr": "2 ^ 10"}"#]);
    assert_eq!((code(&o), stdout(&o)), (0, "1024\n".to_owned()));

    let o = CAMELEON.run(&["call", "calc", r#"{"expr": "2 ^ 10"}"#, "--json"]);
    let v = json_out(&o);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["content"], 1024);
    assert_eq!(v["error"], Value::Null);
    assert_eq!(v["meta"]["tool"], "calc");
    assert_eq!(v["meta"]["origin"], "local");
    assert_eq!(v["meta"]["attempts"], 1);

    let o = CAMELEON.run(&["call", "calc", r#"{"expr": "1 / 0"}"#, "--json"]);
    assert_eq!(code(&o), 5);
    assert_eq!(json_out(&o)["status"], "error");

    let o = CAMELEON.run(&["call", "calc", r#"{"expr": 5}"#]);
    assert_eq!(code(&o), 5);
    assert!(
        stderr(&o).contains("/properties/expr/type"),
        "{}",
        stderr(&o)
    );

    let o = CAMELEON.run(&["call", "cal", "{}"]);
    assert_eq!(code(&o), 5);
    assert!(
        stderr(&o).contains("did you mean `calc`?"),
        "{}",
        stderr(&o)
    );

    let o = CAMELEON.run(&["call", "calc", "{expr: 1}"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not JSON"), "{}", stderr(&o));
}

#[test]
fn call_confines_file_tools_to_the_base_folder() {
    let ex = examples().display().to_string();
    let o = CAMELEON.run(&[
        "call",
        "read_file",
        r#"{"path": "data/article.txt"}"#,
        "--base",
        &ex,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("Pipelines are nets."));
    let o = CAMELEON.run(&[
        "call",
        "read_file",
        r#"{"path": "../Cargo.toml"}"#,
        "--base",
        &ex,
        "--json",
    ]);
    assert_eq!(code(&o), 5);
    let v = json_out(&o);
    assert_eq!(v["status"], "error");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("leaves the base folder")
    );
}

#[test]
fn the_tools_example_runs_and_the_trace_starts_with_the_generation() {
    let ex = examples().join("tools.cm").display().to_string();
    let o = CAMELEON.run(&["run", &ex, "--json", "--trace", "-"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["generation"], 1);
    assert_eq!(first["step"], 1);
    // The generation is on the first line only.
    assert!(lines[1..].iter().all(|l| !l.contains("\"generation\"")));
    let summary: Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(summary["sinks"]["sum"], json!([21.5]));
    assert_eq!(summary["sinks"]["who"], json!(["Ada"]));
}

#[test]
fn a_net_without_a_tools_key_stops_in_error_and_names_the_tool_and_status() {
    let dir = TempDir::new("cli-tools-denied");
    let text = std::fs::read_to_string(examples().join("tools.cm"))
        .unwrap()
        .replace("tools:\n  allow: [calc, json_query]\n", "");
    let cm = dir.join("denied.cm");
    std::fs::write(&cm, text).unwrap();
    let o = CAMELEON.run(&["run", &cm.display().to_string(), "--json"]);
    assert_eq!(code(&o), 5);
    let v = json_out(&o);
    assert_eq!(v["end"], "ERROR");
    assert_eq!(v["op"], "total");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("tool `calc` denied:"),
        "{v}"
    );
}

#[test]
fn check_reports_an_unknown_tool_with_a_did_you_mean() {
    let dir = TempDir::new("cli-tools-unknown");
    let text = std::fs::read_to_string(examples().join("tools.cm"))
        .unwrap()
        .replace("allow: [calc, json_query]", "allow: [calc, jsonquery]");
    let cm = dir.join("bad.cm");
    std::fs::write(&cm, text).unwrap();
    let o = CAMELEON.run(&["check", &cm.display().to_string(), "--json"]);
    assert_eq!(code(&o), 2);
    let p = &json_out(&o)["problems"][0];
    assert_eq!(p["kind"], "unknown_tool");
    assert_eq!(
        (p["line"].clone(), p["column"].clone()),
        (json!(6), json!(17))
    );
    assert_eq!(p["hint"], "did you mean `json_query`?");
    let o = CAMELEON.run(&["check", &cm.display().to_string()]);
    assert!(
        stderr(&o).contains("unknown tool `jsonquery`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_capabilities_file_is_rendered_like_a_cm_error_with_exit_2() {
    let dir = TempDir::new("cli-tools-caps");
    let caps = dir.join("caps.yaml");
    std::fs::write(
        &caps,
        "chat:\n  default: {kind: opnai, model: x, api_key_env: CAMELEON_TEST_UNSET_KEY}\nembeders: {}\n",
    )
    .unwrap();
    let ex = examples().join("tools.cm").display().to_string();
    let c = caps.display().to_string();
    let o = CAMELEON.run(&["run", &ex, "--capabilities", &c]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("is not a valid capabilities file: 3 problems"),
        "{err}"
    );
    assert!(err.contains("unknown chat model kind `opnai`"), "{err}");
    assert!(err.contains("did you mean `openai`?"), "{err}");
    assert!(
        err.contains("environment variable `CAMELEON_TEST_UNSET_KEY`"),
        "{err}"
    );
    assert!(err.contains("did you mean `embedders`?"), "{err}");
    assert!(err.contains("caps.yaml:2:"), "{err}");
    let o = CAMELEON.run(&["run", &ex, "--capabilities", &c, "--json"]);
    assert_eq!(code(&o), 2);
    let v = json_out(&o);
    assert_eq!(v["valid"], false);
    let kinds: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unknown_kind", "env", "schema"]);
    // A `cameleon.yaml` beside the .cm file is read by default.
    std::fs::copy(examples().join("tools.cm"), dir.join("tools.cm")).unwrap();
    std::fs::write(
        dir.join("cameleon.yaml"),
        "chat:\n  default: {kind: nope}\n",
    )
    .unwrap();
    let o = CAMELEON.run(&["run", &dir.join("tools.cm").display().to_string()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cameleon.yaml:2:"), "{}", stderr(&o));
    let o = CAMELEON.run(&[
        "run",
        &ex,
        "--capabilities",
        &dir.join("missing.yaml").display().to_string(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

#[test]
fn log_writes_the_spans_of_the_run_to_stderr() {
    let ex = examples().join("tools.cm").display().to_string();
    let o = CAMELEON.run(&["run", &ex, "--log"]);
    assert_eq!(code(&o), 0);
    let err = stderr(&o);
    // The run's id (a fresh UUID v7 when not journaled) names the run and each of its firings.
    let run_id = err
        .split("run{run=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no run span in {err}"));
    assert_eq!(run_id.len(), 36, "a UUID: {run_id}");
    assert!(
        err.lines().any(|l| l.contains(&format!(
            "run{{run={run_id} net=bill mode=sequential generation=1}}"
        )) && l.contains(&format!(
            "firing{{run={run_id} step=2 op=total type=tool generation=1 attempts=1"
        ))),
        "{err}"
    );
    let o = CAMELEON.run(&["run", &ex]);
    assert!(!stderr(&o).contains("firing{"), "no --log, no spans");
}

/// What an LLM does: read `catalogue --json` and `tools --json`, and nothing else, then write a
/// `.cm` file using a tool, which checks and runs.
#[test]
fn a_net_written_from_catalogue_and_tools_json_alone_runs() {
    let catalogue = json_out(&CAMELEON.run(&["catalogue", "--json"]));
    let tools = json_out(&CAMELEON.run(&["tools", "--json"]));
    let ops = catalogue["operators"].as_array().unwrap();
    assert!(
        catalogue["format"]
            .as_str()
            .unwrap()
            .contains("tools: {allow:")
    );
    // The operator that calls a tool: a `name` param, a DataJSON input and output.
    let caller = ops
        .iter()
        .find(|o| {
            o["params"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "name")
                && o["inputs"][0]["type"] == "DataJSON"
                && o["outputs"][0]["type"] == "DataJSON"
                && o["doc"].as_str().unwrap().contains("tool")
        })
        .expect("an operator that calls tools");
    // A literal JSON source and a sink.
    let literal = ops
        .iter()
        .find(|o| {
            o["outputs"][0]["type"] == "DataJSON" && o["inputs"].as_array().unwrap().is_empty()
        })
        .expect("a JSON literal");
    // An operator with no outputs that collects what it receives (as its doc says).
    let sink = ops
        .iter()
        .find(|o| {
            o["outputs"].as_array().unwrap().is_empty()
                && o["doc"].as_str().unwrap().starts_with("Collects")
        })
        .expect("a sink");
    // The arithmetic tool, and arguments built from its input schema.
    let calc = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["description"].as_str().unwrap().contains("arithmetic"))
        .unwrap();
    let required = calc["input_schema"]["required"].as_array().unwrap();
    assert_eq!(required.len(), 1);
    let arg = required[0].as_str().unwrap();
    let lit_param = literal["params"][0]["name"].as_str().unwrap();
    let text = format!(
        "cameleon: 1\nname: llm-written\ntools:\n  allow: [{tool}]\noperators:\n  - id: args\n    type: {lit}\n    params:\n      {lit_param}: {{{arg}: \"6 * 7\"}}\n  - id: call\n    type: {caller}\n    params:\n      name: {tool}\n  - id: out\n    type: {sink}\nconnections:\n  - from: args.{lit_out}\n    to: call.{caller_in}\n  - from: call.{caller_out}\n    to: out.{sink_in}\n",
        tool = calc["name"].as_str().unwrap(),
        lit = literal["id"].as_str().unwrap(),
        caller = caller["id"].as_str().unwrap(),
        sink = sink["id"].as_str().unwrap(),
        lit_out = literal["outputs"][0]["name"].as_str().unwrap(),
        caller_in = caller["inputs"][0]["name"].as_str().unwrap(),
        caller_out = caller["outputs"][0]["name"].as_str().unwrap(),
        sink_in = sink["inputs"][0]["name"].as_str().unwrap(),
    );
    let dir = TempDir::new("cli-tools-llm");
    let cm = dir.join("llm.cm");
    std::fs::write(&cm, &text).unwrap();
    let p = cm.display().to_string();
    let o = CAMELEON.run(&["check", &p]);
    assert_eq!(code(&o), 0, "{text}\n{}", stderr(&o));
    let o = CAMELEON.run(&["run", &p, "--json"]);
    assert_eq!(code(&o), 0, "{text}\n{}", stdout(&o));
    assert_eq!(json_out(&o)["sinks"]["out"], json!([42]));
}

/// A net writing `note.txt` through `write_file`, which its policy lists under `approve:`.
const APPROVE_CM: &str = "cameleon: 1\nname: approve\ntools:\n  approve: [write_file]\noperators:\n  - id: args\n    type: const\n    params:\n      value: {path: note.txt, content: hi}\n  - id: write\n    type: tool\n    params:\n      name: write_file\n  - id: done\n    type: sink\nconnections:\n  - from: args.out_data\n    to: write.in_args\n  - from: write.out_result\n    to: done.in_data\n";

#[test]
fn a_tool_under_approve_waits_exit_6_and_runs_once_on_yes_denied_on_no() {
    let dir = TempDir::new("cli-tools-approve");
    let file = dir.join("approve.cm");
    std::fs::write(&file, APPROVE_CM).unwrap();
    let f = file.to_str().unwrap();
    let note = dir.join("note.txt");

    let o = CAMELEON.run(&["run", f, "--json"]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["end"], "WAITING");
    assert_eq!(
        v["waiting"],
        json!([{"op": "write", "prompt": "allow tool `write_file` with args {\"path\":\"note.txt\",\"content\":\"hi\"}?"}])
    );
    assert!(!note.exists(), "nothing is written before the answer");
    let o = CAMELEON.run(&["run", f]);
    assert_eq!(code(&o), 6);
    assert!(
        stdout(&o).contains("--answer write=VALUE"),
        "{}",
        stdout(&o)
    );

    let o = CAMELEON.run(&["run", f, "--answer", "write=no", "--json"]);
    assert_eq!(code(&o), 5, "{}", stdout(&o));
    let v = json_out(&o);
    assert_eq!(v["op"], "write");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("tool `write_file` denied:"),
        "{v}"
    );
    assert!(!note.exists());

    let o = CAMELEON.run(&["run", f, "--answer", "write=yes", "--json"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "hi");

    // Journaled: WAITING on disk, then resumed with the answer.
    std::fs::remove_file(&note).unwrap();
    let db = dir.join("runs.db");
    let o = CAMELEON.run(&["run", f, "--journal", db.to_str().unwrap()]);
    assert_eq!(code(&o), 6);
    assert!(!note.exists());
    let o = CAMELEON.run(&[
        "resume",
        db.to_str().unwrap(),
        "--answer",
        "write=yes",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(json_out(&o)["end"], "COMPLETED");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "hi");
}
