//! Proving a migration safe before a run moves (docs/migration.md): a control state of net OLD
//! mapped onto net NEW by connection identity and operator ids, then (a) deadlock-freedom and
//! the option to complete decided from it on NEW, as `check --verify` decides them from the
//! initial marking (with the same reduction), and (b) whether NEW itself reaches it from its
//! initial marking, decided on the **full** state space (a reduced one preserves deadlocks, not
//! the reachability of an arbitrary marking). A marking NEW cannot reach is the dynamic-change
//! bug: some operator's work would be skipped, or done twice.

use std::collections::HashMap;

use serde::Serialize;

use super::analyse::{actions, analyse, witness};
use super::explore::Explored;
use super::model::Model;
use super::{Check, Reduction, VerifyOptions, parallel, reduce};
use crate::connection::ConnState;
use crate::net::Net;

/// A state of a net's control abstraction (docs/semantics.md §8.1), by declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ControlState {
    /// Each connection's state.
    pub conns: Vec<ConnState>,
    /// Each operator's control state, for an operator that declares one
    /// ([`FiniteControl`](crate::operator::FiniteControl)); `None`: the one the operator is in.
    pub control: Vec<Option<u32>>,
}

impl ControlState {
    /// Every connection EMPTY, every operator in the control state it is in.
    pub fn empty(net: &Net) -> Self {
        ControlState {
            conns: vec![ConnState::Empty; net.connections().len()],
            control: vec![None; net.operators().len()],
        }
    }
}

/// `name` with its operator ids renamed (`a.out -> b.in`, or an operator id).
pub fn renamed(name: &str, renames: &[(String, String)]) -> String {
    let op = |id: &str| -> String {
        renames
            .iter()
            .find(|(from, _)| from == id)
            .map_or_else(|| id.to_owned(), |(_, to)| to.clone())
    };
    let end = |e: &str| match e.split_once('.') {
        Some((o, p)) => format!("{}.{p}", op(o)),
        None => op(e),
    };
    match name.split_once(" -> ") {
        Some((f, t)) => format!("{} -> {}", end(f), end(t)),
        None => op(name),
    }
}

/// Where each connection of OLD goes in NEW: the connection with the same (renamed) name and
/// the same data type; `Err`: why it has none.
pub fn map_connections(
    old: &Net,
    new: &Net,
    renames: &[(String, String)],
) -> Vec<Result<usize, String>> {
    old.connections()
        .iter()
        .map(|c| {
            let name = renamed(&c.name, renames);
            let Some(id) = new.conn_id(&name) else {
                return Err(format!("NEW has no connection `{name}`"));
            };
            let to = &new.connections()[id.index()];
            if to.ty.name != c.ty.name {
                return Err(format!(
                    "`{name}` carries {} in NEW, {} in OLD",
                    to.ty.name, c.ty.name
                ));
            }
            Ok(id.index())
        })
        .collect()
}

/// Where each operator of OLD goes in NEW (same renamed id; `None`: NEW lacks it), and whether
/// its type is the same there.
pub fn map_operators(
    old: &Net,
    new: &Net,
    renames: &[(String, String)],
) -> Vec<Option<(usize, bool)>> {
    old.operators()
        .iter()
        .map(|o| {
            let id = new.op_id(&renamed(&o.name, renames))?;
            let same = new.op(id).spec.type_id == o.spec.type_id;
            Some((id.index(), same))
        })
        .collect()
}

/// Maps control state `s` of OLD onto NEW: each token to its connection, each declared control
/// state to its operator when the type is the same (else NEW's operator starts in its own).
/// A token (NEW or OLD: a consumed one records that the work before it was done) on a
/// connection NEW lacks, or whose type changed, cannot move: `Err` lists them all.
pub fn map_control(
    old: &Net,
    new: &Net,
    renames: &[(String, String)],
    s: &ControlState,
) -> Result<ControlState, Vec<String>> {
    let conns = map_connections(old, new, renames);
    let ops = map_operators(old, new, renames);
    let mut out = ControlState::empty(new);
    let mut cannot = Vec::new();
    for (c, to) in conns.iter().enumerate() {
        match (s.conns.get(c).copied().unwrap_or(ConnState::Empty), to) {
            (ConnState::Empty, _) => {}
            (st, Ok(t)) => out.conns[*t] = st,
            (_, Err(why)) => cannot.push(format!(
                "the token on `{}`: {why}",
                old.connections()[c].name
            )),
        }
    }
    for (o, to) in ops.iter().enumerate() {
        if let (Some(q), Some((t, true))) = (s.control.get(o).copied().flatten(), to) {
            out.control[*t] = Some(q);
        }
    }
    if cannot.is_empty() {
        Ok(out)
    } else {
        Err(cannot)
    }
}

