//! `subnet`: an operator whose firing runs an inner net to its end (docs/semantics.md §10.2).

use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::runs::{FiringRuns, Runs};
use super::template::{InnerNet, NetTemplate, load};
use crate::catalogue::{BuildContext, CatalogueEntry, ParamError, ParamInfo, ParamReader};
use crate::dsl::{HasPorts, InputDecl};
use crate::net::Net;
use crate::operator::{Execution, Firing, OpError, OpSettings, OpSpec, OpState, Operator, Params};
use crate::policy::{Family, Policy};
use crate::types::{TypeInfo, Value};

/// The boundary of a sub-net built without compile-time ports ([`Subnet`]'s default): its
/// ports are known once its inner net is loaded, so `pipeline!` cannot connect it.
#[derive(Debug)]
pub enum Dynamic {}

/// A sub-net boundary declared in Rust, so that `pipeline!` type-checks a [`Subnet`]'s
/// connections at compile time. Declare one with [`boundary!`](crate::boundary).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a sub-net boundary declared with `boundary!`, so `pipeline!` does not know this sub-net's ports",
    label = "a sub-net whose ports are only known once its file is loaded",
    note = "declare the ports with `cameleon::boundary! {{ pub struct MyNet {{ inputs {{ in_x: DataString }} outputs {{ out_y: DataJSON }} }} }}` and build the sub-net with `Subnet::<MyNet>::load_typed(file)` or `Subnet::<MyNet>::typed(net)`; or add it with `Net::builder()`"
)]
pub trait Boundary: 'static {
    /// The port handles, one field per port (`in_text`, `out_summary`).
    type Ports;
    /// The handles.
    fn ports() -> Self::Ports;
    /// Every input port, in order.
    const INPUTS: &'static [InputDecl];
    /// Every port's name and data type: inputs (`in_NAME`), then outputs (`out_NAME`).
    fn declared() -> Vec<(&'static str, &'static TypeInfo)>;
    /// The name of the boundary type, for messages.
    const NAME: &'static str;
}

/// A sub-net (docs/semantics.md §10.2): its ports are the inner net's boundary — `in_NAME` per
/// `input`, `out_NAME` per `output` — typed from the inner connections.
///
/// A firing runs a fresh instance of the inner net, on the values of its inputs, to its end:
/// COMPLETED, and each `output` that received a value passes it out on its `out_NAME`; any
/// other end (DEADLOCK, ERROR, a limit) fails the firing, saying why. Every run is kept
/// ([`runs`](Self::runs)): `back` rewinds it with the firing, a replay replays it, and
/// neither runs an inner operator. A sub-net may include itself (recursion) when it has a
/// `max_depth`; a firing nested deeper fails.
///
/// `B` is the boundary known at compile time: [`Dynamic`] (none; what a `.cm` file builds) or a
/// type declared with [`boundary!`](crate::boundary), which gives `pipeline!` typed ports.
///
/// ```
/// use cameleon::ops::{Const, Sink, Subnet};
/// use cameleon::prelude::*;
///
/// // The inner net: `x` in, `x` out, through a counter (adds one).
/// let inner = Net::from_cm("
/// operators:
///   - {id: x, type: input, params: {name: x}}
///   - {id: inc, type: counter}
///   - {id: y, type: output, params: {name: y}}
/// connections:
///   - {from: x.out_data, to: inc.in_data}
///   - {from: inc.out_data, to: y.in_data}
/// ")?;
/// let mut b = Net::builder("outer");
/// b.add("n", Const::new(serde_json::json!(41)));
/// b.add("sub", Subnet::new(inner)?);
/// b.add("out", Sink::new());
/// b.connect("n.out_data", "sub.in_x").connect("sub.out_y", "out.in_data");
/// let mut cvm = Cvm::new(b.build()?);
/// assert_eq!(cvm.run()?, EndState::Completed);
/// assert_eq!(cvm.received("out")[0].to_json(), 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Subnet<B: ?Sized = Dynamic> {
    /// The `net` param as written (a file), if any.
    param: Option<String>,
    max_depth: Option<u32>,
    /// How deep this operator is nested: 1 in a top net.
    level: u32,
    source: Arc<InnerNet>,
    runs: Runs,
    _boundary: PhantomData<fn() -> B>,
}

impl<B: ?Sized> fmt::Debug for Subnet<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subnet")
            .field("net", &self.source.shown())
            .field("max_depth", &self.max_depth)
            .field("level", &self.level)
            .field("runs", &self.runs)
            .finish()
    }
}

/// Why a sub-net could not be built in code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SubnetError(pub String);

impl From<ParamError> for SubnetError {
    fn from(e: ParamError) -> Self {
        SubnetError(match e.hint {
            Some(h) => format!("{} ({h})", e.message),
            None => e.message,
        })
    }
}

impl Subnet<Dynamic> {
    /// A sub-net running `net`, built in code. Its operators are built anew for each run, from
    /// the catalogue (or their [`Operator::fresh`]): every one must be in it. It has no file, so
    /// a net holding it writes no `net` param to `.cm` ([`load`](Self::load) does).
    pub fn new(net: Net) -> Result<Self, SubnetError> {
        Subnet::from_net(net)
    }

