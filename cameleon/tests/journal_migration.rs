//! Journals written by an older version of the code are migrated in place when opened, inside
//! one transaction, and their runs go on as if nothing happened (docs/semantics.md §5.5).
//!
//! `fixtures/journal/v1.db` was written by the code of journal schema 1 (before the history
//! record had a type of its own), `fixtures/journal/v2.db` by the code of schema 2 (before a
//! run's progress had a table of its own and firings a key index), `fixtures/journal/v3.db` by
//! the code of schema 3 (firing keys over canonical JSON), each by [`write_fixture`]
//! below, from the `.cm` files next to it:
//!
//! - `loop`: `loop.cm`, sequential, 9 steps, 2 backward steps, a re-fire (a second branch) and
//!   2 more steps, unfinished (`RUNNING`);
//! - `nested`: `nested.cm` (a `subnet` and a `map` of `inner.cm`), sequential, stopped after
//!   both inner nets fired (`RUNNING`);
//! - `nested-parallel`: `nested.cm` in parallel mode (steps of several firings), `COMPLETED`.

use std::path::{Path, PathBuf};

use cameleon::journal::{Journal, JournalError, ResumeOptions, Resumed, RunOptions};
use cameleon::prelude::*;

/// The fixture folder.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/journal")
}

fn load(dir: &Path, file: &str) -> Net {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    cameleon::cm::Loader::new()
        .base_dir(dir)
        .load_str(&text)
        .unwrap()
}

/// Writes the fixture journal with the code as it is, at `CAMELEON_WRITE_JOURNAL_FIXTURE` (a
/// path): run by hand before a change of the journal's schema, to keep a journal of the schema
/// it replaces (`cargo test -p cameleon --test journal_migration -- --ignored write_fixture`).
#[test]
#[ignore = "writes a fixture: run by hand before a change of the journal schema"]
fn write_fixture() {
    let Ok(out) = std::env::var("CAMELEON_WRITE_JOURNAL_FIXTURE") else {
        panic!("set CAMELEON_WRITE_JOURNAL_FIXTURE to the path of the journal to write");
    };
    let dir = fixtures();
    let journal = Journal::create(&out).unwrap();
    let opts = |name: &str| RunOptions {
        name: Some(name.into()),
        base_dir: Some(dir.clone()),
        ..RunOptions::default()
    };

    let mut cvm = Cvm::new(load(&dir, "loop.cm"));
    journal.start(&mut cvm, &opts("loop")).unwrap();
    for _ in 0..9 {
        cvm.step().unwrap();
    }
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    cvm.step().unwrap();
    cvm.step().unwrap();
    assert_eq!(cvm.branches().len(), 2);
    drop(cvm);

    let mut cvm = Cvm::new(load(&dir, "nested.cm"));
    journal.start(&mut cvm, &opts("nested")).unwrap();
    let fired = |cvm: &Cvm, op: &str| {
        cvm.history()
            .entries()
            .iter()
            .any(|e| e.firings.iter().any(|f| cvm.net().op(f.op).name == op))
    };
    while !(fired(&cvm, "sub") && fired(&cvm, "m")) {
        cvm.step().unwrap();
    }
    drop(cvm);

    let mut cvm = Cvm::builder(load(&dir, "nested.cm"))
        .mode(Mode::Parallel)
        .build();
    journal.start(&mut cvm, &opts("nested-parallel")).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    drop(cvm);
    drop(journal);
}

/// A copy of the fixture folder (the journal of schema 1 and its `.cm` files), to migrate.
fn copy() -> (test_support::TempDir, PathBuf) {
    copy_of("v1.db")
}

/// A copy of the fixture folder with journal `db`.
fn copy_of(db: &str) -> (test_support::TempDir, PathBuf) {
    let dir = test_support::TempDir::new("journal-migration");
    for f in [db, "loop.cm", "nested.cm", "inner.cm"] {
        std::fs::copy(fixtures().join(f), dir.join(f)).unwrap();
    }
    let db = dir.join(db);
    (dir, db)
}

fn schema(db: &Path) -> (String, i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    let meta: String = c
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let user: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    (meta, user)
}

fn id_of(journal: &Journal, name: &str) -> String {
    journal
        .runs()
        .unwrap()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no run `{name}`"))
        .id
}

/// Run `name`, resumed in `dir` (the fixture's copy: the folder the journal recorded was the
/// one it was written in).
fn resume(journal: &Journal, dir: &Path, name: &str) -> Resumed {
    let opts = ResumeOptions {
        base_dir: Some(dir.to_path_buf()),
        allow_outside: false,
    };
    journal
        .resume_with_options(Some(&id_of(journal, name)), &opts, |_, _| {
            <dyn cameleon::operator::capability::Capabilities>::none()
        })
        .unwrap()
}

