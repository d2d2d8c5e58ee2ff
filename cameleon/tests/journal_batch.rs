//! What a flush writes and what a reuse hit reads (docs/semantics.md §5.5, §5.9): every step
//! of a run whose steps are flushed many at a time (`batch`, `exit`: multi-row inserts, and a
//! remainder) is in the file, once, and a resume rebuilds the run from them; a reuse journal's
//! hits share a read transaction that a miss ends (a writer of the file can then checkpoint
//! its WAL to the end again); a flush that fails midway is rolled back.

use cameleon::engine::ReuseSource;
use cameleon::journal::{Durability, Journal, ReuseJournal, RunOptions};
use cameleon::prelude::*;

/// `iterations` rounds of merge + counter + guard, plus const and sink: 3 × `iterations` + 2
/// steps, one firing each.
fn counter_loop(iterations: i64) -> Net {
    Net::from_cm(&format!(
        "config: {{max_loop_iterations: 1000000}}
operators:
  - {{id: zero, type: const, params: {{value: 0}}}}
  - {{id: m, type: merge}}
  - {{id: inc, type: counter}}
  - {{id: g, type: guard, params: {{continue_if: {{lt: {iterations}}}}}}}
  - {{id: out, type: sink}}
connections:
  - {{from: zero.out_data, to: m.in_a}}
  - {{from: m.out_data, to: inc.in_data}}
  - {{from: inc.out_data, to: g.in_data}}
  - {{from: g.out_continue, to: m.in_b}}
  - {{from: g.out_exit, to: out.in_data}}
"
    ))
    .expect("valid loop")
}

fn sink(cvm: &Cvm) -> Vec<serde_json::Value> {
    cvm.received("out").iter().map(|v| v.to_json()).collect()
}

