//! The verifier's report: the [`Report`] of [`verify`](super::verify), its [`Verdict`], and
//! each property's outcome with its witness. Serializes to the JSON of
//! `cameleon check --verify --json`; the text form is in `display`.

use std::time::Duration;

use serde::Serialize;

/// The overall outcome of a verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every property holds (the whole state space was explored).
    Holds,
    /// Some property fails; its witness is in the report.
    Fails,
    /// The state budget stopped the exploration before any property failed.
    Inconclusive,
}

impl Verdict {
    /// The `cameleon check --verify` exit code: 0 holds, 3 a property fails, 4 the state budget
    /// was used up before a verdict (as `run` exits 4 on its budgets).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Holds => 0,
            Verdict::Fails => 3,
            Verdict::Inconclusive => 4,
        }
    }
}

/// A property with a pass/fail answer and, when it fails, a witness (a shortest one of the
/// state space explored, docs/semantics.md §8.3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `Some(true)` holds, `Some(false)` fails, `None` unknown (state budget used up).
    pub holds: Option<bool>,
    /// When it fails: a firing sequence from the initial marking (shortest in the state space
    /// explored), as operator instance names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Vec<String>>,
    /// The same firings, each naming the outputs it chose when the operator has several
    /// emission sets (`gate:out_true`): the exact path, for [`follow`](super::follow()).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// Connections NEW at the end of the witness (the stuck tokens of a deadlock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new: Vec<String>,
    /// What went wrong, as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An operator that never fires, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadOperator {
    /// Its instance name.
    pub op: String,
    /// Why it is never enabled.
    pub reason: String,
}

/// The dead-operators property.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeadCheck {
    /// `Some(true)`: every operator is enabled in some reachable state.
    pub holds: Option<bool>,
    /// The operators never enabled (in the explored part, if the budget was used up).
    pub dead: Vec<DeadOperator>,
}

/// What a report says of a detail that the partial-order reduction does not preserve and that a
/// full exploration within the state budget could not compute (docs/semantics.md §8.6).
pub const NOT_CHECKED_UNDER_REDUCTION: &str = "not_checked_under_reduction";

/// Whether runs may loop: a reachable cycle. Information, not a failure: such runs end only by
/// `max_loop_iterations`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoopCheck {
    /// `Some(true)`: a cycle is reachable.
    pub may_loop: Option<bool>,
    /// A shortest firing sequence to a state on a cycle (operator names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// A shortest cycle through that state (operator names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<String>>,
    /// `prefix` with the outputs chosen (see [`Check::path`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_path: Option<Vec<String>>,
    /// `cycle` with the outputs chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_path: Option<Vec<String>>,
    /// [`NOT_CHECKED_UNDER_REDUCTION`] when a cycle is reachable but its shortest lasso is not
    /// known: the reduced state space has a cycle, and the full one exceeds the state budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lasso: Option<&'static str>,
}

/// Every property, with its details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Properties {
    /// No reachable terminal state has a NEW connection.
    pub deadlock_free: Check,
    /// From every reachable state a COMPLETED state is reachable (soundness).
    pub option_to_complete: Check,
    /// Every operator is enabled in some reachable state.
    pub no_dead_operators: DeadCheck,
    /// No firing writes a connection that is still NEW (holds by construction, docs/semantics.md §3).
    pub one_safe: Check,
    /// Reachable cycles.
    pub may_loop: LoopCheck,
}

/// What the exploration covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Exploration {
    /// The state budget.
    pub max_states: u64,
    /// Whether the budget stopped the exploration.
    pub budget_hit: bool,
    /// States whose successors were computed.
    pub expanded: u64,
    /// States stored but not expanded.
    pub frontier: u64,
    /// Firings from the initial marking to the last stored state (the deepest, unless the
    /// reduction's proviso added states after the fact).
    pub depth: u64,
    /// States that the reduction's cycle proviso expanded fully after the fact
    /// (docs/semantics.md §8.6); 0 for a full exploration.
    pub proviso_expansions: u64,
}

/// Figures about the exploration itself (not serialized: they vary from run to run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Time spent exploring and analysing.
    pub elapsed: Duration,
    /// Bytes held by the exploration (states, hash table, edges, parents) at its end.
    pub bytes: usize,
    /// Wall-clock time of the full exploration (docs/semantics.md §8.8) during which one
    /// thread worked alone: all of it on one thread; zero when only the reduced exploration
    /// ran (§8.6).
    pub serial: Duration,
    /// The full exploration's critical path: its serial sections plus, per phase shared
    /// between threads, the CPU time of the busiest thread — about the time it takes on idle
    /// cores, however loaded the machine is (CPU time is read on Linux; elsewhere the wall
    /// clock stands in for it).
    pub critical: Duration,
}

/// The result of [`verify`](super::verify). Serializes to the JSON of
/// `cameleon check --verify --json`. (Not `PartialEq`: its [`Stats`] differ from run to run;
/// compare [`to_json`](Self::to_json).)
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The net passed validation (always true here; the CLI reports invalid files itself).
    pub valid: bool,
    /// The net's name.
    pub net: String,
    /// Overall outcome.
    pub verdict: Verdict,
    /// Whether the whole reachable state space was explored (under reduction: the whole
    /// reduced state space).
    pub complete: bool,
    /// Whether the exploration used the partial-order reduction (docs/semantics.md §8.6):
    /// `states` and `edges` then count the reduced state space.
    pub reduced: bool,
    /// States stored: the reachable ones, or those of the reduced state space when `reduced`.
    pub states: u64,
    /// Edges (firings between stored states) found.
    pub edges: u64,
    /// Shorthand for `properties.deadlock_free.holds`.
    pub deadlock_free: Option<bool>,
    /// Shorthand for `properties.option_to_complete.holds`.
    pub option_to_complete: Option<bool>,
    /// Shorthand for `properties.no_dead_operators.holds`.
    pub no_dead_operators: Option<bool>,
    /// Shorthand for `properties.one_safe.holds`.
    pub one_safe: Option<bool>,
    /// Shorthand for `properties.may_loop.may_loop`.
    pub may_loop: Option<bool>,
    /// The witness (operator names) of the first failing property among 1-safety,
    /// deadlock-freedom and option to complete, in that order; `null` if none fails.
    pub witness: Option<Vec<String>>,
    /// That witness with the outputs chosen (see [`Check::path`]); `null` if none fails.
    pub witness_path: Option<Vec<String>>,
    /// Names of the operators never enabled.
    pub dead_operators: Vec<String>,
    /// Every property with its details.
    pub properties: Properties,
    /// What the exploration covered.
    pub exploration: Exploration,
    /// Time and memory.
    #[serde(skip)]
    pub stats: Stats,
}

impl Report {
    /// The report as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
