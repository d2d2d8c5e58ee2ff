//! The replies of a connection's calls, on one subscription: each call gets its own subject
//! `<inbox>.<n>` under the connection's inbox, and its messages (acknowledgement, reply, or the
//! server's no-responders notice) go to that call's channel. No subscription is made or ended
//! per call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_nats::{Client, Message};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use crate::NatsError;

type Waiting = Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Message>>>>;

/// The reply subscription of a connection.
#[derive(Debug, Default)]
pub(super) struct Mux {
    prefix: String,
    next: AtomicU64,
    waiting: Waiting,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Mux {
    /// Subscribes to `<inbox>.*` and routes what arrives (on the current runtime).
    pub(super) async fn start(client: &Client) -> Result<Mux, NatsError> {
        let prefix = client.new_inbox();
        let mut sub = client
            .subscribe(format!("{prefix}.*"))
            .await
            .map_err(|e| NatsError::Nats(format!("cannot subscribe: {e}")))?;
        let waiting: Waiting = Arc::default();
        let routes = Arc::clone(&waiting);
        let head = format!("{prefix}.");
        let task = tokio::spawn(async move {
            while let Some(m) = sub.next().await {
                let Some(n) = m
                    .subject
                    .as_str()
                    .strip_prefix(&head)
                    .and_then(|t| t.parse::<u64>().ok())
                else {
                    continue;
                };
                let tx = routes.lock().ok().and_then(|w| w.get(&n).cloned());
                if let Some(tx) = tx {
                    let _ = tx.send(m);
                }
            }
        });
        Ok(Mux {
            prefix,
            next: AtomicU64::new(0),
            waiting,
            task: Some(task),
        })
    }

    /// A reply subject of its own for one call, and what arrives there (until it is dropped).
    pub(super) fn register(&self) -> (String, Replies) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(n, tx);
        }
        (
            format!("{}.{n}", self.prefix),
            Replies {
                rx,
                n,
                waiting: Arc::clone(&self.waiting),
            },
        )
    }

    /// Ends the routing task.
    pub(super) fn stop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// The messages of one call's reply subject; dropping it forgets the subject.
pub(super) struct Replies {
    rx: mpsc::UnboundedReceiver<Message>,
    n: u64,
    waiting: Waiting,
}

impl Replies {
    /// The next message.
    pub(super) async fn recv(&mut self) -> Option<Message> {
        self.rx.recv().await
    }
}

impl Drop for Replies {
    fn drop(&mut self) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&self.n);
        }
    }
}
