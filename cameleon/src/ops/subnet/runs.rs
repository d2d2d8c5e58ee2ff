//! The inner runs a `subnet` or `map` keeps (docs/semantics.md §10.2): each run's engine at
//! its end, so its history can be inspected, undone with its parent's firing and replayed.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::ser::SerializeStruct;
use serde_json::{Value as Json, json};

use crate::engine::{Cvm, EndState};
use crate::history::FiringView;
use crate::types::Value;

/// One run of an inner net: one firing of a `subnet`, one item of a `map`
/// (docs/semantics.md §10.2, §10.3).
///
/// It keeps the inner engine as the run left it, so its history, marking and received values
/// can be inspected ([`with_cvm`](Self::with_cvm)); a `back` over the parent's firing rewinds
/// it (each inner firing's compensation runs), a replay of that firing replays it. Its
/// [`trace`](Self::trace) has the lines `cameleon run --trace` writes, one per inner firing.
pub struct InnerRun {
    net: String,
    item: Option<usize>,
    end: EndState,
    steps: usize,
    firings: usize,
    /// The inner engine; empty for a run read back from a journal until its operator rebuilds
    /// it from `history` ([`restore`](Self::restore)).
    cvm: OnceLock<Mutex<Cvm>>,
    /// A run read back from a journal: its history ([`Cvm::history_json`]).
    history: Option<Json>,
    trace: OnceLock<Vec<Json>>,
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

impl InnerRun {
    pub(crate) fn new(cvm: Cvm, end: EndState, item: Option<usize>) -> Self {
        InnerRun {
            net: cvm.net().name().to_owned(),
            item,
            end,
            steps: cvm.depth(),
            firings: cvm.history().recorded_firings(),
            cvm: OnceLock::from(Mutex::new(cvm)),
            history: None,
            trace: OnceLock::new(),
        }
    }

    /// The run's journal form: `{"net","item","end","steps","firings","history"}`, its whole
    /// history ([`Cvm::history_json`]) rather than its trace, so that a resumed parent rebuilds
    /// the inner engine without running an inner operator.
    pub fn state_json(&self) -> Result<Json, String> {
        let history = match (self.cvm.get(), &self.history) {
            (Some(cvm), _) => cvm
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .history_json()?,
            (None, Some(h)) => h.clone(),
            (None, None) => Json::Null,
        };
        let end = serde_json::to_value(&self.end).map_err(|e| e.to_string())?;
        Ok(json!({
            "net": self.net,
            "item": self.item,
            "end": end,
            "steps": self.steps,
            "firings": self.firings,
            "history": history,
        }))
    }

    /// Reads back what [`state_json`](Self::state_json) wrote: a run without its engine until
    /// [`restore`](Self::restore) rebuilds it.
    pub fn from_state_json(v: &Json) -> Result<InnerRun, String> {
        let count = |k: &str| -> Result<usize, String> {
            v[k].as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| format!("an inner run without `{k}`"))
        };
        Ok(InnerRun {
            net: v["net"].as_str().unwrap_or_default().to_owned(),
            item: v["item"].as_u64().map(|n| n as usize),
            end: serde_json::from_value(v["end"].clone())
                .map_err(|e| format!("an inner run's end: {e}"))?,
            steps: count("steps")?,
            firings: count("firings")?,
            cvm: OnceLock::new(),
            history: Some(v["history"].clone()).filter(|h| !h.is_null()),
            trace: OnceLock::new(),
        })
    }

