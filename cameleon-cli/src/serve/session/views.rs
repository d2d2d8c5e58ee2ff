//! The state and the history of the served engine, as the page reads them.

use cameleon::connection::{ConnId, ConnState};
use cameleon::engine::EndState;
use cameleon::history::Entry;

use super::Session;
use crate::serve::view::{
    BranchView, EntryView, HistoryView, Ordered, StateView, WaitingView, shortened,
};

/// Most bytes of a value's JSON text the state sends per connection (the tooltip): the state
/// goes out at every flush, so its size must not grow with the values.
pub(crate) const TIP_BYTES: usize = 512;

/// Most bytes of an `ask`'s context the state sends.
const CONTEXT_BYTES: usize = 4096;

impl Session {
    /// The end state the net is in: where the last step or run stopped, or the terminal
    /// state of the marking.
    fn end(&self) -> Option<EndState> {
        let cvm = self.cvm.as_ref()?;
        cvm.terminal_state().or_else(|| self.last_end.clone())
    }

    /// `GET /api/state`.
    pub(crate) fn state(&self) -> StateView {
        let mut view = StateView {
            version: self.version,
            step: 0,
            end: None,
            fireable: Vec::new(),
            connections: Ordered::default(),
            waiting: Vec::new(),
            values: Ordered::default(),
            end_detail: None,
            redo: 0,
            branches: 0,
            valid: self.problems.is_empty(),
            running: self.is_running(),
            busy: false,
            firing: Vec::new(),
            engine: false,
            run_id: None,
            usage: None,
            budget: None,
            sent_ms: None,
        };
        let Some(cvm) = self.cvm.as_ref() else {
            view.valid = false;
            return view;
        };
        let end = self.end();
        view.step = cvm.depth();
        view.end = end.as_ref().map(EndState::name);
        view.fireable = cvm.fireable().into_iter().map(str::to_owned).collect();
        for (i, c) in cvm.net().connections().iter().enumerate() {
            let conn = cvm.conn(ConnId(i as u32));
            let state = match conn.state {
                ConnState::Empty => "EMPTY",
                ConnState::New => "NEW",
                ConnState::Old => "OLD",
            };
            view.connections.0.push((c.name.clone(), state));
            if let Some(v) = conn.value() {
                view.values
                    .0
                    .push((c.name.clone(), shortened(v, TIP_BYTES)));
            }
        }
        view.waiting = cvm
            .waiting()
            .into_iter()
            .map(|w| WaitingView {
                context: crate::answers::context_value(cvm, &w.op)
                    .map(|v| shortened(v, CONTEXT_BYTES)),
                op: w.op,
                prompt: w.prompt,
                ty: w.ty.name,
            })
            .collect();
        view.end_detail = end.map(|e| e.to_string());
        view.redo = cvm.history().redo_len();
        view.branches = cvm.branches().len();
        view.engine = true;
        view.run_id = self.run_id.clone();
        if let Some(m) = cvm.capabilities().meter() {
            view.usage = Some(m.spent()).filter(|s| s.requests > 0);
            view.budget = Some(m.limit()).filter(|b| b.is_limited());
        }
        view
    }

    /// `GET /api/history`: the last `limit` applied entries, what a step would replay, and the
    /// branches.
    pub(crate) fn history(&self, limit: usize) -> HistoryView {
        let Some(cvm) = self.cvm.as_ref() else {
            return HistoryView {
                entries: Vec::new(),
                redo: Vec::new(),
                branches: Vec::new(),
                depth: 0,
            };
        };
        let net = cvm.net();
        let h = cvm.history();
        let entry = |e: &Entry| {
            let ops: Vec<String> = e
                .firings
                .iter()
                .map(|f| net.op(f.op).name.clone())
                .collect();
            let ran_on: Vec<Option<String>> =
                ops.iter().map(|op| self.ran_on(e.step, op)).collect();
            EntryView {
                step: e.step,
                ran_on: if ran_on.iter().any(Option::is_some) {
                    ran_on
                } else {
                    Vec::new()
                },
                ops,
            }
        };
        let entries = h.entries();
        let skip = entries.len().saturating_sub(limit);
        HistoryView {
            entries: entries[skip..].iter().map(entry).collect(),
            redo: h.redo_entries().iter().take(limit).map(entry).collect(),
            branches: cvm
                .branches()
                .iter()
                .enumerate()
                .map(|(index, b)| BranchView {
                    index,
                    depth: b.depth,
                    current: b.current,
                })
                .collect(),
            depth: cvm.depth(),
        }
    }
}
