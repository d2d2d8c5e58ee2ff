//! Nets as tools (docs/tools.md, "Nets as tools"): a capabilities file's `nets:` become tools
//! of the gate — an agent (driven by a scripted OpenAI-compatible server on 127.0.0.1) calls a
//! summarising net and a calculator sub-agent; the inner runs are kept with the calling firing
//! and never run again on `back` and replay; a net that is not proved to finish is refused at
//! load with its witness; the recursion limit and the policy intersection hold.

use std::path::Path;
use std::sync::Arc;

use cameleon::capabilities::{CapabilitiesError, Runtime};
use cameleon::cm::Loader;
use cameleon::journal::{Durability, Journal, Names, ResumeOptions, RunOptions};
use cameleon::operator::capability::{ToolCall, ToolStatus};
use cameleon::ops::ai::{FiringLog, ModelCall, ModelLog};
use cameleon::prelude::*;
use serde_json::{Value, json};
use test_support::openai::{Reply, Server};
use test_support::temp::TempDir;

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/agents")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `examples/agents` copied into a fresh folder, with a capabilities file `caps.yaml` whose
/// chat model is `server`.
fn agents_folder(tag: &str, server: &Server) -> TempDir {
    let dir = TempDir::new(tag);
    for f in ["supervisor.cm", "nets/summarize.cm", "nets/calculator.cm"] {
        dir.write(f, example(f));
    }
    dir.write(
        "caps.yaml",
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: test-model, max_retries: 0}}\nnets:\n  summarize: nets/summarize.cm\n  calculator: {{file: nets/calculator.cm, max_depth: 2}}\n",
            server.base_url()
        ),
    );
    dir
}

fn runtime(caps: &Path) -> Result<Runtime, CapabilitiesError> {
    Runtime::builder().config_file(caps).build()
}

