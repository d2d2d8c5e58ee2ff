//! The CVM: runs a net step by step, forward and backward (SPEC §3–§6).
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Sink, Source, Transform};
//!
//! let mut b = Net::builder("hello");
//! b.add("src", Source::new("hello"));
//! b.add("t", Transform::new());
//! b.add("out", Sink::new());
//! b.connect("src.out_data", "t.in_data").connect("t.out_data", "out.in_data");
//! let mut cvm = Cvm::new(b.build()?);
//!
//! cvm.step()?;                                     // src fires
//! assert_eq!(cvm.state_of("src.out_data -> t.in_data").unwrap().state, ConnState::New);
//! cvm.back()?;                                     // exactly as before
//! assert_eq!(cvm.state_of("src.out_data -> t.in_data").unwrap().state, ConnState::Empty);
//! assert_eq!(cvm.run()?, EndState::Completed);    // replays src, then runs on
//! assert_eq!(cvm.received("out")[0].to_json(), "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;

use crate::connection::{ConnId, ConnState, OpId, Token};
use crate::history::{Branch, BranchId, FiringRec, History, NONE, SavedStates, Store, Written};
use crate::net::{Mode, Net};
use crate::operator::{
    Execution, Firing, InputSet, InputSlot, OpError, OpSettings, OpSpec, OpState,
};
use crate::policy::{Enabling, Family, Policy};

mod events;
mod parallel;
mod rules;
mod runtime;
use crate::types::{DataError, Value};
pub use events::{Event, Observer};
pub use parallel::CancelToken;
pub(crate) use rules::{
    Bits, PortStates, Scratch, Topo, back_pressure_ok_on, evaluate, evaluate_cached, gather,
};
pub use runtime::block_on;

/// How a run ended (SPEC §6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    /// An operator failed; nothing of its firing was applied.
    Error {
        /// The operator that failed.
        op: String,
        /// Its error message.
        error: String,
    },
    /// The run was cancelled; the marking is consistent.
    Cancelled,
}

impl EndState {
    /// `COMPLETED`, `DEADLOCK`, `LOOP_LIMIT`, `STEP_LIMIT`, `ERROR` or `CANCELLED`.
    pub fn name(&self) -> &'static str {
        match self {
            EndState::Completed => "COMPLETED",
            EndState::Deadlock { .. } => "DEADLOCK",
            EndState::LoopLimit { .. } => "LOOP_LIMIT",
            EndState::StepLimit { .. } => "STEP_LIMIT",
            EndState::Error { .. } => "ERROR",
            EndState::Cancelled => "CANCELLED",
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
            EndState::Error { op, error } => write!(f, "ERROR in `{op}`: {error}"),
        }
    }
}

