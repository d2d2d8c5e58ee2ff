//! The net: operators and connections in declaration order, validated (SPEC §1).
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

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::connection::{ConnId, Connection, OpId, PortRef};
use crate::operator::{OpSpec, Operator, Params, TypeRef};
use crate::policy::Policy;
use crate::types::{Any, PortType, TypeInfo};

/// Execution mode (SPEC §4, §7).
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

/// Default bound on how many times one operator may fire in a run (SPEC §4.7).
pub const DEFAULT_MAX_LOOP_ITERATIONS: u32 = 10_000;

/// A net's `config:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Sequential or parallel.
    pub mode: Mode,
    /// How many times one operator may fire in a run before the run stops in `LOOP_LIMIT`.
    pub max_loop_iterations: u32,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            mode: Mode::Sequential,
            max_loop_iterations: DEFAULT_MAX_LOOP_ITERATIONS,
        }
    }
}

/// What a net knows about an operator instance besides the operator itself. An [`OpNode`]
/// dereferences to it, so `node.name` reads the instance name.
#[derive(Debug)]
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
}

/// An operator instance in a net: the operator and its [`OpMeta`] (reachable through `Deref`).
/// Kept small (two pointers) so the engine's hot loop walks a compact array.
pub struct OpNode {
    pub(crate) meta: Box<OpMeta>,
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
        &mut self.meta
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

    /// The net's configuration.
    pub fn config(&self) -> &NetConfig {
        &self.config
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
    /// position, params, port names) and connections with their types. Two nets with equal
    /// descriptions are the same net, whichever way they were built: declared port types are left
    /// out on purpose, since `Merge<DataJSON>` built in Rust and the `merge` a `.cm` file loads
    /// (type variables) carry the same data once connected.
    fn description(&self) -> impl PartialEq + '_ {
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
                    (&o.label, o.instance, o.pos, o.op.params()),
                    (names(&o.spec.inputs), names(&o.spec.outputs), &o.spec.emits),
                )
            })
            .collect();
        let conns: Vec<_> = self.conns.iter().map(|c| (&c.name, c.ty)).collect();
        (&self.name, self.config, ops, conns)
    }
}

impl PartialEq for Net {
    fn eq(&self, other: &Self) -> bool {
        self.description() == other.description()
    }
}

impl fmt::Debug for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Net")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("operators", &self.ops)
            .field(
                "connections",
                &self.conns.iter().map(|c| &c.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Validation problems

/// Where in a net a problem is (indices in declaration order), so a `.cm` loader can point at
/// the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The whole net.
    Net,
    /// An operator declaration.
    Operator(usize),
    /// A connection; `end` says which endpoint, if one.
    Connection {
        /// The connection's index.
        index: usize,
        /// The endpoint at fault, if one.
        end: Option<End>,
    },
}

/// An endpoint of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The `from` side.
    From,
    /// The `to` side.
    To,
}

/// The kinds of validation problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Two operators share a name.
    DuplicateOperator,
    /// An endpoint is not written `instance.port`.
    BadEndpoint,
    /// A connection names an operator the net does not have.
    UnknownOperator,
    /// A connection names a port the operator does not have.
    UnknownPort,
    /// An input used as a source or an output used as a target.
    WrongDirection,
    /// A required input has no connection.
    UnconnectedInput,
    /// An input has more than one connection.
    InputHasManyConnections,
    /// The two ends of a connection have different types.
    TypeMismatch,
    /// An operator without inputs feeds nothing, so its firing rule would hold forever.
    SourceFeedsNothing,
    /// An operator declares more than 64 inputs, or an emission set names no output.
    BadOperator,
}

