//! Reuse's lookup (docs/semantics.md §5.9): the journal's key index is read into memory when
//! a reuse journal opens — a recorded key is found, another is not, a record never answers for
//! other inputs, `DB:RUN` reuses that run alone — and the keys a journal records are those the
//! reusing engine computes. A tool with `write` effects is reused only when it says it is
//! idempotent.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cameleon::capabilities::{Grants, Runtime};
use cameleon::engine::{Reuse, ReuseSource};
use cameleon::journal::{Journal, ReuseJournal, RunOptions};
use cameleon::net::ToolPolicy;
use cameleon::ops::{CallTool, Const, Sink};
use cameleon::prelude::*;
use cameleon::tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Per tag: how many times an operator or a tool ran.
static CALLS: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

fn bump(tag: &str) {
    *CALLS.lock().unwrap().entry(tag.to_owned()).or_default() += 1;
}

fn calls(tag: &str) -> usize {
    CALLS.lock().unwrap().get(tag).copied().unwrap_or(0)
}

/// Adds `add` to its number (with a state: how many it saw), counting its calls under `tag`.
#[operator(id = "ri_add", family = behavioral)]
pub struct Add {
    #[param(default = "")]
    tag: String,
    #[param(default = 1)]
    add: i64,
    #[state]
    seen: i64,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for Add {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        bump(&self.tag);
        self.seen += 1;
        let n = cx.get(Self::in_data)?.0.as_i64().unwrap_or_default();
        cx.emit(Self::out_data, DataJSON((n + self.add).into()));
        Ok(())
    }
}

/// const(value) -> a (+1) -> out.
fn net(tag: &str, value: serde_json::Value) -> Net {
    Net::from_cm(&format!(
        "operators:
  - {{id: src, type: const, params: {{value: {value}}}}}
  - {{id: a, type: ri_add, params: {{tag: {tag}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: src.out_data, to: a.in_data}}
  - {{from: a.out_data, to: out.in_data}}
"
    ))
    .unwrap()
}

fn record(journal: &Journal, net: Net) -> (String, Cvm) {
    let mut cvm = Cvm::new(net);
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    (id, cvm)
}

fn reusing(db: &std::path::Path, run: Option<&str>, net: Net) -> Cvm {
    let mut cvm = Cvm::new(net);
    let source = Arc::new(ReuseJournal::open(db, run).unwrap());
    cvm.set_reuse(Some(Arc::new(Reuse::new(source, false))));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    cvm
}

fn out(cvm: &Cvm) -> Vec<serde_json::Value> {
    cvm.received("out").iter().map(|v| v.to_json()).collect()
}

/// The keys a journal recorded, from its entries' `keys` (each record: key, firing, count of
/// ports, ports; here every firing emits one token).
fn recorded_keys(db: &std::path::Path) -> Vec<u128> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare("SELECT keys FROM entries WHERE keys IS NOT NULL ORDER BY id")
        .unwrap();
    let blobs: Vec<Vec<u8>> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut keys = Vec::new();
    for b in blobs {
        let mut b = &b[..];
        while !b.is_empty() {
            keys.push(u128::from_be_bytes(b[..16].try_into().unwrap()));
            let n = u32::from_le_bytes(b[20..24].try_into().unwrap()) as usize;
            b = &b[24 + 2 * n..];
        }
    }
    keys
}

#[test]
fn a_recorded_key_is_found_and_another_is_not() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    record(&journal, net("find", json!(1)));
    let keys = recorded_keys(&db);
    assert_eq!(keys.len(), 3, "const, a and the sink are keyed");
    let source = ReuseJournal::open(&db, None).unwrap();
    assert_eq!(source.keys(), 3);
    for k in &keys {
        let hit = source.probe(*k).unwrap().expect("a recorded key is found");
        assert_eq!(hit.run, 1);
        let f = source.find(*k).unwrap().expect("and its entry reads back");
        assert_eq!(f.from.step, hit.node + 1, "one firing per step");
    }
    for k in [0u128, 1, keys[0] ^ 1, keys[0].rotate_left(64)] {
        assert!(source.probe(k).unwrap().is_none(), "{k:x}");
        assert!(source.find(k).unwrap().is_none(), "{k:x}");
    }
}

