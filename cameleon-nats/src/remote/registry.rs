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
    /// When each satellite's recent heartbeats arrived, oldest first (at most [`RECENT`]).
    recent: std::collections::BTreeMap<String, std::collections::VecDeque<Instant>>,
}

/// How many heartbeat arrivals per satellite [`Registry`] remembers.
const RECENT: usize = 32;

/// How many heartbeat periods without one a satellite is gone after.
pub const MISSED_HEARTBEATS: u32 = 3;

impl Registry {
    /// Records a heartbeat received at `at`.
    pub fn seen(&mut self, h: Heartbeat, at: Instant) {
        let recent = self.recent.entry(h.name.clone()).or_default();
        recent.push_back(at);
        if recent.len() > RECENT {
            recent.pop_front();
        }
        self.seen.insert(h.name.clone(), (h, at));
    }

    /// How many heartbeats of satellite `name` arrived after `since` (of the last 32).
    pub fn heartbeats_since(&self, name: &str, since: Instant) -> usize {
        self.recent
            .get(name)
            .map_or(0, |r| r.iter().filter(|at| **at > since).count())
    }

    /// The live satellite (at `now`) that hosts operator type `ty` (or tool `ty` when `tool`),
    /// is not in `exclude`, and runs the fewest calls; `None` when there is none.
    pub fn pick(&self, tool: bool, ty: &str, exclude: &[String], now: Instant) -> Option<String> {
        self.seen
            .values()
            .filter(|(h, at)| {
                let period = Duration::from_millis(h.heartbeat_ms.max(1));
                now.saturating_duration_since(*at) < period * MISSED_HEARTBEATS
                    && !exclude.contains(&h.name)
                    && if tool { &h.tools } else { &h.ops }.iter().any(|t| t == ty)
            })
            .min_by_key(|(h, _)| h.in_flight)
            .map(|(h, _)| h.name.clone())
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
