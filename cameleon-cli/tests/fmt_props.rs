//! `cameleon fmt` on text written every way YAML allows (docs/cli.md): each shipped example,
//! rewritten with its keys shuffled, flow and block styles mixed, scalars quoted or not, default
//! params spelled out, comments and blank lines strewn about, formats back to the very bytes of
//! the example, and formatting is idempotent: `fmt(fmt(x)) == fmt(x)`.

use std::path::{Path, PathBuf};

use cameleon::catalogue::Catalogue;
use cameleon::cm::Loader;
use cameleon::net::Net;
use proptest::prelude::*;
use serde_json::{Map, Value as Json};
use test_support::{Bin, Rng};

/// `cameleon fmt -` as the shell runs it, in `dir` (the example's folder: a sub-net's file is
/// read relative to the working directory when the text comes from stdin): exit code, stdout,
/// stderr.
fn fmt_stdin(text: &str, dir: &Path) -> (i32, String, String) {
    let o = Bin::new(env!("CARGO_BIN_EXE_cameleon"))
        .cmd()
        .args(["fmt", "-"])
        .current_dir(dir)
        .stdin(text)
        .run();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).expect("UTF-8 out"),
        String::from_utf8(o.stderr).expect("UTF-8 err"),
    )
}

/// The folder of example `f`.
fn folder(f: &Path) -> &Path {
    f.parent().unwrap_or(Path::new("."))
}

/// Every `.cm` file under `examples/`, recursively, except in folders that are crates of their
/// own (their operators are in their own binary, whose tests format them), `satellites/`
/// (its nets use types only satellites host) and `agents/` (its supervisor names the net-tools
/// its `cameleon.yaml` offers, which a bare `Loader` does not know; `cli.rs` formats it with
/// the command line).
fn example_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("a readable folder") {
            let p = e.expect("a folder entry").path();
            if p.is_dir()
                && !p.join("Cargo.toml").exists()
                && !p.ends_with("satellites")
                && !p.ends_with("agents")
            {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "cm") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The leading comment block of a file (what `fmt` keeps).
fn header(text: &str) -> &str {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#')) {
            break;
        }
        end += line.len();
    }
    &text[..end]
}

/// A string as a YAML scalar: double-quoted (JSON), single-quoted, or plain when that reads
/// back as the same string.
fn scalar(r: &mut Rng, s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
        && ![
            "true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf",
        ]
        .contains(&s.to_ascii_lowercase().as_str());
    match r.below(3) {
        0 if plain => s.to_owned(),
        1 if !s.chars().any(char::is_control) => format!("'{}'", s.replace('\'', "''")),
        _ => serde_json::to_string(s).expect("a string serializes"),
    }
}

/// A value in flow style, with spacing and quoting varied.
fn flow(r: &mut Rng, v: &Json) -> String {
    let sep = if r.one_in(3) { "," } else { ", " };
    match v {
        Json::String(s) => scalar(r, s),
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| flow(r, i)).collect();
            format!("[{}]", items.join(sep))
        }
        Json::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(r, k), flow(r, v)))
                .collect();
            format!("{{{}}}", items.join(sep))
        }
        other => other.to_string(),
    }
}

/// A comment line now and then.
fn maybe_comment(r: &mut Rng, out: &mut String, indent: usize) {
    match r.below(8) {
        0 => out.push_str(&format!("{}# a note\n", " ".repeat(indent))),
        1 => out.push('\n'),
        _ => {}
    }
}

/// A mapping as block lines at `indent` (nested mappings of params in block style too, now and
/// then); keys in the given order.
fn block_map(
    r: &mut Rng,
    out: &mut String,
    m: &Map<String, Json>,
    keys: &[&String],
    indent: usize,
) {
    let pad = " ".repeat(indent);
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            maybe_comment(r, out, indent);
        }
        let v = &m[k.as_str()];
        match v {
            Json::Object(inner) if !inner.is_empty() && r.one_in(2) => {
                out.push_str(&format!("{pad}{}:\n", scalar(r, k)));
                let inner_keys: Vec<&String> = inner.keys().collect();
                block_map(r, out, inner, &inner_keys, indent + 2);
            }
            _ => {
                let trailing = if r.one_in(6) { "   # why" } else { "" };
                out.push_str(&format!(
                    "{pad}{}: {}{trailing}\n",
                    scalar(r, k),
                    flow(r, v)
                ));
            }
        }
    }
}

