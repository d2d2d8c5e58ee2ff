//! Reuse across runs in the library (docs/semantics.md §5.9): a firing whose key a journal
//! recorded is applied without calling its operator; a changed param or input is a miss and
//! so is everything it feeds; the reused firing is an ordinary history entry (backward steps,
//! replay, the journal and resume keep it, with its provenance).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cameleon::engine::Reuse;
use cameleon::journal::{Journal, ReuseJournal, RunOptions};
use cameleon::prelude::*;

/// Per tag: how many times `run` was called.
static CALLS: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

fn calls(tag: &str) -> usize {
    CALLS.lock().unwrap().get(tag).copied().unwrap_or(0)
}

/// Multiplies its number by `factor`, counting its calls under `tag`.
#[operator(id = "rt_times", family = behavioral)]
pub struct Times {
    #[param(default = "")]
    tag: String,
    #[param(default = 2)]
    factor: i64,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl Run for Times {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        *CALLS.lock().unwrap().entry(self.tag.clone()).or_default() += 1;
        let n = cx.get(Self::in_data)?.0.as_i64().unwrap_or_default();
        cx.emit(Self::out_data, DataJSON((n * self.factor).into()));
        Ok(())
    }
}

/// source(value) -> a (x2) -> b (x factor_b) -> out.
fn net(tag: &str, value: i64, factor_b: i64) -> Net {
    Net::from_cm(&format!(
        "operators:
  - {{id: src, type: const, params: {{value: {value}}}}}
  - {{id: a, type: rt_times, params: {{tag: {tag}}}}}
  - {{id: b, type: rt_times, params: {{tag: {tag}, factor: {factor_b}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: src.out_data, to: a.in_data}}
  - {{from: a.out_data, to: b.in_data}}
  - {{from: b.out_data, to: out.in_data}}
"
    ))
    .unwrap()
}

fn reuse_from(db: &std::path::Path, run: Option<&str>) -> Arc<Reuse> {
    Arc::new(Reuse::new(
        Arc::new(ReuseJournal::open(db, run).unwrap()),
        false,
    ))
}

fn out(cvm: &Cvm) -> Vec<serde_json::Value> {
    cvm.received("out").iter().map(|v| v.to_json()).collect()
}

/// Journals a run of `net` into `db`; returns its id.
fn record(journal: &Journal, net: Net) -> (String, Cvm) {
    let mut cvm = Cvm::new(net);
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    (id, cvm)
}

#[test]
fn a_recorded_firing_is_applied_without_calling_its_operator() {
    let dir = test_support::TempDir::new("reuse-lib");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let (id, first) = record(&journal, net("same", 3, 10));
    assert_eq!(calls("same"), 2);

    let mut again = Cvm::new(net("same", 3, 10));
    again.set_reuse(Some(reuse_from(&db, None)));
    assert_eq!(again.run().unwrap(), EndState::Completed);
    assert_eq!(calls("same"), 2, "no operator called");
    assert_eq!(out(&again), out(&first));
    assert_eq!(out(&again), vec![serde_json::json!(60)]);
    // `const` and `sink` are behavioral too: every firing is reused.
    assert_eq!(again.reused_firings(), 4);
    // The trace is the live one, plus where each reused firing came from.
    let live = first.trace_lines();
    let reused = again.trace_lines();
    assert_eq!(live.len(), reused.len());
    for (l, r) in live.iter().zip(&reused) {
        let mut r = r.clone();
        assert_eq!(r["reused"]["run"], id.as_str(), "{r}");
        assert_eq!(r["reused"]["step"], l["step"], "{r}");
        r.as_object_mut().unwrap().remove("reused");
        assert_eq!(&r, l);
    }

    // An ordinary history entry: back and forward replay it, a re-fire calls the operator.
    again.back().unwrap();
    assert!(again.received("out").is_empty());
    again.back().unwrap();
    again.step().unwrap();
    assert_eq!(calls("same"), 2, "a replay calls nothing");
    let before = calls("same");
    again.back().unwrap();
    again.set_reuse(None);
    again.refire().unwrap();
    assert_eq!(
        calls("same"),
        before + 1,
        "without reuse, the operator runs"
    );
}

#[test]
fn a_changed_param_misses_and_so_does_what_it_feeds_and_the_rest_hits() {
    let dir = test_support::TempDir::new("reuse-lib");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    record(&journal, net("param", 3, 10));
    assert_eq!(calls("param"), 2);

    // `b`'s factor changed: `a` is reused, `b` runs.
    let mut cvm = Cvm::new(net("param", 3, 100));
    cvm.set_reuse(Some(reuse_from(&db, None)));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls("param"), 3);
    assert_eq!(out(&cvm), vec![serde_json::json!(600)]);
    assert_eq!(
        cvm.reused_firings(),
        2,
        "`const` and `a`; `b` and the sink ran"
    );

    // The source's value changed: `a`'s input differs, and so does `b`'s.
    let mut cvm = Cvm::new(net("param", 4, 10));
    cvm.set_reuse(Some(reuse_from(&db, None)));
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls("param"), 5);
    assert_eq!(cvm.reused_firings(), 0);
}

#[test]
fn a_reused_run_journals_and_resumes_with_its_provenance() {
    let dir = test_support::TempDir::new("reuse-lib");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let (first, _) = record(&journal, net("resume", 5, 10));
    // The second run reuses the first's firings and is journaled itself.
    let mut cvm = Cvm::new(net("resume", 5, 10));
    cvm.set_reuse(Some(reuse_from(&db, Some(&first))));
    let second = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let trace = cvm.trace_lines();
    drop(cvm);
    assert_eq!(calls("resume"), 2);
    let back = journal.open_run(&second).unwrap().cvm;
    assert_eq!(
        back.trace_lines(),
        trace,
        "the reused provenance is journaled"
    );
    assert_eq!(back.reused_firings(), 4);
    // Keys are recorded for the second run too: a third run may reuse it alone.
    let mut third = Cvm::new(net("resume", 5, 10));
    third.set_reuse(Some(reuse_from(&db, Some(&second))));
    assert_eq!(third.run().unwrap(), EndState::Completed);
    assert_eq!(third.reused_firings(), 4);
    assert!(
        third
            .trace_lines()
            .iter()
            .filter(|l| l.get("reused").is_some())
            .all(|l| l["reused"]["run"] == second.as_str())
    );
    // An unknown run is an error naming the file's runs.
    assert!(ReuseJournal::open(&db, Some("no-such-run")).is_err());
}
