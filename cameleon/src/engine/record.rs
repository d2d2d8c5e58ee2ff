//! Recording the history: the hook a journal plugs into (docs/semantics.md §5.5).
//!
//! A [`Recorder`] installed with [`Cvm::set_recorder`] is told, on the engine's thread, of every
//! step committed anew ([`Committed`]: its firings, what they consumed and wrote, the tokens they
//! emitted, the operators' states before and after — its [`StepRecord`] in one call), of every
//! move along the history tree (backward steps, replays, checkouts: the new [`Position`]) and of
//! the end of a run. A recorder that fails to record a step makes the step fail: the engine
//! undoes it, so the marking never runs ahead of what was recorded.
//!
//! [`Cvm::restore`] (in `restore.rs`) does the reverse on a fresh engine.
//!
//! The engine pays next to nothing for this when no recorder is installed: one check of an
//! `Option` per step.

use std::fmt;

use super::outcome::Advance;
use super::{Cvm, EndState, Event, StepError};
use crate::connection::{ConnId, NONE, OpId, Token};
use crate::history::StepRecord;
use crate::operator::OpState;

/// Where the engine stands in its history tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Position {
    /// The last applied step's node (`None`: the initial marking).
    pub tip: Option<u32>,
    /// The deepest node a forward step would replay to (`None`: nothing to replay). The
    /// recorded future is the path from `tip` down to it.
    pub redo_tip: Option<u32>,
    /// Number of applied steps.
    pub depth: u32,
}

/// A recorder's failure. The step it was recording did not happen (the engine undid it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

/// What the engine tells a journal, on its own thread, as the run goes.
pub trait Recorder: Send {
    /// A step was executed and applied (a new node of the history tree). An error undoes it.
    fn committed(&mut self, step: &Committed<'_>) -> Result<(), RecordError>;

    /// The position changed without a new step: a backward step, a replay, a checkout.
    fn moved(&mut self, at: Position) -> Result<(), RecordError>;

    /// The run stopped in `end` (an end state; a run may still go on afterwards, e.g. after
    /// `CANCELLED`).
    fn ended(&mut self, end: &EndState, at: Position) -> Result<(), RecordError>;
}

/// A step just committed, as a [`Recorder`] sees it.
pub struct Committed<'a> {
    cvm: &'a Cvm,
    node: u32,
}

impl fmt::Debug for Committed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Committed")
            .field("node", &self.node)
            .field("step", &self.step())
            .finish_non_exhaustive()
    }
}

impl<'a> Committed<'a> {
    /// The node's index in the history tree (nodes are numbered in creation order from 0).
    pub fn node(&self) -> u32 {
        self.node
    }

    /// The parent node (`None`: a first step).
    pub fn parent(&self) -> Option<u32> {
        some(self.cvm.history.nodes[self.node as usize].parent)
    }

    /// The step's 1-based logical index (its depth in the tree).
    pub fn step(&self) -> u32 {
        self.cvm.history.path.len() as u32
    }

    /// The branch the node lies on (see [`Firing::branch`](crate::Firing::branch)).
    pub fn branch(&self) -> u32 {
        self.cvm.history.branch_of(self.node)
    }

    /// The position after the step.
    pub fn position(&self) -> Position {
        self.cvm.position()
    }

    /// The engine (for the net's names and types).
    pub fn cvm(&self) -> &'a Cvm {
        self.cvm
    }

    /// The step's firings, in declaration order.
    pub fn firings(&self) -> impl Iterator<Item = CommittedFiring<'a>> + '_ {
        let cvm = self.cvm;
        let tokens = cvm.history.token_range(self.node, cvm.marking.tokens.len());
        cvm.history
            .firing_range(self.node)
            .map(move |f| CommittedFiring {
                cvm,
                f,
                tokens: tokens.clone(),
            })
    }

    /// The step in its one recorded form (what a journal stores, what [`Cvm::restore`]
    /// loads). `Err`: a value or an operator state without a serde form, named.
    pub fn record(&self) -> Result<StepRecord, RecordError> {
        self.cvm.step_record(self.node)
    }
}

/// One firing of a [`Committed`] step.
pub struct CommittedFiring<'a> {
    cvm: &'a Cvm,
    f: usize,
    /// The arena range of the step's tokens.
    tokens: std::ops::Range<usize>,
}

impl fmt::Debug for CommittedFiring<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommittedFiring")
            .field("op", &self.op_name())
            .finish_non_exhaustive()
    }
}

impl<'a> CommittedFiring<'a> {
    /// The operator.
    pub fn op(&self) -> OpId {
        OpId(self.cvm.history.firings[self.f].op)
    }

