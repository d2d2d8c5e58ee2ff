//! The satellites a run knows from their heartbeats, and when each is gone.

use std::time::{Duration, Instant};

use crate::wire::Heartbeat;

/// A satellite seen by [`Registry`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Seen {
    /// Its name.
    pub name: String,
    /// The operator types it hosts.
    pub ops: Vec<String>,
    /// The tools it hosts.
    pub tools: Vec<String>,
    /// Milliseconds since its last heartbeat.
    pub last_seen_ms: u64,
    /// Its heartbeat period.
    #[serde(skip)]
    pub heartbeat_ms: u64,
    /// Calls it runs now (as of its last heartbeat).
    #[serde(skip)]
    pub in_flight: usize,
}

/// The satellites known from their heartbeats. A satellite unseen for 3 of its heartbeat
/// periods is gone.
#[derive(Debug, Default)]
pub struct Registry {
    seen: std::collections::BTreeMap<String, (Heartbeat, Instant)>,
}

/// How many heartbeat periods without one a satellite is gone after.
pub const MISSED_HEARTBEATS: u32 = 3;

impl Registry {
    /// Records a heartbeat received at `at`.
    pub fn seen(&mut self, h: Heartbeat, at: Instant) {
        self.seen.insert(h.name.clone(), (h, at));
    }

    /// The satellites live at `now` (seen within 3 of their heartbeat periods), sorted by name;
    /// the others are forgotten.
    pub fn live_at(&mut self, now: Instant) -> Vec<Seen> {
        self.seen.retain(|_, (h, at)| {
            let period = Duration::from_millis(h.heartbeat_ms.max(1));
            now.saturating_duration_since(*at) < period * MISSED_HEARTBEATS
        });
        self.seen
            .values()
            .map(|(h, at)| Seen {
                name: h.name.clone(),
                ops: h.ops.clone(),
                tools: h.tools.clone(),
                last_seen_ms: now.saturating_duration_since(*at).as_millis() as u64,
                heartbeat_ms: h.heartbeat_ms,
                in_flight: h.in_flight,
            })
            .collect()
    }

    /// The time satellite `name` was last seen.
    pub fn last_seen(&self, name: &str) -> Option<Instant> {
        self.seen.get(name).map(|(_, at)| *at)
    }
}