/// One validation problem: what, where, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The kind of problem.
    pub kind: ProblemKind,
    /// Where it is.
    pub at: Location,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
    /// How to fix it, when there is something to say.
    pub hint: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// A net that failed validation, with every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct NetError {
    /// The problems, in the order of the declarations they concern.
    pub problems: Vec<Problem>,
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "invalid net: {one}"),
            many => {
                write!(f, "invalid net: {} problems", many.len())?;
                for p in many {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Builder

struct PendingOp {
    name: String,
    label: Option<String>,
    instance: Option<i64>,
    pos: Option<(f64, f64)>,
    op: Box<dyn Operator>,
}

struct PendingConn {
    from: String,
    to: String,
}

/// Builds a [`Net`]. Add operators and connections in any order that suits; [`build`](Self::build)
/// validates everything and reports every problem at once.
pub struct NetBuilder {
    name: String,
    config: NetConfig,
    ops: Vec<PendingOp>,
    conns: Vec<PendingConn>,
}

impl fmt::Debug for NetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetBuilder")
            .field("name", &self.name)
            .field("operators", &self.ops.len())
            .field("connections", &self.conns.len())
            .finish()
    }
}

/// Options of an operator just added to a [`NetBuilder`].
#[derive(Debug)]
pub struct OpOptions<'a>(&'a mut NetBuilder, usize);

impl OpOptions<'_> {
    /// Sets the layout position.
    pub fn at(self, x: f64, y: f64) -> Self {
        self.0.ops[self.1].pos = Some((x, y));
        self
    }

    /// Overrides the label.
    pub fn label(self, label: impl Into<String>) -> Self {
        self.0.ops[self.1].label = Some(label.into());
        self
    }

    /// Sets the `.cm` `instance:` number.
    pub fn instance(self, n: i64) -> Self {
        self.0.ops[self.1].instance = Some(n);
        self
    }
}

impl fmt::Debug for PendingOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl NetBuilder {
    /// A builder for a net named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        NetBuilder {
            name: name.into(),
            config: NetConfig::default(),
            ops: Vec::new(),
            conns: Vec::new(),
        }
    }

    /// Sets the configuration.
    pub fn config(&mut self, config: NetConfig) -> &mut Self {
        self.config = config;
        self
    }

    /// Adds an operator instance named `name`.
    pub fn add(&mut self, name: impl Into<String>, op: impl Operator) -> OpOptions<'_> {
        self.add_boxed(name, Box::new(op))
    }

    /// Adds a boxed operator instance named `name`.
    pub fn add_boxed(&mut self, name: impl Into<String>, op: Box<dyn Operator>) -> OpOptions<'_> {
        self.ops.push(PendingOp {
            name: name.into(),
            label: None,
            instance: None,
            pos: None,
            op,
        });
        let i = self.ops.len() - 1;
        OpOptions(self, i)
    }

    /// Connects output `from` to input `to`, both written `instance.port`.
    pub fn connect(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.conns.push(PendingConn {
            from: from.into(),
            to: to.into(),
        });
        self
    }

    /// Validates the net (SPEC §1) and builds it, or reports every problem found.
    pub fn build(self) -> Result<Net, NetError> {
        Validator::new(self).run()
    }
}

/// One endpoint after resolution.
#[derive(Clone, Copy)]
struct Resolved {
    op: usize,
    port: usize,
}

struct Validator {
    b: NetBuilder,
    specs: Vec<OpSpec>,
    problems: Vec<Problem>,
}

impl Validator {
    fn new(b: NetBuilder) -> Self {
        let specs = b.ops.iter().map(|o| o.op.spec()).collect();
        Validator {
            b,
            specs,
            problems: Vec::new(),
        }
    }

    fn problem(&mut self, kind: ProblemKind, at: Location, message: String, hint: Option<String>) {
        self.problems.push(Problem {
            kind,
            at,
            message,
            hint,
        });
    }

