//! The verifier: explores a net's control abstraction and checks its properties (docs/semantics.md §8).
//!
//! The abstraction's state is the vector of connection states (EMPTY/NEW/OLD) plus the finite
//! control state an operator may declare ([`FiniteControl`]); data is abstracted away, so a
//! data-dependent operator (a Gate, a Guard) contributes one successor per declared emission set.
//! Successors follow the engine's own enabling rules (docs/semantics.md §3–§4) with interleaving semantics;
//! the exploration is breadth-first from the initial marking. By default it is reduced with
//! stubborn sets ([`Reduction::Stubborn`], docs/semantics.md §8.6), which decides every property
//! exactly without storing every interleaving; [`Reduction::None`] explores every state, and
//! every witness is then a shortest firing sequence.
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Fork, Join, Sink, Source, Transform};
//! use cameleon::verify::{Reduction, Verdict, VerifyOptions, verify};
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
//! let net = b.build()?;
//! let report = verify(&net, &VerifyOptions::default());
//! assert_eq!(report.verdict, Verdict::Holds);
//! assert_eq!(report.deadlock_free, Some(true));
//! assert_eq!(report.states, 7); // reduced: `a` before `b`, not both orders
//!
//! let full = verify(&net, &VerifyOptions::default().reduce(Reduction::None));
//! assert_eq!(full.states, 8); // src, split, a and b in either order (4), both, out
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
mod migration;
mod model;
mod numbering;
mod parallel;
mod pnml;
mod reduce;
mod report;
mod store;
#[cfg(test)]
mod tests;
mod timing;

/// Re-exported from the operator contract, where [`Operator::control`](crate::Operator::control)
/// declares it.
pub use crate::operator::FiniteControl;
pub use explore::Progress;
pub use follow::{Change, FollowError, Trace, TraceEnd, TraceStep, follow, parse_witness};
pub use migration::{
    ControlState, MigrationProof, RegionState, SafeRegion, map_connections, map_control,
    map_operators, prove_migration, renamed, safe_region,
};
pub use pnml::{PnmlError, to_pnml};
pub use report::{
    Check, DeadCheck, DeadOperator, Exploration, LoopCheck, NOT_CHECKED_UNDER_REDUCTION,
    Properties, Report, Stats, Verdict,
};

use analyse::analyse;
use model::Model;

/// Default state budget of an exploration.
pub const DEFAULT_MAX_STATES: u64 = 1_000_000;

/// Which state space [`verify`] explores (docs/semantics.md §8.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Every reachable state: witnesses are shortest, the counts are the state space's.
    None,
    /// Partial-order reduction with stubborn sets and the cycle proviso: the same verdicts for
    /// every property, from far fewer states when operators run in parallel; witnesses are real
    /// firing sequences, not always the shortest. The default.
    #[default]
    Stubborn,
}

/// Options of [`verify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyOptions {
    /// At most this many states are stored; past it the exploration stops and the report says
    /// what it covered ([`Verdict::Inconclusive`] unless a property already failed).
    pub max_states: u64,
    /// The state space explored.
    pub reduce: Reduction,
    /// Threads of the full exploration (docs/semantics.md §8.8): `0` (the default) for one per
    /// core, at most [`MAX_THREADS`] (more counts as that many). The report is the same for
    /// every count.
    pub threads: usize,
}

/// The most threads an exploration uses.
pub const MAX_THREADS: usize = 1024;

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            max_states: DEFAULT_MAX_STATES,
            reduce: Reduction::default(),
            threads: 0,
        }
    }
}

impl VerifyOptions {
    /// Sets the state budget.
    pub fn max_states(mut self, n: u64) -> Self {
        self.max_states = n;
        self
    }

    /// Sets the state space explored.
    pub fn reduce(mut self, r: Reduction) -> Self {
        self.reduce = r;
        self
    }

    /// Sets the number of threads (`0`: one per core).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
}

