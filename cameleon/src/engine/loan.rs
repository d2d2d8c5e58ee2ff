//! Lending an operator to tokio's blocking pool: its place in the net holds a placeholder
//! until it comes back, whatever happens to the step's future.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::operator::{Firing, OpError, OpSpec, Operator};
use crate::policy::{Family, Policy};
use crate::types::Value;

type BlockingResult = Result<Vec<(u16, Value)>, OpError>;

/// Where a lent operator comes back, with its result.
#[derive(Default)]
struct Returned {
    slot: Mutex<Option<(Box<dyn Operator>, BlockingResult)>>,
    ready: Condvar,
}

impl Returned {
    fn put(&self, op: Box<dyn Operator>, r: BlockingResult) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((op, r));
        self.ready.notify_all();
    }
}

/// The engine's side of a lent operator: its place in the net holds a placeholder until
/// [`take_back`](Self::take_back). If the step's future is dropped while the operator is out,
/// dropping the loan waits for it, so the net is never left without its operator.
pub(super) struct Loan<'a> {
    slot: &'a mut Box<dyn Operator>,
    back: Arc<Returned>,
    out: bool,
}

/// The pool thread's side: carries the operator there and always sends it back, even if the
/// task is dropped unrun (runtime shutdown) or unwinds.
pub(super) struct Carrier {
    op: Option<Box<dyn Operator>>,
    back: Arc<Returned>,
}

impl<'a> Loan<'a> {
    pub(super) fn new(slot: &'a mut Box<dyn Operator>) -> (Self, Carrier) {
        let op = std::mem::replace(slot, Box::new(OnLoan));
        let back = Arc::new(Returned::default());
        let carrier = Carrier {
            op: Some(op),
            back: Arc::clone(&back),
        };
        (
            Loan {
                slot,
                back,
                out: true,
            },
            carrier,
        )
    }

    /// Puts the operator back in the net (waiting for it if it is still out) and returns its
    /// result.
    pub(super) fn take_back(&mut self) -> BlockingResult {
        let mut g = self
            .back
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some((op, r)) = g.take() {
                *self.slot = op;
                self.out = false;
                return r;
            }
            g = self
                .back
                .ready
                .wait(g)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if self.out {
            let _ = self.take_back();
        }
    }
}

impl Carrier {
    pub(super) fn run(mut self, f: impl FnOnce(&mut dyn Operator) -> BlockingResult) {
        let Some(op) = self.op.as_deref_mut() else {
            return;
        };
        let r = f(op);
        if let Some(op) = self.op.take() {
            self.back.put(op, r);
        }
    }
}

impl Drop for Carrier {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            self.back.put(
                op,
                Err(OpError::new(
                    "not run: the runtime shut down before the firing started",
                )),
            );
        }
    }
}

/// Stands in the net for an operator lent to the blocking pool. Never fired: the engine does
/// not look at the operator's place until it is back.
struct OnLoan;

impl Operator for OnLoan {
    fn spec(&self) -> OpSpec {
        OpSpec::new("lent", "Lent", Family::Behavioral, Policy::Custom)
    }
    fn can_fire(&self, _e: &crate::policy::Enabling<'_>) -> bool {
        false
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new("the operator is running on the blocking pool"))
    }
}
