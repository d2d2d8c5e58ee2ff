//! Models through the real binary: the README's "point it at a model" capabilities file against
//! a local OpenAI-compatible server (started by the test on 127.0.0.1), token usage in the trace
//! and `--json`, located errors of a capabilities file for model kinds (exit 2, nothing run),
//! and a planted API key that appears in no output, trace, log, journal or error.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use test_support::openai::{Reply, Server, Structured};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rag() -> String {
    root().join("examples/rag.cm").display().to_string()
}

/// The capabilities file of the README's "Point it at a model" paragraph, as written there.
fn readme_capabilities() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let at = readme
        .find("**Point it at a model.**")
        .expect("the README has its \"Point it at a model\" paragraph");
    let rest = &readme[at..];
    let start = rest.find("```yaml\n").expect("a yaml block follows") + "```yaml\n".len();
    let len = rest[start..].find("```").expect("the block ends");
    rest[start..start + len].to_owned()
}

#[test]
fn the_readme_capabilities_file_points_the_rag_example_at_a_local_server() {
    let server = Server::start();
    let yaml = readme_capabilities();
    assert!(yaml.contains("http://127.0.0.1:11434/v1"), "{yaml}");
    // The same file, for a server on another port (the test's, not Ollama's).
    let dir = TempDir::new("cli-models-readme");
    let caps = dir.join("cameleon.yaml");
    std::fs::write(
        &caps,
        yaml.replace("http://127.0.0.1:11434/v1", &server.base_url()),
    )
    .unwrap();
    let trace = dir.join("trace.jsonl");
    let o = CAMELEON.run(&[
        "run",
        &rag(),
        "--capabilities",
        &caps.display().to_string(),
        "--json",
        "--trace",
        &trace.display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "COMPLETED");
    // The chat model is the server's (which echoes its last message: the retrieved passages
    // and the question), not the offline one.
    let answer = v["sinks"]["out"][0].as_str().unwrap();
    assert!(
        answer.starts_with("echo: Answer using the context below.")
            && answer.contains("\n[3] ")
            && answer.ends_with("Question: Why do chameleons change colour?"),
        "{answer}"
    );

    let reqs = server.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    let embeddings = paths.iter().filter(|p| **p == "/v1/embeddings").count();
    assert!(embeddings >= 2, "the passages and the question: {paths:?}");
    assert_eq!(
        paths
            .iter()
            .filter(|p| **p == "/v1/chat/completions")
            .count(),
        1,
        "one chat request: {paths:?}"
    );
    let chat = reqs
        .iter()
        .find(|r| r.path == "/v1/chat/completions")
        .unwrap();
    assert_eq!(chat.body["model"], "llama3.2");
    let embed = reqs.iter().find(|r| r.path == "/v1/embeddings").unwrap();
    assert_eq!(embed.body["model"], "nomic-embed-text");

    // Token usage per firing: in --json and in the trace's annotations.
    let usage = &v["usage"];
    assert_eq!(usage["completion_tokens"], 5, "{usage}");
    let by_op: Vec<&str> = usage["firings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["op"].as_str().unwrap())
        .collect();
    assert!(
        ["embed", "retrieve", "answer"]
            .iter()
            .all(|op| by_op.contains(op)),
        "{by_op:?}"
    );
    let lines = std::fs::read_to_string(&trace).unwrap();
    let answer: Value = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["op"] == "answer")
        .expect("the answer's firing is traced");
    assert_eq!(answer["usage"]["completion_tokens"], 5, "{answer}");
}

/// Runs `cameleon ARGS` with `env` set.
fn cameleon(args: &[&str], env: &[(&str, &str)]) -> Output {
    env.iter()
        .fold(CAMELEON.cmd().args(args), |c, (k, v)| c.env(k, v))
        .run()
}

/// Runs `rag.cm` with capabilities `yaml`; returns the output.
fn run_with(dir: &Path, yaml: &str, json: bool) -> Output {
    let caps = dir.join("caps.yaml");
    std::fs::write(&caps, yaml).unwrap();
    let c = caps.display().to_string();
    let mut args = vec![
        "run",
        &*Box::leak(rag().into_boxed_str()),
        "--capabilities",
        &c,
    ];
    if json {
        args.push("--json");
    }
    CAMELEON.run(&args)
}

#[test]
fn model_kind_errors_of_a_capabilities_file_are_located_with_a_hint_and_nothing_runs() {
    let server = Server::start();
    let url = server.base_url();
    let dir = TempDir::new("cli-models-kinds");

    // An unknown kind: its line and column, a did-you-mean.
    let yaml = format!("chat:\n  default: {{kind: opnai, base_url: \"{url}\", model: m}}\n");
    let o = run_with(&dir, &yaml, false);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("unknown chat model kind `opnai`"), "{err}");
    assert!(err.contains("did you mean `openai`?"), "{err}");
    assert!(err.contains("caps.yaml:2:"), "{err}");
    let v: Value = serde_json::from_str(&stdout(&run_with(&dir, &yaml, true))).unwrap();
    let p = &v["problems"][0];
    assert_eq!(
        (&p["kind"], &p["line"], &p["column"], &p["hint"]),
        (
            &json!("unknown_kind"),
            &json!(2),
            &json!(19),
            &json!("did you mean `openai`?")
        ),
        "{v}"
    );

    // A key variable that is not set.
    let yaml = format!(
        "embedders:\n  default:\n    kind: openai\n    base_url: \"{url}\"\n    model: m\n    api_key_env: CAMELEON_TEST_KEY_NOBODY_SET\n"
    );
    let o = run_with(&dir, &yaml, true);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let p = &v["problems"][0];
    assert_eq!((&p["kind"], &p["line"]), (&json!("env"), &json!(6)), "{v}");
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("`CAMELEON_TEST_KEY_NOBODY_SET`"),
        "{p}"
    );
    assert!(p["hint"].as_str().unwrap().contains("export"), "{p}");

    // A base URL that is not one: located at its value, with the form it should take.
    let yaml =
        "chat:\n  default:\n    kind: openai\n    base_url: \"127.0.0.1:11434\"\n    model: m\n";
    let o = run_with(&dir, yaml, false);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("caps.yaml:4:15"), "{err}");
    assert!(
        err.contains("base_url `127.0.0.1:11434` is not a URL"),
        "{err}"
    );
    assert!(err.contains("http://127.0.0.1:11434/v1"), "{err}");
    let yaml =
        "chat:\n  default: {kind: openai, base_url: \"ftp://x/v1\", model: m, timout_ms: 5}\n";
    let v: Value = serde_json::from_str(&stdout(&run_with(&dir, yaml, true))).unwrap();
    let msgs: Vec<String> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} {}", p["message"], p["hint"]))
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("unknown setting `timout_ms`") && m.contains("`timeout_ms`")),
        "{msgs:?}"
    );

    // Nothing ran: no request reached the server.
    assert_eq!(server.count(), 0);
}

