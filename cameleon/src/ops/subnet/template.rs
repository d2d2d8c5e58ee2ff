//! The inner net of a `subnet` or a `map`: loaded once, its boundary read, and instantiated
//! anew — fresh operators, initial marking — for each run (docs/semantics.md §10.2).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::boundary::{SubnetInput, fresh_boundary, renew_boundary};
use super::runs::InnerRun;
use crate::catalogue::{BuildContext, Catalogue, ParamError};
use crate::cm::{CmFile, Loader};
use crate::connection::ConnState;
use crate::engine::{Cvm, EndState};
use crate::net::{Mode, Net, Topo};
use crate::operator::capability::Capabilities;
use crate::operator::{Execution, OpError, OpSpec, Operator, PortSpec, TypeRef};
use crate::ops::FileAccess;
use crate::policy::{Family, Policy};
use crate::types::{Any, PortType, TypeInfo, Value, type_by_name};

/// Most states explored to find which outputs a sub-net can complete with.
const EMISSION_STATES: u64 = 200_000;

/// One port of a sub-net: an `input` or `output` of its inner net.
#[derive(Clone, Debug)]
pub(crate) struct BoundaryPort {
    /// The boundary name (the port is `in_NAME` / `out_NAME`).
    pub(crate) name: String,
    /// The inner operator's instance name.
    pub(crate) op: String,
    /// The port's data type (`Any`: not fixed).
    pub(crate) ty: &'static TypeInfo,
    /// Where the type comes from, for messages.
    pub(crate) origin: String,
}

/// A sub-net's ports: its inner net's `input`s and `output`s, in declaration order.
#[derive(Clone, Debug, Default)]
pub(crate) struct InnerPorts {
    pub(crate) inputs: Vec<BoundaryPort>,
    pub(crate) outputs: Vec<BoundaryPort>,
}

impl InnerPorts {
    /// The spec of an operator with these ports: `in_NAME` per input, `out_NAME` per output,
    /// each typed by the inner net and saying so.
    pub(crate) fn spec(&self, type_id: &'static str, label: &'static str) -> OpSpec {
        let mut spec = OpSpec::new(type_id, label, Family::Behavioral, Policy::All);
        let port = |prefix: &str, s: &BoundaryPort| PortSpec {
            origin: Some(Cow::Owned(s.origin.clone())),
            ..PortSpec::new(format!("{prefix}_{}", s.name), TypeRef::Is(s.ty))
        };
        spec.inputs = self.inputs.iter().map(|s| port("in", s)).collect();
        spec.outputs = self.outputs.iter().map(|s| port("out", s)).collect();
        spec
    }

    /// Reads the boundary of a validated net: its `input` and `output` operators.
    fn of_net(net: &Net, shown: &str) -> Result<InnerPorts, String> {
        let mut b = InnerPorts::default();
        for (i, node) in net.operators().iter().enumerate() {
            let kind = node.spec.type_id.as_ref();
            if kind != "input" && kind != "output" {
                continue;
            }
            let params = node.params();
            let name = params
                .get("name")
                .and_then(|v| v.as_str())
                .unwrap_or(&node.name)
                .to_owned();
            let next = |c: &crate::connection::Connection, to: bool| {
                if to {
                    net.input_name(c.to)
                } else {
                    net.output_name(c.from)
                }
            };
            if kind == "input" {
                let fed: Vec<String> = net
                    .connections()
                    .iter()
                    .filter(|c| c.from.op.index() == i)
                    .map(|c| format!("`{}`", next(c, true)))
                    .collect();
                b.inputs.push(BoundaryPort {
                    origin: format!(
                        "`in_{name}` is typed by `input` `{}` of sub-net `{shown}`, which feeds {}",
                        node.name,
                        fed.join(", ")
                    ),
                    name,
                    op: node.name.clone(),
                    ty: node.out_types[0],
                });
            } else {
                let from: Vec<String> = net
                    .connections()
                    .iter()
                    .filter(|c| c.to.op.index() == i)
                    .map(|c| format!("`{}`", next(c, false)))
                    .collect();
                b.outputs.push(BoundaryPort {
                    origin: format!(
                        "`out_{name}` is typed by `output` `{}` of sub-net `{shown}`, which receives {}",
                        node.name,
                        from.join(", ")
                    ),
                    name,
                    op: node.name.clone(),
                    ty: node.in_types[0],
                });
            }
        }
        b.check(shown)?;
        Ok(b)
    }

