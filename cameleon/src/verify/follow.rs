//! Replaying a witness in the control abstraction, showing the marking along it.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;

use super::model::Model;
use crate::connection::ConnState;
use crate::net::Net;
use crate::util::did_you_mean;

/// One connection (or operator control state) that a firing changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The connection's name (`a.out -> b.in`), or `op (control)` for a control state.
    pub conn: String,
    /// Its state before the firing (`EMPTY`, `NEW`, `OLD`, or a control state number).
    pub from: String,
    /// Its state after.
    pub to: String,
}

/// One firing of a replayed witness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceStep {
    /// 1-based position in the witness.
    pub step: usize,
    /// The firing's label (`gate:out_true`).
    pub fired: String,
    /// What it changed.
    pub changes: Vec<Change>,
}

/// Where a replayed witness leaves the net.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "end", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TraceEnd {
    /// No operator enabled, no connection NEW.
    Completed,
    /// No operator enabled, some connection NEW.
    Deadlock {
        /// The NEW connections.
        stuck: Vec<String>,
    },
    /// Not a terminal state: these firings are possible next.
    Running {
        /// Labels of the possible next firings.
        enabled: Vec<String>,
    },
}

/// A witness replayed in the control abstraction (see [`follow`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// The net's name.
    pub net: String,
    /// Each firing and what it changed.
    pub steps: Vec<TraceStep>,
    /// Every connection's state at the end, in declaration order (in JSON, an object).
    #[serde(serialize_with = "as_object")]
    pub marking: Vec<(String, ConnState)>,
    /// Where the witness leaves the net (in JSON, flattened: `"end":"DEADLOCK","stuck":[…]`).
    #[serde(flatten)]
    pub end: TraceEnd,
}

fn as_object<S: serde::Serializer>(m: &[(String, ConnState)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(c, st)| (c, st)))
}

/// A witness that cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FollowError {
    /// The label names no operator of the net.
    #[error("step {step}: no operator `{op}` in the net{}", hint.as_ref().map(|h| format!(" (did you mean `{h}`?)")).unwrap_or_default())]
    UnknownOperator {
        /// 1-based position in the witness.
        step: usize,
        /// The name given.
        op: String,
        /// A close name, if one.
        hint: Option<String>,
    },
    /// The firing is not possible at that point.
    #[error("step {step}: `{label}` cannot fire here; possible: {}", list(enabled))]
    NotEnabled {
        /// 1-based position in the witness.
        step: usize,
        /// The label given.
        label: String,
        /// What could fire instead.
        enabled: Vec<String>,
    },
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "nothing (terminal state)".to_owned()
    } else {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Splits a witness as written on a command line: labels separated by commas, spaces or
/// arrows, optionally as a JSON array (`["src","fork"]`).
///
/// ```
/// use cameleon::verify::parse_witness;
/// assert_eq!(parse_witness("src, fork,gate:out_true"), ["src", "fork", "gate:out_true"]);
/// assert_eq!(parse_witness(r#"["src","fork"]"#), ["src", "fork"]);
/// assert_eq!(parse_witness("src → fork"), ["src", "fork"]);
/// ```
pub fn parse_witness(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace() || c == '→')
        .map(|s| s.trim_matches(|c| matches!(c, '[' | ']' | '"' | '\'')))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn show(model: &Model<'_>, f: usize, v: u32) -> String {
    if f < model.n_conns {
        match v {
            0 => "EMPTY",
            1 => "NEW",
            _ => "OLD",
        }
        .to_owned()
    } else {
        v.to_string()
    }
}

fn field_name(model: &Model<'_>, f: usize) -> String {
    if f < model.n_conns {
        return model.net.conns[f].name.clone();
    }
    let o = model.control_owner(f);
    format!("{} (control)", model.net.ops[o].name)
}

/// Replays `witness` from the initial marking in the control abstraction, and shows what each
/// firing changes. A step is an operator name (`gate`) or an exact label naming the outputs the
/// operator chose (`gate:out_true`), as [`Check::witness`](super::Check::witness) and
/// [`Check::path`](super::Check::path) write them. Names alone may fit several paths: the first
/// that fits the whole witness is taken (operators in declaration order, emission sets in
/// declared order); give the labels to pick another.
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Sink, Source};
/// use cameleon::verify::{TraceEnd, follow};
///
/// let mut b = Net::builder("tiny");
/// b.add("src", Source::new("x"));
/// b.add("out", Sink::new());
/// b.connect("src.out_data", "out.in_data");
/// let trace = follow(&b.build()?, &["src", "out"])?;
/// assert_eq!(trace.steps[0].changes[0].to, "NEW");
/// assert_eq!(trace.end, TraceEnd::Completed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn follow<S: AsRef<str>>(net: &Net, witness: &[S]) -> Result<Trace, FollowError> {
    let witness: Vec<&str> = witness.iter().map(AsRef::as_ref).collect();
    for (i, label) in witness.iter().enumerate() {
        let known = net.op_id(label).is_some()
            || label
                .rsplit_once(':')
                .is_some_and(|(op, _)| net.op_id(op).is_some());
        if !known {
            let op = label.split_once(':').map_or(*label, |(op, _)| op);
            return Err(FollowError::UnknownOperator {
                step: i + 1,
                op: op.to_owned(),
                hint: did_you_mean(op, net.ops.iter().map(|o| o.name.as_str())).map(str::to_owned),
            });
        }
    }
    let mut model = Model::new(net);
    let chosen = search(&mut model, &witness)?;

    let mut state = model.initial.clone();
    let mut next = state.clone();
    let mut steps = Vec::new();
    for (i, &k) in chosen.iter().enumerate() {
        next.copy_from_slice(&state);
        model.apply(k, &mut next);
        let mut changes = Vec::new();
        for f in 0..model.fields.len() {
            let (a, b) = (model.fields[f].get(&state), model.fields[f].get(&next));
            if a != b {
                changes.push(Change {
                    conn: field_name(&model, f),
                    from: show(&model, f, a),
                    to: show(&model, f, b),
                });
            }
        }
        steps.push(TraceStep {
            step: i + 1,
            fired: model.label(model.outcomes[k].action),
            changes,
        });
        std::mem::swap(&mut state, &mut next);
    }
    let mut enabled = Vec::new();
    model.for_each_outcome(&state, |m, k| enabled.push(m.label(m.outcomes[k].action)));
    let marking: Vec<(String, ConnState)> = (0..model.n_conns)
        .map(|c| (net.conns[c].name.clone(), model.conn(&state, c)))
        .collect();
    let end = if !enabled.is_empty() {
        TraceEnd::Running { enabled }
    } else {
        let stuck: Vec<String> = marking
            .iter()
            .filter(|(_, s)| *s == ConnState::New)
            .map(|(c, _)| c.clone())
            .collect();
        if stuck.is_empty() {
            TraceEnd::Completed
        } else {
            TraceEnd::Deadlock { stuck }
        }
    };
    Ok(Trace {
        net: net.name.clone(),
        steps,
        marking,
        end,
    })
}

