//! `map`: runs an inner net once per item of a JSON array (docs/semantics.md §10.3).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value as Json, json};

use super::runs::{FiringRuns, InnerRun, Runs};
use super::subnet::SubnetError;
use super::template::{Source, Template, load};
use crate::catalogue::{BuildContext, CatalogueEntry, ParamError, ParamInfo, ParamReader, PortDoc};
use crate::dsl::{HasPorts, InputDecl};
use crate::net::Net;
use crate::operator::{
    Execution, Firing, InPort, OpError, OpFuture, OpSettings, OpSpec, OpState, Operator, OutPort,
    Params, TypeRef,
};
use crate::policy::{Family, Policy};
use crate::types::{DataError, DataJSON, PortType, Value};

/// Runs the inner net once per item of `in_items` (a JSON array) and emits the results, in
/// item order, on `out_results` (docs/semantics.md §10.3).
///
/// The inner net has one `input` (it receives the item, a `DataJSON`) and one `output` (its
/// value is the item's result; `null` if it received nothing). In parallel mode up to
/// `concurrency` items run at once, on tokio; in sequential mode one after the other. Results
/// and the record of runs never depend on timing.
///
/// - An item whose run does not complete fails. With `error` connected, every item runs, a
///   failed item's result is `null`, and `error` carries a `DataError` naming each failed item.
///   Without it, the firing fails at the first failed item in item order (items after it are
///   cancelled or not started).
/// - With `quorum: m`, the results stop at the `m`-th successful item in item order; the items
///   after it are cancelled (`cancel_rest: true`, the default) or run to their end, their
///   results left out (`cancel_rest: false`).
///
/// Every item's run is kept ([`runs`](Self::runs)), like a `subnet`'s.
pub struct Map {
    param: Option<String>,
    concurrency: usize,
    quorum: Option<usize>,
    cancel_rest: bool,
    template: Arc<Template>,
    runs: Runs,
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Map")
            .field("net", &self.template.shown)
            .field("concurrency", &self.concurrency)
            .field("quorum", &self.quorum)
            .field("cancel_rest", &self.cancel_rest)
            .field("runs", &self.runs)
            .finish()
    }
}

/// Default of `concurrency`.
pub const DEFAULT_CONCURRENCY: usize = 4;

impl Map {
    /// A map running `net` on each item (one `input`, one `output`).
    pub fn new(net: Net) -> Result<Self, SubnetError> {
        let shown = net.name().to_owned();
        let t = Template::from_net(net, BuildContext::default(), shown).map_err(SubnetError)?;
        Map::with(None, Arc::new(t)).map_err(SubnetError::from)
    }

    /// A map running the `.cm` file at `path` (relative to the current directory).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SubnetError> {
        let cx = BuildContext {
            allow_outside: true,
            ..BuildContext::default()
        };
        let param = path.as_ref().display().to_string();
        let Source::Ready(t) = load(&param, &cx, None)? else {
            return Err(SubnetError(format!("`{param}` includes itself")));
        };
        Map::with(Some(param), t).map_err(SubnetError::from)
    }

    fn with(param: Option<String>, template: Arc<Template>) -> Result<Self, ParamError> {
        check_boundary(&template)?;
        Ok(Map {
            param,
            concurrency: DEFAULT_CONCURRENCY,
            quorum: None,
            cancel_rest: true,
            template,
            runs: Runs::default(),
        })
    }

    /// At most `n` items at once in parallel mode (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Stops at the `m`-th successful item (docs/semantics.md §10.3).
    pub fn quorum(mut self, m: usize) -> Self {
        self.quorum = Some(m.max(1));
        self
    }

    /// With a quorum, whether the items after it are cancelled (the default) or run to their
    /// end, their results left out.
    pub fn cancel_rest(mut self, cancel: bool) -> Self {
        self.cancel_rest = cancel;
        self
    }

    /// The inner runs so far: the runs of each firing along the current history (one run per
    /// item that ran, in item order), first first.
    pub fn runs(&self) -> Vec<FiringRuns> {
        self.runs.by_firing()
    }
}

/// Rule: a map's inner net has one `input`, of a type a JSON item fits, and one `output`.
fn check_boundary(t: &Template) -> Result<(), ParamError> {
    let b = &t.boundary;
    let err = |m: String| {
        ParamError::new("net".to_owned(), m).with_hint(
            "a map's net takes the item on one `input` and gives its result on one `output`",
        )
    };
    if b.inputs.len() != 1 || b.outputs.len() != 1 {
        return Err(err(format!(
            "the net of a map has one `input` and one `output`; `{}` has {} and {}",
            t.shown,
            b.inputs.len(),
            b.outputs.len()
        )));
    }
    let ty = b.inputs[0].ty;
    if !(ty.is_any() || ty == <DataJSON as PortType>::INFO) {
        return Err(err(format!(
            "the input of a map's net receives a DataJSON item, but {} ({ty})",
            b.inputs[0].origin
        )));
    }
    Ok(())
}

