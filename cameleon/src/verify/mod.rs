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
//! [`follow`] replays a witness in the abstraction and shows the marking along it;
//! [`to_pnml`] exports the abstraction as a 1-safe place/transition net.

use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::connection::ConnState;
use crate::connection::NONE;
use crate::net::Net;

mod explore;
mod follow;
mod model;
mod pnml;

/// Re-exported from the operator contract, where [`Operator::control`](crate::Operator::control)
/// declares it.
pub use crate::operator::FiniteControl;
pub use explore::Progress;
pub use follow::{Change, FollowError, Trace, TraceEnd, TraceStep, follow, parse_witness};
pub use pnml::{PnmlError, to_pnml};

use explore::Graph;
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

/// The overall outcome of a verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every property holds (the whole state space was explored).
    Holds,
    /// Some property fails; its witness is in the report.
    Fails,
    /// The state budget stopped the exploration before any property failed.
    Inconclusive,
}

impl Verdict {
    /// The `cameleon check --verify` exit code: 0 holds, 3 a property fails, 4 the state budget
    /// was used up before a verdict (as `run` exits 4 on its budgets).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Holds => 0,
            Verdict::Fails => 3,
            Verdict::Inconclusive => 4,
        }
    }
}

/// A property with a pass/fail answer and, when it fails, a shortest witness.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `Some(true)` holds, `Some(false)` fails, `None` unknown (state budget used up).
    pub holds: Option<bool>,
    /// When it fails: a shortest firing sequence from the initial marking, as operator instance
    /// names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Vec<String>>,
    /// The same firings, each naming the outputs it chose when the operator has several
    /// emission sets (`gate:out_true`): the exact path, for [`follow`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// Connections NEW at the end of the witness (the stuck tokens of a deadlock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new: Vec<String>,
    /// What went wrong, as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An operator that never fires, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadOperator {
    /// Its instance name.
    pub op: String,
    /// Why it is never enabled.
    pub reason: String,
}

/// The dead-operators property.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeadCheck {
    /// `Some(true)`: every operator is enabled in some reachable state.
    pub holds: Option<bool>,
    /// The operators never enabled (in the explored part, if the budget was used up).
    pub dead: Vec<DeadOperator>,
}

/// Whether runs may loop: a reachable cycle. Information, not a failure: such runs end only by
/// `max_loop_iterations`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoopCheck {
    /// `Some(true)`: a cycle is reachable.
    pub may_loop: Option<bool>,
    /// A shortest firing sequence to a state on a cycle (operator names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// A shortest cycle through that state (operator names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<String>>,
    /// `prefix` with the outputs chosen (see [`Check::path`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_path: Option<Vec<String>>,
    /// `cycle` with the outputs chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_path: Option<Vec<String>>,
}

/// Every property, with its details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Properties {
    /// No reachable terminal state has a NEW connection.
    pub deadlock_free: Check,
    /// From every reachable state a COMPLETED state is reachable (soundness).
    pub option_to_complete: Check,
    /// Every operator is enabled in some reachable state.
    pub no_dead_operators: DeadCheck,
    /// No firing writes a connection that is still NEW (holds by construction, docs/semantics.md §3).
    pub one_safe: Check,
    /// Reachable cycles.
    pub may_loop: LoopCheck,
}

/// What the exploration covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Exploration {
    /// The state budget.
    pub max_states: u64,
    /// Whether the budget stopped the exploration.
    pub budget_hit: bool,
    /// States whose successors were computed.
    pub expanded: u64,
    /// States stored but not expanded.
    pub frontier: u64,
    /// Firings from the initial marking to the deepest stored state.
    pub depth: u64,
}

/// Figures about the exploration itself (not serialized: they vary from run to run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Time spent exploring and analysing.
    pub elapsed: Duration,
    /// Bytes held by the exploration (states, hash table, edges, parents) at its end.
    pub bytes: usize,
}

