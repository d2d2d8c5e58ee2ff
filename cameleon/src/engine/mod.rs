//! The CVM: runs a net step by step, forward and backward (docs/semantics.md §3–§7).
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
//!
//! The engine is split by concern:
//!
//! | module | does |
//! |---|---|
//! | `mod.rs` | the [`Cvm`]: the marking, its per-port views and the enabled set, kept in step |
//! | `builder` | [`CvmBuilder`]: mode, loop bound, step budget, observer, cancel token |
//! | `query` | what the engine tells without changing anything: fireable, states, received values |
//! | `step` | forward: sequential steps, replay after a backward step, applying a firing |
//! | `back` | backward: undo, rewind, branches and checkout |
//! | `deadlock` | terminal states and the stuck report |
//! | `ask` | operators waiting for an outside value: [`Cvm::provide`], [`Cvm::waiting`] (`WAITING`) |
//! | `concurrent` | maximal steps (parallel mode), async stepping, timeouts, retries, cancellation |
//! | `firings` | running the firings of one step together, until the first failure in declaration order |
//! | `attempt` | **the** firing routine every mode goes through |
//! | `loan` | lending an operator to tokio's blocking pool |
//! | `cancel`, `events` | [`CancelToken`]; the [`Event`] stream |
//! | `outcome` | [`Step`], [`EndState`], the errors, [`ConnView`], [`Marking`] |
//! | `record` | the [`Recorder`] hook a journal plugs into; [`Committed`], a step just committed |
//! | `restore` | [`Cvm::record`] and [`Cvm::restore`]: the history in its one record, and back |
//! | `trace` | [`Cvm::trace_lines`]: the history as `cameleon run --trace` writes it |
//! | `spans`, `bits` | `tracing` spans of runs, steps and firings; the enabled set and scratch buffers |

use std::fmt;
use std::sync::Arc;

use crate::connection::{ConnState, NONE, Token};
use crate::history::Store;
use crate::net::{Mode, Net, PortStates, Topo, evaluate, evaluate_cached};
use crate::operator::capability::Capabilities;
use crate::operator::{Execution, InputSlot, OpSettings, OpState, PartialSink, Question};
use crate::policy::Family;

mod ask;
mod attempt;
mod back;
mod bits;
mod builder;
mod cancel;
mod concurrent;
mod deadlock;
mod events;
mod firings;
mod loan;
mod outcome;
mod query;
mod record;
mod restore;
mod seed;
mod spans;
mod step;
mod trace;