    /// Reads the boundary from a file's declarations, without building its net: for a sub-net
    /// that includes itself, whose net is built only when it runs. Types come from the `type`
    /// params (`Any` without one).
    fn of_file(file: &CmFile, shown: &str) -> Result<InnerPorts, String> {
        let mut b = InnerPorts::default();
        for op in &file.operators {
            let kind = op.type_.as_deref().unwrap_or(&op.id);
            if kind != "input" && kind != "output" {
                continue;
            }
            let param = |k: &str| {
                op.params
                    .as_ref()
                    .and_then(|p| p.get(k))
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            };
            let name = param("name").unwrap_or_else(|| op.id.clone());
            let ty = param("type")
                .and_then(|t| type_by_name(&t))
                .unwrap_or(<Any as PortType>::INFO);
            let dir = if kind == "input" { "in" } else { "out" };
            let side = BoundaryPort {
                origin: format!(
                    "`{dir}_{name}` is typed by the `type` of {kind} `{}` of sub-net `{shown}`, which includes itself (give every `input` and `output` of a recursive sub-net a `type`)",
                    op.id
                ),
                name,
                op: op.id.clone(),
                ty,
            };
            if kind == "input" {
                b.inputs.push(side);
            } else {
                b.outputs.push(side);
            }
        }
        b.check(shown)?;
        Ok(b)
    }