const KEY_VAR: &str = "CAMELEON_CLI_TEST_API_KEY";
/// With characters that change under percent-encoding and base64, so every form differs.
const PLANTED: &str = "sk-planted/cli+4be1=d07a%93c2&f58e";

/// Every file of `dir` (its journal and the journal's `-wal` and `-shm` included), as read now.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| {
            let p = f.unwrap().path();
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_planted_api_key_appears_in_no_output_trace_log_journal_or_error() {
    let server = Server::start();
    let dir = TempDir::new("cli-models-secret");
    let caps = dir.join("cameleon.yaml");
    std::fs::write(
        &caps,
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: m, api_key_env: {KEY_VAR}, max_retries: 0}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let db = dir.join("runs.db");
    let (c, d) = (caps.display().to_string(), db.display().to_string());
    let with_key = |args: &[&str]| CAMELEON.cmd().args(args).env(KEY_VAR, PLANTED);
    let mut seen: Vec<(String, Vec<u8>)> = Vec::new();

    // A run that succeeds, journaled, traced, logged at every level. Its model call is held
    // until the journal has been read while the run holds it open: the committed steps are
    // then in the `-wal` file (SQLite's write-ahead log), which goes away when the run ends.
    server.script([Reply::chat("hello").held()]);
    let trace = dir.join("ok.jsonl");
    let t = trace.display().to_string();
    let run = with_key(&[
        "run",
        &rag(),
        "--capabilities",
        &c,
        "--journal",
        &d,
        "--trace",
        &t,
        "--json",
        "--log",
        "trace",
    ])
    .spawn();
    test_support::wait_until(
        "the run's model call reaches the server",
        test_support::WAIT_TIMEOUT,
        || server.count() >= 1,
    );
    let open = files_of(&dir);
    let wal = open
        .iter()
        .find(|(n, _)| n.ends_with("runs.db-wal"))
        .unwrap_or_else(|| panic!("no -wal file while the run holds the journal: {open:?}"));
    assert!(
        !wal.1.is_empty(),
        "the write-ahead log holds the committed steps"
    );
    for (name, bytes) in open {
        seen.push((format!("{name}, while the run holds it open"), bytes));
    }
    server.release();
    let o = run.wait_output(test_support::RUN_TIMEOUT);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        server.requests()[0].authorization.as_deref(),
        Some(format!("Bearer {PLANTED}").as_str()),
        "the key is sent, as a bearer token"
    );
    seen.push(("stdout of the run".into(), o.stdout));
    seen.push(("stderr (--log trace) of the run".into(), o.stderr));
    seen.push(("its trace".into(), std::fs::read(&trace).unwrap()));

    // A run the server refuses, quoting the key back (as OpenAI does): the error must not.
    server.always(Reply::error(
        401,
        &format!("Incorrect API key provided: {PLANTED}"),
    ));
    let trace = dir.join("refused.jsonl");
    let t = trace.display().to_string();
    let o = with_key(&[
        "run",
        &rag(),
        "--capabilities",
        &c,
        "--journal",
        &d,
        "--trace",
        &t,
        "--json",
        "--log",
    ])
    .run();
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("401") && error.contains("[redacted]"),
        "{error}"
    );
    seen.push(("stdout (--json) of the refused run".into(), o.stdout));
    seen.push(("stderr of the refused run".into(), o.stderr));
    seen.push(("its trace".into(), std::fs::read(&trace).unwrap()));
    let o = with_key(&["run", &rag(), "--capabilities", &c]).run();
    assert_eq!(code(&o), 5);
    seen.push(("stderr of a plain refused run".into(), o.stderr));

    // What the journal shows, and the journal itself (the stored .cm, values, states).
    let o = CAMELEON.run(&["runs", &d, "--json"]);
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    for r in runs.as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let o = CAMELEON.run(&["history", &d, id, "--json"]);
        seen.push((format!("history of {id}"), o.stdout));
    }
    seen.push(("runs --json".into(), o.stdout));
    seen.extend(files_of(&dir));
    assert!(
        seen.iter().any(|(n, _)| n.ends_with("runs.db")),
        "the journal was written"
    );

    // Not the key, nor its base64, percent-encoded form or either half, anywhere.
    for (what, bytes) in &seen {
        test_support::secrets::assert_absent(PLANTED, what, bytes);
    }
}

