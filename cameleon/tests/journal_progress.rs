//! A run's position in the journal (journal schema 4): a step that appends an entry and
//! applies it does not rewrite the run's progress row; the `progress` view reads the position
//! from the newest entry then, and from the row after a backward step, a replay or the end.
//! Every reader (resume, the history, the run list) sees the position the engine had; an
//! `UPDATE` of the view goes to the row.

use cameleon::journal::{Durability, Journal, RunOptions};
use cameleon::prelude::*;

fn net() -> Net {
    Net::from_cm(
        "config: {max_loop_iterations: 1000}
operators:
  - {id: zero, type: const, params: {value: 0}}
  - {id: m, type: merge}
  - {id: inc, type: counter}
  - {id: g, type: guard, params: {continue_if: {lt: 5}}}
  - {id: out, type: sink}
connections:
  - {from: zero.out_data, to: m.in_a}
  - {from: m.out_data, to: inc.in_data}
  - {from: inc.out_data, to: g.in_data}
  - {from: g.out_continue, to: m.in_b}
  - {from: g.out_exit, to: out.in_data}
",
    )
    .unwrap()
}

type Pos = (Option<i64>, i64, Option<i64>);

/// `(tip, steps, redo_tip)` of the run, from the `progress` view and from the row.
fn positions(db: &std::path::Path) -> (Pos, Pos) {
    let c = rusqlite::Connection::open(db).unwrap();
    let get = |sql: &str| -> Pos {
        c.query_row(sql, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
    };
    (
        get("SELECT tip, steps, redo_tip FROM progress"),
        get("SELECT tip, steps, redo_tip FROM progress_row"),
    )
}

#[test]
fn the_progress_view_follows_steps_the_row_is_not_rewritten_for() {
    let dir = test_support::TempDir::new("journal-progress");
    let db = dir.join("runs.db");
    let journal = Journal::create(&db).unwrap();
    let mut cvm = Cvm::new(net());
    let id = journal
        .start(
            &mut cvm,
            &RunOptions {
                durability: Durability::Sync,
                ..RunOptions::default()
            },
        )
        .unwrap();
    for _ in 0..4 {
        cvm.step().unwrap();
    }
    let (view, row) = positions(&db);
    assert_eq!(view, (Some(3), 4, None), "the newest entry, applied");
    assert_ne!(row, view, "the row was not rewritten by each step");

    // Back: the row says where the run is, and the future it may replay.
    cvm.back().unwrap();
    let (view, row) = positions(&db);
    assert_eq!(view, (Some(2), 3, Some(3)));
    assert_eq!(row, view);
    // A forward replay moves back to the newest entry: written, as any move.
    cvm.step().unwrap();
    assert_eq!(positions(&db).0, (Some(3), 4, None));
    // Back twice and a new step (a second branch): the newest entry again.
    cvm.back().unwrap();
    cvm.back().unwrap();
    cvm.refire().unwrap();
    let (view, _) = positions(&db);
    assert_eq!(view, (Some(4), 3, None));
    assert_eq!(cvm.depth(), 3);
    cvm.step().unwrap();
    assert_eq!(positions(&db).0, (Some(5), 4, None));
    drop(cvm);

    // Resumed (the engine dropped mid-run, as in a crash): where the view says.
    let r = journal.resume(Some(&id)).unwrap();
    assert_eq!(r.cvm.depth(), 4);
    assert_eq!(r.cvm.branches().len(), 2);
    let listed = journal.runs().unwrap();
    assert_eq!(listed[0].status, "RUNNING");
    let mut cvm = r.cvm;
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    drop(cvm);
    assert_eq!(journal.runs().unwrap()[0].status, "COMPLETED");
    let (view, _) = positions(&db);
    let steps = view.1;
    let r = journal.resume(Some(&id)).unwrap();
    assert_eq!(r.cvm.depth() as i64, steps);
    drop(r);

    // A tool of its own that updates `progress` (the view) updates the row.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE progress SET status = 'RUNNING'", [])
        .unwrap();
    let status: String = c
        .query_row("SELECT status FROM progress_row", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "RUNNING");
    assert_eq!(positions(&db).0, view, "the position as it was");
}
