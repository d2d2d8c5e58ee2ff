//! Running a `map`'s items (docs/semantics.md §10.3): each item's inner run, the plan of which
//! items are still needed as they finish in any order, and the workers that run at most
//! `concurrency` of them at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value as Json;

use super::runs::InnerRun;
use super::template::NetTemplate;
use crate::types::{DataJSON, Value};

/// The capabilities of the firing, shared with its items' runs.
pub(super) type Caps = Arc<dyn crate::operator::capability::Capabilities>;

/// How one item's run went.
pub(super) struct Item {
    pub(super) index: usize,
    pub(super) result: Result<Json, String>,
    pub(super) run: Option<InnerRun>,
}

/// Runs item `index` to its end, synchronously (`Cvm::run`: the engine's fast path for an
/// inner net of operators that need no future).
fn run_item(t: &NetTemplate, caps: &Caps, index: usize, item: Json) -> Item {
    match t.start(&[(0, Value::new(DataJSON(item)))], caps) {
        Ok(mut cvm) => {
            let end = cvm.run();
            item_outcome(t, index, cvm, end)
        }
        Err(e) => failed_item(index, e.to_string()),
    }
}

/// Runs item `index` to its end, awaiting it (`Cvm::run_async`): for an inner net with async
/// operators, timeouts or retries, or in parallel mode, whose firings wait together.
async fn run_item_async(t: &NetTemplate, caps: &Caps, index: usize, item: Json) -> Item {
    match t.start(&[(0, Value::new(DataJSON(item)))], caps) {
        Ok(mut cvm) => {
            let end = cvm.run_async().await;
            item_outcome(t, index, cvm, end)
        }
        Err(e) => failed_item(index, e.to_string()),
    }
}

fn failed_item(index: usize, e: String) -> Item {
    Item {
        index,
        result: Err(e),
        run: None,
    }
}

/// The outcome of an item whose run on `cvm` ended with `end`.
fn item_outcome(
    t: &NetTemplate,
    index: usize,
    cvm: crate::engine::Cvm,
    end: Result<crate::engine::EndState, crate::engine::RunError>,
) -> Item {
    let end = match end {
        Ok(end) => end,
        Err(e) => return failed_item(index, format!("sub-net `{}`: {e}", t.shown)),
    };
    let result = match t.failure(&end) {
        Some(why) => Err(why),
        None => t.outputs(&cvm).map_err(|e| e.to_string()).map(|outs| {
            outs.into_iter()
                .next()
                .flatten()
                .map_or(Json::Null, |v| v.to_json())
        }),
    };
    Item {
        index,
        result,
        run: Some(t.finish(cvm, end, Some(index))),
    }
}

/// Which items are needed, updated as items finish (in any order), so that the outcome only
/// depends on the items' own results.
pub(super) struct ItemPlan {
    pub(super) n: usize,
    /// Items from `cut` on are not needed.
    pub(super) cut: usize,
    /// Items `0..scanned` are finished and counted, in item order.
    pub(super) scanned: usize,
    pub(super) successes: usize,
    /// Whether a failure is caught (`error` connected) rather than failing fast.
    pub(super) catch: bool,
    pub(super) quorum: Option<usize>,
    pub(super) cancel_rest: bool,
    /// With a quorum, the end of the items whose results count.
    pub(super) upto: usize,
}

impl ItemPlan {
    fn finished(&mut self, done: &[Option<Item>], i: usize) {
        if !self.catch && done[i].as_ref().is_some_and(|d| d.result.is_err()) {
            self.cut = self.cut.min(i + 1); // fail fast: nothing after a failure is needed
        }
        while self.scanned < self.n {
            let Some(item) = &done[self.scanned] else {
                break;
            };
            self.scanned += 1;
            if item.result.is_ok() {
                self.successes += 1;
                if Some(self.successes) == self.quorum && self.upto == self.n {
                    self.upto = self.scanned;
                    if self.cancel_rest {
                        self.cut = self.cut.min(self.scanned);
                    }
                }
            }
        }
    }
}

/// Runs the items, at most `concurrency` at once, until every needed one has finished.
///
/// One after the other on the calling task when `concurrency` is 1; otherwise `concurrency`
/// workers — tasks for an inner net that awaits, threads of tokio's blocking pool for one that
/// computes — take the next item in item order until none is needed, and send each item's
/// outcome back here, where the plan (and so the cut past which no item is taken) is updated.
pub(super) async fn run_items(
    t: &Arc<NetTemplate>,
    caps: &Caps,
    items: &[Json],
    concurrency: usize,
    plan: &mut ItemPlan,
) -> Vec<Option<Item>> {
    let n = items.len();
    let mut done: Vec<Option<Item>> = (0..n).map(|_| None).collect();
    if concurrency <= 1 {
        let mut next = 0;
        while next < plan.cut {
            let item = items[next].clone();
            done[next] = Some(if t.asynchronous {
                run_item_async(t, caps, next, item).await
            } else {
                run_item(t, caps, next, item)
            });
            plan.finished(&done, next);
            next += 1;
        }
        return done;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(AtomicUsize::new(plan.cut));
    let items: Arc<Vec<Json>> = Arc::new(items.to_vec());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Item>();
    for _ in 0..concurrency.min(n) {
        let (t, caps, next, cut, items, tx) = (
            Arc::clone(t),
            Arc::clone(caps),
            Arc::clone(&next),
            Arc::clone(&cut),
            Arc::clone(&items),
            tx.clone(),
        );
        // A worker stops taking items past the cut, and when nobody listens any more (this
        // future was dropped). Detached: a blocking run cannot be interrupted, and an async one
        // ends at its next item.
        if t.asynchronous {
            drop(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= cut.load(Ordering::SeqCst) {
                        break;
                    }
                    let item = run_item_async(&t, &caps, i, items[i].clone()).await;
                    if tx.send(item).is_err() {
                        break;
                    }
                }
            }));
        } else {
            drop(tokio::task::spawn_blocking(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= cut.load(Ordering::SeqCst) {
                        break;
                    }
                    if tx.send(run_item(&t, &caps, i, items[i].clone())).is_err() {
                        break;
                    }
                }
            }));
        }
    }
    drop(tx);
    while let Some(item) = rx.recv().await {
        let i = item.index;
        done[i] = Some(item);
        plan.finished(&done, i);
        cut.store(plan.cut, Ordering::SeqCst);
    }
    // An item whose worker panicked never came back.
    for i in 0..plan.cut.min(n) {
        if done[i].is_none() {
            done[i] = Some(Item {
                index: i,
                result: Err("its run panicked".to_owned()),
                run: None,
            });
            plan.finished(&done, i);
        }
    }
    // Items past the cut that finished before the cut was known are not kept: what is kept
    // must not depend on timing.
    for d in done.iter_mut().skip(plan.cut) {
        *d = None;
    }
    done
}