    /// Rebuilds the engine of a run read back from a journal, on `net` (a fresh instance of
    /// the inner net), restoring its history **without running any inner operator**. Nothing
    /// to do for a run that has its engine. `Err`: the history does not fit the net.
    pub(crate) fn restore(
        &self,
        net: impl FnOnce() -> Option<crate::net::Net>,
    ) -> Result<(), String> {
        if self.cvm.get().is_some() {
            return Ok(());
        }
        let Some(history) = &self.history else {
            return Ok(());
        };
        let Some(net) = net() else {
            return Err(format!("the inner net `{}` cannot be built", self.net));
        };
        let mut cvm = Cvm::new(net);
        cvm.restore_json(history.clone())
            .map_err(|e| format!("inner run of `{}`: {e}", self.net))?;
        let _ = self.cvm.set(Mutex::new(cvm));
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
        let cvm = self.cvm.get()?;
        let cvm = cvm.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&cvm))
    }

    /// Every value inner operator `op` received (what an `output` passed out).
    pub fn received(&self, op: &str) -> Vec<Value> {
        self.with_cvm(|cvm| cvm.received(op).into_iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The run's trace: one JSON object per inner firing, as `cameleon run --trace` writes them
    /// (`{"step","op","consumed","emitted"}`), in history order.
    pub fn trace(&self) -> &[Json] {
        if self.cvm.get().is_none() {
            return self.trace.get().map_or(&[], Vec::as_slice);
        }
        self.trace
            .get_or_init(|| self.with_cvm(trace_lines).unwrap_or_default())
    }

    /// Undoes the run (a `back` over its parent's firing): every inner step, last first, each
    /// operator's compensation included.
    pub(crate) fn rewind(&self) {
        if let Some(cvm) = self.cvm.get() {
            let _ = self.trace(); // keep the trace of what happened
            cvm.lock().unwrap_or_else(PoisonError::into_inner).rewind();
        }
    }

    /// Replays the run after a [`rewind`](Self::rewind) (a replay of its parent's firing): no
    /// inner operator runs.
    pub(crate) fn replay(&self) {
        if let Some(cvm) = self.cvm.get() {
            let mut cvm = cvm.lock().unwrap_or_else(PoisonError::into_inner);
            while cvm.history().redo_len() > 0 {
                if cvm.step().is_err() {
                    break;
                }
            }
        }
    }

    /// The run in brief: `{"net","item"?,"end",<end fields>,"steps","firings"}`.
    pub fn summary_json(&self) -> Json {
        let mut j = self.to_json();
        if let Json::Object(m) = &mut j {
            m.remove("trace");
        }
        j
    }

    /// The run as JSON: `{"net","item"?,"end",<end fields>,"steps","firings","trace":[…]}`.
    pub fn to_json(&self) -> Json {
        let mut m = serde_json::Map::new();
        m.insert("net".into(), json!(self.net));
        if let Some(i) = self.item {
            m.insert("item".into(), json!(i));
        }
        if let Ok(Json::Object(end)) = serde_json::to_value(&self.end) {
            m.extend(end);
        }
        m.insert("steps".into(), json!(self.steps));
        m.insert("firings".into(), json!(self.firings));
        m.insert("trace".into(), Json::Array(self.trace().to_vec()));
        Json::Object(m)
    }
}

impl serde::Serialize for InnerRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("InnerRun", 6)?;
        st.serialize_field("net", &self.net)?;
        st.serialize_field("item", &self.item)?;
        st.serialize_field("end", &self.end)?;
        st.serialize_field("steps", &self.steps)?;
        st.serialize_field("firings", &self.firings)?;
        st.serialize_field("trace", self.trace())?;
        st.end()
    }
}

/// The trace lines of `cvm`'s history (see [`InnerRun::trace`]).
pub fn trace_lines(cvm: &Cvm) -> Vec<Json> {
    let mut out = Vec::new();
    for entry in cvm.history().entries() {
        for f in &entry.firings {
            out.push(trace_line(cvm, entry.step, f));
        }
    }
    out
}

/// The trace line of firing `f` of step `step` of `cvm`: `{"step","op","consumed","emitted"}`,
/// each emission with its connection, type and value (the format of `cameleon run --trace`,
/// docs/cli.md).
pub fn trace_line(cvm: &Cvm, step: u32, f: &FiringView) -> Json {
    let net = cvm.net();
    let consumed: Vec<&str> = f
        .consumed
        .iter()
        .map(|c| net.connections()[c.index()].name.as_str())
        .collect();
    let emitted: Vec<Json> = f
        .written
        .iter()
        .map(|(c, t)| {
            let conn = net.connections()[c.index()].name.as_str();
            match cvm.token(*t) {
                Some(tok) => json!({
                    "conn": conn,
                    "type": tok.type_name(),
                    "value": tok.value.to_json(),
                }),
                None => json!({ "conn": conn }),
            }
        })
        .collect();
    json!({
        "step": step,
        "op": net.op(f.op).name,
        "consumed": consumed,
        "emitted": emitted,
    })
}

/// The runs of one firing: one for a `subnet`, one per item for a `map`.
pub type Batch = Vec<Arc<InnerRun>>;

/// The inner runs of a `subnet` or `map` along its firings: the operator's internal state,
/// saved before and after each firing so that `back` and replay restore it. A persistent list:
/// saving it is one reference count.
#[derive(Clone, Default)]
pub struct Runs(Option<Arc<RunNode>>);

struct RunNode {
    batch: Batch,
    /// The batches before it; empty in a list read back from a journal, which holds its last
    /// batch only (see [`Runs::advance_to`]).
    prev: Runs,
    /// How many batches the list has, this one included.
    count: usize,
}

impl fmt::Debug for Runs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.batches()).finish()
    }
}