/// The outcomes (one per step) of the first path from the initial state that fits `witness`:
/// a depth-first search that never tries the same (step, state) twice.
fn search(model: &mut Model<'_>, witness: &[&str]) -> Result<Vec<usize>, FollowError> {
    struct Frame {
        state: Vec<u64>,
        candidates: Vec<usize>,
        next: usize,
    }
    let candidates = |model: &mut Model<'_>, state: &[u64], step: usize| -> Vec<usize> {
        let mut out = Vec::new();
        if let Some(label) = witness.get(step) {
            model.for_each_outcome(state, |m, k| {
                let a = m.outcomes[k].action;
                if m.name(a) == *label || m.label(a) == *label {
                    out.push(k);
                }
            });
        }
        out
    };
    let initial = model.initial.clone();
    let first = candidates(model, &initial, 0);
    let mut frames = vec![Frame {
        state: initial,
        candidates: first,
        next: 0,
    }];
    let mut failed: HashSet<(usize, Vec<u64>)> = HashSet::new();
    // The deepest step at which nothing fitted, and what could fire there.
    let mut deepest: Option<(usize, Vec<String>)> = None;
    while !frames.is_empty() {
        let step = frames.len() - 1;
        if step == witness.len() {
            return Ok(frames[..step]
                .iter()
                .map(|f| f.candidates[f.next - 1])
                .collect());
        }
        let top = &mut frames[step];
        if top.next < top.candidates.len() {
            let k = top.candidates[top.next];
            top.next += 1;
            let mut state = top.state.clone();
            model.apply(k, &mut state);
            if failed.contains(&(step + 1, state.clone())) {
                continue;
            }
            let candidates = candidates(model, &state, step + 1);
            frames.push(Frame {
                state,
                candidates,
                next: 0,
            });
            continue;
        }
        if top.candidates.is_empty() && deepest.as_ref().is_none_or(|(d, _)| step > *d) {
            let mut enabled = Vec::new();
            let state = top.state.clone();
            model.for_each_outcome(&state, |m, k| enabled.push(m.label(m.outcomes[k].action)));
            deepest = Some((step, enabled));
        }
        if let Some(f) = frames.pop() {
            failed.insert((step, f.state));
        }
    }
    let (step, enabled) = deepest.unwrap_or_default();
    Err(FollowError::NotEnabled {
        step: step + 1,
        label: witness
            .get(step)
            .map_or_else(String::new, |l| (*l).to_owned()),
        enabled,
    })
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "net `{}`: every connection EMPTY", self.net)?;
        for s in &self.steps {
            writeln!(f, "{:>3}. {}", s.step, s.fired)?;
            for c in &s.changes {
                writeln!(f, "       {}: {} → {}", c.conn, c.from, c.to)?;
            }
        }
        writeln!(f, "marking:")?;
        for (c, s) in &self.marking {
            writeln!(f, "  {:<5} {c}", s.as_str())?;
        }
        match &self.end {
            TraceEnd::Completed => write!(f, "end: COMPLETED"),
            TraceEnd::Deadlock { stuck } => write!(
                f,
                "end: DEADLOCK (tokens stuck on {})",
                stuck
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            TraceEnd::Running { enabled } => {
                write!(f, "not terminal; possible next: {}", list(enabled))
            }
        }
    }
}
