//! Validation (docs/semantics.md §1): names, ports, one connection per input, sources, types.

use std::collections::HashMap;

use crate::connection::{Connection, OpId, PortRef};
use crate::operator::{Cancels, OpSpec, Region, TypeRef};
use crate::policy::Policy;
use crate::types::{Any, PortType, TypeInfo};
use crate::util::did_you_mean;

use super::builder::NetBuilder;
use super::problem::{End, Location, NetError, Problem, ProblemKind};
use super::unify::{Term, Unify};
use super::{Net, OpMeta, OpNode};

/// One endpoint after resolution.
#[derive(Clone, Copy)]
pub(super) struct Resolved {
    pub(super) op: usize,
    pub(super) port: usize,
}

pub(super) struct Validator {
    pub(super) b: NetBuilder,
    pub(super) specs: Vec<OpSpec>,
    pub(super) problems: Vec<Problem>,
}

impl Validator {
    pub(super) fn new(b: NetBuilder) -> Self {
        let specs = b.ops.iter().map(|o| o.op.spec()).collect();
        Validator {
            b,
            specs,
            problems: Vec::new(),
        }
    }

    pub(super) fn problem(
        &mut self,
        kind: ProblemKind,
        at: Location,
        message: String,
        hint: Option<String>,
    ) {
        self.problems.push(Problem {
            kind,
            at,
            message,
            hint,
        });
    }

    pub(super) fn run(mut self) -> Result<Net, NetError> {
        let by_name = self.check_names();
        self.check_operators();
        self.check_regions(&by_name);
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
                meta: std::sync::Arc::new(OpMeta {
                    name: p.name,
                    label: p.label,
                    instance: p.instance,
                    pos: p.pos,
                    spec,
                    in_types,
                    out_types,
                    settings: p.settings,
                    placement: p.placement,
                }),
                op: p.op,
            })
            .collect();
        Ok(Net {
            name: self.b.name,
            config: self.b.config,
            ops,
            conns,
            tools: self.b.tools,
            description: self.b.description,
        })
    }

    /// Rule: instance names are unique; a duplicate is reported at the second declaration.
    pub(super) fn check_names(&mut self) -> HashMap<String, usize> {
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

    /// Rule: an operator has at most 64 inputs, its emission sets name real outputs, and its
    /// timeout (if any) is at least 1 ms.
    pub(super) fn check_operators(&mut self) {
        for i in 0..self.specs.len() {
            let settings = self.b.ops[i].settings.or(self.b.ops[i].op.settings());
            if settings.timeout_ms == Some(0) {
                let msg = format!(
                    "operator `{}` has `timeout_ms: 0`; no firing can finish in 0 ms",
                    self.b.ops[i].name
                );
                let hint = Some("give a timeout of at least 1 ms, or remove `timeout_ms`".into());
                self.problem(ProblemKind::BadOperator, Location::Operator(i), msg, hint);
            }
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

    /// Rule: a cancellation region (docs/semantics.md §10.4) names operators of the net, none
    /// of which declares a finite control state: a cancellation withdraws tokens, it does not
    /// reset an operator's internal state, so such an operator would be left half-way.
    pub(super) fn check_regions(&mut self, by_name: &HashMap<String, usize>) {
        for i in 0..self.specs.len() {
            let Some(Cancels {
                region: Region::Ops(names),
                ..
            }) = self.specs[i].cancels.clone()
            else {
                continue;
            };
            let me = self.b.ops[i].name.clone();
            for name in names {
                let Some(&r) = by_name.get(&name) else {
                    let all: Vec<&str> = self.b.ops.iter().map(|o| o.name.as_str()).collect();
                    let hint = did_you_mean(&name, all.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"))
                        .or_else(|| Some(format!("the net's operators are: {}", list(&all))));
                    self.problem(
                        ProblemKind::BadOperator,
                        Location::Operator(i),
                        format!("`{me}` cancels `{name}`, which the net does not have"),
                        hint,
                    );
                    continue;
                };
                if r != i && self.b.ops[r].op.control().is_some() {
                    let ty = self.specs[r].type_id.clone();
                    self.problem(
                        ProblemKind::BadOperator,
                        Location::Operator(i),
                        format!(
                            "`{me}` cancels `{name}` ({ty}), which keeps a control state that a cancellation does not reset"
                        ),
                        Some(format!(
                            "leave `{name}` out of the region: a cancellation withdraws tokens (NEW → OLD) and would leave `{name}` half-way"
                        )),
                    );
                }
            }
        }
    }

    /// Rule: each endpoint names an existing operator and a port of the right direction.
    pub(super) fn resolve_conn(
        &mut self,
        i: usize,
        by_name: &HashMap<String, usize>,
    ) -> Option<(Resolved, Resolved)> {
        let from = self.resolve_end(i, End::From, by_name);
        let to = self.resolve_end(i, End::To, by_name);
        Some((from?, to?))
    }

    pub(super) fn resolve_end(
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
    pub(super) fn check_input_counts(&mut self, resolved: &[Option<(Resolved, Resolved)>]) {
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

    /// Rule: an operator with no inputs (a source) must feed something (docs/semantics.md §1).
    pub(super) fn check_sources(&mut self, resolved: &[Option<(Resolved, Resolved)>]) {
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
    /// unified across connections (docs/semantics.md §1). Returns the resolved types of every port.
    #[allow(clippy::type_complexity)] // two parallel tables, local to this function and `run`
    pub(super) fn infer_types(
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
                // A port typed by something else than its operator type (a sub-net's port,
                // typed by the inner net) says where its type comes from.
                for origin in [
                    &self.specs[from.op].outputs[from.port].origin,
                    &self.specs[to.op].inputs[to.port].origin,
                ]
                .into_iter()
                .flatten()
                {
                    msg.push_str(&format!("; {origin}"));
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

pub(super) fn sort_problems(problems: &mut [Problem]) {
    // Declaration order: operators first, then connections, each by index; stable otherwise.
    problems.sort_by_key(|p| match p.at {
        Location::Net => (0, 0),
        Location::Operator(i) => (1, i),
        Location::Connection { index, .. } => (2, index),
    });
}

pub(super) fn list<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}
