//! Nets as tools through the real binary (docs/tools.md, "Nets as tools"): `examples/agents`
//! run against a scripted OpenAI-compatible server on 127.0.0.1 (its project `cameleon.yaml`
//! pointed at it), `tools --json` listing net-tools, `call` running one, and a net that is not
//! proved to finish refused before the run starts (exit 2) with its witness; `serve`, `fmt`,
//! `test` and `check --against` reading net-tool names from an explicit `--capabilities FILE`;
//! a satellite hosting a net-tool, called over a real NATS server (`nats-server` on a free
//! loopback port) by a `tool` operator and by an agent.

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

/// A net-tool doubling through `calc`: its input `args` goes to `calc`, the result to `value`.
const DOUBLE: &str = "cameleon: 1
name: double
description: Computes an expression with calc.
tools:
  allow: [calc]
operators:
  - {id: args, type: input, params: {name: args}}
  - {id: call, type: tool, params: {name: calc}}
  - {id: value, type: output, params: {name: value}}
connections:
  - {from: args.out_data, to: call.in_args}
  - {from: call.out_result, to: value.in_data}
";

/// A net whose `tool` operator calls net-tool `double` (its caller's policy lists `calc` too).
const CALLS_DOUBLE: &str = "cameleon: 1
name: calls-double
tools:
  allow: [double, calc]
operators:
  - {id: args, type: const, params: {value: {args: {expr: 6 * 7}}}}
  - {id: call, type: tool, params: {name: double}}
  - {id: out, type: sink}
connections:
  - {from: args.out_data, to: call.in_args}
  - {from: call.out_result, to: out.in_data}
";

