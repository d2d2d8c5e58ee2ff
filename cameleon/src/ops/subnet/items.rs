//! Running a `map`'s items (docs/semantics.md §10.3): each item's inner run, the plan of which
//! items are still needed as they finish in any order, and the workers that run at most
//! `concurrency` of them at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value as Json;

use super::runs::InnerRun;
use super::template::NetTemplate;
use crate::engine::{Cvm, EndState, RunError};
use crate::operator::OpError;
use crate::operator::firing::RunId;
use crate::types::{DataJSON, Value};

/// The capabilities of the firing, shared with its items' runs.
pub(super) type Caps = Arc<dyn crate::operator::capability::Capabilities>;

/// How one item's run went.
pub(super) struct Item {
    pub(super) index: usize,
    pub(super) result: Result<Json, String>,
    /// Shared from the start: an item is moved a few times on its way to its firing's runs,
    /// a run is a few hundred bytes.
    pub(super) run: Option<Arc<InnerRun>>,
}

/// Runs items one after the other on one engine: built for the first item, then, after each
/// item, its run's history taken out and every operator replaced by a fresh instance — each
/// item starts from fresh operators and the initial marking, as on an engine of its own
/// (docs/semantics.md §10.3), without building one.
pub(super) struct Worker {
    from: Arc<(Arc<NetTemplate>, Caps)>,
    /// The engine, between items at its initial marking with fresh operators; `None` before
    /// the first item, and after an item whose engine cannot go on (a run error, an operator
    /// that could not be built anew, satellites placing the net's instances).
    cvm: Option<Cvm>,
    /// The runs' ids: item `i`'s is this UUID v7 with `i` in its low bits.
    ids: u128,
}

impl Worker {
    pub(super) fn new(t: &Arc<NetTemplate>, caps: &Caps) -> Self {
        Worker {
            from: Arc::new((Arc::clone(t), Arc::clone(caps))),
            cvm: None,
            ids: uuid::Uuid::now_v7().as_u128(),
        }
    }

    /// The engine for item `index`, given `item`.
    fn start(&mut self, index: usize, item: &Value) -> Result<&mut Cvm, OpError> {
        let (t, caps) = &*self.from;
        let given = [(0, item.clone())];
        // Renewed where it is (an engine is large: moving it costs more than renewing it).
        match &mut self.cvm {
            Some(cvm) => {
                if let Err(e) = t.renew(cvm, &given) {
                    self.cvm = None;
                    return Err(e);
                }
            }
            None => self.cvm = Some(t.start(&given, caps)?),
        }
        let cvm = self
            .cvm
            .as_mut()
            .ok_or_else(|| OpError::new("its engine is gone"))?;
        // Distinct per item: a firing's idempotency key starts with its run's id (written
        // out only if an operator reads it).
        cvm.set_run_ident(RunId::uuid(self.ids ^ index as u128));
        Ok(cvm)
    }

    /// Runs item `index` to its end, synchronously (`Cvm::run`: the engine's fast path for an
    /// inner net of operators that need no future).
    fn run(&mut self, index: usize, item: Json) -> Item {
        let item = Value::new(DataJSON(item));
        match self.start(index, &item) {
            Ok(cvm) => {
                let end = cvm.run();
                self.outcome(index, item, end)
            }
            Err(e) => failed_item(index, e.to_string()),
        }
    }

    /// Runs item `index` to its end, awaiting it (`Cvm::run_async`): for an inner net with
    /// async operators, timeouts or retries, or in parallel mode, whose firings wait together.
    async fn run_async(&mut self, index: usize, item: Json) -> Item {
        let item = Value::new(DataJSON(item));
        match self.start(index, &item) {
            Ok(cvm) => {
                let end = cvm.run_async().await;
                self.outcome(index, item, end)
            }
            Err(e) => failed_item(index, e.to_string()),
        }
    }

    /// The outcome of item `index`, given `item`, whose run on the engine ended with `end`;
    /// the engine goes back to its initial marking for the next item.
    fn outcome(&mut self, index: usize, item: Value, end: Result<EndState, RunError>) -> Item {
        let t = &self.from.0;
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                self.cvm = None;
                return failed_item(index, format!("sub-net `{}`: {e}", t.shown));
            }
        };
        let Some(cvm) = self.cvm.as_mut() else {
            return failed_item(index, "its engine is gone".to_owned()); // unreachable
        };
        let result = match t.failure(&end) {
            Some(why) => Err(why),
            None => t
                .output(cvm, 0)
                .map_err(|e| e.to_string())
                .map(|v| v.map_or(Json::Null, Value::to_json)),
        };
        let (t, caps) = &*self.from;
        let run = if NetTemplate::renewable(caps) {
            InnerRun::kept(cvm, end, index, item, &self.from)
        } else {
            let cvm = self.cvm.take().map(|cvm| t.finish(cvm, end, Some(index)));
            match cvm {
                Some(run) => run,
                None => return failed_item(index, "its engine is gone".to_owned()),
            }
        };
        Item {
            index,
            result,
            run: Some(Arc::new(run)),
        }
    }
}

fn failed_item(index: usize, e: String) -> Item {
    Item {
        index,
        result: Err(e),
        run: None,
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
        let mut worker = Worker::new(t, caps);
        let mut next = 0;
        while next < plan.cut {
            let item = items[next].clone();
            done[next] = Some(if t.asynchronous {
                worker.run_async(next, item).await
            } else {
                worker.run(next, item)
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
                let mut worker = Worker::new(&t, &caps);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= cut.load(Ordering::SeqCst) {
                        break;
                    }
                    let item = worker.run_async(i, items[i].clone()).await;
                    if tx.send(item).is_err() {
                        break;
                    }
                }
            }));
        } else {
            drop(tokio::task::spawn_blocking(move || {
                let mut worker = Worker::new(&t, &caps);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= cut.load(Ordering::SeqCst) {
                        break;
                    }
                    if tx.send(worker.run(i, items[i].clone())).is_err() {
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