/// Why a stuck consumer cannot fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
enum Advance {
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
    /// A recorded step could not be replayed because its operator is not enabled any more (the
    /// net's options changed since it was recorded).
    #[error("cannot replay step {step}: `{op}` is not enabled")]
    ReplayDiverged {
        /// The step.
        step: u32,
        /// Its operator.
        op: String,
    },
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

/// A connection's state and data, from [`Cvm::state_of`].
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

/// Options for a [`Cvm`].
pub struct CvmBuilder {
    net: Net,
    max_loop_iterations: Option<u32>,
    max_steps: Option<u64>,
    mode: Option<Mode>,
    observer: Option<Observer>,
    cancel: Option<CancelToken>,
}

impl fmt::Debug for CvmBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CvmBuilder")
            .field("net", &self.net.name)
            .field("max_loop_iterations", &self.max_loop_iterations)
            .field("max_steps", &self.max_steps)
            .field("mode", &self.mode)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl CvmBuilder {
    /// Overrides the net's `max_loop_iterations`.
    pub fn max_loop_iterations(mut self, n: u32) -> Self {
        self.max_loop_iterations = Some(n);
        self
    }

    /// Gives runs a step budget: a run stops in `STEP_LIMIT` before the first step past it.
    pub fn max_steps(mut self, n: u64) -> Self {
        self.max_steps = Some(n);
        self
    }

    /// Overrides the net's mode (`config.mode`).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sends every [`Event`] to `f` (see [`Cvm::on_event`]).
    pub fn on_event(mut self, f: impl FnMut(&Event) + Send + 'static) -> Self {
        self.observer = Some(Box::new(f));
        self
    }

    /// Uses `token` to cancel runs (see [`Cvm::cancel_token`]), e.g. one token shared by
    /// several engines.
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Builds the engine at the initial marking.
    pub fn build(self) -> Cvm {
        let mut cvm = Cvm::new(self.net);
        if let Some(n) = self.max_loop_iterations {
            cvm.max_loop = n;
        }
        cvm.max_steps = self.max_steps;
        if let Some(m) = self.mode {
            cvm.mode = m;
        }
        cvm.observer = self.observer;
        if let Some(t) = self.cancel {
            cvm.cancel = t;
        }
        cvm.update_slow();
        cvm
    }
}

/// The Caméléon virtual machine: a net, its marking, and its history.
pub struct Cvm {
    net: Net,
    topo: Topo,
    state: Vec<ConnState>,
    tok: Vec<u32>,
    tokens: Vec<Token>,
    enabled: Bits,
    ports: PortStates,
    fire_count: Vec<u32>,
    hist: Store,
    max_loop: u32,
    max_steps: Option<u64>,
    mode: Mode,
    s: Scratch,
    /// Per op: how parallel mode runs it (structural: inline).
    exec: Vec<Execution>,
    /// Per op: effective timeout and retries.
    settings: Vec<OpSettings>,
    /// Per op: whether even sequential mode drives it asynchronously: it has settings (timeout,
    /// retries), or it is an async operator (so a cancellation drops its firing at once).
    guarded: Vec<bool>,
    observer: Option<Observer>,
    cancel: CancelToken,
    /// States to restore before anything else: the operators of an async step whose future was
    /// dropped before it finished.
    pending: Vec<(u32, Option<OpState>)>,
    /// Whether a step needs more than the plain sequential path: parallel mode, an observer,
    /// an operator with settings, or states to restore (see [`Cvm::update_slow`]). One flag, so
    /// the sequential hot path pays one branch for all of it.
    slow: bool,
}

impl fmt::Debug for Cvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cvm")
            .field("net", &self.net.name)
            .field("mode", &self.mode)
            .field("depth", &self.hist.path.len())
            .field("history", &self.hist)
            .finish_non_exhaustive()
    }
}

impl Cvm {
    /// An engine for `net` at its initial marking, with the net's configuration.
    pub fn new(net: Net) -> Self {
        let topo = Topo::new(&net);
        let ports = PortStates::initial(&topo);
        let n_conns = net.conns.len();
        let n_ops = net.ops.len();
        let exec: Vec<Execution> = net
            .ops
            .iter()
            .map(|n| match n.spec.family {
                Family::Structural => Execution::Inline,
                Family::Behavioral => n.op.execution(),
            })
            .collect();
        let settings: Vec<OpSettings> = net.ops.iter().map(|n| n.effective_settings()).collect();
        let guarded = settings
            .iter()
            .zip(&exec)
            .map(|(s, e)| !s.is_none() || *e == Execution::Async)
            .collect();
        let mut cvm = Cvm {
            max_loop: net.config.max_loop_iterations,
            mode: net.config.mode,
            max_steps: None,
            topo,
            state: vec![ConnState::Empty; n_conns],
            tok: vec![NONE; n_conns],
            tokens: Vec::with_capacity(n_conns),
            enabled: Bits::new(n_ops),
            ports,
            fire_count: vec![0; n_ops],
            hist: Store::with_capacity(n_ops, n_conns),
            s: Scratch::default(),
            exec,
            guarded,
            settings,
            observer: None,
            cancel: CancelToken::new(),
            pending: Vec::new(),
            slow: false,
            net,
        };
        cvm.update_slow();
        for o in 0..n_ops {
            cvm.refresh(o);
        }
        cvm
    }

    /// Options: loop bound, step budget, mode.
    pub fn builder(net: Net) -> CvmBuilder {
        CvmBuilder {
            net,
            max_loop_iterations: None,
            max_steps: None,
            mode: None,
            observer: None,
            cancel: None,
        }
    }

    /// The net.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The execution mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Gives later runs a step budget (`None`: unbounded).
    pub fn set_max_steps(&mut self, n: Option<u64>) {
        self.max_steps = n;
    }

    /// Sets the loop bound for later firings.
    pub fn set_max_loop_iterations(&mut self, n: u32) {
        self.max_loop = n;
    }