#[test]
fn serve_fmt_test_and_check_against_see_the_net_tools_of_an_explicit_capabilities_file() {
    let dir = TempDir::new("cli-net-tools-explicit-caps");
    // The capabilities file is not one the defaults find (not `cameleon.yaml` beside the net).
    dir.write("tools/double.cm", DOUBLE);
    dir.write("tools/caps.yaml", "nets:\n  double: double.cm\n");
    dir.write("main.cm", CALLS_DOUBLE);
    let (file, caps) = (dir.file("main.cm"), dir.file("tools/caps.yaml"));
    let unknown = "unknown tool `double`";

    // fmt: without the file, `double` is unknown; with it, the net is formatted.
    let o = CAMELEON.run(&["fmt", &file, "-"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains(unknown), "{}", stderr(&o));
    let o = CAMELEON.run(&["fmt", &file, "-", "--capabilities", &caps]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("name: double"), "{}", stdout(&o));

    // serve: the served file is valid, and its run calls the net-tool.
    let served = test_support::Serve::start(CAMELEON, dir.join("main.cm").as_path(), &[]);
    let (_, s) = served.get("/api/state");
    assert_eq!(s["valid"], false, "{s}");
    drop(served);
    let served = test_support::Serve::start(
        CAMELEON,
        dir.join("main.cm").as_path(),
        &["--capabilities", &caps],
    );
    let (_, s) = served.get("/api/state");
    assert_eq!(s["valid"], true, "{s}");
    let (_, c) = served.post("/api/check", &json!({"text": CALLS_DOUBLE}).to_string());
    assert_eq!(c["valid"], true, "{c}");
    let (_, s) = served.post("/api/run", "");
    assert_eq!(s["end"], "COMPLETED", "{s}");
    // The inspector shows the `tool` operator's call and the net it ran.
    let (_, i) = served.get("/api/inspect?op=call");
    let call = &i["last_call"]["calls"][0];
    assert_eq!(call["call"], "tool", "{i}");
    assert_eq!(call["tool"], "double", "{i}");
    assert_eq!(call["ran"]["net"], "double", "{i}");
    assert_eq!(call["ran"]["end"], "COMPLETED", "{i}");
    drop(served);

    // test: a recorded run compared, its net loaded with the file's net-tools.
    let db = dir.file("runs.db");
    let o = CAMELEON.run(&[
        "run",
        &file,
        "--capabilities",
        &caps,
        "--journal",
        &db,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sinks"]["out"], json!([{"value": 42}]), "{v}");
    let id = stderr(&o)
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .expect("the run's id")
        .trim()
        .to_owned();
    let o = CAMELEON.run(&["test", &file, "--against", &db, &id]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains(unknown), "{}", stderr(&o));
    let o = CAMELEON.run(&[
        "test",
        &file,
        "--against",
        &db,
        &id,
        "--capabilities",
        &caps,
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // check --against: the old net names the net-tool too.
    let o = CAMELEON.run(&["check", &file, "--against", &file, "--capabilities", &caps]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

/// A `cameleon satellite` hosting `tools` with the capabilities of folder `base` (its
/// `cameleon.yaml`), once it says it serves; killed when dropped.
fn satellite(url: &str, name: &str, base: &str, tools: &str) -> test_support::Proc {
    let proc = CAMELEON
        .cmd()
        .args(["satellite", "--nats", url, "--name", name, "--base", base])
        .args(["--tools", tools, "--log", "cameleon_nats=info"])
        .env("NO_COLOR", "1")
        .spawn();
    let serving = format!("satellite {name}: serving");
    proc.wait_stderr(&serving, test_support::WAIT_TIMEOUT, |t| {
        t.contains(&serving)
    });
    proc
}

/// The `tool` operator of [`CALLS_DOUBLE`], calling `summarize` with a text.
const CALLS_SUMMARIZE: &str = "cameleon: 1
name: calls-summarize
tools:
  allow: [summarize]
operators:
  - {id: args, type: const, params: {value: {text: 'The reserve counted 175 chameleons.'}}}
  - {id: call, type: tool, params: {name: summarize}}
  - {id: out, type: sink}
connections:
  - {from: args.out_data, to: call.in_args}
  - {from: call.out_result, to: out.in_data}
";

#[test]
fn a_satellite_hosts_a_net_tool_that_a_tool_operator_and_an_agent_call_over_nats() {
    let nats = cameleon_nats::NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();
    // The satellite's own capabilities: its chat model (a scripted server of its own) and the
    // summarising net offered as a tool.
    let at_satellite = Server::start();
    at_satellite.script([
        Reply::chat("175 chameleons were counted."),
        Reply::chat("Chameleons, counted."),
    ]);
    let sat_dir = TempDir::new("cli-net-tools-sat-base");
    sat_dir.write(
        "nets/summarize.cm",
        std::fs::read_to_string(agents().join("nets/summarize.cm")).unwrap(),
    );
    sat_dir.write(
        "cameleon.yaml",
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: test-model, max_retries: 0}}\nnets:\n  summarize: nets/summarize.cm\n",
            at_satellite.base_url()
        ),
    );
    // Without the capabilities that offer it, a satellite cannot host it, and says where nets go.
    let o = CAMELEON.run(&[
        "satellite",
        "--nats",
        &url,
        "--name",
        "none",
        "--tools",
        "summarize",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "offer a net under this name in the `nets:` of `--base DIR`'s `cameleon.yaml`"
        ),
        "{}",
        stderr(&o)
    );
    let sat = satellite(&url, "nets-sat", &sat_dir.file(""), "summarize");

    // The run's folder has no capabilities file: `summarize` is the satellite's.
    let dir = TempDir::new("cli-net-tools-sat-run");
    dir.write("main.cm", CALLS_SUMMARIZE);
    let file = dir.file("main.cm");
    let o = CAMELEON.run(&["check", &file]);
    assert_eq!(
        code(&o),
        2,
        "unknown without the satellites: {}",
        stderr(&o)
    );
    let o = CAMELEON.run(&["check", &file, "--nats", &url]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = CAMELEON.run(&["run", &file, "--nats", &url, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["sinks"]["out"],
        json!([{"summary": "175 chameleons were counted."}]),
        "{v}"
    );
    // It ran there: the satellite took the call, with its own model.
    assert_eq!(at_satellite.count(), 1);
    let taken = sat.wait_stderr(
        "the satellite's `call taken`",
        test_support::WAIT_TIMEOUT,
        |t| {
            t.lines()
                .any(|l| l.contains("call taken") && l.contains("summarize"))
        },
    );
    assert!(taken.contains("nets-sat"), "{taken}");

    // A policy that does not list it: denied at the run, nothing sent.
    dir.write(
        "denied.cm",
        CALLS_SUMMARIZE.replace("allow: [summarize]", "allow: [calc]"),
    );
    let o = CAMELEON.run(&["run", &dir.file("denied.cm"), "--nats", &url, "--json"]);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "ERROR", "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("tool `summarize` denied")),
        "{v}"
    );
    assert_eq!(at_satellite.count(), 1, "the denied call never ran");

    // An agent of the run (its model a scripted server of the run's) calls it too.
    let at_run = Server::start();
    at_run.script([
        Reply::tool_calls(&[(
            "s1",
            "summarize",
            json!({"text": "Chameleons were counted in two forests."}),
        )]),
        Reply::chat("In short: chameleons, counted."),
    ]);
    dir.write(
        "cameleon.yaml",
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: test-model, max_retries: 0}}\n",
            at_run.base_url()
        ),
    );
    dir.write(
        "agent.cm",
        "cameleon: 1\nname: supervisor\ntools:\n  allow: [summarize]\noperators:\n  - {id: task, type: source, params: {value: 'Summarise the count.'}}\n  - {id: agent, type: agent, params: {tools: [summarize]}}\n  - {id: out, type: sink}\nconnections:\n  - {from: task.out_data, to: agent.in_prompt}\n  - {from: agent.out_text, to: out.in_data}\n",
    );
    let o = CAMELEON.run(&["run", &dir.file("agent.cm"), "--nats", &url, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["sinks"]["out"],
        json!(["In short: chameleons, counted."]),
        "{v}"
    );
    assert_eq!(at_run.count(), 2, "the agent's two turns, at the run");
    assert_eq!(at_satellite.count(), 2, "the net's `llm`, on the satellite");
    let reqs = at_run.requests();
    let answer = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str::<Value>(m["content"].as_str().unwrap()).unwrap());
    assert_eq!(
        answer,
        Some(
            json!({"status": "ok", "content": {"summary": "Chameleons, counted."}, "error": null})
        )
    );
}
