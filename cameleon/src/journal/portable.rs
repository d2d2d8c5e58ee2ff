//! The journal's contract with a store other than the SQLite file (docs/journal.md "Stores"):
//! what a store keeps of a run and how an engine is brought back from it. The SQLite
//! [`Journal`] is one store; a program may keep the same records elsewhere (the JetStream
//! store of `cameleon-nats`) through these pieces:
//!
//! - [`RunHeader::new`] checks that a fresh engine can be journaled and describes the run
//!   (its id, name, canonical `.cm`, mode, config) as `Journal::start` records it;
//! - [`StepEncoder`] turns each [`Committed`] step into its record, the same [`EncodedStep`]
//!   (the step's [`StepRecord`](crate::history::StepRecord) in its serde form, and the names of
//!   the operators that fired) the SQLite store writes to `entries`;
//! - [`rebuild`] loads the stored net and restores the records into a new engine without
//!   running an operator, as `Journal::resume` does;
//! - [`history_of`] lists a run's tree from its entries, as `Journal::history` does.
//!
//! A store reading records from elsewhere treats them as untrusted input: every check the
//! SQLite store makes (the net's hash, the order of the nodes, each record against the net)
//! is made here too (docs/security.md).

use super::*;
use crate::engine::{Committed, KeyCache, RecordError};

/// A run as a store describes it: what `Journal::start` writes to the `runs` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The run id, a UUID v7.
    pub id: String,
    /// The run's name.
    pub name: String,
    /// The net's canonical `.cm` text.
    pub cm: String,
    /// Its hash ([`cm_hash`]).
    pub cm_hash: String,
    /// `sequential` or `parallel`.
    pub mode: String,
    /// The run's configuration, as JSON (docs/journal.md: `runs.config`).
    pub config: String,
    /// The capability generation the run pinned.
    #[serde(default)]
    pub generation: Option<u64>,
}

impl RunHeader {
    /// Checks that `cvm` is fresh and journalable, as [`Journal::start`] does, and describes it
    /// as a new run. The caller then gives the engine the id ([`Cvm::set_run_id`]) and its
    /// recorder.
    pub fn new(cvm: &Cvm, opts: &RunOptions) -> Result<RunHeader, JournalError> {
        if cvm.depth() != 0 || cvm.history().recorded_firings() != 0 {
            return Err(JournalError::NotJournalable(
                "the engine has already stepped: start the journal on a fresh engine".into(),
            ));
        }
        let net = cvm.net();
        for node in net.operators() {
            if let Some(s) = node.op.save_state()
                && !s.has_serde_form()
            {
                return Err(JournalError::NotJournalable(format!(
                    "operator `{}` (type `{}`) has an internal state without a serde form: declare it with `#[operator]`, or save its state with `OpState::serde`",
                    node.name, node.spec.type_id
                )));
            }
        }
        let cm = net.to_cm();
        let loader = loader(
            opts.names.catalogue.as_ref().unwrap_or(Catalogue::global()),
            opts.names.loader.as_ref(),
            opts.base_dir.as_deref(),
            opts.allow_outside,
        );
        if let Err(e) = loader.load_str(&cm) {
            let first = e
                .problems()
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            return Err(JournalError::NotJournalable(format!(
                "a journaled run is resumed from its net's `.cm` text, and this net's does not load back: {first}"
            )));
        }
        let config = Config {
            max_loop_iterations: cvm.max_loop_iterations(),
            max_steps: cvm.max_steps(),
            durability: opts.durability.name().into(),
            batch_ms: match opts.durability {
                Durability::Batch { ms } => Some(ms),
                _ => None,
            },
            base_dir: opts.base_dir.as_ref().map(|d| absolute(d)),
            allow_outside: opts.allow_outside,
        };
        let config = serde_json::to_string(&config)
            .map_err(|e| JournalError::NotJournalable(e.to_string()))?;
        Ok(RunHeader {
            id: uuid::Uuid::now_v7().to_string(),
            name: opts.name.clone().unwrap_or_else(|| net.name().to_owned()),
            cm_hash: store::hash(&cm),
            cm,
            mode: cvm.mode().as_str().to_owned(),
            config,
            generation: opts.generation,
        })
    }

    /// The durability the run was started with.
    pub fn durability(&self) -> Durability {
        serde_json::from_str::<Config>(&self.config)
            .map(|c| c.durability())
            .unwrap_or_default()
    }

