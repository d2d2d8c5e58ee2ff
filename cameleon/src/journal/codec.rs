//! An entry's `body`: its firings as JSON, written from a committed step and read back into a
//! [`RecordedStep`].

use serde::Deserialize;
use serde_json::Value as Json;

use crate::connection::{ConnId, OpId};
use crate::engine::{Committed, RecordError, RecordedFiring, RecordedStep};
use crate::net::Net;
use crate::types::{Value, type_by_name};

/// One firing, as stored.
#[derive(Deserialize)]
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
    #[serde(default)]
    pub(super) before: Option<Json>,
    /// State after, if the operator has one.
    #[serde(default)]
    pub(super) after: Option<Json>,
}

/// One token, as stored: its data type's name and its serde form.
#[derive(Deserialize)]
pub(super) struct TokenBody {
    #[serde(rename = "type")]
    pub(super) ty: String,
    pub(super) value: Json,
}

/// The stored form of an entry.
#[derive(Deserialize)]
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

/// Encodes a committed step, writing the JSON of [`Body`] directly (no intermediate tree: this
/// runs on the engine's thread for every step). A value or a state that serde cannot write is an
/// error naming the operator and the type — never a `null` in the journal.
pub(super) fn encode(c: &Committed<'_>, buf: &mut Vec<u8>) -> Result<Row, RecordError> {
    buf.clear();
    let mut ops = Vec::with_capacity(16);
    ops.push(b'[');
    buf.extend_from_slice(b"{\"firings\":[");
    for (i, f) in c.firings().enumerate() {
        let name = f.op_name();
        if i > 0 {
            buf.push(b',');
            ops.push(b',');
        }
        json_str(&mut ops, name);
        buf.extend_from_slice(b"{\"op\":");
        num(buf, f.op().0);
        buf.extend_from_slice(b",\"consumed\":[");
        for (k, conn) in f.consumed().enumerate() {
            if k > 0 {
                buf.push(b',');
            }
            num(buf, conn.0);
        }
        buf.extend_from_slice(b"],\"written\":[");
        for (k, (conn, prior, new)) in f.written().enumerate() {
            if k > 0 {
                buf.push(b',');
            }
            buf.push(b'[');
            num(buf, conn.0);
            buf.push(b',');
            match prior {
                Some(p) => num(buf, p),
                None => buf.extend_from_slice(b"null"),
            }
            buf.push(b',');
            num(buf, new);
            buf.push(b']');
        }
        buf.extend_from_slice(b"],\"tokens\":[");
        for (k, (_, t)) in f.tokens().enumerate() {
            if k > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(b"{\"type\":");
            json_str(buf, t.type_name());
            buf.extend_from_slice(b",\"value\":");
            let at = buf.len();
            if let Err(e) = t.value.write_json(buf) {
                buf.truncate(at);
                return Err(RecordError(format!(
                    "`{name}` emitted a {} that cannot be written as JSON: {e}",
                    t.type_name()
                )));
            }
            buf.push(b'}');
        }
        buf.push(b']');
        for (key, state) in [("before", f.before()), ("after", f.after())] {
            let Some(state) = state else { continue };
            let json = state.to_json().map_err(|e| {
                RecordError(format!(
                    "the internal state of `{name}` cannot be written to the journal: {e}"
                ))
            })?;
            buf.extend_from_slice(b",\"");
            buf.extend_from_slice(key.as_bytes());
            buf.extend_from_slice(b"\":");
            serde_json::to_writer(&mut *buf, &json)
                .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
        }
        buf.push(b'}');
    }
    buf.extend_from_slice(b"]}");
    ops.push(b']');
    let text = |b: Vec<u8>| {
        String::from_utf8(b).map_err(|e| RecordError(format!("cannot encode the step: {e}")))
    };
    Ok(Row {
        node: c.node(),
        parent: c.parent(),
        step: c.step(),
        branch: c.branch(),
        ops: text(ops)?,
        body: text(buf.clone())?,
    })
}

/// Appends `n` in decimal.
fn num(buf: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Appends `s` as a JSON string.
fn json_str(buf: &mut Vec<u8>, s: &str) {
    // Writing a `str` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
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
