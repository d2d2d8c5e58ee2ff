//! Declarations → operators built from the catalogue → a validated [`Net`]: operators whose
//! params are bad stand in as placeholders so the rest of the net is still checked, and the
//! net builder's problems are located in the file.

use std::collections::HashSet;

use super::Loader;
use super::decls::{LoadCx, parse_tree, read_decls};
use super::locate::{Mapping, endpoint_op, join};
use crate::catalogue::{BuildContext, BuildError};
use crate::cm::error::CmProblemKind;
use crate::cm::format::CmConfig;
use crate::cm::format::CmTools;
use crate::cm::tree::Node;
use crate::cm::tree::Span;
use crate::net::{End, Location, Net, NetConfig, ToolPolicy};
use crate::operator::{Firing, OpError, OpSpec, Operator};
use crate::tools::ToolRegistry;

impl<'c> Loader<'c> {
    pub(super) fn load_inner(&self, cx: &mut LoadCx<'_>) -> Option<Net> {
        let tree = parse_tree(cx)?;
        let src = cx.src;
        let decls = read_decls(cx, &tree, src)?;
        let build_cx = BuildContext {
            base_dir: self.base_dir.clone(),
            allow_outside: self.allow_outside,
            files: self.files.clone(),
            depth: self.depth,
            subnet_files: self.subnet_files.clone(),
        };

        let mut b = Net::builder(decls.name.clone().unwrap_or_default());
        b.config(net_config(decls.config.as_ref()));
        if let Some(d) = &decls.description {
            b.description(d.clone());
        }
        let tools = self.tool_registry();
        if let Some((node, t)) = &decls.tools {
            check_tool_policy(cx, node, t, tools, &|n: &str| self.may_have_tool(n));
            b.tools(ToolPolicy {
                allow: t.allow.clone(),
                approve: t.approve.clone(),
            });
        }

        // Operators. `ops[i]` is the declaration index of the builder's i-th operator.
        let mut ops: Vec<usize> = Vec::new();
        let mut placeholders: HashSet<usize> = HashSet::new();
        let mut failed: HashSet<String> = HashSet::new();
        for (i, (node, decl)) in decls.operators.iter().enumerate() {
            let Some(decl) = decl else {
                if let Some(id) = node.get("id").and_then(Node::as_str) {
                    failed.insert(id.to_owned());
                }
                continue;
            };
            let pos = match (decl.x, decl.y) {
                (Some(x), Some(y)) => Some((x, y)),
                (None, None) => None,
                (x, _) => {
                    let (have, missing) = if x.is_some() { ("x", "y") } else { ("y", "x") };
                    let span = node.entry(have).map_or(node.span, |(k, _)| k.span);
                    cx.push(
                        CmProblemKind::Schema,
                        span,
                        format!("operator `{}` has `{have}` but no `{missing}`", decl.id),
                        Some("give both `x` and `y`, or neither".to_owned()),
                    );
                    None
                }
            };
            let type_id = decl.type_.as_deref().unwrap_or(&decl.id);
            let type_node = node.get("type").or_else(|| node.get("id"));
            let params = decl.params.clone().unwrap_or_default();
            if self.catalogue.get(type_id).is_some_and(|e| e.id == "tool")
                && let Some(serde_json::Value::String(name)) = params.get("name")
                && !self.may_have_tool(name)
            {
                let span = node
                    .get("params")
                    .and_then(|p| p.get("name"))
                    .map_or(node.span, |n| n.span);
                cx.push(
                    CmProblemKind::UnknownTool,
                    span,
                    format!(
                        "operator `{}` calls tool `{name}`, which this build does not have",
                        decl.id
                    ),
                    Some(tool_hint(name, tools)),
                );
            }
            let op: Box<dyn Operator> = match self.catalogue.build(type_id, &params, &build_cx) {
                Ok(op) => op,
                Err(BuildError::UnknownType { id, suggestion }) => {
                    let hint = match suggestion {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "`cameleon catalogue` lists the operator types of this build; a satellite may host it: with `--nats URL`, an instance with `placement: remote` uses the types of the satellites there".to_owned(),
                    };
                    let mut msg = format!("unknown operator type `{id}`");
                    if decl.type_.is_none() {
                        msg.push_str(" (without `type:`, an operator's `id` is its type)");
                    }
                    cx.push(
                        CmProblemKind::UnknownType,
                        type_node.map_or(node.span, |n| n.span),
                        msg,
                        Some(hint),
                    );
                    failed.insert(decl.id.clone());
                    continue;
                }
                Err(BuildError::Param(e)) => {
                    let params_node = node.entry("params");
                    let span = match (&e.param, params_node) {
                        (Some(p), Some((_, pv))) => pv
                            .entry(p)
                            .map(|(k, v)| join(k.span, v.span))
                            .unwrap_or_else(|| params_node.map_or(node.span, |(k, _)| k.span)),
                        (_, Some((k, _))) => k.span,
                        (_, None) => type_node.map_or(node.span, |n| n.span),
                    };
                    cx.push(
                        CmProblemKind::Param,
                        span,
                        format!("`{}` ({type_id}): {}", decl.id, e.message),
                        e.hint.clone(),
                    );
                    // Stand in with the default instance's ports so connections are still checked.
                    let spec = self.catalogue.get(type_id).map(|entry| (entry.spec)());
                    match spec {
                        Some(spec) => {
                            placeholders.insert(ops.len());
                            Box::new(Placeholder(spec))
                        }
                        None => {
                            failed.insert(decl.id.clone());
                            continue;
                        }
                    }
                }
            };
            let mut o = b.add_boxed(decl.id.clone(), op);
            if let Some((x, y)) = pos {
                o = o.at(x, y);
            }
            if let Some(l) = &decl.label {
                o = o.label(l.clone());
            }
            if let Some(n) = decl.instance {
                o = o.instance(n);
            }
            match decl.timeout_ms {
                Some(0) => {
                    let span = node.entry("timeout_ms").map_or(node.span, |(_, v)| v.span);
                    cx.push(
                        CmProblemKind::Schema,
                        span,
                        format!(
                            "operator `{}` has `timeout_ms: 0`; no firing can finish in 0 ms",
                            decl.id
                        ),
                        Some("give a timeout of at least 1 ms, or remove `timeout_ms`".to_owned()),
                    );
                }
                Some(ms) => o = o.timeout_ms(ms),
                None => {}
            }
            if let Some(r) = decl.retry {
                o = o.retry(r.max, r.backoff_ms);
            }
            if let Some(p) = decl.placement {
                o.placement(p);
            }
            ops.push(i);
        }

        // Connections. `conns[i]` is the declaration index of the builder's i-th connection.
        let mut conns: Vec<usize> = Vec::new();
        for (i, (_, decl)) in decls.connections.iter().enumerate() {
            if let Some(c) = decl {
                b.connect(c.from.clone(), c.to.clone());
                conns.push(i);
            }
        }

        match b.build() {
            Ok(net) => Some(net),
            Err(e) => {
                // Operators with a connection meant for one of their inputs whose port is
                // wrong: "input not connected" would only repeat that problem.
                let broken_targets: HashSet<String> = e
                    .problems
                    .iter()
                    .filter_map(|p| match p.at {
                        Location::Connection {
                            index,
                            end: Some(End::To),
                        } => {
                            let (_, c) = decls.connections.get(*conns.get(index)?)?;
                            endpoint_op(&c.as_ref()?.to).map(str::to_owned)
                        }
                        _ => None,
                    })
                    .collect();
                let map = Mapping {
                    decls: &decls,
                    ops: &ops,
                    conns: &conns,
                    placeholders: &placeholders,
                    failed: &failed,
                    broken_targets: &broken_targets,
                };
                for p in e.problems {
                    if let Some(span) = map.locate(&p) {
                        cx.push(CmProblemKind::Net(p.kind), span, p.message, p.hint);
                    }
                }
                None
            }
        }
    }
}

