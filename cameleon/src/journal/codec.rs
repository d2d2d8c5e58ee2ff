//! An entry's `body`: the JSON of its [`StepRecord`], the history's one record
//! (docs/semantics.md §5.5) — written from a committed step, read back for a resume.
//!
//! The body is written straight from the engine's step (values through their data types' serde
//! form, into one reused buffer), not through a [`StepRecord`] of JSON trees serialised again:
//! the same text as serde gives for [`Committed::record`], at a fraction of the allocations.

use crate::engine::{Committed, FiringKey, KeyCache, RecordError};
use crate::history::StepRecord;

/// What a row of `entries` holds, ready to insert.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) node: u32,
    pub(super) parent: Option<u32>,
    pub(super) step: u32,
    pub(super) branch: u32,
    pub(super) ops: String,
    pub(super) body: String,
    /// The reuse keys of its firings that may be reused ([`read_keys`]; `None`: none).
    pub(super) keys: Option<Vec<u8>>,
}

/// The buffers a step is encoded into, reused from step to step: its body, the names of the
/// operators that fired (`ops`, a JSON list) and its reuse keys (empty: none).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub(super) body: Vec<u8>,
    pub(super) ops: Vec<u8>,
    pub(super) keys: Vec<u8>,
    /// Where each firing's state before is in `body`.
    befores: Vec<Option<std::ops::Range<usize>>>,
    /// Whether the net has an operator that may be reused (`None`: not looked at yet): only
    /// then are reuse keys computed, and the digests of the values written kept for them.
    keyed: Option<bool>,
}

impl Scratch {
    /// Empty buffers, with room for a typical step.
    pub(super) fn new() -> Self {
        Scratch {
            body: Vec::with_capacity(512),
            ops: Vec::with_capacity(64),
            ..Scratch::default()
        }
    }
}

/// A row's integer columns (its text and blob columns are in a [`Scratch`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Head {
    pub(super) node: u32,
    pub(super) parent: Option<u32>,
    pub(super) step: u32,
    pub(super) branch: u32,
}

/// Encodes a committed step into owned columns (see [`encode_into`]).
pub(super) fn encode(
    c: &Committed<'_>,
    s: &mut Scratch,
    cache: &mut KeyCache,
) -> Result<Row, RecordError> {
    let h = encode_into(c, s, cache)?;
    let text = |b: &[u8]| {
        String::from_utf8(b.to_vec())
            .map_err(|e| RecordError(format!("cannot encode the step: {e}")))
    };
    Ok(Row {
        node: h.node,
        parent: h.parent,
        step: h.step,
        branch: h.branch,
        ops: text(&s.ops)?,
        body: text(&s.body)?,
        keys: (!s.keys.is_empty()).then(|| s.keys.clone()),
    })
}

/// Encodes a committed step into `s`: its record's JSON (`body`), the names of the operators
/// that fired (`ops`), and the reuse keys of its firings that may be reused (`keys`) — from the
/// bytes just written (a firing's state before; each value's digest, kept in `cache` from the
/// step that emitted it). A value or a state that serde cannot write is an error naming the
/// operator and the type — never a `null` in the journal. Every byte written is serde_json's
/// output or ASCII: the body and ops are UTF-8.
pub(super) fn encode_into(
    c: &Committed<'_>,
    s: &mut Scratch,
    cache: &mut KeyCache,
) -> Result<Head, RecordError> {
    let fail = |e: &dyn std::fmt::Display| RecordError(format!("cannot encode the step: {e}"));
    let keyed = *s.keyed.get_or_insert_with(|| cache.any_keyed(c.cvm()));
    s.body.clear();
    s.befores.clear();
    write_body(c, &mut s.body, &mut s.befores, keyed.then_some(&mut *cache))?;
    // The body is the step's record in its serde form, except that an `f32` (an embedding's
    // vector) is written in its own shortest form, which reads back to the same `f32`, where the
    // record's serde form widens it to an `f64` first: the two are not compared byte for byte.
    let ops = &mut s.ops;
    ops.clear();
    ops.push(b'[');
    s.keys.clear();
    for (i, f) in c.firings().enumerate() {
        if i > 0 {
            ops.push(b',');
        }
        // An operator's name is an identifier: no escaping needed, but serde decides for
        // anything else.
        str_json(ops, f.op_name()).map_err(|e| fail(&e))?;
        if !keyed {
            continue;
        }
        let before = s.befores.get(i).cloned().flatten().map(|r| &s.body[r]);
        if let Some(key) = f.reuse_key(cache, before) {
            let keys = &mut s.keys;
            let ports = f.token_ports();
            keys.extend_from_slice(&key.to_be_bytes());
            keys.extend_from_slice(&(i as u32).to_le_bytes());
            keys.extend_from_slice(&(ports.len() as u32).to_le_bytes());
            for p in ports {
                keys.extend_from_slice(&p.unwrap_or(NO_PORT).to_le_bytes());
            }
        }
    }
    ops.push(b']');
    Ok(Head {
        node: c.node(),
        parent: c.parent(),
        step: c.step(),
        branch: c.branch(),
    })
}

