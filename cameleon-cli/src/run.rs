//! `cameleon run`: run to a terminal state, report it, optionally trace every firing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::answers::{self, Answers};
use super::{DurabilityArg, Io, RunArgs, display_name, exit, load, report_invalid};
use cameleon::capabilities::{CapabilitiesError, Runtime};
use cameleon::capability::Usage;
use cameleon::engine::{Cvm, EndState, Event, Step, StepError};
use cameleon::history::Entry;
use cameleon::journal::{Durability, Journal, JournalError, RunOptions};
use cameleon::net::Net;
use cameleon::ops;
use cameleon::ops::ai::usage_in;
use cameleon::verify;

/// What a run did: the facts `run` prints, as text or JSON.
#[derive(Debug)]
pub struct RunReport {
    /// How the run ended.
    pub end: EndState,
    /// History entries: firings in sequential mode, maximal steps in parallel mode.
    pub steps: usize,
    /// Operator firings.
    pub firings: usize,
    /// What each sink (operator without outputs) received, in declaration order.
    pub sinks: Vec<(String, Vec<Json>)>,
    /// Connections that never received a token.
    pub unreached: Vec<String>,
    /// Token usage of the firings that reported it: `(step, operator, usage)`, in history order.
    pub usage: Vec<(u32, String, Usage)>,
    /// Each `subnet` or `map` that ran, with its inner runs in brief, in declaration order.
    pub inner: Vec<(String, Vec<Json>)>,
}

impl RunReport {
    /// Gathers the report of `cvm` after its run ended in `end`.
    pub fn new(cvm: &Cvm, end: EndState) -> Self {
        // A CLI run never steps back, so every recorded firing is on the current path.
        let firings = cvm.history().recorded_firings();
        let net = cvm.net();
        let sinks = net
            .operators()
            .iter()
            .filter(|o| o.spec.outputs.is_empty())
            .map(|o| {
                let got = cvm.received(&o.name).iter().map(|v| v.to_json()).collect();
                (o.name.clone(), got)
            })
            .collect();
        let inner = net
            .operators()
            .iter()
            .filter_map(|o| {
                let batches = ops::inner_runs(o)?;
                let runs: Vec<Json> = batches.iter().flatten().map(|r| r.summary_json()).collect();
                (!runs.is_empty()).then(|| (o.name.clone(), runs))
            })
            .collect();
        RunReport {
            end,
            steps: cvm.depth(),
            firings,
            sinks,
            unreached: cvm.unreached().into_iter().map(str::to_owned).collect(),
            usage: usage_of(cvm),
            inner,
        }
    }

    /// The exit code for the end state.
    pub fn exit_code(&self) -> i32 {
        match self.end {
            EndState::Completed => exit::OK,
            EndState::Deadlock { .. } => exit::DEADLOCK,
            EndState::LoopLimit { .. } | EndState::StepLimit { .. } => exit::LIMIT,
            EndState::Error { .. } => exit::ERROR,
            EndState::Cancelled => exit::CANCELLED,
            EndState::Waiting { .. } => exit::WAITING,
        }
    }

    /// The end state as a JSON object: `end` and the state's own fields.
    fn end_json(&self) -> Map<String, Json> {
        match serde_json::to_value(&self.end) {
            Ok(Json::Object(m)) => m,
            _ => Map::from_iter([("end".to_owned(), json!(self.end.name()))]),
        }
    }

    /// `{"end":…, <end-state fields>, "steps":N, "firings":N, "sinks":{…}, "unreached":[…]}`.
    pub fn to_json(&self) -> Json {
        let mut m = self.end_json();
        m.insert("steps".into(), json!(self.steps));
        m.insert("firings".into(), json!(self.firings));
        let sinks: Map<String, Json> = self
            .sinks
            .iter()
            .map(|(n, v)| (n.clone(), Json::Array(v.clone())))
            .collect();
        m.insert("sinks".into(), Json::Object(sinks));
        m.insert("unreached".into(), json!(self.unreached));
        if !self.usage.is_empty() {
            let (prompt, completion) = self.usage.iter().fold((0, 0), |(p, c), (_, _, u)| {
                (p + u.prompt_tokens, c + u.completion_tokens)
            });
            let firings: Vec<Json> = self
                .usage
                .iter()
                .map(|(step, op, u)| {
                    json!({
                        "step": step,
                        "op": op,
                        "prompt_tokens": u.prompt_tokens,
                        "completion_tokens": u.completion_tokens,
                    })
                })
                .collect();
            m.insert(
                "usage".into(),
                json!({"prompt_tokens": prompt, "completion_tokens": completion, "firings": firings}),
            );
        }
        if !self.inner.is_empty() {
            let inner: Map<String, Json> = self
                .inner
                .iter()
                .map(|(n, runs)| (n.clone(), Json::Array(runs.clone())))
                .collect();
            m.insert("inner".into(), Json::Object(inner));
        }
        Json::Object(m)
    }

