//! `map`: runs an inner net once per item of a JSON array (docs/semantics.md §10.3).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value as Json, json};

use super::items::{Item, ItemPlan, run_items};
use super::runs::{FiringRuns, Runs};
use super::subnet::SubnetError;
use super::template::{InnerNet, NetTemplate, load};
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
    template: Arc<NetTemplate>,
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
        let t = NetTemplate::from_net(net, BuildContext::default(), shown).map_err(SubnetError)?;
        Map::with(None, Arc::new(t)).map_err(SubnetError::from)
    }

    /// A map running the `.cm` file at `path` (relative to the current directory).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SubnetError> {
        let cx = BuildContext {
            allow_outside: true,
            ..BuildContext::default()
        };
        let param = path.as_ref().display().to_string();
        let InnerNet::Ready(t) = load(&param, &cx, None)? else {
            return Err(SubnetError(format!("`{param}` includes itself")));
        };
        Map::with(Some(param), t).map_err(SubnetError::from)
    }

    fn with(param: Option<String>, template: Arc<NetTemplate>) -> Result<Self, ParamError> {
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
fn check_boundary(t: &NetTemplate) -> Result<(), ParamError> {
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

impl Map {
    async fn fire(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        // The input's value shared (one reference count), not its array copied.
        let given = cx.value_at(0).cloned();
        let items = match given.as_ref().and_then(|v| v.downcast_ref::<DataJSON>()) {
            Some(DataJSON(Json::Array(items))) => items,
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
        let mut plan = ItemPlan {
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
        let done = run_items(&self.template, &caps, items, concurrency, &mut plan).await;
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
        let runs: FiringRuns = done.into_iter().flatten().filter_map(|d| d.run).collect();
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
    let InnerNet::Ready(template) = load(&net, cx, None)? else {
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
