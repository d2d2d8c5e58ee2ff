//! The net: operators and connections in declaration order, validated (docs/semantics.md §1).
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Sink, Source, Transform};
//!
//! let mut b = Net::builder("hello");
//! b.add("src", Source::new("hello"));
//! b.add("up", Transform::new());
//! b.add("out", Sink::new());
//! b.connect("src.out_data", "up.in_data");
//! b.connect("up.out_data", "out.in_data");
//! let net = b.build()?;
//! assert_eq!(net.connections().len(), 2);
//! # Ok::<(), cameleon::NetError>(())
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::connection::{ConnId, Connection, OpId, PortRef};
use crate::operator::{OpSettings, OpSpec, Operator, Params};
use crate::types::TypeInfo;

mod builder;
mod problem;
mod rules;
mod topo;
mod unify;
mod validate;

pub use builder::{NetBuilder, OpOptions};
pub use problem::{End, Location, NetError, Problem, ProblemKind};
pub(crate) use rules::{
    PortStates, back_pressure_ok_on, back_pressure_ok_with, evaluate, evaluate_cached, gather,
    rule_holds,
};
pub(crate) use topo::{NO_PORT, Topo};

/// Execution mode (docs/semantics.md §4, §7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One operator per step, the first enabled in declaration order.
    #[default]
    Sequential,
    /// Every enabled operator per step (maximal step).
    Parallel,
}

impl Mode {
    /// `sequential` or `parallel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Parallel => "parallel",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Default bound on how many times one operator may fire in a run (docs/semantics.md §4.7).
pub const DEFAULT_MAX_LOOP_ITERATIONS: u32 = 10_000;

/// A net's `config:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Sequential or parallel.
    pub mode: Mode,
    /// How many times one operator may fire in a run before the run stops in `LOOP_LIMIT`.
    pub max_loop_iterations: u32,
    /// What a run may spend on models before it stops in `BUDGET` (docs/semantics.md §4.7);
    /// applied by [`Runtime::pin`](crate::capabilities::Runtime::pin). The inner nets of a run
    /// share its budget: theirs is not applied.
    pub budget: crate::operator::capability::Budget,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            mode: Mode::Sequential,
            max_loop_iterations: DEFAULT_MAX_LOOP_ITERATIONS,
            budget: crate::operator::capability::Budget::NONE,
        }
    }
}

/// Which tools a net's operators may call through the tool gate: the `.cm` top-level key
/// `tools: {allow: […], approve: […]}` (docs/tools.md). A net without one may call no tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ToolPolicy {
    /// Tools that run when called.
    pub allow: Vec<String>,
    /// Tools that run once a person approves each call.
    pub approve: Vec<String>,
}

impl ToolPolicy {
    /// A policy allowing `tools`.
    pub fn allow<I, S>(tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ToolPolicy {
            allow: tools.into_iter().map(Into::into).collect(),
            approve: Vec::new(),
        }
    }

    /// The same policy, with `tools` needing approval.
    pub fn approve<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.approve = tools.into_iter().map(Into::into).collect();
        self
    }
}

/// Where an operator instance runs (`.cm` `placement:`): in this process, or on a satellite
/// when the run is connected to one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In the process running the net (the default).
    #[default]
    Local,
    /// On a satellite, when the run has one; in this process otherwise.
    Remote,
}

