//! Moving journaled runs onto a changed net (docs/migration.md): the textbook dynamic-change
//! example, random (net, edit, instant) triples against an oracle written here, resumed
//! migrations that complete, and going back and forth over a migration.

use std::collections::{HashMap, HashSet, VecDeque};

use cameleon::journal::{Journal, RunOptions};
use cameleon::migrate::{MigrateOptions, MigrationVerdict, migrate};
use cameleon::net::Net;
use cameleon::prelude::*;
use cameleon::verify::{VerifyOptions, safe_region};

fn net(cm: &str) -> Net {
    Net::from_cm(cm).unwrap_or_else(|e| panic!("{e}\n{cm}"))
}

/// A chain `src -> a -> b -> … -> out` of transforms, as `.cm` text.
fn chain(name: &str, ops: &[&str]) -> String {
    let mut s =
        format!("name: {name}\noperators:\n  - {{id: src, type: source, params: {{value: go}}}}\n");
    for o in ops {
        s.push_str(&format!("  - {{id: {o}, type: transform}}\n"));
    }
    s.push_str("  - {id: out, type: sink}\nconnections:\n");
    let mut cur = "src".to_owned();
    for o in ops {
        s.push_str(&format!("  - {{from: {cur}.out_data, to: {o}.in_data}}\n"));
        cur = (*o).to_owned();
    }
    s.push_str(&format!("  - {{from: {cur}.out_data, to: out.in_data}}\n"));
    s
}

const SEQUENCE: &str = "name: order
operators:
  - {id: src, type: source, params: {value: order}}
  - {id: prep, type: transform}
  - {id: ship, type: transform}
  - {id: bill, type: transform}
  - {id: collect, type: transform}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: prep.in_data}
  - {from: prep.out_data, to: ship.in_data}
  - {from: ship.out_data, to: bill.in_data}
  - {from: bill.out_data, to: collect.in_data}
  - {from: collect.out_data, to: out.in_data}
";

const PARALLEL: &str = "name: order
operators:
  - {id: src, type: source, params: {value: order}}
  - {id: prep, type: transform}
  - {id: split, type: fork}
  - {id: ship, type: transform}
  - {id: bill, type: transform}
  - {id: both, type: join}
  - {id: collect, type: transform}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: prep.in_data}
  - {from: prep.out_data, to: split.in_data}
  - {from: split.out_a, to: ship.in_data}
  - {from: split.out_b, to: bill.in_data}
  - {from: ship.out_data, to: both.in_a}
  - {from: bill.out_data, to: both.in_b}
  - {from: both.out_data, to: collect.in_data}
  - {from: collect.out_data, to: out.in_data}
";

struct Db {
    _dir: test_support::TempDir,
    journal: Journal,
}

fn db(name: &str) -> Db {
    let dir = test_support::TempDir::new(&format!("migration-{name}"));
    let journal = Journal::create(dir.join("runs.db")).unwrap();
    Db { _dir: dir, journal }
}

/// Starts a journaled run of `cm` and fires `ops` in order; the run's id.
fn run_to(db: &Db, cm: &str, ops: &[&str]) -> String {
    let n = net(cm);
    let mut cvm = Cvm::new(n);
    let id = db.journal.start(&mut cvm, &RunOptions::default()).unwrap();
    for o in ops {
        let op = cvm.net().op_id(o).unwrap();
        cvm.fire_op(op).unwrap_or_else(|e| panic!("{o}: {e}"));
    }
    id
}

fn dry() -> MigrateOptions {
    MigrateOptions {
        dry_run: true,
        ..MigrateOptions::default()
    }
}

/// Resumes run `id` and runs it to its end.
fn finish(db: &Db, id: &str) -> (EndState, Cvm) {
    let mut r = db.journal.resume(Some(id)).unwrap();
    let end = r.cvm.run().unwrap();
    (end, r.cvm)
}