    /// Rule: a sub-net has a boundary, and its names are distinct on each side.
    fn check(&self, shown: &str) -> Result<(), String> {
        if self.inputs.is_empty() && self.outputs.is_empty() {
            return Err(format!(
                "sub-net `{shown}` has no boundary: it has no `input` and no `output` operator"
            ));
        }
        for (side, kind) in [(&self.inputs, "input"), (&self.outputs, "output")] {
            for (i, s) in side.iter().enumerate() {
                if let Some(first) = side[..i].iter().find(|o| o.name == s.name) {
                    return Err(format!(
                        "sub-net `{shown}` has two `{kind}` operators named `{}` (`{}` and `{}`): a boundary name is one port",
                        s.name, first.op, s.op
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A loaded inner net, ready to be instantiated for each run.
pub(crate) struct NetTemplate {
    /// The net the runs are instances of (behind a lock: its operators are not `Sync`, and
    /// concurrent items of a `map` instantiate it).
    net: Mutex<Net>,
    /// Its topology's index tables, built once and copied into the engine of each run.
    topo: Topo,
    /// What its operators are built anew with: its own folder, its files, its depth.
    cx: BuildContext,
    /// How messages name it: the `net` param as written, or the net's name.
    pub(crate) shown: String,
    /// The net's own name (what an inner run reports), shared by every run.
    pub(crate) name: Arc<str>,
    pub(crate) boundary: InnerPorts,
    /// Per boundary input: its operator's index in the net.
    input_ops: Vec<usize>,
    /// Per boundary output: its operator's index in the net.
    output_ops: Vec<u32>,
    /// The emission sets of an operator with its boundary (indices into `boundary.outputs`).
    pub(crate) emits: Vec<Vec<u16>>,
    /// Whether a run is better awaited than run synchronously: the net runs in parallel mode,
    /// or has an async operator, a timeout or retries (the engine drives those with futures).
    pub(crate) asynchronous: bool,
}

impl std::fmt::Debug for NetTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetTemplate")
            .field("net", &self.shown)
            .field("boundary", &self.boundary)
            .finish_non_exhaustive()
    }
}

impl NetTemplate {
    /// The template of `net` (validated), whose operators are built anew with `cx`. Checks
    /// its boundary and that every operator can be built anew.
    pub(crate) fn from_net(
        net: Net,
        cx: BuildContext,
        shown: String,
    ) -> Result<NetTemplate, String> {
        let boundary = InnerPorts::of_net(&net, &shown)?;
        let emits = emission_sets(&net, &boundary);
        let asynchronous = net.config().mode == Mode::Parallel
            || net.operators().iter().any(|n| {
                n.operator().execution() == Execution::Async || !n.effective_settings().is_none()
            });
        let input_ops = boundary
            .inputs
            .iter()
            .map(|side| net.op_id(&side.op).map(|id| id.index()))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| format!("sub-net `{shown}`: an `input` is not in its net"))?;
        let output_ops = boundary
            .outputs
            .iter()
            .map(|side| net.op_id(&side.op).map(|id| id.0))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| format!("sub-net `{shown}`: an `output` is not in its net"))?;
        let t = NetTemplate {
            topo: Topo::new(&net),
            name: Arc::from(net.name()),
            net: Mutex::new(net),
            cx,
            shown,
            boundary,
            input_ops,
            output_ops,
            emits,
            asynchronous,
        };
        t.instantiate().map_err(|e| e.to_string())?;
        Ok(t)
    }

    /// A fresh instance of the inner net: every operator in its initial state, every connection
    /// EMPTY.
    pub(crate) fn instantiate(&self) -> Result<Net, OpError> {
        let net = self.net.lock().unwrap_or_else(PoisonError::into_inner);
        net.instantiate(|node| self.fresh_op(node))
    }

    /// A new instance of the template's operator `node`, in its initial state.
    fn fresh_op(&self, node: &crate::net::OpNode) -> Result<Box<dyn Operator>, OpError> {
        match node.op.fresh().or_else(|| fresh_boundary(&*node.op)) {
            Some(op) => Ok(op),
            None => Catalogue::global()
                .build(&node.spec.type_id, &node.op.params(), &self.cx)
                .map_err(|e| {
                    OpError::new(format!(
                        "sub-net `{}`: operator `{}` ({}) cannot be built anew for a run: {e}",
                        self.shown, node.name, node.spec.type_id
                    ))
                }),
        }
    }

    /// An engine on a fresh instance whose `input`s hold `values` (by boundary input index),
    /// with `caps`: the capabilities of the firing that starts it.
    pub(crate) fn start(
        &self,
        values: &[(usize, Value)],
        caps: &Arc<dyn Capabilities>,
    ) -> Result<Cvm, OpError> {
        let mut net = self.instantiate()?;
        for (k, v) in values {
            if let Some(&o) = self.input_ops.get(*k) {
                give(&mut *net.ops[o].op, v);
            }
        }
        // A run with satellites fires the inner net's remote instances there too.
        if let Some(p) = crate::net::Placing::of(&**caps) {
            p.0.place(&mut net);
        }
        let mut cvm = Cvm::on_topo(net, self.topo.clone());
        cvm.set_capabilities(Arc::clone(caps));
        Ok(cvm)
    }

    /// Whether an engine [`start`](Self::start) built with `caps` may run more than one run,
    /// [`renew`](Self::renew)ed between them: not when satellites place its instances (a
    /// remote instance is placed as the engine is built).
    pub(crate) fn renewable(caps: &Arc<dyn Capabilities>) -> bool {
        crate::net::Placing::of(&**caps).is_none()
    }

    /// Makes `cvm`, an engine [`start`](Self::start) built and whose run's history was taken
    /// out ([`Cvm::take_trail`]), as `start` builds one: every operator a fresh instance,
    /// `values` on the `input`s. `Err`: an operator could not be built anew; do not run `cvm`.
    pub(crate) fn renew(&self, cvm: &mut Cvm, values: &[(usize, Value)]) -> Result<(), OpError> {
        {
            let net = self.net.lock().unwrap_or_else(PoisonError::into_inner);
            cvm.renew_operators(|o, op| {
                // A boundary operator is put back in its initial state where it is.
                if !renew_boundary(&mut **op) {
                    *op = self.fresh_op(&net.ops[o])?;
                }
                Ok::<(), OpError>(())
            })?;
        }
        for (k, v) in values {
            if let Some(&o) = self.input_ops.get(*k) {
                give(cvm.operator_mut(o), v);
            }
        }
        Ok(())
    }

    /// The run that ended in `end` on `cvm`.
    pub(crate) fn finish(&self, cvm: Cvm, end: EndState, item: Option<usize>) -> InnerRun {
        InnerRun::new(cvm, end, item)
    }

    /// Why a run that ended in `end` is a failure (`None`: it COMPLETED).
    pub(crate) fn failure(&self, end: &EndState) -> Option<String> {
        let flat = |s: String| s.replace("\n  ", "; ");
        match end {
            EndState::Completed => None,
            EndState::Error { op, error } => Some(format!(
                "sub-net `{}` failed: `{op}` failed: {error}",
                self.shown
            )),
            other => Some(format!(
                "sub-net `{}` ended in {}",
                self.shown,
                flat(other.to_string())
            )),
        }
    }

    /// The value each `output` received in the run on `cvm`, by boundary output index: `None`
    /// when it received nothing; an error when it received more than one.
    pub(crate) fn outputs(&self, cvm: &Cvm) -> Result<Vec<Option<Value>>, OpError> {
        (0..self.boundary.outputs.len())
            .map(|k| self.output(cvm, k).map(|v| v.cloned()))
            .collect()
    }

    /// The value boundary output `k` received in the run on `cvm` (as
    /// [`outputs`](Self::outputs) gives it), its operator found by index.
    pub(crate) fn output<'c>(&self, cvm: &'c Cvm, k: usize) -> Result<Option<&'c Value>, OpError> {
        let (Some(side), Some(&o)) = (self.boundary.outputs.get(k), self.output_ops.get(k)) else {
            return Ok(None);
        };
        let (mut first, mut count) = (None, 0);
        cvm.each_received(crate::connection::OpId(o), |v| {
            first = first.or(Some(v));
            count += 1;
        });
        if count > 1 {
            return Err(OpError::new(format!(
                "sub-net `{}`: output `{}` received {count} values; a run passes out one value per output",
                self.shown, side.name,
            )));
        }
        Ok(first)
    }
}

/// Passes `v` in to `op`, an `input` of the inner net.
fn give(op: &mut dyn Operator, v: &Value) {
    let op: &mut dyn std::any::Any = op;
    if let Some(input) = op.downcast_mut::<SubnetInput<Any>>() {
        input.give(v.clone());
    }
}

/// Which sets of outputs a run can complete with: for each COMPLETED state of the inner net's
/// control abstraction, the outputs whose input was consumed. Every output at once when the
/// exploration is too large or finds no completion.
fn emission_sets(net: &Net, b: &InnerPorts) -> Vec<Vec<u16>> {
    let all: Vec<u16> = (0..b.outputs.len() as u16).collect();
    let conn_of: Vec<Option<usize>> = b
        .outputs
        .iter()
        .map(|s| {
            let id = net.op_id(&s.op)?;
            net.connections().iter().position(|c| c.to.op == id)
        })
        .collect();
    let Some(markings) = crate::verify::completed_markings(net, EMISSION_STATES) else {
        return vec![all];
    };
    let mut sets: Vec<Vec<u16>> = Vec::new();
    for m in markings {
        let set: Vec<u16> = conn_of
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_some_and(|c| m[c] == ConnState::Old))
            .map(|(k, _)| k as u16)
            .collect();
        if !sets.contains(&set) {
            sets.push(set);
        }
    }
    if sets.is_empty() {
        return vec![all];
    }
    sets.sort();
    sets
}