    /// A sub-net running the `.cm` file at `path` (relative to the current directory).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SubnetError> {
        Subnet::from_file(path.as_ref())
    }
}

impl<B: ?Sized> Subnet<B> {
    fn from_net(net: Net) -> Result<Self, SubnetError> {
        let shown = net.name().to_owned();
        let t = NetTemplate::from_net(net, BuildContext::default(), shown).map_err(SubnetError)?;
        Ok(Subnet::with(None, None, 1, InnerNet::Ready(Arc::new(t))))
    }

    fn from_file(path: &Path) -> Result<Self, SubnetError> {
        // Code is trusted with its paths: relative to the current directory, anywhere.
        let cx = BuildContext {
            allow_outside: true,
            ..BuildContext::default()
        };
        let param = path.display().to_string();
        let source = load(&param, &cx, None)?;
        Ok(Subnet::with(Some(param), None, 1, source))
    }

    fn with(param: Option<String>, max_depth: Option<u32>, level: u32, source: InnerNet) -> Self {
        Subnet {
            param,
            max_depth,
            level,
            source: Arc::new(source),
            runs: Runs::default(),
            _boundary: PhantomData,
        }
    }

    /// Lets the sub-net include itself, nested at most `n` deep (docs/semantics.md §10.2).
    pub fn max_depth(mut self, n: u32) -> Self {
        self.max_depth = Some(n);
        self
    }

    /// The inner runs so far, one run per firing along the current history, first first.
    pub fn runs(&self) -> Vec<FiringRuns> {
        self.runs.by_firing()
    }

    /// The inner net's name as messages show it: the `net` param, or the net's name.
    pub fn shown(&self) -> &str {
        self.source.shown()
    }
}

impl<B: Boundary + ?Sized> Subnet<B> {
    /// A sub-net running `net` whose boundary must be `B` (every port of `B`, with its type,
    /// and no other), so that `pipeline!` checks its connections at compile time.
    pub fn typed(net: Net) -> Result<Self, SubnetError> {
        let s = Subnet::from_net(net)?;
        s.check_boundary()?;
        Ok(s)
    }

    /// A sub-net running the `.cm` file at `path`, whose boundary must be `B` (see
    /// [`typed`](Self::typed)).
    pub fn load_typed(path: impl AsRef<Path>) -> Result<Self, SubnetError> {
        let s = Subnet::from_file(path.as_ref())?;
        s.check_boundary()?;
        Ok(s)
    }

    /// Rule: the inner boundary is `B`'s, port for port and type for type (an inner `Any`
    /// input accepts the declared type).
    fn check_boundary(&self) -> Result<(), SubnetError> {
        let b = self.source.boundary();
        let spec = b.spec("subnet", "Sub-net");
        let have: Vec<(&str, &'static TypeInfo, Option<&str>, bool)> = spec
            .inputs
            .iter()
            .map(|p| (p, true))
            .chain(spec.outputs.iter().map(|p| (p, false)))
            .map(|(p, input)| {
                let ty = match p.ty {
                    crate::operator::TypeRef::Is(t) => t,
                    crate::operator::TypeRef::Var(_) => {
                        <crate::types::Any as crate::types::PortType>::INFO
                    }
                };
                (p.name.as_ref(), ty, p.origin.as_deref(), input)
            })
            .collect();
        let declared = B::declared();
        let shown = self.shown();
        let name = B::NAME;
        for &(port, ty) in &declared {
            match have.iter().find(|h| h.0 == port) {
                None => {
                    return Err(SubnetError(format!(
                        "sub-net `{shown}` has no port `{port}`, which boundary `{name}` declares"
                    )));
                }
                Some(&(_, inner, origin, input)) => {
                    let ok = inner == ty || (input && inner.is_any());
                    if !ok {
                        return Err(SubnetError(format!(
                            "sub-net `{shown}`: `{port}` is {inner} but boundary `{name}` declares {ty} ({})",
                            origin.unwrap_or("typed by the inner net")
                        )));
                    }
                }
            }
        }
        if let Some(extra) = have.iter().find(|h| !declared.iter().any(|d| d.0 == h.0)) {
            return Err(SubnetError(format!(
                "sub-net `{shown}` has a port `{}` that boundary `{name}` does not declare",
                extra.0
            )));
        }
        Ok(())
    }
}

impl<B: ?Sized + 'static> Operator for Subnet<B> {
    fn spec(&self) -> OpSpec {
        let mut spec = self.source.boundary().spec("subnet", "Sub-net");
        spec.emits = self.source.emits();
        spec
    }