/// What the verifier decides of a mapped marking on NEW.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MigrationProof {
    /// (a) No run from the mapped marking ends in DEADLOCK; a witness from it when one does.
    pub deadlock_free: Check,
    /// (a) From every state reachable from the mapped marking, COMPLETED is reachable.
    pub option_to_complete: Check,
    /// (b) Whether NEW reaches the mapped marking from its own initial marking (`None`: the
    /// state budget ran out first).
    pub reachable: Option<bool>,
    /// When reachable: a shortest firing sequence of NEW to it, from its initial marking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached_by: Option<Vec<String>>,
    /// When not: the operators whose work would be skipped (NEW would have passed a token
    /// to them by now, the run never will), against the nearest marking NEW reaches (the
    /// fewest connections in another state, a misplaced unconsumed token counting three).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// When not: the operators whose work would be duplicated or out of place (the run holds
    /// a token before them that NEW could not hold there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicated: Vec<String>,
    /// When not reachable: the explanation, as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// States of NEW's full state space explored for (b).
    pub states: u64,
}

impl MigrationProof {
    /// (a) holds: the run, moved, cannot deadlock and can always complete.
    pub fn completes(&self) -> bool {
        self.deadlock_free.holds == Some(true) && self.option_to_complete.holds == Some(true)
    }

    /// (a) and (b) hold.
    pub fn safe(&self) -> bool {
        self.completes() && self.reachable == Some(true)
    }
}

/// NEW's full state space from its initial marking, explored once for many questions.
struct Space<'n> {
    model: Model<'n>,
    g: Explored,
}

impl<'n> Space<'n> {
    fn new(net: &'n Net, max_states: u64) -> Self {
        let mut model = Model::new(net);
        let g = parallel::explore_full(&mut model, max_states, 1, &mut |_| {});
        Space { model, g }
    }

    fn pack(&self, at: &ControlState) -> Vec<u64> {
        pack(&self.model, at)
    }

    /// (b), with its explanation.
    fn reach(&mut self, target: &[u64], proof: &mut MigrationProof) {
        proof.states = self.g.len() as u64;
        if let Some(id) = self.g.find(target) {
            let acts = actions(&mut self.model, &self.g, &self.g.path_to(id));
            proof.reachable = Some(true);
            proof.reached_by = Some(witness(&self.model, &acts).0);
            return;
        }
        if self.g.budget_hit {
            proof.reachable = None;
            proof.explanation = Some(format!(
                "NEW's state space has more than {} states: whether it reaches the mapped marking is not known",
                self.g.len()
            ));
            return;
        }
        proof.reachable = Some(false);
        // The nearest reachable state (fewest connections in another state): what differs
        // names the operators whose work the move would skip or duplicate.
        let n = self.model.n_conns;
        // A difference in where unconsumed tokens are weighs more than one in which
        // connections were used: the nearest state is where the run's work stands.
        let differ = |s: &[u64]| {
            (0..n)
                .map(|c| {
                    let (a, b) = (self.model.conn(s, c), self.model.conn(target, c));
                    match (a, b) {
                        _ if a == b => 0,
                        (ConnState::New, _) | (_, ConnState::New) => 3,
                        _ => 1,
                    }
                })
                .sum::<u32>()
        };
        let nearest = (0..self.g.len() as u32)
            // Ties: the state found last, the furthest along.
            .min_by_key(|&id| (differ(self.g.state(id)), std::cmp::Reverse(id)))
            .unwrap_or(0);
        let near = self.g.state(nearest).to_vec();
        let net = self.model.net;
        let conn = |c: usize| &net.connections()[c];
        let (mut skipped, mut duplicated) = (Vec::new(), Vec::new());
        let (mut unused, mut extra) = (Vec::new(), Vec::new());
        for c in 0..n {
            let (have, can) = (self.model.conn(target, c), self.model.conn(&near, c));
            let (to, from) = (
                net.op(conn(c).to.op).name.clone(),
                net.op(conn(c).from.op).name.clone(),
            );
            let name = format!("`{}`", conn(c).name);
            match (have, can) {
                (a, b) if a == b => {}
                // NEW would have passed a token there (or holds one): its consumer's work on
                // it never happens.
                (ConnState::Empty, _) | (ConnState::Old, ConnState::New) => {
                    push_once(&mut skipped, to);
                    unused.push(name);
                }
                // A token NEW would not hold there: its consumer works on it again.
                (ConnState::New, _) => {
                    push_once(&mut duplicated, to);
                    extra.push(name);
                }
                // Consumed where NEW has not written it yet: its producer writes it again.
                (ConnState::Old, _) => {
                    push_once(&mut duplicated, from);
                    extra.push(name);
                }
            }
        }
        let mut parts = Vec::new();
        if !skipped.is_empty() {
            parts.push(format!(
                "the work of {} would be skipped (by now NEW would have passed a token over {})",
                ticks(&skipped),
                unused.join(", ")
            ));
        }
        if !duplicated.is_empty() {
            parts.push(format!(
                "the work of {} would be done twice or out of place (NEW cannot be at {} there)",
                ticks(&duplicated),
                extra.join(", ")
            ));
        }
        if parts.is_empty() {
            parts.push("its operators' control states differ from any NEW reaches".to_owned());
        }
        proof.explanation = Some(format!(
            "NEW never reaches the mapped marking from its initial marking: {}",
            parts.join("; ")
        ));
        proof.skipped = skipped;
        proof.duplicated = duplicated;
    }
}

