//! What a run reports: the end state, steps, sinks and usage as text or JSON (`RunReport`),
//! and the JSON Lines trace, written as steps commit (docs/cli.md).

use std::io::Write;

use serde_json::{Map, Value as Json, json};

use cameleon::engine::{Cvm, EndState};
use cameleon::history::Entry;
use cameleon::operator::capability::{Spent, Usage};
use cameleon::ops;
use cameleon::ops::ai::{quoted_in, usage_in};

use super::exit;

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
    /// What the run spent on models, from its meter: every request, inner runs' and a
    /// stopped firing's included, and a resumed run's earlier ones (docs/semantics.md §4.7).
    pub spent: Option<Spent>,
    /// The firings whose answers quote their context because their chat model is not
    /// generative (the offline `extractive`): `(step, operator, model, kind)`, in history order.
    pub quoted: Vec<(u32, String, String, String)>,
    /// With `run --reuse`: how many firings were reused from the recorded runs.
    pub reused: Option<usize>,
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
                let by_firing = ops::inner_runs(o)?;
                let runs: Vec<Json> = by_firing
                    .iter()
                    .flatten()
                    .map(|r| inner_run(r, false))
                    .collect();
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
            spent: cvm.capabilities().meter().map(|m| m.spent()),
            inner,
            quoted: quoted_of(cvm),
            reused: cvm.reuse().map(|_| cvm.reused_firings()),
        }
    }

    /// The exit code for the end state.
    pub fn exit_code(&self) -> i32 {
        match self.end {
            EndState::Completed => exit::OK,
            EndState::Deadlock { .. } => exit::DEADLOCK,
            EndState::LoopLimit { .. } | EndState::StepLimit { .. } | EndState::Budget { .. } => {
                exit::LIMIT
            }
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
        if let Some(n) = self.reused {
            m.insert("reused".into(), json!(n));
        }
        let sinks: Map<String, Json> = self
            .sinks
            .iter()
            .map(|(n, v)| (n.clone(), Json::Array(v.clone())))
            .collect();
        m.insert("sinks".into(), Json::Object(sinks));
        m.insert("unreached".into(), json!(self.unreached));
        let spent = self.spent.filter(|s| s.requests > 0);
        if !self.usage.is_empty() || spent.is_some() {
            let (prompt, completion) = self.usage.iter().fold((0, 0), |(p, c), (_, _, u)| {
                (p + u.prompt_tokens, c + u.completion_tokens)
            });
            let spent = spent.unwrap_or(Spent {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt + completion,
                ..Spent::default()
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
            let mut usage = match serde_json::to_value(spent) {
                Ok(Json::Object(u)) => u,
                _ => Map::new(),
            };
            usage.insert("firings".into(), Json::Array(firings));
            m.insert("usage".into(), Json::Object(usage));
        }
        if !self.quoted.is_empty() {
            let quoted: Vec<Json> = self
                .quoted
                .iter()
                .map(|(step, op, model, kind)| {
                    json!({"step": step, "op": op, "model": model, "kind": kind})
                })
                .collect();
            m.insert("quoted".into(), Json::Array(quoted));
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
        if let Some(n) = self.reused {
            s.push_str(&format!(
                "  {} reused from the recorded runs\n",
                plural(n, "firing")
            ));
        }
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
            EndState::Budget { op, limit, usage } => s.push_str(&format!(
                "  `{op}` would make a model request once the budget of {limit} is spent ({usage}); \
                 a journaled run goes on with `cameleon resume DB RUN_ID --budget N`\n"
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
        for (_, op, model, kind) in &self.quoted {
            s.push_str(&format!(
                "\nnote: `{op}` answered with a quotation: chat model `{model}` is `{kind}`, which \
                 is not generative — it quotes the context sentences that best match the prompt; \
                 for written answers, {}\n",
                cameleon::models::CONFIGURE_GENERATIVE
            ));
        }
        if let Some(spent) = self.spent.filter(|s| s.requests > 0) {
            s.push_str(&format!("\nmodels: {spent}\n"));
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

/// The firings of the applied path whose chat model only quoted (see [`quoted_in`]), one entry
/// per model and firing, in history order.
fn quoted_of(cvm: &Cvm) -> Vec<(u32, String, String, String)> {
    let history = cvm.history();
    let mut out = Vec::new();
    for entry in history.entries() {
        for (i, f) in entry.firings.iter().enumerate() {
            let Some(state) = history.state_after(entry.step, i) else {
                continue;
            };
            let mut models = quoted_in(state);
            models.dedup();
            for (model, kind) in models {
                out.push((entry.step, cvm.net().op(f.op).name.clone(), model, kind));
            }
        }
    }
    out
}

/// The token usage each firing of the applied path recorded (the `std-ai` operators keep it in
/// their saved state), in history order.
pub(crate) fn usage_of(cvm: &Cvm) -> Vec<(u32, String, Usage)> {
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
pub(crate) struct TraceLines {
    text: String,
    generation: Option<u64>,
    /// Per operator, how many of its firings were written: a `subnet` or `map`'s k-th firing
    /// made its k-th batch of inner runs.
    fired: Vec<usize>,
}

impl TraceLines {
    pub(crate) fn new(cvm: &Cvm) -> Self {
        TraceLines {
            text: String::new(),
            generation: Some(cvm.generation()),
            fired: vec![0; cvm.net().operators().len()],
        }
    }

    /// Appends one line.
    pub(crate) fn line(&mut self, mut line: Json) {
        if let Some(g) = self.generation.take()
            && let Json::Object(m) = &mut line
        {
            m.insert("generation".into(), json!(g));
        }
        self.text.push_str(&line.to_string());
        self.text.push('\n');
    }

    /// Appends the lines of one history entry: one per firing.
    pub(crate) fn entry(&mut self, cvm: &Cvm, entry: &Entry) {
        let net = cvm.net();
        let history = cvm.history();
        for (i, f) in entry.firings.iter().enumerate() {
            let mut line = cvm.trace_line(entry.step, f);
            if let Some(u) = history.state_after(entry.step, i).and_then(usage_in) {
                line["usage"] = json!({
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                });
            }
            let o = f.op.index();
            let runs = ops::inner_runs(&net.operators()[o])
                .and_then(|by_firing| by_firing.into_iter().nth(self.fired[o]));
            if let Some(runs) = runs {
                line["inner"] = Json::Array(runs.iter().map(|r| inner_run(r, true)).collect());
            }
            self.fired[o] += 1;
            self.line(line);
        }
    }
}

/// Where `run --trace` writes, as the run goes: each step's lines once it is committed, so a
/// reader sees the run progress (and what a cancelled run had done).
pub(crate) struct TraceSink<'w> {
    pub(crate) out: &'w mut dyn Write,
    pub(crate) lines: TraceLines,
    /// The first write error; tracing stops there.
    pub(crate) error: Option<std::io::Error>,
}

impl TraceSink<'_> {
    /// Writes the lines of the step just committed.
    pub(crate) fn step(&mut self, cvm: &Cvm) {
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
    pub(crate) fn history(&mut self, cvm: &Cvm) {
        for entry in cvm.history().entries() {
            if self.error.is_some() {
                return;
            }
            self.lines.entry(cvm, &entry);
            self.write();
        }
    }

    /// Writes the last line: the end state, steps and firings.
    pub(crate) fn end(&mut self, report: &RunReport) {
        if self.error.is_none() {
            self.lines.line(report.trace_end());
            self.write();
        }
    }

    /// Writes the lines made so far.
    pub(crate) fn write(&mut self) {
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

/// An inner run of a `subnet` or `map` as `--json` and `--trace` show it (docs/cli.md):
/// `{"net","item"?,"end",<end fields>,"steps","firings"}`, and its `"trace"` (one line per
/// inner firing, `Cvm::trace_lines`) when `with_trace`.
pub(crate) fn inner_run(run: &ops::InnerRun, with_trace: bool) -> Json {
    let mut m = Map::new();
    m.insert("net".into(), json!(run.net()));
    if let Some(i) = run.item() {
        m.insert("item".into(), json!(i));
    }
    if let Ok(Json::Object(end)) = serde_json::to_value(run.end()) {
        m.extend(end);
    }
    m.insert("steps".into(), json!(run.steps()));
    m.insert("firings".into(), json!(run.firings()));
    if with_trace {
        let trace = run.with_cvm(Cvm::trace_lines).unwrap_or_default();
        m.insert("trace".into(), Json::Array(trace));
    }
    Json::Object(m)
}
