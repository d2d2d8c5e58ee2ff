//! Running the firings of one step together (docs/semantics.md §7): what each reads
//! ([`StepPlan`]), the read-only context they share ([`StepFirings`]), and [`run_firings`], which
//! drives them concurrently through the firing routine until all have finished, the first
//! failure in declaration order is known, or the run is cancelled.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tracing::{Instrument, Span};

use super::attempt::{Emissions, FiringCx, Outcome, fire};
use super::spans::finish;
use super::{CancelToken, Event, Observer};
use crate::connection::Token;
use crate::net::{OpNode, Topo};
use crate::operator::capability::Capabilities;
use crate::operator::{Execution, InputSet, InputSlot, OpSettings, PartialSink};

/// What the firings of a step read, per firing (in the order of the step's operators).
#[derive(Default)]
pub(super) struct StepPlan {
    pub(super) slot_start: Vec<usize>,
    pub(super) slots: Vec<InputSlot>,
    pub(super) consumes: Vec<InputSet>,
}

impl StepPlan {
    /// The inputs of the step's `j`-th firing.
    pub(super) fn inputs(&self, j: usize) -> &[InputSlot] {
        &self.slots[self.slot_start[j]..self.slot_start[j + 1]]
    }
}

/// The read-only context of a step's firings.
pub(super) struct StepFirings<'a> {
    pub(super) ops: &'a [usize],
    pub(super) plan: &'a StepPlan,
    pub(super) tokens: &'a [Token],
    pub(super) topo: &'a Topo,
    pub(super) exec: &'a [Execution],
    pub(super) settings: &'a [OpSettings],
    pub(super) step: u32,
    pub(super) run: &'a std::sync::Arc<str>,
    pub(super) branch: u32,
    pub(super) caps: &'a Arc<dyn Capabilities>,
    /// One `tracing` span per firing, when a subscriber listens (else empty).
    pub(super) spans: &'a [Span],
    pub(super) parallel: bool,
    /// Where partial output goes, while somebody listens.
    pub(super) partial: Option<&'a PartialSink>,
    /// Recorded firings to reuse, if any.
    pub(super) reuse: Option<&'a super::reuse::Reuse>,
}

/// How the firings of a step ended: one outcome and its emissions per firing (`None`: cancelled
/// or not needed before the end).
pub(super) struct Ran {
    pub(super) outcomes: Vec<Option<Outcome>>,
    pub(super) emitted: Vec<Emissions>,
    pub(super) cancelled: bool,
}

type FiringFuture<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// Runs the step's firings concurrently through [`fire`] until all have finished, the first
/// failure in declaration order is known, or the run is cancelled.
pub(super) async fn run_firings(
    b: StepFirings<'_>,
    nodes: &mut [OpNode],
    cancel: &CancelToken,
    observer: &mut Option<Observer>,
) -> Ran {
    let n = b.ops.len();
    let stops: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let queue: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    let observed = observer.is_some();
    let kinds: Vec<Execution> = b.ops.iter().map(|&o| b.exec[o]).collect();
    let mut emitted: Vec<Emissions> = (0..n).map(|_| Vec::new()).collect();
    let mut names: Vec<&str> = Vec::with_capacity(n);

    let mut futures: Vec<Option<FiringFuture<'_>>> = Vec::with_capacity(n);
    let mut wanted = b.ops.iter().copied().enumerate().peekable();
    let mut slots = emitted.iter_mut();
    for (o, node) in nodes.iter_mut().enumerate() {
        let Some(&(j, next)) = wanted.peek() else {
            break;
        };
        if next != o {
            continue;
        }
        wanted.next();
        let OpNode { meta, op } = node;
        names.push(&meta.name);
        let cx = FiringCx {
            o,
            name: &meta.name,
            kind: kinds[j],
            settings: b.settings[o],
            inputs: b.plan.inputs(j),
            tokens: b.tokens,
            topo: b.topo,
            step: b.step,
            run: b.run,
            branch: b.branch,
            stop: Some(&stops[j]),
            events: observed.then_some(&queue),
            timed: observed || !b.spans.is_empty(),
            caps: b.caps,
            parallel: b.parallel,
            partial: b.partial,
            reuse: b.reuse,
        };
        let Some(out) = slots.next() else {
            break; // unreachable: one emission vector per firing
        };
        let firing = fire(op, &meta.spec, cx, out);
        futures.push(Some(match b.spans.get(j) {
            Some(span) => Box::pin(firing.instrument(span.clone())),
            None => Box::pin(firing),
        }));
    }

    let mut outcomes: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
    let mut cancelled = false;
    // Index of the first failure (declaration order) seen so far; firings after it are not
    // needed and are cancelled.
    let mut cut = n;
    let mut cancel_wait = std::pin::pin!(cancel.cancelled());
    let drop_after = |futures: &mut [Option<FiringFuture<'_>>], from: usize| {
        for k in from..n {
            stops[k].store(true, Ordering::SeqCst);
            // A blocking firing cannot be interrupted: it is polled until its operator is back.
            if kinds[k] != Execution::Blocking {
                futures[k] = None;
            }
        }
    };
    poll_fn(|cx: &mut Context<'_>| {
        if !cancelled && cancel_wait.as_mut().poll(cx).is_ready() {
            cancelled = true;
            drop_after(&mut futures, 0);
        }
        // Blocking and async firings first, so they are under way while inline ones run.
        for inline in [false, true] {
            for j in 0..n {
                if (kinds[j] == Execution::Inline) != inline {
                    continue;
                }
                let Some(f) = futures[j].as_mut() else {
                    continue;
                };
                let Poll::Ready(out) = f.as_mut().poll(cx) else {
                    continue;
                };
                futures[j] = None;
                if let Some(span) = b.spans.get(j) {
                    finish(span, &out);
                }
                if out.result.is_err() && j < cut && !cancelled {
                    cut = j;
                    drop_after(&mut futures, j + 1);
                }
                if let Some(obs) = observer.as_mut() {
                    obs(&out.event(b.step, names[j]));
                }
                outcomes[j] = Some(out);
            }
        }
        if let Some(obs) = observer.as_mut() {
            let events = std::mem::take(&mut *queue.lock().unwrap_or_else(PoisonError::into_inner));
            for e in &events {
                obs(e);
            }
        }
        if futures.iter().all(Option::is_none) {
            // A cancellation that arrived while this poll was running the firings (the last
            // one may have finished after it) still discards the step: its outcome must not
            // depend on when the poll began.
            if !cancelled && cancel.is_cancelled() {
                cancelled = true;
            }
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    drop(futures);
    Ran {
        outcomes,
        emitted,
        cancelled,
    }
}