/// "did you mean" for a tool name, or where to find the names.
fn tool_hint(name: &str, tools: &ToolRegistry) -> String {
    match crate::util::did_you_mean(name, tools.names()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => "`cameleon tools` lists the tools of this build; a satellite may host it: with `--nats URL` a run uses the tools of the satellites there (`cameleon satellites --nats URL` lists them)".to_owned(),
    }
}

/// Every name under `tools:` is a tool of the build, listed once.
fn check_tool_policy(
    cx: &mut LoadCx<'_>,
    node: &Node,
    t: &CmTools,
    tools: &ToolRegistry,
    may_have: &dyn Fn(&str) -> bool,
) {
    let mut seen: HashSet<&str> = HashSet::new();
    for (key, names) in [("allow", &t.allow), ("approve", &t.approve)] {
        let items: Vec<Span> = match node.get(key).map(|n| &n.kind) {
            Some(crate::cm::tree::Kind::Seq(items)) => items.iter().map(|i| i.span).collect(),
            _ => Vec::new(),
        };
        for (i, name) in names.iter().enumerate() {
            let span = items.get(i).copied().unwrap_or(node.span);
            if !may_have(name) {
                cx.push(
                    CmProblemKind::UnknownTool,
                    span,
                    format!("unknown tool `{name}` in `tools: {key}:`"),
                    Some(tool_hint(name, tools)),
                );
            } else if !seen.insert(name) {
                cx.push(
                    CmProblemKind::Schema,
                    span,
                    format!("tool `{name}` is listed twice under `tools:`"),
                    Some("list each tool once: under `allow:` to let it run, or under `approve:` to have a person approve each call".to_owned()),
                );
            }
        }
    }
}

fn net_config(c: Option<&CmConfig>) -> NetConfig {
    let mut config = NetConfig::default();
    if let Some(c) = c {
        if let Some(m) = c.mode {
            config.mode = m;
        }
        if let Some(n) = c.max_loop_iterations {
            config.max_loop_iterations = n;
        }
        if let Some(b) = c.budget {
            config.budget = crate::operator::capability::Budget {
                tokens: b.tokens,
                cost_usd: b.cost_usd.map(crate::operator::capability::Usd),
            };
        }
    }
    config
}

/// An operator whose params are bad, standing in with the default instance's ports so the
/// rest of the net is still checked. It is never run: a net holding one is not returned.
struct Placeholder(OpSpec);

impl Operator for Placeholder {
    fn spec(&self) -> OpSpec {
        self.0.clone()
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new("this operator's params are invalid"))
    }
}
