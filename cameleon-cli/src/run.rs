//! `cameleon run`: run to a terminal state, report it, optionally trace every firing.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value as Json, json};

use super::answers::{self, Answers};
use super::report::{RunReport, TraceLines, TraceSink};
use super::{DurabilityArg, Io, RunArgs, display_name, exit, report_invalid};
use cameleon::capabilities::CapabilitiesError;
use cameleon::cm::folder_of;
use cameleon::engine::{Cvm, EndState, Event, Step, StepError};
use cameleon::journal::{Durability, Journal, JournalError, RunOptions};
use cameleon::net::Net;
use cameleon::operator::capability::{Budget, Usd};
use cameleon::verify;

/// Runs `cvm` to an end state, with a progress bar on stderr when `progress`, writing each
/// committed step to `trace`.
fn drive(
    cvm: &mut Cvm,
    progress: bool,
    mut trace: Option<&mut TraceSink<'_>>,
) -> Result<EndState, StepError> {
    let bar = if progress {
        let b =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {pos} steps {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(Duration::from_millis(120));
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    if progress {
        // The operators now running, from the engine's event stream (several in parallel mode).
        let shown = bar.clone();
        let mut running: Vec<String> = Vec::new();
        cvm.on_event(move |e| match e {
            Event::FiringStarted { op, .. } => {
                running.push(op.clone());
                shown.set_message(running_message(&running));
            }
            Event::FiringFinished { op, .. } => {
                running.retain(|r| r != op);
                shown.set_message(running_message(&running));
            }
            Event::StepCommitted { step, .. } => shown.set_position(u64::from(*step)),
            Event::StepDiscarded { .. } => {
                running.clear();
                shown.set_message(String::new());
            }
            _ => {}
        });
    }
    let mut n = 0u64;
    let cancel = cvm.cancel_token();
    let end = loop {
        if cancel.is_cancelled() {
            // A journaled run records that it was interrupted (the engine decides other ends).
            if let Err(e) = cvm.record_end(&EndState::Cancelled) {
                bar.finish_and_clear();
                return Err(e);
            }
            break EndState::Cancelled;
        }
        match cvm.step() {
            Ok(Step::Fired { .. }) => {
                if let Some(t) = trace.as_deref_mut() {
                    t.step(cvm);
                }
                n += 1;
                if n.is_multiple_of(512) {
                    bar.set_position(n);
                }
            }
            Ok(Step::Ended(end)) => break end,
            Err(StepError::Operator { op, error }) => {
                break EndState::Error {
                    op,
                    error: error.to_string(),
                };
            }
            Err(other) => {
                bar.finish_and_clear();
                return Err(other);
            }
        }
    };
    bar.finish_and_clear();
    if progress {
        cvm.clear_observer();
    }
    Ok(end)
}

/// `running fetch, summarize, +3` for the progress line.
fn running_message(running: &[String]) -> String {
    match running.len() {
        0 => String::new(),
        n if n <= 3 => format!("running {}", running.join(", ")),
        n => format!("running {}, +{}", running[..3].join(", "), n - 3),
    }
}

pub(super) fn run(a: &RunArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    // With `--nats`, the satellites' tools are known before the file is read: it may name them.
    let connected = if a.follow.is_none() {
        match crate::satellite::connect(&a.nats, io)? {
            Ok(c) => c,
            Err(code) => return Ok(code),
        }
    } else {
        None
    };
    let mut net = match crate::satellite::load(
        &a.file,
        a.allow_outside,
        a.json,
        connected.as_ref(),
        a.capabilities.as_deref(),
        io,
    )? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    if let Some(witness) = &a.follow {
        return follow(&net, witness, a.json, io);
    }
    let name = display_name(&net, &a.file);
    let mut builder =
        crate::trust::sources(&folder_of(&a.file), a.capabilities.as_deref(), &a.grant);
    if let Some(c) = &connected {
        c.remote.place(&mut net);
        builder = builder.source(c.source());
    }
    let rt = match builder.build() {
        Ok(rt) => rt,
        Err(CapabilitiesError::File(e)) => {
            report_invalid(&e, a.json, io)?;
            return Ok(exit::INVALID);
        }
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let mut b = rt.cvm(net, folder_of(&a.file));
    if let Some(m) = a.mode {
        b = b.mode(m.into());
    }
    if let Some(n) = a.max_steps {
        b = b.max_steps(n);
    }
    if let Some(n) = a.max_loop_iterations {
        b = b.max_loop_iterations(n);
    }
    if let Some(token) = &io.interrupt {
        b = b.cancel_token(token.clone());
    }
    let mut cvm = b.build();
    if let Some(arg) = &a.reuse {
        match crate::reuse::open_reuse(arg, false, &a.nats) {
            Ok(reuse) => cvm.set_reuse(Some(reuse)),
            Err(e) => {
                writeln!(io.stderr, "error: --reuse: {e}")?;
                return Ok(exit::INVALID);
            }
        }
    }
    set_budget(&cvm, a.budget, a.budget_usd);
    let mut answers = match answers_for(&mut cvm, &a.answer, a.answers.as_deref(), io)? {
        Ok(ans) => ans,
        Err(code) => return Ok(code),
    };
    let mut run_id = None;
    let mut _lock = None;
    if let Some(db) = &a.journal {
        // The net's types and tools resolve as they did here when it is loaded back: with the
        // satellites', under `--nats`.
        let names = match &connected {
            Some(c) => match c.names(io)? {
                Ok(n) => n,
                Err(code) => return Ok(code),
            },
            None => cameleon::journal::Names::default(),
        };
        let names = crate::net_tools::with_net_tools(
            names,
            &cameleon::cm::folder_of(&a.file),
            a.capabilities.as_deref(),
        );
        let opts = RunOptions {
            durability: durability(a),
            name: Some(name.clone()),
            base_dir: Some(folder_of(&a.file)),
            allow_outside: a.allow_outside,
            generation: Some(cvm.generation()),
            names,
        };
        // Held to the end: no `resume` goes on with this run while it runs here (a lock file
        // beside a SQLite journal; a lease on a `nats://` one).
        let started = match crate::bus::url(db) {
            Some(url) => crate::bus::open(url, &a.nats, a.lease_ms).and_then(|j| {
                let (id, lease) = j.start(&mut cvm, &opts)?;
                Ok((Box::new(lease) as Box<dyn std::any::Any>, id))
            }),
            None => Journal::create(db).and_then(|j| {
                j.start(&mut cvm, &opts)
                    .and_then(|id| Ok((Box::new(j.lock(&id)?) as Box<dyn std::any::Any>, id)))
            }),
        };
        match started {
            Ok((lock, id)) => {
                _lock = Some(lock);
                // The first line on stderr, before any progress: the id `resume` takes.
                writeln!(io.stderr, "run {id}")?;
                io.stderr.flush()?;
                run_id = Some(id);
            }
            Err(e) => return journal_failed(&e, a.json, io),
        }
    }
    let out = Output {
        name: &name,
        trace: a.trace.as_deref(),
        json: a.json,
        run_id: run_id.as_deref(),
        stream: a.stream,
    };
    drive_and_report(&mut cvm, None, &out, &mut answers, io)
}

/// Applies `--budget N` and `--budget-usd X` to the run's meter, replacing the bounds of the
/// file's `config: budget:` they name. Returns whether a flag was given.
pub(super) fn set_budget(cvm: &Cvm, tokens: Option<u64>, usd: Option<f64>) -> bool {
    let flags = Budget {
        tokens,
        cost_usd: usd.map(Usd),
    };
    if !flags.is_limited() {
        return false;
    }
    if let Some(m) = cvm.capabilities().meter() {
        m.set_limit(m.limit().overridden_by(flags));
    }
    true
}

/// The answers of `--answer OP=VALUE`… and `--answers FILE.json`, checked against the questions
/// of `cvm`'s `ask` operators, each `ask` holding its first answer until it fires. `Err`: the
/// exit code of a bad answer, reported.
pub(super) fn answers_for(
    cvm: &mut Cvm,
    answer: &[String],
    file: Option<&Path>,
    io: &mut Io<'_>,
) -> std::io::Result<Result<Answers, i32>> {
    let answers =
        match Answers::from_args(answer, file).and_then(|ans| ans.check(cvm).map(|()| ans)) {
            Ok(ans) => ans,
            Err(e) => {
                writeln!(io.stderr, "error: {e}")?;
                return Ok(Err(exit::INVALID));
            }
        };
    let mut answers = answers;
    if let Err(e) = answers.provide(cvm, &answers.ops()) {
        writeln!(io.stderr, "error: {e}")?;
        return Ok(Err(exit::INVALID));
    }
    Ok(Ok(answers))
}

/// How a run is reported.
pub(super) struct Output<'a> {
    /// The net's name, for the text summary.
    pub(super) name: &'a str,
    /// `--trace`.
    pub(super) trace: Option<&'a str>,
    /// `--json`.
    pub(super) json: bool,
    /// A journaled run's id (`--json` adds it).
    pub(super) run_id: Option<&'a str>,
    /// `--stream`: partial output printed on stderr as it arrives.
    pub(super) stream: bool,
}

/// Drives `cvm` to an end state — unless `ended` says it has one already (a finished journaled
/// run: nothing fires) — and reports it: the trace, streamed as steps commit and starting with
/// the steps already in its history (a resumed run's, so the trace holds every firing from step
/// 1), then the summary. Returns the exit code.
///
/// A run that stops in WAITING takes the next answers given for the operators that wait
/// (`answers`), or asks for them on a terminal, and goes on; without any, it ends WAITING.
pub(super) fn drive_and_report(
    cvm: &mut Cvm,
    ended: Option<EndState>,
    out: &Output<'_>,
    answers: &mut Answers,
    io: &mut Io<'_>,
) -> std::io::Result<i32> {
    let trace_to_stdout = out.trace == Some("-");
    let mut file = match out.trace {
        Some(path) if !trace_to_stdout => match std::fs::File::create(path) {
            Ok(f) => Some(std::io::BufWriter::new(f)),
            Err(e) => {
                writeln!(io.stderr, "error: cannot write the trace to `{path}`: {e}")?;
                return Ok(exit::ERROR);
            }
        },
        _ => None,
    };
    // The progress line and the streamed text would share stderr: streaming replaces it.
    let progress = io.progress && !out.json && !out.stream;
    if out.stream {
        crate::live::stream_to(cvm, std::io::stderr());
    }
    let mut trace = match (&mut file, trace_to_stdout) {
        (Some(f), _) => Some(TraceSink {
            out: f,
            lines: TraceLines::new(cvm),
            error: None,
        }),
        (None, true) => Some(TraceSink {
            out: &mut *io.stdout,
            lines: TraceLines::new(cvm),
            error: None,
        }),
        (None, false) => None,
    };
    if let Some(t) = trace.as_mut() {
        t.history(cvm);
    }
    let end = match ended {
        Some(end) => end,
        None => loop {
            let end = match drive(cvm, progress, trace.as_mut()) {
                Ok(end) => end,
                Err(e) => {
                    writeln!(io.stderr, "error: {e}")?;
                    return Ok(exit::ERROR);
                }
            };
            let EndState::Waiting { waiting } = &end else {
                break end;
            };
            let ops: Vec<String> = waiting.iter().map(|w| w.op.clone()).collect();
            match answers.provide(cvm, &ops) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    writeln!(io.stderr, "error: {e}")?;
                    return Ok(exit::INVALID);
                }
            }
            if io.prompt && answers::prompt(cvm, waiting, io.stdin, io.stderr)? {
                continue;
            }
            break end;
        },
    };
    if out.stream {
        cvm.clear_observer();
    }
    let report = RunReport::new(cvm, end);
    if let Some(mut t) = trace {
        t.end(&report);
        if let Some(e) = t.error {
            let path = out.trace.unwrap_or("-");
            writeln!(io.stderr, "error: cannot write the trace to `{path}`: {e}")?;
            return Ok(exit::ERROR);
        }
    }
    let summary = if out.json {
        let mut v = report.to_json();
        if let (Some(id), Json::Object(m)) = (out.run_id, &mut v) {
            m.insert("run_id".into(), json!(id));
        }
        format!("{v}\n")
    } else {
        report.to_text(out.name)
    };
    let w: &mut dyn Write = if trace_to_stdout {
        io.stderr
    } else {
        io.stdout
    };
    w.write_all(summary.as_bytes())?;
    Ok(report.exit_code())
}