/// The keys the journal records (from its encoded bytes) are the keys the reusing engine
/// computes before a firing: every firing of the same net hits, with a state and a string.
#[test]
fn the_keys_a_journal_records_are_those_a_reusing_run_computes() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let value = json!({"b": "two", "a": [1, 2.5, null]});
    let (_, first) = record(&journal, net("same-keys", value.clone()));
    assert_eq!(calls("same-keys"), 1);
    let again = reusing(&db, None, net("same-keys", value));
    assert_eq!(again.reused_firings(), 3);
    assert_eq!(calls("same-keys"), 1, "not called again");
    assert_eq!(out(&again), out(&first));
}

/// Two runs with other inputs: each input finds its own record, never the other's.
#[test]
fn a_record_never_answers_for_other_inputs() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    record(&journal, net("inputs", json!(10)));
    record(&journal, net("inputs", json!(20)));
    assert_eq!(calls("inputs"), 2);
    for (v, expected) in [(10, 11), (20, 21)] {
        let cvm = reusing(&db, None, net("inputs", json!(v)));
        assert_eq!(out(&cvm), vec![json!(expected)]);
        assert_eq!(cvm.reused_firings(), 3);
    }
    // An input no run recorded: a miss, the operator runs.
    let cvm = reusing(&db, None, net("inputs", json!(30)));
    assert_eq!(out(&cvm), vec![json!(31)]);
    assert_eq!(calls("inputs"), 3);
    assert_eq!(cvm.reused_firings(), 0);
}

/// An index row that points to a firing that is not there (a damaged or forged journal) is a
/// miss: the operator runs, nothing of another firing is applied.
#[test]
fn an_index_row_pointing_nowhere_is_a_miss() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    record(&journal, net("forged", json!(5)));
    drop(journal);
    let c = rusqlite::Connection::open(&db).unwrap();
    // The first entry's key now points to a second firing of its step (there is none), the
    // second's has a port too many, the third's is cut short.
    let keys = |id: i64| -> Vec<u8> {
        c.query_row("SELECT keys FROM entries WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    let run = 1i64 << 32;
    let mut k = keys(run);
    k[16..20].copy_from_slice(&1u32.to_le_bytes());
    let mut k1 = keys(run + 1);
    k1[20..24].copy_from_slice(&2u32.to_le_bytes());
    k1.extend_from_slice(&[0, 0]);
    let mut k2 = keys(run + 2);
    k2.truncate(20);
    for (id, k) in [(run, k), (run + 1, k1), (run + 2, k2)] {
        c.execute("UPDATE entries SET keys = ?2 WHERE id = ?1", (id, k))
            .unwrap();
    }
    drop(c);
    let cvm = reusing(&db, None, net("forged", json!(5)));
    assert_eq!(cvm.reused_firings(), 0);
    assert_eq!(out(&cvm), vec![json!(6)]);
    assert_eq!(calls("forged"), 2);
}

/// `DB:RUN` reuses that run alone, even when another run of the file recorded the key.
#[test]
fn a_given_run_is_the_only_one_reused() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let (first, _) = record(&journal, net("one-run", json!(1)));
    let (second, _) = record(&journal, net("one-run", json!(2)));
    assert_eq!(calls("one-run"), 2);
    // From the first run only: input 2 (recorded by the second) misses.
    let cvm = reusing(&db, Some(&first), net("one-run", json!(2)));
    assert_eq!(cvm.reused_firings(), 0);
    assert_eq!(calls("one-run"), 3);
    // Input 1 hits, from the first.
    let cvm = reusing(&db, Some(&first), net("one-run", json!(1)));
    assert_eq!(cvm.reused_firings(), 3);
    assert_eq!(calls("one-run"), 3);
    // Input 1 recorded again by a third run: the given run's firings are the ones applied,
    // and without a run the newest's.
    let (newest, _) = record(&journal, net("one-run", json!(1)));
    let named = |cvm: &Cvm| -> Vec<String> {
        cvm.trace_lines()
            .iter()
            .filter_map(|l| {
                l.get("reused")
                    .map(|r| r["run"].as_str().unwrap().to_owned())
            })
            .collect()
    };
    let cvm = reusing(&db, Some(&first), net("one-run", json!(1)));
    assert_eq!(named(&cvm), vec![first.clone(); 3]);
    assert_ne!(newest, second);
    let cvm = reusing(&db, None, net("one-run", json!(1)));
    assert_eq!(named(&cvm), vec![newest; 3]);
}

