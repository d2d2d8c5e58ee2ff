//! Keeping a core awake while a remote call waits for its reply (docs/wire.md, "Latency").
//!
//! A reply to a trivial remote firing comes back in tens of microseconds, but a processor that
//! went idle while the call was out takes far longer to wake: on a virtual machine whose idle
//! vCPUs halt, ~100 µs more per round trip. So while a call is in flight, one thread of the
//! process — started on the first call, one for the process — spins, yielding every few
//! microseconds, instead of sleeping, for at most the *window* after the latest call started;
//! then it parks until the next call. It yields to any other thread that wants the core, so it
//! takes mostly idle time; its cost is one core's idle time for at most the window per call
//! (none with a window of zero: off).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The default window: a few round trips.
pub const DEFAULT_KEEP_AWAKE: Duration = Duration::from_millis(2);

/// Spins between two yields (some microseconds). Measured at rest on loopback (2 vCPUs,
/// p50 / p99 of a trivial remote firing): yields alone, 177–204 / 365–437 µs; 256 spins
/// between yields, 124–193 / 316–407; 4 096, 134–157 / 389–407; 16 384, 112–127 / 478–604;
/// spinning without yielding, 183–219 / 2 400 µs (it keeps the core from the threads that
/// need it until the scheduler's tick).
const SPINS: u32 = 4_096;

/// The keep-awake thread and what it watches.
pub(crate) struct KeepAwake {
    shared: Arc<Shared>,
    thread: Thread,
}

struct Shared {
    /// When the clock started: instants below are nanoseconds since.
    epoch: Instant,
    /// Calls in flight.
    calls: AtomicUsize,
    /// When the latest call started, and the window it asked for (nanoseconds).
    started: AtomicU64,
    window: AtomicU64,
    /// Whether the thread is yielding (not parked): for tests.
    awake: AtomicBool,
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether the thread should keep the core awake now.
    fn wanted(&self) -> bool {
        self.calls.load(Ordering::Acquire) > 0
            && self
                .now()
                .saturating_sub(self.started.load(Ordering::Acquire))
                < self.window.load(Ordering::Acquire)
    }
}

impl KeepAwake {
    /// The process's keep-awake thread, started on first use; `None` if the OS refused the
    /// thread (calls then simply wait).
    pub(crate) fn global() -> Option<&'static KeepAwake> {
        static GLOBAL: OnceLock<Option<KeepAwake>> = OnceLock::new();
        GLOBAL.get_or_init(|| KeepAwake::new().ok()).as_ref()
    }

    /// A keep-awake thread of its own (tests; the process uses [`global`](Self::global)).
    pub(crate) fn new() -> std::io::Result<KeepAwake> {
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            calls: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            window: AtomicU64::new(0),
            awake: AtomicBool::new(false),
        });
        let thread = std::thread::Builder::new()
            .name("cameleon-nats-awake".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&shared)
            })?
            .thread()
            .clone();
        Ok(KeepAwake { shared, thread })
    }

    /// A call starts, asking the core kept awake for `window` after it (zero: not at all);
    /// until the returned guard drops, it counts as in flight.
    pub(crate) fn hold(&self, window: Duration) -> Option<Held<'_>> {
        if window.is_zero() {
            return None;
        }
        let s = &*self.shared;
        s.window.store(
            u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        s.started.store(s.now(), Ordering::Release);
        s.calls.fetch_add(1, Ordering::AcqRel);
        // An unpark before the thread parks makes that park return at once: no call is missed.
        self.thread.unpark();
        Some(Held { keep: self })
    }

    /// Whether the thread is keeping the core awake (tests).
    #[cfg(test)]
    fn awake(&self) -> bool {
        self.shared.awake.load(Ordering::Acquire)
    }
}

/// A call in flight (see [`KeepAwake::hold`]).
pub(crate) struct Held<'k> {
    keep: &'k KeepAwake,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.keep.shared.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The thread: yields while a call wants the core awake, parks otherwise. It ends with the
/// process (the global one) or stays parked (a test's).
fn run(shared: &Shared) {
    loop {
        if shared.wanted() {
            shared.awake.store(true, Ordering::Release);
            for _ in 0..SPINS {
                std::hint::spin_loop();
            }
            std::thread::yield_now();
        } else {
            shared.awake.store(false, Ordering::Release);
            // Woken by the next call (or spuriously: the loop looks again).
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards the tests against hanging if the thread never changes state (not a bound on
    /// timing: each wait ends as soon as the state is seen).
    const HANG: Duration = Duration::from_secs(60);

    fn until(what: &str, mut f: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !f() {
            assert!(t0.elapsed() < HANG, "never: {what}");
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    #[test]
    fn the_core_is_kept_awake_while_a_call_is_in_flight_and_not_after() {
        let k = KeepAwake::new().unwrap();
        assert!(!k.awake(), "no call yet");
        let held = k.hold(Duration::from_secs(3600));
        assert!(held.is_some());
        until("awake while the call is in flight", || k.awake());
        drop(held);
        until("parked once no call is in flight", || !k.awake());
        // A second call wakes it again.
        let held = k.hold(Duration::from_secs(3600));
        until("awake for the next call", || k.awake());
        drop(held);
        until("parked again", || !k.awake());
    }

    #[test]
    fn a_long_call_keeps_the_core_awake_only_for_its_window() {
        let k = KeepAwake::new().unwrap();
        let _held = k.hold(Duration::from_millis(1)).unwrap();
        // The call is still in flight, but its window has passed: the thread parks.
        until("parked once the window has passed", || {
            k.shared.now() > 1_000_000 && !k.awake()
        });
        assert_eq!(
            k.shared.calls.load(Ordering::Acquire),
            1,
            "the call is in flight"
        );
    }

    #[test]
    fn a_window_of_zero_keeps_nothing_awake() {
        let k = KeepAwake::new().unwrap();
        assert!(k.hold(Duration::ZERO).is_none());
        assert_eq!(k.shared.calls.load(Ordering::Acquire), 0);
        assert!(!k.awake());
    }
}
