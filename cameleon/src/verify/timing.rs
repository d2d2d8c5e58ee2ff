//! Threads of the full exploration and where their time goes (`Stats::serial`,
//! `Stats::critical`).
//!
//! A parallel phase runs its items on up to `threads` threads ([`on_threads`]); a *serial*
//! section is one thread working while the others wait. [`Timing`] adds up the wall-clock time
//! of the serial sections, and the *critical path*: the serial sections plus, per parallel
//! phase, the CPU time of its busiest thread — what the exploration would take on idle cores,
//! whatever else the machine runs (thread CPU time is read from Linux's `schedstat`; elsewhere
//! the wall clock stands in for it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where the time of an exploration went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    /// Wall-clock time of the serial sections.
    pub(crate) serial: Duration,
    /// Serial sections plus, per parallel phase, its busiest thread's CPU time.
    pub(crate) critical: Duration,
    /// Whether the sections started now read the thread's CPU time (a few microseconds: for
    /// large levels only); otherwise the wall clock stands in for it.
    pub(crate) precise: bool,
}

/// The start of a serial section (see [`Timing::serial_since`]).
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Timing {
    /// Starts a serial section.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            wall: Instant::now(),
            cpu: if self.precise { thread_cpu() } else { None },
        }
    }

    /// Ends the serial section started at `m`.
    pub(crate) fn serial_since(&mut self, m: Mark) {
        let wall = m.wall.elapsed();
        self.serial += wall;
        self.critical += m
            .cpu
            .zip(thread_cpu())
            .map_or(wall, |(a, b)| b.saturating_sub(a));
    }

    /// Adds a parallel phase whose busiest thread took `busiest` (CPU time).
    pub(crate) fn parallel(&mut self, busiest: Duration) {
        self.critical += busiest;
    }

    /// Runs a phase ([`on_threads`]) and counts its time: a parallel phase's busiest thread, or
    /// the whole of it when one thread runs it.
    pub(crate) fn run<T: Send>(
        &mut self,
        items: &mut [T],
        threads: usize,
        f: impl Fn(usize, &mut T) + Sync,
    ) {
        let m = self.mark();
        match on_threads(items, threads, f) {
            Some(busiest) => self.parallel(busiest),
            None => self.serial_since(m),
        }
    }

    /// Adds another exploration's timing.
    pub(crate) fn add(&mut self, other: Timing) {
        self.serial += other.serial;
        self.critical += other.critical;
    }
}

/// CPU time of the calling thread so far (Linux), `None` elsewhere.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `f` on each of `items` (with its index), on up to `threads` threads (this one
/// included), each taking the next item not taken yet: a thread that finishes early takes
/// more. With more than one thread, returns the CPU time of the busiest (its wall-clock time
/// where CPU time is not known); with one, `None`: the caller times it as a serial section.
fn on_threads<T: Send>(
    items: &mut [T],
    threads: usize,
    f: impl Fn(usize, &mut T) + Sync,
) -> Option<Duration> {
    if threads <= 1 || items.len() <= 1 {
        for (i, t) in items.iter_mut().enumerate() {
            f(i, t);
        }
        return None;
    }
    let threads = threads.min(items.len());
    // Each item is taken once (the counter says which is next): its lock is never contended.
    let cells: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let (f, cells, next) = (&f, &cells, &next);
    let run = move || {
        let (wall, cpu) = (Instant::now(), thread_cpu());
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(cell) = cells.get(i) else { break };
            let mut item = cell.lock().unwrap_or_else(PoisonError::into_inner);
            f(i, &mut item);
        }
        cpu.zip(thread_cpu())
            .map_or(wall.elapsed(), |(a, b)| b.saturating_sub(a))
    };
    std::thread::scope(|sc| {
        let others: Vec<_> = (1..threads).map(|_| sc.spawn(run)).collect();
        let mut busiest = run();
        for h in others {
            match h.join() {
                Ok(d) => busiest = busiest.max(d),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        Some(busiest)
    })
}