/// The durability `run --durability` asks for.
fn durability(a: &RunArgs) -> Durability {
    match a.durability {
        DurabilityArg::Sync => Durability::Sync,
        DurabilityArg::Batch => Durability::Batch { ms: a.batch_ms },
        DurabilityArg::Exit => Durability::Exit,
        DurabilityArg::Strict => Durability::Strict,
    }
}

/// Reports a journal error: on stderr (a stored net that does not load is drawn with its
/// problems), and as `{"error":…}` on stdout with `--json`. Exit 2: the file, the id or the net
/// is at fault.
pub(super) fn journal_failed(
    e: &JournalError,
    json: bool,
    io: &mut Io<'_>,
) -> std::io::Result<i32> {
    if let JournalError::Net { error, .. } = e {
        writeln!(io.stderr, "error: {e}")?;
        return report_invalid(error, json, io).map(|()| exit::INVALID);
    }
    writeln!(io.stderr, "error: {e}")?;
    if json {
        writeln!(io.stdout, "{}", json!({ "error": e.to_string() }))?;
    }
    Ok(exit::INVALID)
}

/// `run --follow WITNESS`: replays a witness of `check --verify` in the verifier's abstraction
/// and shows the connection states along it (no operator runs). Exit 0 replayed, 2 not
/// replayable (which step, and what could fire there), 3 it ends in DEADLOCK.
fn follow(net: &Net, witness: &str, json: bool, io: &mut Io<'_>) -> std::io::Result<i32> {
    let labels = verify::parse_witness(witness);
    match verify::follow(net, &labels) {
        Ok(trace) => {
            if json {
                writeln!(
                    io.stdout,
                    "{}",
                    serde_json::to_value(&trace).unwrap_or_default()
                )?;
            } else {
                writeln!(io.stdout, "{trace}")?;
            }
            Ok(match trace.end {
                verify::TraceEnd::Deadlock { .. } => exit::DEADLOCK,
                _ => exit::OK,
            })
        }
        Err(e) => {
            if json {
                writeln!(io.stdout, "{}", json!({ "error": e.to_string() }))?;
            } else {
                writeln!(io.stderr, "error: cannot follow the witness: {e}")?;
            }
            Ok(exit::INVALID)
        }
    }
}
