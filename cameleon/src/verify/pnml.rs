//! Export of the control abstraction as a 1-safe place/transition net in PNML
//! (ISO/IEC 15909-2, P/T net type).
//!
//! - one place per (connection, state): `c{i}_EMPTY`, `c{i}_NEW`, `c{i}_OLD`, named
//!   `a.out -> b.in EMPTY` and so on; and one place per (operator, control state) for an operator
//!   that declares a [`FiniteControl`](super::FiniteControl): `q{o}_{state}`;
//! - one transition per (operator, combination of the states of the connections it reads —
//!   inputs and outputs — for which it is enabled, emission set), named after the firing label
//!   and the combination. It takes the token of each place of the combination and puts one on
//!   each place of the resulting states (a state it does not change is a read: an arc each way);
//! - initial marking: every `_EMPTY` place, and each control's initial state.
//!
//! Exactly one place of each connection is marked in every reachable marking, so the net is
//! 1-safe, and its reachability graph is the verifier's full one (`Reduction::None`), state for
//! state and edge for edge.
//!
//! The combinations of an operator are enumerated exhaustively, so the export does not depend
//! on the verifier's exploration — except for an operator reading so many connections that it
//! has more than 2^20 combinations (a source or fork with a fan-out of 13 or more, a join of 13
//! inputs): its transitions are those of the combinations met while exploring the state space
//! from the initial marking. A combination never met is never enabled in a reachable marking,
//! so the reachability graph is the same.

use std::fmt::Write;

use super::DEFAULT_MAX_STATES;
use super::model::{Model, unpack};
use super::parallel::explore_full;
use crate::net::Net;

/// Most local combinations enumerated for one operator.
const MAX_COMBINATIONS: u64 = 1 << 20;
/// Most transitions in one export.
const MAX_TRANSITIONS: usize = 1 << 22;

/// Why a net cannot be exported to PNML.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PnmlError {
    /// An operator reads so many connections that its transitions can be neither enumerated
    /// nor collected from the state space.
    #[error(
        "operator `{op}` reads {conns} connections, too many to export; split its fan-out or fan-in with fork/merge operators"
    )]
    TooManyCombinations {
        /// The operator.
        op: String,
        /// How many connections it reads.
        conns: usize,
    },
    /// An operator has too many combinations to enumerate, and the state space, explored to
    /// collect the combinations met, is larger than the state budget.
    #[error(
        "operator `{op}` has {combinations} state combinations (more than {max} to enumerate), and the state space explored to find those that occur exceeds {max_states} states"
    )]
    StateBudget {
        /// The operator.
        op: String,
        /// Its number of combinations (saturating).
        combinations: u64,
        /// The enumeration limit.
        max: u64,
        /// The state budget used.
        max_states: u64,
    },
    /// The net as a whole has too many transitions.
    #[error("the PNML net would have more than {max} transitions")]
    TooManyTransitions {
        /// The limit.
        max: usize,
    },
}

const STATES: [&str; 3] = ["EMPTY", "NEW", "OLD"];

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The id of the place of field `f` in value `v`.
fn place_id(model: &Model<'_>, f: usize, v: u32) -> String {
    if f < model.n_conns {
        format!("c{f}_{}", STATES[v as usize])
    } else {
        let o = model.control_owner(f);
        format!("q{o}_{v}")
    }
}

