//! Waiting for a condition, never for ever.

use std::time::{Duration, Instant};

/// Checks `ready` every few milliseconds until it returns `Some`, and returns that; fails the
/// test, naming `what`, when `timeout` passes first. Nothing is timed: the timeout only turns a
/// hang into a failure.
pub fn wait_for<T>(what: &str, timeout: Duration, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {} s",
            timeout.as_secs_f32()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// [`wait_for`] a condition.
pub fn wait_until(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    wait_for(what, timeout, || ready().then_some(()));
}
