//! Recording and restoring the history: the hook a journal plugs into (docs/semantics.md §5.5).
//!
//! A [`Recorder`] installed with [`Cvm::set_recorder`] is told, on the engine's thread, of every
//! step committed anew ([`Committed`]: its firings, what they consumed and wrote, the tokens they
//! emitted, the operators' states before and after), of every move along the history tree
//! (backward steps, replays, checkouts: the new [`Position`]) and of the end of a run. A
//! recorder that fails to record a step makes the step fail: the engine undoes it, so the
//! marking never runs ahead of what was recorded.
//!
//! [`Cvm::restore`] does the reverse on a fresh engine: it loads recorded steps into the history
//! tree and re-applies those of the current path **without running any operator** — as a replay
//! does (§5.3): the tokens come back, each operator's `replay` re-installs its saved state.
//!
//! The engine pays nothing for this when no recorder is installed: a recorder makes the engine
//! take its general path (the `slow` flag), and only that path looks for one.

use std::fmt;

use super::outcome::Advance;
use super::{Cvm, EndState, Event, StepError};
use crate::connection::{ConnId, ConnState, NONE, OpId, Token};
use crate::history::{FiringRec, SavedStates, Written};
use crate::operator::OpState;
use crate::types::Value;

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
    first_token: u32,
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
        some(self.cvm.hist.nodes[self.node as usize].parent)
    }

    /// The step's 1-based logical index (its depth in the tree).
    pub fn step(&self) -> u32 {
        self.cvm.hist.path.len() as u32
    }

    /// The branch the node lies on (see [`Firing::branch`](crate::Firing::branch)).
    pub fn branch(&self) -> u32 {
        self.cvm.hist.nodes[self.node as usize].branch
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
        let first_token = self.first_token;
        cvm.hist
            .firing_range(self.node)
            .map(move |f| CommittedFiring {
                cvm,
                f,
                first_token,
            })
    }
}

/// One firing of a [`Committed`] step.
pub struct CommittedFiring<'a> {
    cvm: &'a Cvm,
    f: usize,
    first_token: u32,
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
        OpId(self.cvm.hist.firings[self.f].op)
    }

    /// The operator's instance name.
    pub fn op_name(&self) -> &'a str {
        &self.cvm.net.ops[self.op().index()].name
    }

    /// The connections it consumed (NEW → OLD), in port order.
    pub fn consumed(&self) -> impl Iterator<Item = ConnId> + 'a {
        let h = &self.cvm.hist;
        h.consumed[h.consumed_range(self.f)]
            .iter()
            .map(|c| ConnId(*c))
    }

    /// The connections it wrote: the connection, the token it held before (`None`: it was
    /// EMPTY), the new token (indices into the engine's token arena, see [`Cvm::token`]).
    pub fn written(&self) -> impl Iterator<Item = (ConnId, Option<u32>, u32)> + 'a {
        let h = &self.cvm.hist;
        h.written[h.written_range(self.f)]
            .iter()
            .map(|w| (ConnId(w.conn), some(w.prior_tok), w.new_tok))
    }

    /// The tokens the firing emitted, in emission order, with their arena index (an emission on
    /// an output nobody reads is a token too, written to no connection).
    pub fn tokens(&self) -> impl Iterator<Item = (u32, &'a Token)> + 'a {
        let op = self.op();
        let first = self.first_token as usize;
        self.cvm.tokens[first..]
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.op == op)
            .map(move |(i, t)| ((first + i) as u32, t))
    }

    /// The operator's internal state before the firing, if it has one.
    pub fn before(&self) -> Option<&'a OpState> {
        self.cvm.hist.saved(self.f).and_then(|s| s.before.as_ref())
    }

    /// The operator's internal state after the firing, if it has one.
    pub fn after(&self) -> Option<&'a OpState> {
        self.cvm.hist.saved(self.f).and_then(|s| s.after.as_ref())
    }
}

fn some(i: u32) -> Option<u32> {
    (i != NONE).then_some(i)
}

fn raw(i: Option<u32>) -> u32 {
    i.unwrap_or(NONE)
}

/// A recorded history, to load into a fresh engine with [`Cvm::restore`].
#[derive(Debug, Default)]
pub struct Recorded {
    /// Every node of the tree, in creation order (a node's parent comes before it).
    pub steps: Vec<RecordedStep>,
    /// The position to restore.
    pub tip: Option<u32>,
    /// The deepest node of the recorded future (see [`Position::redo_tip`]).
    pub redo_tip: Option<u32>,
}

