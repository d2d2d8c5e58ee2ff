//! Reuse across runs from a journal on NATS JetStream (docs/cli.md, docs/journal.md "Reuse from
//! JetStream"): `run --reuse nats://…[:RUN]`, `diff nats://… A B` and `test --against nats://…`
//! on a real `nats-server -js` (a free loopback port, its own store folder) give what they give
//! on a journal file — the same outputs and exit codes, the same model calls saved (counted on
//! a local OpenAI-compatible server) — with the connection options (`--subject-prefix`) applied.

use std::path::{Path, PathBuf};
use std::process::Output;

use cameleon_nats::NatsServer;
use serde_json::Value;
use test_support::openai::Server;
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

const SYSTEM: &str = "Answer from the context only, in one or two sentences.";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A folder with the RAG example and a capabilities file pointing its models at `server`.
struct Project {
    dir: TempDir,
    rag: String,
}

impl Project {
    fn new(server: &Server, name: &str) -> Project {
        let dir = TempDir::new(name);
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

    fn edit(&self, from: &str, to: &str) {
        std::fs::write(self.dir.join("rag.cm"), self.rag.replace(from, to)).unwrap();
    }

    fn restore(&self) {
        std::fs::write(self.dir.join("rag.cm"), &self.rag).unwrap();
    }
}

/// The server's model requests since `from`: (embedding requests, chat requests).
fn calls(server: &Server, from: usize) -> (usize, usize) {
    let reqs = server.requests();
    let new = &reqs[from..];
    let n = |p: &str| new.iter().filter(|r| r.path == p).count();
    (n("/v1/embeddings"), n("/v1/chat/completions"))
}

/// What one command gave: its exit code, its stdout with run ids replaced, the model calls it
/// made.
type Outcome = (i32, String, (usize, usize));

/// The same sequence of commands on the journal `store` (a file, or a URL whose commands take
/// `conn` too): record a run, re-run with `--reuse`, change the prompt and re-run reusing only
/// the first run, `diff` them, then `test` the unchanged and the changed net against the
/// first. Returns each command's outcome and the recorded run's id.
fn scenario(p: &Project, server: &Server, store: &str, conn: &[&str]) -> (Vec<Outcome>, String) {
    let (rag, caps) = (p.path("rag.cm"), p.path("caps.yaml"));
    let mut ids: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut cmd = |args: &[&str], with_caps: bool, ids: &mut Vec<String>| -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(conn);
        if with_caps {
            all.extend(["--capabilities", caps.as_str()]);
        }
        let before = server.count();
        let o = CAMELEON.run(&all);
        if let Some(id) = stderr(&o)
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("run "))
        {
            ids.push(id.to_owned());
        }
        let mut text = stdout(&o);
        for (i, id) in ids.iter().enumerate() {
            text = text.replace(id.as_str(), &format!("<run {i}>"));
        }
        out.push((code(&o), text, calls(server, before)));
        o
    };
    p.restore();
    let o = cmd(&["run", &rag, "--journal", store, "--json"], true, &mut ids);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let first = ids[0].clone();
    let o = cmd(
        &["run", &rag, "--journal", store, "--json", "--reuse", store],
        true,
        &mut ids,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    p.edit(SYSTEM, "Answer in one short sentence.");
    let one = format!("{store}:{first}");
    let o = cmd(
        &["run", &rag, "--journal", store, "--json", "--reuse", &one],
        true,
        &mut ids,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let changed = ids[2].clone();
    cmd(&["diff", store, &first, &first], false, &mut ids);
    cmd(&["diff", store, &first, &changed], false, &mut ids);
    cmd(
        &["diff", store, &first, &changed, "--json"],
        false,
        &mut ids,
    );
    cmd(&["diff", store, &first, "no-such-run"], false, &mut ids);
    cmd(&["test", &rag, "--against", store, &first], true, &mut ids);
    p.restore();
    cmd(&["test", &rag, "--against", store, &first], true, &mut ids);
    cmd(
        &["test", &rag, "--against", store, &first, "--json"],
        true,
        &mut ids,
    );
    cmd(
        &["test", &rag, "--against", store, "no-such-run"],
        true,
        &mut ids,
    );
    (out, first)
}

#[test]
fn reuse_diff_and_test_on_jetstream_give_what_they_give_on_a_journal_file() {
    let server = Server::start();
    let dir = TempDir::new("reuse-nats-store");
    let nats = NatsServer::start_with(&["-js", "-sd", &dir.join("store").display().to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();

    let p = Project::new(&server, "reuse-nats-file");
    let db = p.path("runs.db");
    let (file, _) = scenario(&p, &server, &db, &[]);
    let q = Project::new(&server, "reuse-nats-bus");
    let (bus, first) = scenario(&q, &server, &url, &["--subject-prefix", "team.a"]);
    let folder = |o: &Outcome, from: &Project| {
        (
            o.0,
            o.1.replace(&from.dir.display().to_string(), "<dir>"),
            o.2,
        )
    };
    for (i, (f, b)) in file.iter().zip(&bus).enumerate() {
        assert_eq!(folder(b, &q), folder(f, &p), "command #{i}");
    }
    assert_eq!(bus.len(), 11);

    // What the outcomes are (the same on both stores, checked above).
    let codes: Vec<i32> = bus.iter().map(|o| o.0).collect();
    assert_eq!(codes, [0, 0, 0, 0, 1, 1, 2, 1, 0, 0, 2]);
    assert!(
        bus[0].2.0 >= 2 && bus[0].2.1 == 1,
        "recorded: {:?}",
        bus[0].2
    );
    assert_eq!(bus[1].2, (0, 0), "every model call reused");
    let reused: Value = serde_json::from_str(&bus[1].1).unwrap();
    assert!(reused["reused"].as_u64().unwrap() >= 3, "{reused}");
    assert_eq!(bus[2].2, (0, 1), "only `answer` calls its model");
    assert!(bus[3].1.starts_with("same: "), "{}", bus[3].1);
    let d: Value = serde_json::from_str(&bus[5].1).unwrap();
    assert_eq!(d["first"]["op"], "answer", "{d}");
    assert_eq!(d["first"]["difference"]["path"], "/params/system", "{d}");
    assert!(
        bus[7].1.contains("first difference: `answer`"),
        "{}",
        bus[7].1
    );
    assert_eq!(bus[7].2, (0, 0), "a test calls no model");
    assert!(
        bus[8].1.starts_with("ok: every sink as in run <run 0>"),
        "{}",
        bus[8].1
    );
    let t: Value = serde_json::from_str(&bus[9].1).unwrap();
    assert_eq!(t["equal"], true, "{t}");

    // The prefix is the journal's: under the default prefix there is no such run.
    let o = CAMELEON.run(&["diff", &url, &first, &first]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A server that cannot be reached: exit 2, naming it.
    let o = CAMELEON.run(&["run", &q.path("rag.cm"), "--reuse", "nats://127.0.0.1:9"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("nats://127.0.0.1:9"), "{}", stderr(&o));
}
