//! The event stream (`GET /api/events`): engine events gathered in the outbox, sent with the
//! published state every [`FLUSH_MS`](super::FLUSH_MS) ms to every subscriber. A run hands
//! its events over a slice at a time (at least `RUN_BATCH` steps), so a fast run reaches the
//! page as a few coalesced flushes, whatever the machine's speed.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt as _};
use tokio::sync::broadcast::error::RecvError;

use cameleon::engine::Event;

use super::MAX_EVENTS_PER_FLUSH;
use super::shared::Shared;
use super::view::{CoalescedView, StateView};

/// One message of the event stream: an engine event (unnamed SSE event, its JSON) or the
/// state (`event: state`).
#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub(crate) name: Option<&'static str>,
    pub(crate) data: String,
}

impl Shared {
    /// Sends what happened since the last flush: the engine events, then the state. Never
    /// waits for the engine: the events are in the outbox, the state is the published one.
    pub(crate) fn flush(&self) {
        let events =
            std::mem::take(&mut *self.outbox.lock().unwrap_or_else(PoisonError::into_inner));
        if !self.dirty.swap(false, Ordering::SeqCst) && events.is_empty() {
            return;
        }
        let mut state = self.state_now();
        state.sent_ms = Some(now_ms());
        let batch = batch(&events, &state);
        self.sent.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let _ = self.tx.send(Arc::new(batch)); // nobody listening is fine
    }
}

/// One flush's messages: at most [`MAX_EVENTS_PER_FLUSH`] engine events — past them, the older
/// ones summed up first in one `coalesced` event — then the state.
fn batch(events: &[Event], state: &StateView) -> Vec<Message> {
    let skipped = events.len().saturating_sub(MAX_EVENTS_PER_FLUSH);
    let mut batch: Vec<Message> = Vec::with_capacity(events.len() - skipped + 2);
    if skipped > 0 {
        batch.push(Message {
            name: None,
            data: json(&CoalescedView {
                event: "coalesced",
                skipped,
            }),
        });
    }
    batch.extend(events[skipped..].iter().map(|e| Message {
        name: None,
        data: json(e),
    }));
    batch.push(Message {
        name: Some("state"),
        data: json(state),
    });
    batch
}

/// The JSON text of a message (the views and events always serialize).
fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Milliseconds since the Unix epoch (an annotation for latency, never in a trace).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `GET /api/events`: every message the flusher sends, to every subscriber; a subscriber that
/// falls behind skips to the next state.
pub(crate) async fn events(
    State(s): State<Arc<Shared>>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = s.tx.subscribe();
    s.dirty.store(true, Ordering::SeqCst); // a new subscriber gets the state at the next flush
    let stream = stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(batch) => {
                    let items: Vec<Result<SseEvent, Infallible>> = batch
                        .iter()
                        .map(|m| {
                            let e = SseEvent::default().data(m.data.clone());
                            Ok(match m.name {
                                Some(n) => e.event(n),
                                None => e,
                            })
                        })
                        .collect();
                    return Some((stream::iter(items), rx));
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream.flatten()).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_summed_up_first_then_the_newest_events_then_the_state() {
        let events: Vec<Event> = (1..=300)
            .map(|step| Event::StepCommitted {
                step,
                ops: vec!["a".into()],
                replayed: false,
            })
            .collect();
        let b = batch(&events, &StateView::default());
        assert_eq!(b.len(), 1 + MAX_EVENTS_PER_FLUSH + 1);
        assert_eq!(b[0].data, r#"{"event":"coalesced","skipped":44}"#);
        assert!(b[1].data.contains(r#""step":45"#), "{}", b[1].data);
        assert!(b[256].data.contains(r#""step":300"#), "{}", b[256].data);
        assert_eq!(b[257].name, Some("state"));
        let calm = batch(&events[..3], &StateView::default());
        assert_eq!(calm.len(), 4, "no summary under the bound");
        assert!(calm.iter().all(|m| !m.data.contains("coalesced")));
    }
}