    /// The last line of a trace: the end state, steps and firings.
    fn trace_end(&self) -> Json {
        let mut m = self.end_json();
        m.insert("steps".into(), json!(self.steps));
        m.insert("firings".into(), json!(self.firings));
        Json::Object(m)
    }

    /// The human summary.
    pub fn to_text(&self, name: &str) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut s = format!(
            "{name}: {} after {} ({})\n",
            self.end.name(),
            plural(self.steps, "step"),
            plural(self.firings, "firing")
        );
        match &self.end {
            EndState::Completed | EndState::Cancelled => {}
            EndState::Deadlock { stuck } => {
                s.push_str("  data is stuck:\n");
                for st in stuck {
                    s.push_str(&format!("  - {}\n", st.message));
                }
            }
            EndState::LoopLimit { op, limit } => s.push_str(&format!(
                "  `{op}` has fired {limit} times (max_loop_iterations)\n"
            )),
            EndState::StepLimit { limit } => s.push_str(&format!(
                "  the step budget of {limit} is used (--max-steps)\n"
            )),
            EndState::Error { op, error } => {
                s.push_str(&format!("  `{op}` failed: {error}\n"));
            }
            EndState::Waiting { waiting } => {
                s.push_str("  waiting for an answer:\n");
                for w in waiting {
                    s.push_str(&format!(
                        "  - `{}` asks: {} ({})\n",
                        w.op, w.prompt, w.ty.name
                    ));
                }
                if let Some(w) = waiting.first() {
                    s.push_str(&format!(
                        "  answer with `--answer {}=VALUE` (or `--answers FILE.json`) and run again\n",
                        w.op
                    ));
                }
            }
        }
        for (sink, values) in &self.sinks {
            s.push_str(&format!(
                "\n{sink} received {}{}\n",
                plural(values.len(), "value"),
                if values.is_empty() { "" } else { ":" }
            ));
            for v in values {
                s.push_str(&format!("  {}\n", show_value(v)));
            }
        }
        for (op, runs) in &self.inner {
            let done = runs.iter().filter(|r| r["end"] == "COMPLETED").count();
            s.push_str(&format!(
                "\n{op} ran its net {} ({done} completed; `--trace` shows each)\n",
                plural(runs.len(), "time"),
            ));
        }
        if !self.unreached.is_empty() {
            s.push_str("\nnever reached (no token):\n");
            for c in &self.unreached {
                s.push_str(&format!("  {c}\n"));
            }
        }
        s
    }
}

/// A value as compact JSON, or indented JSON when that would be longer than a line.
fn show_value(v: &Json) -> String {
    let compact = v.to_string();
    if compact.chars().count() <= 100 || !(v.is_array() || v.is_object()) {
        return compact;
    }
    serde_json::to_string_pretty(v)
        .unwrap_or(compact)
        .replace('\n', "\n  ")
}

/// The token usage each firing of the applied path recorded (the `std-ai` operators keep it in
/// their saved state), in history order.
fn usage_of(cvm: &Cvm) -> Vec<(u32, String, Usage)> {
    let history = cvm.history();
    let mut out = Vec::new();
    for entry in history.entries() {
        for (i, f) in entry.firings.iter().enumerate() {
            if let Some(u) = history.state_after(entry.step, i).and_then(usage_in) {
                out.push((entry.step, cvm.net().op(f.op).name.clone(), u));
            }
        }
    }
    out
}

/// The trace of a run as JSON Lines: one object per firing, in history order —
/// `{"step":N,"op":"id","consumed":["a.out -> b.in",…],"emitted":[{"conn":"…","type":"DataString","value":…}]}`
/// — with `"usage":{"prompt_tokens":N,"completion_tokens":N}` for a firing that called a model
/// and was told its token usage — then a last line with the end state, steps and firings. The
/// first line (the first firing,
/// or the end line of a run that fired nothing) also says the capability generation the run
/// pinned, as a last key `"generation":N`. No wall time: the same net in the same mode gives
/// the same bytes.
pub fn trace_jsonl(cvm: &Cvm, report: &RunReport) -> String {
    let mut lines = TraceLines::new(cvm);
    for entry in cvm.history().entries() {
        lines.entry(cvm, &entry);
    }
    lines.line(report.trace_end());
    lines.text
}

/// Trace lines being written: the first one gets the run's generation.
struct TraceLines {
    text: String,
    generation: Option<u64>,
    /// Per operator, how many of its firings were written: a `subnet` or `map`'s k-th firing
    /// made its k-th batch of inner runs.
    fired: Vec<usize>,
}

