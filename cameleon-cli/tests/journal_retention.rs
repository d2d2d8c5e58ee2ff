//! Retention (docs/journal.md "Retention"): `cameleon runs DB --delete RUN_ID [--force]` on
//! both stores — a SQLite journal file and a journal on NATS JetStream (a real `nats-server
//! -js` started per test on a free loopback port with its own store folder). The deleted run
//! is gone from `runs` and `history`, the others are intact; an unknown id exits 2; a run
//! another process goes on with is refused; a RUNNING one needs `--force`.

use std::path::Path;

use cameleon::journal::{Journal, RunOptions};
use cameleon_nats::{JetStreamJournal, NatsOptions, NatsServer};
use serde_json::{Value, json as j};
use test_support::{Bin, TempDir, code, json, s, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// `run counter.cm --journal DB`: the new run's id.
fn finished_run(db: &str) -> String {
    let net = test_support::example("counter.cm");
    let o = CAMELEON.run(&["run", &net, "--journal", db, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    json(&o)["run_id"].as_str().unwrap().to_owned()
}

fn ids(db: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["runs", db, "--json"];
    args.extend_from_slice(extra);
    let o = CAMELEON.run(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    json(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

fn history(db: &str, id: &str) -> (i32, Value) {
    let o = CAMELEON.run(&["history", db, id, "--json"]);
    let v = if code(&o) == 0 { json(&o) } else { Value::Null };
    (code(&o), v)
}

/// `runs DB --delete ID` with `extra`: the exit code and stderr.
fn delete(db: &str, id: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["runs", db, "--delete", id];
    args.extend_from_slice(extra);
    let o = CAMELEON.run(&args);
    (code(&o), stdout(&o), stderr(&o))
}

/// A counter run started through the library and left after one step, as a crash leaves it:
/// RUNNING, held by no one.
fn crashed(cvm_journal: impl FnOnce(&mut cameleon::Cvm) -> String) -> String {
    let net = cameleon::Net::from_cm(
        &std::fs::read_to_string(test_support::example("counter.cm")).unwrap(),
    )
    .unwrap();
    let mut cvm = cameleon::Cvm::new(net);
    let id = cvm_journal(&mut cvm);
    cvm.step().unwrap();
    id
}

#[test]
fn a_deleted_run_is_gone_from_a_journal_file_and_the_others_are_intact() {
    let d = TempDir::new("retention-sqlite");
    let db = s(&d.join("runs.db"));
    let (a, b) = (finished_run(&db), finished_run(&db));
    let kept = history(&db, &b);
    assert_eq!(kept.0, 0);
    let o = CAMELEON.run(&["runs", &db, "--delete", &a, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o), j!({ "deleted": a }));
    assert_eq!(ids(&db, &[]), vec![b.clone()]);
    assert_eq!(history(&db, &a).0, 2);
    assert_eq!(history(&db, &b), kept);
    // No row of it is left behind, and no lock file.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM entries WHERE run NOT IN (SELECT seq FROM runs))
                  + (SELECT count(*) FROM progress_row WHERE run NOT IN (SELECT seq FROM runs))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0, "rows of the deleted run are left");
    assert!(!Path::new(&format!("{db}-lock-{a}")).exists());
    // Deleted twice: unknown.
    let (c, _, err) = delete(&db, &a, &[]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains(&format!("no run `{a}`")), "{err}");
    // A new run after it is journaled as usual.
    let c = finished_run(&db);
    assert_eq!(ids(&db, &[]).len(), 2);
    assert_eq!(history(&db, &c).0, 0);
}

#[test]
fn an_unknown_run_or_a_force_without_delete_exits_2_on_a_journal_file() {
    let d = TempDir::new("retention-sqlite-unknown");
    let db = s(&d.join("runs.db"));
    let a = finished_run(&db);
    let (c, out, err) = delete(&db, "0190f5e0-0000-7000-8000-000000000000", &["--json"]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("no run"), "{err}");
    assert!(serde_json::from_str::<Value>(&out).unwrap()["error"].is_string());
    let o = CAMELEON.run(&["runs", &db, "--force"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(ids(&db, &[]), vec![a]);
}

#[test]
fn a_running_run_needs_force_and_a_held_one_is_refused_on_a_journal_file() {
    let d = TempDir::new("retention-sqlite-held");
    let db = d.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let id = crashed(|cvm| journal.start(cvm, &RunOptions::default()).unwrap());
    let db = s(&db);
    let (c, _, err) = delete(&db, &id, &[]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("is RUNNING") && err.contains("--force"),
        "{err}"
    );
    // Held by this process (as `resume` holds it): refused, even with --force.
    let lock = journal.lock(&id).unwrap();
    let (c, _, err) = delete(&db, &id, &["--force"]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains(&format!("being resumed by process {}", std::process::id())),
        "{err}"
    );
    assert_eq!(ids(&db, &[]), vec![id.clone()]);
    drop(lock);
    let (c, out, err) = delete(&db, &id, &["--force"]);
    assert_eq!(c, 0, "{err}");
    assert!(out.contains(&format!("deleted run {id}")), "{out}");
    assert!(ids(&db, &[]).is_empty());
}

/// `resume URL ID` on a deleted run: it takes the run's lease before reading, so "no run" (not
/// "being resumed by") says the lease key went with the run.
fn assert_no_lease_left(url: &str, id: &str) {
    let o = CAMELEON.run(&["resume", url, id]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("no run `{id}`")),
        "{}",
        stderr(&o)
    );
}

/// A JetStream server storing into `dir`.
fn jetstream(dir: &Path) -> NatsServer {
    NatsServer::start_with(&["-js", "-sd", &s(dir)]).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_deleted_run_is_gone_from_jetstream_and_the_others_are_intact() {
    let d = TempDir::new("retention-js");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let (a, b) = (finished_run(&url), finished_run(&url));
    let kept = history(&url, &b);
    assert_eq!(kept.0, 0);
    let o = CAMELEON.run(&["runs", &url, "--delete", &a, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o), j!({ "deleted": a }));
    assert_eq!(ids(&url, &[]), vec![b.clone()]);
    assert_eq!(history(&url, &a).0, 2);
    assert_eq!(history(&url, &b), kept);
    assert_no_lease_left(&url, &a);
    let ttl = cameleon_nats::journal::DEFAULT_LEASE_TTL;
    let js = JetStreamJournal::connect(&NatsOptions::new(url.clone()), ttl).unwrap();
    let (c, _, err) = delete(&url, &a, &[]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains(&format!("no run `{a}`")), "{err}");
    // An id that is not one subject token would purge other runs: it names no run.
    for bad in [">", "*", "a.b", ""] {
        let (c, _, err) = delete(&url, bad, &["--force"]);
        assert_eq!(c, 2, "{bad:?}: {err}");
        assert!(err.contains("no run"), "{bad:?}: {err}");
    }
    assert_eq!(ids(&url, &[]), vec![b.clone()]);
    assert_eq!(
        js.history(&b).unwrap().entries.len(),
        kept.1["entries"].as_array().unwrap().len()
    );
}

#[test]
fn a_leased_run_is_refused_on_jetstream_unless_forced_and_its_holder_then_stops() {
    let d = TempDir::new("retention-js-held");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let ttl = cameleon_nats::journal::DEFAULT_LEASE_TTL;
    let js = JetStreamJournal::connect(&NatsOptions::new(url.clone()), ttl).unwrap();
    let net = cameleon::Net::from_cm(
        &std::fs::read_to_string(test_support::example("counter.cm")).unwrap(),
    )
    .unwrap();
    let mut cvm = cameleon::Cvm::new(net);
    let (id, lease) = js.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.step().unwrap();
    let (c, _, err) = delete(&url, &id, &[]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains(&format!("being resumed by process {}", std::process::id())),
        "{err}"
    );
    assert_eq!(ids(&url, &[]), vec![id.clone()]);
    assert_eq!(js.history(&id).unwrap().entries.len(), 1);
    // Forced: gone, and the holder's next step is refused by the server.
    let (c, _, err) = delete(&url, &id, &["--force"]);
    assert_eq!(c, 0, "{err}");
    assert!(ids(&url, &[]).is_empty());
    assert_no_lease_left(&url, &id);
    let e = cvm
        .step()
        .expect_err("the holder of a deleted run cannot append");
    assert!(e.to_string().contains("journal"), "{e}");
    drop(lease);
}

#[test]
fn a_running_run_with_no_holder_needs_force_on_jetstream() {
    let d = TempDir::new("retention-js-running");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let ttl = cameleon_nats::journal::DEFAULT_LEASE_TTL;
    let js = JetStreamJournal::connect(&NatsOptions::new(url.clone()), ttl).unwrap();
    let id = crashed(|cvm| js.start(cvm, &RunOptions::default()).unwrap().0);
    let (c, _, err) = delete(&url, &id, &[]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("is RUNNING") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(ids(&url, &[]), vec![id.clone()]);
    let (c, out, err) = delete(&url, &id, &["--force"]);
    assert_eq!(c, 0, "{err}");
    assert!(out.contains(&format!("deleted run {id}")), "{out}");
    assert!(ids(&url, &[]).is_empty());
    assert_eq!(history(&url, &id).0, 2);
}
