//! Running the firings of one step (docs/semantics.md §7): what each reads ([`StepPlan`]), the
//! read-only context they share ([`StepCx`]), and the two ways to run them through the firing
//! routine: [`fire_inline`], one after the other on the calling thread, and [`run_firings`],
//! concurrently as futures. Both stop at the first failure in declaration order (and
//! `run_firings` at a cancellation), and leave one outcome and the emissions per firing.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use tracing::{Instrument, Span};

use super::attempt::{Emissions, FiringCx, FiringOutcome, fire, fire_now};
use super::spans::finish;
use super::{CancelToken, Event, Observer};
use crate::connection::Token;
use crate::net::{OpNode, Topo};
use crate::operator::capability::Capabilities;
use crate::operator::{Execution, InputSet, InputSlot, OpError, OpSettings, OpState, PartialSink};

/// What the firings of a step read, per firing (in the order of the step's operators).
#[derive(Default)]
pub(super) struct StepPlan {
    /// Where each firing's inputs start in `slots`, and where the last one's end; empty for a
    /// step of one firing, which reads them all (the sequential hot path pushes nothing here).
    pub(super) slot_start: Vec<usize>,
    pub(super) slots: Vec<InputSlot>,
    pub(super) consumes: Vec<InputSet>,
}

impl StepPlan {
    /// The inputs of the step's `j`-th firing.
    #[inline]
    pub(super) fn inputs(&self, j: usize) -> &[InputSlot] {
        if self.slot_start.is_empty() {
            return &self.slots; // a step of one firing
        }
        &self.slots[self.slot_start[j]..self.slot_start[j + 1]]
    }

    pub(super) fn clear(&mut self) {
        self.slot_start.clear();
        self.slots.clear();
        self.consumes.clear();
    }
}

/// What every firing of one step shares, read-only.
pub(super) struct StepCx<'a> {
    /// The logical step (1-based).
    pub(super) step: u32,
    /// The branch the step extends, for the idempotency key.
    pub(super) branch: u32,
    /// The step's operators, in declaration order.
    pub(super) ops: &'a [usize],
    /// What each reads.
    pub(super) plan: &'a StepPlan,
    /// The engine's token arena, which the plan's inputs index.
    pub(super) tokens: &'a [Token],
    pub(super) topo: &'a Topo,
    pub(super) execution: &'a [Execution],
    pub(super) settings: &'a [OpSettings],
    /// The run's id, for the idempotency key.
    pub(super) run: &'a crate::operator::firing::RunId,
    /// The capabilities of the run (its pinned generation).
    pub(super) caps: &'a Arc<dyn Capabilities>,
    /// Whether the engine runs in parallel mode ([`Firing::parallel`](crate::Firing::parallel)).
    pub(super) parallel: bool,
    /// Where partial output goes, while somebody listens.
    pub(super) partial: Option<&'a PartialSink>,
    /// Whether to measure each firing's wall-clock time (for events and spans).
    pub(super) timed: bool,
    /// One `tracing` span per firing, when a subscriber listens (else empty).
    pub(super) spans: &'a [Span],
    /// Recorded firings to reuse, or keys to compute (`reuse.rs`), if any.
    pub(super) reuse: Option<&'a super::reuse::Reuse>,
}

/// Runs the step's firings one after the other on the calling thread, through [`fire_now`], up
/// to the first failure (later firings are not needed: the step is discarded). `before`: the
/// states before the step of the operators that have one, in the step's order; `emitted`
/// receives each firing's emissions. `outcomes`
/// stays empty when every firing succeeds (an inline firing has nothing to keep beside its
/// emissions); after a failure it holds one entry per firing (`None` for those not run). A
/// [`FiringOutcome`] is only built for a firing somebody watches (an observer, a span) or that
/// failed.
// Always inlined: it is the sequential hot path (see benches/engine.rs).
#[inline(always)]
pub(super) fn fire_inline(
    b: &StepCx<'_>,
    nodes: &mut [OpNode],
    before: &[(u32, Option<OpState>)],
    emitted: &mut [Emissions],
    outcomes: &mut Vec<Option<FiringOutcome>>,
    observer: &mut Option<Observer>,
) {
    // Indexed up to the shorter length (no bounds checks, no iterator adapters to set up: a
    // sequential step has one firing), with the next saved state found by a cursor.
    let n = b.ops.len().min(emitted.len());
    let mut saved = 0;
    for j in 0..n {
        let o = b.ops[j];
        let emitted = &mut emitted[j];
        let before = match before.get(saved) {
            Some((s, state)) if *s as usize == o => {
                saved += 1;
                state.as_ref()
            }
            _ => None, // a stateless operator: nothing saved
        };
        let OpNode { meta, op } = &mut nodes[o];
        let cx = FiringCx::new(b, j, &meta.name, None, None);
        if !b.timed {
            // Nobody watches: nothing to time, no span, no event.
            let (result, attempts) = fire_now(&mut **op, &meta.spec, &cx, before, emitted);
            if let Err(error) = result {
                let out = inline_outcome(Err(error), attempts, None);
                failed_at(outcomes, j, out, b.ops.len());
                break;
            }
            continue;
        }
        let started = Instant::now();
        let span = b.spans.get(j);
        let entered = span.map(Span::enter);
        let (result, attempts) = fire_now(&mut **op, &meta.spec, &cx, before, emitted);
        drop(entered);
        let out = inline_outcome(result, attempts, Some(started));
        if let Some(span) = span {
            finish(span, &out);
        }
        if let Some(obs) = observer.as_mut() {
            obs(&out.event(b.step, &meta.name));
        }
        if out.result.is_err() {
            failed_at(outcomes, j, out, b.ops.len());
            break;
        }
    }
}

