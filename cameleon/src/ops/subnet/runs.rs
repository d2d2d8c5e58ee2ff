//! The inner runs a `subnet` or `map` keeps (docs/semantics.md §10.2): each run's engine at
//! its end, so its history can be inspected, undone with its parent's firing and replayed —
//! and the protocol both operators follow to save, restore, undo and replay them.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};

use super::items::Caps;
use super::template::NetTemplate;
use crate::engine::{Cvm, EndState, RunTrail};
use crate::history::Recorded;
use crate::net::Net;
use crate::operator::OpState;
use crate::types::Value;

/// One run of an inner net: one firing of a `subnet`, one item of a `map`
/// (docs/semantics.md §10.2, §10.3).
///
/// It keeps the inner engine as the run left it, so its history, marking and received values
/// can be inspected ([`with_cvm`](Self::with_cvm)); a `back` over the parent's firing rewinds
/// it (each inner firing's compensation runs), a replay of that firing replays it. A `map`'s
/// item keeps only its history and tokens, as its engine left them; the engine is rebuilt from
/// them, without running any inner operator, the first time something needs it.
///
/// Its serde form is what a journal of the outer run keeps of it:
/// `{"net","item","end","steps","firings","history"}`, its whole history as a
/// [`Recorded`], so that a resumed parent rebuilds the inner engine without running an inner
/// operator. The inner engine's [`Cvm::trace_lines`](crate::Cvm::trace_lines) shows it as
/// `cameleon run --trace` does.
pub struct InnerRun {
    net: Arc<str>,
    item: Option<usize>,
    end: EndState,
    steps: usize,
    firings: usize,
    /// The inner engine; empty for a run read back from a journal until its operator rebuilds
    /// it from `record` ([`restore`](Self::restore)), and for a kept item until it is needed.
    /// Boxed: a run is moved a few times on its way to its firing's runs, an engine is large.
    cvm: OnceLock<Box<Mutex<Cvm>>>,
    /// A run read back from a journal: its history, to rebuild the engine from.
    record: Option<Recorded>,
    /// A `map`'s item: what its engine left, to rebuild the engine from (taken when it is).
    kept: Mutex<Option<Kept>>,
}

/// What an item's run on a `map` worker's engine leaves: its history and tokens, and what the
/// engine it ran on was built with.
pub(crate) struct Kept {
    pub(crate) trail: RunTrail,
    /// The value its `input` was given.
    pub(crate) item: Value,
    /// The run's id.
    pub(crate) run_id: crate::operator::firing::RunId,
    /// The inner net and the capabilities of the firing.
    pub(crate) from: Arc<(Arc<NetTemplate>, Caps)>,
}

impl fmt::Debug for InnerRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InnerRun")
            .field("net", &self.net)
            .field("item", &self.item)
            .field("end", &self.end.name())
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

/// The serde form of an [`InnerRun`] (borrowed to write it, owned when read).
#[derive(Serialize, Deserialize)]
struct Form<'a> {
    net: Cow<'a, str>,
    #[serde(default)]
    item: Option<usize>,
    end: Cow<'a, EndState>,
    steps: usize,
    firings: usize,
    #[serde(default)]
    history: Option<Cow<'a, Recorded>>,
}

impl Serialize for InnerRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let history = match (self.engine(), &self.record) {
            (Some(cvm), _) => {
                let cvm = cvm.lock().unwrap_or_else(PoisonError::into_inner);
                Some(Cow::Owned(cvm.record().map_err(serde::ser::Error::custom)?))
            }
            (None, record) => record.as_ref().map(Cow::Borrowed),
        };
        Form {
            net: Cow::Borrowed(&self.net),
            item: self.item,
            end: Cow::Borrowed(&self.end),
            steps: self.steps,
            firings: self.firings,
            history,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for InnerRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = Form::deserialize(d)?;
        Ok(InnerRun {
            net: Arc::from(f.net),
            item: f.item,
            end: f.end.into_owned(),
            steps: f.steps,
            firings: f.firings,
            cvm: OnceLock::new(),
            record: f.history.map(Cow::into_owned),
            kept: Mutex::new(None),
        })
    }
}

