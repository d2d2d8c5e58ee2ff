//! `cameleon migrate` (a journaled run moved onto a changed net, proved safe first) and
//! `cameleon check NEW.cm --against OLD.cm` (the safe change region): docs/migration.md.

use serde_json::json;

/// `cameleon migrate --help`'s text after the options.
pub(super) const HELP: &str = "\
The run's marking maps onto the new net by connection (`from.op.port -> to.op.port`, same data
type) and operator id (--rename for the ones renamed); operators' states move when the type is
the same. Before anything moves the verifier decides, on the new net: (a) from the mapped
marking no run deadlocks and every run can complete; (b) the new net itself reaches that marking
from its initial marking (else some operator's work would be skipped or done twice). The
migration is one history entry of the run (`history` shows both nets' hashes); `resume` goes on
on the new net; --back and --replay go back and forth over it. docs/migration.md.

Exit codes: 0 migrated (or accepted, with --dry-run), 3 refused (what cannot move, or the
witness), 2 invalid (file, journal, run, --rename).

Examples:
  cameleon migrate runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11 --to review_v2.cm --dry-run
  cameleon migrate runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11 --to review_v2.cm --rename check=review
  cameleon migrate runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11 --back";

use super::run::journal_failed;
use super::{CheckArgs, Io, MigrateArgs, exit};
use cameleon::journal::Journal;
use cameleon::migrate::{
    MigrateError, MigrateOptions, Migration, MigrationVerdict, migrate as run_migration,
    parse_renames,
};
use cameleon::net::Net;
use cameleon::verify::{VerifyOptions, safe_region};

pub(super) fn migrate(a: &MigrateArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let journal = match Journal::open(&a.db) {
        Ok(j) => j,
        Err(e) => return journal_failed(&e, a.json, io),
    };
    if a.back || a.replay {
        let done = if a.back {
            journal.back_migration(&a.run_id)
        } else {
            journal.replay_migration(&a.run_id)
        };
        return match done.and_then(|()| journal.position(&a.run_id)) {
            Ok(at) => {
                if a.json {
                    writeln!(
                        io.stdout,
                        "{}",
                        json!({ "run": a.run_id, "net": at.cm_hash, "tip": at.tip })
                    )?;
                } else {
                    writeln!(
                        io.stdout,
                        "run {}: {} the migration; now on net {} (`cameleon resume` goes on there)",
                        a.run_id,
                        if a.back {
                            "went back over"
                        } else {
                            "re-applied"
                        },
                        at.cm_hash
                    )?;
                }
                Ok(exit::OK)
            }
            Err(e) => journal_failed(&e, a.json, io),
        };
    }
    let Some(to) = &a.to else {
        writeln!(io.stderr, "error: --to NEW.cm is required")?;
        return Ok(exit::INVALID);
    };
    let new = match crate::satellite::load(to, false, a.json, None, None, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    let opts = MigrateOptions {
        allow_unreachable: a.allow_unreachable,
        dry_run: a.dry_run,
        ..MigrateOptions::default()
    };
    let m = match run_migration(&journal, &a.run_id, &new, &a.rename, &opts) {
        Ok(m) => m,
        Err(MigrateError::Journal(e)) => return journal_failed(&e, a.json, io),
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            if a.json {
                writeln!(io.stdout, "{}", json!({ "error": e.to_string() }))?;
            }
            return Ok(exit::INVALID);
        }
    };
    if a.json {
        writeln!(io.stdout, "{}", json!(m))?;
    } else {
        show(&m, io)?;
    }
    Ok(m.exit_code())
}

/// The text form of a migration's outcome.
fn show(m: &Migration, io: &mut Io<'_>) -> std::io::Result<()> {
    let what = match m.verdict {
        MigrationVerdict::Migrated => "MIGRATED",
        MigrationVerdict::Accepted => "ACCEPTED (dry run: nothing recorded)",
        MigrationVerdict::Refused => "REFUSED",
    };
    writeln!(
        io.stdout,
        "run {}: {what}, net {} -> {}",
        m.run, m.from, m.to
    )?;
    if let Some(r) = &m.reason {
        writeln!(io.stdout, "  because {r}")?;
    }
    for c in &m.cannot_move {
        writeln!(io.stdout, "  cannot move: {c}")?;
    }
    if let Some(map) = &m.mapping {
        if !map.moved.is_empty() {
            writeln!(io.stdout, "  tokens moved: {}", ticks(&map.moved))?;
        }
        if !map.carried.is_empty() {
            writeln!(io.stdout, "  states carried: {}", ticks(&map.carried))?;
        }
        for l in &map.left {
            writeln!(io.stdout, "  left behind: {l}")?;
        }
    }
    if let Some(p) = &m.proof {
        let yes = |h: Option<bool>| match h {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "unknown (state budget)",
        };
        writeln!(
            io.stdout,
            "  (a) deadlock-free from the mapped marking: {}; option to complete: {}",
            yes(p.deadlock_free.holds),
            yes(p.option_to_complete.holds)
        )?;
        for c in [&p.deadlock_free, &p.option_to_complete] {
            if let Some(w) = &c.witness {
                writeln!(io.stdout, "      witness: {}", w.join(" "))?;
            }
        }
        writeln!(
            io.stdout,
            "  (b) the new net reaches the mapped marking itself: {}",
            yes(p.reachable)
        )?;
        if let Some(w) = &p.reached_by {
            writeln!(
                io.stdout,
                "      by: {}",
                if w.is_empty() {
                    "(its initial marking)".to_owned()
                } else {
                    w.join(" ")
                }
            )?;
        }
        if let Some(e) = &p.explanation {
            writeln!(io.stdout, "      {e}")?;
        }
    }
    if let Some(n) = m.entry {
        writeln!(
            io.stdout,
            "  recorded as history entry #{n}; `cameleon resume` goes on on the new net"
        )?;
    }
    Ok(())
}

fn ticks(v: &[String]) -> String {
    v.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `check NEW.cm --against OLD.cm`: the safe change region. Exit 0 when every reachable state
/// of OLD migrates safely, 3 when some does not, 2 invalid.
pub(super) fn against(new: &Net, a: &CheckArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let Some(old_path) = &a.against else {
        return Ok(exit::INVALID);
    };
    let old =
        match crate::satellite::load(old_path, false, a.json, None, a.capabilities.as_deref(), io)?
        {
            Ok(net) => net,
            Err(code) => return Ok(code),
        };
    let renames = match parse_renames(&a.rename, &old, new) {
        Ok(r) => r,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let region = safe_region(&old, new, &renames, &VerifyOptions::default());
    if a.json {
        let mut v = json!(region);
        if let Some(m) = v.as_object_mut() {
            m.insert("file".into(), json!(a.file.display().to_string()));
            m.insert("against".into(), json!(old_path.display().to_string()));
        }
        writeln!(io.stdout, "{v}")?;
    } else {
        writeln!(
            io.stdout,
            "{} against {}: {} ({} of {} reachable states of OLD migrate safely{})",
            a.file.display(),
            old_path.display(),
            region.summary,
            region.safe_states,
            region.states.len(),
            if region.complete {
                ""
            } else {
                "; the state budget stopped the exploration"
            }
        )?;
        for s in region.states.iter().filter(|s| !s.safe) {
            writeln!(
                io.stdout,
                "  unsafe with tokens on {}: {}",
                if s.tokens.is_empty() {
                    "no connection".to_owned()
                } else {
                    ticks(&s.tokens)
                },
                s.why.as_deref().unwrap_or("")
            )?;
        }
    }
    Ok(if region.always_safe {
        exit::OK
    } else {
        exit::DEADLOCK
    })
}
