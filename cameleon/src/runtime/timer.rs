//! Precise waits: [`sleep`], what the `delay` operator waits with (docs/semantics.md §7,
//! "Timing").
//!
//! tokio's timer rounds a deadline up to its next millisecond tick, and a runtime parks with a
//! timeout in whole milliseconds: `tokio::time::sleep` of 1 ms waits about 2 ms. Here one
//! thread for the process, started on the first wait, keeps the deadlines in order and sleeps
//! on a condition variable until the first one (the OS's high-resolution timers: tens of
//! microseconds late on an idle machine), then wakes each waiter's task at its deadline, in
//! deadline order. No runtime worker blocks: a waiting task is parked like any other.
//!
//! On a paused tokio clock (tests' `start_paused`, `tokio::time::pause`) a wait is tokio's own
//! sleep, so virtual time advances by exactly the wait, as before. The clock is told apart at
//! the start of the wait: an unpaused tokio clock reads exactly `std::time::Instant::now()`; a
//! paused one does not (nor one paused then resumed: its waits are tokio's, a millisecond late).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Waits `d`, never less; to within tens of microseconds on an idle machine when tokio's clock
/// is real, and exactly `d` of virtual time when it is paused (see the module's doc).
pub(crate) async fn sleep(d: Duration) {
    // The real clock reads within this bracket; a paused one stays at its frozen instant.
    let before = Instant::now();
    let tokio_now = tokio::time::Instant::now();
    let after = Instant::now();
    let real = (before..=after).contains(&tokio_now.into_std());
    match (real, before.checked_add(d), Timer::global()) {
        (true, Some(deadline), Some(timer)) => timer.sleep_until(deadline).await,
        // A paused clock; a wait past what `Instant` can hold; no thread for the timer.
        _ => tokio::time::sleep(d).await,
    }
}

/// A thread that wakes waiters at their deadlines. One for the process ([`Timer::global`]);
/// tests make their own.
pub(crate) struct Timer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// The deadlines, in order. A key's second part tells apart waits with the same deadline, and
/// keeps them in the order they were registered.
struct Shared {
    state: Mutex<State>,
    /// Signalled when the first deadline moves earlier, or on closing.
    changed: Condvar,
}

#[derive(Default)]
struct State {
    waiters: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock guards no invariant a panic could break halfway (no user code runs under it).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Timer {
    /// The process's timer, its thread started on first use; `None` if the OS refused the
    /// thread (a wait then falls back to tokio's timer).
    pub(crate) fn global() -> Option<&'static Timer> {
        static GLOBAL: OnceLock<Option<Timer>> = OnceLock::new();
        GLOBAL.get_or_init(|| Timer::new().ok()).as_ref()
    }

    /// A timer with its own thread.
    pub(crate) fn new() -> std::io::Result<Timer> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("cameleon-timer".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&shared)
            })?;
        Ok(Timer {
            shared,
            thread: Some(thread),
        })
    }

    /// Waits until `deadline`, never less.
    pub(crate) fn sleep_until(&self, deadline: Instant) -> Sleep<'_> {
        Sleep {
            timer: self,
            deadline,
            key: None,
        }
    }

    /// How many waits are registered (tests: a dropped wait leaves none behind).
    #[cfg(test)]
    fn registered(&self) -> usize {
        self.shared.lock().waiters.len()
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // Every `Sleep` borrows its timer, so none is registered any more.
        self.shared.lock().closed = true;
        self.shared.changed.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer").finish_non_exhaustive()
    }
}

/// The timer's thread: wakes every waiter whose deadline has passed, in deadline order, then
/// sleeps until the next deadline or a change.
fn run(shared: &Shared) {
    let mut due = Vec::new();
    let mut state = shared.lock();
    loop {
        if state.closed {
            return;
        }
        let now = Instant::now();
        while let Some(entry) = state.waiters.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            // Woken outside the lock: a waker may run code that registers another wait.
            drop(state);
            due.drain(..).for_each(Waker::wake);
            state = shared.lock();
            continue;
        }
        state = match state.waiters.first_key_value() {
            Some((&(deadline, _), _)) => {
                let timeout = deadline.saturating_duration_since(now);
                shared
                    .changed
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// A wait on a [`Timer`]: ready once its deadline has passed. Dropping it unregisters it.
pub(crate) struct Sleep<'t> {
    timer: &'t Timer,
    deadline: Instant,
    /// Its place among the timer's waiters, once registered.
    key: Option<(Instant, u64)>,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.unregister();
            return Poll::Ready(());
        }
        let shared = &*self.timer.shared;
        let mut state = shared.lock();
        // Still registered (the thread removes a key only once its deadline has passed, and it
        // has not): keep the latest waker.
        if let Some(waker) = self.key.and_then(|key| state.waiters.get_mut(&key)) {
            waker.clone_from(cx.waker());
            return Poll::Pending;
        }
        let key = (self.deadline, state.next_id);
        state.next_id += 1;
        let first = state
            .waiters
            .first_key_value()
            .is_none_or(|(&first, _)| key < first);
        state.waiters.insert(key, cx.waker().clone());
        drop(state);
        self.key = Some(key);
        if first {
            shared.changed.notify_one();
        }
        Poll::Pending
    }
}