impl InnerRun {
    pub(crate) fn new(cvm: Cvm, end: EndState, item: Option<usize>) -> Self {
        InnerRun {
            net: Arc::from(cvm.net().name()),
            item,
            end,
            steps: cvm.depth(),
            firings: cvm.history().recorded_firings(),
            cvm: OnceLock::from(Box::new(Mutex::new(cvm))),
            record: None,
            kept: Mutex::new(None),
        }
    }

    /// The run of item `item` (given `given`) that ended in `end` on
    /// `cvm`, an engine its worker runs the next item on: its history and tokens are taken out
    /// of `cvm` (which goes back to its initial marking, its operators as the run left them).
    pub(crate) fn kept(
        cvm: &mut Cvm,
        end: EndState,
        item: usize,
        given: Value,
        from: &Arc<(Arc<NetTemplate>, Caps)>,
    ) -> Self {
        let (steps, firings) = (cvm.depth(), cvm.history().recorded_firings());
        InnerRun {
            net: Arc::clone(&from.0.name),
            item: Some(item),
            end,
            steps,
            firings,
            cvm: OnceLock::new(),
            record: None,
            kept: Mutex::new(Some(Kept {
                trail: cvm.take_trail(),
                item: given,
                run_id: cvm.run_ident().clone(),
                from: Arc::clone(from),
            })),
        }
    }

    /// The inner engine: rebuilt, for a kept item, the first time it is asked for — a fresh
    /// instance given the same item, with the same capabilities and run id, its history put
    /// back without running any operator. `None`: a run read back from a journal and not
    /// rebuilt yet, or one whose engine cannot be rebuilt.
    fn engine(&self) -> Option<&Mutex<Cvm>> {
        if let Some(cvm) = self.cvm.get() {
            return Some(&**cvm);
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cvm) = self.cvm.get() {
            return Some(&**cvm); // rebuilt while this thread waited
        }
        let k = kept.take()?;
        let (template, caps) = &*k.from;
        let mut cvm = template.start(&[(0, k.item)], caps).ok()?;
        cvm.set_run_ident(k.run_id);
        cvm.adopt_trail(k.trail).ok()?;
        let _ = self.cvm.set(Box::new(Mutex::new(cvm)));
        self.cvm.get().map(|b| &**b)
    }

    /// Rebuilds the engine of a run read back from a journal, on `net` (a fresh instance of
    /// the inner net), restoring its history **without running any inner operator**. Nothing
    /// to do for a run that has its engine. `Err`: the history does not fit the net.
    pub(crate) fn restore(&self, net: impl FnOnce() -> Option<Net>) -> Result<(), String> {
        if self.cvm.get().is_some() {
            return Ok(());
        }
        let Some(record) = &self.record else {
            return Ok(());
        };
        let Some(net) = net() else {
            return Err(format!("the inner net `{}` cannot be built", self.net));
        };
        let mut cvm = Cvm::new(net);
        cvm.restore(record.clone())
            .map_err(|e| format!("inner run of `{}`: {e}", self.net))?;
        let _ = self.cvm.set(Box::new(Mutex::new(cvm)));
        Ok(())
    }

    /// The inner net's name.
    pub fn net(&self) -> &str {
        &self.net
    }

    /// For a `map`, the index of the item this run processed.
    pub fn item(&self) -> Option<usize> {
        self.item
    }

    /// How the run ended: `COMPLETED`, except for a `map` item that failed.
    pub fn end(&self) -> &EndState {
        &self.end
    }

    /// Its steps (history entries).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Its operator firings.
    pub fn firings(&self) -> usize {
        self.firings
    }

