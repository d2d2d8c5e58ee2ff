//! `cameleon run --stream` through the real binary: a model's answer printed on stderr as it
//! streams in, prefixed by the instance, offline (the `extractive` model, word by word) and
//! against a local OpenAI-compatible server (`stream: true`); stdout and `--json` unchanged.

use std::path::Path;

use serde_json::Value;
use test_support::openai::{Reply, Server};
use test_support::{Bin, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn rag() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/rag.cm")
        .display()
        .to_string()
}

/// The lines of `text` that the instance `op` wrote, without their prefix.
fn streamed(text: &str, op: &str) -> Vec<String> {
    let prefix = format!("[{op}] ");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[test]
fn run_stream_prints_the_offline_answer_on_stderr_and_leaves_stdout_as_it_was() {
    let plain = CAMELEON.run(&["run", &rag(), "--json"]);
    let live = CAMELEON.run(&["run", &rag(), "--json", "--stream"]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    assert_eq!(code(&live), 0, "{}", stderr(&live));
    let (a, b): (Value, Value) = (
        serde_json::from_str(&stdout(&plain)).unwrap(),
        serde_json::from_str(&stdout(&live)).unwrap(),
    );
    let answer = b["sinks"]["out"][0].as_str().unwrap().to_owned();
    // --json is unchanged by --stream (but for wall-clock annotations).
    assert_eq!(a["sinks"], b["sinks"]);
    assert_eq!(a["end"], b["end"]);
    assert!(streamed(&stderr(&plain), "answer").is_empty());
    // On stderr, the answer as it was written: its lines, prefixed by the instance.
    let lines = streamed(&stderr(&live), "answer");
    assert_eq!(lines.join("\n"), answer, "{}", stderr(&live));
}

#[test]
fn run_stream_asks_the_server_to_stream_and_prints_what_it_sends() {
    let server = Server::start();
    server.always(Reply::chat("Chameleons change colour to signal mood."));
    let dir = TempDir::new("cli-stream");
    let caps = dir.join("cameleon.yaml");
    std::fs::write(
        &caps,
        format!(
            "chat:\n  default: {{kind: openai, base_url: \"{}\", model: m}}\n",
            server.base_url()
        ),
    )
    .unwrap();
    let caps = caps.display().to_string();
    let o = CAMELEON.run(&["run", &rag(), "--capabilities", &caps, "--stream"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        streamed(&stderr(&o), "answer"),
        ["Chameleons change colour to signal mood."],
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("Chameleons change colour to signal mood."));
    assert!(!stdout(&o).contains("[answer]"), "stdout stays the result");
    let chat: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0].body["stream"], true);

    // Without --stream: a plain request.
    let o = CAMELEON.run(&["run", &rag(), "--capabilities", &caps]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(last.body.get("stream"), None);
}