/// The capabilities of the firing, shared with its items' runs.
type Caps = Arc<dyn crate::operator::capability::Capabilities>;

/// How one item's run went.
struct Item {
    index: usize,
    result: Result<Json, String>,
    run: Option<InnerRun>,
}

/// Runs item `index` to its end, synchronously (`Cvm::run`: the engine's fast path for an
/// inner net of operators that need no future).
fn run_item(t: &Template, caps: &Caps, index: usize, item: Json) -> Item {
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
async fn run_item_async(t: &Template, caps: &Caps, index: usize, item: Json) -> Item {
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
    t: &Template,
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
struct Plan {
    n: usize,
    /// Items from `cut` on are not needed.
    cut: usize,
    /// Items `0..scanned` are finished and counted, in item order.
    scanned: usize,
    successes: usize,
    /// Whether a failure is caught (`error` connected) rather than failing fast.
    catch: bool,
    quorum: Option<usize>,
    cancel_rest: bool,
    /// With a quorum, the end of the items whose results count.
    upto: usize,
}

impl Plan {
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
async fn run_items(
    t: &Arc<Template>,
    caps: &Caps,
    items: &[Json],
    concurrency: usize,
    plan: &mut Plan,
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

impl Map {
    async fn fire(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let items = match cx.value_at(0).and_then(|v| v.downcast_ref::<DataJSON>()) {
            Some(DataJSON(Json::Array(items))) => items.clone(),
            Some(DataJSON(other)) => {
                return Err(OpError::new(format!(
                    "`in_items` must be a JSON array, not {}",
                    json_kind(other)
                )));
            }
            None => return Err(OpError::new("input `in_items` has no value")),
        };
        let n = items.len();
        let catch = cx.output_connected(1);
        let concurrency = if cx.parallel() { self.concurrency } else { 1 };
        let mut plan = Plan {
            n,
            cut: n,
            scanned: 0,
            successes: 0,
            catch,
            quorum: self.quorum,
            cancel_rest: self.cancel_rest,
            upto: n,
        };
        let caps = cx.capabilities_shared();
        let done = run_items(&self.template, &caps, &items, concurrency, &mut plan).await;
        let upto = plan.upto.min(plan.cut);
        let failures: Vec<(usize, &str)> = done[..upto]
            .iter()
            .flatten()
            .filter_map(|d| d.result.as_ref().err().map(|e| (d.index, e.as_str())))
            .collect();
        // An item stopped by the run's budget fails the firing even when failures are caught:
        // the run stops in BUDGET and the firing is redone when it goes on (docs/semantics.md
        // §4.7).
        let budget_spent = caps.meter().is_some_and(|m| m.stopped());
        if (!catch || budget_spent)
            && let Some((i, e)) = failures.first()
        {
            return Err(OpError::new(format!("item {i} failed: {e}")));
        }
        let results: Vec<Json> = done[..upto]
            .iter()
            .map(|d| match d {
                Some(Item { result: Ok(v), .. }) => v.clone(),
                _ => Json::Null,
            })
            .collect();
        cx.emit_at(0, DataJSON(Json::Array(results)));
        if !failures.is_empty() {
            let list: Vec<String> = failures
                .iter()
                .map(|(i, e)| format!("item {i}: {e}"))
                .collect();
            cx.emit_at(
                1,
                DataError {
                    operator: cx.instance().to_owned(),
                    message: format!(
                        "{} of {upto} items failed: {}",
                        failures.len(),
                        list.join("; ")
                    ),
                },
            );
        }
        let runs: FiringRuns = done
            .into_iter()
            .flatten()
            .filter_map(|d| d.run)
            .map(Arc::new)
            .collect();
        self.runs = self.runs.push(runs);
        Ok(())
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

impl Operator for Map {
    fn spec(&self) -> OpSpec {
        spec()
    }

    fn params(&self) -> Params {
        let mut p = Params::new();
        if let Some(net) = &self.param {
            p.insert("net".into(), json!(net));
        }
        p.insert("concurrency".into(), json!(self.concurrency));
        p.insert("quorum".into(), json!(self.quorum));
        p.insert("cancel_rest".into(), json!(self.cancel_rest));
        p
    }

    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        crate::runtime::block_on(self.run_async(cx))
    }

    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        Box::pin(self.fire(cx))
    }

    fn execution(&self) -> Execution {
        Execution::Async
    }

    fn save_state(&self) -> Option<OpState> {
        Some(self.runs.op_state())
    }

    fn restore_state(&mut self, state: &OpState) {
        self.runs.restore_state(state);
    }

    fn rollback(&mut self, before: Option<&OpState>, _emitted: &[(u16, Value)]) {
        self.runs.rollback(before);
    }

    fn replay(&mut self, after: Option<&OpState>, _emitted: &[(u16, Value)]) {
        let template = &self.template;
        self.runs.replay(after, || template.instantiate().ok());
    }

    fn fresh(&self) -> Option<Box<dyn Operator>> {
        Some(Box::new(Map {
            param: self.param.clone(),
            concurrency: self.concurrency,
            quorum: self.quorum,
            cancel_rest: self.cancel_rest,
            template: Arc::clone(&self.template),
            runs: Runs::default(),
        }))
    }
}

/// The port handles of [`Map`], for `pipeline!`.
#[derive(Clone, Copy, Debug)]
pub struct MapPorts {
    /// The items (a JSON array).
    pub in_items: InPort<Map, DataJSON>,
    /// The results, in item order.
    pub out_results: OutPort<Map, DataJSON>,
    /// The failed items, when connected.
    pub error: OutPort<Map, DataError>,
}

impl HasPorts for Map {
    type Ports = MapPorts;
    fn ports() -> MapPorts {
        MapPorts {
            in_items: InPort::new(0, "in_items"),
            out_results: OutPort::new(0, "out_results"),
            error: OutPort::new(1, "error"),
        }
    }
    const INPUTS: &'static [InputDecl] = &[InputDecl::required("in_items")];
    const POLICY: Policy = Policy::Any;
}

// ---------------------------------------------------------------------------------------------
// The catalogue entry

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "net",
        ty: "string",
        default: None,
        doc: "the .cm file run on each item (one input, one output), relative to this file's folder",
    },
    ParamInfo {
        name: "concurrency",
        ty: "usize",
        default: Some("4"),
        doc: "items run at once in parallel mode",
    },
    ParamInfo {
        name: "quorum",
        ty: "usize or null",
        default: Some("null"),
        doc: "stop at this many successful items, in item order",
    },
    ParamInfo {
        name: "cancel_rest",
        ty: "bool",
        default: Some("true"),
        doc: "with a quorum: cancel the items after it (true) or run them, results left out",
    },
];

fn spec() -> OpSpec {
    OpSpec::new("map", "Map", Family::Behavioral, Policy::Any)
        .input("in_items", TypeRef::of::<DataJSON>())
        .output("out_results", TypeRef::of::<DataJSON>())
        .output("error", TypeRef::of::<DataError>())
        .emits(&[&["out_results"], &["out_results", "error"]])
}

fn build(params: &Params, cx: &BuildContext) -> Result<Box<dyn Operator>, ParamError> {
    let r = ParamReader::new(params, PARAMS)?;
    let net: String = r.read("net")?;
    let concurrency: usize = r.read("concurrency")?;
    let quorum: Option<usize> = r.read("quorum")?;
    let cancel_rest: bool = r.read("cancel_rest")?;
    if concurrency == 0 {
        return Err(
            ParamError::new("concurrency".to_owned(), "`concurrency: 0` runs no item")
                .with_hint("give at least 1"),
        );
    }
    if quorum == Some(0) {
        return Err(
            ParamError::new("quorum".to_owned(), "`quorum: 0` waits for no item")
                .with_hint("give at least 1, or leave `quorum` out to keep every item"),
        );
    }
    let Source::Ready(template) = load(&net, cx, None)? else {
        return Err(ParamError::new(
            "net".to_owned(),
            format!("the net of a map may not include itself (`{net}`)"),
        ));
    };
    let mut map = Map::with(Some(net), template)?;
    map.concurrency = concurrency;
    map.quorum = quorum;
    map.cancel_rest = cancel_rest;
    Ok(Box::new(map))
}

crate::submit_operator!(CatalogueEntry {
    id: "map",
    aliases: &[],
    label: "Map",
    family: Family::Behavioral,
    policy: Policy::Any,
    doc: "Runs the net of file `net` once per item of the JSON array on `in_items` and emits the results, in item order, on `out_results`; a connected `error` receives the failed items.\n\nIn parallel mode up to `concurrency` items run at once. With `quorum`, the results stop at that many successful items.",
    params: PARAMS,
    ports: &[
        PortDoc {
            name: "in_items",
            group: false,
            doc: "a JSON array: the net of `net` runs once per item, the item on that net's one `input`",
        },
        PortDoc {
            name: "out_results",
            group: false,
            doc: "the JSON array of the items' results (each the value of the inner net's `output`), in item order",
        },
        PortDoc {
            name: "error",
            group: false,
            doc: "connect it to catch failed items (their index and message) instead of failing the firing",
        },
    ],
    spec,
    build,
    execution: Execution::Async,
    settings: OpSettings::NONE,
});