/// Writes `text` as a JSON string, as serde writes it: as it is between quotes when it holds
/// nothing serde escapes (a quote, a backslash, a control character), else through serde.
fn str_json(out: &mut Vec<u8>, text: &str) -> Result<(), serde_json::Error> {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, text)
    }
}

/// A token written to no connection, in an entry's `keys` ([`read_keys`]).
const NO_PORT: u16 = u16::MAX;

/// One reuse key of an entry's `keys`: the firing's index in the step and the output port of
/// each token it emitted (`None`: written to no connection).
pub(super) type EntryKey = (FiringKey, u32, Vec<Option<u16>>);

/// The keys in an entry's `keys` (journal schema 4). Layout, for each firing of the step that
/// may be reused, one after the other: its key (16 bytes, big-endian), its index in the step
/// (`u32`), the number of tokens it emitted (`u32`), then each token's output port (`u16`;
/// `0xffff`: written to no connection), integers little-endian. The file is untrusted: a
/// record that does not fit ends the list.
pub(super) fn read_keys(mut b: &[u8]) -> Vec<EntryKey> {
    fn take<const N: usize>(b: &mut &[u8]) -> Option<[u8; N]> {
        let head: [u8; N] = b.get(..N)?.try_into().ok()?;
        *b = &b[N..];
        Some(head)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let (Some(k), Some(i), Some(n)) =
            (take::<16>(&mut b), take::<4>(&mut b), take::<4>(&mut b))
        else {
            break;
        };
        let n = u32::from_le_bytes(n) as usize;
        let Some(ports) = b.get(..n.saturating_mul(2)) else {
            break;
        };
        let ports = ports
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .map(|p| (p != NO_PORT).then_some(p))
            .collect();
        b = &b[2 * n..];
        out.push((u128::from_be_bytes(k), u32::from_le_bytes(i), ports));
    }
    out
}