/// Loads `file` with the tools of `rt`'s generation (its net-tools included).
fn load(rt: &Runtime, file: &Path) -> Net {
    Loader::new()
        .tools(Arc::clone(rt.current().tools()))
        .load_file(file)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The supervisor's record of its last firing (step 2: after the source).
fn supervisor_log(cvm: &Cvm) -> cameleon::ops::ai::FiringLog {
    let history = cvm.history();
    let state = history.state_after(2, 0).expect("the agent's state");
    let (log,) = state.get::<(ModelLog,)>().expect("a model log");
    log.last().expect("a firing").clone()
}

#[test]
fn a_supervisor_agent_calls_a_summarising_net_and_a_calculator_sub_agent() {
    let server = Server::start();
    server.script([
        // The supervisor's first turn: summarise.
        Reply::tool_calls(&[(
            "call_1",
            "summarize",
            json!({"text": "The reserve counted 128 chameleons in the north forest and 47 in the south."}),
        )]),
        // The summarising net's `llm`.
        Reply::chat("A reserve counted chameleons in two forests."),
        // The supervisor's second turn: the calculator sub-agent.
        Reply::tool_calls(&[("call_2", "calculator", json!({"question": "128 + 47"}))]),
        // The sub-agent's turns: `calc`, then its answer.
        Reply::tool_calls(&[("c1", "calc", json!({"expr": "128 + 47"}))]),
        Reply::chat("128 + 47 = 175"),
        // The supervisor's answer.
        Reply::chat("Two forests; 175 chameleons in all."),
    ]);
    let dir = agents_folder("net-tools-supervisor", &server);
    let rt = runtime(&dir.join("caps.yaml")).expect("both nets are offered");

    // The manifests, derived from the nets.
    let tools = rt.current().tools().clone();
    let m = tools.get("summarize").expect("a tool").manifest().clone();
    assert_eq!(m.description, "Summarises a text in one or two sentences.");
    assert_eq!(
        m.input_schema,
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text to summarise"}},
               "required": ["text"], "additionalProperties": false})
    );
    assert_eq!(
        m.output_schema,
        json!({"type": "object", "properties": {"summary": {"type": "string", "description": "The summary"}}})
    );
    assert_eq!(m.effects, cameleon::tools::Effect::None);

    let net = load(&rt, &dir.join("supervisor.cm"));
    let mut cvm = rt.cvm(net, dir.path()).build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        cvm.received("out")
            .iter()
            .map(|v| v.to_json())
            .collect::<Vec<_>>(),
        [json!("Two forests; 175 chameleons in all.")]
    );
    assert_eq!(
        server.count(),
        6,
        "three supervisor turns, one summary, two sub-agent turns"
    );

    // The sub-agent's turn offered it `calc` through its own gate, and the calc ran.
    let reqs = server.requests();
    let msgs = reqs[4].body["messages"].as_array().unwrap().clone();
    let calc: Value =
        serde_json::from_str(msgs.last().unwrap()["content"].as_str().unwrap()).unwrap();
    assert_eq!(calc, json!({"status": "ok", "content": 175, "error": null}));
    // The supervisor read the nets' outputs as the tools' results.
    let msgs = reqs[5].body["messages"].as_array().unwrap().clone();
    let answers: Vec<Value> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        answers,
        [
            json!({"status": "ok", "content": {"summary": "A reserve counted chameleons in two forests."}, "error": null}),
            json!({"status": "ok", "content": {"answer": "128 + 47 = 175"}, "error": null}),
        ]
    );

    // The inner runs are kept with the calling firing, and their tokens are in its usage.
    let log = supervisor_log(&cvm);
    let runs: Vec<&Value> = log
        .calls
        .iter()
        .filter_map(|c| match c {
            ModelCall::Tool { result, .. } => result.meta.run.as_ref(),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["net"], "summarize");
    assert_eq!(runs[0]["end"]["end"], "COMPLETED");
    assert_eq!(runs[1]["net"], "calculator");
    assert!(
        !runs[1]["history"]["nodes"].as_array().unwrap().is_empty(),
        "the sub-agent's history: {}",
        runs[1]
    );
    // Six requests: three tool-call turns (20 prompt tokens each), three answers (11 each).
    let usage = log.usage.expect("usage");
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens),
        (3 * 20 + 3 * 11, 3 * 7 + 3 * 5),
        "the inner runs' tokens are summed into the calling firing's"
    );
    let spent = cvm.capabilities().meter().expect("a meter").spent();
    assert_eq!(
        spent.requests, 6,
        "every inner request counts toward the run's budget"
    );

    // Back over everything, then forward again: neither the model nor the nets run again.
    while cvm.back().is_ok() {}
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(server.count(), 6, "no model request on replay");
    assert_eq!(
        supervisor_log(&cvm),
        log,
        "the same record, inner runs included"
    );
    assert_eq!(
        cvm.capabilities().meter().unwrap().spent().requests,
        6,
        "no net ran again"
    );
}

/// `input` → fork → (barrier, predicate → gate): when the predicate says no, the barrier
/// waits forever with one token — a deadlock the verifier finds.
const STUCK: &str = include_str!("fixtures/nets/stuck.cm");

#[test]
fn a_net_tool_that_deadlocks_is_refused_at_load_with_its_witness() {
    let dir = TempDir::new("net-tools-stuck");
    dir.write("stuck.cm", STUCK);
    dir.write("caps.yaml", "nets:\n  stuck: stuck.cm\n");
    let e = runtime(&dir.join("caps.yaml")).expect_err("not offered");
    let CapabilitiesError::Net {
        name,
        from,
        message,
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(name, "stuck");
    assert!(from.contains("caps.yaml` line 2"), "{from}");
    assert!(message.contains("deadlock freedom fails"), "{message}");
    assert!(
        message.contains("witness: x → split → urgent → route → dropped"),
        "{message}"
    );
}

#[test]
fn a_net_tool_path_stays_in_the_capabilities_files_folder() {
    let dir = TempDir::new("net-tools-outside");
    dir.write("caps.yaml", "nets:\n  up: ../up.cm\n  abs: /etc/x.cm\n");
    let e = runtime(&dir.join("caps.yaml"))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("net-tool `up`: `../up.cm` leads out"), "{e}");
    assert!(e.contains("net-tool `abs`: `/etc/x.cm` leads out"), "{e}");
}

