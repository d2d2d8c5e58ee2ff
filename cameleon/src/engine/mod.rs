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
//! The engine is made of parts that borrow independently (so a firing can hold the operator it
//! runs while it reads the marking and the run's context):
//!
//! | part | holds |
//! |---|---|
//! | `net` | the [`Net`]: its operators (the executors) and connections |
//! | `Operators` | per operator: the topology, how it executes, its settings, its question |
//! | `LiveMarking` | connection states, tokens, port views, enabled and waiting sets, fire counts |
//! | `history::HistoryTree` | the history tree |
//! | `RunContext` | run id, capabilities, cancel token, partial sink, recorder, mode, limits, spans |
//! | `observer` | the [`Event`] callback (its own part: firings call it while the step reads the rest) |
//!
//! Every forward step goes through **one** drive routine (`drive.rs`): begin (replay a
//! recorded step, or choose the firings and plan what they read), fire them (on the calling
//! thread, or concurrently as futures), settle: commit the step through **one** apply path
//! (`LiveMarking::apply`) — or discard it.
//!
//! | module | does |
//! |---|---|
//! | `mod.rs` | the [`Cvm`] and its parts |
//! | `parts` | `Operators`, `RunContext`, the scratch buffers |
//! | `marking` | the live marking: apply, redo and undo of a firing, the enabled set kept in step |
//! | `builder` | [`CvmBuilder`]: mode, loop bound, step budget, observer, cancel token |
//! | `query` | what the engine tells without changing anything: fireable, states, received values |
//! | `drive` | **the** drive routine: replay or choose, fire, settle, commit or discard |
//! | `step` | the synchronous API: [`Cvm::step`], [`Cvm::refire`], [`Cvm::fire_op`], [`Cvm::run`]; replay |
//! | `concurrent` | the async API: [`Cvm::step_async`], [`Cvm::run_async`]; cancellation |
//! | `firings` | the firings of one step: what they read, their shared context, inline or concurrent |
//! | `attempt` | **the** firing routine every mode goes through, and its `settle` |
//! | `back` | backward: undo, rewind, branches and checkout |
//! | `deadlock` | terminal states and the stuck report |
//! | `ask` | operators waiting for an outside value: [`Cvm::provide`], [`Cvm::waiting`] (`WAITING`) |
//! | `loan` | lending an operator to tokio's blocking pool |
//! | `cancel`, `events` | [`CancelToken`]; the [`Event`] stream |
//! | `outcome` | [`Step`], [`EndState`], the errors, [`ConnView`], [`Marking`] |
//! | `record` | the [`Recorder`] hook a journal plugs into; [`Committed`], a step just committed |
//! | `restore` | [`Cvm::record`] and [`Cvm::restore`] / [`Restoring`]: the history in its one record, and back |
//! | `recycle` | one engine for many runs of a net (a `map`'s items): a run's history taken out as a `RunTrail`, the engine back at its initial marking; a trail put back into a fresh engine |
//! | `reuse` | reuse across runs (docs/semantics.md §5.9): a firing's key, [`ReuseSource`], the reuse hook |
//! | `seed` | [`Cvm::marking_record`] and [`Cvm::seed`]: a marking by name, into a fresh engine |
//! | `trace` | [`Cvm::trace_lines`]: the history as `cameleon run --trace` writes it |
//! | `spans`, `bits` | `tracing` spans of runs, steps and firings; operator sets |

use std::fmt;
use std::sync::Arc;

use crate::history::HistoryTree;
use crate::net::{Mode, Net};
use crate::operator::capability::Capabilities;

mod ask;
mod attempt;
mod back;
mod bits;
mod builder;
mod cancel;
mod concurrent;
mod deadlock;
mod drive;
mod events;
mod firings;
mod loan;
mod marking;
mod outcome;
mod parts;
mod query;
mod record;
mod recycle;
mod restore;
mod reuse;
mod seed;
mod spans;
mod step;
mod trace;

pub use crate::history::ReusedFrom;
pub use ask::ProvideError;
pub use builder::CvmBuilder;
pub use cancel::CancelToken;
pub use events::{Event, Observer};
use marking::LiveMarking;
use outcome::Advance;
pub use outcome::{
    BackError, CheckoutError, ConnView, EndState, Marking, RunError, Step, StepError, Stuck,
    StuckReason, Waiting,
};
use parts::{Operators, RunContext, Scratch};
pub use record::{Committed, CommittedFiring, Position, RecordError, Recorder};
pub(crate) use recycle::RunTrail;
pub use restore::{RestoreError, Restoring};
pub use reuse::{FiringKey, KeyCache, NotReusable, RecordedFiring, Reuse, ReuseSource};