#[test]
fn every_step_of_a_run_flushed_many_at_a_time_is_in_the_file_once() {
    // 3 × 150 + 2 = 452 steps: 14 inserts of 32 rows and 4 rows alone in one flush (`exit`, and
    // `batch` with a period longer than the run), or flushes of any size (`batch` woken by the
    // rows waiting); `sync` one by one.
    let dir = test_support::TempDir::new("journal-batch");
    for (name, durability) in [
        ("exit", Durability::Exit),
        ("batch", Durability::Batch { ms: 3_600_000 }),
        ("batch_1ms", Durability::Batch { ms: 1 }),
        ("sync", Durability::Sync),
    ] {
        let db = dir.join(format!("{name}.db"));
        let journal = Journal::create(&db).expect("journal");
        let mut cvm = Cvm::new(counter_loop(150));
        let opts = RunOptions {
            durability,
            ..RunOptions::default()
        };
        let id = journal.start(&mut cvm, &opts).expect("journaled");
        assert_eq!(cvm.run().expect("runs"), EndState::Completed, "{name}");
        assert_eq!(cvm.depth(), 452, "{name}");
        let live = sink(&cvm);
        drop(cvm);

        let c = rusqlite::Connection::open(&db).expect("opens");
        let (rows, nodes, steps, first, last): (i64, i64, i64, i64, i64) = c
            .query_row(
                "SELECT count(*), count(DISTINCT node), count(DISTINCT step), min(step),
                 max(step) FROM entries",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .expect("counts");
        assert_eq!(
            (rows, nodes, steps, first, last),
            (452, 452, 452, 1, 452),
            "{name}: one row per step, each step once"
        );
        // Each row's columns are its own: its id is (run, node), its step follows its parent's.
        let mismatched: i64 = c
            .query_row(
                "SELECT count(*) FROM entries e WHERE e.id != (e.run << 32) + e.node
                 OR (e.parent IS NULL) != (e.step = 1)
                 OR (e.parent IS NOT NULL AND (SELECT p.step FROM entries p
                     WHERE p.run = e.run AND p.node = e.parent) != e.step - 1)
                 OR e.ops NOT IN ('[\"zero\"]', '[\"m\"]', '[\"inc\"]', '[\"g\"]', '[\"out\"]')",
                [],
                |r| r.get(0),
            )
            .expect("checks");
        assert_eq!(mismatched, 0, "{name}: rows hold their own columns");
        drop(c);

        let resumed = journal.resume(Some(&id)).expect("resumes");
        assert_eq!(resumed.cvm.depth(), 452, "{name}");
        assert_eq!(sink(&resumed.cvm), live, "{name}: the same sink values");
    }
}

/// The reuse keys the journal at `db` recorded (one keyed firing per entry here), each with
/// its entry's step and its firing's record.
fn recorded_keys(db: &std::path::Path) -> Vec<(u128, u32, serde_json::Value)> {
    let c = rusqlite::Connection::open(db).expect("opens");
    let mut st = c
        .prepare(
            "SELECT substr(keys, 1, 16), step, body FROM entries WHERE keys IS NOT NULL
             ORDER BY id",
        )
        .expect("prepares");
    st.query_map([], |r| {
        Ok((
            r.get::<_, Vec<u8>>(0)?,
            r.get::<_, u32>(1)?,
            r.get::<_, String>(2)?,
        ))
    })
    .expect("reads")
    .map(|row| {
        let (k, step, body) = row.expect("a row");
        let body: serde_json::Value = serde_json::from_str(&body).expect("json");
        (
            u128::from_be_bytes(k.as_slice().try_into().expect("16 bytes")),
            step,
            body["firings"][0].clone(),
        )
    })
    .collect()
}

/// Whether a checkpoint of `db`'s WAL back to an empty WAL is blocked by a reader (`busy`).
fn truncate_blocked(writer: &rusqlite::Connection) -> bool {
    let busy: i64 = writer
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .expect("checkpoints");
    busy != 0
}

#[test]
fn reuse_hits_share_a_read_transaction_that_a_miss_ends() {
    let dir = test_support::TempDir::new("journal-batch-reuse");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).expect("journal");
    let mut cvm = Cvm::new(counter_loop(20));
    journal
        .start(&mut cvm, &RunOptions::default())
        .expect("journaled");
    cvm.run().expect("runs");
    drop(cvm);
    drop(journal);
    let keys = recorded_keys(&db);
    assert!(
        keys.len() >= 20,
        "each counter firing is keyed: {}",
        keys.len()
    );

    let source = ReuseJournal::open(&db, None).expect("opens");
    // Another connection writes: the WAL holds frames a reader's snapshot may need.
    let writer = rusqlite::Connection::open(&db).expect("opens");
    writer
        .execute("INSERT INTO meta (key, value) VALUES ('test', 'x')", [])
        .expect("writes");
    assert!(!truncate_blocked(&writer), "no reader holds the WAL yet");
    writer
        .execute("UPDATE meta SET value = 'y' WHERE key = 'test'", [])
        .expect("writes");

    // Each hit returns its own firing: its step, emissions and state after.
    for (i, (k, step, firing)) in keys.iter().enumerate().take(3) {
        let hit = source.find(*k).expect("reads").expect("a hit");
        assert_eq!(hit.from.step, *step, "hit {i}");
        let emitted: Vec<serde_json::Value> =
            hit.emitted.iter().map(|(_, t)| t.value.clone()).collect();
        let recorded: Vec<serde_json::Value> = firing["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|t| t["value"].clone())
            .collect();
        assert!(!recorded.is_empty(), "hit {i}: {firing}");
        assert_eq!(emitted, recorded, "hit {i}: {firing}");
        assert_eq!(
            hit.after.unwrap_or_default(),
            firing["after"],
            "hit {i}: {firing}"
        );
    }
    assert_ne!(keys[0].2, keys[1].2, "two different firings");
    assert!(
        truncate_blocked(&writer),
        "the hits' read transaction is held"
    );
    assert!(source.find(!keys[0].0).expect("reads").is_none(), "a miss");
    assert!(
        !truncate_blocked(&writer),
        "the miss ended the read transaction"
    );

    // A long streak of hits ends its transaction too (at most 256 hits per transaction).
    writer
        .execute("UPDATE meta SET value = 'z' WHERE key = 'test'", [])
        .expect("writes");
    for i in 0..256 {
        let k = keys[i % keys.len()].0;
        assert!(source.find(k).expect("reads").is_some(), "hit {i}");
    }
    assert!(
        !truncate_blocked(&writer),
        "the 256th hit ended its read transaction"
    );
}

#[test]
fn a_flush_that_fails_midway_leaves_nothing_and_releases_the_file() {
    // A row of the run already in the file where the flush will write its 4th step: the
    // flush's insert fails after its first rows.
    let dir = test_support::TempDir::new("journal-batch-fail");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).expect("journal");
    let mut cvm = Cvm::new(counter_loop(5));
    let opts = RunOptions {
        durability: Durability::Exit,
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).expect("journaled");
    let other = rusqlite::Connection::open(&db).expect("opens");
    other
        .busy_timeout(std::time::Duration::ZERO)
        .expect("no waiting");
    let seq: i64 = other
        .query_row("SELECT seq FROM runs WHERE id = ?1", [&id], |r| r.get(0))
        .expect("the run");
    other
        .execute(
            "INSERT INTO entries (id, run, node, parent, step, branch, ops, body)
             VALUES ((?1 << 32) + 3, ?1, 3, 2, 4, 1, '[]', '{}')",
            [seq],
        )
        .expect("inserts");
    let _ = cvm.run(); // its end's flush fails
    // The engine (and its recorder) still alive: the failed flush's transaction is over.
    other
        .execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
        .expect("the journal's writer holds no transaction");
    let rows: i64 = other
        .query_row("SELECT count(*) FROM entries WHERE run = ?1", [seq], |r| {
            r.get(0)
        })
        .expect("counts");
    assert_eq!(rows, 1, "nothing of the failed flush is in the file");
    drop(cvm);
}