/// The connection states (in declaration order) of every reachable COMPLETED state of `net`'s
/// control abstraction (docs/semantics.md §8), in discovery order; `None` when the exploration
/// stopped at `max_states` first. A sub-net's emission sets are read from them: which of its
/// `output`s can have received a value when it completes (docs/semantics.md §10.2).
pub fn completed_markings(net: &Net, max_states: u64) -> Option<Vec<Vec<ConnState>>> {
    let mut model = Model::new(net);
    let g = parallel::explore_full(&mut model, max_states, 1, &mut |_| {});
    if g.budget_hit {
        return None;
    }
    let mut out = Vec::new();
    for id in 0..g.expanded as u32 {
        let s = g.state(id).to_vec();
        if g.terminal(&mut model, id) && !model.any_new(&s) {
            out.push((0..model.n_conns).map(|c| model.conn(&s, c)).collect());
        }
    }
    Some(out)
}

/// The connection states (in declaration order) of every reachable state of `net`'s control
/// abstraction (docs/semantics.md §8.1) — the full state space, not a reduced one — in
/// discovery order; `None` when the exploration stopped at `max_states` first. A property of
/// single markings (two sections of a `mutex` are never inside at once) is checked on them.
pub fn reachable_markings(net: &Net, max_states: u64) -> Option<Vec<Vec<ConnState>>> {
    let mut model = Model::new(net);
    let g = parallel::explore_full(&mut model, max_states, 1, &mut |_| {});
    if g.budget_hit {
        return None;
    }
    Some(
        (0..g.len() as u32)
            .map(|id| {
                let s = g.state(id);
                (0..model.n_conns).map(|c| model.conn(s, c)).collect()
            })
            .collect(),
    )
}

/// Explores `net`'s control abstraction and checks the properties of docs/semantics.md §8.
pub fn verify(net: &Net, opts: &VerifyOptions) -> Report {
    verify_with(net, opts, &mut |_| {})
}

/// [`verify`], calling `progress` now and then (once 65 536 more states are expanded — for a
/// full exploration, at the end of a level of the breadth-first search — and at the end): for
/// a progress bar.
pub fn verify_with(net: &Net, opts: &VerifyOptions, progress: &mut dyn FnMut(&Progress)) -> Report {
    verify_split(net, opts, parallel::Split::DEFAULT, progress)
}

/// [`verify_with`], levels shared out between threads as `split` says.
pub(crate) fn verify_split(
    net: &Net,
    opts: &VerifyOptions,
    split: parallel::Split,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    let t0 = Instant::now();
    let mut model = Model::new(net);
    let g = match opts.reduce {
        Reduction::None => {
            parallel::explore_split(&mut model, opts.max_states, opts.threads, split, progress)
        }
        Reduction::Stubborn => reduce::explore_reduced(&mut model, opts.max_states, progress),
    };
    let mut report = analyse(&mut model, &g, opts);
    let mut bytes = g.bytes();
    let mut timing = g.timing;
    drop(g);
    if report.reduced && report.may_loop == Some(true) {
        // A cycle is reachable (the reduction preserves that), but the shortest lasso is one of
        // the full state space: explore it, within the budget.
        let full =
            parallel::explore_split(&mut model, opts.max_states, opts.threads, split, progress);
        bytes = bytes.max(full.bytes());
        timing.add(full.timing);
        report.properties.may_loop = if full.budget_hit {
            LoopCheck {
                may_loop: Some(true),
                lasso: Some(NOT_CHECKED_UNDER_REDUCTION),
                ..LoopCheck::default()
            }
        } else {
            let first = analyse::first_cyclic(&mut model, &full);
            analyse::lasso(&mut model, &full, first)
        };
    }
    report.stats = Stats {
        elapsed: t0.elapsed(),
        bytes,
        serial: timing.serial,
        critical: timing.critical,
    };
    report
}