#[test]
fn a_journaled_run_waiting_after_indexing_resumes_in_a_new_process_and_finds_its_index() {
    let dir = TempDir::new("cli-models-resume");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(
        root().join("examples/data/chameleons.txt"),
        dir.join("data/chameleons.txt"),
    )
    .unwrap();
    // rag.cm, with the question asked of a person: the run indexes, then waits.
    let text = std::fs::read_to_string(rag()).unwrap().replace(
        "    type: source\n    label: Question\n    params:\n      value: \"Why do chameleons change colour?\"\n",
        "    type: ask\n    label: Question\n    params:\n      prompt: \"Your question?\"\n",
    );
    assert!(text.contains("type: ask"), "the question became an ask");
    let cm = dir.join("rag_ask.cm");
    std::fs::write(&cm, text).unwrap();
    let db = dir.join("runs.db").display().to_string();
    let o = CAMELEON.run(&["run", &cm.display().to_string(), "--journal", &db, "--json"]);
    assert_eq!(code(&o), 6, "WAITING: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["end"], "WAITING", "{v}");

    // Another process: an empty memory, refilled from the journal before the run goes on.
    let o = CAMELEON.run(&[
        "resume",
        &db,
        "--answer",
        "question=Why do chameleons change colour?",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // What the uninterrupted offline run answers (the README shows it).
    let reference = CAMELEON.run(&["run", &rag(), "--json"]);
    let reference: Value = serde_json::from_str(&stdout(&reference)).unwrap();
    assert_eq!(v["sinks"]["out"], reference["sinks"]["out"], "{v}");
    assert!(
        v["sinks"]["out"][0]
            .as_str()
            .unwrap()
            .starts_with("Chameleons change colour mainly to signal their mood"),
        "{v}"
    );
}

/// The README's capabilities file, pointed at `server`, written into `dir`; its path.
fn readme_caps_for(server: &Server, dir: &Path) -> String {
    let caps = dir.join("cameleon.yaml");
    let yaml = readme_capabilities().replace("http://127.0.0.1:11434/v1", &server.base_url());
    std::fs::write(&caps, yaml).unwrap();
    caps.display().to_string()
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

/// Runs `examples/extract.cm` against `server` (the README's capabilities file), which answers
/// with `facts`; checks that they are what the sink received and returns the requests'
/// `response_format` types.
fn extract_against(server: &Server, tag: &str) -> Vec<Value> {
    let dir = TempDir::new(tag);
    let caps = readme_caps_for(server, &dir);
    let facts = json!({"species": 200, "home": "Africa and Madagascar", "diet": "insects"});
    server.script([Reply::chat(&facts.to_string())]);
    let args = [
        "run",
        &example("extract.cm"),
        "--capabilities",
        &caps,
        "--json",
    ];
    let o = cameleon(&args, &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sinks"]["out"], json!([facts]), "{v}");
    assert!(v.get("quoted").is_none(), "a generative model: {v}");
    let reqs = server.requests();
    let schema = &reqs[0].body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["species", "home", "diet"]));
    let _ = std::fs::remove_dir_all(&dir);
    reqs.iter()
        .map(|r| r.body["response_format"]["type"].clone())
        .collect()
}

#[test]
fn the_extract_example_fills_its_schema_from_a_generative_model() {
    let server = Server::start();
    server.structured(Structured::OpenAi);
    assert_eq!(extract_against(&server, "extract"), [json!("json_schema")]);
}

#[test]
fn the_extract_example_completes_on_a_server_answering_as_llama_cpp_python_does() {
    // The server refuses `json_schema` with a 500 naming `response_format` and takes
    // `json_object` with a schema: one refusal, not retried, then the answer.
    let server = Server::start();
    server.structured(Structured::LlamaCpp);
    assert_eq!(
        extract_against(&server, "extract-llama"),
        [json!("json_schema"), json!("json_object")]
    );
}

#[test]
fn the_agent_example_calls_calc_through_the_gate_then_answers() {
    let server = Server::start();
    let dir = TempDir::new("agent");
    let caps = readme_caps_for(&server, &dir);
    server.script([
        Reply::tool_calls(&[("c1", "calc", json!({"expr": "1000 / 100"}))]),
        Reply::chat("It takes about 10 milliseconds."),
    ]);
    let o = cameleon(
        &[
            "run",
            &example("agent.cm"),
            "--capabilities",
            &caps,
            "--json",
        ],
        &[],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["sinks"]["out"],
        json!(["It takes about 10 milliseconds."]),
        "{v}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "two turns: {reqs:?}");
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["calc"], "only the tool the example offers");
    // The tool ran (the net's `tools:` allows it) and its result went back to the model.
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let answer = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(answer["tool_call_id"], "c1");
    let result: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&result["status"], &result["content"]),
        (&json!("ok"), &json!(10)),
        "{result}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check --json` on `cm` (with `args`): the exit code and the parsed object.
fn check_json(cm: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let cm = cm.display().to_string();
    let mut all = vec!["check", cm.as_str(), "--json"];
    all.extend_from_slice(args);
    let o = cameleon(&all, env);
    let v = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    (code(&o), v)
}

/// `examples/agent.cm`, edited by `edit`, in `dir` (with its data).
fn agent_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(
        root().join("examples/data/chameleons.txt"),
        dir.join("data/chameleons.txt"),
    )
    .unwrap();
    let text = std::fs::read_to_string(example("agent.cm")).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit applies");
    let cm = dir.join("agent.cm");
    std::fs::write(&cm, edited).unwrap();
    cm
}

#[test]
fn check_reports_a_name_the_capabilities_do_not_define_at_its_param() {
    let dir = TempDir::new("check-names");
    let cm = agent_copy(&dir, |t| {
        t.replace(
            "      max_turns: 4\n",
            "      max_turns: 4\n      model: fsat\n",
        )
        .replace("      tools: [calc]\n", "      tools: [calc, calcc]\n")
    });
    // Offline: `fsat` is not defined; the tool `calcc` does not exist.
    let (c, v) = check_json(&cm, &[], &[]);
    assert_eq!(c, 2, "{v}");
    assert_eq!(v["valid"], false);
    let problems = v["problems"].as_array().unwrap();
    let kinds: Vec<&str> = problems
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unknown_capability", "unknown_capability"], "{v}");
    let tool = &problems[0];
    assert_eq!(
        (&tool["line"], &tool["column"]),
        (&json!(32), &json!(21)),
        "{tool}"
    );
    assert!(
        tool["hint"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `calc`?"),
        "{tool}"
    );
    let model = &problems[1];
    assert_eq!(
        model["message"],
        "operator `assistant` (agent) names chat model `fsat`, which the capabilities do not define"
    );
    assert_eq!(
        (&model["line"], &model["column"]),
        (&json!(34), &json!(14)),
        "{model}"
    );
    assert_eq!(model["snippet"], "      model: fsat");

    // With a capabilities file beside it that defines `fast` (trusted: it names a key): a
    // did-you-mean, and where.
    std::fs::write(
        dir.join("cameleon.yaml"),
        "chat:\n  fast: {kind: openai, model: m, api_key_env: CAMELEON_TEST_NOBODY_SETS_THIS}\n",
    )
    .unwrap();
    let config = TempDir::new("check-names-config");
    let config_dir = config.path().display().to_string();
    let trusted = [("XDG_CONFIG_HOME", config_dir.as_str())];
    let yaml = dir.join("cameleon.yaml").display().to_string();
    assert_eq!(code(&cameleon(&["trust", &yaml], &trusted)), 0);
    let (c, v) = check_json(&cm, &[], &trusted);
    assert_eq!(c, 2, "{v}");
    let hint = v["problems"][1]["hint"].as_str().unwrap();
    assert!(hint.starts_with("did you mean `fast`?"), "{hint}");
    assert!(hint.contains("cameleon.yaml"), "{hint}");
    // Text: located like the loader's problems.
    let o = cameleon(&["check", &cm.display().to_string()], &trusted);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("agent.cm:34:14"), "{}", stderr(&o));

    // Defined now (the key's variable need not be set to check): valid.
    let fixed = std::fs::read_to_string(&cm)
        .unwrap()
        .replace("model: fsat", "model: fast")
        .replace("[calc, calcc]", "[calc]");
    std::fs::write(&cm, fixed).unwrap();
    let (c, v) = check_json(&cm, &[], &trusted);
    assert_eq!(
        (c, &v["valid"], &v["warnings"]),
        (0, &json!(true), &json!([])),
        "{v}"
    );
    // `run` needs that variable: it stops before running, naming it.
    let o = cameleon(&["run", &cm.display().to_string()], &trusted);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("CAMELEON_TEST_NOBODY_SETS_THIS"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_uses_the_capabilities_run_would_and_never_contacts_them() {
    let server = Server::start();
    let dir = TempDir::new("check-caps");
    let cm = agent_copy(&dir, |t| {
        t.replace(
            "      max_turns: 4\n",
            "      max_turns: 4\n      model: local\n",
        )
    });
    let caps = dir.join("models.yaml");
    std::fs::write(
        &caps,
        format!(
            "chat:\n  local: {{kind: openai, base_url: \"{}\", model: m}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let c = caps.display().to_string();
    // Without the file, `local` is undefined; given with --capabilities, or named by
    // CAMELEON_CAPABILITIES, it is.
    assert_eq!(check_json(&cm, &[], &[]).0, 2);
    let (code_flag, v) = check_json(&cm, &["--capabilities", &c], &[]);
    assert_eq!(code_flag, 0, "{v}");
    assert_eq!(check_json(&cm, &[], &[("CAMELEON_CAPABILITIES", &c)]).0, 0);
    // `--verify` checks the names first, then explores.
    let (code_verify, v) = check_json(&cm, &["--capabilities", &c, "--verify"], &[]);
    assert_eq!((code_verify, &v["warnings"]), (0, &json!([])), "{v}");
    assert_eq!(server.count(), 0, "check contacts nothing");
    // A capabilities file with problems: reported as `run` reports them, exit 2.
    std::fs::write(&caps, "chat:\n  local: {kind: opnai, model: m}\n").unwrap();
    let (c2, v) = check_json(&cm, &["--capabilities", &c], &[]);
    assert_eq!(c2, 2, "{v}");
    assert_eq!(
        (&v["problems"][0]["kind"], &v["problems"][0]["line"]),
        (&json!("unknown_kind"), &json!(2))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_warns_that_tools_are_denied_without_a_tools_key_and_keeps_exit_0() {
    let dir = TempDir::new("check-tools");
    let cm = agent_copy(&dir, |t| t.replace("tools:\n  allow: [calc]\n", ""));
    let (c, v) = check_json(&cm, &[], &[]);
    assert_eq!((c, &v["valid"]), (0, &json!(true)), "{v}");
    let w = &v["warnings"][0];
    assert_eq!(w["kind"], "tools_denied", "{v}");
    assert_eq!(
        w["message"],
        "operator `assistant` (agent) calls tool `calc`, but the net has no `tools:` key: every tool call is denied"
    );
    assert_eq!(
        (&w["line"], &w["column"], &w["snippet"]),
        (&json!(26), &json!(11), &json!("    type: agent")),
        "{w}"
    );
    assert!(
        w["hint"]
            .as_str()
            .unwrap()
            .contains("tools: {allow: [calc]}"),
        "{w}"
    );
    let o = cameleon(&["check", &cm.display().to_string()], &[]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("valid net `agent`"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("1 warning") && stderr(&o).contains("⚠"),
        "{}",
        stderr(&o)
    );

    // A `tools:` that does not list the tool: a warning too; `tools.cm` lists its tools: none.
    let other = agent_copy(&dir.join("b"), |t| {
        t.replace("allow: [calc]", "allow: [json_query]")
    });
    let (c, v) = check_json(&other, &[], &[]);
    assert_eq!(c, 0);
    assert!(
        v["warnings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("does not allow calc"),
        "{v}"
    );
    let (c, v) = check_json(&root().join("examples/tools.cm"), &[], &[]);
    assert_eq!((c, &v["warnings"]), (0, &json!([])), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
