//! The satellite's idempotency cache: recent successful replies by idempotency key, and the
//! calls running now, so a re-sent request (a retry after a timeout) waits for the running one
//! or gets its answer instead of running a second time.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Mutex;

use tokio::sync::watch;

/// What the cache knows of one key.
enum Slot<R> {
    /// Running: the receiver yields the reply once it is there.
    Running(watch::Receiver<Option<R>>),
    /// Done, successfully.
    Done(R),
}

/// Recent replies by key, bounded: the oldest finished ones go first.
pub(crate) struct Cache<R> {
    inner: Mutex<Inner<R>>,
    capacity: usize,
}

struct Inner<R> {
    slots: HashMap<String, Slot<R>>,
    /// Finished keys, oldest first.
    order: VecDeque<String>,
}

/// What a call finds under its key.
enum Claim<R> {
    Done(R),
    Wait(watch::Receiver<Option<R>>),
    /// Nothing: it runs, and sends its reply to whoever waits.
    Run(watch::Sender<Option<R>>),
}

/// How a call was answered.
pub(crate) enum Answer<R> {
    /// It ran now.
    Ran(R),
    /// It had run (or was running) under the same key: this is that run's reply.
    Cached(R),
}

impl<R: Clone + Send + Sync> Cache<R> {
    /// A cache keeping the replies of up to `capacity` finished calls.
    pub(crate) fn new(capacity: usize) -> Self {
        Cache {
            inner: Mutex::new(Inner {
                slots: HashMap::new(),
                order: VecDeque::new(),
            }),
            capacity: capacity.max(1),
        }
    }

    /// Looks `key` up, taking the slot when it is free.
    fn claim(&self, key: &str) -> Claim<R> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match inner.slots.get(key) {
            Some(Slot::Done(r)) => Claim::Done(r.clone()),
            Some(Slot::Running(rx)) => Claim::Wait(rx.clone()),
            None => {
                let (tx, rx) = watch::channel(None);
                inner.slots.insert(key.to_owned(), Slot::Running(rx));
                Claim::Run(tx)
            }
        }
    }

    /// The reply for `key`: a cached one, the running call's once it ends, or `run()`'s.
    /// A reply for which `keep` says no (a failure) is handed to whoever waits but not kept,
    /// so a later retry runs again.
    pub(crate) async fn answer<F>(&self, key: &str, keep: fn(&R) -> bool, run: F) -> Answer<R>
    where
        F: Future<Output = R>,
    {
        let tx = match self.claim(key) {
            Claim::Done(r) => return Answer::Cached(r),
            Claim::Wait(mut rx) => {
                let got = rx.wait_for(Option::is_some).await.map(|r| (*r).clone());
                return match got {
                    Ok(Some(r)) => Answer::Cached(r),
                    // The running call was dropped without a reply: run it here.
                    _ => Answer::Ran(run.await),
                };
            }
            Claim::Run(tx) => tx,
        };
        // If this future is dropped mid-run, the slot must not stay `Running` forever.
        let guard = Unfinished { cache: self, key };
        let reply = run.await;
        std::mem::forget(guard);
        self.finish(key, keep, tx, reply)
    }

    /// [`answer`](Self::answer) without waiting, for a call that runs at once (`run(input)`
    /// does not wait either): `Err(input)` when a call of the same key is running now (the
    /// caller then waits for it with [`answer`](Self::answer)).
    pub(crate) fn answer_now<T>(
        &self,
        key: &str,
        keep: fn(&R) -> bool,
        input: T,
        run: impl FnOnce(T) -> R,
    ) -> Result<Answer<R>, T> {
        match self.claim(key) {
            Claim::Done(r) => Ok(Answer::Cached(r)),
            Claim::Wait(_) => Err(input),
            Claim::Run(tx) => {
                let guard = Unfinished { cache: self, key };
                let reply = run(input);
                std::mem::forget(guard);
                Ok(self.finish(key, keep, tx, reply))
            }
        }
    }

    /// Keeps `reply` (when `keep` says so) and hands it to whoever waits for `key`.
    fn finish(
        &self,
        key: &str,
        keep: fn(&R) -> bool,
        tx: watch::Sender<Option<R>>,
        reply: R,
    ) -> Answer<R> {
        {
            let mut inner = self
                .inner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if keep(&reply) {
                inner
                    .slots
                    .insert(key.to_owned(), Slot::Done(reply.clone()));
                inner.order.push_back(key.to_owned());
                while inner.order.len() > self.capacity {
                    if let Some(old) = inner.order.pop_front() {
                        inner.slots.remove(&old);
                    }
                }
            } else {
                inner.slots.remove(key);
            }
        }
        // Only a call that waits for this one needs the reply.
        if tx.receiver_count() > 0 {
            let _ = tx.send(Some(reply.clone()));
        }
        Answer::Ran(reply)
    }
}

/// Removes a running slot whose call was dropped before it replied.
struct Unfinished<'a, R> {
    cache: &'a Cache<R>,
    key: &'a str,
}

impl<R> Drop for Unfinished<'_, R> {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.cache.inner.lock() {
            inner.slots.remove(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_key_runs_once_and_failures_are_not_kept() {
        let cache = Cache::<Result<u32, u32>>::new(2);
        let runs = AtomicUsize::new(0);
        let counter = &runs;
        let run = move |v| async move {
            counter.fetch_add(1, Ordering::SeqCst);
            v
        };
        assert!(matches!(
            cache.answer("a", Result::is_ok, run(Ok(1))).await,
            Answer::Ran(Ok(1))
        ));
        assert!(matches!(
            cache.answer("a", Result::is_ok, run(Ok(2))).await,
            Answer::Cached(Ok(1))
        ));
        cache.answer("b", Result::is_ok, run(Err(3))).await;
        assert!(matches!(
            cache.answer("b", Result::is_ok, run(Ok(4))).await,
            Answer::Ran(Ok(4))
        ));
        // Capacity 2: `a` is evicted by `b` and `c`.
        cache.answer("c", Result::is_ok, run(Ok(5))).await;
        assert!(matches!(
            cache.answer("a", Result::is_ok, run(Ok(6))).await,
            Answer::Ran(Ok(6))
        ));
        // Every call ran but the cached one.
        assert_eq!(runs.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn a_second_call_waits_for_the_running_one() {
        let cache = std::sync::Arc::new(Cache::<u32>::new(8));
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let c = cache.clone();
        let first = tokio::spawn(async move {
            c.answer("k", |_| true, async move {
                let _ = go_rx.await;
                7
            })
            .await
        });
        // Let the first call take the slot.
        while cache
            .inner
            .lock()
            .map(|i| i.slots.is_empty())
            .unwrap_or(true)
        {
            tokio::task::yield_now().await;
        }
        let c = cache.clone();
        let second = tokio::spawn(async move { c.answer("k", |_| true, async { 99 }).await });
        tokio::task::yield_now().await;
        let _ = go_tx.send(());
        assert!(matches!(first.await, Ok(Answer::Ran(7))));
        assert!(matches!(second.await, Ok(Answer::Cached(7))));
    }
}
