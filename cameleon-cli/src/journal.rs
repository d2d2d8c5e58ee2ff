//! `cameleon resume`, `runs` and `history`: durable runs in a journal file (docs/cli.md).

use serde_json::json;

use super::run::{Output, answers_for, drive_and_report, journal_failed, set_budget};
use super::{HistoryArgs, Io, ResumeArgs, RunsArgs, exit, report_invalid};
use cameleon::capabilities::CapabilitiesError;
use cameleon::engine::EndState;
use cameleon::journal::{Journal, ResumeOptions};

/// `resume DB [RUN_ID]`: continues the run (or the most recently started unfinished one); a
/// finished run is reported as it ended, firing nothing.
pub(super) fn resume(a: &ResumeArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    // The run goes on with the capabilities its folder gives now: the process that pinned
    // the old generation is gone, and this one numbers its own from 1. They are pinned before
    // the entries are restored, so what a replay puts back into a memory (an `index` firing's
    // items) is there when the run goes on.
    // With `--nats`, its `placement: remote` instances fire on satellites again.
    let connected = match crate::satellite::connect(&a.nats, io)? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut failed = None;
    let pin = |net: &mut cameleon::Net, base: &std::path::Path| {
        let mut builder = crate::trust::sources(base, a.capabilities.as_deref(), &a.grant);
        if let Some(c) = &connected {
            c.remote.place(net);
            builder = builder.source(c.source());
        }
        match builder.build() {
            Ok(rt) => rt.pin(net, base)
                as std::sync::Arc<dyn cameleon::operator::capability::Capabilities>,
            Err(e) => {
                failed = Some(e);
                <dyn cameleon::operator::capability::Capabilities>::none()
            }
        }
    };
    let bus = crate::bus::url(&a.db);
    let store = match bus {
        Some(url) => match crate::bus::open(url, &a.nats, a.lease_ms) {
            Ok(j) => Store::Bus(Box::new(j)),
            Err(e) => return journal_failed(&e, a.json, io),
        },
        None => match Journal::open(&a.db) {
            Ok(j) => Store::File(j),
            Err(e) => return journal_failed(&e, a.json, io),
        },
    };
    let opts = match &store {
        Store::File(journal) => match folder(journal, a, io)? {
            Ok(opts) => opts,
            Err(code) => return Ok(code),
        },
        // A journal on the bus names no folder this process trusts: the run goes on in
        // `--base DIR`, else the current directory (docs/security.md).
        Store::Bus(_) => ResumeOptions {
            base_dir: Some(
                a.base
                    .clone()
                    .unwrap_or_else(|| std::path::PathBuf::from(".")),
            ),
            allow_outside: a.allow_outside,
        },
    };
    // The stored net names the satellites' operator types and tools as the run did.
    let names = match &connected {
        Some(c) => match c.names(io)? {
            Ok(n) => n,
            Err(code) => return Ok(code),
        },
        None => cameleon::journal::Names::default(),
    };
    let dir = opts
        .base_dir
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let names = crate::net_tools::with_net_tools(names, &dir, a.capabilities.as_deref());
    let mut lease = None;
    let resumed = match &store {
        Store::File(journal) => journal.resume_with_names(a.run_id.as_deref(), &opts, &names, pin),
        Store::Bus(journal) => journal
            .resume(a.run_id.as_deref(), &opts, &names, Box::new(pin))
            .map(|(r, l)| {
                lease = l;
                r
            }),
    };
    match failed {
        Some(CapabilitiesError::File(e)) => {
            report_invalid(&e, a.json, io)?;
            return Ok(exit::INVALID);
        }
        Some(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
        None => {}
    }
    let resumed = match resumed {
        Ok(r) => r,
        Err(e) => return journal_failed(&e, a.json, io),
    };
    writeln!(io.stderr, "run {}", resumed.id)?;
    io.stderr.flush()?;
    let finished = resumed.is_finished();
    // Held until the run stops going on here (dropped when this function returns).
    let _lock = resumed.lock;
    let _lease = lease;
    let (id, name, mut cvm, end) = (resumed.id, resumed.name, resumed.cvm, resumed.end);
    // A run stopped by its budget goes on under a budget given here; without one, it is
    // reported as it stopped (docs/cli.md).
    let raised = set_budget(&cvm, a.budget, a.budget_usd);
    let ended = match end {
        Some(e @ EndState::Budget { .. }) if !raised => Some(e),
        end => end.filter(|_| finished),
    };
    if ended.is_none()
        && let Some(token) = &io.interrupt
    {
        cvm.set_cancel_token(token.clone());
    }
    let out = Output {
        name: &name,
        trace: a.trace.as_deref(),
        json: a.json,
        run_id: Some(&id),
        stream: false,
    };
    let mut answers = match answers_for(&mut cvm, &a.answer, a.answers.as_deref(), io)? {
        Ok(ans) => ans,
        Err(code) => return Ok(code),
    };
    drive_and_report(&mut cvm, ended, &out, &mut answers, io)
}

/// A journal file, or a journal on NATS JetStream.
enum Store {
    File(Journal),
    Bus(Box<cameleon_nats::JetStreamJournal>),
}

/// Where the resumed run goes on: `--base DIR`, else the folder the journal recorded if it lies
/// inside the journal file's own folder; never allowed outside unless `--allow-outside` is
/// given again. `Err`: the exit code of a refusal, reported.
fn folder(
    journal: &Journal,
    a: &ResumeArgs,
    io: &mut Io<'_>,
) -> std::io::Result<Result<ResumeOptions, i32>> {
    let recorded = match journal.recorded_folder(a.run_id.as_deref()) {
        Ok(r) => r,
        Err(e) => return journal_failed(&e, a.json, io).map(Err),
    };
    if recorded.allow_outside && !a.allow_outside {
        writeln!(
            io.stderr,
            "note: run {} was started with --allow-outside; it goes on without it (give --allow-outside again to let it read outside its folder)",
            recorded.id
        )?;
    }
    let base_dir = match (&a.base, &recorded.base_dir) {
        (Some(dir), _) => Some(dir.clone()),
        (None, None) => None,
        (None, Some(dir)) => {
            let home = cameleon::cm::folder_of(&a.db);
            let inside = match (dir.canonicalize(), home.canonicalize()) {
                (Ok(d), Ok(h)) => d.starts_with(&h),
                _ => false,
            };
            if !inside {
                let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
                let shown = real.display();
                let message = format!(
                    "run {} was started in `{shown}`, which is not inside the journal's folder `{}`: a journal file does not choose where a run may read and write; if `{shown}` is right, resume with `--base {shown}`",
                    recorded.id,
                    home.display()
                );
                writeln!(io.stderr, "error: {message}")?;
                if a.json {
                    writeln!(io.stdout, "{}", json!({ "error": message }))?;
                }
                return Ok(Err(exit::INVALID));
            }
            Some(dir.clone())
        }
    };
    Ok(Ok(ResumeOptions {
        base_dir,
        allow_outside: a.allow_outside,
    }))
}

/// `runs DB`: every run, newest first.
pub(super) fn runs(a: &RunsArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    if let Some(id) = &a.delete {
        return delete(a, id, io);
    }
    let listed = match crate::bus::url(&a.db) {
        Some(url) => crate::bus::open(url, &a.nats, 30_000).and_then(|j| j.runs()),
        None => Journal::open(&a.db).and_then(|j| j.runs()),
    };
    let runs = match listed {
        Ok(r) => r,
        Err(e) => return journal_failed(&e, a.json, io),
    };
    if a.json {
        writeln!(io.stdout, "{}", json!(runs))?;
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(io.stdout, "no runs in `{}`", a.db.display())?;
        return Ok(exit::OK);
    }
    let width = runs
        .iter()
        .map(|r| r.status.len())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln!(
        io.stdout,
        "{:<36}  {:<width$}  {:>6}  {:<24}  NAME",
        "ID", "STATUS", "STEPS", "STARTED (UTC)"
    )?;
    for r in &runs {
        writeln!(
            io.stdout,
            "{:<36}  {:<width$}  {:>6}  {:<24}  {}",
            r.id, r.status, r.steps, r.started, r.name
        )?;
    }
    Ok(exit::OK)
}

/// `runs DB --delete RUN_ID [--force]`: the run's records are deleted (docs/journal.md
/// "Retention"). Exit 0 deleted, 2 unknown, refused or the journal failed.
fn delete(a: &RunsArgs, id: &str, io: &mut Io<'_>) -> std::io::Result<i32> {
    let deleted = match crate::bus::url(&a.db) {
        Some(url) => crate::bus::open(url, &a.nats, 30_000).and_then(|j| j.delete(id, a.force)),
        None => Journal::open(&a.db).and_then(|j| j.delete(id, a.force)),
    };
    if let Err(e) = deleted {
        return journal_failed(&e, a.json, io);
    }
    if a.json {
        writeln!(io.stdout, "{}", json!({ "deleted": id }))?;
    } else {
        writeln!(io.stdout, "deleted run {id} from `{}`", a.db.display())?;
    }
    Ok(exit::OK)
}

/// `history DB RUN_ID`: the run's history tree, entry by entry, and its branches.
pub(super) fn history(a: &HistoryArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let read = match crate::bus::url(&a.db) {
        Some(url) => crate::bus::open(url, &a.nats, 30_000).and_then(|j| j.history(&a.run_id)),
        None => Journal::open(&a.db).and_then(|j| j.history(&a.run_id)),
    };
    let h = match read {
        Ok(h) => h,
        Err(e) => return journal_failed(&e, a.json, io),
    };
    if a.json {
        writeln!(io.stdout, "{}", json!(h))?;
        return Ok(exit::OK);
    }
    if h.entries.is_empty() {
        writeln!(io.stdout, "run {}: no step recorded", a.run_id)?;
        return Ok(exit::OK);
    }
    writeln!(io.stdout, "{:>6}  {:>6}  OPERATORS", "STEP", "BRANCH")?;
    for e in &h.entries {
        let what = match &e.migration {
            Some(m) => format!("MIGRATED net {} -> {}", m.from, m.to),
            None => e.ops.join(", "),
        };
        writeln!(io.stdout, "{:>6}  {:>6}  {what}", e.step, e.branch)?;
    }
    writeln!(io.stdout)?;
    for b in &h.branches {
        writeln!(
            io.stdout,
            "branch {}: steps {}–{}{}",
            b.branch,
            b.from_step,
            b.steps,
            if b.current { " (current)" } else { "" }
        )?;
    }
    Ok(exit::OK)
}
