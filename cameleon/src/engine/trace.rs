//! The history as `cameleon run --trace` writes it (docs/cli.md): one JSON object per firing,
//! `{"step","op","consumed","emitted"}`, each emission with its connection, type and value, and
//! `"reused": {"run","step"}` for a firing reused from a recorded run (docs/semantics.md §5.9).

use serde_json::{Value as Json, json};

use super::Cvm;
use crate::history::FiringView;

impl Cvm {
    /// The trace of the history: one line per applied firing, then per firing of the recorded
    /// future (what a rewound run did), in history order (see [`trace_line`](Self::trace_line)).
    pub fn trace_lines(&self) -> Vec<Json> {
        let h = self.history();
        let mut out = Vec::new();
        for entry in h.entries().iter().chain(&h.redo_entries()) {
            for f in &entry.firings {
                out.push(self.trace_line(entry.step, f));
            }
        }
        out
    }

    /// The trace line of firing `f` of step `step`: `{"step","op","consumed","emitted"}`, each
    /// emission with its connection, type and value.
    pub fn trace_line(&self, step: u32, f: &FiringView) -> Json {
        let net = &self.net;
        let consumed: Vec<&str> = f
            .consumed
            .iter()
            .map(|c| net.connections()[c.index()].name.as_str())
            .collect();
        let emitted: Vec<Json> = f
            .written
            .iter()
            .map(|(c, t)| {
                let conn = net.connections()[c.index()].name.as_str();
                match self.token(*t) {
                    Some(tok) => json!({
                        "conn": conn,
                        "type": tok.type_name(),
                        "value": tok.value.to_json(),
                    }),
                    None => json!({ "conn": conn }),
                }
            })
            .collect();
        let mut line = json!({
            "step": step,
            "op": net.op(f.op).name,
            "consumed": consumed,
            "emitted": emitted,
        });
        if let Some(r) = &f.reused {
            line["reused"] = json!({"run": r.run, "step": r.step});
        }
        line
    }
}