/// The size of `db`'s WAL file (0 when there is none).
fn wal_bytes(db: &std::path::Path) -> u64 {
    std::fs::metadata(format!("{}-wal", db.display())).map_or(0, |m| m.len())
}

#[test]
fn a_long_batch_run_s_file_alone_holds_every_step_once_the_journal_is_closed() {
    // 3 × 50 000 + 2 steps: about 8 000 WAL frames, more than the flusher's mid-run threshold
    // (docs/journal.md, "Checkpoints"); SQLite no longer checkpoints inside the commits.
    let dir = test_support::TempDir::new("journal-checkpoint");
    let db = dir.join("long.db");
    let journal = Journal::create(&db).expect("journal");
    let mut cvm = Cvm::new(counter_loop(50_000));
    let opts = RunOptions {
        durability: Durability::Batch { ms: 1 },
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).expect("journaled");
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    let steps = cvm.depth();
    assert_eq!(steps, 150_002);
    drop(cvm);
    // Far more frames than the thresholds were written: the flusher checkpointed mid-run.
    assert!(wal_bytes(&db) > 0);
    drop(journal);

    // Closed: the database file alone holds every step, the WAL left behind or not.
    let copy = dir.join("copy.db");
    std::fs::copy(&db, &copy).expect("copies the file without its WAL");
    assert!(!std::path::Path::new(&format!("{}-wal", copy.display())).exists());
    let c = rusqlite::Connection::open(&copy).expect("opens");
    let rows: i64 = c
        .query_row("SELECT count(DISTINCT node) FROM entries", [], |r| r.get(0))
        .expect("counts");
    drop(c);
    assert_eq!(usize::try_from(rows).ok(), Some(steps));
    let resumed = Journal::open(&copy)
        .expect("a journal")
        .resume(Some(&id))
        .expect("resumes");
    assert_eq!(resumed.cvm.depth(), steps);
}

/// The frames waiting in the WAL that make the `batch` flusher checkpoint mid-run, and the
/// WAL file's limit: that, and half as much again for the flush that takes the WAL past it
/// (docs/journal.md, "Checkpoints"; `checkpoint.rs`).
const MID_RUN: u64 = 4_000;
const WAL_LIMIT: u64 = MID_RUN + MID_RUN / 2;

/// The bytes of a WAL file of [`WAL_LIMIT`] frames of `db`'s pages (a 32-byte header, a
/// 24-byte header per frame).
fn wal_limit(db: &std::path::Path) -> u64 {
    let c = rusqlite::Connection::open(db).expect("opens");
    let page: u32 = c
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page size");
    32 + WAL_LIMIT * (24 + u64::from(page))
}

/// Steps `cvm` until `done` says so after a step or the run ends (then `false`); `seen` gets
/// the WAL file's size after each step.
fn step_until(
    cvm: &mut Cvm,
    db: &std::path::Path,
    mut seen: impl FnMut(u64),
    mut done: impl FnMut(usize) -> bool,
) -> bool {
    loop {
        let step = cvm.step().expect("steps");
        seen(wal_bytes(db));
        if matches!(step, Step::Ended(_)) {
            return false;
        }
        if done(cvm.depth()) {
            return true;
        }
    }
}