#[test]
fn sequence_to_parallel_is_refused_inside_the_change_region_and_accepted_before_it() {
    let (old, new) = (net(SEQUENCE), net(PARALLEL));
    let region = safe_region(&old, &new, &[], &VerifyOptions::default());
    assert!(!region.always_safe);
    // Before the region (nothing fired, or the order waiting for `prep`): safe. With a token
    // inside the changed part: never.
    for s in &region.states {
        let inside = s.tokens.iter().any(|t| {
            [
                "prep.out_data -> ship.in_data",
                "ship.out_data -> bill.in_data",
                "bill.out_data -> collect.in_data",
            ]
            .contains(&t.as_str())
        });
        let before =
            s.tokens.is_empty() && s.why.is_none() || s.tokens == ["src.out_data -> prep.in_data"];
        if inside {
            assert!(!s.safe, "{s:?}");
            assert!(
                s.why.as_deref().unwrap().starts_with("cannot move"),
                "{s:?}"
            );
        }
        if before {
            assert!(s.safe, "{s:?}");
        }
    }
    assert_eq!(region.safe_states, 2, "{region:#?}");
    assert!(
        region.summary.contains("between `prep` and `ship`")
            && region.summary.contains("between `ship` and `bill`")
            && region.summary.contains("between `bill` and `collect`"),
        "{}",
        region.summary
    );

    // The same on journaled runs.
    let db = db("seq-par");
    let waiting = run_to(&db, SEQUENCE, &["src"]);
    let m = migrate(&db.journal, &waiting, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated, "{m:#?}");
    let (end, cvm) = finish(&db, &waiting);
    assert_eq!(end, EndState::Completed);
    assert_eq!(
        cvm.net().op_id("split").map(|_| ()),
        Some(()),
        "it went on on NEW"
    );
    assert_eq!(cvm.received("out").len(), 1);

    let shipped = run_to(&db, SEQUENCE, &["src", "prep", "ship"]);
    let m = migrate(&db.journal, &shipped, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused);
    assert_eq!(m.exit_code(), 3);
    assert!(
        m.cannot_move
            .iter()
            .any(|c| c.contains("`ship.out_data -> bill.in_data`")),
        "{m:#?}"
    );
    // Refused: the run is untouched and completes on OLD.
    let (end, cvm) = finish(&db, &shipped);
    assert_eq!(end, EndState::Completed);
    assert!(cvm.net().op_id("split").is_none());
}

#[test]
fn parallel_to_sequence_is_refused_while_the_branches_run() {
    let (old, new) = (net(PARALLEL), net(SEQUENCE));
    let region = safe_region(&old, &new, &[], &VerifyOptions::default());
    for s in &region.states {
        let in_branches = s
            .tokens
            .iter()
            .any(|t| t.starts_with("split.") || t.contains("both."));
        if in_branches {
            assert!(!s.safe, "{s:?}");
        }
    }
    assert_eq!(region.safe_states, 2, "{region:#?}");
    let db = db("par-seq");
    let split = run_to(&db, PARALLEL, &["src", "prep", "split", "ship"]);
    let m = migrate(&db.journal, &split, &new, &[], &dry()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused);
    assert!(
        m.cannot_move
            .iter()
            .any(|c| c.contains("`split.out_b -> bill.in_data`")),
        "{m:#?}"
    );
    let fresh = run_to(&db, PARALLEL, &["src"]);
    let m = migrate(&db.journal, &fresh, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated, "{m:#?}");
    assert_eq!(finish(&db, &fresh).0, EndState::Completed);
}

/// A fork that gains a branch: after the fork fired, the run's tokens all map, but NEW's fork
/// would have fed the new branch too — its work would be skipped, and the join would wait for
/// it forever: refused on both counts, with the witness and the operator named.
#[test]
fn a_branch_added_after_the_split_is_refused_naming_the_skipped_work() {
    let old = "name: fan
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: a, type: transform}
  - {id: b, type: transform}
  - {id: both, type: join}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: a.in_data}
  - {from: split.out_b, to: b.in_data}
  - {from: a.out_data, to: both.in_a}
  - {from: b.out_data, to: both.in_b}
  - {from: both.out_data, to: out.in_data}
