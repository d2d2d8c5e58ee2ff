//! What the net produced, as the page shows it without hovering: every sink's values (the
//! Outputs panel) with the tokens the run used, and a look at one connection or operator (the
//! inspector) — for a model firing, its prompt, answer and tokens from the history. Every
//! value and text is cut at a bound, so a huge token costs the page a preview, not a copy.

use cameleon::connection::{ConnId, ConnState};
use cameleon::engine::Cvm;
use cameleon::ops::ai::ModelCall;

use super::{Session, not_a_net};
use crate::serve::error::{ApiError, ErrorKind};
use crate::serve::view::{
    CallView, CallsView, InspectView, MessageView, OperatorView, OutputsView, PortView, SinkView,
    TextView, UsageView, ValueView,
};

/// Most values shown per sink: its last ones.
const SINK_VALUES: usize = 20;
/// Most bytes shown of one message, passage or answer of a model call.
const TEXT_BYTES: usize = 8 * 1024;
/// Most messages and passages shown of one prompt: its last ones.
const PROMPT_PARTS: usize = 20;
/// Most search hits shown.
const HITS: usize = 20;

impl Session {
    /// `GET /api/outputs`.
    pub(crate) fn outputs(&self) -> OutputsView {
        let Some(cvm) = self.cvm.as_ref() else {
            return OutputsView {
                version: self.version,
                sinks: Vec::new(),
                usage: None,
            };
        };
        let sinks = cvm
            .net()
            .operators()
            .iter()
            .filter(|o| o.spec.outputs.is_empty())
            .map(|o| {
                let got = cvm.received(&o.name);
                let skip = got.len().saturating_sub(SINK_VALUES);
                SinkView {
                    op: o.name.clone(),
                    label: o.label.clone().unwrap_or_else(|| o.spec.label.to_string()),
                    count: got.len(),
                    values: got[skip..].iter().map(|v| ValueView::of(v)).collect(),
                }
            })
            .collect();
        let mut usage: Option<UsageView> = None;
        for (_, _, u) in crate::report::usage_of(cvm) {
            usage.get_or_insert_default().add(u);
        }
        OutputsView {
            version: self.version,
            sinks,
            usage,
        }
    }

    /// `GET /api/inspect`: connection `conn`, or operator `op`.
    pub(crate) fn inspect(
        &self,
        conn: Option<&str>,
        op: Option<&str>,
    ) -> Result<InspectView, ApiError> {
        let cvm = self.cvm.as_ref().ok_or_else(not_a_net)?;
        match (conn, op) {
            (Some(name), None) => {
                let i = cvm
                    .net()
                    .connections()
                    .iter()
                    .position(|c| c.name == name)
                    .ok_or_else(|| {
                        ApiError::new(
                            ErrorKind::NotFound,
                            format!("no connection `{name}` in the served net"),
                        )
                    })?;
                Ok(InspectView::Connection(port_view(cvm, i, None)))
            }
            (None, Some(name)) => {
                let id = cvm.net().op_id(name).ok_or_else(|| {
                    ApiError::new(
                        ErrorKind::NotFound,
                        format!("no operator `{name}` in the served net"),
                    )
                })?;
                Ok(InspectView::Operator(operator_view(cvm, id)))
            }
            _ => Err(ApiError::malformed(
                "malformed request: give `?conn=NAME` or `?op=NAME` (one of them)",
            )),
        }
    }
}

/// Connection `i` of the net, on port `port` of the inspected operator if any.
fn port_view(cvm: &Cvm, i: usize, port: Option<String>) -> PortView {
    let c = &cvm.net().connections()[i];
    let view = cvm.conn(ConnId(i as u32));
    PortView {
        conn: c.name.clone(),
        port,
        ty: c.ty.name,
        state: match view.state {
            ConnState::Empty => "EMPTY",
            ConnState::New => "NEW",
            ConnState::Old => "OLD",
        },
        value: view.value().map(ValueView::of),
    }
}

fn operator_view(cvm: &Cvm, id: cameleon::connection::OpId) -> OperatorView {
    let net = cvm.net();
    let node = net.op(id);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (i, c) in net.connections().iter().enumerate() {
        if c.to.op == id {
            let port = node.spec.inputs.get(c.to.port as usize);
            inputs.push(port_view(cvm, i, port.map(|p| p.name.to_string())));
        }
        if c.from.op == id {
            let port = node.spec.outputs.get(c.from.port as usize);
            outputs.push(port_view(cvm, i, port.map(|p| p.name.to_string())));
        }
    }
    OperatorView {
        op: node.name.clone(),
        ty: node.spec.type_id.to_string(),
        label: node
            .label
            .clone()
            .unwrap_or_else(|| node.spec.label.to_string()),
        inputs,
        outputs,
        fired: cvm.fire_count(id),
        last_call: last_call(cvm, id),
    }
}

/// What the last firing of `id` on the current path asked models and tools (`None`: it never
/// fired, or kept no such record).
fn last_call(cvm: &Cvm, id: cameleon::connection::OpId) -> Option<CallsView> {
    let history = cvm.history();
    let (step, firing) = history.entries().iter().rev().find_map(|e| {
        e.firings
            .iter()
            .position(|f| f.op == id)
            .map(|i| (e.step, i))
    })?;
    let log = cameleon::ops::ai::log_in(history.state_after(step, firing)?)?;
    let last = log.last()?;
    Some(CallsView {
        step,
        calls: last.calls.iter().map(call_view).collect(),
        usage: last.usage,
    })
}

fn call_view(c: &ModelCall) -> CallView {
    match c {
        ModelCall::Chat {
            model,
            kind,
            request,
            reply,
            quoted,
        } => CallView::Chat {
            model: model.clone(),
            kind: kind.clone(),
            quoted: *quoted,
            messages: last_of(&request.messages)
                .iter()
                .map(|m| MessageView {
                    role: serde_name(&m.role),
                    content: TextView::cut(&m.content, TEXT_BYTES),
                })
                .collect(),
            context: last_of(&request.context)
                .iter()
                .map(|p| TextView::cut(p, TEXT_BYTES))
                .collect(),
            answer: TextView::cut(&reply.text, TEXT_BYTES),
            tool_calls: reply.tool_calls.iter().map(|t| t.name.clone()).collect(),
            usage: reply.usage,
        },
        ModelCall::Embed {
            model,
            kind,
            texts,
            dim,
            usage,
        } => CallView::Embed {
            model: model.clone(),
            kind: kind.clone(),
            texts: *texts,
            dim: *dim,
            usage: *usage,
        },
        ModelCall::Search { memory, k, hits } => CallView::Search {
            memory: memory.clone(),
            k: *k,
            hits: hits.iter().take(HITS).cloned().collect(),
        },
        ModelCall::Tool { call, result } => CallView::Tool {
            tool: call.tool.clone(),
            args: TextView::json(&call.args, TEXT_BYTES),
            status: serde_name(&result.status),
            result: TextView::json(&result.content, TEXT_BYTES),
            ran: result.meta.run.as_ref().map(|r| {
                serde_json::json!({
                    "net": r["net"],
                    "end": r["end"]["end"],
                    "steps": r["steps"],
                    "firings": r["firings"],
                })
            }),
        },
    }
}

/// The last [`PROMPT_PARTS`] of `v`.
fn last_of<T>(v: &[T]) -> &[T] {
    &v[v.len().saturating_sub(PROMPT_PARTS)..]
}

/// A unit enum's serde name (`assistant`, `denied`).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