/// The result of [`verify`]. Serializes to the JSON of `cameleon check --verify --json`.
/// (Not `PartialEq`: its [`Stats`] differ from run to run; compare [`to_json`](Self::to_json).)
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The net passed validation (always true here; the CLI reports invalid files itself).
    pub valid: bool,
    /// The net's name.
    pub net: String,
    /// Overall outcome.
    pub verdict: Verdict,
    /// Whether the whole reachable state space was explored.
    pub complete: bool,
    /// Reachable states stored.
    pub states: u64,
    /// Edges (firings between stored states) found.
    pub edges: u64,
    /// Shorthand for `properties.deadlock_free.holds`.
    pub deadlock_free: Option<bool>,
    /// Shorthand for `properties.option_to_complete.holds`.
    pub option_to_complete: Option<bool>,
    /// Shorthand for `properties.no_dead_operators.holds`.
    pub no_dead_operators: Option<bool>,
    /// Shorthand for `properties.one_safe.holds`.
    pub one_safe: Option<bool>,
    /// Shorthand for `properties.may_loop.may_loop`.
    pub may_loop: Option<bool>,
    /// The witness (operator names) of the first failing property among 1-safety,
    /// deadlock-freedom and option to complete, in that order; `null` if none fails.
    pub witness: Option<Vec<String>>,
    /// That witness with the outputs chosen (see [`Check::path`]); `null` if none fails.
    pub witness_path: Option<Vec<String>>,
    /// Names of the operators never enabled.
    pub dead_operators: Vec<String>,
    /// Every property with its details.
    pub properties: Properties,
    /// What the exploration covered.
    pub exploration: Exploration,
    /// Time and memory.
    #[serde(skip)]
    pub stats: Stats,
}