    #[inline]
    fn refresh(&mut self, o: usize) {
        let op = &*self.net.ops[o].op;
        let on = evaluate_cached(op, &self.topo, &self.ports, &self.state, o);
        // The maintained port views must agree with the rule computed from the bare marking.
        debug_assert_eq!(
            on,
            evaluate(op, &self.topo, &self.state, o, &mut self.s),
            "port views diverged from the marking at `{}`",
            self.net.ops[o].name
        );
        self.enabled.set(o, on);
    }

    /// Sets connection `c`'s state, keeping the per-port views in step.
    #[inline]
    fn set(&mut self, c: usize, to: ConnState) {
        set_state(&mut self.state, &mut self.ports, &self.topo, c, to);
    }

    /// The enabled operators, in declaration order.
    pub fn fireable(&self) -> Vec<&str> {
        self.enabled
            .iter()
            .map(|o| self.net.ops[o].name.as_str())
            .collect()
    }

    /// The enabled operators' ids, in declaration order.
    pub fn fireable_ids(&self) -> Vec<OpId> {
        self.enabled.iter().map(|o| OpId(o as u32)).collect()
    }

    /// The state and data of the connection named `a.out -> b.in`.
    pub fn state_of(&self, conn: &str) -> Option<ConnView<'_>> {
        self.net.conn_id(conn).map(|c| self.conn(c))
    }

    /// The state and data of connection `c`.
    pub fn conn(&self, c: ConnId) -> ConnView<'_> {
        let t = self.tok[c.index()];
        ConnView {
            state: self.state[c.index()],
            token: self.tokens.get(t as usize),
        }
    }

    /// A snapshot of the whole marking.
    pub fn marking(&self) -> Marking {
        Marking(
            (0..self.state.len())
                .map(|c| {
                    (
                        self.state[c],
                        self.tokens.get(self.tok[c] as usize).cloned(),
                    )
                })
                .collect(),
        )
    }

    /// How many times operator `op` has fired along the current history.
    pub fn fire_count(&self, op: OpId) -> u32 {
        self.fire_count[op.index()]
    }

    /// The token with arena index `i` (as [`FiringView::written`](crate::history::FiringView) gives).
    pub fn token(&self, i: u32) -> Option<&Token> {
        self.tokens.get(i as usize)
    }

    /// The history: applied entries, what a forward step would replay, memory used.
    pub fn history(&self) -> History<'_> {
        History {
            store: &self.hist,
            tokens: self.tokens.len(),
        }
    }

    /// Number of applied steps.
    pub fn depth(&self) -> usize {
        self.hist.path.len()
    }

    /// Every value operator `op` consumed along the current history, in order. For a sink,
    /// this is what it received.
    pub fn received(&self, op: &str) -> Vec<&Value> {
        let Some(id) = self.net.op_id(op) else {
            return Vec::new();
        };
        // Walk the path forward, tracking each connection's token: consumption keeps the token
        // in place, so what `op` consumed is the token its input held at that moment.
        let mut tok = vec![NONE; self.state.len()];
        let mut out = Vec::new();
        for &node in &self.hist.path {
            for f in self.hist.firing_range(node) {
                if self.hist.firings[f].op == id.0 {
                    for &c in &self.hist.consumed[self.hist.consumed_range(f)] {
                        if let Some(t) = self.tokens.get(tok[c as usize] as usize) {
                            out.push(&t.value);
                        }
                    }
                }
                for w in &self.hist.written[self.hist.written_range(f)] {
                    tok[w.conn as usize] = w.new_tok;
                }
            }
        }
        out
    }

    /// Connections still EMPTY: never reached (information, not an error, SPEC §6).
    pub fn unreached(&self) -> Vec<&str> {
        self.state
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == ConnState::Empty)
            .map(|(c, _)| self.net.conns[c].name.as_str())
            .collect()
    }

    /// The terminal state the net is in, if no operator is enabled.
    pub fn terminal_state(&self) -> Option<EndState> {
        if self.enabled.first().is_some() {
            return None;
        }
        Some(if self.state.contains(&ConnState::New) {
            EndState::Deadlock {
                stuck: self.stuck(),
            }
        } else {
            EndState::Completed
        })
    }

    /// Each consumer of a NEW connection, and why it is not enabled.
    fn stuck(&self) -> Vec<Stuck> {
        let mut seen = vec![false; self.net.ops.len()];
        let mut out = Vec::new();
        let (mut ins, mut outs) = (Vec::new(), Vec::new());
        for c in 0..self.state.len() {
            if self.state[c] != ConnState::New {
                continue;
            }
            let o = self.topo.consumer[c] as usize;
            if std::mem::replace(&mut seen[o], true) {
                continue;
            }
            let node = &self.net.ops[o];
            gather(&self.topo, &self.state, o, &mut ins, &mut outs);
            let e = Enabling {
                inputs: &ins,
                outputs: &outs,
                policy: self.topo.policy[o],
            };
            let name = &node.name;
            if node.op.can_fire(&e) {
                for &oc in self.topo.outs(o) {
                    if self.state[oc as usize] == ConnState::New {
                        let conn = &self.net.conns[oc as usize];
                        let port = node.spec.outputs[conn.from.port as usize].name.to_string();
                        out.push(Stuck {
                            message: format!(
                                "`{name}` is blocked: its output `{}` still holds an unconsumed token (back-pressure)",
                                conn.name
                            ),
                            op: name.clone(),
                            input: None,
                            output: Some(port),
                            reason: StuckReason::BackPressure,
                        });
                    }
                }
                continue;
            }
            let policy = self.topo.policy[o];
            let before = out.len();
            for (p, s) in ins.iter().enumerate() {
                let reason = match (s, policy) {
                    (ConnState::Empty, Policy::Any | Policy::All | Policy::Custom) => {
                        StuckReason::Empty
                    }
                    (ConnState::Old, Policy::All) => StuckReason::Old,
                    _ => continue,
                };
                let port = node.spec.inputs[p].name.to_string();
                let message = match reason {
                    StuckReason::Empty => format!(
                        "`{name}` waits on input `{port}`, which is EMPTY (it never received a token)"
                    ),
                    _ => format!(
                        "`{name}` waits on input `{port}`, which is OLD (its `all` policy needs every input NEW)"
                    ),
                };
                out.push(Stuck {
                    op: name.clone(),
                    input: Some(port),
                    output: None,
                    reason,
                    message,
                });
            }
            if out.len() == before {
                out.push(Stuck {
                    op: name.clone(),
                    input: None,
                    output: None,
                    reason: StuckReason::CustomRule,
                    message: format!("`{name}` waits: its firing rule is false"),
                });
            }
        }
        out
    }

    /// Fires one step forward: replays the next recorded step if the history has one (after a
    /// backward step), else executes the first enabled operator (sequential mode) or every
    /// enabled operator (parallel mode, on Caméléon's runtime; from async code prefer
    /// [`step_async`](Self::step_async)).
    ///
    /// Returns [`Step::Ended`] when nothing can fire. On `Err`, nothing changed.
    pub fn step(&mut self) -> Result<Step, StepError> {
        let advanced = self.advance()?;
        Ok(self.describe(advanced))
    }

    /// Executes the next step anew (as [`step`](Self::step) would without history), even if the
    /// history has a recorded step here. The recorded future is kept as a branch (see
    /// [`branches`](Self::branches)).
    pub fn refire(&mut self) -> Result<Step, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let redo = std::mem::take(&mut self.hist.redo);
        let advanced = if self.slow {
            self.execute_next_slow()
        } else {
            self.execute_next()
        };
        if !matches!(advanced, Ok(Advance::Fired { .. })) {
            self.hist.redo = redo; // nothing fired: keep the future as it was
        }
        Ok(self.describe(advanced?))
    }

    /// Runs forward until an end state: [`EndState::Error`] when an operator fails (its firing
    /// not applied), [`EndState::Cancelled`] when the [`cancel_token`](Self::cancel_token) is
    /// cancelled (checked between steps, and during a parallel step).
    ///
    /// In parallel mode this drives [`run_async`](Self::run_async) on Caméléon's runtime.
    pub fn run(&mut self) -> Result<EndState, RunError> {
        if self.mode == Mode::Parallel {
            return block_on(self.run_async());
        }
        let end = loop {
            if self.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.advance())? {
                break end;
            }
        };
        self.notify(|_| Event::Ended { end: end.clone() });
        Ok(end)
    }

    /// One step forward, without building the public description (the hot path of `run`).
    #[inline]
    fn advance(&mut self) -> Result<Advance, StepError> {
        if self.slow {
            return self.advance_slow();
        }
        if let Some(&node) = self.hist.redo.last() {
            return self.replay_next(node);
        }
        self.execute_next()
    }

    /// [`advance`](Self::advance) when [`slow`](Self::update_slow).
    #[inline(never)]
    fn advance_slow(&mut self) -> Result<Advance, StepError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        if let Some(&node) = self.hist.redo.last() {
            return self.replay_next(node);
        }
        self.execute_next_slow()
    }

    /// Recomputes whether steps need the slow path.
    pub(super) fn update_slow(&mut self) {
        self.slow = self.mode == Mode::Parallel
            || self.observer.is_some()
            || !self.pending.is_empty()
            || self.guarded.contains(&true);
    }

    fn describe(&self, a: Advance) -> Step {
        match a {
            Advance::Ended(end) => Step::Ended(end),
            Advance::Fired { replayed } => {
                let node = self.hist.path.last().copied().unwrap_or(NONE);
                Step::Fired {
                    ops: self
                        .hist
                        .firing_range(node)
                        .map(|f| OpId(self.hist.firings[f].op))
                        .collect(),
                    step: self.hist.path.len() as u32,
                    replayed,
                }
            }
        }
    }

    fn limit_before(&self, o: usize) -> Option<EndState> {
        if let Some(limit) = self.max_steps
            && self.hist.path.len() as u64 >= limit
        {
            return Some(EndState::StepLimit { limit });
        }
        if self.fire_count[o] >= self.max_loop {
            return Some(EndState::LoopLimit {
                op: self.net.ops[o].name.clone(),
                limit: self.max_loop,
            });
        }
        None
    }

    fn execute_next(&mut self) -> Result<Advance, StepError> {
        let Some(o) = self.enabled.first() else {
            return Ok(Advance::Ended(
                self.terminal_state().unwrap_or(EndState::Completed),
            ));
        };
        if let Some(end) = self.limit_before(o) {
            return Ok(Advance::Ended(end));
        }
        let step = self.hist.path.len() as u32 + 1;
        let (before, after) = self.execute(o, step)?;
        let node = self.hist.open_node();
        self.apply_fresh(o, step, before, after);
        self.hist.path.push(node);
        Ok(Advance::Fired { replayed: false })
    }

    /// [`execute_next`](Self::execute_next) when [`slow`](Self::update_slow): a parallel step,
    /// an operator with a timeout or retries (both on the async path), or events.
    fn execute_next_slow(&mut self) -> Result<Advance, StepError> {
        if self.mode == Mode::Parallel {
            return block_on(self.execute_step());
        }
        let Some(o) = self.enabled.first() else {
            return Ok(Advance::Ended(
                self.terminal_state().unwrap_or(EndState::Completed),
            ));
        };
        if let Some(end) = self.limit_before(o) {
            return Ok(Advance::Ended(end));
        }
        if self.guarded[o] {
            // A timeout or retries: the async path implements them.
            return block_on(self.execute_step());
        }
        let step = self.hist.path.len() as u32 + 1;
        if !self.observed() {
            return self.execute_next();
        }
        self.notify_started(&[o], step);
        // The plain path fires `o` (the same first enabled operator); it stays the only caller
        // of `execute` and `apply_fresh`, so they stay inlined there.
        let advanced = self.execute_next();
        match &advanced {
            Ok(Advance::Fired { .. }) => self.notify_finished(o, step),
            Err(e) => self.notify_failed(o, step, e),
            Ok(Advance::Ended(_)) => {}
        }
        advanced
    }

    #[cold]
    fn notify_started(&mut self, ops: &[usize], step: u32) {
        self.notify(|cvm| Event::StepStarted {
            step,
            ops: cvm.names(ops.iter().copied()),
        });
        for &o in ops {
            self.notify(|cvm| Event::FiringStarted {
                step,
                op: cvm.net.ops[o].name.clone(),
            });
        }
    }

    #[cold]
    fn notify_failed(&mut self, o: usize, step: u32, e: &StepError) {
        let error = match e {
            StepError::Operator { error, .. } => error.to_string(),
            other => other.to_string(),
        };
        self.notify(|cvm| Event::FiringFinished {
            step,
            op: cvm.net.ops[o].name.clone(),
            error: Some(error),
            attempts: 1,
            elapsed_ms: 0,
        });
        self.notify(|_| Event::StepDiscarded {
            step,
            reason: "ERROR".into(),
        });
    }

    #[cold]
    fn notify_finished(&mut self, o: usize, step: u32) {
        self.notify(|cvm| Event::FiringFinished {
            step,
            op: cvm.net.ops[o].name.clone(),
            error: None,
            attempts: 1,
            elapsed_ms: 0,
        });
        self.notify(|cvm| Event::StepCommitted {
            step,
            ops: vec![cvm.net.ops[o].name.clone()],
            replayed: false,
        });
    }

    /// Runs operator `o` against the current marking; on success its emissions are in
    /// `self.s.emitted`. Nothing of the marking or history changes here.
    fn execute(
        &mut self,
        o: usize,
        step: u32,
    ) -> Result<
        (
            Option<crate::operator::OpState>,
            Option<crate::operator::OpState>,
        ),
        StepError,
    > {
        let topo = &self.topo;
        let node = &mut self.net.ops[o];
        self.s.slots.clear();
        self.s.slots.extend(
            topo.ins(o)
                .iter()
                .map(|&c| input_slot(&self.state, &self.tok, c)),
        );
        self.s.emitted.clear();
        let before = node.op.save_state();
        let n_outputs = topo.n_outputs(o) as u16;
        let result = {
            let mut cx = Firing {
                tokens: &self.tokens,
                inputs: &self.s.slots,
                emitted: &mut self.s.emitted,
                n_outputs,
                step,
                name: &node.meta.name,
                _op: PhantomData,
            };
            let op = &mut node.op;
            catch_unwind(AssertUnwindSafe(|| op.run(&mut cx)))
        };
        let failure = match result {
            Ok(Ok(())) => check_emissions(&self.s.emitted, topo, o, &node.spec),
            Ok(Err(e)) => Some(e),
            Err(panic) => Some(OpError::new(format!(
                "panicked: {}",
                panic_message(&*panic)
            ))),
        };
        if let Some(error) = failure {
            if let Some(b) = &before {
                node.op.restore_state(b);
            }
            self.s.emitted.clear();
            match caught_failure(&node.spec, &node.meta.name, &error) {
                // The failure becomes data on the operator's `error` output (SPEC §4).
                Some(emission) => self.s.emitted.push(emission),
                None => {
                    return Err(StepError::Operator {
                        op: node.name.clone(),
                        error,
                    });
                }
            }
        }
        let after = if before.is_some() {
            node.op.save_state()
        } else {
            None
        };
        Ok((before, after))
    }

    /// Applies a fresh firing of `o` (emissions in `self.s.emitted`) to the marking and records
    /// it in the open node.
    #[inline]
    fn apply_fresh(
        &mut self,
        o: usize,
        step: u32,
        before: Option<crate::operator::OpState>,
        after: Option<crate::operator::OpState>,
    ) {
        let consumes = self.net.ops[o]
            .op
            .consumes(&self.ports.inputs[self.topo.in_range(o)]);
        self.apply_firing(o, step, before, after, consumes);
    }

    /// Applies a firing of `o` that consumes the NEW inputs in `consumes` and emits
    /// `self.s.emitted`, and records it in the open node.
    // Always inlined: it is the sequential hot path (see benches/parallel.rs).
    #[inline(always)]
    fn apply_firing(
        &mut self,
        o: usize,
        step: u32,
        before: Option<crate::operator::OpState>,
        after: Option<crate::operator::OpState>,
        consumes: InputSet,
    ) {
        let firing = self.hist.firings.len() as u32;
        self.hist.firings.push(FiringRec {
            op: o as u32,
            consumed_start: self.hist.consumed.len() as u32,
            written_start: self.hist.written.len() as u32,
        });
        if before.is_some() || after.is_some() {
            self.hist.states.push(SavedStates {
                firing,
                before,
                after,
            });
        }
        // Consumption first (NEW -> OLD) ...
        for (p, &c) in self.topo.ins(o).iter().enumerate() {
            if c != NONE && consumes.contains(p) && self.state[c as usize] == ConnState::New {
                set_state(
                    &mut self.state,
                    &mut self.ports,
                    &self.topo,
                    c as usize,
                    ConnState::Old,
                );
                self.hist.consumed.push(c);
            }
        }
        // ... then emission (-> NEW), one shared token per emitted port.
        for (port, value) in self.s.emitted.drain(..) {
            let t = self.tokens.len() as u32;
            self.tokens.push(Token {
                value,
                step,
                op: OpId(o as u32),
            });
            for &c in self.topo.port_conns(o, port as usize) {
                self.hist.written.push(Written {
                    conn: c,
                    prior_tok: self.tok[c as usize],
                    new_tok: t,
                });
                set_state(
                    &mut self.state,
                    &mut self.ports,
                    &self.topo,
                    c as usize,
                    ConnState::New,
                );
                self.tok[c as usize] = t;
            }
        }
        self.fire_count[o] += 1;
        self.refresh_around(firing as usize);
    }

    /// Re-evaluates every operator whose enabling firing `f` may have changed: the operator
    /// itself, the producers of what it consumed (back-pressure relieved) and the consumers of
    /// what it wrote. Nothing else can change (SPEC §3 reads only an operator's own ports).
    fn refresh_around(&mut self, f: usize) {
        self.refresh(self.hist.firings[f].op as usize);
        for i in self.hist.consumed_range(f) {
            let c = self.hist.consumed[i] as usize;
            self.refresh(self.topo.producer[c] as usize);
        }
        for i in self.hist.written_range(f) {
            let c = self.hist.written[i].conn as usize;
            self.refresh(self.topo.consumer[c] as usize);
        }
    }

    fn replay_next(&mut self, node: u32) -> Result<Advance, StepError> {
        let range = self.hist.firing_range(node);
        let step = self.hist.path.len() as u32 + 1;
        for f in range.clone() {
            let o = self.hist.firings[f].op as usize;
            if let Some(end) = self.limit_before(o) {
                return Ok(Advance::Ended(end));
            }
            if !self.enabled.get(o) {
                return Err(StepError::ReplayDiverged {
                    step,
                    op: self.net.ops[o].name.clone(),
                });
            }
        }
        self.hist.redo.pop();
        for f in range {
            self.redo_firing(f);
        }
        self.hist.path.push(node);
        if self.observed() {
            self.notify(|cvm| Event::StepCommitted {
                step,
                ops: cvm.names(
                    cvm.hist
                        .firing_range(node)
                        .map(|f| cvm.hist.firings[f].op as usize),
                ),
                replayed: true,
            });
        }
        Ok(Advance::Fired { replayed: true })
    }

    fn redo_firing(&mut self, f: usize) {
        let o = self.hist.firings[f].op as usize;
        for i in self.hist.consumed_range(f) {
            let c = self.hist.consumed[i] as usize;
            self.set(c, ConnState::Old);
        }
        for i in self.hist.written_range(f) {
            let w = self.hist.written[i];
            self.set(w.conn as usize, ConnState::New);
            self.tok[w.conn as usize] = w.new_tok;
        }
        self.collect_emitted(f);
        let after = self.hist.saved(f).and_then(|s| s.after.as_ref());
        self.net.ops[o].op.replay(after, &self.s.emitted);
        self.s.emitted.clear();
        self.fire_count[o] += 1;
        self.refresh_around(f);
    }

    /// Collects firing `f`'s emissions (port, value) into `self.s.emitted`.
    fn collect_emitted(&mut self, f: usize) {
        self.s.emitted.clear();
        let mut last = NONE;
        for i in self.hist.written_range(f) {
            let w = self.hist.written[i];
            if w.new_tok != last {
                last = w.new_tok;
                let port = self.net.conns[w.conn as usize].from.port;
                self.s
                    .emitted
                    .push((port, self.tokens[w.new_tok as usize].value.clone()));
            }
        }
    }

    /// Undoes the last step exactly: the marking, the operators' states and firing counts are
    /// as they were before it. The step stays recorded: the next [`step`](Self::step) replays it.
    pub fn back(&mut self) -> Result<(), BackError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let node = self.hist.path.pop().ok_or(BackError::AtStart)?;
        for f in self.hist.firing_range(node).rev() {
            self.undo_firing(f);
        }
        self.hist.redo.push(node);
        Ok(())
    }

    fn undo_firing(&mut self, f: usize) {
        let o = self.hist.firings[f].op as usize;
        self.collect_emitted(f);
        for i in self.hist.written_range(f).rev() {
            let w = self.hist.written[i];
            let c = w.conn as usize;
            let prior = if w.prior_tok == NONE {
                ConnState::Empty
            } else {
                ConnState::Old
            };
            self.set(c, prior);
            self.tok[c] = w.prior_tok;
        }
        for i in self.hist.consumed_range(f).rev() {
            let c = self.hist.consumed[i] as usize;
            self.set(c, ConnState::New);
        }
        let before = self.hist.saved(f).and_then(|s| s.before.as_ref());
        self.net.ops[o].op.rollback(before, &self.s.emitted);
        self.s.emitted.clear();
        self.fire_count[o] -= 1;
        self.refresh_around(f);
    }

    /// Goes back to the initial marking (every step stays recorded for replay).
    pub fn rewind(&mut self) {
        while self.back().is_ok() {}
    }

    /// Every branch of the history tree.
    pub fn branches(&self) -> Vec<Branch> {
        self.hist.branches()
    }

    /// Switches to branch `b`: goes back to where it leaves the current path, then replays it to
    /// its tip.
    pub fn checkout(&mut self, b: BranchId) -> Result<(), CheckoutError> {
        if b.0 as usize >= self.hist.nodes.len() {
            return Err(CheckoutError::UnknownBranch(b));
        }
        let target = self.hist.path_to(b.0);
        let common = self
            .hist
            .path
            .iter()
            .zip(&target)
            .take_while(|(a, b)| a == b)
            .count();
        while self.hist.path.len() > common {
            let _ = self.back();
        }
        self.hist.redo = target[common..].iter().rev().copied().collect();
        while let Some(&node) = self.hist.redo.last() {
            if let Advance::Ended(_) = self.replay_next(node)? {
                break;
            }
        }
        Ok(())
    }
}