/// Writes the serde form of `c`'s [`StepRecord`] into `out` (the fields serde writes, in its
/// order: `parent`, `firings`; in a firing `op`, then `consumed`, `written`, `tokens`,
/// `before`, `after` when not empty).
/// `befores`: where each firing's state before is in `out`; each value written goes to
/// `cache` (`None`: no firing of the net has a reuse key, no digest is kept).
fn write_body(
    c: &Committed<'_>,
    out: &mut Vec<u8>,
    befores: &mut Vec<Option<std::ops::Range<usize>>>,
    mut cache: Option<&mut KeyCache>,
) -> Result<(), RecordError> {
    match c.parent() {
        Some(p) => {
            out.extend_from_slice(b"{\"parent\":");
            num(out, p.into());
            out.extend_from_slice(b",\"firings\":[");
        }
        None => out.extend_from_slice(b"{\"parent\":null,\"firings\":["),
    }
    for (i, f) in c.firings().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"op\":");
        num(out, f.op().index() as u64);
        let mut first = true;
        for conn in f.consumed() {
            out.extend_from_slice(if first { b",\"consumed\":[" } else { b"," });
            first = false;
            num(out, conn.index() as u64);
        }
        if !first {
            out.push(b']');
        }
        first = true;
        for (conn, prior, new) in f.written() {
            out.extend_from_slice(if first { b",\"written\":[" } else { b"," });
            first = false;
            out.push(b'[');
            num(out, conn.index() as u64);
            match prior {
                Some(p) => {
                    out.push(b',');
                    num(out, p.into());
                    out.push(b',');
                }
                None => out.extend_from_slice(b",null,"),
            }
            num(out, new.into());
            out.push(b']');
        }
        if !first {
            out.push(b']');
        }
        first = true;
        for (index, t) in f.tokens() {
            out.extend_from_slice(if first { b",\"tokens\":[" } else { b"," });
            first = false;
            out.extend_from_slice(b"{\"type\":");
            str_json(out, t.type_name())
                .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
            out.extend_from_slice(b",\"value\":");
            let start = out.len();
            t.value.write_json(out).map_err(|e| {
                RecordError(format!(
                    "`{}` emitted a {} that cannot be written as JSON: {e}",
                    f.op_name(),
                    t.type_name()
                ))
            })?;
            if let Some(cache) = cache.as_deref_mut() {
                cache.wrote_value(&f, index, t, &out[start..]);
            }
            out.push(b'}');
        }
        if !first {
            out.push(b']');
        }
        let mut before = None;
        for (key, state) in [("before", f.before()), ("after", f.after())] {
            let Some(s) = state else { continue };
            out.extend_from_slice(if key == "before" {
                b",\"before\":"
            } else {
                b",\"after\":"
            });
            let start = out.len();
            // As the reuse key reads it (`engine/reuse/`): the state's JSON, serde's text.
            let json = s.to_json().map_err(|e| {
                RecordError(format!(
                    "the internal state of `{}` cannot be recorded: {e}",
                    f.op_name()
                ))
            })?;
            serde_json::to_writer(&mut *out, &json)
                .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
            if key == "before" {
                before = Some(start..out.len());
            }
        }
        befores.push(before);
        if let Some(r) = f.reused() {
            out.extend_from_slice(b",\"notes\":[{\"kind\":\"reused\",\"data\":");
            serde_json::to_writer(&mut *out, r)
                .map_err(|e| RecordError(format!("cannot encode the step: {e}")))?;
            out.extend_from_slice(b"}]");
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// Writes `n` in decimal (as serde does, through the same `itoa`, without its machinery).
fn num(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `body` with its parent replaced by `parent` (a migrated run's engine numbers its nodes from
/// the migration, the journal from the run's start).
pub(super) fn rebase(body: &mut Vec<u8>, parent: Option<u32>) {
    const FIRINGS: &[u8] = b",\"firings\"";
    let rest = body
        .windows(FIRINGS.len())
        .position(|w| w == FIRINGS)
        .map_or(body.len().saturating_sub(1), |i| i + 1);
    let mut head = Vec::with_capacity(24);
    match parent {
        Some(p) => {
            head.extend_from_slice(b"{\"parent\":");
            num(&mut head, p.into());
            head.push(b',');
        }
        None => head.extend_from_slice(b"{\"parent\":null,"),
    }
    body.splice(..rest, head);
}

/// Decodes an entry's body (values and states stay in their serde form until
/// [`Cvm::restore`](crate::Cvm::restore) reads them back for the net).
pub(super) fn decode(body: &str) -> Result<StepRecord, String> {
    serde_json::from_str(body).map_err(|e| format!("unreadable entry: {e}"))
}

/// What reuse needs of one firing of an entry's body: the tokens it emitted and its state
/// after (other fields of the firing are skipped).
#[derive(serde::Deserialize)]
pub(super) struct ReusedPart {
    #[serde(default)]
    pub(super) tokens: Vec<crate::history::TokenRecord>,
    #[serde(default)]
    pub(super) after: Option<serde_json::Value>,
}

/// Decodes firing `index` of an entry's body, and only that: the rest of the body is parsed
/// (it must be JSON) but not built. `Ok(None)`: the step has no such firing.
pub(super) fn decode_firing(body: &str, index: u32) -> Result<Option<ReusedPart>, String> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    struct Body(u32);
    struct Firings(u32);

    impl<'de> DeserializeSeed<'de> for Body {
        type Value = Option<ReusedPart>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Body {
        type Value = Option<ReusedPart>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a step record")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "firings" && found.is_none() {
                    found = Some(map.next_value_seed(Firings(self.0))?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found.flatten())
        }
    }

    impl<'de> DeserializeSeed<'de> for Firings {
        type Value = Option<ReusedPart>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Firings {
        type Value = Option<ReusedPart>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of firings")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            let mut i = 0u32;
            loop {
                if i == self.0 {
                    match seq.next_element::<ReusedPart>()? {
                        Some(part) => found = Some(part),
                        None => break,
                    }
                } else if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                i = i.saturating_add(1);
            }
            Ok(found)
        }
    }

    let mut de = serde_json::Deserializer::from_str(body);
    let part = Body(index)
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|()| p))
        .map_err(|e| format!("unreadable entry: {e}"))?;
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"parent":4,"firings":[
        {"op":0,"consumed":[1],"tokens":[{"type":"DataInt","value":10}],"after":{"n":1}},
        {"op":1,"written":[[2,null,7]],"tokens":[{"type":"DataInt","value":20},
            {"type":"DataString","value":"b"}],"before":{"n":1},"after":{"n":2},
            "notes":[{"kind":"reused","data":{"run":"r","step":3}}]},
        {"op":2}],"notes":[]}"#;

    #[test]
    fn decode_firing_reads_the_firing_asked_for_and_only_it() {
        let full = decode(BODY).expect("a record");
        for (i, f) in full.firings.iter().enumerate() {
            let part = decode_firing(BODY, i as u32)
                .expect("reads")
                .expect("a firing");
            assert_eq!(part.tokens, f.tokens, "firing {i}");
            assert_eq!(part.after, f.after, "firing {i}");
        }
        assert!(
            decode_firing(BODY, 3).expect("reads").is_none(),
            "no firing 3"
        );
        assert!(
            decode_firing(r#"{"parent":null,"firings":[]}"#, 0)
                .expect("reads")
                .is_none()
        );
        assert!(
            decode_firing(r#"{"parent":null}"#, 0)
                .expect("reads")
                .is_none()
        );
        for bad in [
            "",
            "[1]",
            r#"{"firings":[{"op":0}"#,
            r#"{"firings":[]} x"#,
            "{\"firings\":7}",
        ] {
            assert!(decode_firing(bad, 0).is_err(), "{bad:?} is not an entry");
        }
    }

    #[test]
    fn str_json_writes_what_serde_writes() {
        for text in [
            "p12",
            "DataString",
            "",
            "a b.c-d_e",
            "quote\"d",
            "back\\slash",
            "new\nline",
            "tab\tand\u{1}",
            "del\u{7f}",
            "café ✓ 🦎",
        ] {
            let mut out = b"x".to_vec();
            str_json(&mut out, text).expect("writes");
            let want = serde_json::to_string(text).expect("serde writes");
            assert_eq!(out[1..], *want.as_bytes(), "{text:?}");
        }
    }

    #[test]
    fn rebase_replaces_the_parent_and_keeps_the_rest() {
        let body = r#"{"parent":4,"firings":[{"op":0,"tokens":[{"type":"DataString","value":"\"firings\""}]}]}"#;
        for (parent, head) in [
            (Some(1234), r#"{"parent":1234,"#),
            (None, r#"{"parent":null,"#),
        ] {
            let mut b = body.as_bytes().to_vec();
            rebase(&mut b, parent);
            let rest = &body[body.find("\"firings\"").expect("firings")..];
            assert_eq!(
                String::from_utf8(b).expect("utf-8"),
                format!("{head}{rest}")
            );
        }
        let mut first = br#"{"parent":null,"firings":[]}"#.to_vec();
        rebase(&mut first, Some(7));
        assert_eq!(first, br#"{"parent":7,"firings":[]}"#);
    }

    #[test]
    fn num_writes_decimal() {
        for n in [0, 7, 10, 4_294_967_295, u64::MAX] {
            let mut out = Vec::new();
            num(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
