//! A run in progress (the page's Run and Pause). The session alone starts and ends it; the
//! driver (the `run` handler) only asks for slices, so other requests get the engine between
//! them. Pause is a flag the server sets without the engine ([`Wires::pause`](super::Wires)):
//! the run stops before its next step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Session, not_a_net};
use crate::serve::error::ApiError;

/// Whether a run is in progress, and the flag that asks it to pause.
#[derive(Debug)]
pub(super) struct RunState {
    running: bool,
    pause: Arc<AtomicBool>,
}

impl RunState {
    /// No run, paused by `pause`.
    pub(super) fn new(pause: Arc<AtomicBool>) -> Self {
        RunState {
            running: false,
            pause,
        }
    }

    fn pausing(&self) -> bool {
        self.pause.load(Ordering::SeqCst)
    }
}

impl Session {
    /// A run is in progress (the page shows Pause).
    pub(crate) fn is_running(&self) -> bool {
        self.run.running
    }

    /// Starts a run. Refused while one is in progress, and when the served text has never been
    /// a valid net.
    pub(crate) fn start_run(&mut self) -> Result<(), ApiError> {
        if self.run.running {
            return Err(ApiError::conflict("a run is already in progress"));
        }
        if self.cvm.is_none() {
            return Err(not_a_net());
        }
        self.run.pause.store(false, Ordering::SeqCst);
        self.run.running = true;
        self.batching.store(true, Ordering::SeqCst);
        self.touch();
        Ok(())
    }

    /// Runs for about `slice` (batches of `batch` steps, at least one unless paused):
    /// `Ok(true)` when the run is over — it reached an end state, or was paused — and no
    /// longer in progress. A refusal ends the run too.
    pub(crate) fn run_slice(&mut self, slice: Duration, batch: usize) -> Result<bool, ApiError> {
        let started = Instant::now();
        let r = loop {
            match self.run_some(batch) {
                Ok(false) if started.elapsed() < slice && !self.run.pausing() => {}
                other => break other,
            }
        };
        let over = !matches!(r, Ok(false)) || self.run.pausing();
        if over {
            self.end_run();
        }
        r.map(|_| over)
    }

    /// Ends the run in progress, if any (also when its driver failed); its last events go to
    /// the outbox.
    pub(crate) fn end_run(&mut self) {
        if self.run.running {
            self.run.running = false;
            self.batching.store(false, Ordering::SeqCst);
            self.hand_off();
            self.touch();
        }
    }

