//! The inner runs a `subnet` or `map` keeps (docs/semantics.md §10.2): each run's engine at
//! its end, so its history can be inspected, undone with its parent's firing and replayed.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::ser::SerializeStruct;
use serde_json::{Value as Json, json};

use crate::engine::{Cvm, EndState};
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
    cvm: Option<Mutex<Cvm>>,
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
            cvm: Some(Mutex::new(cvm)),
            trace: OnceLock::new(),
        }
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
    /// firing rewound it): its history, marking, received values. `None` for a run restored
    /// from its serialized form, which keeps the trace only.
    pub fn with_cvm<R>(&self, f: impl FnOnce(&Cvm) -> R) -> Option<R> {
        let cvm = self.cvm.as_ref()?;
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
        self.trace
            .get_or_init(|| self.with_cvm(trace_lines).unwrap_or_default())
    }

    /// Undoes the run (a `back` over its parent's firing): every inner step, last first, each
    /// operator's compensation included.
    pub(crate) fn rewind(&self) {
        if let Some(cvm) = &self.cvm {
            let _ = self.trace(); // keep the trace of what happened
            cvm.lock().unwrap_or_else(PoisonError::into_inner).rewind();
        }
    }

    /// Replays the run after a [`rewind`](Self::rewind) (a replay of its parent's firing): no
    /// inner operator runs.
    pub(crate) fn replay(&self) {
        if let Some(cvm) = &self.cvm {
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
    let net = cvm.net();
    let mut out = Vec::new();
    for entry in cvm.history().entries() {
        for f in &entry.firings {
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
            out.push(json!({
                "step": entry.step,
                "op": net.op(f.op).name,
                "consumed": consumed,
                "emitted": emitted,
            }));
        }
    }
    out
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
    prev: Runs,
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
        })))
    }

    fn same(&self, other: &Runs) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    fn len(&self) -> usize {
        let mut n = 0;
        let mut cur = self;
        while let Some(node) = &cur.0 {
            n += 1;
            cur = &node.prev;
        }
        n
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
