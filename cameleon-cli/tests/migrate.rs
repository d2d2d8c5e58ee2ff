//! `cameleon migrate` and `cameleon check --against` (docs/migration.md): exit codes, the
//! history entry, `resume` on the new net, going back and forth, and SIGKILL mid-migration.

use std::time::Duration;

use cameleon::journal::{Journal, RunOptions};
use cameleon::net::Net;
use cameleon::prelude::Cvm;
use test_support::{Bin, Signal, TempDir, code, json, s, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn chain(ops: &[&str]) -> String {
    let mut t = String::from(
        "name: doc\noperators:\n  - {id: src, type: source, params: {value: hello}}\n",
    );
    for o in ops {
        t.push_str(&format!("  - {{id: {o}, type: transform}}\n"));
    }
    t.push_str("  - {id: out, type: sink}\nconnections:\n");
    let mut cur = "src".to_owned();
    for o in ops {
        t.push_str(&format!("  - {{from: {cur}.out_data, to: {o}.in_data}}\n"));
        cur = (*o).to_owned();
    }
    t.push_str(&format!("  - {{from: {cur}.out_data, to: out.in_data}}\n"));
    t
}

struct Setup {
    d: TempDir,
    db: String,
    old: String,
    new: String,
}

/// A journal with a run of `draft -> publish` stopped after `steps` steps, and the file of
/// `draft -> review -> publish`.
fn setup(name: &str, steps: usize) -> (Setup, String) {
    let d = TempDir::new(&format!("cli-migrate-{name}"));
    let old = d.join("doc.cm");
    let new = d.join("doc_v2.cm");
    std::fs::write(&old, chain(&["draft", "publish"])).unwrap();
    std::fs::write(&new, chain(&["draft", "review", "publish"])).unwrap();
    let db = d.join("runs.db");
    // A run stopped part-way (made through the library: a `--max-steps` stop would stay the
    // resumed run's limit).
    let journal = Journal::create(&db).unwrap();
    let mut cvm = Cvm::new(Net::from_cm(&chain(&["draft", "publish"])).unwrap());
    let opts = RunOptions {
        base_dir: Some(d.path().to_path_buf()),
        ..RunOptions::default()
    };
    let id = journal.start(&mut cvm, &opts).unwrap();
    for _ in 0..steps {
        cvm.step().unwrap();
    }
    drop(cvm);
    let s = Setup {
        db: s(&db),
        old: s(&old),
        new: s(&new),
        d,
    };
    (s, id)
}

#[test]
fn an_accepted_migration_is_recorded_and_the_run_completes_on_the_new_net() {
    let (t, id) = setup("accept", 1);
    let o = CAMELEON.run(&["migrate", &t.db, &id, "--to", &t.new, "--dry-run", "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["verdict"], "accepted");
    assert_eq!(v["proof"]["reachable"], true);
    // A dry run records nothing.
    let h = json(&CAMELEON.run(&["history", &t.db, &id, "--json"]));
    assert_eq!(h["entries"].as_array().unwrap().len(), 1);

    let o = CAMELEON.run(&["migrate", &t.db, &id, "--to", &t.new]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("MIGRATED"), "{}", stdout(&o));
    let h = json(&CAMELEON.run(&["history", &t.db, &id, "--json"]));
    let last = h["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["ops"], serde_json::json!([]));
    assert_eq!(last["migration"]["from"], v["from"]);
    assert_eq!(last["migration"]["to"], v["to"]);
    assert!(stdout(&CAMELEON.run(&["history", &t.db, &id])).contains("MIGRATED net"));

    let o = CAMELEON.run(&["resume", &t.db, &id, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["end"], "COMPLETED", "{r}");
    let done = Journal::open(&t.db).unwrap().open_run(&id).unwrap();
    let review = done
        .cvm
        .net()
        .op_id("review")
        .expect("the run went on on the new net");
    assert_eq!(done.cvm.fire_count(review), 1);
    assert_eq!(r["sinks"]["out"], serde_json::json!(["hello"]));
}

#[test]
fn a_refused_migration_exits_3_with_the_reason_and_bad_input_exits_2() {
    let (t, id) = setup("refuse", 2);
    let o = CAMELEON.run(&["migrate", &t.db, &id, "--to", &t.new]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("cannot move"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("`draft.out_data -> publish.in_data`"),
        "{}",
        stdout(&o)
    );
    let o = CAMELEON.run(&[
        "migrate",
        &t.db,
        &id,
        "--to",
        &t.new,
        "--rename",
        "nope=review",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("`nope`"), "{}", stderr(&o));
    let o = CAMELEON.run(&["migrate", &t.db, "no-such-run", "--to", &t.new]);
    assert_eq!(code(&o), 2);
    let o = CAMELEON.run(&["migrate", &t.db, &id, "--back"]);
    assert_eq!(code(&o), 2, "nothing to go back over: {}", stderr(&o));
    // Refused: the run goes on on its own net.
    let r = json(&CAMELEON.run(&["resume", &t.db, &id, "--json"]));
    assert_eq!(r["end"], "COMPLETED");
    let done = Journal::open(&t.db).unwrap().open_run(&id).unwrap();
    assert!(
        done.cvm.net().op_id("review").is_none(),
        "on the old net: {r}"
    );
}

#[test]
fn check_against_prints_the_safe_change_region() {
    let (t, _) = setup("region", 1);
    let o = CAMELEON.run(&["check", &t.new, "--against", &t.old]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("safe except while a token is between `draft` and `publish`"),
        "{out}"
    );
    let v = json(&CAMELEON.run(&["check", &t.new, "--against", &t.old, "--json"]));
    assert_eq!(v["always_safe"], false);
    assert_eq!(v["safe_states"], 2);
    // A net against itself: safe everywhere.
    let o = CAMELEON.run(&["check", &t.old, "--against", &t.old]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("safe in every reachable state"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn back_and_replay_over_a_migration() {
    let (t, id) = setup("back", 1);
    assert_eq!(
        code(&CAMELEON.run(&["migrate", &t.db, &id, "--to", &t.new])),
        0
    );
    let j = Journal::open(&t.db).unwrap();
    let to = j.position(&id).unwrap().cm_hash;
    let o = CAMELEON.run(&["migrate", &t.db, &id, "--back", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(json(&o)["net"], to.as_str());
    let o = CAMELEON.run(&["migrate", &t.db, &id, "--replay", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["net"], to.as_str());
    let r = json(&CAMELEON.run(&["resume", &t.db, &id, "--json"]));
    assert_eq!(r["end"], "COMPLETED");
    let _ = &t.d;
}

/// SIGKILL at many instants of `migrate`: each time the run is wholly migrated or untouched,
/// and goes on either way.
#[test]
fn a_sigkill_during_migrate_leaves_all_or_nothing() {
    let mut seen = [0usize; 2];
    for delay in (0..60).step_by(4) {
        let (t, id) = setup(&format!("kill-{delay}"), 1);
        let j = Journal::open(&t.db).unwrap();
        let before = j.position(&id).unwrap();
        let mut p = CAMELEON
            .cmd()
            .args(["migrate", &t.db, &id, "--to", &t.new])
            .spawn();
        std::thread::sleep(Duration::from_millis(delay));
        p.signal(Signal::Kill);
        let _ = p.wait_output(Duration::from_secs(60));
        let at = j.position(&id).unwrap();
        let h = j.history(&id).unwrap();
        let migrated = h.entries.iter().any(|e| e.migration.is_some());
        if migrated {
            assert_ne!(at.cm_hash, before.cm_hash);
            assert_eq!(at.tip, Some(h.entries.len() as u32 - 1));
        } else {
            assert_eq!(at, before, "untouched");
            assert_eq!(h.entries.len(), 1);
        }
        seen[usize::from(migrated)] += 1;
        let r = json(&CAMELEON.run(&["resume", &t.db, &id, "--json"]));
        assert_eq!(r["end"], "COMPLETED", "delay {delay}: {r}");
    }
    // Killed before the commit at least once (at once, the migration cannot be done).
    assert!(seen[0] > 0, "{seen:?}");
}