pub use ask::ProvideError;
use bits::{Bits, Scratch};
pub use builder::CvmBuilder;
pub use cancel::CancelToken;
pub use events::{Event, Observer};
use outcome::Advance;
pub use outcome::{
    BackError, CheckoutError, ConnView, EndState, Marking, RunError, Step, StepError, Stuck,
    StuckReason, Waiting,
};
pub use record::{Committed, CommittedFiring, Position, RecordError, Recorder};
pub use restore::RestoreError;

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
    /// Where firings' partial output goes, while somebody listens ([`Cvm::on_partial`]).
    partial: Option<PartialSink>,
    cancel: CancelToken,
    /// States to restore before anything else: the operators of an async step whose future was
    /// dropped before it finished.
    pending: Vec<(u32, Option<OpState>)>,
    /// The run's id (idempotency keys): a journaled run's id, else a fresh UUID v7.
    run_id: std::sync::Arc<str>,
    /// Told of every committed step, move and end (a journal), if installed.
    recorder: Option<Box<dyn Recorder>>,
    /// A recorder's failure to record a move, reported by the next recording.
    deferred: Option<RecordError>,
    /// Whether a step needs more than the plain sequential path: parallel mode, an observer,
    /// a recorder, an operator with settings, states to restore, or a `tracing` subscriber
    /// listening (see [`Cvm::update_slow`]). One flag, so the sequential hot path pays one branch
    /// for all of it.
    slow: bool,
    /// The capabilities every firing sees: the generation this run pinned (docs/capabilities.md).
    caps: Arc<dyn Capabilities>,
    /// Whether a `tracing` subscriber listens to the engine's spans, as of the last check (at
    /// the start of each `run` and `step`).
    traced: bool,
    /// The `tracing` span of the run under way, when a subscriber listens.
    run_span: Option<tracing::Span>,
    /// Per op: the question it asks before firing, if it waits for outside values
    /// (docs/semantics.md §6.1). Asked once, when the engine is built.
    questions: Vec<Option<Question>>,
    /// Whether some operator asks a question (else `refresh` never looks at `questions`).
    any_asks: bool,
    /// The operators whose rule holds but which wait for an answer: not in `enabled`.
    waiting: Bits,
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
        let none = <dyn Capabilities>::none();
        let questions: Vec<Option<Question>> = net
            .ops
            .iter()
            .map(|n| ask::question_of(&net, n, none.tools()))
            .collect();
        let any_asks = questions.iter().any(Option::is_some);
        let mut cvm = Cvm {
            waiting: Bits::new(n_ops),
            any_asks,
            questions,
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
            partial: None,
            cancel: CancelToken::new(),
            pending: Vec::new(),
            run_id: uuid::Uuid::now_v7().to_string().into(),
            recorder: None,
            deferred: None,
            slow: false,
            caps: <dyn Capabilities>::none(),
            traced: false,
            run_span: None,
            net,
        };
        cvm.update_slow();
        for o in 0..n_ops {
            cvm.refresh(o);
        }
        cvm
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

    /// The step budget (`None`: unbounded).
    pub fn max_steps(&self) -> Option<u64> {
        self.max_steps
    }

    /// The loop bound (`max_loop_iterations`).
    pub fn max_loop_iterations(&self) -> u32 {
        self.max_loop
    }

    /// The run's id, as firings see it in their
    /// [`idempotency_key`](crate::Firing::idempotency_key): a journaled run's id, else a
    /// UUID v7 drawn when the engine was built.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Sets the run's id (a journal does, for the run it records).
    pub fn set_run_id(&mut self, id: impl Into<std::sync::Arc<str>>) {
        self.run_id = id.into();
    }

    #[inline]
    fn refresh(&mut self, o: usize) {
        let op = &*self.net.ops[o].op;
        let on = evaluate_cached(op, &self.topo, &self.ports, &self.state, o);
        // The maintained port views must agree with the rule computed from the bare marking.
        debug_assert_eq!(
            on,
            evaluate(
                op,
                &self.topo,
                &self.state,
                o,
                &mut self.s.ins,
                &mut self.s.outs
            ),
            "port views diverged from the marking at `{}`",
            self.net.ops[o].name
        );
        let on = if self.any_asks {
            self.hold_unanswered(o, on)
        } else {
            on
        };
        self.enabled.set(o, on);
    }

    /// Sets connection `c`'s state, keeping the per-port views in step.
    #[inline]
    fn set(&mut self, c: usize, to: ConnState) {
        set_state(&mut self.state, &mut self.ports, &self.topo, c, to);
    }

    /// Recomputes whether steps need the slow path.
    pub(super) fn update_slow(&mut self) {
        self.slow = self.mode == Mode::Parallel
            || self.observer.is_some()
            || self.recorder.is_some()
            || !self.pending.is_empty()
            || self.traced
            || self.guarded.contains(&true);
    }

    /// The capabilities every firing of this engine sees (see
    /// [`CvmBuilder::capabilities`]).
    pub fn capabilities(&self) -> &Arc<dyn Capabilities> {
        &self.caps
    }

    /// Hands later firings these capabilities (see [`CvmBuilder::capabilities`]): for an engine
    /// built elsewhere, e.g. a run resumed from a journal, before it goes on.
    pub fn set_capabilities(&mut self, caps: Arc<dyn Capabilities>) {
        self.caps = caps;
        self.ask_questions();
    }

    /// The capability generation this engine's runs pinned (0: none).
    pub fn generation(&self) -> u64 {
        self.caps.generation()
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