";
    let new = net(&old
        .replace("{id: split, type: fork}", "{id: split, type: fork, params: {arity: 3}}")
        .replace("{id: both, type: join}", "{id: both, type: join, params: {arity: 3}}")
        .replace("  - {id: out, type: sink}", "  - {id: c, type: transform}\n  - {id: out, type: sink}")
        .replace(
            "  - {from: both.out_data",
            "  - {from: split.out_c, to: c.in_data}\n  - {from: c.out_data, to: both.in_c}\n  - {from: both.out_data",
        ));
    let db = db("fan");
    let id = run_to(&db, old, &["src", "split"]);
    let m = migrate(&db.journal, &id, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused, "{m:#?}");
    let p = m.proof.as_ref().unwrap();
    assert_eq!(p.reachable, Some(false));
    assert_eq!(p.skipped, ["c"], "{p:#?}");
    assert_eq!(p.deadlock_free.holds, Some(false));
    assert!(p.deadlock_free.witness.is_some());
    // --allow-unreachable still requires (a).
    let allow = MigrateOptions {
        allow_unreachable: true,
        ..MigrateOptions::default()
    };
    let m = migrate(&db.journal, &id, &new, &[], &allow).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused);
    // Before the split: accepted, and the new branch runs.
    let early = run_to(&db, old, &["src"]);
    let m = migrate(&db.journal, &early, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated, "{m:#?}");
    let (end, cvm) = finish(&db, &early);
    assert_eq!(end, EndState::Completed);
    assert_eq!(cvm.fire_count(cvm.net().op_id("c").unwrap()), 1);
}

/// An operator inserted in a chain: safe before it; a run whose token sits on the connection
/// it cuts, or past it, cannot move (a consumed token records the work done).
#[test]
fn an_inserted_operator_makes_runs_past_it_unmovable() {
    let old = chain("doc", &["draft", "publish"]);
    let new = net(&chain("doc", &["draft", "review", "publish"]));
    let region = safe_region(&net(&old), &new, &[], &VerifyOptions::default());
    assert!(
        region
            .summary
            .starts_with("safe except while a token is between `draft` and `publish`"),
        "{}",
        region.summary
    );
    assert_eq!(region.safe_states, 2);
    let db = db("insert");
    let done = run_to(&db, &old, &["src", "draft", "publish", "out"]);
    let m = migrate(&db.journal, &done, &new, &[], &dry()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused, "{m:#?}");
    assert!(
        m.cannot_move
            .iter()
            .any(|c| c.contains("consumed token on `draft.out_data -> publish.in_data`")),
        "a finished run does not start again on NEW: {m:#?}"
    );
}

/// A side branch added to a fork: a run past the fork maps, can complete, but NEW would have
/// fed the new branch — its work would be skipped. Refused, unless --allow-unreachable.
#[test]
fn a_side_branch_added_is_skipped_by_runs_past_the_fork_unless_allowed() {
    let old = "name: side
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: split, type: fork}
  - {id: a, type: transform}
  - {id: b, type: transform}
  - {id: both, type: join}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: split.in_data}
  - {from: split.out_a, to: a.in_data}
  - {from: split.out_b, to: b.in_data}
  - {from: a.out_data, to: both.in_a}
  - {from: b.out_data, to: both.in_b}
  - {from: both.out_data, to: out.in_data}
";
    let new = net(&old
        .replace("{id: split, type: fork}", "{id: split, type: fork, params: {arity: 3}}")
        .replace("  - {id: out, type: sink}", "  - {id: out, type: sink}\n  - {id: audit, type: transform}\n  - {id: log, type: sink}")
        .replace(
            "  - {from: both.out_data",
            "  - {from: split.out_c, to: audit.in_data}\n  - {from: audit.out_data, to: log.in_data}\n  - {from: both.out_data",
        ));
    let db = db("side");
    let past = run_to(&db, old, &["src", "split", "a"]);
    let m = migrate(&db.journal, &past, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused, "{m:#?}");
    let p = m.proof.as_ref().unwrap();
    assert!(p.completes());
    assert_eq!(p.reachable, Some(false));
    assert_eq!(p.skipped, ["audit", "log"], "{p:#?}");
    assert!(m.reason.as_deref().unwrap().contains("`audit`"), "{m:#?}");
    let allow = MigrateOptions {
        allow_unreachable: true,
        ..MigrateOptions::default()
    };
    let m = migrate(&db.journal, &past, &new, &[], &allow).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated);
    let (end, cvm) = finish(&db, &past);
    assert_eq!(end, EndState::Completed);
    assert_eq!(
        cvm.fire_count(cvm.net().op_id("audit").unwrap()),
        0,
        "skipped, as said"
    );
    assert_eq!(cvm.received("out").len(), 1);
}

