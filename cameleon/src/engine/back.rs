//! Backward steps, rewinding, and switching branches of the history tree (docs/semantics.md §5).

use super::{Advance, BackError, CheckoutError, Cvm};
use crate::history::{Branch, BranchId};

impl Cvm {
    /// Undoes the last step exactly: the marking, the operators' states and firing counts are
    /// as they were before it. The step stays recorded: the next [`step`](Self::step) replays it.
    ///
    /// A journaled run records the move; if that fails the step is still undone and the
    /// recorder reports the failure with the next step.
    pub fn back(&mut self) -> Result<(), BackError> {
        self.back_unrecorded()?;
        if self.context.recorder.is_some() {
            self.record_move_later();
        }
        Ok(())
    }

    fn back_unrecorded(&mut self) -> Result<(), BackError> {
        if !self.scratch.interrupted.is_empty() {
            self.restore_interrupted();
        }
        let node = self.history.path.pop().ok_or(BackError::AtStart)?;
        self.undo_node(node);
        self.history.redo.push(node);
        Ok(())
    }

    /// Undoes the firings of `node`, the applied tip, in reverse order.
    pub(super) fn undo_node(&mut self, node: u32) {
        for f in self.history.firing_range(node).rev() {
            self.undo_firing(f);
        }
    }

    /// Takes recorded firing `f` back: the marking, then its operator's `rollback` to the state
    /// saved before it.
    fn undo_firing(&mut self, f: usize) {
        let o = self.history.firings[f].op as usize;
        let emitted = &mut self.scratch.replayed;
        self.marking
            .emitted_by(&self.net, &self.history, f, emitted);
        self.marking.undo(&self.operators.topo, &self.history, f);
        let saved = self.history.saved(f);
        let before = saved.and_then(|s| s.before.as_ref());
        let op = &mut self.net.ops[o].op;
        crate::operator::capability::applying_if(
            saved.is_some(),
            &self.context.capabilities,
            || op.rollback(before, emitted),
        );
        emitted.clear();
        self.marking
            .refresh_around(&self.net, &self.operators, &self.history, f);
    }

    /// Goes back to the initial marking (every step stays recorded for replay).
    pub fn rewind(&mut self) {
        while self.back().is_ok() {}
    }

    /// Every branch of the history tree.
    pub fn branches(&self) -> Vec<Branch> {
        self.history.branches()
    }

    /// Switches to branch `b`: goes back to where it leaves the current path, then replays it to
    /// its tip.
    pub fn checkout(&mut self, b: BranchId) -> Result<(), CheckoutError> {
        if b.0 as usize >= self.history.nodes.len() {
            return Err(CheckoutError::UnknownBranch(b));
        }
        let target = self.history.path_to(b.0);
        let common = self
            .history
            .path
            .iter()
            .zip(&target)
            .take_while(|(a, b)| a == b)
            .count();
        while self.history.path.len() > common {
            let _ = self.back_unrecorded();
        }
        self.history.redo = target[common..].iter().rev().copied().collect();
        let mut replayed = Ok(());
        while let Some(&node) = self.history.redo.last() {
            match self.replay_step(node) {
                Ok(Advance::Ended(_)) => break,
                Ok(Advance::Fired { .. }) => {}
                Err(e) => {
                    replayed = Err(e);
                    break;
                }
            }
        }
        if self.context.recorder.is_some() {
            self.record_move_later();
        }
        Ok(replayed?)
    }
}