/// The state vector of `at` in `model`.
fn pack(model: &Model<'_>, at: &ControlState) -> Vec<u64> {
    let mut s = model.initial.clone();
    for (c, st) in at.conns.iter().enumerate().take(model.n_conns) {
        model.fields[c].set(&mut s, *st as u32);
    }
    for (o, q) in at.control.iter().enumerate() {
        if let (Some(q), Some(om)) = (q, model.ops.get(o))
            && let Some(f) = om.control_field
        {
            model.fields[f as usize].set(&mut s, *q);
        }
    }
    s
}

fn push_once(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

fn ticks(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// (a): deadlock-freedom and the option to complete from `target` on `net`.
fn from_marking(net: &Net, at: &ControlState, opts: &VerifyOptions, proof: &mut MigrationProof) {
    let mut model = Model::new(net);
    model.initial = pack(&model, at);
    let g = match opts.reduce {
        Reduction::None => parallel::explore_full(&mut model, opts.max_states, 1, &mut |_| {}),
        Reduction::Stubborn => reduce::explore_reduced(&mut model, opts.max_states, &mut |_| {}),
    };
    let report = analyse(&mut model, &g, opts);
    let fix = |mut c: Check| {
        c.message = c
            .message
            .map(|m| m.replace("the initial marking", "the mapped marking"));
        c
    };
    proof.deadlock_free = fix(report.properties.deadlock_free);
    proof.option_to_complete = fix(report.properties.option_to_complete);
}

/// Decides (a) and (b) for control state `at` of NEW (`new` as loaded: its operators in
/// their initial states).
pub fn prove_migration(new: &Net, at: &ControlState, opts: &VerifyOptions) -> MigrationProof {
    let mut proof = MigrationProof::default();
    from_marking(new, at, opts, &mut proof);
    let mut space = Space::new(new, opts.max_states);
    let target = space.pack(at);
    space.reach(&target, &mut proof);
    proof
}

/// One reachable control state of OLD, and whether a run there would migrate safely.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegionState {
    /// The connections holding an unconsumed token there.
    pub tokens: Vec<String>,
    /// Whether a run there migrates safely.
    pub safe: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The safe change region: for OLD's reachable control states, which migrate safely to NEW.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SafeRegion {
    /// A sentence a person can read ("safe except while a token is between `draft` and
    /// `review`").
    pub summary: String,
    /// Whether every reachable state of OLD migrates safely.
    pub always_safe: bool,
    /// How many of them do.
    pub safe_states: usize,
    /// Every reachable state of OLD, in discovery order.
    pub states: Vec<RegionState>,
    /// Whether both state spaces were explored to the end (else the answer covers what was).
    pub complete: bool,
}

/// For each reachable control state of OLD (its full state space), whether a run there would
/// migrate safely to NEW ([`map_control`], then [`prove_migration`]'s (a) and (b)).
pub fn safe_region(
    old: &Net,
    new: &Net,
    renames: &[(String, String)],
    opts: &VerifyOptions,
) -> SafeRegion {
    let mut old_model = Model::new(old);
    let og = parallel::explore_full(&mut old_model, opts.max_states, 1, &mut |_| {});
    let mut space = Space::new(new, opts.max_states);
    let mut memo: HashMap<Vec<u64>, (bool, Option<String>)> = HashMap::new();
    let mut states = Vec::with_capacity(og.len());
    for id in 0..og.len() as u32 {
        let s = og.state(id);
        let at = ControlState {
            conns: (0..old_model.n_conns)
                .map(|c| old_model.conn(s, c))
                .collect(),
            control: old_model
                .ops
                .iter()
                .map(|om| {
                    om.control_field
                        .map(|f| old_model.fields[f as usize].get(s))
                })
                .collect(),
        };
        let tokens: Vec<String> = (0..old_model.n_conns)
            .filter(|&c| at.conns[c] == ConnState::New)
            .map(|c| old.connections()[c].name.clone())
            .collect();
        let (safe, why) = match map_control(old, new, renames, &at) {
            Err(cannot) => (false, Some(format!("cannot move: {}", cannot.join("; ")))),
            Ok(mapped) => {
                let target = space.pack(&mapped);
                memo.entry(target.clone())
                    .or_insert_with(|| {
                        let mut proof = MigrationProof::default();
                        space.reach(&target, &mut proof);
                        if proof.reachable != Some(true) {
                            return (false, proof.explanation);
                        }
                        from_marking(new, &mapped, opts, &mut proof);
                        if proof.completes() {
                            (true, None)
                        } else {
                            let c = if proof.deadlock_free.holds == Some(true) {
                                &proof.option_to_complete
                            } else {
                                &proof.deadlock_free
                            };
                            (false, c.message.clone().or(Some("not proved".into())))
                        }
                    })
                    .clone()
            }
        };
        states.push(RegionState { tokens, safe, why });
    }
    let complete = !og.budget_hit && !space.g.budget_hit;
    let summary = summarise(old, &states);
    SafeRegion {
        always_safe: states.iter().all(|s| s.safe),
        safe_states: states.iter().filter(|s| s.safe).count(),
        summary,
        states,
        complete,
    }
}

/// "safe except while a token is between `a` and `b`", from the states' verdicts.
fn summarise(old: &Net, states: &[RegionState]) -> String {
    let unsafe_n = states.iter().filter(|s| !s.safe).count();
    if unsafe_n == 0 {
        return format!("safe in every reachable state ({})", states.len());
    }
    if unsafe_n == states.len() {
        return format!("never safe ({} reachable states)", states.len());
    }
    // A connection whose every state with a token there is unsafe names a region.
    let mut regions = Vec::new();
    let mut covered = vec![false; states.len()];
    for c in old.connections() {
        let with: Vec<usize> = (0..states.len())
            .filter(|&i| states[i].tokens.contains(&c.name))
            .collect();
        if !with.is_empty() && with.iter().all(|&i| !states[i].safe) {
            let (from, to) = c.name.split_once(" -> ").unwrap_or((&c.name, ""));
            let op = |e: &str| e.split('.').next().unwrap_or(e).to_owned();
            regions.push(format!("between `{}` and `{}`", op(from), op(to)));
            for i in with {
                covered[i] = true;
            }
        }
    }
    let rest = (0..states.len())
        .filter(|&i| !states[i].safe && !covered[i])
        .count();
    let mut out = String::from("safe except while a token is ");
    if regions.is_empty() {
        out = format!(
            "safe in {} of {} reachable states",
            states.len() - unsafe_n,
            states.len()
        );
    } else {
        out.push_str(&regions.join(" or "));
    }
    if rest > 0 && !regions.is_empty() {
        out.push_str(&format!(
            ", and in {rest} other state{}",
            if rest == 1 { "" } else { "s" }
        ));
    }
    out
}
