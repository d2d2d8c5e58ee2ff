//! `cameleon resume`, `runs` and `history`: durable runs in a journal file (docs/cli.md).

use serde_json::json;

use super::run::{Output, answers_for, drive_and_report, journal_failed};
use super::{HistoryArgs, Io, ResumeArgs, RunsArgs, exit, report_invalid};
use cameleon::capabilities::CapabilitiesError;
use cameleon::journal::Journal;

/// `resume DB [RUN_ID]`: continues the run (or the most recently started unfinished one); a
/// finished run is reported as it ended, firing nothing.
pub(super) fn resume(a: &ResumeArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    // The run goes on with the capabilities its folder gives now: the process that pinned
    // the old generation is gone, and this one numbers its own from 1. They are pinned before
    // the entries are restored, so what a replay puts back into a memory (an `index` firing's
    // items) is there when the run goes on.
    let mut failed = None;
    let pin = |net: &cameleon::Net, base: &std::path::Path| match crate::trust::sources(
        base,
        a.capabilities.as_deref(),
        &a.grant,
    )
    .build()
    {
        Ok(rt) => {
            rt.pin(net, base) as std::sync::Arc<dyn cameleon::operator::capability::Capabilities>
        }
        Err(e) => {
            failed = Some(e);
            <dyn cameleon::operator::capability::Capabilities>::none()
        }
    };
    let resumed = Journal::open(&a.db).and_then(|j| j.resume_with(a.run_id.as_deref(), pin));
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
    let (id, name, mut cvm, end) = (resumed.id, resumed.name, resumed.cvm, resumed.end);
    let ended = end.filter(|_| finished);
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
    };
    let mut answers = match answers_for(&mut cvm, &a.answer, a.answers.as_deref(), io)? {
        Ok(ans) => ans,
        Err(code) => return Ok(code),
    };
    drive_and_report(&mut cvm, ended, &out, &mut answers, io)
}

/// `runs DB`: every run, newest first.
pub(super) fn runs(a: &RunsArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let runs = match Journal::open(&a.db).and_then(|j| j.runs()) {
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

/// `history DB RUN_ID`: the run's history tree, entry by entry, and its branches.
pub(super) fn history(a: &HistoryArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let h = match Journal::open(&a.db).and_then(|j| j.history(&a.run_id)) {
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
        writeln!(
            io.stdout,
            "{:>6}  {:>6}  {}",
            e.step,
            e.branch,
            e.ops.join(", ")
        )?;
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