    /// What the run recorded of its folder (information only: [`ResumeOptions`] decides).
    pub fn recorded_folder(&self) -> RecordedFolder {
        let c: Config = serde_json::from_str(&self.config).unwrap_or_default();
        RecordedFolder {
            id: self.id.clone(),
            base_dir: c.base_dir,
            allow_outside: c.allow_outside,
        }
    }
}

/// A committed step's record, as a store keeps it (a row of `entries`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodedStep {
    /// Its node in the history tree (creation order, from 0).
    pub node: u32,
    /// Its parent node (`None`: a first step).
    pub parent: Option<u32>,
    /// Its depth (1-based).
    pub step: u32,
    /// Its branch (1-based).
    pub branch: u32,
    /// The names of the operators that fired, as a JSON array.
    pub ops: String,
    /// The step's record, [`StepRecord`](crate::history::StepRecord), as JSON (the `body`
    /// column of docs/journal.md).
    pub body: String,
    /// The reuse keys of its firings that may be reused, in the layout of the `keys` column of
    /// docs/journal.md (`None`: none): what a later run's `--reuse` finds them by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<u8>>,
}

/// Encodes committed steps, as the SQLite store's recorder does (one buffer reused).
#[derive(Default)]
pub struct StepEncoder {
    buf: codec::Scratch,
    keys: KeyCache,
}

impl std::fmt::Debug for StepEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepEncoder")
    }
}

impl StepEncoder {
    /// A new encoder.
    pub fn new() -> Self {
        StepEncoder {
            buf: codec::Scratch::new(),
            keys: KeyCache::new(),
        }
    }

    /// The record of `step`: an error (naming the operator) for a value or state serde cannot
    /// write.
    pub fn encode(&mut self, step: &Committed<'_>) -> Result<EncodedStep, RecordError> {
        let r = codec::encode(step, &mut self.buf, &mut self.keys)?;
        Ok(EncodedStep {
            node: r.node,
            parent: r.parent,
            step: r.step,
            branch: r.branch,
            ops: r.ops,
            body: r.body,
            keys: r.keys,
        })
    }
}

/// The status and end-state JSON a store records for a run that ended in `end`.
pub fn end_status(end: &EndState) -> (String, Option<String>) {
    writer::status_of(end)
}

/// `status` and its end-state JSON `end` with what the run spent so far under `"usage"`, once
/// it made a model request (docs/semantics.md §4.7), as the SQLite store records them.
pub fn with_usage(
    meter: Option<&crate::operator::capability::Meter>,
    status: &str,
    end: Option<String>,
) -> (String, Option<String>) {
    let Some(spent) = meter.map(|m| m.spent()).filter(|s| s.requests > 0) else {
        return (status.to_owned(), end);
    };
    let mut json = end
        .and_then(|e| serde_json::from_str::<serde_json::Value>(&e).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    if let Some(o) = json.as_object_mut() {
        o.entry("usage")
            .or_insert_with(|| serde_json::to_value(spent).unwrap_or_default());
    }
    (status.to_owned(), Some(json.to_string()))
}

/// What a run spent, from its recorded end-state JSON (`"usage"`).
pub fn usage_of(end_state: &str) -> Option<Spent> {
    writer::usage_of(end_state)
}

/// A run's recorded status and position, as a store keeps them (the `progress` view).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredProgress {
    /// `RUNNING`, `WAITING` or an end state's name.
    pub status: String,
    /// The end state as JSON (`None` while running).
    #[serde(default)]
    pub end_state: Option<String>,
    /// Applied steps.
    pub steps: u32,
    /// The last applied node.
    #[serde(default)]
    pub tip: Option<u32>,
    /// The deepest node of the recorded future.
    #[serde(default)]
    pub redo_tip: Option<u32>,
}

