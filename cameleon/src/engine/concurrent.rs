//! The async API ([`Cvm::step_async`], [`Cvm::refire_async`], [`Cvm::run_async`]), the cancel
//! token, and which operators a maximal step withdraws (docs/semantics.md §7, §10.4). The steps
//! themselves go through the drive routine (`drive.rs`).
//!
//! A maximal step (parallel mode) fires every enabled operator, each reading the marking at the
//! start of the step; firings that need a future run concurrently:
//!
//! - structural operators and [`Execution::Inline`] ones on the engine's task, in declaration
//!   order;
//! - [`Execution::Blocking`] ones on tokio's blocking pool (the operator is lent to the pool
//!   thread and handed back, see `loan.rs`);
//! - [`Execution::Async`] ones as futures polled by the step, so a timeout or a cancellation
//!   simply drops them.
//!
//! Nothing touches the marking or the history until every firing has finished. Then, if all
//! succeeded, the step commits: one history node holding every firing, applied in declaration
//! order. Within a maximal step a connection consumed by one firing is never written by
//! another (its producer would be blocked by back-pressure, docs/semantics.md §3.2), and a
//! connection written by one firing is never consumed by another (consumption is decided on the
//! start marking, so only connections already NEW are consumed), so applying firing by firing
//! equals "every consumption, then every emission". If any firing failed, the step is discarded
//! (operators' states restored, successful firings rolled back) and the error names the first
//! failing operator **in declaration order** — firings declared after a failure are cancelled,
//! firings declared before it are waited for, so which operator is named never depends on
//! timing.
//!
//! [`Execution::Inline`]: crate::operator::Execution::Inline
//! [`Execution::Blocking`]: crate::operator::Execution::Blocking
//! [`Execution::Async`]: crate::operator::Execution::Async

use tracing::Instrument;

use super::drive::Forward;
use super::step::run_outcome;
use super::{CancelToken, Cvm, EndState, Event, RunError, Step, StepError};

impl Cvm {
    /// The token that cancels this engine's runs (see [`CancelToken`]).
    pub fn cancel_token(&self) -> CancelToken {
        self.context.cancel.clone()
    }

    /// Uses `token` to cancel this engine's runs from now on (as
    /// [`CvmBuilder::cancel_token`](super::CvmBuilder::cancel_token) does at build time).
    pub fn set_cancel_token(&mut self, token: CancelToken) {
        self.context.cancel = token;
    }

    /// Fires one step forward, asynchronously: replays the next recorded step if the history has
    /// one, else executes one step — every enabled operator (parallel mode) or the first one
    /// (sequential mode) — awaiting async operators instead of blocking on them.
    ///
    /// Returns [`Step::Ended`] when nothing can fire, or with [`EndState::Cancelled`] when the
    /// [`cancel_token`](Self::cancel_token) was cancelled before or during the step. On `Err` and
    /// on cancellation, nothing changed: marking, history and operator states are as before.
    ///
    /// Must be polled inside a tokio runtime with timers enabled (`#[tokio::main]`,
    /// `#[tokio::test]`). Dropping the future before it finishes (a `select!`, a
    /// `tokio::time::timeout`) discards the step: marking and history are untouched, a blocking
    /// firing in flight is waited for (its thread cannot be interrupted) so its operator is
    /// back in the net when the drop returns, and the internal states of the step's operators
    /// are restored by the engine's next `step`, `refire` or `back` (until then
    /// [`net`](Self::net) may show a half-fired operator's state). Prefer the
    /// [`cancel_token`](Self::cancel_token), which restores everything before returning.
    pub async fn step_async(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        let advanced = self.drive_async(Forward::Next).await;
        if self.context.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        Ok(self.describe(advanced?))
    }

    /// [`refire`](Self::refire), asynchronously: executes the next step anew even if the
    /// history has one recorded here, which stays as a branch.
    pub async fn refire_async(&mut self) -> Result<Step, StepError> {
        self.check_traced();
        let advanced = self.drive_async(Forward::Anew).await;
        if self.context.recorder.is_some() {
            self.record_outcome(&advanced)?;
        }
        Ok(self.describe(advanced?))
    }

    /// Runs forward to an end state, asynchronously (see [`step_async`](Self::step_async)): the
    /// way to run parallel mode from async code.
    ///
    /// ```
    /// use cameleon::prelude::*;
    /// use cameleon::ops::{Delay, Fork, Join, Sink, Source};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut b = Net::builder("fan-out");
    /// b.add("src", Source::new("hi"));
    /// b.add("fork", Fork::<Any>::new(2)?);
    /// b.add("slow", Delay::new(30));
    /// b.add("slower", Delay::new(40));
    /// b.add("join", Join::<Any>::new(2)?);
    /// b.add("out", Sink::new());
    /// b.connect("src.out_data", "fork.in_data")
    ///     .connect("fork.out_a", "slow.in_data")
    ///     .connect("fork.out_b", "slower.in_data")
    ///     .connect("slow.out_data", "join.in_a")
    ///     .connect("slower.out_data", "join.in_b")
    ///     .connect("join.out_data", "out.in_data");
    /// let mut cvm = Cvm::builder(b.build()?).mode(Mode::Parallel).build();
    ///
    /// assert_eq!(cvm.run_async().await?, EndState::Completed);
    /// assert_eq!(cvm.depth(), 5); // src, fork, both delays in one step, join, out
    /// assert_eq!(cvm.received("out")[0].to_json(), "hi");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_async(&mut self) -> Result<EndState, RunError> {
        self.check_traced();
        let span = self.run_span();
        let end = self.run_async_loop().instrument(span).await;
        if self.context.traced {
            let name = match &end {
                Ok(end) => end.name(),
                Err(_) => "ERROR",
            };
            self.close_run_span(name);
        }
        end
    }

    async fn run_async_loop(&mut self) -> Result<EndState, RunError> {
        let end = loop {
            if self.context.cancel.take() {
                break EndState::Cancelled;
            }
            if let Some(end) = run_outcome(self.drive_async(Forward::Next).await)? {
                break end;
            }
        };
        self.record_end(&end)?;
        self.notify(|_| Event::Ended { end: end.clone() });
        Ok(end)
    }

    /// The operators of a maximal step when some operator declares a cancellation
    /// (docs/semantics.md §10.4): every enabled operator in declaration order, except those a
    /// cancellation of the step may withdraw — the consumers of a connection in the region of
    /// an enabled operator not itself held back. They wait for a later step, if still enabled.
    pub(super) fn without_cancelled(&self) -> Vec<usize> {
        let topo = &self.operators.topo;
        let enabled = &self.marking.enabled;
        let mut held = vec![false; self.net.ops.len()];
        // Cancellers first, in declaration order: one held by an earlier one holds nothing.
        for o in enabled.iter() {
            if held[o] {
                continue;
            }
            for &c in topo.cancels(o) {
                let k = topo.consumer[c as usize] as usize;
                if k != o {
                    held[k] = true;
                }
            }
        }
        enabled.iter().filter(|&o| !held[o]).collect()
    }
}