/// Sets connection `c`'s state, keeping the per-port views in step (field-level, so callers
/// can hold other borrows of the engine).
#[inline]
fn set_state(
    state: &mut [ConnState],
    ports: &mut PortStates,
    topo: &Topo,
    c: usize,
    to: ConnState,
) {
    let from = std::mem::replace(&mut state[c], to);
    ports.update(topo, c, from, to);
}

/// What a firing sees of the input fed by connection `c` (`NONE`: an unconnected optional
/// input, permanently OLD with no data).
#[inline]
fn input_slot(state: &[ConnState], tok: &[u32], c: u32) -> InputSlot {
    if c == NONE {
        InputSlot {
            state: ConnState::Old,
            token: NONE,
        }
    } else {
        InputSlot {
            state: state[c as usize],
            token: tok[c as usize],
        }
    }
}

/// What a run does with one step's result: go on (`None`) or stop in an end state; an operator's
/// failure is the end state `ERROR` (its firing not applied).
#[inline]
fn run_outcome(r: Result<Advance, StepError>) -> Result<Option<EndState>, RunError> {
    match r {
        Ok(Advance::Fired { .. }) => Ok(None),
        Ok(Advance::Ended(end)) => Ok(Some(end)),
        Err(StepError::Operator { op, error }) => Ok(Some(EndState::Error {
            op,
            error: error.to_string(),
        })),
        Err(e) => Err(e.into()),
    }
}