/// Where a sub-net's inner net comes from.
pub(crate) enum InnerNet {
    /// Loaded (a file, or a net built in code).
    Ready(Arc<NetTemplate>),
    /// A file that includes itself: loaded when it runs, one level deeper each time.
    Lazy(Lazy),
}

pub(crate) struct Lazy {
    path: PathBuf,
    shown: String,
    /// The build context of the net naming it: the loaded net is one level deeper.
    cx: BuildContext,
    pub(crate) boundary: InnerPorts,
    loaded: OnceLock<Result<Arc<NetTemplate>, String>>,
}

impl InnerNet {
    pub(crate) fn boundary(&self) -> &InnerPorts {
        match self {
            InnerNet::Ready(t) => &t.boundary,
            InnerNet::Lazy(l) => &l.boundary,
        }
    }

    /// The emission sets over the boundary's outputs.
    pub(crate) fn emits(&self) -> Vec<Vec<u16>> {
        match self {
            InnerNet::Ready(t) => t.emits.clone(),
            InnerNet::Lazy(l) => vec![(0..l.boundary.outputs.len() as u16).collect()],
        }
    }

    pub(crate) fn shown(&self) -> &str {
        match self {
            InnerNet::Ready(t) => &t.shown,
            InnerNet::Lazy(l) => &l.shown,
        }
    }

