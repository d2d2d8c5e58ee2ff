//! Backward steps, rewinding, and switching branches of the history tree (docs/semantics.md §5).

use super::{Advance, BackError, CheckoutError, Cvm};
use crate::connection::{ConnState, NONE};
use crate::history::{Branch, BranchId};

impl Cvm {
    /// Undoes the last step exactly: the marking, the operators' states and firing counts are
    /// as they were before it. The step stays recorded: the next [`step`](Self::step) replays it.
    ///
    /// A journaled run records the move; if that fails the step is still undone and the
    /// recorder reports the failure with the next step.
    pub fn back(&mut self) -> Result<(), BackError> {
        self.back_unrecorded()?;
        if self.recorder.is_some() {
            self.record_move_later();
        }
        Ok(())
    }

    fn back_unrecorded(&mut self) -> Result<(), BackError> {
        if !self.pending.is_empty() {
            self.restore_pending();
        }
        let node = self.hist.path.pop().ok_or(BackError::AtStart)?;
        self.undo_node(node);
        self.hist.redo.push(node);
        Ok(())
    }

    /// Undoes the firings of `node`, the applied tip, in reverse order.
    pub(super) fn undo_node(&mut self, node: u32) {
        for f in self.hist.firing_range(node).rev() {
            self.undo_firing(f);
        }
    }

    fn undo_firing(&mut self, f: usize) {
        let o = self.hist.firings[f].op as usize;
        self.collect_emitted(f);
        for i in self.hist.written_range(f).rev() {
            let w = self.hist.written[i];
            let c = w.conn as usize;
            let prior = if w.prior_tok == NONE {
                ConnState::Empty
            } else {
                ConnState::Old
            };
            self.set(c, prior);
            self.tok[c] = w.prior_tok;
        }
        for i in self.hist.consumed_range(f).rev() {
            let c = self.hist.consumed[i] as usize;
            self.set(c, ConnState::New);
        }
        let saved = self.hist.saved(f);
        let before = saved.and_then(|s| s.before.as_ref());
        let op = &mut self.net.ops[o].op;
        let emitted = &self.s.emitted;
        crate::operator::capability::applying_if(saved.is_some(), &self.caps, || {
            op.rollback(before, emitted)
        });
        self.s.emitted.clear();
        self.fire_count[o] -= 1;
        self.refresh_around(f);
    }

    /// Goes back to the initial marking (every step stays recorded for replay).
    pub fn rewind(&mut self) {
        while self.back().is_ok() {}
    }

    /// Every branch of the history tree.
    pub fn branches(&self) -> Vec<Branch> {
        self.hist.branches()
    }

    /// Switches to branch `b`: goes back to where it leaves the current path, then replays it to
    /// its tip.
    pub fn checkout(&mut self, b: BranchId) -> Result<(), CheckoutError> {
        if b.0 as usize >= self.hist.nodes.len() {
            return Err(CheckoutError::UnknownBranch(b));
        }
        let target = self.hist.path_to(b.0);
        let common = self
            .hist
            .path
            .iter()
            .zip(&target)
            .take_while(|(a, b)| a == b)
            .count();
        while self.hist.path.len() > common {
            let _ = self.back_unrecorded();
        }
        self.hist.redo = target[common..].iter().rev().copied().collect();
        let mut replayed = Ok(());
        while let Some(&node) = self.hist.redo.last() {
            match self.replay_next(node) {
                Ok(Advance::Ended(_)) => break,
                Ok(Advance::Fired { .. }) => {}
                Err(e) => {
                    replayed = Err(e);
                    break;
                }
            }
        }
        if self.recorder.is_some() {
            self.record_move_later();
        }
        Ok(replayed?)
    }
}
