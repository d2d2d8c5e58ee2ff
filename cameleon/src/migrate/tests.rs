//! The migration's one transaction: a failure before its commit leaves the journal as it was.

use super::*;
use crate::journal::RunOptions;

const OLD: &str = "name: doc
operators:
  - {id: src, type: source, params: {value: x}}
  - {id: draft, type: transform}
  - {id: out, type: sink}
connections:
  - {from: src.out_data, to: draft.in_data}
  - {from: draft.out_data, to: out.in_data}
";

#[test]
fn a_failure_before_the_commit_leaves_the_journal_untouched() {
    let dir = test_support::TempDir::new("migrate-rollback");
    let journal = Journal::create(dir.join("j.db")).unwrap();
    let mut cvm = Cvm::new(Net::from_cm(OLD).unwrap());
    let id = journal.start(&mut cvm, &RunOptions::default()).unwrap();
    cvm.step().unwrap();
    drop(cvm);
    let new =
        Net::from_cm(&OLD.replace("type: transform", "type: transform, label: Draft")).unwrap();
    let snapshot = |j: &Journal| {
        let runs = j.runs().unwrap();
        (j.position(&id).unwrap(), j.history(&id).unwrap(), runs)
    };
    let before = snapshot(&journal);
    let e = migrate_then(
        &journal,
        &id,
        &new,
        &[],
        &MigrateOptions::default(),
        &|| Err("injected before the commit".into()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("injected"), "{e}");
    assert_eq!(snapshot(&journal), before);
    // The run goes on on OLD, and migrates when nothing fails.
    let m = migrate(&journal, &id, &new, &[], &MigrateOptions::default()).unwrap();
    assert_eq!(m.verdict, MigrationVerdict::Migrated, "{m:#?}");
    assert_ne!(snapshot(&journal).0, before.0);
    assert_eq!(journal.history(&id).unwrap().entries.len(), 2);
}