/// The Caméléon virtual machine: a net, its marking, and its history.
pub struct Cvm {
    /// The net: its operators (which fire) and connections.
    net: Net,
    /// What the engine knows of each operator besides the operator itself.
    operators: Operators,
    /// Connection states, tokens, the enabled set.
    marking: LiveMarking,
    /// The history tree, the applied path and the recorded future.
    history: HistoryTree,
    /// The run: its id, capabilities, limits, recorder, spans.
    context: RunContext,
    /// Told of every [`Event`], if installed.
    observer: Option<Observer>,
    /// Buffers a step reuses.
    scratch: Scratch,
}

impl fmt::Debug for Cvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cvm")
            .field("net", &self.net.name)
            .field("mode", &self.context.mode)
            .field("depth", &self.history.path.len())
            .field("history", &self.history)
            .finish_non_exhaustive()
    }
}

impl Cvm {
    /// An engine for `net` at its initial marking, with the net's configuration.
    pub fn new(net: Net) -> Self {
        let topo = crate::net::Topo::new(&net);
        Cvm::on_topo(net, topo)
    }

    /// An engine for `net` on `topo`, the index tables of `net`'s topology
    /// ([`Topo::new`](crate::net::Topo::new) of `net` or of a net it is an instance of): the
    /// runs of a sub-net or of a `map`'s items copy their inner net's instead of building it.
    pub(crate) fn on_topo(net: Net, topo: crate::net::Topo) -> Self {
        debug_assert_eq!(topo.policy.len(), net.ops.len());
        let operators = Operators::new(&net, topo);
        let marking = LiveMarking::new(&operators.topo, net.conns.len(), net.ops.len());
        let history = HistoryTree::with_capacity(net.ops.len(), net.conns.len());
        let context = RunContext::new(&net);
        let mut cvm = Cvm {
            operators,
            marking,
            history,
            context,
            observer: None,
            scratch: Scratch::default(),
            net,
        };
        cvm.refresh_all();
        cvm
    }

    /// The net.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The execution mode.
    pub fn mode(&self) -> Mode {
        self.context.mode
    }

    /// Gives later runs a step budget (`None`: unbounded).
    pub fn set_max_steps(&mut self, n: Option<u64>) {
        self.context.max_steps = n;
    }

    /// Sets the loop bound for later firings.
    pub fn set_max_loop_iterations(&mut self, n: u32) {
        self.context.max_loop = n;
    }

    /// The step budget (`None`: unbounded).
    pub fn max_steps(&self) -> Option<u64> {
        self.context.max_steps
    }

    /// The loop bound (`max_loop_iterations`).
    pub fn max_loop_iterations(&self) -> u32 {
        self.context.max_loop
    }

    /// The run's id, as firings see it in their
    /// [`idempotency_key`](crate::Firing::idempotency_key): a journaled run's id, else a
    /// UUID v7 drawn when the engine was built.
    pub fn run_id(&self) -> &str {
        self.context.run_id.as_str()
    }

    /// Sets the run's id (a journal does, for the run it records).
    pub fn set_run_id(&mut self, id: impl Into<std::sync::Arc<str>>) {
        self.context.run_id = crate::operator::firing::RunId::text(id.into());
    }

    /// The run's id as the engine keeps it (a UUID not written out until read).
    pub(crate) fn run_ident(&self) -> &crate::operator::firing::RunId {
        &self.context.run_id
    }

    /// Sets the run's id as the engine keeps it: a `map`'s items take a UUID written out only
    /// if something reads it (docs/semantics.md §10.3).
    pub(crate) fn set_run_ident(&mut self, id: crate::operator::firing::RunId) {
        self.context.run_id = id;
    }

    /// Re-evaluates whether operator `o` is enabled (or waiting).
    #[inline]
    fn refresh(&mut self, o: usize) {
        self.marking.refresh(&self.net, &self.operators, o);
    }

    /// Re-evaluates every operator.
    fn refresh_all(&mut self) {
        for o in 0..self.net.ops.len() {
            self.refresh(o);
        }
    }

    /// The capabilities every firing of this engine sees (see
    /// [`CvmBuilder::capabilities`]).
    pub fn capabilities(&self) -> &Arc<dyn Capabilities> {
        &self.context.capabilities
    }

    /// Hands later firings these capabilities (see [`CvmBuilder::capabilities`]): for an engine
    /// built elsewhere, e.g. a run resumed from a journal, before it goes on.
    pub fn set_capabilities(&mut self, caps: Arc<dyn Capabilities>) {
        self.context.capabilities = caps;
        self.ask_questions();
    }

    /// The capability generation this engine's runs pinned (0: none).
    pub fn generation(&self) -> u64 {
        self.context.capabilities.generation()
    }
}