    fn run(mut self) -> Result<Net, NetError> {
        let by_name = self.check_names();
        self.check_operators();
        let resolved: Vec<Option<(Resolved, Resolved)>> = (0..self.b.conns.len())
            .map(|i| self.resolve_conn(i, &by_name))
            .collect();
        self.check_input_counts(&resolved);
        self.check_sources(&resolved);
        let types = self.infer_types(&resolved);
        if !self.problems.is_empty() {
            sort_problems(&mut self.problems);
            return Err(NetError {
                problems: self.problems,
            });
        }
        let (in_types, out_types) = types;
        let mut conns = Vec::with_capacity(resolved.len());
        for (i, r) in resolved.into_iter().enumerate() {
            let Some((from, to)) = r else { continue };
            let ty = out_types[from.op][from.port];
            let name = format!(
                "{}.{} -> {}.{}",
                self.b.ops[from.op].name,
                self.specs[from.op].outputs[from.port].name,
                self.b.ops[to.op].name,
                self.specs[to.op].inputs[to.port].name
            );
            debug_assert!(conns.len() == i);
            conns.push(Connection {
                from: PortRef {
                    op: OpId(from.op as u32),
                    port: from.port as u16,
                },
                to: PortRef {
                    op: OpId(to.op as u32),
                    port: to.port as u16,
                },
                ty,
                name,
            });
        }
        let ops = self
            .b
            .ops
            .into_iter()
            .zip(self.specs)
            .zip(in_types.into_iter().zip(out_types))
            .map(|((p, spec), (in_types, out_types))| OpNode {
                meta: Box::new(OpMeta {
                    name: p.name,
                    label: p.label,
                    instance: p.instance,
                    pos: p.pos,
                    spec,
                    in_types,
                    out_types,
                }),
                op: p.op,
            })
            .collect();
        Ok(Net {
            name: self.b.name,
            config: self.b.config,
            ops,
            conns,
        })
    }

    /// Rule: instance names are unique; a duplicate is reported at the second declaration.
    fn check_names(&mut self) -> HashMap<String, usize> {
        let mut by_name = HashMap::new();
        for i in 0..self.b.ops.len() {
            let name = self.b.ops[i].name.clone();
            if let Some(first) = by_name.get(&name) {
                self.problem(
                    ProblemKind::DuplicateOperator,
                    Location::Operator(i),
                    format!("duplicate operator name `{name}`"),
                    Some(format!(
                        "operator #{} already uses this name; give each instance its own name",
                        first + 1
                    )),
                );
            } else if name.is_empty() || name.contains(['.', ' ', '>']) {
                self.problem(
                    ProblemKind::BadEndpoint,
                    Location::Operator(i),
                    format!("invalid operator name `{name}`"),
                    Some("names are non-empty and contain no `.`, space or `>`".into()),
                );
                by_name.insert(name, i);
            } else {
                by_name.insert(name, i);
            }
        }
        by_name
    }

    /// Rule: an operator has at most 64 inputs, and its emission sets name real outputs.
    fn check_operators(&mut self) {
        for i in 0..self.specs.len() {
            let spec = &self.specs[i];
            if spec.inputs.len() > 64 {
                let msg = format!(
                    "operator `{}` has {} inputs; at most 64 are supported",
                    self.b.ops[i].name,
                    spec.inputs.len()
                );
                self.problem(ProblemKind::BadOperator, Location::Operator(i), msg, None);
            }
            let spec = &self.specs[i];
            let n_out = spec.outputs.len() as u16;
            if spec.emits.iter().flatten().any(|p| *p >= n_out) {
                let msg = format!(
                    "operator `{}` declares an emission set with an output it does not have",
                    self.b.ops[i].name
                );
                self.problem(ProblemKind::BadOperator, Location::Operator(i), msg, None);
            }
        }
    }

    /// Rule: each endpoint names an existing operator and a port of the right direction.
    fn resolve_conn(
        &mut self,
        i: usize,
        by_name: &HashMap<String, usize>,
    ) -> Option<(Resolved, Resolved)> {
        let from = self.resolve_end(i, End::From, by_name);
        let to = self.resolve_end(i, End::To, by_name);
        Some((from?, to?))
    }