/// `levelN.cm`: its `input` goes to tool `calls` through a `tool` operator, the result to its
/// `output`; its `tools:` allows `allow`.
fn level(name: &str, calls: &str, allow: &[&str]) -> String {
    format!(
        "cameleon: 1
name: {name}
tools:
  allow: [{}]
operators:
  - {{id: args, type: input, params: {{name: args}}}}
  - {{id: call, type: tool, params: {{name: {calls}}}}}
  - {{id: value, type: output, params: {{name: value}}}}
connections:
  - {{from: args.out_data, to: call.in_args}}
  - {{from: call.out_result, to: value.in_data}}
",
        allow.join(", ")
    )
}

/// level1 → level2 → level3 → calc, each a net-tool; level3 ends chains of at most `depth`.
fn chain(tag: &str, depth: u32) -> (TempDir, Runtime) {
    let dir = TempDir::new(tag);
    dir.write("level3.cm", level("level3", "calc", &["calc"]));
    dir.write("level2.cm", level("level2", "level3", &["level3", "calc"]));
    dir.write(
        "level1.cm",
        level("level1", "level2", &["level2", "level3", "calc"]),
    );
    dir.write(
        "caps.yaml",
        format!(
            "nets:\n  level3: {{file: level3.cm, max_depth: {depth}}}\n  level2: level2.cm\n  level1: level1.cm\n"
        ),
    );
    let rt = runtime(&dir.join("caps.yaml")).expect("offered");
    (dir, rt)
}

/// `cameleon call TOOL` as the user types it: each level's argument `args` is what it passes
/// to the next (`calc` at the end gets `{"expr": "6 * 7"}`).
fn call(rt: &Runtime, dir: &TempDir, tool: &str) -> cameleon::operator::capability::ToolResult {
    let mut args = json!({"expr": "6 * 7"});
    let levels = if tool == "level1" { 3 } else { 2 };
    for _ in 0..levels {
        args = json!({ "args": args });
    }
    rt.current()
        .for_call(tool, dir.path())
        .gate()
        .call_blocking(ToolCall::new(tool, args))
}

#[test]
fn the_recursion_limit_holds_and_names_the_chain() {
    let (dir, rt) = chain("net-tools-deep", 3);
    let r = call(&rt, &dir, "level1");
    assert_eq!(r.status, ToolStatus::Ok, "{:?}", r.error);
    assert_eq!(r.content, json!({"value": {"value": {"value": 42}}}));

    let (dir, rt) = chain("net-tools-too-deep", 2);
    let r = call(&rt, &dir, "level1");
    assert_eq!(r.status, ToolStatus::Error);
    let e = r.error.unwrap_or_default();
    assert!(
        e.contains("level1 → level2 → level3 would be 3 deep, past its max_depth of 2"),
        "{e}"
    );
    // Called from one level down, the chain is short enough.
    let r = call(&rt, &dir, "level2");
    assert_eq!(r.status, ToolStatus::Ok, "{:?}", r.error);
}

#[test]
fn a_net_tool_runs_under_its_callers_policy_intersected_with_its_own() {
    let (dir, rt) = chain("net-tools-policy", 4);
    // The caller allows `level3` but not `calc`, which level3's own `tools:` allows: denied.
    let text = "cameleon: 1
tools:
  allow: [level3]
operators:
  - {id: args, type: const, params: {value: {args: {expr: '1 + 1'}}}}
  - {id: call, type: tool, params: {name: level3}}
  - {id: out, type: sink}
connections:
  - {from: args.out_data, to: call.in_args}
  - {from: call.out_result, to: out.in_data}
";
    let net = Loader::new()
        .tools(Arc::clone(rt.current().tools()))
        .load_str(text)
        .unwrap();
    let mut cvm = rt.cvm(net, dir.path()).build();
    let end = cvm.run().unwrap();
    let EndState::Error { error, .. } = &end else {
        panic!("{end:?}")
    };
    assert!(
        error.contains("tool `calc` denied: tool `calc` is denied: it is not listed"),
        "{error}"
    );

    // Allowed by both: it runs.
    let net = Loader::new()
        .tools(Arc::clone(rt.current().tools()))
        .load_str(&text.replace("allow: [level3]", "allow: [level3, calc]"))
        .unwrap();
    let mut cvm = rt.cvm(net, dir.path()).build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!({"value": 2}));
}