impl Placement {
    /// `local` or `remote`.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Local => "local",
            Placement::Remote => "remote",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What fires `placement: remote` instances elsewhere: given a net before its engine is built,
/// it replaces those instances by proxies (the `cameleon-nats` crate's `Remote` is one). A
/// run's capabilities carry it, as a [`Placing`]
/// ([`Capabilities::placement`](crate::operator::capability::Capabilities::placement)), so the
/// inner nets of `subnet` and `map`, instantiated at each firing, are placed too.
pub trait Placer: Send + Sync + fmt::Debug {
    /// Places the remote instances of `net`; returns how many.
    fn place(&self, net: &mut Net) -> usize;
}

/// A [`Placer`] as a run's capabilities carry it.
#[derive(Clone, Debug)]
pub struct Placing(pub std::sync::Arc<dyn Placer>);

impl Placing {
    /// The placer `caps` carries, if any.
    pub fn of(caps: &dyn crate::operator::capability::Capabilities) -> Option<&Placing> {
        caps.placement()?.downcast_ref::<Placing>()
    }
}

/// What a net knows about an operator instance besides the operator itself. An [`OpNode`]
/// dereferences to it, so `node.name` reads the instance name.
#[derive(Clone, Debug)]
pub struct OpMeta {
    /// Instance name, unique in the net (`chunk`).
    pub name: String,
    /// Label override (`.cm` `label:`); `None` means the catalogue label.
    pub label: Option<String>,
    /// `.cm` `instance:`, kept as written.
    pub instance: Option<i64>,
    /// Layout position.
    pub pos: Option<(f64, f64)>,
    /// What the operator is.
    pub spec: OpSpec,
    /// Resolved type of each input port.
    pub in_types: Vec<&'static TypeInfo>,
    /// Resolved type of each output port.
    pub out_types: Vec<&'static TypeInfo>,
    /// This instance's timeout and retries (`.cm` `timeout_ms:`, `retry:`); each field left
    /// unset falls back to the operator type's [`Operator::settings`]. See
    /// [`OpNode::effective_settings`].
    pub settings: OpSettings,
    /// Where the instance runs (`.cm` `placement:`).
    pub placement: Placement,
}

/// An operator instance in a net: the operator and its [`OpMeta`] (reachable through `Deref`).
/// Kept small (two pointers) so the engine's hot loop walks a compact array.
pub struct OpNode {
    /// Shared by the instances of a net ([`Net::instantiate`]); copied when one changes it.
    pub(crate) meta: std::sync::Arc<OpMeta>,
    pub(crate) op: Box<dyn Operator>,
}

impl std::ops::Deref for OpNode {
    type Target = OpMeta;
    fn deref(&self) -> &OpMeta {
        &self.meta
    }
}

impl std::ops::DerefMut for OpNode {
    fn deref_mut(&mut self) -> &mut OpMeta {
        std::sync::Arc::make_mut(&mut self.meta)
    }
}

impl OpNode {
    /// The operator itself.
    pub fn operator(&self) -> &dyn Operator {
        &*self.op
    }

    /// The operator as its concrete type.
    pub fn downcast_ref<T: Operator>(&self) -> Option<&T> {
        let op: &dyn std::any::Any = &*self.op;
        op.downcast_ref()
    }

    /// The parameters of the instance.
    pub fn params(&self) -> Params {
        self.op.params()
    }

    /// The label shown to users: the override, else the catalogue label.
    pub fn display_label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.spec.label)
    }

    /// The settings the engine applies: the instance's, completed by the operator type's.
    pub fn effective_settings(&self) -> OpSettings {
        self.settings.or(self.op.settings())
    }
}

impl fmt::Debug for OpNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpNode")
            .field("name", &self.name)
            .field("type", &self.spec.type_id)
            .field("params", &self.op.params())
            .finish_non_exhaustive()
    }
}

/// A validated net. Build one with [`Net::builder`], `pipeline!`, or `Net::from_cm`.
pub struct Net {
    pub(crate) name: String,
    pub(crate) config: NetConfig,
    pub(crate) ops: Vec<OpNode>,
    pub(crate) conns: Vec<Connection>,
    pub(crate) tools: Option<ToolPolicy>,
    pub(crate) description: Option<String>,
}

impl Net {
    /// Starts building a net named `name`.
    pub fn builder(name: impl Into<String>) -> NetBuilder {
        NetBuilder::new(name)
    }

    /// The net's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the net does (`.cm` `description:`), if it says.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Sets what the net does.
    pub fn set_description(&mut self, text: Option<String>) {
        self.description = text;
    }

    /// The net's configuration.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The tools its operators may call (`.cm` `tools:`); `None`: none.
    pub fn tool_policy(&self) -> Option<&ToolPolicy> {
        self.tools.as_ref()
    }

    /// Sets the tools its operators may call.
    pub fn set_tool_policy(&mut self, policy: Option<ToolPolicy>) {
        self.tools = policy;
    }

    /// Mutable configuration (mode, loop bound).
    pub fn config_mut(&mut self) -> &mut NetConfig {
        &mut self.config
    }

    /// Operators in declaration order.
    pub fn operators(&self) -> &[OpNode] {
        &self.ops
    }

    /// Connections in declaration order.
    pub fn connections(&self) -> &[Connection] {
        &self.conns
    }

    /// The operator named `name`.
    pub fn op_id(&self, name: &str) -> Option<OpId> {
        self.ops
            .iter()
            .position(|o| o.name == name)
            .map(|i| OpId(i as u32))
    }

    /// The operator at `id`.
    pub fn op(&self, id: OpId) -> &OpNode {
        &self.ops[id.index()]
    }

