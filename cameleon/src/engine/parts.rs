//! The engine's parts besides the net, the marking and the history: the operator table, the
//! run's context, and the buffers a step reuses.

use std::sync::Arc;

use super::ask::question_of;
use super::attempt::{Emissions, FiringOutcome};
use super::firings::StepPlan;
use super::{CancelToken, RecordError, Recorder};
use crate::net::{Mode, Net, Topo};
use crate::operator::capability::Capabilities;
use crate::operator::{Execution, OpSettings, OpState, PartialSink, Question};
use crate::policy::Family;

/// What the engine knows of each operator besides the operator itself (which stays in the
/// net): where its ports lead, how it executes, its settings, the question it asks.
pub(super) struct Operators {
    /// Ports, connections, policies, cancellation regions: the net as index tables (held by
    /// value: the hot path reads them on every firing).
    pub(super) topo: Topo,
    /// Per operator: how parallel mode runs it (structural: inline).
    pub(super) execution: Vec<Execution>,
    /// Per operator: effective timeout and retries.
    pub(super) settings: Vec<OpSettings>,
    /// Per operator: whether even sequential mode drives it asynchronously: it has settings
    /// (timeout, retries), or it is an async operator (so a cancellation drops its firing at
    /// once).
    pub(super) guarded: Vec<bool>,
    /// Whether some operator is `guarded` (else a sequential step never needs a future): set
    /// with `guarded` by [`Operators::guard`].
    pub(super) any_guarded: bool,
    /// Per operator: the question it asks before firing, if it waits for outside values
    /// (docs/semantics.md §6.1).
    pub(super) questions: Vec<Option<Question>>,
    /// Whether some operator asks a question (else the enabled set never looks at `questions`).
    pub(super) any_asks: bool,
}

impl Operators {
    /// The table of `net`'s operators, on `topo` (the net's, [`Topo::new`]); questions as
    /// asked without capabilities.
    pub(super) fn new(net: &Net, topo: Topo) -> Self {
        let execution: Vec<Execution> = net
            .ops
            .iter()
            .map(|n| match n.spec.family {
                Family::Structural => Execution::Inline,
                Family::Behavioral => n.op.execution(),
            })
            .collect();
        let settings: Vec<OpSettings> = net.ops.iter().map(|n| n.effective_settings()).collect();
        let none = <dyn Capabilities>::none();
        let questions: Vec<Option<Question>> = net
            .ops
            .iter()
            .map(|n| question_of(net, n, none.tools()))
            .collect();
        let any_asks = questions.iter().any(Option::is_some);
        let mut ops = Operators {
            topo,
            execution,
            settings,
            guarded: Vec::new(),
            any_guarded: false,
            questions,
            any_asks,
        };
        ops.guard(|_| false);
        ops
    }

    /// Sets `guarded` (and `any_guarded` with it): an operator is guarded when it has settings
    /// (timeout, retries), is async, or `also` says so (a behavioral operator keyed for reuse,
    /// `Cvm::update_keying`).
    pub(super) fn guard(&mut self, also: impl Fn(usize) -> bool) {
        self.guarded = (0..self.settings.len())
            .map(|o| {
                !self.settings[o].is_none() || self.execution[o] == Execution::Async || also(o)
            })
            .collect();
        self.any_guarded = self.guarded.contains(&true);
    }

    /// Whether operator `o` fires on the calling thread, without a future: no settings, not
    /// async, and — in parallel mode — not lent to the blocking pool.
    #[inline]
    pub(super) fn runs_inline(&self, o: usize, mode: Mode) -> bool {
        !self.guarded[o] && (mode == Mode::Sequential || self.execution[o] == Execution::Inline)
    }
}

/// The run: what every firing of it shares, and what watches it.
pub(super) struct RunContext {
    /// The run's id (idempotency keys): a journaled run's id, else a fresh UUID v7.
    pub(super) run_id: crate::operator::firing::RunId,
    /// The capabilities every firing sees: the generation this run pinned
    /// (docs/capabilities.md).
    pub(super) capabilities: Arc<dyn Capabilities>,
    pub(super) cancel: CancelToken,
    /// Where firings' partial output goes, while somebody listens ([`Cvm::on_partial`]).
    ///
    /// [`Cvm::on_partial`]: super::Cvm::on_partial
    pub(super) partial: Option<PartialSink>,
    /// Told of every committed step, move and end (a journal), if installed.
    pub(super) recorder: Option<Box<dyn Recorder>>,
    /// Recorded firings reused instead of calling operators, or keys computed for a journal
    /// (`reuse.rs`), if installed.
    pub(super) reuse: Option<Arc<super::reuse::Reuse>>,
    /// A recorder's failure to record a move, reported by the next recording.
    pub(super) deferred: Option<RecordError>,
    pub(super) mode: Mode,
    /// The loop bound (`max_loop_iterations`).
    pub(super) max_loop: u32,
    /// The step budget.
    pub(super) max_steps: Option<u64>,
    /// Whether a `tracing` subscriber listens to the engine's spans, as of the last check (at
    /// the start of each `run` and `step`).
    pub(super) traced: bool,
    /// The `tracing` span of the run under way, when a subscriber listens.
    pub(super) run_span: Option<tracing::Span>,
}

impl RunContext {
    /// A fresh run of `net`, with its configuration and no capabilities.
    pub(super) fn new(net: &Net) -> Self {
        RunContext {
            run_id: crate::operator::firing::RunId::uuid(uuid::Uuid::now_v7().as_u128()),
            capabilities: <dyn Capabilities>::none(),
            cancel: CancelToken::new(),
            partial: None,
            recorder: None,
            reuse: None,
            deferred: None,
            mode: net.config.mode,
            max_loop: net.config.max_loop_iterations,
            max_steps: None,
            traced: false,
            run_span: None,
        }
    }
}

/// Buffers a step reuses, so the plain path allocates nothing.
#[derive(Default)]
pub(super) struct Scratch {
    /// The operators the step fires, in declaration order.
    pub(super) ops: Vec<usize>,
    /// What they read.
    pub(super) plan: StepPlan,
    /// Per firing of the step: its emissions.
    pub(super) emitted: Vec<Emissions>,
    /// Per firing of the step: how it ended (`None`: not run, or cancelled). Empty after a step
    /// of inline firings that all succeeded (`firings::fire_inline`).
    pub(super) outcomes: Vec<Option<FiringOutcome>>,
    /// The branch the step under way extends (computed once, in `begin`).
    pub(super) branch: u32,
    /// The emissions of a recorded firing being redone or undone.
    pub(super) replayed: Emissions,
    /// The operators of the step under way that have a state, with their states before it (in
    /// the step's order; a stateless operator has no entry): restored before anything else if
    /// the step's future was dropped before it finished.
    pub(super) interrupted: Vec<(u32, Option<OpState>)>,
    /// One `tracing` span per firing of the step under way, when a subscriber listens (else
    /// empty).
    pub(super) spans: Vec<tracing::Span>,
}