/// Renames: the tokens' connections and the states follow the operator.
#[test]
fn a_renamed_operator_keeps_its_tokens() {
    let old = chain("r", &["a", "b"]);
    let new = net(&chain("r", &["a", "c"]));
    let db = db("rename");
    let id = run_to(&db, &old, &["src", "a"]);
    let m = migrate(&db.journal, &id, &new, &[], &dry()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Refused);
    assert!(
        m.cannot_move[0].contains("`a.out_data -> b.in_data`"),
        "{m:#?}"
    );
    let m = migrate(
        &db.journal,
        &id,
        &new,
        &["b=c".into()],
        &MigrateOptions::default(),
    )
    .unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated, "{m:#?}");
    assert!(
        m.mapping
            .as_ref()
            .unwrap()
            .moved
            .contains(&"a.out_data -> c.in_data".to_owned())
    );
    assert_eq!(finish(&db, &id).0, EndState::Completed);
    // A rename naming an operator that does not exist is invalid input.
    let other = run_to(&db, &old, &["src"]);
    let e = migrate(&db.journal, &other, &new, &["zz=c".into()], &dry()).unwrap_err();
    assert!(e.to_string().contains("`zz`"), "{e}");
}

/// `history` shows the migration with both hashes; going back over it restores OLD at the
/// exact marking; replaying re-applies it; the run then completes on NEW.
#[test]
fn back_over_a_migration_restores_old_and_replay_reapplies_it() {
    let db = db("back");
    let id = run_to(&db, SEQUENCE, &["src"]);
    let before = db
        .journal
        .open_run(&id)
        .unwrap()
        .cvm
        .marking_record()
        .unwrap();
    let old_hash = db.journal.position(&id).unwrap().cm_hash;
    let m = migrate(
        &db.journal,
        &id,
        &net(PARALLEL),
        &[],
        &MigrateOptions::default(),
    )
    .unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated);
    let h = db.journal.history(&id).unwrap();
    let entry = h.entries.last().unwrap();
    let hashes = entry.migration.as_ref().expect("a migration entry");
    assert_eq!(
        (hashes.from.as_str(), hashes.to.as_str()),
        (old_hash.as_str(), m.to.as_str())
    );
    assert_eq!(entry.step, 2);

    // Two steps on NEW, then back over everything.
    {
        let mut r = db.journal.resume(Some(&id)).unwrap();
        r.cvm.step().unwrap();
        r.cvm.step().unwrap();
    }
    db.journal.back_migration(&id).unwrap();
    let back = db.journal.open_run(&id).unwrap();
    assert!(back.cvm.net().op_id("split").is_none(), "on OLD again");
    assert_eq!(back.cvm.marking_record().unwrap(), before);
    assert_eq!(db.journal.position(&id).unwrap().cm_hash, old_hash);
    drop(back);

    db.journal.replay_migration(&id).unwrap();
    let again = db.journal.open_run(&id).unwrap();
    assert!(again.cvm.net().op_id("split").is_some());
    assert_eq!(again.cvm.depth(), 0, "at the migration");
    assert_eq!(
        again.cvm.history().redo_len(),
        2,
        "the steps on NEW wait to be replayed"
    );
    drop(again);
    let (end, cvm) = finish(&db, &id);
    assert_eq!(end, EndState::Completed);
    assert_eq!(cvm.received("out").len(), 1);
    // A second migration entry is not made by going back and forth.
    let h = db.journal.history(&id).unwrap();
    assert_eq!(
        h.entries.iter().filter(|e| e.migration.is_some()).count(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Random (net, edit, instant) triples against an oracle

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Clone, Debug)]
enum Block {
    Task(String),
    /// A fork and a join around two branches; a side branch off the fork, to its own sink.
    Par(usize, Vec<String>, Vec<String>, Option<String>),
    Guard(String),
}

