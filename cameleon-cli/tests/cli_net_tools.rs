//! Nets as tools through the real binary (docs/tools.md, "Nets as tools"): `examples/agents`
//! run against a scripted OpenAI-compatible server on 127.0.0.1 (its project `cameleon.yaml`
//! pointed at it), `tools --json` listing net-tools, `call` running one, and a net that is not
//! proved to finish refused before the run starts (exit 2) with its witness.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::openai::{Reply, Server};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn agents() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/agents")
}

/// `examples/agents` copied, its `cameleon.yaml` pointed at `server` (its `nets:` as shipped).
fn agents_folder(tag: &str, server: &Server) -> TempDir {
    let dir = TempDir::new(tag);
    for f in ["supervisor.cm", "nets/summarize.cm", "nets/calculator.cm"] {
        dir.write(f, std::fs::read_to_string(agents().join(f)).unwrap());
    }
    let caps = std::fs::read_to_string(agents().join("cameleon.yaml")).unwrap();
    assert!(caps.contains("http://127.0.0.1:11434/v1"), "{caps}");
    dir.write(
        "cameleon.yaml",
        caps.replace("http://127.0.0.1:11434/v1", &server.base_url()),
    );
    dir
}

#[test]
fn the_agents_example_runs_offline_against_the_scripted_server() {
    let server = Server::start();
    server.script([
        Reply::tool_calls(&[(
            "s1",
            "summarize",
            json!({"text": "128 in the north, 47 in the south."}),
        )]),
        Reply::chat("Chameleons were counted in two forests."),
        Reply::tool_calls(&[("s2", "calculator", json!({"question": "128 + 47"}))]),
        Reply::tool_calls(&[("c1", "calc", json!({"expr": "128 + 47"}))]),
        Reply::chat("175"),
        Reply::chat("Chameleons were counted in two forests: 175 in all."),
    ]);
    let dir = agents_folder("cli-net-tools-agents", &server);
    let file = dir.file("supervisor.cm");

    let o = CAMELEON.run(&["check", &file]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let o = CAMELEON.run(&["run", &file, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "COMPLETED", "{v}");
    assert!(
        stdout(&o).contains("Chameleons were counted in two forests: 175 in all."),
        "{v}"
    );
    assert_eq!(server.count(), 6);
}

#[test]
fn tools_lists_net_tools_and_call_runs_one() {
    let server = Server::start();
    let dir = agents_folder("cli-net-tools-list", &server);
    let caps = dir.file("cameleon.yaml");
    let o = CAMELEON.run(&["tools", "--json", "--capabilities", &caps]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let all: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let calculator = all
        .iter()
        .find(|m| m["name"] == "calculator")
        .expect("listed");
    assert_eq!(calculator["effects"], "none");
    assert_eq!(calculator["input_schema"]["required"], json!(["question"]));
    assert!(
        calculator["description"]
            .as_str()
            .unwrap()
            .starts_with("A calculator sub-agent."),
        "{calculator}"
    );

    server.script([Reply::chat("In short: two forests.")]);
    let o = CAMELEON.run(&[
        "call",
        "summarize",
        r#"{"text": "Two forests were surveyed."}"#,
        "--capabilities",
        &caps,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["content"], json!({"summary": "In short: two forests."}));
    assert_eq!(r["meta"]["run"]["end"]["end"], "COMPLETED", "{r}");
    assert_eq!(
        r["meta"]["usage"],
        json!({"prompt_tokens": 11, "completion_tokens": 5})
    );
}

#[test]
fn a_net_tool_that_is_not_proved_to_finish_stops_the_run_before_it_starts() {
    let dir = TempDir::new("cli-net-tools-stuck");
    dir.write(
        "stuck.cm",
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../cameleon/tests/fixtures/nets/stuck.cm"),
        )
        .unwrap(),
    );
    dir.write("caps.yaml", "nets:\n  stuck: stuck.cm\n");
    dir.write(
        "main.cm",
        "cameleon: 1\ntools:\n  allow: [stuck]\noperators:\n  - {id: a, type: const, params: {value: {x: hi}}}\n  - {id: t, type: tool, params: {name: stuck}}\n  - {id: out, type: sink}\nconnections:\n  - {from: a.out_data, to: t.in_args}\n  - {from: t.out_result, to: out.in_data}\n",
    );
    let o = CAMELEON.run(&[
        "run",
        &dir.file("main.cm"),
        "--capabilities",
        &dir.file("caps.yaml"),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("net-tool `stuck`"), "{e}");
    assert!(e.contains("deadlock freedom fails"), "{e}");
    assert!(e.contains("witness: "), "{e}");
}

#[test]
fn a_journaled_run_that_calls_net_tools_is_resumed_without_calling_them_again() {
    let server = Server::start();
    server.script([
        Reply::tool_calls(&[("s1", "calculator", json!({"question": "2 + 2"}))]),
        Reply::tool_calls(&[("c1", "calc", json!({"expr": "2 + 2"}))]),
        Reply::chat("4"),
        Reply::chat("It is 4."),
    ]);
    let dir = agents_folder("cli-net-tools-journal", &server);
    let (file, db) = (dir.file("supervisor.cm"), dir.file("runs.db"));
    let o = CAMELEON.run(&["run", &file, "--journal", &db]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.count(), 4);
    let err = stderr(&o);
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .expect("the run's id on stderr")
        .trim()
        .to_owned();
    // The stored net names the net-tools: it loads back, and nothing runs again.
    let o = CAMELEON.run(&["resume", &db, &id, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("It is 4."), "{}", stdout(&o));
    assert_eq!(server.count(), 4, "no model request, no net run again");
}
