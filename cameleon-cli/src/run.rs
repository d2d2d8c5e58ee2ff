//! `cameleon run`: run to a terminal state, report it, optionally trace every firing.

use std::io::Write;
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::{Io, RunArgs, display_name, exit, load};
use cameleon::engine::{Cvm, EndState, Event, Step, StepError};
use cameleon::net::Net;
use cameleon::ops;
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

/// The trace of a run as JSON Lines: one object per firing, in history order —
/// `{"step":N,"op":"id","consumed":["a.out -> b.in",…],"emitted":[{"conn":"…","type":"DataString","value":…}]}`
/// — then a last line with the end state, steps and firings. No wall time: the same net in the
/// same mode gives the same bytes.
pub fn trace_jsonl(cvm: &Cvm, report: &RunReport) -> String {
    let net = cvm.net();
    let mut out = String::new();
    // The inner runs of each `subnet` and `map`: its k-th firing made the k-th batch.
    let inner: Vec<Option<Vec<ops::Batch>>> = net.operators().iter().map(ops::inner_runs).collect();
    let mut fired = vec![0usize; net.operators().len()];
    for entry in cvm.history().entries() {
        for f in &entry.firings {
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
            let o = f.op.index();
            if let Some(batch) = inner[o].as_ref().and_then(|b| b.get(fired[o])) {
                line["inner"] = Json::Array(batch.iter().map(|r| r.to_json()).collect());
            }
            fired[o] += 1;
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out.push_str(&report.trace_end().to_string());
    out.push('\n');
    out
}

/// Runs `cvm` to an end state, with a progress bar on stderr when `progress`.
fn drive(cvm: &mut Cvm, progress: bool) -> Result<EndState, StepError> {
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
            break EndState::Cancelled;
        }
        match cvm.step() {
            Ok(Step::Fired { .. }) => {
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
    let net = match load(&a.file, a.allow_outside, a.json, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    if let Some(witness) = &a.follow {
        return follow(&net, witness, a.json, io);
    }
    let name = display_name(&net, &a.file);
    let mut b = Cvm::builder(net);
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
    let end = match drive(&mut cvm, io.progress && !a.json) {
        Ok(end) => end,
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::ERROR);
        }
    };
    let report = RunReport::new(&cvm, end);

    let trace_to_stdout = a.trace.as_deref() == Some("-");
    if let Some(path) = &a.trace {
        let text = trace_jsonl(&cvm, &report);
        if trace_to_stdout {
            io.stdout.write_all(text.as_bytes())?;
        } else if let Err(e) = std::fs::write(path, text) {
            writeln!(io.stderr, "error: cannot write the trace to `{path}`: {e}")?;
            return Ok(exit::ERROR);
        }
    }
    let summary = if a.json {
        format!("{}\n", report.to_json())
    } else {
        report.to_text(&name)
    };
    let w: &mut dyn Write = if trace_to_stdout {
        io.stderr
    } else {
        io.stdout
    };
    w.write_all(summary.as_bytes())?;
    Ok(report.exit_code())
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