fn to_cm(blocks: &[Block]) -> String {
    let mut ops = vec!["  - {id: src, type: source, params: {value: go}}".to_owned()];
    let mut conns = Vec::new();
    let mut cur = "src.out_data".to_owned();
    let link = |from: &str, to: &str, conns: &mut Vec<String>| {
        conns.push(format!("  - {{from: {from}, to: {to}}}"));
    };
    for b in blocks {
        match b {
            Block::Task(t) => {
                ops.push(format!("  - {{id: {t}, type: transform}}"));
                link(&cur, &format!("{t}.in_data"), &mut conns);
                cur = format!("{t}.out_data");
            }
            Block::Guard(g) => {
                ops.push(format!(
                    "  - {{id: {g}, type: guard, params: {{continue_if: {{not: {{eq: stop}}}}}}}}"
                ));
                ops.push(format!("  - {{id: {g}_exit, type: sink}}"));
                link(&cur, &format!("{g}.in_data"), &mut conns);
                link(
                    &format!("{g}.out_exit"),
                    &format!("{g}_exit.in_data"),
                    &mut conns,
                );
                cur = format!("{g}.out_continue");
            }
            Block::Par(k, a, b, side) => {
                match side {
                    Some(x) => {
                        ops.push(format!(
                            "  - {{id: f{k}, type: fork, params: {{arity: 3}}}}"
                        ));
                        ops.push(format!("  - {{id: {x}, type: transform}}"));
                        ops.push(format!("  - {{id: {x}_end, type: sink}}"));
                        link(&format!("f{k}.out_c"), &format!("{x}.in_data"), &mut conns);
                        link(
                            &format!("{x}.out_data"),
                            &format!("{x}_end.in_data"),
                            &mut conns,
                        );
                    }
                    None => ops.push(format!("  - {{id: f{k}, type: fork}}")),
                }
                ops.push(format!("  - {{id: j{k}, type: join}}"));
                link(&cur, &format!("f{k}.in_data"), &mut conns);
                for (branch, out, inp) in [(a, "out_a", "in_a"), (b, "out_b", "in_b")] {
                    let mut c = format!("f{k}.{out}");
                    for t in branch {
                        ops.push(format!("  - {{id: {t}, type: transform}}"));
                        link(&c, &format!("{t}.in_data"), &mut conns);
                        c = format!("{t}.out_data");
                    }
                    link(&c, &format!("j{k}.{inp}"), &mut conns);
                }
                cur = format!("j{k}.out_data");
            }
        }
    }
    ops.push("  - {id: out, type: sink}".to_owned());
    link(&cur, "out.in_data", &mut conns);
    format!(
        "name: random\noperators:\n{}\nconnections:\n{}\n",
        ops.join("\n"),
        conns.join("\n")
    )
}

fn fresh_id(fresh: &mut usize, prefix: &str) -> String {
    *fresh += 1;
    format!("{prefix}{fresh}")
}

fn random_net(r: &mut Rng, fresh: &mut usize) -> Vec<Block> {
    let n = 2 + r.below(3);
    let mut blocks = Vec::new();
    for _ in 0..n {
        if r.below(3) == 0 {
            *fresh += 1;
            let k = *fresh;
            let a = (0..1 + r.below(2)).map(|_| fresh_id(fresh, "t")).collect();
            let b = (0..r.below(2)).map(|_| fresh_id(fresh, "t")).collect();
            blocks.push(Block::Par(k, a, b, None));
        } else {
            blocks.push(Block::Task(fresh_id(fresh, "t")));
        }
    }
    blocks
}

