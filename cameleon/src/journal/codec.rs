//! An entry's `body`: the JSON of its [`StepRecord`], the history's one record
//! (docs/semantics.md §5.5) — written from a committed step, read back for a resume.

use crate::engine::{Committed, RecordError};
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
}

/// Encodes a committed step: its record's JSON into `buf` (reused from step to step), and the
/// names of the operators that fired. A value or a state that serde cannot write is an error
/// naming the operator and the type — never a `null` in the journal.
pub(super) fn encode(c: &Committed<'_>, buf: &mut Vec<u8>) -> Result<Row, RecordError> {
    let record = c.record()?;
    let fail = |e: &dyn std::fmt::Display| RecordError(format!("cannot encode the step: {e}"));
    buf.clear();
    serde_json::to_writer(&mut *buf, &record).map_err(|e| fail(&e))?;
    let body = std::str::from_utf8(buf).map_err(|e| fail(&e))?.to_owned();
    let names: Vec<&str> = c.firings().map(|f| f.op_name()).collect();
    let ops = serde_json::to_string(&names).map_err(|e| fail(&e))?;
    Ok(Row {
        node: c.node(),
        parent: c.parent(),
        step: c.step(),
        branch: c.branch(),
        ops,
        body,
    })
}

/// Decodes an entry's body (values and states stay in their serde form until
/// [`Cvm::restore`](crate::Cvm::restore) reads them back for the net).
pub(super) fn decode(body: &str) -> Result<StepRecord, String> {
    serde_json::from_str(body).map_err(|e| format!("unreadable entry: {e}"))
}
