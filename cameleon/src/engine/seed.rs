//! A marking by name, out of an engine and into a fresh one: how a run moves onto another net
//! (docs/migration.md). [`Cvm::marking_record`] writes the marking and the operators' states
//! as a [`MarkingRecord`]; [`Cvm::seed`] makes one the start of a fresh engine — its history
//! begins there, and a backward step stops there.

use super::{Cvm, RecordError, RestoreError};
use crate::connection::{ConnState, NONE, OpId, Token};
use crate::history::{ConnRecord, MarkingRecord, StateRecord, TokenRecord};
use crate::types::type_by_name;

fn invalid(message: String) -> RestoreError {
    RestoreError::Invalid { node: 0, message }
}

impl Cvm {
    /// The marking now, by name: every connection holding a token (its value in its data
    /// type's serde form) and every operator's internal state (in its serde form). `Err`: a
    /// value or a state without a serde form, named.
    pub fn marking_record(&self) -> Result<MarkingRecord, RecordError> {
        let mut out = MarkingRecord::default();
        for (c, conn) in self.net.conns.iter().enumerate() {
            let new = match self.marking.states[c] {
                ConnState::Empty => continue,
                ConnState::New => true,
                ConnState::Old => false,
            };
            let Some(t) = self.marking.tokens.get(self.marking.token_of[c] as usize) else {
                continue;
            };
            let value = t.value.try_to_json().map_err(|e| {
                RecordError(format!(
                    "the {} on `{}` cannot be written as JSON: {e}",
                    t.type_name(),
                    conn.name
                ))
            })?;
            out.conns.push(ConnRecord {
                conn: conn.name.clone(),
                ty: conn.ty.name.to_owned(),
                new,
                token: TokenRecord {
                    ty: t.type_name().into(),
                    value,
                },
            });
        }
        for node in &self.net.ops {
            let Some(s) = node.op.save_state() else {
                continue;
            };
            let state = s.to_json().map_err(|e| {
                RecordError(format!(
                    "the internal state of `{}` cannot be recorded: {e}",
                    node.name
                ))
            })?;
            out.states.push(StateRecord {
                op: node.name.clone(),
                ty: node.spec.type_id.to_string(),
                state,
            });
        }
        Ok(out)
    }

    /// Makes `m` the marking of this fresh engine (its initial marking, an empty history): the
    /// tokens are put on their connections (values read back through their data types), the
    /// states into their operators. The history starts there: [`back`](Self::back) stops at
    /// it, [`record`](Self::record) and [`restore`](Self::restore) number their tokens after
    /// its own (restore a record on an engine seeded with the same marking). Firing counts start
    /// at 0. Every name must be the net's and every type the one it declares; nothing is
    /// changed when one is not.
    pub fn seed(&mut self, m: &MarkingRecord) -> Result<(), RestoreError> {
        if !self.history.nodes.is_empty()
            || !self.marking.tokens.is_empty()
            || !self.scratch.interrupted.is_empty()
        {
            return Err(RestoreError::NotFresh);
        }
        let mut tokens = Vec::with_capacity(m.conns.len());
        let mut placed = Vec::with_capacity(m.conns.len());
        for cr in &m.conns {
            let c = self
                .net
                .conn_id(&cr.conn)
                .ok_or_else(|| invalid(format!("the net has no connection `{}`", cr.conn)))?
                .index();
            let conn = &self.net.conns[c];
            if conn.ty.name != cr.ty {
                return Err(invalid(format!(
                    "`{}` carries {} here, not {}",
                    cr.conn, conn.ty.name, cr.ty
                )));
            }
            if placed.iter().any(|&(p, _)| p == c) {
                return Err(invalid(format!("`{}` is given twice", cr.conn)));
            }
            let info = type_by_name(&cr.token.ty).ok_or_else(|| {
                invalid(format!(
                    "`{}` holds a value of type `{}`, which this program does not declare",
                    cr.conn, cr.token.ty
                ))
            })?;
            let value = (info.from_json)(cr.token.value.clone()).map_err(|e| {
                invalid(format!(
                    "the {} on `{}` cannot be read back: {e}",
                    cr.token.ty, cr.conn
                ))
            })?;
            tokens.push(Token {
                value,
                step: 0,
                op: OpId(self.operators.topo.producer[c]),
            });
            placed.push((c, cr.new));
        }
        let mut states = Vec::with_capacity(m.states.len());
        for sr in &m.states {
            let o = self
                .net
                .op_id(&sr.op)
                .ok_or_else(|| invalid(format!("the net has no operator `{}`", sr.op)))?
                .index();
            let node = &self.net.ops[o];
            if node.spec.type_id != sr.ty {
                return Err(invalid(format!(
                    "`{}` is a `{}` here, not a `{}`",
                    sr.op, node.spec.type_id, sr.ty
                )));
            }
            let state = crate::operator::read_state(&*node.op, sr.state.clone()).map_err(|e| {
                invalid(format!("the state of `{}` cannot be read back: {e}", sr.op))
            })?;
            states.push((o, state));
        }
        for (o, state) in states {
            self.net.ops[o].op.restore_state(&state);
        }
        for ((c, new), token) in placed.into_iter().zip(tokens) {
            debug_assert_eq!(self.marking.token_of[c], NONE);
            self.marking.token_of[c] = self.marking.tokens.len() as u32;
            self.marking.tokens.push(token);
            let to = if new { ConnState::New } else { ConnState::Old };
            self.marking.set(&self.operators.topo, c, to);
        }
        self.history.start = self.marking.token_of.clone();
        self.refresh_all();
        Ok(())
    }
}
