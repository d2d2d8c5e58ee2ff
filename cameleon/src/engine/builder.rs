//! [`CvmBuilder`]: the options of an engine.

use std::fmt;
use std::sync::Arc;

use super::{CancelToken, Cvm, Event, Observer};
use crate::net::{Mode, Net};
use crate::operator::capability::Capabilities;

/// Options for a [`Cvm`].
pub struct CvmBuilder {
    net: Net,
    max_loop_iterations: Option<u32>,
    max_steps: Option<u64>,
    mode: Option<Mode>,
    observer: Option<Observer>,
    cancel: Option<CancelToken>,
    caps: Option<Arc<dyn Capabilities>>,
    run_id: Option<Arc<str>>,
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

    /// Hands every firing these capabilities (models, embedders, memories, tools, observer):
    /// the generation the run pins, usually from
    /// [`capabilities::Runtime::pin`](crate::capabilities::Runtime::pin). Without it, firings
    /// see `<dyn Capabilities>::none()` (generation 0: the offline defaults named
    /// `default` only, every tool denied).
    pub fn capabilities(mut self, caps: Arc<dyn Capabilities>) -> Self {
        self.caps = Some(caps);
        self
    }

    /// Names the run: the `run` part of each firing's
    /// [`idempotency_key`](crate::Firing::idempotency_key) and the run's id in the engine's
    /// `tracing` spans; default: a fresh UUID v7.
    pub fn run_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Builds the engine at the initial marking.
    pub fn build(self) -> Cvm {
        let mut cvm = Cvm::new(self.net);
        if let Some(n) = self.max_loop_iterations {
            cvm.context.max_loop = n;
        }
        cvm.context.max_steps = self.max_steps;
        if let Some(m) = self.mode {
            cvm.context.mode = m;
        }
        cvm.observer = self.observer;
        if let Some(t) = self.cancel {
            cvm.context.cancel = t;
        }
        if let Some(c) = self.caps {
            cvm.context.capabilities = c;
            cvm.ask_questions();
        }
        if let Some(id) = self.run_id {
            cvm.context.run_id = crate::operator::firing::RunId::text(id);
        }
        cvm
    }
}

impl Cvm {
    /// Options: loop bound, step budget, mode.
    pub fn builder(net: Net) -> CvmBuilder {
        CvmBuilder {
            net,
            max_loop_iterations: None,
            max_steps: None,
            mode: None,
            observer: None,
            cancel: None,
            caps: None,
            run_id: None,
        }
    }
}
