//! The `cameleon` binary, run as a user runs it: every shipped example, every subcommand, the
//! exit codes and JSON shapes of docs/cli.md.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn example(name: &str) -> String {
    examples().join(name).display().to_string()
}

/// `run --json` on an example: the exit code and the parsed report.
fn run_json(name: &str) -> (i32, Value) {
    let o = CAMELEON.run(&["run", &example(name), "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    (code(&o), v)
}

// ---------------------------------------------------------------------------------------------
// The examples, each through the real binary

#[test]
fn digest_chunks_the_article_and_fills_the_card() {
    let (code, v) = run_json("digest.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["steps"], 7);
    assert_eq!(v["firings"], 7);
    assert_eq!(
        v["sinks"]["cards"],
        json!(["Pipelines are nets, by Ada Lovelace (2026)"])
    );
    let article = std::fs::read_to_string(examples().join("data/article.txt")).unwrap();
    let expected = cameleon::ops::chunk_text(&article, 80, 16).unwrap();
    assert!(expected.len() > 1);
    assert_eq!(v["sinks"]["index"], json!([expected]));
}

#[test]
fn linear_pipeline_extracts_the_customer() {
    let (code, v) = run_json("linear.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["steps"], 6);
    assert_eq!(
        v["sinks"]["out"],
        json!([r#"{"name":"Grace Hopper","city":"Arlington"}"#])
    );
}

#[test]
fn fork_join_waits_for_every_branch() {
    let (code, v) = run_json("fork_join.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["sinks"]["joined"], json!(["Caméléon & Caméléon"]));
    assert_eq!(v["sinks"]["statuses"], json!([r#"{"ready":true}"#]));
    assert_eq!(v["unreached"], json!([]));
}

#[test]
fn gate_takes_both_branches() {
    let (code, v) = run_json("gate.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["sinks"]["small"], json!([3]));
    assert_eq!(v["sinks"]["large"], json!([12]));
    assert_eq!(
        v["unreached"],
        json!([
            "gate12.out_true -> small_values.in_b",
            "gate3.out_false -> large_values.in_a"
        ])
    );
}

#[test]
fn counter_loop_counts_to_five_and_collects_every_value() {
    let (code, v) = run_json("counter.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["sinks"]["done"], json!([5]));
    assert_eq!(v["sinks"]["history"], json!([[1, 2, 3, 4, 5]]));
}

#[test]
fn deadlock_says_who_waits_on_what() {
    let (code, v) = run_json("deadlock.cm");
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["end"], "DEADLOCK");
    assert_eq!(
        v["stuck"],
        json!([{"op": "ship", "input": "in_b", "reason": "EMPTY"}])
    );
    assert_eq!(v["sinks"]["rejected"], json!(["order #42"]));
    assert_eq!(v["sinks"]["shipped"], json!([]));

    let o = CAMELEON.run(&["run", &example("deadlock.cm")]);
    assert_eq!(test_support::code(&o), 3);
    let out = stdout(&o);
    assert!(out.contains("DEADLOCK"), "{out}");
    assert!(
        out.contains("`ship` waits on input `in_b`, which is EMPTY"),
        "{out}"
    );
}

#[test]
fn runaway_loop_stops_at_its_limit() {
    let (code, v) = run_json("runaway.cm");
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["end"], "LOOP_LIMIT");
    assert_eq!(v["op"], "loop");
    assert_eq!(v["limit"], 25);
    assert_eq!(v["sinks"]["never"], json!([]));
    // The limit can be set per run.
    let o = CAMELEON.run(&[
        "run",
        &example("runaway.cm"),
        "--max-loop-iterations",
        "3",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((test_support::code(&o), v["limit"].clone()), (4, json!(3)));
}

#[test]
fn rag_answers_offline_by_quoting_the_document() {
    let (code, v) = run_json("rag.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["end"].clone(), v["steps"].clone()),
        (json!("COMPLETED"), json!(8))
    );
    let answer = v["sinks"]["out"][0].as_str().expect("a text answer");
    assert!(
        answer.starts_with(
            "Chameleons change colour mainly to signal their mood to other chameleons and to \
             regulate their body temperature."
        ),
        "{answer}"
    );
    let o = CAMELEON.run(&["run", &example("rag.cm")]);
    assert_eq!(test_support::code(&o), 0);
    assert!(
        stdout(&o).contains("rag: COMPLETED after 8 steps"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn token_usage_per_firing_is_in_the_trace_and_the_json() {
    let (code, v) = run_json("rag.cm");
    assert_eq!(code, 0, "{v}");
    let usage = &v["usage"];
    let firings = usage["firings"].as_array().expect("a list of firings");
    // Only the chat model reports usage here (the `hash` embedder has no tokens to count).
    assert_eq!(firings.len(), 1, "{usage}");
    assert_eq!(
        (firings[0]["op"].clone(), firings[0]["step"].clone()),
        (json!("answer"), json!(7))
    );
    let prompt = firings[0]["prompt_tokens"].as_u64().unwrap();
    assert!(
        prompt > 50,
        "the question, the instructions and three passages: {prompt}"
    );
    assert_eq!(usage["prompt_tokens"], prompt);
    assert_eq!(usage["completion_tokens"], firings[0]["completion_tokens"]);

    let o = CAMELEON.run(&["run", &example("rag.cm"), "--trace", "-"]);
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let with_usage: Vec<&Value> = lines.iter().filter(|l| l.get("usage").is_some()).collect();
    assert_eq!(with_usage.len(), 1);
    assert_eq!(with_usage[0]["op"], "answer");
    assert_eq!(with_usage[0]["usage"]["prompt_tokens"], prompt);
    let (_, counter) = run_json("counter.cm");
    assert!(counter.get("usage").is_none(), "no model, no usage key");
}

#[test]
fn extract_and_agent_refuse_the_offline_model_saying_how_to_configure_a_generative_one() {
    for (file, op, needs) in [
        ("extract.cm", "facts", "fill a JSON Schema"),
        (
            "agent.cm",
            "assistant",
            "decide to call tools (it is offered calc)",
        ),
    ] {
        let head = std::fs::read_to_string(examples().join(file)).unwrap();
        assert!(
            head.lines()
                .take_while(|l| l.starts_with('#'))
                .any(|l| l.contains("Needs a generative chat model")),
            "{file} says at the top that it needs a generative model"
        );
        let (code, v) = run_json(file);
        assert_eq!(code, 5, "{file}: {v}");
        assert_eq!((&v["end"], &v["op"]), (&json!("ERROR"), &json!(op)), "{v}");
        let error = v["error"].as_str().unwrap();
        for part in [
            "chat model `default` (extractive) is not generative",
            needs,
            "kind: openai",
            "--capabilities FILE",
        ] {
            assert!(error.contains(part), "{file}: `{part}` in {error}");
        }
        assert_eq!(v["sinks"]["out"], json!([]), "nothing invented: {v}");
    }
}

#[test]
fn rag_offline_quotes_and_says_so() {
    let o = CAMELEON.run(&["run", &example("rag.cm")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("note: `answer` answered with a quotation: chat model `default` is `extractive`, which is not generative"),
        "{text}"
    );
    let (_, v) = run_json("rag.cm");
    assert_eq!(
        v["quoted"],
        json!([{"step": 7, "op": "answer", "model": "default", "kind": "extractive"}]),
        "{v}"
    );
    // `model: extractive` names the offline model directly, as `default` does by default.
    let dir = TempDir::new("named-offline");
    let cm = dir.join("rag.cm");
    let rag = std::fs::read_to_string(examples().join("rag.cm")).unwrap();
    let named = rag
        .replace(
            "      system: \"Answer from the context only, in one or two sentences.\"\n",
            "      system: \"Answer from the context only, in one or two sentences.\"\n      model: extractive\n",
        )
        .replace("    label: Embed passages\n", "    label: Embed passages\n    params:\n      model: hash\n")
        .replace("      k: 3\n", "      k: 3\n      model: hash\n");
    assert_eq!(named.matches("model: ").count(), 3, "{named}");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(
        examples().join("data/chameleons.txt"),
        dir.join("data/chameleons.txt"),
    )
    .unwrap();
    std::fs::write(&cm, named).unwrap();
    let o = CAMELEON.run(&["run", &cm.display().to_string(), "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let w: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(w["sinks"], v["sinks"], "the same models, the same answer");
    assert_eq!(w["quoted"][0]["model"], "extractive", "{w}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_example_extracts_the_orders_and_previews_them() {
    let (code, v) = run_json("text.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["sinks"]["fields"],
        json!([[
            {"id": "42", "qty": "3", "item": "apples", "customer": "Alice"},
            {"id": "43", "qty": "5", "item": "pears", "customer": "Bob"}
        ]])
    );
    assert_eq!(
        v["sinks"]["preview"],
        json!(["#42: 3 Apples For Alice | #43…"])
    );
    let preview = v["sinks"]["preview"][0].as_str().unwrap();
    assert_eq!(
        preview.chars().count(),
        30,
        "max: 30 characters, the ellipsis included"
    );
}

#[test]
fn the_catalogue_gives_each_text_operator_an_example() {
    let o = CAMELEON.run(&["catalogue", "--json"]);
    let cat: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let md = stdout(&CAMELEON.run(&["catalogue", "--markdown"]));
    for id in [
        "replace",
        "case",
        "trim",
        "truncate",
        "split_text",
        "join_text",
        "regex_extract",
    ] {
        let e = cat["operators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("`{id}` is in the catalogue"));
        let doc = e["doc"].as_str().unwrap();
        assert!(
            doc.contains("E.g. ") && doc.contains(" turns "),
            "{id}: {doc}"
        );
        assert!(md.contains(&format!("### `{id}`")), "{id} in --markdown");
        for p in e["params"].as_array().unwrap() {
            let pd = p["doc"].as_str().unwrap();
            assert!(
                pd.len() > 20,
                "{id}.{}: a doc a reader can use: {pd:?}",
                p["name"]
            );
        }
    }
}

#[test]
fn every_standard_operator_appears_in_an_example() {
    let o = CAMELEON.run(&["catalogue", "--json"]);
    let cat: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Every `.cm` file under `examples/`, its sub-folders included (`wcp/`, `nets/`).
    let mut types = std::collections::BTreeSet::new();
    let mut dirs = vec![examples()];
    while let Some(dir) = dirs.pop() {
        for f in std::fs::read_dir(dir).unwrap() {
            let p = f.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "cm") {
                let text = std::fs::read_to_string(&p).unwrap();
                for line in text.lines() {
                    if let Some(t) = line.trim().strip_prefix("type: ") {
                        types.insert(t.to_owned());
                    }
                }
            }
        }
    }
    let missing: Vec<&str> = cat["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .filter(|id| !types.contains(*id))
        .collect();
    assert!(missing.is_empty(), "no example uses {missing:?}");
}

/// Every `.cm` file under `examples/`, recursively (`wcp/`, `wcp/bad/`), except in folders that
/// are crates of their own: their operators are in their own binary, whose tests check them
/// (`examples/custom_cli/tests/shout.rs`); and `satellites/`, whose nets use types only
/// satellites host (the satellite tests check them with `--nats`).
fn example_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![examples()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !p.join("Cargo.toml").exists() && p != examples().join("satellites") {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "cm") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_example_is_valid_and_canonical() {
    let files = example_files();
    for sub in ["wcp/wcp01-sequence.cm", "wcp/bad/xor-split-and-join.cm"] {
        assert!(files.contains(&examples().join(sub)), "{sub} is walked");
    }
    for p in files {
        let p = p.display().to_string();
        let o = CAMELEON.run(&["check", &p]);
        assert_eq!(code(&o), 0, "{p}: {}", stderr(&o));
        let o = CAMELEON.run(&["fmt", &p, "--check"]);
        assert_eq!(code(&o), 0, "{p}: {}", stderr(&o));
    }
}

#[test]
fn subnet_example_runs_its_inner_net_per_firing_and_traces_it() {
    let (code, v) = run_json("subnet.cm");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["sinks"]["cards"], json!(["Pipelines are nets (a card)"]));
    assert_eq!(v["inner"]["first"][0]["net"], "card");
    assert_eq!(v["inner"]["first"][0]["end"], "COMPLETED");
    // The trace line of each sub-net firing carries the inner run's own trace.
    let o = CAMELEON.run(&["run", &example("subnet.cm"), "--trace", "-"]);
    let line: Value = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["op"] == "first")
        .unwrap();
    let inner = &line["inner"][0]["trace"];
    assert_eq!(inner.as_array().unwrap().len(), 4);
    assert_eq!(inner[2]["op"], "label");
}

#[test]
fn a_bad_subnet_file_exits_2_with_the_problem_at_its_net_param() {
    let dir = TempDir::new("cli-bad-subnet");
    let outer = dir.join("outer.cm");
    let cases = [
        (
            "missing.cm",
            None,
            "sub-net file `missing.cm` cannot be read",
        ),
        (
            "plain.cm",
            Some(
                "operators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: b, type: sink}\nconnections:\n  - {from: a.out_data, to: b.in_data}\n",
            ),
            "sub-net `plain.cm` has no boundary",
        ),
        (
            "twice.cm",
            Some(
                "operators:\n  - {id: a, type: input, params: {name: x}}\n  - {id: b, type: input, params: {name: x}}\n  - {id: j, type: join}\n  - {id: y, type: output, params: {name: y}}\nconnections:\n  - {from: a.out_data, to: j.in_a}\n  - {from: b.out_data, to: j.in_b}\n  - {from: j.out_data, to: y.in_data}\n",
            ),
            "has two `input` operators named `x` (`a` and `b`)",
        ),
        (
            "outer.cm",
            None,
            "sub-net `outer.cm` includes itself (outer.cm → outer.cm) without a depth limit",
        ),
    ];
    for (file, text, message) in cases {
        if let Some(t) = text {
            std::fs::write(dir.join(file), t).unwrap();
        }
        std::fs::write(
            &outer,
            format!(
                "operators:\n  - {{id: v, type: const, params: {{value: 1}}}}\n  - {{id: sub, type: subnet, params: {{net: {file}}}}}\n  - {{id: out, type: sink}}\nconnections:\n  - {{from: v.out_data, to: sub.in_x}}\n  - {{from: sub.out_y, to: out.in_data}}\n"
            ),
        )
        .unwrap();
        let o = CAMELEON.run(&["check", &outer.display().to_string(), "--json"]);
        assert_eq!(code(&o), 2, "{file}: {}", stdout(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let p = &v["problems"][0];
        assert_eq!(p["kind"], "param", "{file}: {v}");
        assert_eq!(
            (p["line"].clone(), p["column"].clone()),
            (json!(3), json!(38)),
            "{file}"
        );
        assert!(
            p["message"].as_str().unwrap().contains(message),
            "{file}: {v}"
        );
        // `run` refuses it the same way.
        let o = CAMELEON.run(&["run", &outer.display().to_string()]);
        assert_eq!(code(&o), 2, "{file}");
    }
}

// ---------------------------------------------------------------------------------------------
// run

#[test]
fn human_output_names_the_end_state_steps_and_sink_values() {
    let o = CAMELEON.run(&["run", &example("counter.cm")]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert!(
        out.starts_with("count-to-five: COMPLETED after 28 steps (28 firings)\n"),
        "{out}"
    );
    assert!(out.contains("done received 1 value:\n  5\n"), "{out}");
    assert!(
        out.contains("history received 1 value:\n  [1,2,3,4,5]\n"),
        "{out}"
    );
}

#[test]
fn trace_is_json_lines_and_byte_identical_across_runs() {
    let dir = TempDir::new("cli-trace");
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    for p in [&a, &b] {
        let o = CAMELEON.run(&[
            "run",
            &example("counter.cm"),
            "--trace",
            &p.display().to_string(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let (ta, tb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(ta, tb);
    let lines: Vec<&str> = ta.lines().collect();
    assert_eq!(lines.len(), 28 + 1);
    assert_eq!(
        lines[0],
        r#"{"step":1,"op":"zero","consumed":[],"emitted":[{"conn":"zero.out_data -> loop.in_a","type":"DataJSON","value":0}],"generation":1}"#
    );
    assert_eq!(
        lines[1],
        r#"{"step":2,"op":"loop","consumed":["zero.out_data -> loop.in_a"],"emitted":[{"conn":"loop.out_data -> inc.in_data","type":"DataJSON","value":0}]}"#
    );
    assert_eq!(lines[28], r#"{"end":"COMPLETED","steps":28,"firings":28}"#);
    for (i, l) in lines[..28].iter().enumerate() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["step"], i + 1);
    }
}

#[test]
fn trace_to_stdout_moves_the_summary_to_stderr() {
    let o = CAMELEON.run(&["run", &example("deadlock.cm"), "--trace", "-"]);
    assert_eq!(code(&o), 3);
    let out = stdout(&o);
    let last = out.lines().last().unwrap();
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["end"], "DEADLOCK");
    assert_eq!(v["stuck"][0]["op"], "ship");
    assert!(
        stderr(&o).contains("DEADLOCK after 5 steps"),
        "{}",
        stderr(&o)
    );
    assert!(
        out.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
}

/// The trace is written as the run goes, step by step: in parallel mode each maximal step gives
/// one line per firing, in declaration order, all with the step's number; to stdout or to a
/// file, the same bytes.
#[test]
fn a_parallel_trace_has_one_line_per_firing_of_each_maximal_step() {
    let o = CAMELEON.run(&["run", &example("fan_out_delays.cm"), "--trace", "-"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let v: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<u64> = v[..v.len() - 1]
        .iter()
        .map(|l| l["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5]);
    let waits: Vec<&str> = v[2..10].iter().map(|l| l["op"].as_str().unwrap()).collect();
    assert_eq!(
        waits,
        (0..8).map(|i| format!("wait_{i}")).collect::<Vec<_>>()
    );
    assert_eq!(
        v[12],
        json!({"end": "COMPLETED", "steps": 5, "firings": 12})
    );
    let dir = TempDir::new("cli-parallel-trace");
    let path = dir.join("t.jsonl");
    let o = CAMELEON.run(&[
        "run",
        &example("fan_out_delays.cm"),
        "--trace",
        &path.display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), out);
}

#[test]
fn step_budget_stops_in_step_limit() {
    let o = CAMELEON.run(&["run", &example("counter.cm"), "--max-steps", "4", "--json"]);
    assert_eq!(code(&o), 4);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "STEP_LIMIT");
    assert_eq!(v["limit"], 4);
    assert_eq!(v["steps"], 4);
}

#[test]
fn an_operator_failure_ends_in_error_with_exit_5() {
    let dir = TempDir::new("cli-error");
    let cm = dir.join("bad_json.cm");
    std::fs::write(
        &cm,
        "operators:\n  - {id: text, type: source, params: {value: \"not json\"}}\n  - {id: parse, type: json_parse}\n  - {id: out, type: sink}\nconnections:\n  - {from: text.out_data, to: parse.in_data}\n  - {from: parse.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let o = CAMELEON.run(&["run", &cm.display().to_string(), "--json"]);
    assert_eq!(code(&o), 5);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "ERROR");
    assert_eq!(v["op"], "parse");
    assert!(v["error"].as_str().unwrap().contains("invalid JSON"));
}

#[test]
fn reading_outside_the_file_folder_needs_allow_outside() {
    let dir = TempDir::new("cli-outside");
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(dir.join("secret.txt"), "secret").unwrap();
    let cm = inner.join("peek.cm");
    std::fs::write(
        &cm,
        "operators:\n  - {id: f, type: text_file, params: {path: ../secret.txt}}\n  - {id: out, type: sink}\nconnections:\n  - {from: f.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let cm = cm.display().to_string();
    let o = CAMELEON.run(&["run", &cm, "--json"]);
    assert_eq!(code(&o), 5, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["error"].as_str().unwrap().contains("leaves"), "{v}");
    let o = CAMELEON.run(&["run", &cm, "--json", "--allow-outside"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sinks"]["out"], json!(["secret"]));
}

// ---------------------------------------------------------------------------------------------
// check, invalid files

const BROKEN: &str = "\
operators:
  - id: src
    type: source
    params: {value: hi}
  - id: out
    type: snk
connections:
  - from: src.out_dat
    to: out.in_data
";

#[test]
fn invalid_files_exit_2_with_every_problem_located() {
    let dir = TempDir::new("cli-broken");
    let cm = dir.join("broken.cm");
    std::fs::write(&cm, BROKEN).unwrap();
    let path = cm.display().to_string();
    for cmd in ["run", "check", "export"] {
        let mut args = vec![cmd, path.as_str()];
        if cmd == "export" {
            args.push("--dot");
        }
        let o = CAMELEON.run(&args);
        assert_eq!(code(&o), 2, "{cmd}");
        let err = stderr(&o);
        assert!(err.contains("2 problems"), "{cmd}: {err}");
        assert!(err.contains("broken.cm:6:11"), "{cmd}: {err}");
        assert!(err.contains("did you mean `sink`?"), "{cmd}: {err}");
        assert!(err.contains("broken.cm:8:11"), "{cmd}: {err}");
        assert!(err.contains("did you mean `out_data`?"), "{cmd}: {err}");
        assert!(err.contains("type: snk"), "{cmd}: snippet missing: {err}");
    }
    let o = CAMELEON.run(&["check", &path, "--json"]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["valid"], false);
    let p = &v["problems"];
    assert_eq!(p.as_array().unwrap().len(), 2);
    assert_eq!(p[0]["kind"], "unknown_type");
    assert_eq!(
        (p[0]["line"].clone(), p[0]["column"].clone()),
        (json!(6), json!(11))
    );
    assert_eq!(p[0]["hint"], "did you mean `sink`?");
    assert_eq!(p[1]["kind"], "unknown_port");
}

#[test]
fn check_reports_a_valid_net() {
    let o = CAMELEON.run(&["check", &example("digest.cm"), "--json"]);
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["operators"], 7);
    assert_eq!(v["connections"], 5);
    let o = CAMELEON.run(&["check", &example("digest.cm")]);
    assert!(stdout(&o).contains("valid net `article-digest` (7 operators, 5 connections)"));
}

#[test]
fn a_missing_file_exits_2() {
    let o = CAMELEON.run(&["run", "no/such/file.cm"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------------
// fmt

const MESSY: &str = "# A tidy header comment.\nconnections:\n- {to: b.in_data, from: a.out_data}\noperators:\n- {params: {value: hi}, type: source, id: a, y: 2.0, x: 1}\n- id: b   # trailing comment\n  type: sink\nname: messy\n";

const TIDY: &str = "# A tidy header comment.\ncameleon: 1\nname: messy\noperators:\n  - id: a\n    type: source\n    x: 1\n    y: 2\n    params:\n      value: hi\n  - id: b\n    type: sink\nconnections:\n  - from: a.out_data\n    to: b.in_data\n";

#[test]
fn fmt_check_exits_1_on_a_difference_and_fmt_rewrites_in_place() {
    let dir = TempDir::new("cli-fmt");
    let cm = dir.join("messy.cm");
    std::fs::write(&cm, MESSY).unwrap();
    let path = cm.display().to_string();
    let o = CAMELEON.run(&["fmt", &path, "--check"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("not in canonical form"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&cm).unwrap(),
        MESSY,
        "--check writes nothing"
    );
    let o = CAMELEON.run(&["fmt", &path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("comments"),
        "warns about the dropped comment"
    );
    assert_eq!(std::fs::read_to_string(&cm).unwrap(), TIDY);
    let o = CAMELEON.run(&["fmt", &path, "--check"]);
    assert_eq!(code(&o), 0);
}

#[test]
fn fmt_dash_reads_stdin_and_writes_stdout() {
    let o = CAMELEON.cmd().args(["fmt", "-"]).stdin(MESSY).run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), TIDY);
}

#[test]
fn fmt_file_dash_prints_the_canonical_form_and_leaves_the_file() {
    let dir = TempDir::new("cli-fmt-stdout");
    let cm = dir.join("messy.cm");
    std::fs::write(&cm, MESSY).unwrap();
    let o = CAMELEON.run(&["fmt", &cm.display().to_string(), "-"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), TIDY);
    assert_eq!(
        std::fs::read_to_string(&cm).unwrap(),
        MESSY,
        "the file is untouched"
    );
}

// ---------------------------------------------------------------------------------------------
// catalogue, export, schema, help

#[test]
fn catalogue_lists_every_operator_with_ports_params_and_docs() {
    let o = CAMELEON.run(&["catalogue", "--json"]);
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ops = v["operators"].as_array().unwrap();
    let ids: Vec<&str> = ops.iter().map(|e| e["id"].as_str().unwrap()).collect();
    for id in [
        "source", "sink", "fork", "join", "merge", "gate", "guard", "chunker", "template",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let gate = ops.iter().find(|e| e["id"] == "gate").unwrap();
    assert_eq!(gate["aliases"], json!(["switch"]));
    assert_eq!(gate["policy"], "custom");
    assert_eq!(gate["inputs"][1]["name"], "in_condition");
    assert_eq!(gate["inputs"][1]["type"], "DataBool");
    assert_eq!(gate["emits"], json!([["out_true"], ["out_false"]]));
    let chunker = ops.iter().find(|e| e["id"] == "chunker").unwrap();
    assert_eq!(chunker["params"][0]["name"], "size");
    assert_eq!(chunker["params"][0]["default"], 512);
    let source = ops.iter().find(|e| e["id"] == "source").unwrap();
    assert_eq!(source["params"][0]["required"], true);
    assert!(
        v["types"]
            .as_array()
            .unwrap()
            .contains(&json!("DataString"))
    );

    let md = stdout(&CAMELEON.run(&["catalogue", "--markdown"]));
    assert!(md.starts_with("# Caméléon operator catalogue"));
    assert!(md.contains("### `gate` — Gate"));
    let text = stdout(&CAMELEON.run(&["catalogue"]));
    assert!(text.contains("gate (alias switch) — Gate"), "{text}");
    let both = CAMELEON.run(&["catalogue", "--json", "--markdown"]);
    assert_eq!(code(&both), 2, "the formats exclude each other");
}

#[test]
fn export_draws_dot_mermaid_and_svg() {
    let f = example("gate.cm");
    let dot = CAMELEON.run(&["export", &f, "--dot"]);
    assert_eq!(code(&dot), 0);
    let dot = stdout(&dot);
    assert!(dot.starts_with("digraph \"gate\" {"));
    assert!(dot.contains("\"gate3\" -> \"small_values\" [label=\"out_true → in_a\""));
    let mermaid = stdout(&CAMELEON.run(&["export", &f, "--mermaid"]));
    assert!(mermaid.starts_with("flowchart LR\n"));
    assert!(mermaid.contains("-->|\"out_true → in_a\"|"));
    let svg = stdout(&CAMELEON.run(&["export", &f, "--svg"]));
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("marker-end=\"url(#arrow)\"").count(),
        14,
        "one curve per connection"
    );
    let none = CAMELEON.run(&["export", &f]);
    assert_eq!(code(&none), 2, "a format is required");
}

#[test]
fn schema_prints_the_shipped_schema() {
    let o = CAMELEON.run(&["schema"]);
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cameleon/cm.schema.json"),
    )
    .unwrap();
    assert_eq!(stdout(&o), shipped);
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for cmd in ["run", "check", "fmt", "catalogue", "export", "schema"] {
        let o = CAMELEON.run(&[cmd, "--help"]);
        assert_eq!(code(&o), 0, "{cmd}");
        let out = stdout(&o);
        assert!(out.contains("Examples:\n  cameleon "), "{cmd}: {out}");
    }
    let o = CAMELEON.run(&["--help"]);
    assert!(stdout(&o).contains("Examples:"));
    let o = CAMELEON.run(&["run"]);
    assert_eq!(code(&o), 2, "a usage error exits 2");
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_the_run_and_reports_cancelled() {
    let dir = TempDir::new("cli-ctrl-c");
    let file = dir.join("slow.cm");
    std::fs::write(
        &file,
        "name: slow\noperators:\n  - {id: src, type: source, params: {value: x}}\n  \
         - {id: wait, type: delay, params: {ms: 600000}}\n  - {id: out, type: sink}\n\
         connections:\n  - {from: src.out_data, to: wait.in_data}\n  \
         - {from: wait.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let mut child = CAMELEON
        .cmd()
        .args(["run", file.to_str().unwrap(), "--trace", "-"])
        .spawn();
    // The trace streams each step as it is committed: once `src`'s line is out, the run is in
    // the delay's step (ten minutes long), with its Ctrl-C handler installed (it is, before the
    // arguments are even parsed). Interrupt it then, as a terminal would. (The waits only turn a
    // hang into a failure; nothing is timed.)
    child.stdout_line(1, test_support::WAIT_TIMEOUT);
    child.signal(test_support::Signal::Int);
    let out = child.wait_output(test_support::WAIT_TIMEOUT);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let trace: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    // The end state agrees with what the trace shows: one step, `src`'s; the delay's step was
    // discarded.
    let v: Vec<Value> = trace
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(v.len(), 2, "{trace:#?}");
    assert_eq!(v[0]["step"], 1);
    assert_eq!(v[0]["op"], "src");
    assert_eq!(
        v[1],
        json!({"end": "CANCELLED", "steps": 1, "firings": 1}),
        "{trace:#?}"
    );
    let err = stderr(&out);
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        err.contains("slow: CANCELLED after 1 step (1 firing)"),
        "{err}"
    );
}
