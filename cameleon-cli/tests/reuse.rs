//! Reuse across runs through the real binary (docs/semantics.md §5.9, docs/cli.md): the RAG
//! example run against a local OpenAI-compatible server, then changed — a re-run with `--reuse`
//! calls the models only downstream of the change (counted on the server); a reused `index`
//! puts its items back into the memory (only the question changed: no passage is embedded
//! again); `test --against` passes offline on the unchanged net and fails with a diff when an
//! operator's params change; `diff`'s exit codes.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use test_support::openai::Server;
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A folder with the RAG example (`rag.cm`, its document) and a capabilities file pointing its
/// chat model and embedder at `server`.
struct Project {
    dir: TempDir,
    rag: String,
}

impl Project {
    fn new(server: &Server) -> Project {
        let dir = TempDir::new("cli-reuse");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::copy(
            root().join("examples/data/chameleons.txt"),
            dir.join("data/chameleons.txt"),
        )
        .unwrap();
        let rag = std::fs::read_to_string(root().join("examples/rag.cm")).unwrap();
        std::fs::write(dir.join("rag.cm"), &rag).unwrap();
        let url = server.base_url();
        std::fs::write(
            dir.join("caps.yaml"),
            format!(
                "chat:\n  default: {{ kind: openai, base_url: \"{url}\", model: \"llama3.2\" }}\n\
                 embedders:\n  default: {{ kind: openai, base_url: \"{url}\", model: \"nomic-embed-text\" }}\n\
                 memories:\n  default: {{ kind: flat }}\n"
            ),
        )
        .unwrap();
        Project { dir, rag }
    }

    fn path(&self, f: &str) -> String {
        self.dir.join(f).display().to_string()
    }

    /// Writes `rag.cm` with `from` replaced by `to`.
    fn edit(&self, from: &str, to: &str) {
        assert!(self.rag.contains(from), "{from}");
        std::fs::write(self.dir.join("rag.cm"), self.rag.replace(from, to)).unwrap();
    }

    /// `cameleon ARGS… --capabilities caps.yaml`.
    fn cameleon(&self, args: &[&str]) -> Output {
        let caps = self.path("caps.yaml");
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--capabilities", &caps]);
        CAMELEON.run(&all)
    }

    /// Runs `rag.cm` journaled into `runs.db` (with `extra`), `--json`; returns the result and
    /// the run id.
    fn run(&self, extra: &[&str]) -> (Value, String) {
        let (rag, db) = (self.path("rag.cm"), self.path("runs.db"));
        let mut args = vec!["run", &rag, "--journal", &db, "--json"];
        args.extend(extra);
        let o = self.cameleon(&args);
        assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
        let id = stderr(&o)
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("run "))
            .expect("the run id first on stderr")
            .to_owned();
        (serde_json::from_str(&stdout(&o)).unwrap(), id)
    }
}