/// One recorded node.
#[derive(Debug, Default)]
pub struct RecordedStep {
    /// Its parent (`None`: a first step).
    pub parent: Option<u32>,
    /// Its firings, in declaration order.
    pub firings: Vec<RecordedFiring>,
}

/// One recorded firing.
#[derive(Debug)]
pub struct RecordedFiring {
    /// The operator.
    pub op: OpId,
    /// The connections it consumed.
    pub consumed: Vec<ConnId>,
    /// The connections it wrote: (connection, prior token, new token), as
    /// [`CommittedFiring::written`] gives them.
    pub written: Vec<(ConnId, Option<u32>, u32)>,
    /// The values of the tokens it emitted, in emission order (as
    /// [`CommittedFiring::tokens`] gives them): their arena indices follow every earlier
    /// node's tokens.
    pub tokens: Vec<Value>,
    /// The operator's state before the firing.
    pub before: Option<OpState>,
    /// The operator's state after the firing.
    pub after: Option<OpState>,
}

/// Why a recorded history could not be restored. The engine is then unusable: build a new one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The engine has already run.
    #[error("the engine is not at its initial marking with an empty history")]
    NotFresh,
    /// The record does not fit the net (an index out of range, a connection the operator does
    /// not touch, a token that does not exist yet).
    #[error("recorded step #{node}: {message}")]
    Invalid {
        /// The node (creation order).
        node: u32,
        /// What is wrong.
        message: String,
    },
    /// Re-applying the current path met a firing its operator could not have made.
    #[error("recorded step {step}: `{op}` {reason}")]
    Diverged {
        /// The 1-based step.
        step: u32,
        /// The operator.
        op: String,
        /// Why.
        reason: String,
    },
}

impl Cvm {
    /// Installs `recorder`: from now on every committed step, move and end is reported to it.
    /// Replaces (and returns) the one installed before.
    pub fn set_recorder(&mut self, recorder: Box<dyn Recorder>) -> Option<Box<dyn Recorder>> {
        let old = self.recorder.replace(recorder);
        self.update_slow();
        old
    }

    /// Removes the recorder.
    pub fn take_recorder(&mut self) -> Option<Box<dyn Recorder>> {
        let old = self.recorder.take();
        self.deferred = None;
        self.update_slow();
        old
    }

    /// Where the engine stands in its history tree.
    pub fn position(&self) -> Position {
        Position {
            tip: self.hist.path.last().copied(),
            redo_tip: self.hist.redo.first().copied(),
            depth: self.hist.path.len() as u32,
        }
    }

    /// Tells the recorder that the run stopped in `end`, for drivers that decide an end
    /// themselves (a Ctrl-C between steps). [`run`](Self::run), [`run_async`](Self::run_async)
    /// and a [`step`](Self::step) that ends already do.
    pub fn record_end(&mut self, end: &EndState) -> Result<(), StepError> {
        let Some(mut rec) = self.recorder.take() else {
            return Ok(());
        };
        let at = self.position();
        let r = match self.deferred.take() {
            Some(e) => Err(e),
            None => rec.ended(end, at),
        };
        self.recorder = Some(rec);
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
        let Some(mut rec) = self.recorder.take() else {
            return Ok(());
        };
        let r = match self.deferred.take() {
            Some(e) => Err(e),
            None => rec.moved(self.position()),
        };
        self.recorder = Some(rec);
        r.map_err(StepError::Record)
    }

    /// Records the current position after a move that cannot fail (a backward step, a
    /// checkout): a failure is reported by the next recording.
    pub(super) fn record_move_later(&mut self) {
        if let Err(StepError::Record(e)) = self.record_move() {
            self.deferred = Some(e);
        }
    }

    /// Records the step just committed as `node` (its tokens from `first_token` on); if the
    /// recorder fails, undoes the step and drops the node, and returns the failure.
    pub(super) fn record_commit(
        &mut self,
        node: u32,
        first_token: u32,
        step: u32,
        observed: bool,
    ) -> Result<(), StepError> {
        let Some(mut rec) = self.recorder.take() else {
            return Ok(());
        };
        let r = match self.deferred.take() {
            Some(e) => Err(e),
            None => rec.committed(&Committed {
                cvm: self,
                node,
                first_token,
            }),
        };
        self.recorder = Some(rec);
        let Err(e) = r else {
            return Ok(());
        };
        // Undo the step: the marking must not run ahead of the record.
        self.hist.path.pop();
        self.undo_node(node);
        self.hist.drop_last_node();
        self.tokens.truncate(first_token as usize);
        if observed {
            self.notify(|_| Event::StepDiscarded {
                step,
                reason: "ERROR".into(),
            });
        }
        Err(StepError::Record(e))
    }