impl Report {
    /// The report as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
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

/// The actions of the firings along a path of states.
fn actions(model: &mut Model<'_>, g: &Graph, path: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(path.len().saturating_sub(1));
    let mut next = vec![0u64; g.words];
    for pair in path.windows(2) {
        let (a, b) = (g.state(pair[0]).to_vec(), g.state(pair[1]));
        let mut found = None;
        model.for_each_outcome(&a, |m, k| {
            if found.is_none() {
                next.copy_from_slice(&a);
                m.apply(k, &mut next);
                if next == b {
                    found = Some(m.outcomes[k].action);
                }
            }
        });
        // Every edge of the graph is some outcome of its source state.
        out.extend(found);
    }
    out
}

/// A path as (operator names, exact labels).
fn witness(model: &Model<'_>, actions: &[u32]) -> (Vec<String>, Vec<String>) {
    (
        actions.iter().map(|&a| model.name(a).to_owned()).collect(),
        actions.iter().map(|&a| model.label(a)).collect(),
    )
}

fn new_conns(model: &Model<'_>, s: &[u64]) -> Vec<String> {
    (0..model.n_conns)
        .filter(|&c| model.conn(s, c) == ConnState::New)
        .map(|c| model.net.conns[c].name.clone())
        .collect()
}

fn analyse(model: &mut Model<'_>, g: &Graph, opts: &VerifyOptions) -> Report {
    let complete = !g.budget_hit;
    let n = g.len();

    // 1-safety: a firing that writes a connection still NEW.
    let one_safe = match g.overwrite {
        Some((state, k)) => {
            let oc = model.outcomes[k];
            let mut acts = actions(model, g, &g.path_to(state));
            acts.push(oc.action);
            let (names, path) = witness(model, &acts);
            let conn = &model.net.conns[oc.overwrites as usize].name;
            Check {
                holds: Some(false),
                witness: Some(names),
                path: Some(path),
                new: vec![conn.clone()],
                message: Some(format!(
                    "the last firing writes `{conn}` while it still holds an unconsumed token: \
                     a token is lost. This breaks docs/semantics.md §3.2 (back-pressure); the operator's \
                     `consumes` or its declared control is inconsistent"
                )),
            }
        }
        None => Check {
            holds: complete.then_some(true),
            ..Check::default()
        },
    };

    // Deadlocks: terminal states with a NEW connection. The first found is a shallowest one.
    let deadlocked: Vec<bool> = (0..g.expanded())
        .map(|id| g.terminal[id] && model.any_new(g.state(id as u32)))
        .collect();
    let deadlock_of = |id: usize| deadlocked.get(id).copied().unwrap_or(false);
    let first_deadlock = (0..g.expanded()).find(|&id| deadlock_of(id));
    let deadlock_free = match first_deadlock {
        Some(id) => {
            let s = g.state(id as u32).to_vec();
            let stuck = new_conns(model, &s);
            let acts = actions(model, g, &g.path_to(id as u32));
            let (names, path) = witness(model, &acts);
            Check {
                holds: Some(false),
                witness: Some(names),
                path: Some(path),
                message: Some(format!(
                    "DEADLOCK: no operator is enabled but {} still hold{} a token: {}",
                    plural(stuck.len(), "connection", "connections"),
                    if stuck.len() == 1 { "s" } else { "" },
                    stuck
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                new: stuck,
            }
        }
        None => Check {
            holds: complete.then_some(true),
            ..Check::default()
        },
    };

    // Option to complete: every state reaches a COMPLETED one (terminal, nothing NEW).
    let option_to_complete = if complete {
        let can = explore::coreachable(g, model, |v| {
            let v = v as usize;
            v < g.expanded() && g.terminal[v] && !deadlocked[v]
        });
        match (0..n).find(|&id| !can[id]) {
            Some(id) => {
                let reaches_deadlock = forward_reaches(g, id as u32, |v| deadlock_of(v as usize));
                let s = g.state(id as u32).to_vec();
                // An empty witness means the initial marking itself cannot complete.
                let from = if id == 0 {
                    "from the initial marking"
                } else {
                    "from where the witness ends"
                };
                let message = if deadlock_of(id) {
                    "the witness ends in DEADLOCK, not COMPLETED".to_owned()
                } else if reaches_deadlock {
                    format!(
                        "{from} no run reaches COMPLETED: each one deadlocks or never ends (a trap)"
                    )
                } else {
                    format!(
                        "{from} no run ever ends: operators keep firing but COMPLETED is unreachable \
                         (a livelock)"
                    )
                };
                let acts = actions(model, g, &g.path_to(id as u32));
                let (names, path) = witness(model, &acts);
                Check {
                    holds: Some(false),
                    witness: Some(names),
                    path: Some(path),
                    new: new_conns(model, &s),
                    message: Some(message),
                }
            }
            None => Check {
                holds: Some(true),
                ..Check::default()
            },
        }
    } else if let Some(d) = &deadlock_free.witness {
        Check {
            holds: Some(false),
            witness: Some(d.clone()),
            path: deadlock_free.path.clone(),
            new: deadlock_free.new.clone(),
            message: Some("the run ends in DEADLOCK, not COMPLETED".to_owned()),
        }
    } else {
        Check::default()
    };

    // Dead operators.
    let mut dead = Vec::new();
    for (o, node) in model.net.ops.iter().enumerate() {
        if g.op_enabled[o] {
            continue;
        }
        let never_new: Vec<&str> = model
            .topo
            .ins(o)
            .iter()
            .filter(|&&c| c != NONE)
            .filter(|&&c| {
                let f = model.fields[c as usize];
                g.ever_new[f.word as usize] & (1 << f.shift) == 0
            })
            .map(|&c| model.net.conns[c as usize].name.as_str())
            .collect();
        let reason = if !never_new.is_empty() {
            format!(
                "its input{} {} never receive{} a token",
                if never_new.len() == 1 { "" } else { "s" },
                never_new
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if never_new.len() == 1 { "s" } else { "" }
            )
        } else {
            let p = model.topo.policy[o];
            format!(
                "its firing rule never holds with its outputs free (policy `{p}`: {})",
                p.describe()
            )
        };
        dead.push(DeadOperator {
            op: node.name.clone(),
            reason,
        });
    }
    let no_dead_operators = DeadCheck {
        holds: if dead.is_empty() {
            complete.then_some(true)
        } else if complete {
            Some(false)
        } else {
            None
        },
        dead: if complete || dead.is_empty() {
            dead
        } else {
            Vec::new()
        },
    };

    // Cycles.
    let cyclic = explore::on_cycle(g);
    let may_loop = match (0..n).find(|&id| cyclic[id]) {
        Some(id) => {
            let prefix = actions(model, g, &g.path_to(id as u32));
            let cycle = explore::shortest_cycle(g, id as u32)
                .map(|path| actions(model, g, &path))
                .unwrap_or_default();
            let ((prefix, prefix_path), (cycle, cycle_path)) =
                (witness(model, &prefix), witness(model, &cycle));
            LoopCheck {
                may_loop: Some(true),
                prefix: Some(prefix),
                cycle: Some(cycle),
                prefix_path: Some(prefix_path),
                cycle_path: Some(cycle_path),
            }
        }
        None => LoopCheck {
            may_loop: complete.then_some(false),
            ..LoopCheck::default()
        },
    };

    let props = Properties {
        deadlock_free,
        option_to_complete,
        no_dead_operators,
        one_safe,
        may_loop,
    };
    let checks = [
        props.one_safe.holds,
        props.deadlock_free.holds,
        props.option_to_complete.holds,
        props.no_dead_operators.holds,
    ];
    let verdict = if checks.contains(&Some(false)) {
        Verdict::Fails
    } else if checks.iter().all(|c| *c == Some(true)) {
        Verdict::Holds
    } else {
        Verdict::Inconclusive
    };
    let first_failing = [
        &props.one_safe,
        &props.deadlock_free,
        &props.option_to_complete,
    ]
    .into_iter()
    .find(|c| c.witness.is_some());
    let witness = first_failing.and_then(|c| c.witness.clone());
    let witness_path = first_failing.and_then(|c| c.path.clone());
    let depth = if n == 0 {
        0
    } else {
        g.depth(n as u32 - 1) as u64
    };
    Report {
        valid: true,
        net: model.net.name.clone(),
        verdict,
        complete,
        states: n as u64,
        edges: g.edges(),
        deadlock_free: props.deadlock_free.holds,
        option_to_complete: props.option_to_complete.holds,
        no_dead_operators: props.no_dead_operators.holds,
        one_safe: props.one_safe.holds,
        may_loop: props.may_loop.may_loop,
        witness,
        witness_path,
        dead_operators: props
            .no_dead_operators
            .dead
            .iter()
            .map(|d| d.op.clone())
            .collect(),
        properties: props,
        exploration: Exploration {
            max_states: opts.max_states,
            budget_hit: g.budget_hit,
            expanded: g.expanded() as u64,
            frontier: (n - g.expanded()) as u64,
            depth,
        },
        stats: Stats::default(),
    }
}

/// Whether some state satisfying `hit` is reachable from `from`.
fn forward_reaches(g: &Graph, from: u32, hit: impl Fn(u32) -> bool) -> bool {
    let mut seen = vec![false; g.len()];
    let mut stack = vec![from];
    seen[from as usize] = true;
    while let Some(v) = stack.pop() {
        if hit(v) {
            return true;
        }
        for &w in g.successors(v) {
            if !seen[w as usize] {
                seen[w as usize] = true;
                stack.push(w);
            }
        }
    }
    false
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn mark(h: Option<bool>) -> &'static str {
    match h {
        Some(true) => "ok  ",
        Some(false) => "FAIL",
        None => "?   ",
    }
}

fn seq(labels: &[String]) -> String {
    if labels.is_empty() {
        "(the initial marking)".to_owned()
    } else {
        labels.join(" → ")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.exploration;
        write!(
            f,
            "net `{}`: {} reachable states, {} edges",
            self.net, self.states, self.edges
        )?;
        if self.complete {
            writeln!(f, " (state space explored completely)")?;
        } else {
            writeln!(
                f,
                "\n  state budget of {} used up: {} states expanded to depth {}, {} not expanded; \
                 raise it with --max-states",
                e.max_states, e.expanded, e.depth, e.frontier
            )?;
        }
        let p = &self.properties;
        let check = |f: &mut fmt::Formatter<'_>, name: &str, c: &Check| -> fmt::Result {
            writeln!(f, "  [{}] {name}", mark(c.holds))?;
            if let Some(m) = &c.message {
                writeln!(f, "         {m}")?;
            }
            if let Some(w) = &c.path {
                writeln!(f, "         witness: {}", seq(w))?;
            }
            Ok(())
        };
        check(f, "deadlock-free", &p.deadlock_free)?;
        check(f, "option to complete", &p.option_to_complete)?;
        writeln!(
            f,
            "  [{}] no dead operators",
            mark(p.no_dead_operators.holds)
        )?;
        for d in &p.no_dead_operators.dead {
            writeln!(f, "         `{}` never fires: {}", d.op, d.reason)?;
        }
        check(f, "1-safe", &p.one_safe)?;
        match p.may_loop.may_loop {
            Some(true) => {
                writeln!(
                    f,
                    "  [info] may loop (runs that only max_loop_iterations stops)"
                )?;
                if let (Some(pre), Some(cyc)) = (&p.may_loop.prefix_path, &p.may_loop.cycle_path) {
                    writeln!(f, "         after: {}", seq(pre))?;
                    writeln!(f, "         cycle: {}", seq(cyc))?;
                }
            }
            Some(false) => writeln!(f, "  [info] no cycle: every run ends")?,
            None => writeln!(f, "  [info] no cycle found in the explored part")?,
        }
        write!(
            f,
            "verdict: {}",
            match self.verdict {
                Verdict::Holds => "every property holds",
                Verdict::Fails => "a property fails",
                Verdict::Inconclusive => "inconclusive (state budget used up)",
            }
        )
    }
}

#[cfg(test)]
mod tests;