#[test]
fn a_long_batch_run_s_wal_file_stays_under_its_limit() {
    // 3 × 150 000 + 2 steps, about 24 000 WAL frames: checkpoints every MID_RUN frames, and
    // each restarts the WAL (nothing else reads it), which holds at most MID_RUN frames and the
    // flush that took it past them. The file's size is read after every step.
    let dir = test_support::TempDir::new("journal-wal-limit");
    let db = dir.join("long.db");
    let journal = Journal::create(&db).expect("journal");
    let limit = wal_limit(&db);
    let mut cvm = Cvm::new(counter_loop(150_000));
    let opts = RunOptions {
        durability: Durability::Batch { ms: 1 },
        ..RunOptions::default()
    };
    journal.start(&mut cvm, &opts).expect("journaled");
    let mut most = 0;
    assert!(step_until(
        &mut cvm,
        &db,
        |w| most = most.max(w),
        |d| d >= 200_000
    ));
    assert!(
        most <= limit,
        "200 000 steps: the WAL file reached {most} bytes, over its limit of {limit} \
         ({WAL_LIMIT} frames)"
    );
    assert!(most > limit / 2, "the run wrote more than MID_RUN frames");

    // A reader keeps the WAL from being copied and restarted: it grows past its limit.
    let reader = rusqlite::Connection::open(&db).expect("opens");
    reader.execute_batch("BEGIN").expect("begins");
    let _: i64 = reader
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .expect("reads");
    assert!(
        step_until(
            &mut cvm,
            &db,
            |_| {},
            |_| wal_bytes(&db) > limit + limit / 4
        ),
        "the WAL grows while a reader holds it"
    );
    let grown = wal_bytes(&db);
    reader.execute_batch("COMMIT").expect("ends the read");

    // Released: the next checkpoint copies it all, the commit after it restarts the WAL and
    // cuts the file back to the limit; it stays under it to the end of the run.
    let mut cut = false;
    let mut most = 0;
    let ended = !step_until(
        &mut cvm,
        &db,
        |w| {
            cut |= w < grown;
            if cut {
                most = most.max(w);
            }
        },
        |_| false,
    );
    assert!(ended);
    assert_eq!(cvm.depth(), 450_002);
    let at_end = wal_bytes(&db);
    assert!(
        cut && at_end <= limit && most <= limit,
        "the WAL file, {grown} bytes while a reader held it, is {at_end} bytes at the end of \
         the run (at most {most} since it was cut back): its limit is {limit} bytes"
    );
    drop(cvm);
    drop(journal);
}

#[test]
fn a_batch_run_whose_row_is_deleted_fails_its_next_flush_and_writes_nothing_more() {
    // The `batch` writer checks its run's row once per flush (no foreign-key check per row):
    // a run deleted from the file while it is recorded gets no orphan step rows.
    let dir = test_support::TempDir::new("journal-batch-deleted");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).expect("journal");
    let mut cvm = Cvm::new(counter_loop(1_000));
    let opts = RunOptions {
        durability: Durability::Batch { ms: 1 },
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).expect("journaled");
    for _ in 0..100 {
        cvm.step().expect("steps");
    }
    // Another connection (foreign keys off, as SQLite's default) deletes the run's row; the
    // rows the run had in the file then are counted in the same transaction.
    let other = rusqlite::Connection::open(&db).expect("opens");
    other
        .busy_timeout(std::time::Duration::from_secs(60))
        .expect("waits for the writer");
    other
        .pragma_update(None, "foreign_keys", false)
        .expect("no foreign-key check");
    other.execute_batch("BEGIN IMMEDIATE").expect("begins");
    let seq: i64 = other
        .query_row("SELECT seq FROM runs WHERE id = ?1", [&id], |r| r.get(0))
        .expect("the run");
    let before: i64 = other
        .query_row("SELECT count(*) FROM entries WHERE run = ?1", [seq], |r| {
            r.get(0)
        })
        .expect("counts");
    other
        .execute("DELETE FROM runs WHERE seq = ?1", [seq])
        .expect("deletes");
    other.execute_batch("COMMIT").expect("commits");

    // The next flush fails: the run stops at the step recorded after it, with the journal's
    // error, which names the run.
    let err = cvm.run().expect_err("the journal cannot record the run");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            cameleon::RunError::Step(cameleon::StepError::Record(_))
        ),
        "{msg}"
    );
    assert!(
        msg.contains("cannot write to the journal")
            && msg.contains(&id)
            && msg.contains("no longer in the journal"),
        "{msg}"
    );
    assert!(cvm.depth() < 3_002, "the run stopped: {}", cvm.depth());
    // Kept: the next step is refused with the same error.
    let again = cvm.step().expect_err("still failing").to_string();
    assert!(again.contains(&id), "{again}");

    // The failed flush was rolled back and the writer holds no transaction.
    other
        .busy_timeout(std::time::Duration::ZERO)
        .expect("no waiting");
    other
        .execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
        .expect("the journal's writer holds no transaction");
    let after: i64 = other
        .query_row("SELECT count(*) FROM entries WHERE run = ?1", [seq], |r| {
            r.get(0)
        })
        .expect("counts");
    assert_eq!(
        after, before,
        "no step row was written after the run's row was deleted"
    );
    drop(cvm);
}