    /// Loads a recorded history into this fresh engine and re-applies its current path, **without
    /// running any operator**: each firing of the path is replayed (docs/semantics.md §5.3) —
    /// its tokens come back, its operator's `replay` re-installs the state saved after it — and
    /// the recorded future after the position waits to be replayed, as after backward steps.
    ///
    /// The record is checked against the net; a record that does not fit it is refused. Limits
    /// (`max_loop_iterations`, the step budget) are not applied to the restored steps.
    pub fn restore(&mut self, rec: Recorded) -> Result<(), RestoreError> {
        if !self.hist.nodes.is_empty() || !self.tokens.is_empty() || !self.pending.is_empty() {
            return Err(RestoreError::NotFresh);
        }
        let n_ops = self.net.ops.len();
        let n_conns = self.net.conns.len();
        let mut depth: Vec<u32> = Vec::with_capacity(rec.steps.len());
        for (i, st) in rec.steps.into_iter().enumerate() {
            let node = i as u32;
            let bad = |message: String| RestoreError::Invalid { node, message };
            let parent = match st.parent {
                None => NONE,
                Some(p) if p < node => p,
                Some(p) => return Err(bad(format!("its parent #{p} comes after it"))),
            };
            let d = if parent == NONE {
                1
            } else {
                depth[parent as usize] + 1
            };
            depth.push(d);
            if st.firings.is_empty() {
                return Err(bad("it has no firing".into()));
            }
            self.hist.open_node_at(parent);
            let mut seen = vec![false; 0];
            for fr in st.firings {
                let o = fr.op.index();
                if o >= n_ops {
                    return Err(bad(format!("operator #{o} does not exist")));
                }
                if seen.is_empty() {
                    seen = vec![false; n_ops];
                }
                if std::mem::replace(&mut seen[o], true) {
                    return Err(bad(format!("`{}` fires twice", self.net.ops[o].name)));
                }
                let name = &self.net.ops[o].name;
                let firing = self.hist.firings.len() as u32;
                self.hist.firings.push(FiringRec {
                    op: o as u32,
                    consumed_start: self.hist.consumed.len() as u32,
                    written_start: self.hist.written.len() as u32,
                });
                for c in &fr.consumed {
                    if c.index() >= n_conns || self.topo.consumer[c.index()] as usize != o {
                        return Err(bad(format!(
                            "`{name}` consumed connection #{}, which is not one of its inputs",
                            c.0
                        )));
                    }
                    self.hist.consumed.push(c.0);
                }
                let first = self.tokens.len() as u32;
                let end = first + fr.tokens.len() as u32;
                for (c, prior, new) in &fr.written {
                    if c.index() >= n_conns || self.topo.producer[c.index()] as usize != o {
                        return Err(bad(format!(
                            "`{name}` wrote connection #{}, which is not one of its outputs",
                            c.0
                        )));
                    }
                    if prior.is_some_and(|p| p >= first) {
                        return Err(bad(format!("`{name}` replaced a token not yet emitted")));
                    }
                    if !(first..end).contains(new) {
                        return Err(bad(format!("`{name}` wrote a token it did not emit")));
                    }
                    self.hist.written.push(Written {
                        conn: c.0,
                        prior_tok: raw(*prior),
                        new_tok: *new,
                    });
                }
                for value in fr.tokens {
                    self.tokens.push(Token {
                        value,
                        step: d,
                        op: OpId(o as u32),
                    });
                }
                if fr.before.is_some() || fr.after.is_some() {
                    self.hist.states.push(SavedStates {
                        firing,
                        before: fr.before,
                        after: fr.after,
                    });
                }
            }
        }
        let n_nodes = self.hist.nodes.len() as u32;
        let path = match rec.tip {
            None => Vec::new(),
            Some(t) if t < n_nodes => self.hist.path_to(t),
            Some(t) => {
                return Err(RestoreError::Invalid {
                    node: t,
                    message: "the position is a step that does not exist".into(),
                });
            }
        };
        for node in path {
            let step = self.hist.path.len() as u32 + 1;
            for f in self.hist.firing_range(node) {
                self.check_replayable(f, step)?;
            }
            for f in self.hist.firing_range(node) {
                self.redo_firing(f);
            }
            self.hist.path.push(node);
        }
        if let Some(r) = rec.redo_tip {
            let future = if r < n_nodes {
                self.hist.path_to(r)
            } else {
                Vec::new()
            };
            if future.len() <= self.hist.path.len() || !future.starts_with(&self.hist.path) {
                return Err(RestoreError::Invalid {
                    node: r,
                    message: "the recorded future does not continue the position".into(),
                });
            }
            self.hist.redo = future[self.hist.path.len()..]
                .iter()
                .rev()
                .copied()
                .collect();
        }
        Ok(())
    }

