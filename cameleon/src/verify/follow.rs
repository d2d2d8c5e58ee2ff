//! Replaying a witness in the control abstraction, showing the marking along it.

use std::fmt;

use serde::Serialize;

use super::model::Model;
use crate::connection::ConnState;
use crate::net::{Net, did_you_mean};

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
    /// The operator can fire in several ways here; the label must say which outputs.
    #[error(
        "step {step}: `{label}` can fire in several ways here; write one of {}",
        list(choices)
    )]
    Ambiguous {
        /// 1-based position in the witness.
        step: usize,
        /// The label given.
        label: String,
        /// The full labels to choose from.
        choices: Vec<String>,
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

/// Replays `witness` (labels as [`verify`](super::verify) writes them) from the initial marking in
/// the control abstraction, and shows what each firing changes. A bare operator name stands for
/// its only possible firing at that point.
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
    let mut model = Model::new(net);
    let mut state = model.initial.clone();
    let mut next = state.clone();
    let mut steps = Vec::new();
    for (i, label) in witness.iter().enumerate() {
        let label = label.as_ref();
        let step = i + 1;
        let op_name = label.split_once(':').map_or(label, |(op, _)| op);
        if net.op_id(op_name).is_none() {
            return Err(FollowError::UnknownOperator {
                step,
                op: op_name.to_owned(),
                hint: did_you_mean(op_name, net.ops.iter().map(|o| o.name.as_str()))
                    .map(str::to_owned),
            });
        }
        let mut possible: Vec<(String, usize)> = Vec::new();
        model.for_each_outcome(&state, |m, k| {
            possible.push((m.label(m.outcomes[k].action), k));
        });
        let k = if let Some((_, k)) = possible.iter().find(|(l, _)| l == label) {
            *k
        } else {
            let by_op: Vec<&(String, usize)> = if label.contains(':') {
                Vec::new()
            } else {
                possible
                    .iter()
                    .filter(|(l, _)| l.split(':').next() == Some(label))
                    .collect()
            };
            match by_op.as_slice() {
                [(_, k)] => *k,
                [] => {
                    return Err(FollowError::NotEnabled {
                        step,
                        label: label.to_owned(),
                        enabled: possible.into_iter().map(|(l, _)| l).collect(),
                    });
                }
                many => {
                    return Err(FollowError::Ambiguous {
                        step,
                        label: label.to_owned(),
                        choices: many.iter().map(|(l, _)| l.clone()).collect(),
                    });
                }
            }
        };
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
            step,
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
