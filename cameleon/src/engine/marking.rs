//! The marking as the engine keeps it live (docs/semantics.md §3–§5): each connection's state
//! and token, the token arena, the per-port views and the enabled set kept in step with them,
//! and each operator's fire count — with the three ways a firing changes it: [`apply`] (a new
//! firing, recorded in the history as it goes), [`redo`] (a recorded one, replayed) and
//! [`undo`] (a recorded one, taken back).
//!
//! The operator's own side of a redo or an undo (its `replay` or `rollback`) is the engine's
//! (`step.rs`, `back.rs`): the marking only needs the operator table to re-evaluate rules.
//!
//! [`apply`]: LiveMarking::apply
//! [`redo`]: LiveMarking::redo
//! [`undo`]: LiveMarking::undo

use super::attempt::Emissions;
use super::bits::Bits;
use super::parts::Operators;
use crate::connection::{ConnState, NONE, OpId, Token};
use crate::history::{FiringRec, HistoryTree, SavedStates, WriteRec};
use crate::net::{NO_PORT, Net, PortStates, Topo, evaluate, evaluate_cached};
use crate::operator::{InputSet, InputSlot, OpState};

/// The live marking (the public snapshot of it is [`Marking`](super::Marking)).
pub(super) struct LiveMarking {
    /// Per connection: EMPTY, NEW or OLD.
    pub(super) states: Vec<ConnState>,
    /// Per connection: the index in `tokens` of the token it holds (`NONE`: none).
    pub(super) token_of: Vec<u32>,
    /// Every token emitted along the history tree, in emission order (the arena).
    pub(super) tokens: Vec<Token>,
    /// Per operator port: the states of its connections, kept in step with `states`.
    pub(super) ports: PortStates,
    /// The operators whose firing rule holds (and which need no answer).
    pub(super) enabled: Bits,
    /// The operators whose rule holds but which wait for an answer: not in `enabled`.
    pub(super) waiting: Bits,
    /// Per operator: how many times it fired along the applied path.
    pub(super) fire_count: Vec<u32>,
    /// Scratch for the debug check that the port views agree with the bare marking.
    check: (Vec<ConnState>, Vec<ConnState>),
}

/// A new firing to apply: operator `o`'s, in step `step`, consuming the NEW inputs in
/// `consumes`, with the operator's states around it.
pub(super) struct NewFiring {
    pub(super) o: usize,
    pub(super) step: u32,
    pub(super) consumes: InputSet,
    pub(super) before: Option<OpState>,
    pub(super) after: Option<OpState>,
}

impl LiveMarking {
    /// The initial marking: every connection EMPTY, nothing enabled yet (see `refresh`).
    pub(super) fn new(topo: &Topo, n_conns: usize, n_ops: usize) -> Self {
        LiveMarking {
            states: vec![ConnState::Empty; n_conns],
            token_of: vec![NONE; n_conns],
            tokens: Vec::with_capacity(n_conns),
            ports: PortStates::initial(topo),
            enabled: Bits::new(n_ops),
            waiting: Bits::new(n_ops),
            fire_count: vec![0; n_ops],
            check: Default::default(),
        }
    }

    /// Sets connection `c`'s state, keeping the per-port views in step.
    #[inline]
    pub(super) fn set(&mut self, topo: &Topo, c: usize, to: ConnState) {
        let from = std::mem::replace(&mut self.states[c], to);
        self.ports.update(topo, c, from, to);
    }

    /// What a firing sees of the input fed by connection `c` (`NONE`: an unconnected optional
    /// input, permanently OLD with no data).
    #[inline]
    pub(super) fn slot(&self, c: u32) -> InputSlot {
        if c == NONE {
            InputSlot {
                state: ConnState::Old,
                token: NONE,
            }
        } else {
            InputSlot {
                state: self.states[c as usize],
                token: self.token_of[c as usize],
            }
        }
    }

    /// Re-evaluates whether operator `o` is enabled, or waiting for an answer.
    #[inline]
    pub(super) fn refresh(&mut self, net: &Net, table: &Operators, o: usize) {
        let op = &*net.ops[o].op;
        let on = evaluate_cached(op, &table.topo, &self.ports, &self.states, o);
        // The maintained port views must agree with the rule computed from the bare marking.
        debug_assert_eq!(
            on,
            evaluate(
                op,
                &table.topo,
                &self.states,
                o,
                &mut self.check.0,
                &mut self.check.1
            ),
            "port views diverged from the marking at `{}`",
            net.ops[o].name
        );
        let on = if table.any_asks {
            self.hold_unanswered(net, table, o, on)
        } else {
            on
        };
        self.enabled.set(o, on);
    }

    /// Whether operator `o`, whose rule gives `on`, may be in the enabled set: an operator with
    /// a question and no answer is held back, and listed as waiting instead.
    #[cold]
    fn hold_unanswered(&mut self, net: &Net, table: &Operators, o: usize, on: bool) -> bool {
        let waits = on && table.questions[o].is_some() && !net.ops[o].op.has_answer();
        self.waiting.set(o, waits);
        on && !waits
    }

    /// Re-evaluates every operator whose enabling firing `f` may have changed: the operator
    /// itself, the producers of what it consumed (back-pressure relieved), the consumers of
    /// what it consumed for another operator (a cancellation, docs/semantics.md §10.4) and the
    /// consumers of what it wrote. Nothing else can change (docs/semantics.md §3 reads only an
    /// operator's own ports).
    // Always inlined: it ends every applied firing (the sequential hot path).
    #[inline(always)]
    pub(super) fn refresh_around(
        &mut self,
        net: &Net,
        table: &Operators,
        history: &HistoryTree,
        f: usize,
    ) {
        let o = history.firings[f].op;
        self.refresh(net, table, o as usize);
        let topo = &table.topo;
        for i in history.consumed_range(f) {
            let c = history.consumed[i] as usize;
            self.refresh(net, table, topo.producer[c] as usize);
            // Only a cancellation consumes another operator's input (its consumer changes).
            if topo.any_cancel {
                let k = topo.consumer[c];
                if k != o {
                    self.refresh(net, table, k as usize);
                }
            }
        }
        for i in history.written_range(f) {
            let c = history.written[i].conn as usize;
            self.refresh(net, table, topo.consumer[c] as usize);
        }
    }