/// One of the edits; its name.
fn edit(r: &mut Rng, blocks: &mut Vec<Block>, fresh: &mut usize) -> &'static str {
    *fresh += 1;
    let new_id = format!("x{fresh}");
    if r.below(5) == 0
        && let Some(i) = blocks
            .iter()
            .position(|b| matches!(b, Block::Par(_, _, _, None)))
    {
        // Add a side branch to a fork (its own sink: nothing waits for it).
        if let Block::Par(_, _, _, side) = &mut blocks[i] {
            *side = Some(new_id);
        }
        return "add-branch";
    }
    match r.below(4) {
        0 => {
            // Insert an operator in a chain (the top level, or a branch).
            let at = r.below(blocks.len() + 1);
            let into_branch = at < blocks.len() && matches!(blocks[at], Block::Par(..));
            if into_branch && r.below(2) == 0 {
                let i = r.below(3);
                if let Block::Par(_, a, _, _) = &mut blocks[at] {
                    let i = i.min(a.len());
                    a.insert(i, new_id);
                }
            } else {
                blocks.insert(at, Block::Task(new_id));
            }
            "insert"
        }
        1 => {
            // Remove a branch: a parallel block becomes its first branch.
            if let Some(i) = blocks.iter().position(|b| matches!(b, Block::Par(..))) {
                let Block::Par(_, a, _, _) = blocks[i].clone() else {
                    unreachable!()
                };
                blocks.splice(i..=i, a.into_iter().map(Block::Task));
                "remove-branch"
            } else {
                blocks.insert(r.below(blocks.len() + 1), Block::Task(new_id));
                "insert"
            }
        }
        2 => {
            // Reorder two adjacent operators of the top-level chain.
            let pairs: Vec<usize> = (0..blocks.len().saturating_sub(1))
                .filter(|&i| {
                    matches!(
                        (&blocks[i], &blocks[i + 1]),
                        (Block::Task(_), Block::Task(_))
                    )
                })
                .collect();
            if pairs.is_empty() {
                blocks.insert(r.below(blocks.len() + 1), Block::Guard(new_id));
                return "add-guard";
            }
            let i = pairs[r.below(pairs.len())];
            blocks.swap(i, i + 1);
            "reorder"
        }
        _ => {
            blocks.insert(r.below(blocks.len() + 1), Block::Guard(new_id));
            "add-guard"
        }
    }
}

/// The oracle's token game on `net` (connection states 0 EMPTY, 1 NEW, 2 OLD), written from
/// docs/semantics.md's rules for the five operator types the random nets use.
struct Game {
    ops: Vec<GameOp>,
}

/// An operator of the game: its type, inputs, outputs, and what one firing may write.
type GameOp = (String, Vec<usize>, Vec<usize>, Vec<Vec<usize>>);

impl Game {
    fn new(net: &Net) -> Self {
        let ops = net
            .operators()
            .iter()
            .enumerate()
            .map(|(o, node)| {
                let ins: Vec<usize> = (0..net.connections().len())
                    .filter(|&c| net.connections()[c].to.op.index() == o)
                    .collect();
                let outs: Vec<usize> = (0..net.connections().len())
                    .filter(|&c| net.connections()[c].from.op.index() == o)
                    .collect();
                let ty = node.spec.type_id.to_string();
                // What one firing may write: every output, or (a guard) one port's.
                let sets = if ty == "guard" {
                    outs.iter().map(|&c| vec![c]).collect()
                } else {
                    vec![outs.clone()]
                };
                (ty, ins, outs, sets)
            })
            .collect();
        Game { ops }
    }

    fn successors(&self, s: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (ty, ins, outs, sets) in &self.ops {
            let enabled = match ty.as_str() {
                "source" => outs.iter().all(|&c| s[c] == 0),
                "join" => ins.iter().all(|&c| s[c] == 1),
                _ => !ins.is_empty() && ins.iter().all(|&c| s[c] == 1),
            } && outs.iter().all(|&c| s[c] != 1);
            if !enabled {
                continue;
            }
            for set in sets {
                let mut t = s.to_vec();
                for &c in ins {
                    t[c] = 2;
                }
                for &c in set {
                    t[c] = 1;
                }
                out.push(t);
            }
        }
        out
    }

    fn reachable(&self, from: Vec<u8>) -> HashSet<Vec<u8>> {
        let mut seen = HashSet::from([from.clone()]);
        let mut queue = VecDeque::from([from]);
        while let Some(s) = queue.pop_front() {
            for t in self.successors(&s) {
                if seen.insert(t.clone()) {
                    queue.push_back(t);
                }
            }
        }
        seen
    }

    /// From `from`: no reachable dead end holds a NEW token, and every state reaches a
    /// completed one.
    fn completes(&self, from: Vec<u8>) -> bool {
        let all = self.reachable(from);
        let done = |s: &Vec<u8>| self.successors(s).is_empty() && !s.contains(&1);
        let mut good: HashSet<Vec<u8>> = all.iter().filter(|s| done(s)).cloned().collect();
        loop {
            let more: Vec<Vec<u8>> = all
                .iter()
                .filter(|s| !good.contains(*s))
                .filter(|s| self.successors(s).iter().any(|t| good.contains(t)))
                .cloned()
                .collect();
            if more.is_empty() {
                break;
            }
            good.extend(more);
        }
        all.len() == good.len()
    }
}

