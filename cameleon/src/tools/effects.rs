//! The side effects of an operator instance and of a whole net: its operator types' declared
//! [`OpEffects`], the tools it may call resolved against a registry and the net's `tools:`
//! policy (docs/tools.md#effects-and-grants).

use super::ToolRegistry;
use crate::net::{Net, OpNode, ToolPolicy};
use crate::operator::capability::{Effect, Named, OpEffects, capability_params, operator_effects};

/// The tools operator `node` may call: those its params name (`tool`'s `name`, `agent`'s
/// `tools`; an empty `tools` list offers every tool of `registry`), within `policy` (`allow` and
/// `approve`; no policy: none).
pub fn tools_called(
    node: &OpNode,
    policy: Option<&ToolPolicy>,
    registry: &ToolRegistry,
) -> Vec<String> {
    let Some(policy) = policy else {
        return Vec::new();
    };
    let type_id = node.spec.type_id.as_ref();
    let mut named: Option<Vec<String>> = node.op.calls_tool().map(|t| vec![t.to_owned()]);
    let params = node.op.params();
    for cp in capability_params().filter(|p| p.op_type == type_id && p.names == Named::Tool) {
        let listed: Vec<String> = match params.get(cp.param) {
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let listed = if listed.is_empty() {
            registry.names().map(str::to_owned).collect()
        } else {
            listed
        };
        named.get_or_insert_with(Vec::new).extend(listed);
    }
    let mut out: Vec<String> = named
        .unwrap_or_default()
        .into_iter()
        .filter(|t| policy.allow.contains(t) || policy.approve.contains(t))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The effects of operator `node`'s firings: its type's declared effects, or — for a type that
/// calls tools (`tool`, `agent`) — the union of the effects of the tools it may call
/// ([`tools_called`]); a tool `registry` does not have counts as `external`.
pub fn op_effects(node: &OpNode, policy: Option<&ToolPolicy>, registry: &ToolRegistry) -> Effect {
    match operator_effects(node.spec.type_id.as_ref()) {
        OpEffects::Fixed(e) => e,
        OpEffects::OfTools => tools_called(node, policy, registry)
            .iter()
            .map(|t| {
                registry
                    .get(t)
                    .map_or(Effect::External, |t| t.manifest().effects)
            })
            .max()
            .unwrap_or(Effect::None),
    }
}

/// The effects of a whole net: the union over its operators ([`op_effects`]), with the net's
/// own `tools:` policy. What a net offered as a tool declares.
pub fn net_effects(net: &Net, registry: &ToolRegistry) -> Effect {
    net.operators()
        .iter()
        .map(|n| op_effects(n, net.tool_policy(), registry))
        .max()
        .unwrap_or(Effect::None)
}