// ---------------------------------------------------------------------------------------------
// Idempotent tools

#[derive(Deserialize, JsonSchema)]
struct Tag {
    /// The counter to bump.
    key: String,
}

/// Stores the key (an upsert: doing it twice is doing it once).
#[tool(name = "ri_upsert", effects = write, idempotent)]
fn upsert(args: Tag) -> Result<String, ToolError> {
    bump(&args.key);
    Ok(args.key)
}

/// Sends the key (twice is two messages).
#[tool(name = "ri_send", effects = write)]
fn send(args: Tag) -> Result<String, ToolError> {
    bump(&args.key);
    Ok(args.key)
}

fn tool_net(tool: &str, key: &str) -> Net {
    let mut b = Net::builder("tool-reuse");
    b.add("args", Const::new(json!({ "key": key })));
    b.add("call", CallTool::new(tool));
    b.add("out", Sink::new());
    b.connect("args.out_data", "call.in_args")
        .connect("call.out_result", "out.in_data");
    b.tools(ToolPolicy::allow([tool]));
    b.build().unwrap()
}

/// Runs `tool_net(tool, key)` with the tool granted, journaled into `journal` or reusing `db`.
fn tool_run(
    tool: &str,
    key: &str,
    journal: Option<&Journal>,
    reuse: Option<&std::path::Path>,
) -> Cvm {
    let rt = Runtime::builder()
        .source(Grants::new([tool], "the test"))
        .build()
        .unwrap();
    let mut cvm = rt.cvm(tool_net(tool, key), ".").build();
    if let Some(j) = journal {
        j.start(&mut cvm, &RunOptions::default()).unwrap();
    }
    if let Some(db) = reuse {
        let source = Arc::new(ReuseJournal::open(db, None).unwrap());
        cvm.set_reuse(Some(Arc::new(Reuse::new(source, false))));
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    cvm
}

#[test]
fn the_manifest_says_idempotent_only_when_the_tool_does() {
    let tools = cameleon::tools::ToolRegistry::global();
    let m = tools.get("ri_upsert").unwrap().manifest();
    assert!(m.idempotent);
    assert_eq!(
        serde_json::to_value(m.clone()).unwrap()["idempotent"],
        json!(true)
    );
    let m = tools.get("ri_send").unwrap().manifest();
    assert!(!m.idempotent);
    let wire = serde_json::to_value(m).unwrap();
    assert!(
        wire.get("idempotent").is_none(),
        "left out when false: {wire}"
    );
    // A manifest without the field (an older satellite's) reads as not idempotent.
    let back: cameleon::operator::capability::ToolManifest = serde_json::from_value(wire).unwrap();
    assert!(!back.idempotent);
}

#[test]
fn a_write_tool_is_reused_when_it_says_it_is_idempotent_and_called_again_otherwise() {
    let dir = test_support::TempDir::new("reuse-index");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    tool_run("ri_upsert", "idem", Some(&journal), None);
    tool_run("ri_send", "not-idem", Some(&journal), None);
    assert_eq!((calls("idem"), calls("not-idem")), (1, 1));

    let cvm = tool_run("ri_upsert", "idem", None, Some(&db));
    assert_eq!(calls("idem"), 1, "the idempotent tool is not called again");
    assert_eq!(cvm.reused_firings(), 3, "const, the tool call and the sink");
    assert_eq!(out(&cvm), vec![json!("idem")]);

    let cvm = tool_run("ri_send", "not-idem", None, Some(&db));
    assert_eq!(calls("not-idem"), 2, "the other one is called again");
    assert_eq!(cvm.reused_firings(), 2, "const and the sink only");
    assert_eq!(out(&cvm), vec![json!("not-idem")]);
}
