//! Moving a journaled run onto another net while it is in flight — and proving the move safe
//! first (docs/migration.md).
//!
//! [`migrate`] maps the run's marking from its net (OLD) onto the new one (NEW) by connection
//! identity and operator ids ([`map_marking`]), then asks the verifier
//! ([`prove_migration`]): (a) from the mapped marking, NEW cannot
//! deadlock and can always complete; (b) NEW itself reaches that marking from its initial
//! marking (else work would be skipped or done twice: the dynamic-change bug). A move that
//! passes both is recorded in the journal as one history entry, in one transaction; `resume`
//! then goes on on NEW. [`safe_region`](crate::verify::safe_region) answers the same question
//! for every reachable state of OLD at once (`cameleon check NEW.cm --against OLD.cm`).

use serde::Serialize;

use crate::engine::Cvm;
use crate::journal::{Journal, JournalError, MigrationNote, Names, cm_hash};
use crate::net::Net;
use crate::verify::{ControlState, MigrationProof, VerifyOptions, prove_migration};

mod map;

pub use map::{Mapped, map_marking, parse_renames};

/// Options of [`migrate`].
#[derive(Clone, Debug, Default)]
pub struct MigrateOptions {
    /// Operators renamed, `(old id, new id)`.
    pub renames: Vec<(String, String)>,
    /// Accept a mapped marking NEW cannot reach itself, as long as (a) holds.
    pub allow_unreachable: bool,
    /// Decide, record nothing.
    pub dry_run: bool,
    /// The verifier's budget and reduction for (a); (b) always explores the full state space.
    pub verify: VerifyOptions,
    /// What NEW's names resolve against when the run is resumed (default: this program's).
    pub names: Names,
}

/// What [`migrate`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationVerdict {
    /// The run moved onto NEW (recorded in the journal).
    Migrated,
    /// It would move (`dry_run`: nothing recorded).
    Accepted,
    /// It does not move: see `reason`.
    Refused,
}

/// The outcome of [`migrate`]: the verdict, and what it rests on.
#[derive(Clone, Debug, Serialize)]
pub struct Migration {
    /// The run.
    pub run: String,
    /// The verdict.
    pub verdict: MigrationVerdict,
    /// OLD's hash.
    pub from: String,
    /// NEW's hash.
    pub to: String,
    /// Why it was refused, as a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What cannot move, when the mapping failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cannot_move: Vec<String>,
    /// The mapping, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<Mapped>,
    /// The verifier's answers, when the mapping succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<MigrationProof>,
    /// The journal entry recorded (`Migrated` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<u32>,
}

impl Migration {
    /// `cameleon migrate`'s exit code: 0 migrated (or accepted by a dry run), 3 refused.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            MigrationVerdict::Migrated | MigrationVerdict::Accepted => 0,
            MigrationVerdict::Refused => 3,
        }
    }
}

/// Why [`migrate`] could not decide: bad input (`cameleon migrate` exits 2).
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The journal, the run, or a net it holds.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The new net, or the options given for it.
    #[error("{0}")]
    Invalid(String),
}

/// The control state of a seeded engine: its connections' states, and each operator's control
/// state as its carried state puts it in.
fn control_state(cvm: &Cvm) -> ControlState {
    ControlState {
        conns: cvm.marking().0.iter().map(|(s, _)| *s).collect(),
        control: cvm
            .net()
            .operators()
            .iter()
            .map(|o| o.operator().control().map(|c| c.initial()))
            .collect(),
    }
}

/// Decides whether run `id` of `journal` moves onto `new` now, and (unless `opts.dry_run`)
/// moves it: see the module's documentation. The run's lock is held throughout, so no other
/// process steps it meanwhile.
pub fn migrate(
    journal: &Journal,
    id: &str,
    new: &Net,
    given_renames: &[String],
    opts: &MigrateOptions,
) -> Result<Migration, MigrateError> {
    migrate_then(journal, id, new, given_renames, opts, &|| Ok(()))
}

/// [`migrate`], calling `before_commit` inside the journal's transaction.
pub(crate) fn migrate_then(
    journal: &Journal,
    id: &str,
    new: &Net,
    given_renames: &[String],
    opts: &MigrateOptions,
    before_commit: &dyn Fn() -> Result<(), String>,
) -> Result<Migration, MigrateError> {
    let id = journal.pick(Some(id))?;
    let _lock = journal.lock(&id)?;
    let at = journal.position(&id)?;
    let old_run = journal.open_run(&id)?;
    let old = old_run.cvm.net();
    let marking = old_run
        .cvm
        .marking_record()
        .map_err(|e| MigrateError::Invalid(e.to_string()))?;
    // NEW as the run will be resumed on it: its canonical text, loaded back.
    let cm = new.to_cm();
    let load = || journal.load_net(&id, &cm, &opts.names);
    let fresh = load().map_err(|e| {
        MigrateError::Invalid(format!(
            "the new net's canonical `.cm` does not load back as the run would resume it: {e}"
        ))
    })?;
    let mut renames = opts.renames.clone();
    renames.extend(parse_renames(given_renames, old, &fresh).map_err(MigrateError::Invalid)?);
    let mut out = Migration {
        run: id.clone(),
        verdict: MigrationVerdict::Refused,
        from: at.cm_hash.clone(),
        to: cm_hash(&cm),
        reason: None,
        cannot_move: Vec::new(),
        mapping: None,
        proof: None,
        entry: None,
    };
    let mapped = match map_marking(old, &fresh, &marking, &renames) {
        Ok(m) => m,
        Err(cannot) => {
            out.reason = Some(format!(
                "{} cannot move onto the new net",
                if cannot.len() == 1 {
                    "one item"
                } else {
                    "some items"
                }
            ));
            out.cannot_move = cannot;
            return Ok(out);
        }
    };
    let mut seeded = Cvm::new(load()?);
    if let Err(e) = seeded.seed(&mapped.marking) {
        out.reason = Some(format!("the mapped marking does not fit the new net: {e}"));
        out.cannot_move = vec![e.to_string()];
        return Ok(out);
    }
    let proof = prove_migration(&fresh, &control_state(&seeded), &opts.verify);
    let reason = if !proof.completes() {
        let c = if proof.deadlock_free.holds == Some(false) {
            &proof.deadlock_free
        } else {
            &proof.option_to_complete
        };
        Some(match (&c.message, c.holds) {
            (Some(m), _) => format!("from the mapped marking, {m}"),
            (None, _) => "the verifier's state budget ran out before (a) was decided".to_owned(),
        })
    } else if proof.reachable != Some(true) && !opts.allow_unreachable {
        Some(format!(
            "{} (--allow-unreachable accepts it)",
            proof
                .explanation
                .clone()
                .unwrap_or_else(|| "NEW does not reach the mapped marking".into())
        ))
    } else {
        None
    };
    let unreachable = proof.reachable != Some(true);
    out.mapping = Some(mapped.clone());
    out.proof = Some(proof);
    if reason.is_some() {
        out.reason = reason;
        return Ok(out);
    }
    if opts.dry_run {
        out.verdict = MigrationVerdict::Accepted;
        return Ok(out);
    }
    let note = MigrationNote {
        from: at.cm_hash.clone(),
        to: out.to.clone(),
        cm,
        from_cm: at.cm.clone(),
        renames,
        marking: mapped.marking,
        unreachable,
    };
    drop(old_run);
    let node = journal.record_migration_then(&id, &note, &at, before_commit)?;
    out.verdict = MigrationVerdict::Migrated;
    out.entry = Some(node);
    Ok(out)
}

#[cfg(test)]
mod tests;