/// The outcome of an inline firing (which neither reuses nor keys, see `attempt::fire_now`),
/// timed from `started` if it was.
#[cold]
pub(super) fn inline_outcome(
    result: Result<(), OpError>,
    attempts: u32,
    started: Option<Instant>,
) -> FiringOutcome {
    FiringOutcome {
        result,
        attempts,
        elapsed: started.map(|t| t.elapsed()).unwrap_or_default(),
        reused: None,
        key: None,
    }
}

/// The outcomes of a step of inline firings that failed at firing `j`: the firings before it
/// succeeded (an inline firing has nothing else to keep: no reuse, see `attempt::fire_now`),
/// `j` failed with `out`, the later ones did not run. A step whose inline firings all succeed
/// leaves `outcomes` empty: nothing is pushed on the hot path.
#[cold]
#[inline(never)]
pub(super) fn failed_at(
    outcomes: &mut Vec<Option<FiringOutcome>>,
    j: usize,
    out: FiringOutcome,
    n: usize,
) {
    outcomes.clear();
    outcomes.extend((0..j).map(|_| {
        Some(FiringOutcome {
            result: Ok(()),
            attempts: 1,
            elapsed: std::time::Duration::ZERO,
            reused: None,
            key: None,
        })
    }));
    outcomes.push(Some(out));
    outcomes.resize_with(n, || None);
}

type FiringFuture<'a> = Pin<Box<dyn Future<Output = FiringOutcome> + Send + 'a>>;

/// Runs the step's firings concurrently through [`fire`] until all have finished, the first
/// failure in declaration order is known, or the run is cancelled (`true`). `outcomes` and
/// `emitted` receive one entry per firing (`None` and nothing for those cancelled or not
/// needed).
pub(super) async fn run_firings(
    b: &StepCx<'_>,
    nodes: &mut [OpNode],
    emitted: &mut [Emissions],
    outcomes: &mut Vec<Option<FiringOutcome>>,
    cancel: &CancelToken,
    observer: &mut Option<Observer>,
) -> bool {
    let n = b.ops.len();
    let stops: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
    let queue: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    let observed = observer.is_some();
    let kinds: Vec<Execution> = b.ops.iter().map(|&o| b.execution[o]).collect();
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
        let cx = FiringCx::new(
            b,
            j,
            &meta.name,
            Some(&stops[j]),
            observed.then_some(&queue),
        );
        let Some(out) = slots.next() else {
            break; // unreachable: one emission vector per firing
        };
        let firing = fire(op, &meta.spec, cx, out);
        futures.push(Some(match b.spans.get(j) {
            Some(span) => Box::pin(firing.instrument(span.clone())),
            None => Box::pin(firing),
        }));
    }

    outcomes.clear();
    outcomes.resize_with(n, || None);
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
    // Each firing is polled with a waker of its own, and only when woken: a wide step's
    // replies, arriving one at a time, each poll their own firing, not every firing left. A
    // step of one firing (sequential mode) needs none: every wake of the step is its own.
    let woken = (n > 1).then(|| {
        Arc::new(Woken {
            flags: (0..n).map(|_| AtomicBool::new(true)).collect(),
            step: Mutex::new(None),
        })
    });
    let wakers: Vec<Waker> = woken.as_ref().map_or_else(Vec::new, |woken| {
        (0..n)
            .map(|j| {
                Waker::from(Arc::new(FiringWaker {
                    j,
                    woken: Arc::clone(woken),
                }))
            })
            .collect()
    });
    poll_fn(|cx: &mut Context<'_>| {
        if let Some(woken) = &woken {
            woken.park(cx.waker());
        }
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
                let polled = match &woken {
                    None => f.as_mut().poll(cx),
                    Some(woken) if woken.flags[j].swap(false, Ordering::AcqRel) => {
                        f.as_mut().poll(&mut Context::from_waker(&wakers[j]))
                    }
                    Some(_) => continue,
                };
                let Poll::Ready(out) = polled else {
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
    cancelled
}

/// Which firings of a step were woken since the step last polled them, and the step's waker.
struct Woken {
    flags: Vec<AtomicBool>,
    step: Mutex<Option<Waker>>,
}

impl Woken {
    /// Keeps the waker of the task polling the step (before the firings are polled, so a wake
    /// during the poll reaches it).
    fn park(&self, waker: &Waker) {
        let mut step = self.step.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *step {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }
}

/// The waker of firing `j`: marks it woken, then wakes the step.
struct FiringWaker {
    j: usize,
    woken: Arc<Woken>,
}

impl Wake for FiringWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.flags[self.j].store(true, Ordering::Release);
        let step = self
            .woken
            .step
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(w) = step {
            w.wake();
        }
    }
}