/// The runs as JSON: one array per firing, first first, each run as [`InnerRun`] serializes
/// (its trace, not its engine) — what a journal of the outer run keeps of them.
impl serde::Serialize for Runs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.batches()
                .iter()
                .map(|b| b.iter().map(|r| &**r).collect::<Vec<_>>()),
        )
    }
}

impl Runs {
    /// The runs with `batch` added as the latest firing's.
    pub(crate) fn push(&self, batch: Batch) -> Runs {
        Runs(Some(Arc::new(RunNode {
            batch,
            prev: self.clone(),
            count: self.len() + 1,
        })))
    }

    /// The list after a replay to `after` (a state saved after a firing that added a batch to
    /// this list): `after` itself when it continues this list, else — `after` was read back from
    /// a journal and holds its last batch only — this list with that batch added.
    pub(crate) fn advance_to(&self, after: &Runs) -> Runs {
        match &after.0 {
            Some(node) if node.count == self.len() + 1 && !node.prev.same(self) => {
                self.push(node.batch.clone())
            }
            _ => after.clone(),
        }
    }

    /// The list back to `before` (a state saved before a firing): its first `before.len()`
    /// batches — this list's own, so a `before` read back from a journal (its last batch only)
    /// loses nothing.
    pub(crate) fn back_to(&self, before: &Runs) -> Runs {
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

    /// Rebuilds the engines of the runs `after` has and `self` has not (read back from a
    /// journal), each on a fresh instance of the inner net from `net`.
    pub(crate) fn restore_newer(&self, after: &Runs, net: impl Fn() -> Option<crate::net::Net>) {
        for batch in after.newer_than(self) {
            for run in &batch {
                // A run that cannot be rebuilt keeps its summary; its history stays unseen.
                let _ = run.restore(&net);
            }
        }
    }

    /// The journal form: the number of batches and the last batch
    /// (`{"count":N,"batch":[run…]}`, each run as [`InnerRun::state_json`]). The earlier
    /// batches are in the states saved with the earlier firings.
    pub(crate) fn state_json(&self) -> Result<Json, String> {
        let batch: Vec<Json> = match &self.0 {
            Some(node) => node
                .batch
                .iter()
                .map(|r| r.state_json())
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(json!({"count": self.len(), "batch": batch}))
    }

    /// Reads back what [`state_json`](Self::state_json) wrote.
    pub(crate) fn from_state_json(v: &Json) -> Result<Runs, String> {
        let count = v["count"].as_u64().ok_or("inner runs without `count`")? as usize;
        if count == 0 {
            return Ok(Runs::default());
        }
        let batch = v["batch"]
            .as_array()
            .ok_or("inner runs without `batch`")?
            .iter()
            .map(|r| InnerRun::from_state_json(r).map(Arc::new))
            .collect::<Result<Batch, _>>()?;
        Ok(Runs(Some(Arc::new(RunNode {
            batch,
            prev: Runs::default(),
            count,
        }))))
    }

    /// The state a `subnet` or `map` saves: these runs, with their journal form.
    pub(crate) fn op_state(&self) -> crate::operator::OpState {
        crate::operator::OpState::with_codec(
            self.clone(),
            crate::operator::StateCodec {
                to_json: |v| {
                    v.downcast_ref::<Runs>()
                        .ok_or_else(|| "not the runs of a sub-net".to_owned())?
                        .state_json()
                },
                from_json: |v| {
                    Runs::from_state_json(&v).map(|r| Box::new(r) as Box<dyn std::any::Any + Send>)
                },
            },
        )
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

    /// The batches from the first firing to the last.
    pub fn batches(&self) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut cur = self;
        while let Some(node) = &cur.0 {
            out.push(node.batch.clone());
            cur = &node.prev;
        }
        out.reverse();
        out
    }

    /// The batches in `self` that `older` does not have (`older` is an earlier state of the same
    /// list), latest first.
    fn newer_than(&self, older: &Runs) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut cur = self;
        let stop = older.len();
        let mut n = self.len();
        while n > stop {
            let Some(node) = &cur.0 else { break };
            if cur.same(older) {
                break;
            }
            out.push(node.batch.clone());
            cur = &node.prev;
            n -= 1;
        }
        out
    }

    /// Going back from `self` to `before` (a `back` over the firings in between): rewinds their
    /// runs, latest first.
    pub(crate) fn rewind_to(&self, before: &Runs) {
        for batch in self.newer_than(before) {
            for run in batch.iter().rev() {
                run.rewind();
            }
        }
    }

    /// Going forward from `self` to `after` (a replay): replays the runs in between, first
    /// first.
    pub(crate) fn replay_to(&self, after: &Runs) {
        for batch in after.newer_than(self).into_iter().rev() {
            for run in &batch {
                run.replay();
            }
        }
    }
}
