//! The example's binary is the `cameleon` command line with `acme_shout` linked in: it runs the
//! `.cm` file that uses the operator, and lists the operator in its catalogue.

use std::path::Path;

use serde_json::{Value, json};
use test_support::{Bin, TempDir};

const CUSTOM_CLI: Bin = Bin::new(env!("CARGO_BIN_EXE_custom-cli"));

fn shout_cm() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shout.cm")
        .display()
        .to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_fires_the_crates_own_operator() {
    let o = CUSTOM_CLI.run(&["run", &shout_cm(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&o.stdout)));
    assert_eq!(v["end"], "COMPLETED");
    assert_eq!(v["firings"], 3);
    assert_eq!(v["sinks"]["out"], json!(["HELLO, CAMÉLÉON!!!"]));
}

#[test]
fn run_prints_the_summary_as_the_cameleon_binary_does() {
    let o = CUSTOM_CLI.run(&["run", &shout_cm()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "shout: COMPLETED after 3 steps (3 firings)\n\nout received 1 value:\n  \"HELLO, CAMÉLÉON!!!\"\n"
    );
}

#[test]
fn the_catalogue_lists_the_operator_beside_the_standard_ones() {
    let o = CUSTOM_CLI.run(&["catalogue", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("catalogue JSON");
    let ops = v["operators"].as_array().expect("an operator list");
    let shout = ops
        .iter()
        .find(|e| e["id"] == "acme_shout")
        .expect("acme_shout is in the catalogue");
    assert_eq!(shout["params"][0]["name"], "marks");
    assert_eq!(shout["params"][0]["default"], 1);
    assert!(
        ops.iter().any(|e| e["id"] == "source"),
        "and the standard operators"
    );
}

#[test]
fn check_and_fmt_treat_it_like_any_operator() {
    let o = CUSTOM_CLI.run(&["check", &shout_cm()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = CUSTOM_CLI.run(&["fmt", &shout_cm(), "--check"]);
    assert_eq!(o.status.code(), Some(0), "canonical: {}", text(&o.stderr));
    let dir = TempDir::new("custom-cli-bad");
    let bad = dir.join("bad.cm");
    let source = std::fs::read_to_string(shout_cm()).expect("shout.cm is readable");
    std::fs::write(&bad, source.replace("marks: 3", "marks: loud")).expect("bad.cm is written");
    let o = CUSTOM_CLI.run(&["check", &bad.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "an ill-typed param is invalid");
    assert!(text(&o.stderr).contains("marks"), "{}", text(&o.stderr));
}

#[test]
fn the_crates_own_tool_is_listed_and_called_through_the_gate() {
    let o = CUSTOM_CLI.run(&["tools", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("tools JSON");
    let tool = v
        .as_array()
        .expect("a list")
        .iter()
        .find(|t| t["name"] == "acme_word_count")
        .expect("acme_word_count is listed");
    assert_eq!(tool["input_schema"]["required"], json!(["text"]));
    let o = CUSTOM_CLI.run(&["call", "acme_word_count", r#"{"text": "one two  three"}"#]);
    assert_eq!(
        (o.status.code(), text(&o.stdout)),
        (Some(0), "3\n".to_owned())
    );
}