    fn params(&self) -> Params {
        let mut p = Params::new();
        if let Some(net) = &self.param {
            p.insert("net".into(), json!(net));
        }
        if let Some(d) = self.max_depth {
            p.insert("max_depth".into(), json!(d));
        }
        p
    }

    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        if let Some(max) = self.max_depth
            && self.level > max
        {
            return Err(OpError::new(format!(
                "sub-net `{}` is nested {} deep, deeper than its max_depth of {max}: the recursion did not end",
                self.shown(),
                self.level
            )));
        }
        let t = self.source.template()?;
        let names: Vec<String> = self
            .source
            .boundary()
            .inputs
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let mut values: Vec<(usize, Value)> = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let k = t
                .boundary
                .inputs
                .iter()
                .position(|s| s.name == *name)
                .ok_or_else(|| {
                    OpError::new(format!("sub-net `{}` has no input `{name}`", t.shown))
                })?;
            let v = cx
                .value_at(i)
                .cloned()
                .ok_or_else(|| OpError::new(format!("input `in_{name}` has no value")))?;
            values.push((k, v));
        }
        let mut cvm = t.start(&values, &cx.capabilities_shared())?;
        let end = cvm
            .run()
            .map_err(|e| OpError::new(format!("sub-net `{}`: {e}", t.shown)))?;
        if let Some(why) = t.failure(&end) {
            return Err(OpError::new(why));
        }
        let outs = t.outputs(&cvm)?;
        let mine: Vec<String> = self
            .source
            .boundary()
            .outputs
            .iter()
            .map(|s| s.name.clone())
            .collect();
        for (port, name) in mine.iter().enumerate() {
            let k = t.boundary.outputs.iter().position(|s| s.name == *name);
            if let Some(Some(v)) = k.map(|k| &outs[k]) {
                cx.emit_at(port, v.clone());
            }
        }
        self.runs = self.runs.push(vec![Arc::new(t.finish(cvm, end, None))]);
        Ok(())
    }

    fn execution(&self) -> Execution {
        Execution::Blocking
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
        let source = &self.source;
        self.runs.replay(after, || {
            source.template().ok().and_then(|t| t.instantiate().ok())
        });
    }

    fn fresh(&self) -> Option<Box<dyn Operator>> {
        Some(Box::new(Subnet::<B> {
            param: self.param.clone(),
            max_depth: self.max_depth,
            level: self.level,
            source: Arc::clone(&self.source),
            runs: Runs::default(),
            _boundary: PhantomData,
        }))
    }
}

impl<B: Boundary + ?Sized> HasPorts for Subnet<B> {
    type Ports = B::Ports;
    fn ports() -> B::Ports {
        B::ports()
    }
    const INPUTS: &'static [InputDecl] = B::INPUTS;
    const POLICY: Policy = Policy::All;
}

// ---------------------------------------------------------------------------------------------
// The catalogue entry

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "net",
        ty: "string",
        default: None,
        doc: "the inner net's .cm file, relative to this file's folder",
    },
    ParamInfo {
        name: "max_depth",
        ty: "u32 or null",
        default: Some("null"),
        doc: "how deep a sub-net that includes itself may nest (required for recursion; at most 32)",
    },
];

/// The ceiling of a `.cm` sub-net's `max_depth` (docs/semantics.md §10.2).
pub const MAX_DEPTH: u32 = 32;

fn build(params: &Params, cx: &BuildContext) -> Result<Box<dyn Operator>, ParamError> {
    let r = ParamReader::new(params, PARAMS)?;
    let net: String = r.read("net")?;
    let max_depth: Option<u32> = r.read("max_depth")?;
    if max_depth == Some(0) {
        return Err(ParamError::new(
            "max_depth".to_owned(),
            "`max_depth: 0` lets the sub-net run nowhere",
        )
        .with_hint("give how many levels the recursion may nest, at least 1"));
    }
    if let Some(d) = max_depth
        && d > MAX_DEPTH
    {
        return Err(ParamError::new(
            "max_depth".to_owned(),
            format!("`max_depth: {d}` is over the ceiling of {MAX_DEPTH} levels"),
        )
        .with_hint(format!(
            "each level runs a net inside a firing: give at most {MAX_DEPTH}"
        )));
    }
    let source = load(&net, cx, max_depth)?;
    Ok(Box::new(Subnet::<Dynamic>::with(
        Some(net),
        max_depth,
        cx.depth + 1,
        source,
    )))
}

fn catalogue_spec() -> OpSpec {
    OpSpec::new("subnet", "Sub-net", Family::Behavioral, Policy::All)
}

crate::submit_operator!(CatalogueEntry {
    id: "subnet",
    aliases: &[],
    label: "Sub-net",
    family: Family::Behavioral,
    policy: Policy::All,
    doc: "Runs the net of file `net` to its end on each firing: its ports are `in_NAME` per `input` and `out_NAME` per `output` of that net, typed from its connections.\n\nA firing that ends otherwise than COMPLETED fails. The inner runs are kept: `back` undoes them, replay never runs them again. A net that includes itself needs `max_depth`.",
    params: PARAMS,
    // Its ports come from the file's `input`/`output` operators, documented there.
    ports: &[],
    spec: catalogue_spec,
    build,
    execution: Execution::Blocking,
    settings: OpSettings::NONE,
});