/// Writes `net`'s control abstraction as a PNML document (a P/T net, ISO/IEC 15909-2).
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Sink, Source};
///
/// let mut b = Net::builder("tiny");
/// b.add("src", Source::new("x"));
/// b.add("out", Sink::new());
/// b.connect("src.out_data", "out.in_data");
/// let xml = cameleon::verify::to_pnml(&b.build()?)?;
/// assert!(xml.contains(r#"<place id="c0_EMPTY">"#));
/// assert_eq!(xml.matches("<transition ").count(), 2); // src fires; out consumes
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_pnml(net: &Net) -> Result<String, PnmlError> {
    let mut model = Model::new(net);
    // Operators too large to enumerate: collect the combinations met in the state space.
    let large: Vec<usize> = (0..model.ops.len())
        .filter(|&o| model.ops[o].size > MAX_COMBINATIONS)
        .collect();
    let mut met: Vec<Option<Vec<u128>>> = vec![None; model.ops.len()];
    if let Some(&first) = large.first() {
        let max_states = DEFAULT_MAX_STATES;
        let g = explore_full(&mut model, max_states, 1, &mut |_| {});
        if g.budget_hit {
            return Err(PnmlError::StateBudget {
                op: net.ops[first].name.clone(),
                combinations: model.ops[first].size,
                max: MAX_COMBINATIONS,
                max_states,
            });
        }
        for &o in &large {
            met[o] =
                Some(
                    model
                        .met_combinations(o)
                        .ok_or_else(|| PnmlError::TooManyCombinations {
                            op: net.ops[o].name.clone(),
                            conns: model.ops[o].reads.len(),
                        })?,
                );
        }
    }
    let mut xml = String::new();
    xml.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str("<pnml xmlns=\"http://www.pnml.org/version-2009/grammar/pnml\">\n");
    let _ = writeln!(
        xml,
        "  <net id=\"net\" type=\"http://www.pnml.org/version-2009/grammar/ptnet\">\n    <name><text>{}</text></name>\n    <page id=\"page\">",
        escape(&net.name)
    );
    // Places.
    for f in 0..model.fields.len() {
        let initial = model.fields[f].get(&model.initial);
        for v in 0..model.fields[f].radix {
            let name = if f < model.n_conns {
                format!("{} {}", net.conns[f].name, STATES[v as usize])
            } else {
                format!("{} control {v}", net.ops[model.control_owner(f)].name)
            };
            let _ = write!(
                xml,
                "      <place id=\"{}\">\n        <name><text>{}</text></name>\n",
                place_id(&model, f, v),
                escape(&name)
            );
            if v == initial {
                xml.push_str("        <initialMarking><text>1</text></initialMarking>\n");
            }
            xml.push_str("      </place>\n");
        }
    }
    // Transitions and arcs.
    let mut transitions = 0usize;
    let mut arcs = 0usize;
    let mut vals: Vec<u32> = Vec::new();
    let mut post: Vec<u32> = Vec::new();
    for (o, met) in met.iter_mut().enumerate() {
        let reads = model.ops[o].reads.clone();
        let combinations: Box<dyn Iterator<Item = u128>> = match met.take() {
            Some(list) => Box::new(list.into_iter()),
            None => Box::new(0..model.ops[o].size as u128),
        };
        for idx in combinations {
            model.decode(o, idx, &mut vals);
            let cell = model.compute(o, &vals);
            let (start, len) = unpack(cell);
            for k in start..start + len {
                transitions += 1;
                if transitions > MAX_TRANSITIONS {
                    return Err(PnmlError::TooManyTransitions {
                        max: MAX_TRANSITIONS,
                    });
                }
                let oc = model.outcomes[k];
                post.clone_from(&vals);
                for &(f, v) in &model.writes[oc.writes_start as usize..oc.writes_end as usize] {
                    if let Some(i) = reads.iter().position(|&r| r == f) {
                        post[i] = v;
                    }
                }
                let when: Vec<String> = reads
                    .iter()
                    .zip(&vals)
                    .filter(|&(&f, _)| (f as usize) < model.n_conns)
                    .map(|(&f, &v)| {
                        format!("{}={}", net.conns[f as usize].name, STATES[v as usize])
                    })
                    .collect();
                let tid = format!("t{}", transitions - 1);
                let _ = write!(
                    xml,
                    "      <transition id=\"{tid}\">\n        <name><text>{} when {}</text></name>\n      </transition>\n",
                    escape(&model.label(oc.action)),
                    escape(&when.join(", "))
                );
                for (i, &f) in reads.iter().enumerate() {
                    let pre = place_id(&model, f as usize, vals[i]);
                    let after = place_id(&model, f as usize, post[i]);
                    let _ = writeln!(
                        xml,
                        "      <arc id=\"a{arcs}\" source=\"{pre}\" target=\"{tid}\"/>"
                    );
                    let _ = writeln!(
                        xml,
                        "      <arc id=\"a{}\" source=\"{tid}\" target=\"{after}\"/>",
                        arcs + 1
                    );
                    arcs += 2;
                }
            }
        }
    }
    xml.push_str("    </page>\n  </net>\n</pnml>\n");
    Ok(xml)
}