    /// **The** apply path: applies a new firing that emits `emitted` (drained), recording it in
    /// the history's open node as it goes (docs/semantics.md §4.5–§4.6): consumption, a
    /// cancellation's region, then emission, one shared token per emitted port.
    // Always inlined: it is the sequential hot path (see benches/engine.rs).
    #[inline(always)]
    pub(super) fn apply(
        &mut self,
        net: &Net,
        table: &Operators,
        history: &mut HistoryTree,
        firing: NewFiring,
        emitted: &mut Emissions,
    ) {
        let NewFiring {
            o,
            step,
            consumes,
            before,
            after,
        } = firing;
        let topo = &table.topo;
        let f = history.firings.len() as u32;
        history.firings.push(FiringRec {
            op: o as u32,
            consumed_start: history.consumed.len() as u32,
            written_start: history.written.len() as u32,
        });
        if before.is_some() || after.is_some() {
            history.states.push(SavedStates {
                firing: f,
                before,
                after,
            });
        }
        // Consumption first (NEW -> OLD) ...
        for (p, &c) in topo.ins(o).iter().enumerate() {
            if c != NONE && consumes.contains(p) && self.states[c as usize] == ConnState::New {
                self.set(topo, c as usize, ConnState::Old);
                history.consumed.push(c);
            }
        }
        // ... a cancellation's region among the consumed (docs/semantics.md §10.4) ...
        if topo.any_cancel && topo.cancel_start[o] != topo.cancel_start[o + 1] {
            self.cancel_region(topo, history, o, emitted);
        }
        // ... then emission (-> NEW), one shared token per emitted port, in emission order
        // (popped from the reversed list: cheaper than a `Drain` for the usual one emission).
        emitted.reverse();
        while let Some((port, value)) = emitted.pop() {
            let t = self.tokens.len() as u32;
            self.tokens.push(Token {
                value,
                step,
                op: OpId(o as u32),
            });
            for &c in topo.port_conns(o, port as usize) {
                history.written.push(WriteRec {
                    conn: c,
                    prior_tok: self.token_of[c as usize],
                    new_tok: t,
                });
                self.set(topo, c as usize, ConnState::New);
                self.token_of[c as usize] = t;
            }
        }
        self.fire_count[o] += 1;
        self.refresh_around(net, table, history, f as usize);
    }

    /// Consumes, as part of the firing of `o` being applied, every NEW connection of its
    /// cancellation region, when this firing triggers it (docs/semantics.md §10.4): every
    /// firing, or one that emits on the declared output. Recorded among the firing's consumed
    /// connections, so `back` and replay treat them as any other.
    #[cold]
    #[inline(never)]
    fn cancel_region(
        &mut self,
        topo: &Topo,
        history: &mut HistoryTree,
        o: usize,
        emitted: &Emissions,
    ) {
        let on = topo.cancel_on[o];
        if on != NO_PORT && !emitted.iter().any(|(p, _)| *p == on) {
            return;
        }
        let range = topo.cancel_start[o] as usize..topo.cancel_start[o + 1] as usize;
        for i in range {
            let c = topo.cancel_conns[i];
            if self.states[c as usize] == ConnState::New {
                self.set(topo, c as usize, ConnState::Old);
                history.consumed.push(c);
            }
        }
    }

    /// Re-applies recorded firing `f` to the marking (its operator's `replay` is the caller's,
    /// then [`refresh_around`](Self::refresh_around)).
    pub(super) fn redo(&mut self, topo: &Topo, history: &HistoryTree, f: usize) {
        for i in history.consumed_range(f) {
            self.set(topo, history.consumed[i] as usize, ConnState::Old);
        }
        for i in history.written_range(f) {
            let w = history.written[i];
            self.set(topo, w.conn as usize, ConnState::New);
            self.token_of[w.conn as usize] = w.new_tok;
        }
        self.fire_count[history.firings[f].op as usize] += 1;
    }

    /// Takes recorded firing `f` back from the marking, in reverse order (its operator's
    /// `rollback` is the caller's, then [`refresh_around`](Self::refresh_around)).
    pub(super) fn undo(&mut self, topo: &Topo, history: &HistoryTree, f: usize) {
        for i in history.written_range(f).rev() {
            let w = history.written[i];
            let c = w.conn as usize;
            let prior = if w.prior_tok == NONE {
                ConnState::Empty
            } else {
                ConnState::Old
            };
            self.set(topo, c, prior);
            self.token_of[c] = w.prior_tok;
        }
        for i in history.consumed_range(f).rev() {
            self.set(topo, history.consumed[i] as usize, ConnState::New);
        }
        self.fire_count[history.firings[f].op as usize] -= 1;
    }

    /// Recorded firing `f`'s emissions (port, value), into `into`.
    pub(super) fn emitted_by(
        &self,
        net: &Net,
        history: &HistoryTree,
        f: usize,
        into: &mut Emissions,
    ) {
        into.clear();
        let mut last = NONE;
        for i in history.written_range(f) {
            let w = history.written[i];
            if w.new_tok != last {
                last = w.new_tok;
                let port = net.conns[w.conn as usize].from.port;
                into.push((port, self.tokens[w.new_tok as usize].value.clone()));
            }
        }
    }
}