/// The server's requests since `from`: (embedding requests, chat requests), and the texts the
/// embedding requests asked for.
fn calls(server: &Server, from: usize) -> (usize, usize, Vec<String>) {
    let reqs = server.requests();
    let new = &reqs[from..];
    let embed: Vec<_> = new.iter().filter(|r| r.path == "/v1/embeddings").collect();
    let texts = embed
        .iter()
        .flat_map(|r| r.body["input"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let chat = new
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    (embed.len(), chat, texts)
}

const SYSTEM: &str = "Answer from the context only, in one or two sentences.";
const QUESTION: &str = "Why do chameleons change colour?";

#[test]
fn a_changed_prompt_calls_only_the_model_downstream_and_the_rest_is_reused() {
    let server = Server::start();
    let p = Project::new(&server);
    let (first, id) = p.run(&[]);
    let (embeds, chats, _) = calls(&server, 0);
    assert!(embeds >= 2, "the passages and the question");
    assert_eq!(chats, 1);
    assert!(first.get("reused").is_none(), "no --reuse: no count");

    // The same net again: every model call is reused.
    let before = server.count();
    let db = p.path("runs.db");
    let (same, _) = p.run(&["--reuse", &db]);
    assert_eq!(calls(&server, before), (0, 0, vec![]));
    assert_eq!(
        same["sinks"], first["sinks"],
        "a sink receives what was recorded"
    );
    assert!(same["reused"].as_u64().unwrap() >= 3, "{same}");

    // The answer's prompt changed: only the chat model is called again.
    p.edit(SYSTEM, "Answer in one short sentence.");
    let before = server.count();
    let trace = p.path("trace.jsonl");
    let (changed, changed_id) = p.run(&["--reuse", &format!("{db}:{id}"), "--trace", &trace]);
    let (embeds, chats, _) = calls(&server, before);
    assert_eq!((embeds, chats), (0, 1), "only `answer` calls its model");
    assert_eq!(changed["end"], "COMPLETED");
    let lines: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let line = |op: &str| lines.iter().find(|l| l["op"] == op).unwrap().clone();
    assert_eq!(line("retrieve")["reused"]["run"], id.as_str());
    assert!(line("retrieve")["reused"]["step"].as_u64().unwrap() > 0);
    assert!(line("answer").get("reused").is_none(), "answered live");

    // diff: the same run is the same (0); the two runs part at `answer` (1); a bad id is 2.
    let o = CAMELEON.run(&["diff", &db, &id, &id]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = CAMELEON.run(&["diff", &db, &id, &changed_id, "--json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let d: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(d["first"]["op"], "answer", "{d}");
    assert_eq!(d["changed"], 1, "{d}");
    assert_eq!(d["new"], 0, "{d}");
    assert!(d["equal"].as_u64().unwrap() >= 5, "{d}");
    // The test server echoes the question: the answer is the same, its prompt is not.
    assert_eq!(d["first"]["difference"]["path"], "/params/system", "{d}");
    let o = CAMELEON.run(&["diff", &db, &id, "no-such-run"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let o = CAMELEON.run(&["diff", &p.path("rag.cm"), &id, &id]);
    assert_eq!(code(&o), 2, "not a journal: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_reused_index_puts_its_items_back_so_only_the_question_is_embedded() {
    let server = Server::start();
    let p = Project::new(&server);
    p.run(&[]);
    p.edit(QUESTION, "What colours can a chameleon show?");
    let before = server.count();
    let db = p.path("runs.db");
    let (v, _) = p.run(&["--reuse", &db]);
    let (embeds, chats, texts) = calls(&server, before);
    assert_eq!(
        texts,
        vec!["What colours can a chameleon show?".to_owned()],
        "no passage embedded again: only the new question"
    );
    assert_eq!((embeds, chats), (1, 1));
    // `retrieve` ran live against the memory the reused `index` filled: the answer's prompt
    // (the server echoes it) holds three retrieved passages.
    let answer = v["sinks"]["out"][0].as_str().unwrap();
    assert!(answer.contains("\n[3] "), "{answer}");
}

#[test]
fn test_against_a_recorded_run_passes_offline_and_fails_with_a_diff_when_params_change() {
    let server = Server::start();
    let p = Project::new(&server);
    let (_, id) = p.run(&[]);
    let (rag, db) = (p.path("rag.cm"), p.path("runs.db"));
    drop(server); // offline from here: any model call would fail

    let o = p.cameleon(&["test", &rag, "--against", &db, &id]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with("ok: every sink as in run"),
        "{}",
        stdout(&o)
    );

    p.edit(SYSTEM, "Answer in one short sentence.");
    let o = p.cameleon(&["test", &rag, "--against", &db, &id]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("`answer` would call model `default`: no recorded answer for these inputs"),
        "{out}"
    );
    assert!(out.contains("first difference: `answer`"), "{out}");
    let o = p.cameleon(&["test", &rag, "--against", &db, &id, "--json"]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["equal"], false);
    assert_eq!(v["end"], "ERROR");
    assert_eq!(v["diff"]["first"]["op"], "answer", "{v}");

    // Invalid: an unknown run, a journal on a server that cannot be reached.
    let o = p.cameleon(&["test", &rag, "--against", &db, "no-such-run"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let o = p.cameleon(&["test", &rag, "--against", "nats://127.0.0.1:9", &id]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("nats://127.0.0.1:9"), "{}", stderr(&o));
}