    /// Whether recorded firing `f` can be re-applied at the current marking: its operator
    /// enabled, what it consumed NEW, what it wrote holding the token it replaced.
    fn check_replayable(&self, f: usize, step: u32) -> Result<(), RestoreError> {
        let o = self.hist.firings[f].op as usize;
        let diverged = |reason: &str| RestoreError::Diverged {
            step,
            op: self.net.ops[o].name.clone(),
            reason: reason.to_owned(),
        };
        // An operator with a question waits until it has an answer; the answer a recorded
        // firing used is in its saved state before the firing, not yet given back: its rule
        // holding is what counts (docs/semantics.md §6.1).
        if !(self.enabled.get(o) || (self.any_asks && self.waiting.get(o))) {
            return Err(diverged("is not enabled there"));
        }
        for i in self.hist.consumed_range(f) {
            if self.state[self.hist.consumed[i] as usize] != ConnState::New {
                return Err(diverged("consumed a connection that was not NEW"));
            }
        }
        for i in self.hist.written_range(f) {
            let w = self.hist.written[i];
            if self.tok[w.conn as usize] != w.prior_tok {
                return Err(diverged("replaced a token the connection did not hold"));
            }
        }
        Ok(())
    }
}

impl Cvm {
    /// The whole history tree as JSON, with the position — what [`restore_json`](Self::restore_json)
    /// loads into a fresh engine of the same net: the form a run nested in an operator's state
    /// (a `subnet`'s or a `map`'s inner runs) takes in its parent's journal.
    ///
    /// `{"nodes":[{"parent":N|null,"firings":[{"op","consumed":[c…],"written":[[c,prior|null,new]…],"tokens":[{"type","value"}…],"before"?,"after"?}…]}…],"tip":N|null,"redo_tip":N|null}`,
    /// in the journal's terms (docs/semantics.md §5.5): indices in declaration order, values
    /// through their data type's serde form, states through their operator's. `Err`: an
    /// operator state without a serde form, named.
    pub fn history_json(&self) -> Result<serde_json::Value, String> {
        use serde_json::json;
        let h = &self.hist;
        let mut nodes = Vec::with_capacity(h.nodes.len());
        // The arena holds tokens in node order, then emission order: a node's tokens are the
        // run, from where the previous node's ended, of tokens stamped with its depth and
        // emitted by its operators, and before the first token the next node wrote.
        let mut depths: Vec<u32> = Vec::with_capacity(h.nodes.len());
        let mut cursor = 0usize;
        for (k, node) in h.nodes.iter().enumerate() {
            // A parent comes before its children.
            let d = if node.parent == NONE {
                1
            } else {
                depths[node.parent as usize] + 1
            };
            depths.push(d);
            let ops: Vec<u32> = h.firing_range(k as u32).map(|f| h.firings[f].op).collect();
            let next_written = h.nodes.get(k + 1).and_then(|_| {
                h.firing_range(k as u32 + 1)
                    .flat_map(|f| h.written[h.written_range(f)].iter().map(|w| w.new_tok))
                    .min()
            });
            let first = cursor;
            while cursor < self.tokens.len()
                && next_written.is_none_or(|n| (cursor as u32) < n)
                && self.tokens[cursor].step == d
                && ops.contains(&self.tokens[cursor].op.0)
            {
                cursor += 1;
            }
            let end = cursor;
            let mut firings = Vec::new();
            for f in h.firing_range(k as u32) {
                let op = h.firings[f].op;
                let name = &self.net.ops[op as usize].name;
                let written: Vec<serde_json::Value> = h.written[h.written_range(f)]
                    .iter()
                    .map(|w| json!([w.conn, some(w.prior_tok), w.new_tok]))
                    .collect();
                let tokens: Vec<serde_json::Value> = self.tokens[first.min(end)..end]
                    .iter()
                    .filter(|t| t.op.0 == op)
                    .map(|t| json!({"type": t.type_name(), "value": t.value.to_json()}))
                    .collect();
                let mut fj = json!({
                    "op": op,
                    "consumed": &h.consumed[h.consumed_range(f)],
                    "written": written,
                    "tokens": tokens,
                });
                if let Some(saved) = h.saved(f) {
                    for (key, state) in [("before", &saved.before), ("after", &saved.after)] {
                        if let Some(state) = state {
                            let v = state
                                .to_json()
                                .map_err(|e| format!("the internal state of `{name}`: {e}"))?;
                            fj[key] = v;
                        }
                    }
                }
                firings.push(fj);
            }
            nodes.push(json!({"parent": some(node.parent), "firings": firings}));
        }
        let at = self.position();
        Ok(json!({"nodes": nodes, "tip": at.tip, "redo_tip": at.redo_tip}))
    }

