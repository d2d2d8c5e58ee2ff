//! The replies of a connection's calls, on one subscription: each call gets its own subject
//! `<inbox>.<n>` under the connection's inbox, and its messages (acknowledgement, reply, or the
//! server's no-responders notice) reach that call. No subscription is made or ended per call.
//!
//! No task routes them: a call waiting for a message polls the subscription itself, keeps
//! what is its own and hands the others to the calls they name (waking them). The
//! subscription wakes the last call that found it empty; when that call stops waiting, it
//! wakes another waiting call to take its place. So a reply reaches a lone call straight from
//! the connection's task, without a hop through a routing task.

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use async_nats::{Client, Message, Subscriber};
use futures_util::StreamExt;

use crate::NatsError;

/// The reply subscription of a connection.
#[derive(Debug)]
pub(super) struct Mux {
    prefix: String,
    next: AtomicU64,
    routes: Arc<Mutex<Routes>>,
}

/// What the calls share: the subscription and each waiting call's messages.
#[derive(Debug)]
struct Routes {
    /// `<inbox>.`: a reply subject is this and the call's number.
    head: String,
    /// `None` once it ended (the connection closed, or the [`Mux`] stopped).
    sub: Option<Subscriber>,
    calls: HashMap<u64, Waiting>,
    /// The call whose waker the subscription holds: the last that polled it and found nothing.
    poller: Option<u64>,
}

/// One call's messages not yet taken, and how to wake it.
#[derive(Debug, Default)]
struct Waiting {
    got: VecDeque<Message>,
    waker: Option<Waker>,
}

fn lock(routes: &Mutex<Routes>) -> MutexGuard<'_, Routes> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Mux {
    /// Subscribes to `<inbox>.*`.
    pub(super) async fn start(client: &Client) -> Result<Mux, NatsError> {
        let prefix = client.new_inbox();
        let sub = client
            .subscribe(format!("{prefix}.*"))
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        Ok(Mux {
            routes: Arc::new(Mutex::new(Routes {
                head: format!("{prefix}."),
                sub: Some(sub),
                calls: HashMap::new(),
                poller: None,
            })),
            prefix,
            next: AtomicU64::new(0),
        })
    }

    /// A reply subject of its own for one call, and what arrives there (until it is dropped).
    pub(super) fn register(&self) -> (String, Replies) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.routes).calls.insert(n, Waiting::default());
        (
            format!("{}.{n}", self.prefix),
            Replies {
                n,
                routes: Arc::clone(&self.routes),
            },
        )
    }

    /// Ends the subscription: the calls waiting get `None`.
    pub(super) fn stop(&mut self) {
        let mut r = lock(&self.routes);
        r.sub = None;
        r.wake_all();
    }
}

impl Routes {
    fn wake_all(&mut self) {
        for w in self.calls.values_mut() {
            if let Some(waker) = w.waker.take() {
                waker.wake();
            }
        }
    }

