//! What the engine can tell about the marking and the history, without changing anything.

use super::{ConnView, Cvm, Marking};
use crate::connection::{ConnId, ConnState, NONE, OpId, Token};
use crate::history::History;
use crate::types::Value;

impl Cvm {
    /// The enabled operators, in declaration order.
    pub fn fireable(&self) -> Vec<&str> {
        self.marking
            .enabled
            .iter()
            .map(|o| self.net.ops[o].name.as_str())
            .collect()
    }

    /// The enabled operators' ids, in declaration order.
    pub fn fireable_ids(&self) -> Vec<OpId> {
        self.marking
            .enabled
            .iter()
            .map(|o| OpId(o as u32))
            .collect()
    }

    /// The state and data of the connection named `a.out -> b.in`.
    pub fn state_of(&self, conn: &str) -> Option<ConnView<'_>> {
        self.net.conn_id(conn).map(|c| self.conn(c))
    }

    /// The state and data of connection `c`.
    pub fn conn(&self, c: ConnId) -> ConnView<'_> {
        let t = self.marking.token_of[c.index()];
        ConnView {
            state: self.marking.states[c.index()],
            token: self.marking.tokens.get(t as usize),
        }
    }

    /// A snapshot of the whole marking.
    pub fn marking(&self) -> Marking {
        Marking(
            (0..self.marking.states.len())
                .map(|c| {
                    (
                        self.marking.states[c],
                        self.marking
                            .tokens
                            .get(self.marking.token_of[c] as usize)
                            .cloned(),
                    )
                })
                .collect(),
        )
    }

    /// How many times operator `op` has fired along the current history.
    pub fn fire_count(&self, op: OpId) -> u32 {
        self.marking.fire_count[op.index()]
    }

    /// The token with arena index `i` (as [`FiringView::written`](crate::history::FiringView) gives).
    pub fn token(&self, i: u32) -> Option<&Token> {
        self.marking.tokens.get(i as usize)
    }

    /// The history: applied entries, what a forward step would replay, memory used.
    pub fn history(&self) -> History<'_> {
        History {
            store: &self.history,
            tokens: self.marking.tokens.len(),
        }
    }

    /// Number of applied steps.
    pub fn depth(&self) -> usize {
        self.history.path.len()
    }

    /// Every value operator `op` consumed on its own inputs along the current history, in
    /// order. For a sink, this is what it received.
    pub fn received(&self, op: &str) -> Vec<&Value> {
        match self.net.op_id(op) {
            Some(id) => self.received_by(id),
            None => Vec::new(),
        }
    }

    /// [`received`](Self::received), the operator given by id.
    pub(crate) fn received_by(&self, id: OpId) -> Vec<&Value> {
        // Walk the path forward, tracking each connection's token: consumption keeps the token
        // in place, so what `op` consumed is the token its input held at that moment.
        let mut tok = if self.history.start.is_empty() {
            vec![NONE; self.marking.states.len()]
        } else {
            self.history.start.clone()
        };
        let mut out = Vec::new();
        for &node in &self.history.path {
            for f in self.history.firing_range(node) {
                if self.history.firings[f].op == id.0 {
                    for &c in &self.history.consumed[self.history.consumed_range(f)] {
                        // Its own inputs only: a cancellation consumes other operators'
                        // connections too (docs/semantics.md §10.4).
                        if self.operators.topo.consumer[c as usize] != id.0 {
                            continue;
                        }
                        if let Some(t) = self.marking.tokens.get(tok[c as usize] as usize) {
                            out.push(&t.value);
                        }
                    }
                }
                for w in &self.history.written[self.history.written_range(f)] {
                    tok[w.conn as usize] = w.new_tok;
                }
            }
        }
        out
    }

    /// Connections still EMPTY: never reached (information, not an error, docs/semantics.md §6).
    pub fn unreached(&self) -> Vec<&str> {
        self.marking
            .states
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == ConnState::Empty)
            .map(|(c, _)| self.net.conns[c].name.as_str())
            .collect()
    }
}