#[test]
fn random_migrations_agree_with_an_oracle_and_accepted_ones_complete() {
    let db = db("random");
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut tally: HashMap<&'static str, usize> = HashMap::new();
    for trial in 0..120 {
        let mut fresh = 0;
        let blocks = random_net(&mut r, &mut fresh);
        let mut changed = blocks.clone();
        let what = edit(&mut r, &mut changed, &mut fresh);
        let (old_cm, new_cm) = (to_cm(&blocks), to_cm(&changed));
        let new = net(&new_cm);

        // The instant: a random interleaving of the OLD run, some steps in.
        let mut cvm = Cvm::new(net(&old_cm));
        let id = db.journal.start(&mut cvm, &RunOptions::default()).unwrap();
        let steps = r.below(12);
        for _ in 0..steps {
            let ready = cvm.fireable_ids();
            if ready.is_empty() {
                break;
            }
            cvm.fire_op(ready[r.below(ready.len())]).unwrap();
        }
        let marking = cvm.marking();
        let old = net(&old_cm);
        drop(cvm);

        // The oracle: map by connection name, explore NEW by brute force.
        let names: HashMap<&str, usize> = new
            .connections()
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_str(), i))
            .collect();
        let mut mapped = vec![0u8; new.connections().len()];
        let mut stuck = false;
        for (c, (state, _)) in marking.0.iter().enumerate() {
            let code = match state {
                ConnState::Empty => continue,
                ConnState::New => 1,
                ConnState::Old => 2,
            };
            match names.get(old.connections()[c].name.as_str()) {
                Some(&t) => mapped[t] = code,
                None => stuck = true,
            }
        }
        let game = Game::new(&new);
        let expect_reachable = game.reachable(vec![0; mapped.len()]).contains(&mapped);
        let expect_completes = !stuck && game.completes(mapped.clone());
        let expect = if stuck {
            "cannot-move"
        } else if !expect_completes {
            "fails-a"
        } else if !expect_reachable {
            "unreachable"
        } else {
            "accepted"
        };

        let m = migrate(&db.journal, &id, &new, &[], &dry()).unwrap();
        let got = match (&m.verdict, &m.proof) {
            (MigrationVerdict::Accepted, _) => "accepted",
            (MigrationVerdict::Refused, None) => "cannot-move",
            (MigrationVerdict::Refused, Some(p)) if !p.completes() => "fails-a",
            (MigrationVerdict::Refused, Some(_)) => "unreachable",
            other => panic!("trial {trial}: unexpected {other:?}"),
        };
        assert_eq!(
            got, expect,
            "trial {trial} ({what}, {steps} steps):\nOLD\n{old_cm}\nNEW\n{new_cm}\n{m:#?}"
        );
        if let Some(p) = &m.proof {
            assert_eq!(p.reachable, Some(expect_reachable), "trial {trial}");
            assert_eq!(p.completes(), expect_completes, "trial {trial}");
        }
        *tally.entry(expect).or_default() += 1;
        *tally.entry(what).or_default() += 1;

        if got == "accepted" {
            let m = migrate(&db.journal, &id, &new, &[], &MigrateOptions::default()).unwrap();
            assert_eq!(m.verdict, MigrationVerdict::Migrated);
            let (end, cvm) = finish(&db, &id);
            assert_eq!(end, EndState::Completed, "trial {trial}");
            assert_eq!(cvm.net().operators().len(), new.operators().len());
            // Resumed from the mapped marking, not from the start: the source fires on NEW
            // only if it had not fired on OLD.
            let fired_before = marking.0[0].0 != ConnState::Empty;
            let src = cvm.net().op_id("src").unwrap();
            assert_eq!(
                cvm.fire_count(src),
                u32::from(!fired_before),
                "trial {trial}"
            );
        }
    }
    // Every kind of edit and every verdict came up.
    for k in [
        "insert",
        "remove-branch",
        "reorder",
        "add-guard",
        "add-branch",
        "accepted",
        "unreachable",
        "cannot-move",
    ] {
        assert!(tally.get(k).copied().unwrap_or(0) >= 3, "{k}: {tally:?}");
    }
}