    /// Calls `f` with the inner engine, as the run left it (or as a `back` over the parent's
    /// firing rewound it): its history, marking, received values. `None` for a run read back
    /// from a journal whose engine its operator has not rebuilt yet (it does when it replays
    /// the firing that made the run, as a resumed run does).
    pub fn with_cvm<R>(&self, f: impl FnOnce(&Cvm) -> R) -> Option<R> {
        let cvm = self.engine()?;
        let cvm = cvm.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&cvm))
    }

    /// Every value inner operator `op` received (what an `output` passed out).
    pub fn received(&self, op: &str) -> Vec<Value> {
        self.with_cvm(|cvm| cvm.received(op).into_iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Undoes the run (a `back` over its parent's firing): every inner step, last first, each
    /// operator's compensation included. Its history stays, as the recorded future.
    fn rewind(&self) {
        if let Some(cvm) = self.engine() {
            cvm.lock().unwrap_or_else(PoisonError::into_inner).rewind();
        }
    }

    /// Replays the run after a [`rewind`](Self::rewind) (a replay of its parent's firing): no
    /// inner operator runs.
    fn replay(&self) {
        if let Some(cvm) = self.cvm.get() {
            let mut cvm = cvm.lock().unwrap_or_else(PoisonError::into_inner);
            while cvm.history().redo_len() > 0 {
                if cvm.step().is_err() {
                    break;
                }
            }
        }
    }
}

/// The runs of one firing: one for a `subnet`, one per item for a `map`.
pub type FiringRuns = Vec<Arc<InnerRun>>;

/// The inner runs of a `subnet` or `map` along its firings: the operator's internal state,
/// saved before and after each firing so that `back` and replay restore it. A persistent list:
/// saving it is one reference count.
///
/// Both operators keep one and follow the same protocol with it: its `op_state` is their saved
/// state, its `restore_state`, `rollback` and `replay` their `Operator` methods of the same
/// names.
#[derive(Clone, Default)]
pub struct Runs(Option<Arc<RunNode>>);

struct RunNode {
    runs: FiringRuns,
    /// The firings' runs before it; empty in a list read back from a journal, which holds its
    /// last firing's only (see [`Runs::advance_to`]).
    prev: Runs,
    /// How many firings the list has, this one included.
    count: usize,
}

impl fmt::Debug for Runs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.by_firing()).finish()
    }
}

/// The journal form of [`Runs`]: the number of firings and the last firing's runs
/// (`{"count":N,"batch":[run…]}`); the earlier firings' are in the states saved with them.
#[derive(Serialize, Deserialize)]
struct RunsForm<R> {
    count: usize,
    #[serde(default = "Vec::new")]
    batch: Vec<R>,
}

impl Runs {
    /// The runs with `runs` added as the latest firing's.
    pub(crate) fn push(&self, runs: FiringRuns) -> Runs {
        Runs(Some(Arc::new(RunNode {
            runs,
            prev: self.clone(),
            count: self.len() + 1,
        })))
    }

    /// The state a `subnet` or `map` saves: these runs, with their journal form.
    pub(crate) fn op_state(&self) -> OpState {
        OpState::with_codec(
            self.clone(),
            crate::operator::StateCodec {
                to_json: |v| {
                    let runs = v
                        .downcast_ref::<Runs>()
                        .ok_or_else(|| "not the runs of a sub-net".to_owned())?;
                    let last: Vec<&InnerRun> = match &runs.0 {
                        Some(node) => node.runs.iter().map(|r| &**r).collect(),
                        None => Vec::new(),
                    };
                    serde_json::to_value(RunsForm {
                        count: runs.len(),
                        batch: last,
                    })
                    .map_err(|e| e.to_string())
                },
                from_json: |v| {
                    let form: RunsForm<InnerRun> =
                        serde_json::from_value(v).map_err(|e| format!("inner runs: {e}"))?;
                    let runs = match form.count {
                        0 => Runs::default(),
                        count => Runs(Some(Arc::new(RunNode {
                            runs: form.batch.into_iter().map(Arc::new).collect(),
                            prev: Runs::default(),
                            count,
                        }))),
                    };
                    Ok(Box::new(runs) as Box<dyn std::any::Any + Send>)
                },
            },
        )
    }

