//! What the engine's calls return: steps, end states (docs/semantics.md §6), errors, and views
//! of the marking.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::connection::{ConnState, OpId, Token};
use crate::history::BranchId;
use crate::operator::OpError;
use crate::operator::capability::{Budget, Spent};
use crate::types::{TypeInfo, Value};

/// How a run ended (docs/semantics.md §6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EndState {
    /// No operator is enabled and no connection is NEW.
    Completed,
    /// No operator is enabled but some connection is NEW: data is stuck.
    Deadlock {
        /// Each stuck consumer and why it cannot fire.
        stuck: Vec<Stuck>,
    },
    /// The operator picked next has already fired `limit` times.
    LoopLimit {
        /// The operator that would have fired once too many.
        op: String,
        /// The bound (`max_loop_iterations`).
        limit: u32,
    },
    /// The run used its step budget.
    StepLimit {
        /// The budget.
        limit: u64,
    },
    /// A model request would have started once the run's budget was spent (docs/semantics.md
    /// §4.7): the firing that made it was not applied, but what it spent counts.
    Budget {
        /// The operator whose firing made the request (for a request of an inner run, the
        /// `subnet` or `map` that started it).
        op: String,
        /// The budget.
        limit: Budget,
        /// What the run spent, inner runs and the stopped firing included.
        usage: Spent,
    },
    /// An operator failed; nothing of its firing was applied.
    Error {
        /// The operator that failed.
        op: String,
        /// Its error message.
        error: String,
    },
    /// The run was cancelled; the marking is consistent.
    Cancelled,
    /// Nothing else can fire and these operators wait for an answer from outside the net (an
    /// `ask`): a suspension, not an end — [`Cvm::provide`](super::Cvm::provide) an answer and
    /// the run goes on (docs/semantics.md §6.1).
    Waiting {
        /// Each waiting operator and its question, in declaration order.
        waiting: Vec<Waiting>,
    },
}

impl EndState {
    /// `COMPLETED`, `DEADLOCK`, `LOOP_LIMIT`, `STEP_LIMIT`, `BUDGET`, `ERROR`, `CANCELLED` or
    /// `WAITING`.
    pub fn name(&self) -> &'static str {
        match self {
            EndState::Completed => "COMPLETED",
            EndState::Deadlock { .. } => "DEADLOCK",
            EndState::LoopLimit { .. } => "LOOP_LIMIT",
            EndState::StepLimit { .. } => "STEP_LIMIT",
            EndState::Budget { .. } => "BUDGET",
            EndState::Error { .. } => "ERROR",
            EndState::Cancelled => "CANCELLED",
            EndState::Waiting { .. } => "WAITING",
        }
    }
}

impl fmt::Display for EndState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndState::Completed | EndState::Cancelled => f.write_str(self.name()),
            EndState::Deadlock { stuck } => {
                write!(f, "DEADLOCK")?;
                for s in stuck {
                    write!(f, "\n  {}", s.message)?;
                }
                Ok(())
            }
            EndState::LoopLimit { op, limit } => {
                write!(
                    f,
                    "LOOP_LIMIT: `{op}` has fired {limit} times (max_loop_iterations)"
                )
            }
            EndState::StepLimit { limit } => write!(f, "STEP_LIMIT: step budget of {limit} used"),
            EndState::Budget { op, limit, usage } => write!(
                f,
                "BUDGET: `{op}` would make a model request once the budget of {limit} is spent ({usage})"
            ),
            EndState::Error { op, error } => write!(f, "ERROR in `{op}`: {error}"),
            EndState::Waiting { waiting } => {
                write!(f, "WAITING")?;
                for w in waiting {
                    write!(f, "\n  `{}` asks: {} ({})", w.op, w.prompt, w.ty.name)?;
                }
                Ok(())
            }
        }
    }
}

/// The end of a run whose firing of `op` failed because a model request was refused by the
/// run's budget ([`Meter::stopped`](crate::operator::capability::Meter::stopped)): `BUDGET`
/// rather than `ERROR` (docs/semantics.md §4.7). `None` when the budget refused nothing.
#[cold]
pub(super) fn budget_stop(
    caps: &std::sync::Arc<dyn crate::operator::capability::Capabilities>,
    op: &str,
) -> Option<EndState> {
    let meter = caps.meter().filter(|m| m.stopped())?;
    Some(EndState::Budget {
        op: op.to_owned(),
        limit: meter.limit(),
        usage: meter.spent(),
    })
}