/// Brings run `header` back from a store: its net loaded from the stored `.cm` (checked
/// against its hash) with `names`, in the folder `opts` gives (else the recorded one), its
/// capabilities from `pin` installed before the records are restored, then `steps` — each
/// record in node order — restored without running an operator, and the position of
/// `progress`. No recorder is installed; [`Resumed::lock`] is `None`. `store` names the store
/// in errors. A migrated run (docs/migration.md) is refused: only the SQLite store follows a
/// run across nets.
pub fn rebuild(
    store: &str,
    header: &RunHeader,
    progress: &StoredProgress,
    steps: impl IntoIterator<Item = EncodedStep>,
    opts: &ResumeOptions,
    names: &Names,
    pin: Option<PinCaps<'_>>,
) -> Result<Resumed, JournalError> {
    let id = header.id.clone();
    let corrupt = |what: String| JournalError::Corrupt {
        path: store.to_owned(),
        what: format!("run `{id}`: {what}"),
    };
    if store::hash(&header.cm) != header.cm_hash {
        return Err(corrupt(
            "its stored net does not match its hash (the journal was edited or damaged)".into(),
        ));
    }
    let config: Config = serde_json::from_str(&header.config)
        .map_err(|e| corrupt(format!("unreadable config: {e}")))?;
    let mode = match header.mode.as_str() {
        "parallel" => Mode::Parallel,
        "sequential" => Mode::Sequential,
        other => return Err(corrupt(format!("unknown mode `{other}`"))),
    };
    let base_dir = opts.base_dir.clone().or_else(|| config.base_dir.clone());
    let catalogue = names.catalogue.as_ref().unwrap_or(Catalogue::global());
    let mut net = loader(
        catalogue,
        names.loader.as_ref(),
        base_dir.as_deref(),
        opts.allow_outside,
    )
    .file_name(format!("{store} (run {id})"))
    .load_str(&header.cm)
    .map_err(|e| JournalError::Net {
        run: id.clone(),
        error: Box::new(e),
    })?;
    let caps = pin.map(|pin| {
        let base = base_dir.as_deref().unwrap_or(Path::new("."));
        pin(&mut net, base)
    });
    if let Some(meter) = caps.as_ref().and_then(|c| c.meter())
        && let Some(spent) = progress.end_state.as_deref().and_then(writer::usage_of)
    {
        meter.start_from(spent);
    }
    let mut b = Cvm::builder(net)
        .mode(mode)
        .max_loop_iterations(config.max_loop_iterations.max(1))
        .run_id(id.clone());
    if let Some(n) = config.max_steps {
        b = b.max_steps(n);
    }
    if let Some(caps) = caps {
        b = b.capabilities(caps);
    }
    let mut cvm = b.build();
    let incompatible = |what: String| JournalError::Incompatible {
        run: id.clone(),
        what,
    };
    {
        let mut restoring = cvm.restoring().map_err(|e| incompatible(e.to_string()))?;
        for (i, s) in steps.into_iter().enumerate() {
            if s.node as usize != i {
                return Err(corrupt(format!("entry #{i} is missing")));
            }
            let record =
                codec::decode(&s.body).map_err(|w| incompatible(format!("entry #{i}: {w}")))?;
            if MigrationNote::of(&record).is_some() {
                return Err(JournalError::Migration {
                    run: id.clone(),
                    what: format!(
                        "the run migrated (entry #{i}): a migrated run is resumed from a SQLite journal only"
                    ),
                });
            }
            restoring
                .push(record)
                .map_err(|e| incompatible(format!("entry #{i}: {e}")))?;
        }
        restoring
            .finish(progress.tip, progress.redo_tip)
            .map_err(|e| incompatible(e.to_string()))?;
    }
    let end = match (progress.status.as_str(), &progress.end_state) {
        ("RUNNING" | "WAITING", _) => None,
        (_, Some(json)) => {
            Some(end_from_json(&cvm, json).ok_or_else(|| corrupt("unreadable end state".into()))?)
        }
        (other, None) => return Err(corrupt(format!("status `{other}` without an end state"))),
    };
    Ok(Resumed {
        id,
        name: header.name.clone(),
        cvm,
        end,
        base_dir: base_dir.unwrap_or_else(|| PathBuf::from(".")),
        lock: None,
    })
}

/// A run's history tree from its entries (in node order) and its position's deepest node
/// (`redo_tip`, else `tip`): the branches and which one is current.
pub fn history_of(entries: Vec<HistoryEntry>, here: Option<u32>) -> RunHistory {
    let current = here.and_then(|n| entries.get(n as usize)).map(|e| e.branch);
    let mut branches: Vec<BranchInfo> = Vec::new();
    for e in &entries {
        match branches.iter_mut().find(|b| b.branch == e.branch) {
            Some(b) => b.steps = b.steps.max(e.step),
            None => branches.push(BranchInfo {
                branch: e.branch,
                from_step: e.step,
                steps: e.step,
                current: current == Some(e.branch),
            }),
        }
    }
    branches.sort_by_key(|b| b.branch);
    RunHistory { entries, branches }
}
