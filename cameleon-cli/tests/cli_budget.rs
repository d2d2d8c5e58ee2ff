//! Budgets through the real binary (docs/cli.md, docs/semantics.md §4.7): `run` stops in
//! BUDGET with exit 4 and what it spent in `--json`, before any request past the budget reaches
//! the model (a local OpenAI-compatible server counts them); `runs --json` lists the usage;
//! `resume` without `--budget` reports the stop again and fires nothing; `resume --budget N`
//! goes on to COMPLETED without asking again what was recorded; flags are checked.

use serde_json::Value;
use test_support::openai::{Reply, Server};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// Three questions, each asked by its own `llm`, one after the other, under `budget`.
fn three_questions(budget: &str) -> String {
    format!(
        "name: three
config:
  budget: {budget}
operators:
  - {{id: qa, type: source, params: {{value: 'Why do chameleons change colour?'}}}}
  - {{id: a, type: llm}}
  - {{id: outa, type: sink}}
  - {{id: qb, type: source, params: {{value: 'Where do chameleons live?'}}}}
  - {{id: b, type: llm}}
  - {{id: outb, type: sink}}
  - {{id: qc, type: source, params: {{value: 'What do chameleons eat?'}}}}
  - {{id: c, type: llm}}
  - {{id: outc, type: sink}}
connections:
  - {{from: qa.out_data, to: a.in_prompt}}
  - {{from: a.out_text, to: outa.in_data}}
  - {{from: qb.out_data, to: b.in_prompt}}
  - {{from: b.out_text, to: outb.in_data}}
  - {{from: qc.out_data, to: c.in_prompt}}
  - {{from: c.out_text, to: outc.in_data}}
"
    )
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

#[test]
fn a_journaled_run_stops_at_its_budget_and_resume_budget_goes_on_without_asking_again() {
    budget_journaled(None);
}

/// The same on a journal on NATS JetStream (docs/journal.md): what the run spent travels in
/// the journal.
#[test]
fn a_run_journaled_on_jetstream_keeps_what_it_spent_across_resume() {
    let d = TempDir::new("cli-budget-js");
    let nats = cameleon_nats::NatsServer::start_with(&["-js", "-sd", &d.file("store")])
        .unwrap_or_else(|e| panic!("{e}"));
    budget_journaled(Some(&nats.url()));
}

/// Runs the budget scenario journaled in a file, or at `url`.
fn budget_journaled(url: Option<&str>) {
    // Every answer reports 11 prompt and 5 completion tokens.
    let server = Server::start();
    server.always(Reply::chat("an answer"));
    let dir = TempDir::new("cli-budget");
    let caps = dir.write(
        "caps.yaml",
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: m, price_usd: {{prompt_per_mtok: 1000000, completion_per_mtok: 2000000}}}}\n",
            server.base_url()
        ),
    );
    let caps = caps.display().to_string();
    // 16 tokens after the first answer: the second request starts; 32 after it: the third
    // does not.
    let cm = dir.write("three.cm", three_questions("{tokens: 20}"));
    let db = url.map_or_else(|| dir.file("runs.db"), str::to_owned);
    let o = CAMELEON.run(&[
        "run",
        &cm.display().to_string(),
        "--capabilities",
        &caps,
        "--journal",
        &db,
        "--json",
    ]);
    assert_eq!(code(&o), 4, "BUDGET exits 4: {}{}", stdout(&o), stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["end"], "BUDGET", "{v}");
    assert_eq!(v["op"], "c");
    assert_eq!(v["limit"]["tokens"], 20);
    assert_eq!(v["usage"]["total_tokens"], 32, "{v}");
    assert_eq!(v["usage"]["requests"], 2);
    // At $1 per prompt token and $2 per completion token: 2 × (11 + 10).
    assert_eq!(v["usage"]["cost_usd"], 42.0);
    assert_eq!(
        server.count(),
        2,
        "no request after the budget reached the server"
    );
    let id = v["run_id"].as_str().unwrap().to_owned();

    let o = CAMELEON.run(&["runs", &db, "--json"]);
    let runs = json_of(&o);
    assert_eq!(runs[0]["status"], "BUDGET", "{runs}");
    assert_eq!(runs[0]["usage"]["total_tokens"], 32, "{runs}");

    // Without a budget: reported as it stopped, nothing fires.
    let o = CAMELEON.run(&["resume", &db, &id, "--capabilities", &caps, "--json"]);
    assert_eq!(code(&o), 4, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(json_of(&o)["end"], "BUDGET");
    assert_eq!(server.count(), 2);

    // With one (the total, what it spent before included): it goes on, asking only the
    // question it had not asked.
    let o = CAMELEON.run(&[
        "resume",
        &db,
        &id,
        "--capabilities",
        &caps,
        "--budget",
        "1000",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["end"], "COMPLETED", "{v}");
    assert_eq!(
        server.count(),
        3,
        "the recorded firings were not asked again"
    );
    assert_eq!(v["usage"]["requests"], 3, "{v}");
    assert_eq!(v["usage"]["total_tokens"], 48);
    assert_eq!(v["sinks"]["outc"][0], "an answer");

    let runs = json_of(&CAMELEON.run(&["runs", &db, "--json"]));
    assert_eq!(runs[0]["status"], "COMPLETED");
    assert_eq!(runs[0]["usage"]["total_tokens"], 48, "{runs}");
}

#[test]
fn an_offline_run_stops_at_a_budget_flag_with_usage_and_bad_budgets_exit_2() {
    let dir = TempDir::new("cli-budget-offline");
    let cm = dir
        .write("three.cm", three_questions("{}"))
        .display()
        .to_string();
    // The offline extractive model counts words: a one-token budget lets the first request
    // start and stops the run before the second.
    let o = CAMELEON.run(&["run", &cm, "--budget", "1", "--json"]);
    assert_eq!(code(&o), 4, "{}{}", stdout(&o), stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["end"], "BUDGET");
    assert_eq!(v["op"], "b");
    assert_eq!(v["usage"]["requests"], 1, "{v}");
    assert!(v["usage"]["total_tokens"].as_u64().unwrap() > 1, "{v}");
    assert_eq!(v["sinks"]["outa"].as_array().unwrap().len(), 1);
    // The text report says where it stopped and how to go on.
    let o = CAMELEON.run(&["run", &cm, "--budget", "1"]);
    assert_eq!(code(&o), 4);
    let text = stdout(&o);
    assert!(text.contains("three: BUDGET"), "{text}");
    assert!(text.contains("--budget N"), "{text}");
    assert!(text.contains("models: "), "{text}");

    for bad in [
        ["--budget", "0"],
        ["--budget-usd", "-1"],
        ["--budget-usd", "free"],
    ] {
        let o = CAMELEON.run(&["run", &cm, bad[0], bad[1]]);
        assert_eq!(code(&o), 2, "{bad:?}: {}", stderr(&o));
    }
    let bad = dir.write("bad.cm", three_questions("{tokens: 0}"));
    let o = CAMELEON.run(&["check", &bad.display().to_string()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad.cm:3:")
            && stderr(&o).contains("`budget: tokens` must be at least 1"),
        "{}",
        stderr(&o)
    );
}