#[test]
fn the_runs_budget_is_checked_before_the_inner_runs_model_requests() {
    let server = Server::start();
    server.script([Reply::tool_calls(&[(
        "call_1",
        "summarize",
        json!({"text": "Two forests."}),
    )])]);
    server.always(Reply::chat("never asked"));
    let dir = agents_folder("net-tools-budget", &server);
    let rt = runtime(&dir.join("caps.yaml")).expect("offered");
    let net = load(&rt, &dir.join("supervisor.cm"));
    let mut cvm = rt.cvm(net, dir.path()).build();
    // The supervisor's first turn spends 27 tokens: past this budget, no request is made —
    // neither the summarising net's nor the supervisor's next turn.
    cvm.capabilities().meter().expect("a meter").set_limit(
        cameleon::operator::capability::Budget {
            tokens: Some(20),
            cost_usd: None,
        },
    );
    let end = cvm.run().unwrap();
    assert!(matches!(end, EndState::Budget { .. }), "{end:?}");
    assert_eq!(server.count(), 1, "the inner net's request was refused too");
}

/// A `tool` operator calling the summarising net-tool: `const` → `tool` → `sink`.
const TOOL_CALLS_SUMMARIZE: &str = "cameleon: 1
name: tool-op
tools:
  allow: [summarize]
operators:
  - {id: args, type: const, params: {value: {text: 'The reserve counted chameleons in two forests.'}}}
  - {id: call, type: tool, params: {name: summarize}}
  - {id: out, type: sink}
connections:
  - {from: args.out_data, to: call.in_args}
  - {from: call.out_result, to: out.in_data}
";

/// The `tool` operator's record of its firing (step 2: after the `const`).
fn tool_log(cvm: &Cvm) -> FiringLog {
    let history = cvm.history();
    let state = history.state_after(2, 0).expect("the tool's state");
    cameleon::ops::ai::log_in(state)
        .and_then(ModelLog::last)
        .expect("a record of the call")
        .clone()
}

/// The inner run in a `tool` operator's record of its one call.
fn inner_run(log: &FiringLog) -> Value {
    match &log.calls[..] {
        [ModelCall::Tool { call, result }] => {
            assert_eq!(call.tool, "summarize");
            result.meta.run.clone().expect("the inner run")
        }
        other => panic!("one tool call expected: {other:?}"),
    }
}

#[test]
fn the_tool_operator_keeps_a_net_tools_inner_run_and_replays_it_without_running_it() {
    let server = Server::start();
    server.script([Reply::chat("Chameleons in two forests.")]);
    let dir = agents_folder("net-tools-tool-op", &server);
    dir.write("main.cm", TOOL_CALLS_SUMMARIZE);
    let rt = runtime(&dir.join("caps.yaml")).expect("offered");
    let net = load(&rt, &dir.join("main.cm"));
    let mut cvm = rt.cvm(net, dir.path()).build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        cvm.received("out")[0].to_json(),
        json!({"summary": "Chameleons in two forests."})
    );
    assert_eq!(server.count(), 1, "the inner net's `llm` asked once");

    // The inner run is kept with the firing, its whole history, and its tokens.
    let log = tool_log(&cvm);
    let run = inner_run(&log);
    assert_eq!(run["net"], "summarize");
    assert_eq!(run["end"]["end"], "COMPLETED");
    assert!(
        !run["history"]["nodes"].as_array().unwrap().is_empty(),
        "{run}"
    );
    let usage = log.usage.expect("the inner run's usage");
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (11, 5));

    // Back over everything, then forward again: the inner net does not run again.
    while cvm.back().is_ok() {}
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(server.count(), 1, "no model request on replay");
    assert_eq!(
        cvm.capabilities().meter().unwrap().spent().requests,
        1,
        "the net did not run again"
    );
    assert_eq!(tool_log(&cvm), log, "the same record, inner run included");
    assert_eq!(
        cvm.received("out")[0].to_json(),
        json!({"summary": "Chameleons in two forests."})
    );
}