    /// Runs up to `n` steps, fewer if paused; whether the run reached an end state.
    fn run_some(&mut self, n: usize) -> Result<bool, ApiError> {
        for _ in 0..n {
            if self.run.pausing() {
                return Ok(false);
            }
            let r = self.cvm()?.step();
            self.after_step(r)?;
            if self.last_end.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Session;
    use crate::serve::error::ErrorKind;

    /// A session of `counter.cm`-like net that loops for ever (a merge fed back to itself
    /// through a counter), so a run only stops when paused.
    fn endless() -> (tempdir::Dir, Session) {
        let dir = tempdir::Dir::new();
        let path = dir.0.join("endless.cm");
        std::fs::write(
            &path,
            "config:\n  max_loop_iterations: 1000000\noperators:\n  - {id: zero, type: const, params: {value: 0}}\n  - {id: loop, type: merge}\n  - {id: inc, type: counter}\nconnections:\n  - {from: zero.out_data, to: loop.in_a}\n  - {from: loop.out_data, to: inc.in_data}\n  - {from: inc.out_data, to: loop.in_b}\n",
        )
        .unwrap();
        let runtime = cameleon::capabilities::Runtime::builder().build().unwrap();
        let served = super::super::Served {
            path,
            allow_outside: false,
            satellites: None,
            capabilities: None,
        };
        let s = Session::open(served, runtime, None, super::super::Wires::default()).unwrap();
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        (dir, s)
    }

    mod tempdir {
        /// A fresh folder under the system's temporary directory, removed on drop.
        pub(super) struct Dir(pub(super) std::path::PathBuf);
        impl Dir {
            pub(super) fn new() -> Self {
                let p = std::env::temp_dir().join(format!(
                    "cameleon-serve-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    /// What the server's Pause does: set the flag, without the engine.
    fn pause(s: &Session) {
        s.wires
            .pause
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    #[test]
    fn a_run_is_started_paused_and_ended_by_the_session_alone() {
        let (_dir, mut s) = endless();
        assert!(!s.is_running());
        s.start_run().unwrap();
        assert!(s.is_running());
        assert!(s.state().running, "the page sees the run");
        // While it runs, a second run and the buttons are refused as conflicts.
        assert_eq!(s.start_run().unwrap_err().kind(), ErrorKind::Conflict);
        assert_eq!(s.step().unwrap_err().kind(), ErrorKind::Conflict);
        assert_eq!(s.save("name: x\n").unwrap_err().kind(), ErrorKind::Conflict);
        // An endless net: a slice ends without an end state, and the run goes on…
        assert!(!s.run_slice(Duration::ZERO, 5).unwrap());
        assert!(s.is_running());
        let depth = s.state().step;
        assert!(depth >= 5, "one batch at least: {depth}");
        // …until it is paused: the next slice is its last, and fires nothing.
        pause(&s);
        assert!(s.run_slice(Duration::ZERO, 5).unwrap());
        assert_eq!(s.state().step, depth, "paused before its next step");
        assert!(!s.is_running());
        assert!(!s.state().running);
        s.step().unwrap();
    }

    #[test]
    fn the_state_carries_what_the_run_spent_and_its_budget() {
        let dir = tempdir::Dir::new();
        let path = dir.0.join("budget.cm");
        // Two questions of the offline model under a one-token budget: the first request
        // starts, the second does not.
        std::fs::write(
            &path,
            "config:\n  budget: {tokens: 1}\noperators:\n  - {id: qa, type: source, params: {value: 'Why do chameleons change colour?'}}\n  - {id: a, type: llm}\n  - {id: outa, type: sink}\n  - {id: qb, type: source, params: {value: 'Where do they live?'}}\n  - {id: b, type: llm}\n  - {id: outb, type: sink}\nconnections:\n  - {from: qa.out_data, to: a.in_prompt}\n  - {from: a.out_text, to: outa.in_data}\n  - {from: qb.out_data, to: b.in_prompt}\n  - {from: b.out_text, to: outb.in_data}\n",
        )
        .unwrap();
        let runtime = cameleon::capabilities::Runtime::builder().build().unwrap();
        let served = super::super::Served {
            path,
            allow_outside: false,
            satellites: None,
            capabilities: None,
        };
        let mut s = Session::open(served, runtime, None, super::super::Wires::default()).unwrap();
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        let before = serde_json::to_value(s.state()).unwrap();
        assert!(before.get("usage").is_none(), "no request yet: {before}");
        assert_eq!(before["budget"]["tokens"], 1, "{before}");
        s.start_run().unwrap();
        while !s.run_slice(Duration::ZERO, 100).unwrap() {}
        let state = serde_json::to_value(s.state()).unwrap();
        assert_eq!(state["end"], "BUDGET", "{state}");
        assert_eq!(state["usage"]["requests"], 1, "{state}");
        let tokens = state["usage"]["total_tokens"].as_u64().unwrap();
        assert!(tokens > 1, "{state}");
        assert_eq!(
            tokens,
            state["usage"]["prompt_tokens"].as_u64().unwrap()
                + state["usage"]["completion_tokens"].as_u64().unwrap()
        );
    }

    #[test]
    fn pausing_without_a_run_is_forgotten_by_the_next_run() {
        let (_dir, mut s) = endless();
        pause(&s);
        let version = s.state().version;
        s.end_run();
        assert_eq!(s.state().version, version, "nothing to end: no change");
        s.start_run().unwrap();
        assert!(!s.run_slice(Duration::ZERO, 1).unwrap(), "not paused");
        s.end_run();
        assert!(!s.is_running());
    }
}