/// SPEC §4: an operator that declares an output named `error` of type [`DataError`] catches its
/// own failure: instead of stopping the run in ERROR, the firing emits the failure there (and
/// nothing else). Returns that emission, or `None` when the operator has no such output.
pub(super) fn caught_failure(spec: &OpSpec, name: &str, error: &OpError) -> Option<(u16, Value)> {
    let port = spec
        .outputs
        .iter()
        .position(|p| p.name == "error" && p.ty == crate::operator::TypeRef::of::<DataError>())?;
    let data = DataError {
        operator: name.to_owned(),
        message: error.to_string(),
    };
    Some((port as u16, Value::new(data)))
}

fn check_emissions(
    emitted: &[(u16, Value)],
    topo: &Topo,
    o: usize,
    spec: &OpSpec,
) -> Option<OpError> {
    let n = topo.n_outputs(o);
    // Port names are only looked up to report a problem: the spec lives off the hot path.
    let name = |p: usize| &spec.outputs[p].name;
    let mut seen = 0u64;
    for (port, value) in emitted {
        let p = *port as usize;
        if p >= n {
            return Some(OpError::new(format!(
                "emitted on output #{p}, but the operator has {n} output(s)"
            )));
        }
        if p < 64 {
            if seen & (1 << p) != 0 {
                return Some(OpError::new(format!(
                    "emitted twice on `{}` in one firing",
                    name(p)
                )));
            }
            seen |= 1 << p;
        }
        if let Some(ty) = topo.port_type[topo.out_start[o] as usize + p] {
            let vt = value.type_info();
            if ty != vt {
                return Some(OpError::new(format!(
                    "emitted a {} on `{}`, which carries {}",
                    vt.name,
                    name(p),
                    ty.name
                )));
            }
        }
    }
    None
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}
