//! Cancelling a run from anywhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Cancels a run from anywhere: another task, another thread, a Ctrl-C handler. Cheap to clone;
/// every clone is the same token.
///
/// A cancelled run ends in [`EndState::Cancelled`](super::EndState::Cancelled) with the marking of its last committed step:
/// a step in flight is discarded (its async firings are dropped at once; a blocking or inline
/// `run` cannot be interrupted, so the step waits for it, then discards it). The cancellation is
/// consumed by the run (or step) that reports it, so the engine can be run again afterwards.
/// Cancelling while no run is going on cancels the next one.
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Delay, Sink, Source};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut b = Net::builder("slow");
/// b.add("src", Source::new("x"));
/// b.add("wait", Delay::new(60_000));
/// b.add("out", Sink::new());
/// b.connect("src.out_data", "wait.in_data").connect("wait.out_data", "out.in_data");
/// let mut cvm = Cvm::builder(b.build()?).mode(Mode::Parallel).build();
///
/// let token = cvm.cancel_token();
/// tokio::spawn(async move {
///     tokio::time::sleep(std::time::Duration::from_millis(20)).await;
///     token.cancel();
/// });
/// assert_eq!(cvm.run_async().await?, EndState::Cancelled);
/// assert_eq!(cvm.depth(), 1); // `src` committed; the delay's step was discarded
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<CancelInner>);

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels the current run (or the next one).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether a cancellation is pending.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Consumes a pending cancellation: whether there was one.
    #[inline]
    pub(super) fn take(&self) -> bool {
        self.0.cancelled.load(Ordering::Relaxed) && self.0.cancelled.swap(false, Ordering::SeqCst)
    }

    /// Resolves once the token is cancelled.
    pub(super) async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}
