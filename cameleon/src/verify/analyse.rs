//! From the explored state graph to the [`Report`]: each property of docs/semantics.md §8
//! decided on the graph, with a witness when it fails — a shortest one for a full exploration,
//! a real one of the reduced graph under reduction (§8.6).

use super::VerifyOptions;
use super::explore::{self, Explored, Scc};
use super::model::Model;
use super::report::{
    Check, DeadCheck, DeadOperator, Exploration, LoopCheck, Properties, Report, Stats, Verdict,
};
use crate::connection::ConnState;
use crate::connection::NONE;

/// The actions of the firings along a path of states.
pub(super) fn actions(model: &mut Model<'_>, g: &Explored, path: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(path.len().saturating_sub(1));
    let mut next = vec![0u64; model.words];
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
pub(super) fn witness(model: &Model<'_>, actions: &[u32]) -> (Vec<String>, Vec<String>) {
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

/// What the graph analyses found: per state whether it can complete, and the first state on
/// a cycle.
struct GraphFacts {
    /// `None` when not computed (the exploration is incomplete, or nothing can fail).
    can_complete: Option<Vec<bool>>,
    first_cyclic: Option<u32>,
}

/// Runs the strongly-connected-component pass when needed: for option to complete when the
/// graph may have a state that cannot complete (a deadlock, or a cycle), and for cycles when
/// some edge does not raise the potential.
fn graph_facts(model: &mut Model<'_>, g: &Explored) -> GraphFacts {
    let complete = !g.budget_hit;
    let need_can = complete && !(g.all_grow && g.first_deadlock.is_none());
    let need_cycles = !g.all_grow;
    if !need_can && !need_cycles {
        return GraphFacts {
            can_complete: None,
            first_cyclic: None,
        };
    }
    let n = g.len();
    let mut can = if need_can { vec![false; n] } else { Vec::new() };
    let mut first_cyclic: Option<u32> = None;
    let expanded = g.expanded;
    // The successor function needs the model mutably; so does `target`: share it by a cell.
    let model = std::cell::RefCell::new(model);
    explore::tarjan(
        n,
        |v, out| g.successors(&mut model.borrow_mut(), v, out),
        |v, has_succ| !has_succ && (v as usize) < expanded && !model.borrow().any_new(g.state(v)),
        |members: &[u32], scc: Scc| {
            if scc.cyclic {
                let m = members.iter().copied().min().unwrap_or(0);
                first_cyclic = Some(first_cyclic.map_or(m, |f| f.min(m)));
            }
            if need_can && scc.reaches_target {
                for &m in members {
                    can[m as usize] = true;
                }
            }
        },
    );
    GraphFacts {
        can_complete: need_can.then_some(can),
        first_cyclic,
    }
}

pub(super) fn analyse(model: &mut Model<'_>, g: &Explored, opts: &VerifyOptions) -> Report {
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
    let deadlock_free = match g.first_deadlock {
        Some(id) => {
            let s = g.state(id).to_vec();
            let stuck = new_conns(model, &s);
            let acts = actions(model, g, &g.path_to(id));
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

    let facts = graph_facts(model, g);

    // Option to complete: every state reaches a COMPLETED one (terminal, nothing NEW). With no
    // deadlock and no cycle every run ends, and ends COMPLETED.
    let option_to_complete = if let Some(can) = &facts.can_complete {
        match (0..n).find(|&id| !can[id]) {
            Some(id) => {
                let id = id as u32;
                let deadlock_of = |model: &mut Model<'_>, v: u32| {
                    g.terminal(model, v) && model.any_new(g.state(v))
                };
                let reaches_deadlock = {
                    let model = std::cell::RefCell::new(&mut *model);
                    explore::forward_reaches(
                        id,
                        |v, out| g.successors(&mut model.borrow_mut(), v, out),
                        |v| deadlock_of(&mut model.borrow_mut(), v),
                    )
                };
                let s = g.state(id).to_vec();
                // An empty witness means the initial marking itself cannot complete.
                let from = if id == 0 {
                    "from the initial marking"
                } else {
                    "from where the witness ends"
                };
                let message = if deadlock_of(model, id) {
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
                let acts = actions(model, g, &g.path_to(id));
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
    } else if complete {
        Check {
            holds: Some(true),
            ..Check::default()
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

    let may_loop = lasso(model, g, facts.first_cyclic);

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
        g.path_to(n as u32 - 1).len() as u64 - 1
    };
    Report {
        valid: true,
        net: model.net.name.clone(),
        verdict,
        complete,
        reduced: g.reduced(),
        states: n as u64,
        edges: g.n_edges,
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
            expanded: g.expanded as u64,
            frontier: (n - g.expanded) as u64,
            depth,
            proviso_expansions: g.proviso_expansions,
        },
        stats: Stats::default(),
    }
}

/// The may-loop property: a shortest prefix to the first state on a cycle (`first_cyclic`)
/// and a shortest cycle through it.
pub(super) fn lasso(model: &mut Model<'_>, g: &Explored, first_cyclic: Option<u32>) -> LoopCheck {
    match first_cyclic {
        Some(id) => {
            let prefix = actions(model, g, &g.path_to(id));
            let cycle = {
                let cell = std::cell::RefCell::new(&mut *model);
                explore::shortest_cycle(id, |v, out| g.successors(&mut cell.borrow_mut(), v, out))
            }
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
                lasso: None,
            }
        }
        None => LoopCheck {
            may_loop: (!g.budget_hit).then_some(false),
            ..LoopCheck::default()
        },
    }
}

/// The first state on a cycle of `g`, if any (for [`lasso`] on another exploration).
pub(super) fn first_cyclic(model: &mut Model<'_>, g: &Explored) -> Option<u32> {
    graph_facts(model, g).first_cyclic
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