    /// Call `n`'s next message: its own if one came, else what the subscription brings,
    /// routing the others' messages to them.
    fn poll_for(&mut self, n: u64, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        loop {
            if let Some(m) = self.calls.get_mut(&n).and_then(|w| w.got.pop_front()) {
                return Poll::Ready(Some(m));
            }
            let Some(sub) = self.sub.as_mut() else {
                return Poll::Ready(None);
            };
            match sub.poll_next_unpin(cx) {
                Poll::Ready(Some(m)) => {
                    let to = m
                        .subject
                        .as_str()
                        .strip_prefix(&self.head)
                        .and_then(|t| t.parse::<u64>().ok());
                    match to {
                        Some(to) if to == n => return Poll::Ready(Some(m)),
                        // A message for another call; for one no longer waiting, dropped.
                        Some(to) => {
                            if let Some(w) = self.calls.get_mut(&to) {
                                w.got.push_back(m);
                                if let Some(waker) = w.waker.take() {
                                    waker.wake();
                                }
                            }
                        }
                        None => {}
                    }
                }
                Poll::Ready(None) => {
                    self.sub = None;
                    self.wake_all();
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    self.poller = Some(n);
                    if let Some(w) = self.calls.get_mut(&n) {
                        match &mut w.waker {
                            Some(old) if old.will_wake(cx.waker()) => {}
                            slot => *slot = Some(cx.waker().clone()),
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    /// Call `n` stops waiting (with a message, or given up): its waker is forgotten, and if
    /// the subscription would wake it — or would wake nobody — another waiting call takes its
    /// place (it polls the subscription when woken; if a message of its own is there already,
    /// it passes the place on in turn).
    fn hand_off(&mut self, n: u64) {
        if let Some(w) = self.calls.get_mut(&n) {
            w.waker = None;
        }
        if self.poller.is_some_and(|p| p != n) {
            return;
        }
        self.poller = None;
        if let Some(waker) = self
            .calls
            .iter_mut()
            .find(|(k, w)| **k != n && w.waker.is_some())
            .and_then(|(_, w)| w.waker.take())
        {
            waker.wake();
        }
    }
}

/// The messages of one call's reply subject; dropping it forgets the subject.
pub(super) struct Replies {
    n: u64,
    routes: Arc<Mutex<Routes>>,
}

impl Replies {
    /// The next message (`None`: the subscription ended).
    pub(super) async fn recv(&mut self) -> Option<Message> {
        // Handed off however the wait ends: with a message, or dropped (a timer won).
        struct Waits<'a>(&'a Replies);
        impl Drop for Waits<'_> {
            fn drop(&mut self) {
                lock(&self.0.routes).hand_off(self.0.n);
            }
        }
        let waits = Waits(self);
        poll_fn(|cx| lock(&waits.0.routes).poll_for(waits.0.n, cx)).await
    }
}

impl Drop for Replies {
    fn drop(&mut self) {
        let mut r = lock(&self.routes);
        r.calls.remove(&self.n);
        r.hand_off(self.n);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Mux;
    use crate::NatsServer;

    /// A hang guard only: the calls below get their replies at once when the mux works.
    const GUARD: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn a_call_left_waiting_gets_its_reply_after_the_one_the_subscription_woke_has_gone() {
        let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
        let client = async_nats::connect(nats.url()).await.unwrap();
        let mux = Mux::start(&client).await.unwrap();
        let (to_a, mut a) = mux.register();
        let (to_b, mut b) = mux.register();
        // Both wait; `b` polls the subscription last, so the subscription would wake `b` alone.
        let a = tokio::spawn(async move { a.recv().await.map(|m| m.payload) });
        tokio::task::yield_now().await;
        let b = tokio::spawn(async move { b.recv().await.map(|m| m.payload) });
        tokio::task::yield_now().await;
        client.publish(to_b, "for b".into()).await.unwrap();
        let got_b = tokio::time::timeout(GUARD, b).await.unwrap().unwrap();
        assert_eq!(got_b.as_deref(), Some(&b"for b"[..]));
        // `b` has gone: `a` must have taken its place at the subscription.
        client.publish(to_a, "for a".into()).await.unwrap();
        let got_a = tokio::time::timeout(GUARD, a)
            .await
            .expect("the call left waiting never got its reply")
            .unwrap();
        assert_eq!(got_a.as_deref(), Some(&b"for a"[..]));
    }

    #[tokio::test]
    async fn replies_reach_many_calls_in_any_order_and_late_ones_are_dropped() {
        let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
        let client = async_nats::connect(nats.url()).await.unwrap();
        let mux = Mux::start(&client).await.unwrap();
        let mut waiting = Vec::new();
        let mut subjects = Vec::new();
        for i in 0..50 {
            let (to, mut r) = mux.register();
            subjects.push(to);
            waiting.push(tokio::spawn(async move {
                let first = r.recv().await.map(|m| m.payload);
                let second = r.recv().await.map(|m| m.payload);
                (i, first, second)
            }));
        }
        tokio::task::yield_now().await;
        // A reply subject no call holds any more.
        let (gone, r) = mux.register();
        drop(r);
        client.publish(gone, "late".into()).await.unwrap();
        for round in ["ack", "reply"] {
            for (i, to) in subjects.iter().enumerate().rev() {
                client
                    .publish(to.clone(), format!("{round} {i}").into())
                    .await
                    .unwrap();
            }
        }
        for w in waiting {
            let (i, first, second) = tokio::time::timeout(GUARD, w).await.unwrap().unwrap();
            assert_eq!(first.as_deref(), Some(format!("ack {i}").as_bytes()));
            assert_eq!(second.as_deref(), Some(format!("reply {i}").as_bytes()));
        }
        assert!(
            super::lock(&mux.routes).calls.is_empty(),
            "every call forgot its subject"
        );
    }
}