    /// `Operator::restore_state`: the runs saved in `state`.
    pub(crate) fn restore_state(&mut self, state: &OpState) {
        if let Some(r) = state.get::<Runs>() {
            *self = r.clone();
        }
    }

    /// `Operator::rollback`: back to the runs saved `before` the firing, rewinding the runs
    /// of the firings undone.
    pub(crate) fn rollback(&mut self, before: Option<&OpState>) {
        if let Some(before) = before.and_then(|s| s.get::<Runs>()) {
            let before = self.back_to(before);
            self.rewind_to(&before);
            *self = before;
        }
    }

    /// `Operator::replay`: forward to the runs saved `after` the firing, replaying its runs —
    /// runs read back from a journal get their engines back first, each on a fresh instance of
    /// the inner net from `net`; no inner operator runs.
    pub(crate) fn replay(&mut self, after: Option<&OpState>, net: impl Fn() -> Option<Net>) {
        if let Some(after) = after.and_then(|s| s.get::<Runs>()) {
            let after = self.advance_to(after);
            for runs in after.newer_than(self) {
                for run in &runs {
                    // A run that cannot be rebuilt keeps its summary; its history stays unseen.
                    let _ = run.restore(&net);
                }
            }
            for runs in after.newer_than(self).into_iter().rev() {
                for run in &runs {
                    run.replay();
                }
            }
            *self = after;
        }
    }

    /// The list after a replay to `after` (a state saved after a firing that added runs to
    /// this list): `after` itself when it continues this list, else — `after` was read back from
    /// a journal and holds its last firing's runs only — this list with those added.
    fn advance_to(&self, after: &Runs) -> Runs {
        match &after.0 {
            Some(node) if node.count == self.len() + 1 && !node.prev.same(self) => {
                self.push(node.runs.clone())
            }
            _ => after.clone(),
        }
    }

    /// The list back to `before` (a state saved before a firing): its first `before.len()`
    /// firings — this list's own, so a `before` read back from a journal (its last firing only)
    /// loses nothing.
    fn back_to(&self, before: &Runs) -> Runs {
        let mut cur = self;
        while cur.len() > before.len() {
            match &cur.0 {
                Some(node) => cur = &node.prev,
                None => break,
            }
        }
        if cur.len() == before.len() {
            cur.clone()
        } else {
            before.clone()
        }
    }

    /// Going back from `self` to `before` (a `back` over the firings in between): rewinds their
    /// runs, latest first.
    fn rewind_to(&self, before: &Runs) {
        for runs in self.newer_than(before) {
            for run in runs.iter().rev() {
                run.rewind();
            }
        }
    }

    fn same(&self, other: &Runs) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.count)
    }

    /// The runs of each firing, from the first firing to the last.
    pub fn by_firing(&self) -> Vec<FiringRuns> {
        let mut out = Vec::new();
        let mut cur = self;
        while let Some(node) = &cur.0 {
            out.push(node.runs.clone());
            cur = &node.prev;
        }
        out.reverse();
        out
    }

    /// The firings' runs in `self` that `older` does not have (`older` is an earlier state of
    /// the same list), latest first.
    fn newer_than(&self, older: &Runs) -> Vec<FiringRuns> {
        let mut out = Vec::new();
        let mut cur = self;
        let stop = older.len();
        let mut n = self.len();
        while n > stop {
            let Some(node) = &cur.0 else { break };
            if cur.same(older) {
                break;
            }
            out.push(node.runs.clone());
            cur = &node.prev;
            n -= 1;
        }
        out
    }
}