    /// The template, loading a recursive sub-net's file the first time it runs.
    pub(crate) fn template(&self) -> Result<Arc<NetTemplate>, OpError> {
        match self {
            InnerNet::Ready(t) => Ok(Arc::clone(t)),
            InnerNet::Lazy(l) => l
                .loaded
                .get_or_init(|| {
                    load_template(&l.path, &l.shown, &l.cx)
                        .map(Arc::new)
                        .map_err(|e| e.to_string())
                })
                .clone()
                .map_err(OpError::new),
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Loads the inner net `param` (a `.cm` path relative to the folder of the net being built with
/// `cx`). A file already being loaded is a recursion: allowed only with a depth limit, and then
/// loaded lazily.
pub(crate) fn load(
    param: &str,
    cx: &BuildContext,
    max_depth: Option<u32>,
) -> Result<InnerNet, ParamError> {
    let err = |msg: String, hint: Option<&str>| {
        let e = ParamError::new("net".to_owned(), msg);
        match hint {
            Some(h) => e.with_hint(h),
            None => e,
        }
    };
    let access = FileAccess {
        root: cx.base_dir.clone().unwrap_or_else(|| PathBuf::from(".")),
        allow_outside: cx.allow_outside,
    };
    let path = access
        .resolve(param)
        .map_err(|e| err(format!("sub-net `{param}`: {e}"), None))?;
    let canonical = path.canonicalize().map_err(|e| {
        err(
            format!(
                "sub-net file `{param}` cannot be read: {e} (looked for `{}`)",
                path.display()
            ),
            Some("the path is relative to the folder of the .cm file that names it"),
        )
    })?;
    if let Some(at) = cx.files.iter().position(|f| *f == canonical) {
        let chain: Vec<String> = cx.files[at..]
            .iter()
            .chain([&canonical])
            .map(|p| file_name(p))
            .collect();
        if max_depth.is_none() {
            return Err(err(
                format!(
                    "sub-net `{param}` includes itself ({}) without a depth limit",
                    chain.join(" → ")
                ),
                Some(
                    "give this `subnet` a `max_depth` (how deep the recursion may go), and make sure the recursion ends",
                ),
            ));
        }
        spend(cx, param).map_err(|m| err(m, None))?;
        let text = std::fs::read_to_string(&canonical)
            .map_err(|e| err(format!("sub-net file `{param}` cannot be read: {e}"), None))?;
        let file = Loader::new().parse_str(&text).map_err(|e| {
            err(
                format!("sub-net `{param}` is not a valid .cm file:\n{e}"),
                None,
            )
        })?;
        let boundary = InnerPorts::of_file(&file, param).map_err(|m| err(m, None))?;
        return Ok(InnerNet::Lazy(Lazy {
            path,
            shown: param.to_owned(),
            cx: cx.clone(),
            boundary,
            loaded: OnceLock::new(),
        }));
    }
    load_template(&path, param, cx).map(|t| InnerNet::Ready(Arc::new(t)))
}

/// Counts one more sub-net file loaded for the top net; past the budget, why not.
fn spend(cx: &BuildContext, shown: &str) -> Result<(), String> {
    cx.subnet_files.spend().map_err(|max| {
        format!(
            "sub-net `{shown}`: this net has loaded {max} sub-net files, the most one net may load (its sub-nets and theirs, every level counted): a net that fans out or recurses this much is refused"
        )
    })
}

/// Loads and checks the inner net at `path`, one level deeper than the net built with `cx`.
fn load_template(path: &Path, shown: &str, cx: &BuildContext) -> Result<NetTemplate, ParamError> {
    let err = |msg: String| ParamError::new("net".to_owned(), msg);
    spend(cx, shown).map_err(err)?;
    let net = Loader::new()
        .nested_in(cx)
        .load_file(path)
        .map_err(|e| err(format!("sub-net `{shown}` is not a valid net:\n{e}")))?;
    let mut files = cx.files.clone();
    files.push(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
    let inner = BuildContext {
        base_dir: Some(crate::cm::folder_of(path)),
        allow_outside: cx.allow_outside,
        files,
        depth: cx.depth + 1,
        subnet_files: cx.subnet_files.clone(),
    };
    NetTemplate::from_net(net, inner, shown.to_owned()).map_err(err)
}