    /// Loads a history written by [`history_json`](Self::history_json) into this fresh engine,
    /// **without running any operator** (as [`restore`](Self::restore) does). `Err`: what does
    /// not fit (this net, a data type this program lacks, a state that does not read back).
    pub fn restore_json(&mut self, json: serde_json::Value) -> Result<(), String> {
        use serde_json::Value as Json;
        let index = |v: &Json, what: &str| -> Result<Option<u32>, String> {
            match v {
                Json::Null => Ok(None),
                v => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| format!("{what} is not an index: {v}")),
            }
        };
        let nodes = json["nodes"]
            .as_array()
            .ok_or("a history without `nodes`")?;
        let mut rec = Recorded {
            steps: Vec::with_capacity(nodes.len()),
            tip: index(&json["tip"], "`tip`")?,
            redo_tip: index(&json["redo_tip"], "`redo_tip`")?,
        };
        for (k, node) in nodes.iter().enumerate() {
            let parent = index(&node["parent"], "a parent")?;
            let mut firings = Vec::new();
            for f in node["firings"]
                .as_array()
                .ok_or("a node without `firings`")?
            {
                let op = index(&f["op"], "an operator")?.ok_or("a firing without `op`")?;
                let o = self
                    .net
                    .ops
                    .get(op as usize)
                    .ok_or_else(|| format!("node #{k}: operator #{op} does not exist"))?;
                let name = &o.name;
                let list = |key: &str| f[key].as_array().cloned().unwrap_or_default();
                let mut consumed = Vec::new();
                for c in list("consumed") {
                    consumed.push(ConnId(
                        index(&c, "a connection")?.ok_or("a null connection")?,
                    ));
                }
                let mut written = Vec::new();
                for w in list("written") {
                    let c = index(&w[0], "a connection")?.ok_or("a null connection")?;
                    let prior = index(&w[1], "a token")?;
                    let new = index(&w[2], "a token")?.ok_or("a null token")?;
                    written.push((ConnId(c), prior, new));
                }
                let mut tokens = Vec::new();
                for t in list("tokens") {
                    let ty = t["type"].as_str().unwrap_or_default();
                    let info = crate::types::type_by_name(ty).ok_or_else(|| {
                        format!("`{name}` emitted a value of type `{ty}`, which this program does not declare")
                    })?;
                    let v = (info.from_json)(t["value"].clone()).map_err(|e| {
                        format!("a {ty} emitted by `{name}` cannot be read back: {e}")
                    })?;
                    tokens.push(v);
                }
                let state = |key: &str| -> Result<Option<OpState>, String> {
                    match f.get(key) {
                        None | Some(Json::Null) => Ok(None),
                        Some(v) => {
                            let model = o.op.save_state().ok_or_else(|| {
                                format!("`{name}` has a recorded state, but its operator has none")
                            })?;
                            model.from_json_like(v.clone()).map(Some).map_err(|e| {
                                format!("the recorded state of `{name}` cannot be read back: {e}")
                            })
                        }
                    }
                };
                firings.push(RecordedFiring {
                    op: OpId(op),
                    consumed,
                    written,
                    tokens,
                    before: state("before")?,
                    after: state("after")?,
                });
            }
            rec.steps.push(RecordedStep { parent, firings });
        }
        self.restore(rec).map_err(|e| e.to_string())
    }
}