#[test]
fn a_journaled_run_stopped_after_a_net_tool_call_resumes_with_the_call_restored_not_run_again() {
    let server = Server::start();
    server.script([Reply::chat("Chameleons in two forests.")]);
    let dir = agents_folder("net-tools-tool-op-journal", &server);
    dir.write("main.cm", TOOL_CALLS_SUMMARIZE);
    let rt = runtime(&dir.join("caps.yaml")).expect("offered");
    let db = dir.join("runs.db");
    // The stored net names the net-tool: it loads back with the generation's tools.
    let tools = Arc::clone(rt.current().tools());
    let names = Names {
        catalogue: None,
        loader: Some(Arc::new(move |l: Loader<'_>| l.tools(Arc::clone(&tools)))),
    };
    let (id, log) = {
        let journal = Journal::create(&db).unwrap();
        let mut cvm = rt.cvm(load(&rt, &dir.join("main.cm")), dir.path()).build();
        let opts = RunOptions {
            durability: Durability::Sync,
            base_dir: Some(dir.path().to_path_buf()),
            names: names.clone(),
            ..RunOptions::default()
        };
        let id = journal.start(&mut cvm, &opts).unwrap();
        // The `const`, then the `tool`: the process stops there, before the sink fires (each
        // step committed as it was taken: what a crash leaves).
        cvm.step().unwrap();
        cvm.step().unwrap();
        assert_eq!(server.count(), 1);
        assert!(cvm.received("out").is_empty());
        (id, tool_log(&cvm))
    };
    let journal = Journal::open(&db).unwrap();
    assert_eq!(journal.runs().unwrap()[0].status, "RUNNING");
    let resumed = journal
        .resume_with_names(Some(&id), &ResumeOptions::default(), &names, |net, base| {
            rt.pin(net, base)
        })
        .unwrap();
    let mut cvm = resumed.cvm;
    assert_eq!(cvm.depth(), 2, "both steps restored");
    assert_eq!(
        tool_log(&cvm),
        log,
        "the call restored from the journal, inner run included"
    );
    assert_eq!(inner_run(&log)["end"]["end"], "COMPLETED");
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(server.count(), 1, "the net-tool was not called again");
    assert_eq!(
        cvm.received("out")[0].to_json(),
        json!({"summary": "Chameleons in two forests."})
    );
}

#[test]
fn a_net_tool_may_call_nets_listed_after_it_and_a_cycle_is_refused_naming_it() {
    let dir = TempDir::new("net-tools-order");
    dir.write("level3.cm", level("level3", "calc", &["calc"]));
    dir.write("level2.cm", level("level2", "level3", &["level3", "calc"]));
    dir.write(
        "level1.cm",
        level("level1", "level2", &["level2", "level3", "calc"]),
    );
    // Each listed before the nets it calls.
    dir.write(
        "caps.yaml",
        "nets:\n  level1: level1.cm\n  level2: level2.cm\n  level3: level3.cm\n",
    );
    let rt = runtime(&dir.join("caps.yaml")).expect("offered whatever the order");
    let r = call(&rt, &dir, "level1");
    assert_eq!(r.status, ToolStatus::Ok, "{:?}", r.error);
    assert_eq!(r.content, json!({"value": {"value": {"value": 42}}}));

    // level3 calls level1 back: a cycle, named.
    dir.write("level3.cm", level("level3", "level1", &["level1"]));
    let e = runtime(&dir.join("caps.yaml")).expect_err("a cycle");
    let CapabilitiesError::Net { name, message, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(name, "level1");
    assert!(
        message.contains("in a cycle: level1 → level2 → level3 → level1"),
        "{message}"
    );
    // A net naming itself.
    dir.write(
        "caps.yaml",
        "nets:\n  level3: level3.cm\n  level1: level1.cm\n  level2: level2.cm\n",
    );
    dir.write("level1.cm", level("level1", "level1", &["level1"]));
    let e = runtime(&dir.join("caps.yaml"))
        .expect_err("a cycle")
        .to_string();
    assert!(e.contains("in a cycle: level1 → level1"), "{e}");
}
