//! The event stream (`GET /api/events`): engine events gathered in the outbox, sent with the
//! new state every [`FLUSH_MS`](super::FLUSH_MS) ms to every subscriber.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt as _};
use tokio::sync::broadcast::error::RecvError;

use super::session::Session;
use super::view::CoalescedView;
use super::{MAX_EVENTS_PER_FLUSH, Shared};

/// One message of the event stream: an engine event (unnamed SSE event, its JSON) or the
/// state (`event: state`).
#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub(crate) name: Option<&'static str>,
    pub(crate) data: String,
}

impl Shared {
    /// Sends what happened since the last flush: the engine events, then the state.
    pub(crate) fn flush(&self) {
        if self.outbox_empty() && !self.dirty.load(Ordering::SeqCst) {
            return;
        }
        let session = self.lock();
        self.flush_with(&session);
    }

    fn outbox_empty(&self) -> bool {
        self.outbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// [`flush`](Self::flush) with the session already locked (a run flushes between its
    /// slices: it holds the engine, so nobody else could).
    pub(crate) fn flush_with(&self, session: &Session) {
        let events =
            std::mem::take(&mut *self.outbox.lock().unwrap_or_else(PoisonError::into_inner));
        self.dirty.store(false, Ordering::SeqCst);
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
        let mut state = session.state();
        state.sent_ms = Some(now_ms());
        batch.push(Message {
            name: Some("state"),
            data: json(&state),
        });
        self.sent.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let _ = self.tx.send(Arc::new(batch)); // nobody listening is fine
    }
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