    /// Replaces the operator at `id` by `wrap(operator)` before an engine is built on the net —
    /// a proxy that fires it elsewhere (a satellite, docs/semantics.md §11). The instance's
    /// name, ports, resolved types, settings and placement stay as they are: the wrapper must
    /// keep the operator's spec. Out of range: nothing happens.
    pub fn wrap_operator(
        &mut self,
        id: OpId,
        wrap: impl FnOnce(Box<dyn Operator>) -> Box<dyn Operator>,
    ) {
        let Some(node) = self.ops.get_mut(id.index()) else {
            return;
        };
        let op = std::mem::replace(&mut node.op, Box::new(Vacant));
        node.op = wrap(op);
    }

    /// The connection named `a.out -> b.in` (spaces around the arrow optional).
    pub fn conn_id(&self, name: &str) -> Option<ConnId> {
        let (from, to) = name.split_once("->")?;
        let (from, to) = (from.trim(), to.trim());
        self.conns
            .iter()
            .position(|c| {
                let (f, t) = c.name.split_once(" -> ").unwrap_or_default();
                f == from && t == to
            })
            .map(|i| ConnId(i as u32))
    }

    /// A copy of this net whose operators `make` builds anew (the same names, types, ports and
    /// connections, already validated): how a sub-net gets a fresh instance for each run
    /// (docs/semantics.md §10.2).
    pub(crate) fn instantiate<E>(
        &self,
        mut make: impl FnMut(&OpNode) -> Result<Box<dyn Operator>, E>,
    ) -> Result<Net, E> {
        let mut ops = Vec::with_capacity(self.ops.len());
        for n in &self.ops {
            ops.push(OpNode {
                meta: std::sync::Arc::clone(&n.meta),
                op: make(n)?,
            });
        }
        Ok(Net {
            name: self.name.clone(),
            config: self.config,
            ops,
            conns: self.conns.clone(),
            tools: self.tools.clone(),
            description: self.description.clone(),
        })
    }

    /// `op.port` for an output port.
    pub fn output_name(&self, p: PortRef) -> String {
        let o = &self.ops[p.op.index()];
        format!("{}.{}", o.name, o.spec.outputs[p.port as usize].name)
    }

    /// `op.port` for an input port.
    pub fn input_name(&self, p: PortRef) -> String {
        let o = &self.ops[p.op.index()];
        format!("{}.{}", o.name, o.spec.inputs[p.port as usize].name)
    }

    /// A comparable description of the net: name, config, operators (name, type, label, instance,
    /// position, params, timeout and retries, port names) and connections with their types. Two
    /// nets with equal descriptions are the same net, whichever way they were built: declared port
    /// types are left out on purpose, since `Merge<DataJSON>` built in Rust and the `merge` a
    /// `.cm` file loads (type variables) carry the same data once connected.
    fn comparable(&self) -> impl PartialEq + '_ {
        let ops: Vec<_> = self
            .ops
            .iter()
            .map(|o| {
                let names = |ports: &'_ [crate::operator::PortSpec]| -> Vec<(String, bool)> {
                    ports
                        .iter()
                        .map(|p| (p.name.to_string(), p.optional))
                        .collect()
                };
                (
                    (
                        &o.name,
                        &o.spec.type_id,
                        &o.spec.label,
                        o.spec.family,
                        o.spec.policy,
                    ),
                    (
                        &o.label,
                        o.instance,
                        o.pos,
                        o.op.params(),
                        o.settings,
                        o.placement,
                    ),
                    (names(&o.spec.inputs), names(&o.spec.outputs), &o.spec.emits),
                )
            })
            .collect();
        let conns: Vec<_> = self.conns.iter().map(|c| (&c.name, c.ty)).collect();
        (&self.name, self.config, &self.tools, ops, conns)
    }
}

impl PartialEq for Net {
    fn eq(&self, other: &Self) -> bool {
        self.comparable() == other.comparable()
    }
}

impl fmt::Debug for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Net")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("tools", &self.tools)
            .field("operators", &self.ops)
            .field(
                "connections",
                &self.conns.iter().map(|c| &c.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// What stands in an [`OpNode`] for the instant [`Net::wrap_operator`] moves its operator out.
struct Vacant;

impl Operator for Vacant {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "vacant",
            "vacant",
            crate::policy::Family::Behavioral,
            crate::policy::Policy::Any,
        )
    }

    fn run(
        &mut self,
        _cx: &mut crate::operator::Firing<'_>,
    ) -> Result<(), crate::operator::OpError> {
        Err(crate::operator::OpError::new(
            "an operator being replaced fired",
        ))
    }
}
