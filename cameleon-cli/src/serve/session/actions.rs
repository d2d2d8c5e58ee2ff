//! What the page's buttons do to the engine. Each is refused while a run is in progress
//! (Pause first), except answering an `ask`.

use cameleon::engine::{EndState, Step, StepError};
use serde_json::Value as Json;

use super::Session;
use crate::serve::error::ApiError;

impl Session {
    /// Refuses anything but Pause while a run is in progress.
    pub(super) fn idle(&self) -> Result<(), ApiError> {
        if self.is_running() {
            Err(ApiError::conflict("a run is in progress: pause it first"))
        } else {
            Ok(())
        }
    }

    /// One step forward (a replay after `back`).
    pub(crate) fn step(&mut self) -> Result<(), ApiError> {
        self.idle()?;
        let r = self.cvm()?.step();
        self.after_step(r)
    }

    /// One step executed anew from here: a recorded future becomes a branch.
    pub(crate) fn refire(&mut self) -> Result<(), ApiError> {
        self.idle()?;
        let r = self.cvm()?.refire();
        self.after_step(r)
    }

    /// Notes how a step ended: an operator's failure is the net's `ERROR` end, not a refusal.
    pub(super) fn after_step(&mut self, r: Result<Step, StepError>) -> Result<(), ApiError> {
        self.touch();
        match r {
            Ok(Step::Fired { .. }) => self.last_end = None,
            Ok(Step::Ended(end)) => self.last_end = Some(end),
            Err(StepError::Operator { op, error }) => {
                self.last_end = Some(EndState::Error {
                    op,
                    error: error.to_string(),
                })
            }
            Err(e) => return Err(ApiError::conflict(e.to_string())),
        }
        Ok(())
    }

    /// One step back.
    pub(crate) fn back(&mut self) -> Result<(), ApiError> {
        self.idle()?;
        self.cvm()?
            .back()
            .map_err(|e| ApiError::conflict(e.to_string()))?;
        self.last_end = None;
        self.touch();
        Ok(())
    }

    /// A fresh engine at the initial marking (the history is dropped). With `--journal`, a
    /// new run: the previous one stays in the journal as it was, resumable.
    pub(crate) fn reset(&mut self) -> Result<(), ApiError> {
        self.idle()?;
        let net = self.loader().load_str(&self.text).ok();
        match net {
            Some(net) => {
                let cvm = self.engine(net).map_err(ApiError::conflict)?;
                self.install(cvm);
            }
            None => {
                // The text is invalid: rewind the last valid net instead, with a fresh
                // cancellation token (Reset may have cancelled the old one between steps).
                let token = cameleon::CancelToken::new();
                *self
                    .wires
                    .cancel
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token.clone());
                self.cvm()?.set_cancel_token(token);
                self.cvm()?.rewind();
                self.last_end = None;
                self.touch();
            }
        }
        Ok(())
    }

    /// Goes to step `step` of the current path (back, or forward by replay), after switching
    /// to branch number `branch` (an index into the history's branches) if given.
    pub(crate) fn goto(
        &mut self,
        branch: Option<usize>,
        step: Option<usize>,
    ) -> Result<(), ApiError> {
        self.idle()?;
        self.touch();
        let cvm = self.cvm()?;
        if let Some(b) = branch {
            let branches = cvm.branches();
            let Some(br) = branches.get(b) else {
                return Err(ApiError::invalid(format!(
                    "no branch {b}: the history has {} branch(es)",
                    branches.len()
                )));
            };
            cvm.checkout(br.id)
                .map_err(|e| ApiError::conflict(e.to_string()))?;
        }
        if let Some(target) = step {
            while cvm.depth() > target {
                cvm.back().map_err(|e| ApiError::conflict(e.to_string()))?;
            }
            while cvm.depth() < target && cvm.history().redo_len() > 0 {
                match cvm.step() {
                    Ok(Step::Fired { .. }) => {}
                    Ok(Step::Ended(_)) => break,
                    Err(e) => return Err(ApiError::conflict(e.to_string())),
                }
            }
        }
        self.last_end = None;
        Ok(())
    }

    /// Answers the question of `ask` operator `op` (the value in its JSON form). A wrong type,
    /// or an operator that asks nothing, is refused and the net keeps waiting.
    pub(crate) fn provide(&mut self, op: &str, value: Json) -> Result<(), ApiError> {
        self.cvm()?
            .provide_json(op, value)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        self.last_end = None;
        self.touch();
        Ok(())
    }
}
