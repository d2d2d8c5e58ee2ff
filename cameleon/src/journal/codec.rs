//! An entry's `body`: its firings as JSON, written from a committed step and read back into a
//! [`RecordedStep`].

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::connection::{ConnId, OpId};
use crate::engine::{Committed, RecordError, RecordedFiring, RecordedStep};
use crate::net::Net;
use crate::types::{Value, type_by_name};

/// One firing, as stored.
#[derive(Serialize, Deserialize)]
pub(super) struct FiringBody {
    /// The operator's index in the net.
    pub(super) op: u32,
    /// Connections consumed.
    #[serde(default)]
    pub(super) consumed: Vec<u32>,
    /// Connections written: `[conn, prior token or null, new token]`.
    #[serde(default)]
    pub(super) written: Vec<(u32, Option<u32>, u32)>,
    /// Tokens emitted, in emission order.
    #[serde(default)]
    pub(super) tokens: Vec<TokenBody>,
    /// State before, if the operator has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) before: Option<Json>,
    /// State after, if the operator has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) after: Option<Json>,
}

/// One token, as stored: its data type's name and its serde form.
#[derive(Serialize, Deserialize)]
pub(super) struct TokenBody {
    #[serde(rename = "type")]
    pub(super) ty: String,
    pub(super) value: Json,
}

/// The stored form of an entry.
#[derive(Serialize, Deserialize)]
pub(super) struct Body {
    pub(super) firings: Vec<FiringBody>,
}

/// What a row of `entries` holds, ready to insert.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) node: u32,
    pub(super) parent: Option<u32>,
    pub(super) step: u32,
    pub(super) branch: u32,
    pub(super) ops: String,
    pub(super) body: String,
}

/// Encodes a committed step. A value or a state that serde cannot write is an error naming the
/// operator, the output and the type — never a `null` in the journal.
pub(super) fn encode(c: &Committed<'_>) -> Result<Row, RecordError> {
    let mut firings = Vec::new();
    let mut ops = Vec::new();
    for f in c.firings() {
        let name = f.op_name();
        ops.push(name);
        let mut tokens = Vec::new();
        for (_, t) in f.tokens() {
            let value = t.value.try_to_json().map_err(|e| {
                RecordError(format!(
                    "`{name}` emitted a {} that cannot be written as JSON: {e}",
                    t.type_name()
                ))
            })?;
            tokens.push(TokenBody {
                ty: t.type_name().to_owned(),
                value,
            });
        }
        let state = |s: Option<&crate::operator::OpState>| -> Result<Option<Json>, RecordError> {
            s.map(|s| {
                s.to_json().map_err(|e| {
                    RecordError(format!(
                        "the internal state of `{name}` cannot be written to the journal: {e}"
                    ))
                })
            })
            .transpose()
        };
        firings.push(FiringBody {
            op: f.op().0,
            consumed: f.consumed().map(|c| c.0).collect(),
            written: f.written().map(|(c, p, n)| (c.0, p, n)).collect(),
            tokens,
            before: state(f.before())?,
            after: state(f.after())?,
        });
    }
    let body = serde_json::to_string(&Body { firings })
        .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
    let ops = serde_json::to_string(&ops)
        .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
    Ok(Row {
        node: c.node(),
        parent: c.parent(),
        step: c.step(),
        branch: c.branch(),
        ops,
        body,
    })
}

/// Decodes an entry's body for `net`: values through their data type's serde form, states
/// through the operator's own (the operator as built lends its state's type).
pub(super) fn decode(net: &Net, parent: Option<u32>, body: &str) -> Result<RecordedStep, String> {
    let body: Body = serde_json::from_str(body).map_err(|e| format!("unreadable entry: {e}"))?;
    let mut firings = Vec::with_capacity(body.firings.len());
    for f in body.firings {
        let node = net
            .operators()
            .get(f.op as usize)
            .ok_or_else(|| format!("operator #{} does not exist in the stored net", f.op))?;
        let name = &node.name;
        let mut tokens = Vec::with_capacity(f.tokens.len());
        for t in f.tokens {
            let ty = type_by_name(&t.ty).ok_or_else(|| {
                format!(
                    "`{name}` emitted a value of type `{}`, which this program does not declare (link the crate that declares it)",
                    t.ty
                )
            })?;
            let v: Value = (ty.from_json)(t.value)
                .map_err(|e| format!("a {} emitted by `{name}` cannot be read back: {e}", t.ty))?;
            tokens.push(v);
        }
        let state = |s: Option<Json>| -> Result<Option<crate::operator::OpState>, String> {
            let Some(json) = s else {
                return Ok(None);
            };
            let model = node.op.save_state().ok_or_else(|| {
                format!("`{name}` has a recorded internal state, but its operator type has none")
            })?;
            model
                .from_json_like(json)
                .map(Some)
                .map_err(|e| format!("the recorded state of `{name}` cannot be read back: {e}"))
        };
        firings.push(RecordedFiring {
            op: OpId(f.op),
            consumed: f.consumed.into_iter().map(ConnId).collect(),
            written: f
                .written
                .into_iter()
                .map(|(c, p, n)| (ConnId(c), p, n))
                .collect(),
            tokens,
            before: state(f.before)?,
            after: state(f.after)?,
        });
    }
    Ok(RecordedStep { parent, firings })
}
