//! Firing policies: when an operator may fire (docs/semantics.md §3).
//!
//! A policy is a default for [`Operator::can_fire`](crate::Operator::can_fire), which is a method on
//! the operator (Template Method): the engine asks every operator the same question and never
//! special-cases one. The engine adds back-pressure on top of the rule (docs/semantics.md §3.2).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::connection::ConnState;

/// The built-in firing rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// No input EMPTY, and at least one input NEW (reactive). The default.
    #[default]
    Any,
    /// Every input NEW (a barrier).
    All,
    /// At least one input NEW; EMPTY inputs allowed (a loop-entry Merge).
    AnyNoGuard,
    /// Every output connection EMPTY: fires once (a producer of initial data).
    Source,
    /// The operator's own `can_fire`.
    Custom,
}

impl Policy {
    /// Every policy, in the order of the specification's table.
    pub const ALL: [Policy; 5] = [
        Policy::Any,
        Policy::All,
        Policy::AnyNoGuard,
        Policy::Source,
        Policy::Custom,
    ];

    /// The name used in `#[operator(firing = …)]`, the catalogue and `.cm` tooling.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Any => "any",
            Policy::All => "all",
            Policy::AnyNoGuard => "any_no_guard",
            Policy::Source => "source",
            Policy::Custom => "custom",
        }
    }

    /// One line saying what the rule is.
    pub fn describe(self) -> &'static str {
        match self {
            Policy::Any => "fires when no input is EMPTY and at least one input is NEW",
            Policy::All => "fires when every input is NEW",
            Policy::AnyNoGuard => "fires when at least one input is NEW (EMPTY inputs allowed)",
            Policy::Source => "fires once, while every output connection is EMPTY",
            Policy::Custom => "fires by the operator's own rule",
        }
    }

    /// Evaluates the rule on input states (one per input port) and output states (one per output
    /// port, see [`Enabling::outputs`]). `Custom` has no generic rule and answers `false`: an
    /// operator with a custom policy overrides `can_fire`.
    pub fn allows(self, inputs: &[ConnState], outputs: &[ConnState]) -> bool {
        match self {
            Policy::Any => {
                let mut any_new = false;
                for s in inputs {
                    match s {
                        ConnState::Empty => return false,
                        ConnState::New => any_new = true,
                        ConnState::Old => {}
                    }
                }
                any_new
            }
            Policy::All => !inputs.is_empty() && inputs.iter().all(|s| *s == ConnState::New),
            Policy::AnyNoGuard => inputs.contains(&ConnState::New),
            Policy::Source => outputs.iter().all(|s| *s == ConnState::Empty),
            Policy::Custom => false,
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown firing policy `{s}` (expected any, all, any_no_guard, source or custom)"))
    }
}

/// The two families of operators (docs/semantics.md §1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Flow control, no data transformation (copies references). Runs inline in parallel mode;
    /// its `Any` ports are type variables.
    Structural,
    /// Data processing, interaction, injection. May run concurrently in parallel mode; its `Any`
    /// inputs accept every type.
    #[default]
    Behavioral,
}

impl Family {
    /// `structural` or `behavioral`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Structural => "structural",
            Family::Behavioral => "behavioral",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an operator sees when the engine asks whether it can fire.
#[derive(Debug, Clone, Copy)]
pub struct Enabling<'a> {
    /// One state per input port, in port order. An unconnected optional input is `OLD`.
    pub inputs: &'a [ConnState],
    /// One state per output port, in port order: `NEW` if any of the port's connections is NEW,
    /// else `OLD` if any is OLD, else `EMPTY` (also for a port with no connection).
    pub outputs: &'a [ConnState],
    /// The operator's declared policy.
    pub policy: Policy,
}

impl Enabling<'_> {
    /// The declared policy's rule: what `can_fire` does unless an operator overrides it.
    pub fn policy_allows(&self) -> bool {
        self.policy.allows(self.inputs, self.outputs)
    }
}

/// Folds the states of one output port's connections into the port's state (see
/// [`Enabling::outputs`]).
pub(crate) fn fold_port_state(acc: ConnState, s: ConnState) -> ConnState {
    match (acc, s) {
        (ConnState::New, _) | (_, ConnState::New) => ConnState::New,
        (ConnState::Old, _) | (_, ConnState::Old) => ConnState::Old,
        _ => ConnState::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::ConnState::{Empty as E, New as N, Old as O};
    use super::*;

    #[test]
    fn any_policy_needs_no_empty_input_and_one_new() {
        assert!(Policy::Any.allows(&[N, O], &[]));
        assert!(!Policy::Any.allows(&[N, E], &[]));
        assert!(!Policy::Any.allows(&[O, O], &[]));
    }

    #[test]
    fn all_policy_needs_every_input_new() {
        assert!(Policy::All.allows(&[N, N], &[]));
        assert!(!Policy::All.allows(&[N, O], &[]));
    }

    #[test]
    fn any_no_guard_policy_allows_empty_inputs() {
        assert!(Policy::AnyNoGuard.allows(&[N, E], &[]));
        assert!(!Policy::AnyNoGuard.allows(&[E, O], &[]));
    }

    #[test]
    fn source_policy_fires_only_while_outputs_are_empty() {
        assert!(Policy::Source.allows(&[], &[E, E]));
        assert!(!Policy::Source.allows(&[], &[E, O]));
    }

    #[test]
    fn policy_names_parse_back() {
        for p in Policy::ALL {
            assert_eq!(p.as_str().parse::<Policy>(), Ok(p));
        }
        assert!("sometimes".parse::<Policy>().is_err());
    }
}