/// An operator that waits for an answer (docs/semantics.md §6.1): serializes as
/// `{"op":…,"prompt":…}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// The waiting operator.
    pub op: String,
    /// Its question's prompt.
    pub prompt: String,
    /// The type the answer must have (not serialized: read back, it is `Any`; the engine's
    /// [`terminal_state`](super::Cvm::terminal_state) gives the real one).
    #[serde(skip, default = "any_type")]
    pub ty: &'static TypeInfo,
}

fn any_type() -> &'static TypeInfo {
    <crate::types::Any as crate::types::PortType>::INFO
}

/// Why a stuck consumer cannot fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StuckReason {
    /// An input has never received a token.
    Empty,
    /// An input's token was already consumed and the policy needs it NEW (`All`).
    Old,
    /// An output connection still holds an unconsumed token (back-pressure).
    BackPressure,
    /// The operator's custom firing rule is false.
    CustomRule,
}

/// One reason one operator is stuck in a deadlock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stuck {
    /// The stuck operator.
    pub op: String,
    /// The input at fault, if an input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The output at fault (back-pressure), if an output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why.
    pub reason: StuckReason,
    /// The same, as a sentence.
    #[serde(skip)]
    pub message: String,
}

/// What a forward step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Operators fired (one in sequential mode); `replayed` when re-applied from history
    /// without running.
    Fired {
        /// The operators that fired, in declaration order.
        ops: Vec<OpId>,
        /// The step's 1-based logical index.
        step: u32,
        /// Whether the step was replayed from history.
        replayed: bool,
    },
    /// Nothing fired: the run is in this end state.
    Ended(EndState),
}

/// What a forward step did, internally (no allocation).
pub(super) enum Advance {
    Fired { replayed: bool },
    Ended(EndState),
}

/// A failed step. The marking, the history and every operator are as before the step.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// An operator's `run` returned an error or panicked.
    #[error("operator `{op}` failed: {error}")]
    Operator {
        /// The operator's instance name.
        op: String,
        /// What it reported.
        error: OpError,
    },
    /// A step could not be replayed because its operator is not enabled: a recorded step (the
    /// net's options changed since it was recorded), or one given to
    /// [`Cvm::fire_op`](crate::Cvm::fire_op).
    #[error("cannot replay step {step}: `{op}` is not enabled")]
    ReplayDiverged {
        /// The step.
        step: u32,
        /// Its operator.
        op: String,
    },
    /// The run's recorder (its journal) could not record the step, so the step was undone.
    #[error("the step could not be journaled, so it was undone: {0}")]
    Record(#[from] super::RecordError),
}

/// A backward step that could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackError {
    /// Already at the initial marking.
    #[error("nothing to undo: the net is at its initial marking")]
    AtStart,
}

/// A run that could not proceed (not an end state: those are [`EndState`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A recorded step could not be replayed.
    #[error(transparent)]
    Step(#[from] StepError),
}

/// A branch switch that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// No such branch.
    #[error("no branch {0:?} in the history")]
    UnknownBranch(BranchId),
    /// Replaying the branch failed.
    #[error(transparent)]
    Step(#[from] StepError),
}

/// A connection's state and data, from [`Cvm::state_of`](super::Cvm::state_of).
#[derive(Clone, Copy, Debug)]
pub struct ConnView<'a> {
    /// EMPTY, NEW or OLD.
    pub state: ConnState,
    /// The token, when NEW or OLD.
    pub token: Option<&'a Token>,
}

impl ConnView<'_> {
    /// The token's value, if any.
    pub fn value(&self) -> Option<&Value> {
        self.token.map(|t| &t.value)
    }
}

/// A snapshot of the marking: each connection's state and token. Two markings are equal when
/// every connection has the same state and the very same token (same value allocation, same
/// logical step, same emitter): bit-for-bit, not merely equal values.
#[derive(Clone, Debug)]
pub struct Marking(pub Vec<(ConnState, Option<Token>)>);

impl PartialEq for Marking {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| {
                a.0 == b.0
                    && match (&a.1, &b.1) {
                        (None, None) => true,
                        (Some(x), Some(y)) => {
                            Value::ptr_eq(&x.value, &y.value) && x.step == y.step && x.op == y.op
                        }
                        _ => false,
                    }
            })
    }
}