impl TraceLines {
    fn new(cvm: &Cvm) -> Self {
        TraceLines {
            text: String::new(),
            generation: Some(cvm.generation()),
            fired: vec![0; cvm.net().operators().len()],
        }
    }

    /// Appends one line.
    fn line(&mut self, mut line: Json) {
        if let Some(g) = self.generation.take()
            && let Json::Object(m) = &mut line
        {
            m.insert("generation".into(), json!(g));
        }
        self.text.push_str(&line.to_string());
        self.text.push('\n');
    }

    /// Appends the lines of one history entry: one per firing.
    fn entry(&mut self, cvm: &Cvm, entry: &Entry) {
        let net = cvm.net();
        let history = cvm.history();
        for (i, f) in entry.firings.iter().enumerate() {
            let consumed: Vec<&str> = f
                .consumed
                .iter()
                .map(|c| net.connections()[c.index()].name.as_str())
                .collect();
            let emitted: Vec<Json> = f
                .written
                .iter()
                .map(|(c, t)| {
                    let conn = net.connections()[c.index()].name.as_str();
                    match cvm.token(*t) {
                        Some(tok) => json!({
                            "conn": conn,
                            "type": tok.type_name(),
                            "value": tok.value.to_json(),
                        }),
                        None => json!({ "conn": conn }),
                    }
                })
                .collect();
            let mut line = json!({
                "step": entry.step,
                "op": net.op(f.op).name,
                "consumed": consumed,
                "emitted": emitted,
            });
            if let Some(u) = history.state_after(entry.step, i).and_then(usage_in) {
                line["usage"] = json!({
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                });
            }
            let o = f.op.index();
            let batch = ops::inner_runs(&net.operators()[o])
                .and_then(|batches| batches.into_iter().nth(self.fired[o]));
            if let Some(batch) = batch {
                line["inner"] = Json::Array(batch.iter().map(|r| r.to_json()).collect());
            }
            self.fired[o] += 1;
            self.line(line);
        }
    }
}

/// Where `run --trace` writes, as the run goes: each step's lines once it is committed, so a
/// reader sees the run progress (and what a cancelled run had done).
struct TraceSink<'w> {
    out: &'w mut dyn Write,
    lines: TraceLines,
    /// The first write error; tracing stops there.
    error: Option<std::io::Error>,
}

impl TraceSink<'_> {
    /// Writes the lines of the step just committed.
    fn step(&mut self, cvm: &Cvm) {
        if self.error.is_some() {
            return;
        }
        let Some(entry) = cvm.history().last() else {
            return;
        };
        self.lines.entry(cvm, &entry);
        self.write();
    }

    /// Writes the lines of every step already applied (a resumed run's restored steps).
    fn history(&mut self, cvm: &Cvm) {
        for entry in cvm.history().entries() {
            if self.error.is_some() {
                return;
            }
            self.lines.entry(cvm, &entry);
            self.write();
        }
    }

    /// Writes the last line: the end state, steps and firings.
    fn end(&mut self, report: &RunReport) {
        if self.error.is_none() {
            self.lines.line(report.trace_end());
            self.write();
        }
    }

    /// Writes the lines made so far.
    fn write(&mut self) {
        let text = std::mem::take(&mut self.lines.text);
        if let Err(e) = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
        {
            self.error = Some(e);
        }
        self.lines.text = text;
        self.lines.text.clear();
    }
}

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
    let mut net = match load(&a.file, a.allow_outside, a.json, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    if let Some(witness) = &a.follow {
        return follow(&net, witness, a.json, io);
    }
    let name = display_name(&net, &a.file);
    let placed = match crate::satellite::place(&a.nats, &mut net, io)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let mut builder = Runtime::builder().for_cm_file(&a.file, a.capabilities.as_deref());
    if let Some(tools) = placed.tools {
        builder = builder.source(tools);
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
    let mut b = rt.cvm(net, base_dir(&a.file));
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
    let mut answers = match answers_for(&mut cvm, &a.answer, a.answers.as_deref(), io)? {
        Ok(ans) => ans,
        Err(code) => return Ok(code),
    };
    let mut run_id = None;
    if let Some(db) = &a.journal {
        let opts = RunOptions {
            durability: durability(a),
            name: Some(name.clone()),
            base_dir: Some(base_dir(&a.file)),
            allow_outside: a.allow_outside,
            generation: Some(cvm.generation()),
        };
        match Journal::create(db).and_then(|j| j.start(&mut cvm, &opts)) {
            Ok(id) => {
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
    };
    drive_and_report(&mut cvm, None, &out, &mut answers, io)
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
    let progress = io.progress && !out.json;
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
    }
}

/// The folder a `.cm` file's relative paths resolve against (as the loader does).
fn base_dir(file: &Path) -> PathBuf {
    file.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
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