fn received(cvm: &Cvm, sink: &str) -> Vec<serde_json::Value> {
    cvm.received(sink).iter().map(|v| v.to_json()).collect()
}

/// Each inner run of `op`, as JSON with its trace.
fn inner(cvm: &Cvm, op: &str) -> Vec<serde_json::Value> {
    let node = &cvm.net().operators()[cvm.net().op_id(op).unwrap().index()];
    cameleon::ops::inner_runs(node)
        .unwrap()
        .iter()
        .flatten()
        .map(|r| shown(r))
        .collect()
}

#[test]
fn the_fixture_is_a_journal_of_schema_1() {
    assert_eq!(schema(&fixtures().join("v1.db")), ("1".into(), 1));
}

#[test]
fn the_third_fixture_is_a_journal_of_schema_3_with_keys() {
    let db = fixtures().join("v3.db");
    assert_eq!(schema(&db), ("3".into(), 3));
    let c = rusqlite::Connection::open(&db).unwrap();
    let keys: i64 = c
        .query_row("SELECT count(*) FROM firing_keys", [], |r| r.get(0))
        .unwrap();
    assert!(keys > 0, "the loop's counter firings were keyed");
}

/// Schema 3 → 4: firing keys change form and place, so the older keys go with their table
/// (those runs are not reused); the runs go on as they would have (their position through the
/// `progress` view), and a new run records keys of the new form in its entries.
#[test]
fn a_schema_3_journal_drops_its_older_keys_and_its_runs_go_on() {
    let (dir, db) = copy_of("v3.db");
    let journal = Journal::open(&db).unwrap();
    assert_eq!(schema(&db), ("4".into(), 4), "migrated in place");
    let keys = |db: &Path| -> i64 {
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM entries WHERE keys IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let c = rusqlite::Connection::open(&db).unwrap();
    let tables: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'firing_keys'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(c);
    assert_eq!(
        tables, 0,
        "the keys of the older form are dropped, with their table"
    );
    assert_eq!(keys(&db), 0, "the runs recorded before have no keys");
    let mut cvm = Cvm::new(load(&dir, "loop.cm"));
    journal
        .start(
            &mut cvm,
            &RunOptions {
                base_dir: Some(dir.to_path_buf()),
                ..RunOptions::default()
            },
        )
        .unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    drop(cvm);
    drop(journal);
    assert!(keys(&db) > 0, "a new run records keys");
    migrated_runs_go_on("v3.db");
}

#[test]
fn the_second_fixture_is_a_journal_of_schema_2() {
    assert_eq!(schema(&fixtures().join("v2.db")), ("2".into(), 2));
}

#[test]
fn a_schema_1_journal_is_migrated_on_open_and_its_runs_go_on() {
    migrated_runs_go_on("v1.db");
}

/// Schema 2 → 3: each run's status, end state, position and step count move to its own
/// `progress` row (out of the row holding its `.cm` text), the firing-key index appears; the
/// runs go on as they would have.
#[test]
fn a_schema_2_journal_is_migrated_on_open_and_its_runs_go_on() {
    let (_dir, db) = copy_of("v2.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    let before: Vec<(String, String, i64, Option<i64>)> = c
        .prepare("SELECT id, status, steps, tip FROM runs ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(c);
    drop(Journal::open(&db).unwrap());
    assert_eq!(schema(&db), ("4".into(), 4), "migrated in place");
    let c = rusqlite::Connection::open(&db).unwrap();
    let after: Vec<(String, String, i64, Option<i64>)> = c
        .prepare(
            "SELECT id, status, steps, tip FROM runs JOIN progress ON progress.run = runs.seq
             ORDER BY seq",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(after, before, "every run's progress, moved");
    let columns: Vec<String> = c
        .prepare("SELECT name FROM pragma_table_info('runs')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for gone in ["status", "end_state", "steps", "tip", "redo_tip", "updated"] {
        assert!(!columns.iter().any(|c| c == gone), "{gone}: {columns:?}");
    }
    let keys: i64 = c
        .query_row(
            "SELECT count(*) FROM entries WHERE keys IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(keys, 0, "runs recorded before have no keys");
    drop(c);
    migrated_runs_go_on("v2.db");
}

/// The fixture `db`, migrated when opened: its runs go on as runs that were never interrupted.
fn migrated_runs_go_on(db: &str) {
    let (dir, db) = copy_of(db);
    let journal = Journal::open(&db).unwrap();
    assert_eq!(schema(&db), ("4".into(), 4), "migrated in place");
    let runs = journal.runs().unwrap();
    let status = |name: &str| runs.iter().find(|r| r.name == name).unwrap().status.clone();
    assert_eq!(status("loop"), "RUNNING");
    assert_eq!(status("nested"), "RUNNING");
    assert_eq!(status("nested-parallel"), "COMPLETED");

    // The loop: its tree (two branches) and position come back; it finishes as a run that was
    // never interrupted does.
    let h = journal.history(&id_of(&journal, "loop")).unwrap();
    assert_eq!(h.branches.len(), 2);
    assert_eq!(h.entries.len(), 12, "9 steps, then 3 on the second branch");
    let mut cvm = resume(&journal, &dir, "loop").cvm;
    assert_eq!(cvm.depth(), 10);
    assert_eq!(cvm.branches().len(), 2);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let mut reference = Cvm::new(load(&dir, "loop.cm"));
    assert_eq!(reference.run().unwrap(), EndState::Completed);
    for sink in ["done", "pairs"] {
        assert_eq!(received(&cvm, sink), received(&reference, sink), "{sink}");
    }
    drop(cvm);

    // The nested run: its inner runs are restored from the old record, not run again.
    let mut reference = Cvm::new(load(&dir, "nested.cm"));
    assert_eq!(reference.run().unwrap(), EndState::Completed);
    let mut cvm = resume(&journal, &dir, "nested").cvm;
    for op in ["sub", "m"] {
        assert_eq!(inner(&cvm, op), inner(&reference, op), "{op}");
        assert!(!inner(&cvm, op)[0]["trace"].as_array().unwrap().is_empty());
    }
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    for sink in ["out", "results"] {
        assert_eq!(received(&cvm, sink), received(&reference, sink), "{sink}");
    }
    drop(cvm);

    // The parallel run: steps of several firings, read back whole.
    let finished = resume(&journal, &dir, "nested-parallel");
    assert_eq!(finished.end, Some(EndState::Completed));
    let mut parallel = Cvm::builder(load(&dir, "nested.cm"))
        .mode(Mode::Parallel)
        .build();
    assert_eq!(parallel.run().unwrap(), EndState::Completed);
    assert_eq!(finished.cvm.depth(), parallel.depth());
    assert!(
        finished
            .cvm
            .history()
            .entries()
            .iter()
            .any(|e| e.firings.len() > 1)
    );
    assert_eq!(
        received(&finished.cvm, "results"),
        received(&parallel, "results")
    );
    for op in ["sub", "m"] {
        assert_eq!(inner(&finished.cvm, op), inner(&parallel, op), "{op}");
    }
}

#[test]
fn a_migrated_journal_opens_again_unchanged() {
    for f in ["v1.db", "v2.db", "v3.db"] {
        opens_again_unchanged(f);
    }
}

fn opens_again_unchanged(f: &str) {
    let (_dir, db) = copy_of(f);
    drop(Journal::open(&db).unwrap());
    let bodies = |db: &Path| -> Vec<String> {
        let c = rusqlite::Connection::open(db).unwrap();
        let mut st = c.prepare("SELECT body FROM entries ORDER BY id").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let once = bodies(&db);
    drop(Journal::open(&db).unwrap());
    assert_eq!(bodies(&db), once);
    assert_eq!(schema(&db), ("4".into(), 4));
}

#[test]
fn a_journal_whose_migration_fails_is_left_as_it_was_and_the_error_names_the_entry() {
    let (_dir, db) = copy();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE entries SET body = '{\"firings\": 7}' WHERE id = (SELECT max(id) FROM entries)",
        [],
    )
    .unwrap();
    let first: String = c
        .query_row("SELECT body FROM entries ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    drop(c);
    match Journal::open(&db) {
        Err(JournalError::Corrupt { what, .. }) => {
            assert!(what.contains("entry #"), "{what}");
            assert!(what.contains("schema 1"), "{what}");
        }
        other => panic!("expected a damaged journal, got {other:?}"),
    }
    assert_eq!(schema(&db), ("1".into(), 1), "nothing migrated");
    let c = rusqlite::Connection::open(&db).unwrap();
    let still: String = c
        .query_row("SELECT body FROM entries ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(still, first, "no entry rewritten");
}

/// An inner run as the CLI shows it (its end's fields at the top), its trace included.
fn shown(r: &cameleon::ops::InnerRun) -> serde_json::Value {
    let mut j = serde_json::to_value(r.end()).unwrap();
    j["net"] = r.net().into();
    if let Some(i) = r.item() {
        j["item"] = i.into();
    }
    j["steps"] = r.steps().into();
    j["firings"] = r.firings().into();
    j["trace"] = r.with_cvm(Cvm::trace_lines).unwrap_or_default().into();
    j
}