    fn resolve_end(
        &mut self,
        i: usize,
        end: End,
        by_name: &HashMap<String, usize>,
    ) -> Option<Resolved> {
        let text = match end {
            End::From => self.b.conns[i].from.clone(),
            End::To => self.b.conns[i].to.clone(),
        };
        let at = Location::Connection {
            index: i,
            end: Some(end),
        };
        let Some((op_name, port_name)) = text.trim().split_once('.') else {
            self.problem(
                ProblemKind::BadEndpoint,
                at,
                format!("endpoint `{text}` is not written `instance.port`"),
                Some("write the operator's instance name, a dot, and the port name, e.g. `loader.out_data`".into()),
            );
            return None;
        };
        let Some(&op) = by_name.get(op_name) else {
            let names: Vec<&str> = self.b.ops.iter().map(|o| o.name.as_str()).collect();
            let hint = did_you_mean(op_name, names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
                .or_else(|| Some(format!("the net's operators are: {}", list(&names))));
            self.problem(
                ProblemKind::UnknownOperator,
                at,
                format!("unknown operator `{op_name}` in `{text}`"),
                hint,
            );
            return None;
        };
        let spec = &self.specs[op];
        let (own, other, own_dir, other_dir) = match end {
            End::From => (&spec.outputs, &spec.inputs, "output", "input"),
            End::To => (&spec.inputs, &spec.outputs, "input", "output"),
        };
        if let Some(port) = own.iter().position(|p| p.name == port_name) {
            return Some(Resolved { op, port });
        }
        let type_id = spec.type_id.clone();
        if other.iter().any(|p| p.name == port_name) {
            let (role, should) = match end {
                End::From => ("source", "a connection goes from an output to an input"),
                End::To => ("target", "a connection goes from an output to an input"),
            };
            let hint = if own.is_empty() {
                format!("{should}; `{op_name}` has no {own_dir}s")
            } else {
                let names: Vec<String> = own.iter().map(|p| p.name.to_string()).collect();
                format!("{should}; `{op_name}`'s {own_dir}s are: {}", list(&names))
            };
            self.problem(
                ProblemKind::WrongDirection,
                at,
                format!("`{op_name}.{port_name}` is an {other_dir}, used as a connection's {role}"),
                Some(hint),
            );
            return None;
        }
        let names: Vec<String> = own.iter().map(|p| p.name.to_string()).collect();
        let hint = did_you_mean(port_name, names.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`?"))
            .unwrap_or_else(|| {
                if names.is_empty() {
                    format!("`{op_name}` ({type_id}) has no {own_dir}s")
                } else {
                    format!("`{op_name}` ({type_id}) has {own_dir}s: {}", list(&names))
                }
            });
        self.problem(
            ProblemKind::UnknownPort,
            at,
            format!("operator `{op_name}` ({type_id}) has no {own_dir} `{port_name}`"),
            Some(hint),
        );
        None
    }

    /// Rule: every input has exactly one connection; an optional input may have none.
    fn check_input_counts(&mut self, resolved: &[Option<(Resolved, Resolved)>]) {
        let mut incoming: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (i, r) in resolved.iter().enumerate() {
            if let Some((_, to)) = r {
                incoming.entry((to.op, to.port)).or_default().push(i);
            }
        }
        for op in 0..self.specs.len() {
            for port in 0..self.specs[op].inputs.len() {
                let conns = incoming.get(&(op, port)).map_or(&[][..], Vec::as_slice);
                let pname = format!(
                    "{}.{}",
                    self.b.ops[op].name, self.specs[op].inputs[port].name
                );
                match conns {
                    [] if !self.specs[op].inputs[port].optional => self.problem(
                        ProblemKind::UnconnectedInput,
                        Location::Operator(op),
                        format!("input `{pname}` is not connected"),
                        Some(format!("connect an output to `{pname}`")),
                    ),
                    [] | [_] => {}
                    [_, rest @ ..] => {
                        for &c in rest {
                            self.problem(
                                ProblemKind::InputHasManyConnections,
                                Location::Connection {
                                    index: c,
                                    end: Some(End::To),
                                },
                                format!("input `{pname}` has {} connections", conns.len()),
                                Some(
                                    "an input takes exactly one connection; join them with a merge"
                                        .into(),
                                ),
                            );
                        }
                    }
                }
            }
        }
    }

    /// Rule: an operator with no inputs (a source) must feed something (SPEC §1).
    fn check_sources(&mut self, resolved: &[Option<(Resolved, Resolved)>]) {
        for op in 0..self.specs.len() {
            let spec = &self.specs[op];
            if !spec.inputs.is_empty() || spec.policy == Policy::Custom {
                continue;
            }
            let feeds = resolved.iter().flatten().any(|(from, _)| from.op == op);
            // A source whose outputs are all named in a broken connection was meant to feed
            // something: the broken connection is the problem to report.
            let mentioned = self.b.conns.iter().any(|c| {
                c.from
                    .split_once('.')
                    .is_some_and(|(o, _)| o == self.b.ops[op].name)
            });
            if !feeds && !mentioned {
                let name = &self.b.ops[op].name;
                let msg = format!("source `{name}` feeds nothing");
                let hint = Some(match spec.outputs.first() {
                    Some(p) => format!(
                        "connect `{name}.{}` to an input, or remove `{name}`",
                        p.name
                    ),
                    None => format!("remove `{name}`: it has neither inputs nor outputs"),
                });
                self.problem(
                    ProblemKind::SourceFeedsNothing,
                    Location::Operator(op),
                    msg,
                    hint,
                );
            }
        }
    }

    /// Rule: `type(a.out) == type(b.in)` or `b.in` is `Any`; structural type variables are
    /// unified across connections (SPEC §1). Returns the resolved types of every port.
    #[allow(clippy::type_complexity)] // two parallel tables, local to this function and `run`
    fn infer_types(
        &mut self,
        resolved: &[Option<(Resolved, Resolved)>],
    ) -> (Vec<Vec<&'static TypeInfo>>, Vec<Vec<&'static TypeInfo>>) {
        // One slot per (operator, type variable).
        let mut base = Vec::with_capacity(self.specs.len());
        let mut n_slots = 0usize;
        for spec in &self.specs {
            base.push(n_slots);
            let max_var = spec
                .inputs
                .iter()
                .chain(&spec.outputs)
                .filter_map(|p| match p.ty {
                    TypeRef::Var(v) => Some(v as usize + 1),
                    TypeRef::Is(_) => None,
                })
                .max()
                .unwrap_or(0);
            n_slots += max_var;
        }
        let mut uf = Unify::new(n_slots);
        let term = |op: usize, ty: TypeRef| match ty {
            TypeRef::Is(t) => Term::Is(t),
            TypeRef::Var(v) => Term::Slot(base[op] + v as usize),
        };
        for (i, r) in resolved.iter().enumerate() {
            let Some((from, to)) = *r else { continue };
            let tf = term(from.op, self.specs[from.op].outputs[from.port].ty);
            let tt = term(to.op, self.specs[to.op].inputs[to.port].ty);
            if let Term::Is(t) = tt
                && t.is_any()
            {
                continue; // an `Any` input accepts every type
            }
            if let Err((have, want, origin)) = uf.unify(tf, tt, i) {
                let (f, t) = (&self.b.conns[i].from, &self.b.conns[i].to);
                let mut msg =
                    format!("type mismatch: `{f}` gives {have}, but `{t}` expects {want}");
                if let Some(o) = origin
                    && o != i
                {
                    let oc = &self.b.conns[o];
                    msg.push_str(&format!(
                        " (the type was fixed by `{} -> {}`)",
                        oc.from, oc.to
                    ));
                }
                self.problem(
                    ProblemKind::TypeMismatch,
                    Location::Connection { index: i, end: None },
                    msg,
                    Some(format!(
                        "types must match exactly; convert with an explicit operator (e.g. `transform` gives a DataString) between {have} and {want}"
                    )),
                );
            }
        }
        let resolve = |op: usize, ty: TypeRef, uf: &mut Unify| match ty {
            TypeRef::Is(t) => t,
            TypeRef::Var(v) => uf.binding(base[op] + v as usize).unwrap_or(Any::INFO),
        };
        let mut ins = Vec::with_capacity(self.specs.len());
        let mut outs = Vec::with_capacity(self.specs.len());
        for (op, spec) in self.specs.iter().enumerate() {
            ins.push(
                spec.inputs
                    .iter()
                    .map(|p| resolve(op, p.ty, &mut uf))
                    .collect(),
            );
            outs.push(
                spec.outputs
                    .iter()
                    .map(|p| resolve(op, p.ty, &mut uf))
                    .collect(),
            );
        }
        (ins, outs)
    }
}

fn sort_problems(problems: &mut [Problem]) {
    // Declaration order: operators first, then connections, each by index; stable otherwise.
    problems.sort_by_key(|p| match p.at {
        Location::Net => (0, 0),
        Location::Operator(i) => (1, i),
        Location::Connection { index, .. } => (2, index),
    });
}

#[derive(Clone, Copy)]
enum Term {
    Is(&'static TypeInfo),
    Slot(usize),
}

/// Union-find over type variables, each root optionally bound to a type (with the connection
/// that bound it).
struct Unify {
    parent: Vec<usize>,
    bound: Vec<Option<(&'static TypeInfo, usize)>>,
}

type Mismatch = (&'static str, &'static str, Option<usize>);

impl Unify {
    fn new(n: usize) -> Self {
        Unify {
            parent: (0..n).collect(),
            bound: vec![None; n],
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn binding(&mut self, x: usize) -> Option<&'static TypeInfo> {
        let r = self.find(x);
        self.bound[r].map(|b| b.0)
    }

    fn bind(
        &mut self,
        slot: usize,
        t: &'static TypeInfo,
        conn: usize,
        slot_is_source: bool,
    ) -> Result<(), Mismatch> {
        let r = self.find(slot);
        match self.bound[r] {
            None => {
                self.bound[r] = Some((t, conn));
                Ok(())
            }
            Some((b, _)) if b == t => Ok(()),
            Some((b, origin)) => Err(if slot_is_source {
                (b.name, t.name, Some(origin))
            } else {
                (t.name, b.name, Some(origin))
            }),
        }
    }

    fn unify(&mut self, from: Term, to: Term, conn: usize) -> Result<(), Mismatch> {
        match (from, to) {
            (Term::Is(a), Term::Is(b)) if a == b => Ok(()),
            (Term::Is(a), Term::Is(b)) => Err((a.name, b.name, None)),
            (Term::Is(a), Term::Slot(s)) => self.bind(s, a, conn, false),
            (Term::Slot(s), Term::Is(b)) => self.bind(s, b, conn, true),
            (Term::Slot(a), Term::Slot(b)) => {
                let (ra, rb) = (self.find(a), self.find(b));
                if ra == rb {
                    return Ok(());
                }
                match (self.bound[ra], self.bound[rb]) {
                    (Some((ta, oa)), Some((tb, _))) if ta != tb => {
                        Err((ta.name, tb.name, Some(oa)))
                    }
                    (ba, bb) => {
                        self.parent[rb] = ra;
                        self.bound[ra] = ba.or(bb);
                        Ok(())
                    }
                }
            }
        }
    }
}

fn list<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate closest to `name`, if close enough to be a likely typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_finds_close_names_only() {
        assert_eq!(
            did_you_mean("out_dat", ["out_data", "in_data"]),
            Some("out_data")
        );
        assert_eq!(did_you_mean("zzz", ["out_data", "in_data"]), None);
    }
}