/// A list of mappings under a top-level key: each item in flow or block style.
fn list(
    r: &mut Rng,
    out: &mut String,
    items: &[Json],
    defaults: &dyn Fn(&Json) -> Map<String, Json>,
) {
    let indent = [0, 2, 4][r.below(3)];
    let pad = " ".repeat(indent);
    for item in items {
        maybe_comment(r, out, indent);
        let mut m = item.as_object().cloned().unwrap_or_default();
        // Spell out default params the canonical form leaves out.
        for (k, v) in defaults(item) {
            if r.one_in(2) {
                let params = m
                    .entry("params")
                    .or_insert_with(|| Json::Object(Map::new()));
                if let Json::Object(p) = params {
                    p.entry(k).or_insert(v);
                }
            }
        }
        let mut keys: Vec<&String> = m.keys().collect();
        r.shuffle(&mut keys);
        if r.one_in(2) {
            let items: Vec<String> = keys
                .iter()
                .map(|k| format!("{}: {}", scalar(r, k), flow(r, &m[k.as_str()])))
                .collect();
            out.push_str(&format!("{pad}- {{{}}}\n", items.join(", ")));
        } else {
            // `- first: …` then the other keys aligned under it.
            let mut item = String::new();
            block_map(r, &mut item, &m, &keys, indent + 2);
            out.push_str(&format!("{pad}- {}", &item[indent + 2..]));
        }
    }
}

/// The canonical file `text` (loaded as `net`) written another way, from `seed`.
fn rewrite(text: &str, net: &Net, seed: u64) -> String {
    let mut r = Rng::new(seed);
    let file = serde_json::to_value(net.to_cm_file()).expect("a .cm file serializes");
    let top = file.as_object().expect("a mapping");
    let mut out = header(text).to_owned();
    let mut keys: Vec<&String> = top.keys().collect();
    r.shuffle(&mut keys);
    let head = out.len();
    for k in keys {
        let v = &top[k.as_str()];
        if out.len() > head {
            // (Before the first key a comment would join the header, which `fmt` keeps.)
            maybe_comment(&mut r, &mut out, 0);
        }
        match (k.as_str(), v) {
            // Absent means version 1.
            ("cameleon", _) if r.one_in(2) => {}
            ("operators" | "connections", Json::Array(items)) if !items.is_empty() => {
                out.push_str(&format!("{k}:\n"));
                let defaults = |op: &Json| -> Map<String, Json> {
                    let ty = op["type"].as_str().unwrap_or_default();
                    Catalogue::global()
                        .get(ty)
                        .map(|e| {
                            e.params
                                .iter()
                                .filter_map(|p| {
                                    let d = serde_json::from_str(p.default?).ok()?;
                                    Some((p.name.to_owned(), d))
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let none = |_: &Json| Map::new();
                if k == "operators" {
                    list(&mut r, &mut out, items, &defaults);
                } else {
                    list(&mut r, &mut out, items, &none);
                }
            }
            (_, Json::Object(m)) if r.one_in(2) => {
                out.push_str(&format!("{k}:\n"));
                let keys: Vec<&String> = m.keys().collect();
                block_map(&mut r, &mut out, m, &keys, 2);
            }
            _ => out.push_str(&format!("{k}: {}\n", flow(&mut r, v))),
        }
    }
    if r.one_in(3) {
        out.push_str("# the end\n");
    }
    out
}

#[test]
fn every_example_is_in_canonical_form() {
    let files = example_files();
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("wcp/bad/")),
        "the walk reaches examples/wcp/bad/: {files:?}"
    );
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a readable example");
        let (code, out, err) = fmt_stdin(&text, folder(f));
        assert_eq!(code, 0, "{}: {err}", f.display());
        assert_eq!(out, text, "{}: `fmt` changes it", f.display());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any way of writing an example formats back to the example, and `fmt` is idempotent.
    #[test]
    fn fmt_of_any_writing_of_an_example_is_the_example(pick in any::<prop::sample::Index>(), seed in any::<u64>()) {
        let files = example_files();
        let f = pick.get(&files);
        let text = std::fs::read_to_string(f).expect("a readable example");
        let net = Loader::new()
            .base_dir(folder(f))
            .load_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", f.display())))?;
        let x = rewrite(&text, &net, seed);
        let (code, once, err) = fmt_stdin(&x, folder(f));
        prop_assert_eq!(code, 0, "{}: {}\n{}", f.display(), err, x);
        let (code, twice, err) = fmt_stdin(&once, folder(f));
        prop_assert_eq!(code, 0, "{}", err);
        prop_assert_eq!(&twice, &once, "fmt is not idempotent on\n{}", x);
        prop_assert_eq!(&once, &text, "{}: written as\n{}", f.display(), x);
    }
}
