//! The engine's `tracing` spans: one per run, step and firing, with the run id, step, operator,
//! type, duration, attempts and capability generation, so any subscriber (a fmt logger,
//! OpenTelemetry) sees a run.
//!
//! Nothing here runs unless a subscriber listens to target `cameleon::engine` at level INFO:
//! the engine checks that once per `run` / `step` call ([`Cvm::check_traced`]) and only then
//! makes spans, so an unobserved run pays one relaxed atomic load per call.

use tracing::Span;
use tracing::field::Empty;

use super::Cvm;
use super::attempt::FiringOutcome;

/// The target of every span.
pub(super) const TARGET: &str = "cameleon::engine";

impl Cvm {
    /// Updates whether a subscriber listens to the engine's spans, and opens the run's span
    /// if one does and it is not open yet.
    #[inline]
    pub(super) fn check_traced(&mut self) {
        let on = tracing::enabled!(target: TARGET, tracing::Level::INFO);
        self.context.traced = on;
        if on && self.context.run_span.is_none() {
            self.open_run_span();
        }
    }

    #[cold]
    fn open_run_span(&mut self) {
        let run = self.context.run_id.as_str();
        self.context.run_span = Some(tracing::info_span!(
            target: TARGET,
            "run",
            run = %run,
            net = %self.net.name,
            mode = %self.context.mode,
            generation = self.context.capabilities.generation(),
            end = Empty,
        ));
    }

    /// Closes the run's span (the run reached `end`); a later step opens a new one.
    pub(super) fn close_run_span(&mut self, end: &str) {
        if let Some(span) = self.context.run_span.take() {
            span.record("end", end);
        }
    }

    /// The run's span (`None` span when nobody listens).
    pub(super) fn run_span(&self) -> Span {
        self.context.run_span.clone().unwrap_or_else(Span::none)
    }

    /// The span of a step of operators `ops`, a child of the run's span.
    pub(super) fn step_span(&self, step: u32, ops: &[usize]) -> Span {
        if !self.context.traced {
            return Span::none();
        }
        let names = self.names(ops.iter().copied()).join(",");
        match &self.context.run_span {
            Some(run) => {
                tracing::info_span!(target: TARGET, parent: run, "step", step, ops = %names)
            }
            None => tracing::info_span!(target: TARGET, "step", step, ops = %names),
        }
    }

    /// The span of one firing of operator `o`, a child of `parent`.
    pub(super) fn firing_span(&self, parent: &Span, o: usize, step: u32) -> Span {
        if !self.context.traced {
            return Span::none();
        }
        let node = &self.net.ops[o];
        tracing::info_span!(
            target: TARGET,
            parent: parent,
            "firing",
            run = %self.context.run_id,
            step,
            op = %node.name,
            "type" = %node.spec.type_id,
            generation = self.context.capabilities.generation(),
            attempts = Empty,
            duration_ms = Empty,
            error = Empty,
        )
    }
}

/// Records how a firing ended on its span.
pub(super) fn finish(span: &Span, out: &FiringOutcome) {
    if span.is_disabled() {
        return;
    }
    span.record("attempts", out.attempts);
    // Milliseconds with microsecond precision.
    span.record(
        "duration_ms",
        (out.elapsed.as_secs_f64() * 1e6).round() / 1e3,
    );
    if let Err(e) = &out.result {
        span.record("error", tracing::field::display(e));
    }
}