    /// The operator's instance name.
    pub fn op_name(&self) -> &'a str {
        &self.cvm.net.ops[self.op().index()].name
    }

    /// The connections it consumed (NEW → OLD), in port order.
    pub fn consumed(&self) -> impl Iterator<Item = ConnId> + 'a {
        let h = &self.cvm.history;
        h.consumed[h.consumed_range(self.f)]
            .iter()
            .map(|c| ConnId(*c))
    }

    /// The connections it wrote: the connection, the token it held before (`None`: it was
    /// EMPTY), the new token (indices into the engine's token arena, see [`Cvm::token`]).
    pub fn written(&self) -> impl Iterator<Item = (ConnId, Option<u32>, u32)> + 'a {
        let h = &self.cvm.history;
        h.written[h.written_range(self.f)]
            .iter()
            .map(|w| (ConnId(w.conn), some(w.prior_tok), w.new_tok))
    }

    /// The tokens the firing emitted, in emission order, with their arena index (an emission on
    /// an output nobody reads is a token too, written to no connection).
    pub fn tokens(&self) -> impl Iterator<Item = (u32, &'a Token)> + 'a {
        let op = self.op();
        let first = self.tokens.start;
        self.cvm.marking.tokens[self.tokens.clone()]
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.op == op)
            .map(move |(i, t)| ((first + i) as u32, t))
    }

    /// The operator's internal state before the firing, if it has one.
    pub fn before(&self) -> Option<&'a OpState> {
        self.cvm
            .history
            .saved(self.f)
            .and_then(|s| s.before.as_ref())
    }

    /// The operator's internal state after the firing, if it has one.
    pub fn after(&self) -> Option<&'a OpState> {
        self.cvm
            .history
            .saved(self.f)
            .and_then(|s| s.after.as_ref())
    }
}

fn some(i: u32) -> Option<u32> {
    (i != NONE).then_some(i)
}

impl Cvm {
    /// Installs `recorder`: from now on every committed step, move and end is reported to it.
    /// Replaces (and returns) the one installed before.
    pub fn set_recorder(&mut self, recorder: Box<dyn Recorder>) -> Option<Box<dyn Recorder>> {
        self.context.recorder.replace(recorder)
    }

    /// Removes the recorder.
    pub fn take_recorder(&mut self) -> Option<Box<dyn Recorder>> {
        let old = self.context.recorder.take();
        self.context.deferred = None;
        old
    }

    /// Where the engine stands in its history tree.
    pub fn position(&self) -> Position {
        Position {
            tip: self.history.path.last().copied(),
            redo_tip: self.history.redo.first().copied(),
            depth: self.history.path.len() as u32,
        }
    }

    /// Tells the recorder that the run stopped in `end`, for drivers that decide an end
    /// themselves (a Ctrl-C between steps). [`run`](Self::run), [`run_async`](Self::run_async)
    /// and a [`step`](Self::step) that ends already do.
    pub fn record_end(&mut self, end: &EndState) -> Result<(), StepError> {
        let Some(mut rec) = self.context.recorder.take() else {
            return Ok(());
        };
        let at = self.position();
        let r = match self.context.deferred.take() {
            Some(e) => Err(e),
            None => rec.ended(end, at),
        };
        self.context.recorder = Some(rec);
        r.map_err(StepError::Record)
    }

    /// After a step: records its end, if it ended (or failed).
    pub(super) fn record_outcome(
        &mut self,
        r: &Result<Advance, StepError>,
    ) -> Result<(), StepError> {
        match r {
            Ok(Advance::Ended(end)) => self.record_end(end),
            Err(StepError::Operator { op, error }) => self.record_end(&EndState::Error {
                op: op.clone(),
                error: error.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Records the current position after a replay.
    pub(super) fn record_move(&mut self) -> Result<(), StepError> {
        let Some(mut rec) = self.context.recorder.take() else {
            return Ok(());
        };
        let r = match self.context.deferred.take() {
            Some(e) => Err(e),
            None => rec.moved(self.position()),
        };
        self.context.recorder = Some(rec);
        r.map_err(StepError::Record)
    }

    /// Records the current position after a move that cannot fail (a backward step, a
    /// checkout): a failure is reported by the next recording.
    pub(super) fn record_move_later(&mut self) {
        if let Err(StepError::Record(e)) = self.record_move() {
            self.context.deferred = Some(e);
        }
    }

    /// Records the step just committed as `node`; if the recorder fails, undoes the step and
    /// drops the node, and returns the failure.
    pub(super) fn record_commit(&mut self, node: u32, step: u32) -> Result<(), StepError> {
        let Some(mut rec) = self.context.recorder.take() else {
            return Ok(());
        };
        let r = match self.context.deferred.take() {
            Some(e) => Err(e),
            None => rec.committed(&Committed { cvm: self, node }),
        };
        self.context.recorder = Some(rec);
        let Err(e) = r else {
            return Ok(());
        };
        // Undo the step: the marking must not run ahead of the record.
        let first_token = self.history.nodes[node as usize].first_token;
        self.history.path.pop();
        self.undo_node(node);
        self.history.drop_last_node();
        self.marking.tokens.truncate(first_token as usize);
        if self.observer.is_some() {
            self.notify(|_| Event::StepDiscarded {
                step,
                reason: "ERROR".into(),
            });
        }
        Err(StepError::Record(e))
    }
}
