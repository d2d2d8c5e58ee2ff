//! The event stream: what observers (progress displays, logs, UIs) see of a run.
//!
//! Install an observer with [`Cvm::on_event`] (a callback) or take a channel with
//! [`Cvm::events`]; both see the same [`Event`]s, in both modes and in both the synchronous and
//! the async API.
//!
//! Order: for a step, [`StepStarted`](Event::StepStarted), then one
//! [`FiringStarted`](Event::FiringStarted) per operator in declaration order, then
//! [`FiringRetrying`](Event::FiringRetrying) / [`FiringFinished`](Event::FiringFinished) **as
//! the firings finish** (in parallel mode that order depends on timing), then
//! [`StepCommitted`](Event::StepCommitted) — or [`StepDiscarded`](Event::StepDiscarded) when a
//! firing failed or the run was cancelled. A replayed step (forward after backward) is one
//! `StepCommitted` with `replayed: true`. A run ([`Cvm::run`], [`Cvm::run_async`]) ends with
//! [`Ended`](Event::Ended). Only wall-clock annotations (`elapsed_ms`) and the order of
//! `FiringFinished` events vary between runs; the trace itself never does.
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::Event;
//! use cameleon::ops::{Sink, Source};
//!
//! let mut b = Net::builder("hello");
//! b.add("src", Source::new("hello"));
//! b.add("out", Sink::new());
//! b.connect("src.out_data", "out.in_data");
//! let mut cvm = Cvm::new(b.build()?);
//! let mut events = cvm.events();
//! cvm.run()?;
//! let mut committed = Vec::new();
//! while let Ok(e) = events.try_recv() {
//!     if let Event::StepCommitted { ops, .. } = e {
//!         committed.push(ops.join(","));
//!     }
//! }
//! assert_eq!(committed, ["src", "out"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::Serialize;

use super::{Cvm, EndState};

/// Something that happened in a run. Serializes as one JSON object tagged `event`
/// (`{"event":"firing_started","step":3,"op":"fetch"}`), so a CLI can stream it as JSON Lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A step is about to execute these operators (one in sequential mode).
    StepStarted {
        /// The step's 1-based logical index.
        step: u32,
        /// The operators of the step, in declaration order.
        ops: Vec<String>,
    },
    /// An operator's firing started.
    FiringStarted {
        /// The step.
        step: u32,
        /// The operator's instance name.
        op: String,
    },
    /// A firing failed and will be tried again after `backoff_ms` (its `retry` setting).
    FiringRetrying {
        /// The step.
        step: u32,
        /// The operator's instance name.
        op: String,
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// Why it failed.
        error: String,
        /// The wait before the next attempt.
        backoff_ms: u64,
    },
    /// A piece of a running firing's output, as it is written (a model's answer streaming in):
    /// append `text` to the pieces before it of the same `step` and `op`. Sent between the
    /// firing's `FiringStarted` and `FiringFinished`, from the firing's own thread, only to
    /// [`events`](Cvm::events) and [`on_partial`](Cvm::on_partial) watchers. Never recorded:
    /// history and journal keep the firing's result, and a replay, a backward step or a resume
    /// sends none (docs/semantics.md §4.12).
    Partial {
        /// The step.
        step: u32,
        /// The operator's instance name.
        op: String,
        /// The new piece.
        text: String,
    },
    /// An operator's firing finished (its result is not applied until the step commits).
    FiringFinished {
        /// The step.
        step: u32,
        /// The operator's instance name.
        op: String,
        /// The error, if the firing failed after its retries.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How many attempts it took.
        attempts: u32,
        /// Wall-clock time of the firing, retries included (an annotation: it varies between
        /// runs).
        elapsed_ms: u64,
    },
    /// A step was applied to the marking and recorded as one history entry.
    StepCommitted {
        /// The step's 1-based logical index.
        step: u32,
        /// The operators that fired, in declaration order.
        ops: Vec<String>,
        /// Whether it was replayed from history rather than executed.
        replayed: bool,
    },
    /// A step was discarded: nothing of it was applied (marking, history and operator states
    /// are as before it).
    StepDiscarded {
        /// The step's 1-based logical index.
        step: u32,
        /// Why: `ERROR` or `CANCELLED`.
        reason: String,
    },
    /// The run ended in this state.
    Ended {
        /// The end state.
        #[serde(flatten)]
        end: EndState,
    },
}

/// A callback receiving every [`Event`] of a [`Cvm`], on the thread driving the engine.
pub type Observer = Box<dyn FnMut(&Event) + Send>;

impl Cvm {
    /// Calls `f` with every later [`Event`] (replacing any previous observer). `f` runs on the
    /// engine's thread between firings: keep it quick, or forward to a channel
    /// ([`events`](Self::events) does).
    pub fn on_event(&mut self, f: impl FnMut(&Event) + Send + 'static) {
        self.observer = Some(Box::new(f));
    }

    /// A channel receiving every later [`Event`], [`Partial`](Event::Partial) output included
    /// (replacing any previous observer and partial-output watcher). It is unbounded: the
    /// engine never waits on a slow reader.
    ///
    /// Taking it turns streaming on: operators that can show their output as it is written
    /// ([`Firing::streaming`](crate::operator::Firing::streaming)) do so, and a model provider
    /// that streams (`openai`, `extractive`) is asked to.
    pub fn events(&mut self) -> tokio::sync::mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let partial_tx = tx.clone();
        self.on_event(move |e| {
            let _ = tx.send(e.clone()); // a reader that went away just stops listening
        });
        self.on_partial(move |e| {
            let _ = partial_tx.send(e.clone());
        });
        rx
    }

    /// Calls `f` with every later [`Partial`](Event::Partial) event (replacing any previous
    /// partial-output watcher), and turns streaming on (see [`events`](Self::events)). `f` runs
    /// on the thread of the firing that writes the output, while it runs: keep it quick, or
    /// forward to a channel. [`on_event`](Self::on_event)'s callback never sees partial output.
    pub fn on_partial(&mut self, f: impl Fn(&Event) + Send + Sync + 'static) {
        self.context.partial = Some(std::sync::Arc::new(move |step, op: &str, text: &str| {
            f(&Event::Partial {
                step,
                op: op.to_owned(),
                text: text.to_owned(),
            })
        }));
    }

    /// Whether partial output is watched (streaming is on).
    pub fn streaming(&self) -> bool {
        self.context.partial.is_some()
    }

    /// Removes the observer and the partial-output watcher.
    pub fn clear_observer(&mut self) {
        self.observer = None;
        self.context.partial = None;
    }

    /// Sends the event `make` builds to the observer, if any (built only then).
    #[inline]
    pub(super) fn notify(&mut self, make: impl FnOnce(&Cvm) -> Event) {
        if self.observer.is_some() {
            let e = make(self);
            if let Some(obs) = self.observer.as_mut() {
                obs(&e);
            }
        }
    }

    /// The names of operators `ops`.
    pub(super) fn names(&self, ops: impl IntoIterator<Item = usize>) -> Vec<String> {
        ops.into_iter()
            .map(|o| self.net.ops[o].name.clone())
            .collect()
    }
}
