//! The verifier: explores a net's control abstraction and checks its properties (docs/semantics.md §8).
//!
//! The abstraction's state is the vector of connection states (EMPTY/NEW/OLD) plus the finite
//! control state an operator may declare ([`FiniteControl`]); data is abstracted away, so a
//! data-dependent operator (a Gate, a Guard) contributes one successor per declared emission set.
//! Successors follow the engine's own enabling rules (docs/semantics.md §3–§4) with interleaving semantics;
//! the exploration is breadth-first from the initial marking, so every witness is a shortest
//! firing sequence.
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Fork, Join, Sink, Source, Transform};
//! use cameleon::verify::{Verdict, VerifyOptions, verify};
//!
//! let mut b = Net::builder("sync");
//! b.add("src", Source::new("x"));
//! b.add("split", Fork::<Any>::default());
//! b.add("a", Transform::new());
//! b.add("b", Transform::new());
//! b.add("both", Join::<Any>::default());
//! b.add("out", Sink::new());
//! b.connect("src.out_data", "split.in_data")
//!     .connect("split.out_a", "a.in_data")
//!     .connect("split.out_b", "b.in_data")
//!     .connect("a.out_data", "both.in_a")
//!     .connect("b.out_data", "both.in_b")
//!     .connect("both.out_data", "out.in_data");
//! let report = verify(&b.build()?, &VerifyOptions::default());
//!
//! assert_eq!(report.verdict, Verdict::Holds);
//! assert_eq!(report.states, 8); // src, split, a and b in either order (4), both, out
//! assert_eq!(report.deadlock_free, Some(true));
//! # Ok::<(), cameleon::NetError>(())
//! ```
//!
//! [`follow`](fn@follow) replays a witness in the abstraction and shows the marking along it;
//! [`to_pnml`] exports the abstraction as a 1-safe place/transition net.

// The entry points and their options are here; the report's types are in `report`, how the
// explored graph becomes a report in `analyse`, and the report's text form in `display`.

use std::time::Instant;

use crate::connection::ConnState;
use crate::net::Net;

mod analyse;
mod display;
mod explore;
mod follow;
mod model;
mod pnml;
mod report;
#[cfg(test)]
mod tests;

/// Re-exported from the operator contract, where [`Operator::control`](crate::Operator::control)
/// declares it.
pub use crate::operator::FiniteControl;
pub use explore::Progress;
pub use follow::{Change, FollowError, Trace, TraceEnd, TraceStep, follow, parse_witness};
pub use pnml::{PnmlError, to_pnml};
pub use report::{
    Check, DeadCheck, DeadOperator, Exploration, LoopCheck, Properties, Report, Stats, Verdict,
};

use analyse::analyse;
use model::Model;

/// Default state budget of an exploration.
pub const DEFAULT_MAX_STATES: u64 = 1_000_000;

/// Options of [`verify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyOptions {
    /// At most this many states are stored; past it the exploration stops and the report says
    /// what it covered ([`Verdict::Inconclusive`] unless a property already failed).
    pub max_states: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            max_states: DEFAULT_MAX_STATES,
        }
    }
}

impl VerifyOptions {
    /// Sets the state budget.
    pub fn max_states(mut self, n: u64) -> Self {
        self.max_states = n;
        self
    }
}

/// The connection states (in declaration order) of every reachable COMPLETED state of `net`'s
/// control abstraction (docs/semantics.md §8), in discovery order; `None` when the exploration
/// stopped at `max_states` first. A sub-net's emission sets are read from them: which of its
/// `output`s can have received a value when it completes (docs/semantics.md §10.2).
pub fn completed_markings(net: &Net, max_states: u64) -> Option<Vec<Vec<ConnState>>> {
    let mut model = Model::new(net);
    let g = explore::explore(&mut model, max_states, &mut |_| {});
    if g.budget_hit {
        return None;
    }
    let mut out = Vec::new();
    for id in 0..g.expanded() {
        let s = g.state(id as u32);
        if g.terminal[id] && !model.any_new(s) {
            out.push((0..model.n_conns).map(|c| model.conn(s, c)).collect());
        }
    }
    Some(out)
}

/// Explores `net`'s control abstraction and checks the properties of docs/semantics.md §8.
pub fn verify(net: &Net, opts: &VerifyOptions) -> Report {
    verify_with(net, opts, &mut |_| {})
}

/// [`verify`], calling `progress` now and then (every 65 536 expanded states, and at the end) —
/// for a progress bar.
pub fn verify_with(net: &Net, opts: &VerifyOptions, progress: &mut dyn FnMut(&Progress)) -> Report {
    let t0 = Instant::now();
    let mut model = Model::new(net);
    let g = explore::explore(&mut model, opts.max_states, progress);
    let mut report = analyse(&mut model, &g, opts);
    report.stats = Stats {
        elapsed: t0.elapsed(),
        bytes: g.bytes(),
    };
    report
}
