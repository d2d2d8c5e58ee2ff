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
        let mut out = Vec::new();
        self.each_received(id, |v| out.push(v));
        out
    }

    /// Calls `f` with every value operator `id` consumed on its own inputs along the current
    /// history, in order ([`received`](Self::received) without a list).
    pub(crate) fn each_received<'a>(&'a self, id: OpId, mut f: impl FnMut(&'a Value)) {
        let topo = &self.operators.topo;
        let ins = topo.ins(id.index());
        // Walk the path forward, tracking the token each of `id`'s inputs holds (by port):
        // consumption keeps the token in place, so what `id` consumed is the token its input
        // held at that moment.
        let mut small = [NONE; 8];
        let mut large = Vec::new();
        let tok: &mut [u32] = if ins.len() <= small.len() {
            &mut small[..ins.len()]
        } else {
            large.resize(ins.len(), NONE);
            &mut large
        };
        if !self.history.start.is_empty() {
            for (t, &c) in tok.iter_mut().zip(ins) {
                if let Some(&held) = self.history.start.get(c as usize) {
                    *t = held;
                }
            }
        }
        let port_of = |c: u32| {
            (topo.consumer[c as usize] == id.0).then(|| topo.consumer_port[c as usize] as usize)
        };
        for &node in &self.history.path {
            for fi in self.history.firing_range(node) {
                if self.history.firings[fi].op == id.0 {
                    for &c in &self.history.consumed[self.history.consumed_range(fi)] {
                        // Its own inputs only: a cancellation consumes other operators'
                        // connections too (docs/semantics.md §10.4).
                        let Some(p) = port_of(c) else { continue };
                        if let Some(t) = tok
                            .get(p)
                            .and_then(|&t| self.marking.tokens.get(t as usize))
                        {
                            f(&t.value);
                        }
                    }
                }
                for w in &self.history.written[self.history.written_range(fi)] {
                    if let Some(t) = port_of(w.conn).and_then(|p| tok.get_mut(p)) {
                        *t = w.new_tok;
                    }
                }
            }
        }
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