impl Sleep<'_> {
    fn unregister(&mut self) {
        if let Some(key) = self.key.take() {
            self.timer.shared.lock().waiters.remove(&key);
        }
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl fmt::Debug for Sleep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::task::Wake;

    /// Guards the tests against hanging if a waiter is never woken (not a bound on timing).
    const HANG: Duration = Duration::from_secs(60);

    /// A waker that reports its waits' wake-ups, with when they came.
    struct Report {
        id: usize,
        to: Mutex<mpsc::Sender<(usize, Instant)>>,
    }

    impl Wake for Report {
        fn wake(self: Arc<Self>) {
            let to = self.to.lock().unwrap();
            let _ = to.send((self.id, Instant::now()));
        }
    }

    fn reporter(id: usize, to: &mpsc::Sender<(usize, Instant)>) -> Waker {
        Waker::from(Arc::new(Report {
            id,
            to: Mutex::new(to.clone()),
        }))
    }

    /// Polls `sleep` once with `waker`; it must not be ready yet.
    fn register(sleep: &mut Pin<Box<Sleep<'_>>>, waker: &Waker) {
        let mut cx = Context::from_waker(waker);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
    }

    #[test]
    fn waiters_registered_out_of_order_are_woken_in_deadline_order_never_early() {
        let timer = Timer::new().unwrap();
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        // Deadlines 30, 10, 20, 10 ms after the start, registered in that order.
        let offsets = [30, 10, 20, 10];
        let mut sleeps: Vec<_> = offsets
            .iter()
            .enumerate()
            .map(|(id, &ms)| {
                let mut s = Box::pin(timer.sleep_until(start + Duration::from_millis(ms)));
                register(&mut s, &reporter(id, &tx));
                s
            })
            .collect();
        assert_eq!(timer.registered(), 4);
        let woken: Vec<_> = (0..offsets.len())
            .map(|_| rx.recv_timeout(HANG).expect("every waiter is woken"))
            .collect();
        let order: Vec<_> = woken.iter().map(|&(id, _)| id).collect();
        // Same deadline: in the order they were registered.
        assert_eq!(order, [1, 3, 2, 0]);
        for &(id, at) in &woken {
            let deadline = start + Duration::from_millis(offsets[id]);
            assert!(at >= deadline, "waiter {id} woken before its deadline");
        }
        // Woken, they are ready, and the timer holds nothing more.
        let waker = reporter(99, &tx);
        let mut cx = Context::from_waker(&waker);
        for s in &mut sleeps {
            assert!(s.as_mut().poll(&mut cx).is_ready());
        }
        assert_eq!(timer.registered(), 0);
    }

    #[test]
    fn a_dropped_wait_is_unregistered_and_never_woken() {
        let timer = Timer::new().unwrap();
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        let mut dropped = Box::pin(timer.sleep_until(start + Duration::from_millis(5)));
        register(&mut dropped, &reporter(0, &tx));
        let mut kept = Box::pin(timer.sleep_until(start + Duration::from_millis(20)));
        register(&mut kept, &reporter(1, &tx));
        assert_eq!(timer.registered(), 2);
        drop(dropped);
        assert_eq!(timer.registered(), 1);
        // The first wake-up is the kept wait's, after the dropped one's deadline.
        let (id, at) = rx.recv_timeout(HANG).expect("the kept wait is woken");
        assert_eq!(id, 1, "the dropped wait was woken");
        assert!(at >= start + Duration::from_millis(20));
        drop(kept);
        assert_eq!(timer.registered(), 0);
        assert!(rx.try_recv().is_err(), "nothing else was woken");
    }

    #[test]
    fn a_wait_whose_deadline_has_passed_is_ready_at_once_and_never_registered() {
        let timer = Timer::new().unwrap();
        let (tx, _rx) = mpsc::channel();
        let mut past = Box::pin(timer.sleep_until(Instant::now()));
        let waker = reporter(0, &tx);
        assert!(
            past.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        );
        assert_eq!(timer.registered(), 0);
    }

    #[test]
    fn many_concurrent_waits_on_a_runtime_all_finish_never_early() {
        // A timer of the test's own, so that no other test's waits are counted.
        let timer: &'static Timer = Box::leak(Box::new(Timer::new().unwrap()));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let waited = rt.block_on(async {
            let tasks: Vec<_> = (0..1_000u64)
                .map(|i| {
                    tokio::spawn(async move {
                        let d = Duration::from_micros(i * 37 % 20_000);
                        let start = Instant::now();
                        timer.sleep_until(start + d).await;
                        (d, start.elapsed())
                    })
                })
                .collect();
            let all = async {
                let mut waited = Vec::new();
                for t in tasks {
                    waited.push(t.await.unwrap());
                }
                waited
            };
            tokio::time::timeout(HANG, all)
                .await
                .expect("every wait finishes")
        });
        assert_eq!(waited.len(), 1_000);
        for (d, elapsed) in waited {
            assert!(elapsed >= d, "waited {elapsed:?} for {d:?}");
        }
        assert_eq!(timer.registered(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_paused_clock_a_wait_takes_exactly_its_virtual_time() {
        let start = tokio::time::Instant::now();
        sleep(Duration::from_millis(1)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(1));
        sleep(Duration::from_secs(3600)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(3_600_001));
    }

    #[tokio::test]
    async fn on_a_real_clock_a_wait_uses_the_precise_timer() {
        // Registered on the global timer while pending: a wait of a minute, polled once.
        let mut wait = Box::pin(sleep(Duration::from_secs(60)));
        let waker = Waker::noop();
        assert!(
            wait.as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_pending()
        );
        let deadline_in_a_minute = |state: &State| {
            state
                .waiters
                .keys()
                .any(|&(d, _)| d > Instant::now() + Duration::from_secs(30))
        };
        let timer = Timer::global().unwrap();
        assert!(deadline_in_a_minute(&timer.shared.lock()));
        drop(wait);
        let start = Instant::now();
        tokio::time::timeout(HANG, sleep(Duration::from_millis(2)))
            .await
            .expect("the wait finishes");
        assert!(start.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn a_wait_past_what_an_instant_holds_does_not_panic() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut wait = Box::pin(sleep(Duration::MAX));
            let waker = Waker::noop();
            assert!(
                wait.as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_pending()
            );
        });
    }
}
