//! Resuming a journaled run: the net rebuilt from its stored `.cm`, the committed entries
//! restored without running an operator (docs/semantics.md §5.5).

use super::*;

/// How a journaled run goes on: what the journal file does not decide. A journal may come from
/// elsewhere: the folder the run may read and write, and whether it may read outside it, are
/// the caller's (docs/security.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumeOptions {
    /// The folder the net's relative paths resolve against (its file readers, sub-nets and file
    /// tools are confined to it). `None`: the folder the journal recorded — a caller resuming a
    /// journal it did not write checks that folder first ([`Journal::recorded_folder`]).
    pub base_dir: Option<PathBuf>,
    /// Whether file-reading operators may leave that folder. Never taken from the journal.
    pub allow_outside: bool,
}

/// What a stored net is loaded with.
struct Loading<'c> {
    catalogue: &'c Catalogue,
    setup: Option<&'c LoaderSetup>,
}

/// What a journal recorded of where a run was started: see [`Journal::recorded_folder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFolder {
    /// The run (the one [`pick`](Journal::pick) chose).
    pub id: String,
    /// The folder its net was loaded from, as recorded (absolute).
    pub base_dir: Option<PathBuf>,
    /// Whether it was started allowed to read outside that folder.
    pub allow_outside: bool,
}

impl Journal {
    /// Takes run `id`'s lock ([`RunLock`]), for a process that goes on with the run some other
    /// way than [`resume`](Self::resume) (which takes it itself): `cameleon run --journal` holds
    /// the run it starts, so no `resume` runs it twice meanwhile.
    pub fn lock(&self, id: &str) -> Result<RunLock, JournalError> {
        RunLock::take(&self.path, id)
    }

    /// Where run `id` (or the one [`pick`](Self::pick) chooses) says it was started: its folder
    /// and whether it could read outside it. Information only: [`ResumeOptions`] decides.
    pub fn recorded_folder(&self, id: Option<&str>) -> Result<RecordedFolder, JournalError> {
        let id = self.pick(id)?;
        let config: String = self
            .with(|c| c.query_row("SELECT config FROM runs WHERE id = ?1", [&id], |r| r.get(0)))?;
        let config: Config = serde_json::from_str(&config)
            .map_err(|e| self.corrupt(format!("run `{id}`: unreadable config: {e}")))?;
        Ok(RecordedFolder {
            id,
            base_dir: config.base_dir,
            allow_outside: config.allow_outside,
        })
    }

    /// Brings run `id` back (or, with `None`, the most recently started unfinished one — see
    /// [`pick`](Self::pick)): the net rebuilt from its stored `.cm`, every committed entry
    /// restored without running an operator. An unfinished run goes on journaling into the same
    /// run, with its durability; a finished one is returned with its [`end`](Resumed::end) and
    /// no recorder.
    ///
    /// The run goes on in the folder the journal recorded, never allowed to read outside it
    /// (see [`resume_with_options`](Self::resume_with_options)), and holds the run's
    /// [`lock`](Resumed::lock): a second resume of it fails with [`JournalError::Busy`].
    pub fn resume(&self, id: Option<&str>) -> Result<Resumed, JournalError> {
        self.load(id, Catalogue::global(), true)
    }

    /// [`resume`](Self::resume), with the capabilities `pin` gives for the run's net and its
    /// base folder installed *before* the entries are restored: an operator whose replay puts
    /// back what it wrote into a store of the run (`index` into its memory) finds that store
    /// while the run is rebuilt, so the resumed run sees it as the run left it
    /// (docs/semantics.md §5.8). `cameleon resume` pins the capabilities of the net's folder so.
    /// `pin` may also change the net before the engine is built (`cameleon resume --nats`
    /// places its `placement: remote` instances on satellites there).
    pub fn resume_with(
        &self,
        id: Option<&str>,
        pin: impl FnOnce(&mut Net, &Path) -> Arc<dyn Capabilities>,
    ) -> Result<Resumed, JournalError> {
        self.resume_with_options(id, &ResumeOptions::default(), pin)
    }

    /// [`resume_with`](Self::resume_with), in the folder and with the permission `opts` give
    /// (the journal's own say is never taken for `allow_outside`).
    pub fn resume_with_options(
        &self,
        id: Option<&str>,
        opts: &ResumeOptions,
        pin: impl FnOnce(&mut Net, &Path) -> Arc<dyn Capabilities>,
    ) -> Result<Resumed, JournalError> {
        self.resume_with_names(id, opts, &Names::default(), pin)
    }

    /// [`resume_with_options`](Self::resume_with_options), the stored net's operator types and
    /// tools resolved against `names` (the satellites' too, for `cameleon resume --nats`).
    pub fn resume_with_names(
        &self,
        id: Option<&str>,
        opts: &ResumeOptions,
        names: &Names,
        pin: impl FnOnce(&mut Net, &Path) -> Arc<dyn Capabilities>,
    ) -> Result<Resumed, JournalError> {
        let catalogue = names.catalogue.as_ref().unwrap_or(Catalogue::global());
        let loading = Loading {
            catalogue,
            setup: names.loader.as_ref(),
        };
        self.load_pinned(id, loading, true, Some(Box::new(pin)), opts)
    }

    /// Brings run `id` back at its recorded position, without journaling what is done with it
    /// afterwards (to inspect a run, or travel its history, leaving the journal as it is).
    pub fn open_run(&self, id: &str) -> Result<Resumed, JournalError> {
        self.load(Some(id), Catalogue::global(), false)
    }

    /// [`open_run`](Self::open_run), the stored net's operator types and tools resolved against
    /// `names` (a net naming the nets its capabilities offer as tools, the satellites'…).
    pub fn open_run_with_names(&self, id: &str, names: &Names) -> Result<Resumed, JournalError> {
        let catalogue = names.catalogue.as_ref().unwrap_or(Catalogue::global());
        let loading = Loading {
            catalogue,
            setup: names.loader.as_ref(),
        };
        self.load_pinned(Some(id), loading, false, None, &ResumeOptions::default())
    }

    /// [`resume`](Self::resume) with the operator types of `catalogue`.
    pub fn resume_in(
        &self,
        id: Option<&str>,
        catalogue: &Catalogue,
    ) -> Result<Resumed, JournalError> {
        self.load(id, catalogue, true)
    }

    fn load(
        &self,
        id: Option<&str>,
        catalogue: &Catalogue,
        record: bool,
    ) -> Result<Resumed, JournalError> {
        let loading = Loading {
            catalogue,
            setup: None,
        };
        self.load_pinned(id, loading, record, None, &ResumeOptions::default())
    }

    fn load_pinned(
        &self,
        id: Option<&str>,
        loading: Loading<'_>,
        record: bool,
        pin: Option<PinCaps<'_>>,
        opts: &ResumeOptions,
    ) -> Result<Resumed, JournalError> {
        let id = self.pick(id)?;
        // One process at a time goes on with an unfinished run: taken before its entries are
        // read (a finished one is only reported).
        let unfinished: bool = self.with(|c| {
            c.query_row(
                "SELECT status IN ('RUNNING', 'WAITING', 'CANCELLED') FROM runs
                 JOIN progress ON progress.run = runs.seq WHERE id = ?1",
                [&id],
                |r| r.get(0),
            )
        })?;
        let mut lock = if record && unfinished {
            Some(RunLock::take(&self.path, &id)?)
        } else {
            None
        };
        type RunRow = (
            i64,
            String,
            String,
            String,
            String,
            String,
            String,
            Option<String>,
            Option<i64>,
            Option<i64>,
        );
        let row: RunRow = self.with(|c| {
            c.query_row(
                "SELECT seq, name, cm, cm_hash, mode, config, status, end_state, tip, redo_tip
                 FROM runs JOIN progress ON progress.run = runs.seq WHERE id = ?1",
                [&id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                },
            )
        })?;
        let (seq, name, cm, cm_hash, mode, config, status, end_state, tip, redo_tip) = row;
        if store::hash(&cm) != cm_hash {
            return Err(self.corrupt(format!(
                "run `{id}`: its stored net does not match its hash (the file was edited or damaged)"
            )));
        }
        let config: Config = serde_json::from_str(&config)
            .map_err(|e| self.corrupt(format!("run `{id}`: unreadable config: {e}")))?;
        let mode = match mode.as_str() {
            "parallel" => Mode::Parallel,
            "sequential" => Mode::Sequential,
            other => return Err(self.corrupt(format!("run `{id}`: unknown mode `{other}`"))),
        };
        let base_dir = opts.base_dir.clone().or_else(|| config.base_dir.clone());
        // A migrated run: the segment of its history the position lies in (`segments.rs`).
        // A migrated run: the segment of its history the position lies in (`segments.rs`);
        // any other run's entries are restored as they are read.
        let mut plan = if self.migrated(seq)? {
            Some(self.plan(&id, seq, tip, redo_tip)?)
        } else {
            None
        };
        let cm = plan.as_ref().and_then(|p| p.cm.as_deref()).unwrap_or(&cm);
        let mut net = loader(
            loading.catalogue,
            loading.setup,
            base_dir.as_deref(),
            opts.allow_outside,
        )
        .file_name(format!("{} (run {id})", self.path.display()))
        .load_str(cm)
        .map_err(|e| JournalError::Net {
            run: id.clone(),
            error: Box::new(e),
        })?;
        let caps = pin.map(|pin| {
            let base = base_dir.as_deref().unwrap_or(Path::new("."));
            pin(&mut net, base)
        });
        // What the run spent before counts against its budget (docs/semantics.md §4.7).
        if let Some(meter) = caps.as_ref().and_then(|c| c.meter())
            && let Some(spent) = end_state.as_deref().and_then(super::writer::usage_of)
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
        let segment = match plan.take() {
            Some(plan) => {
                let incompatible = |e: crate::engine::RestoreError| JournalError::Incompatible {
                    run: id.clone(),
                    what: e.to_string(),
                };
                if let Some(seed) = &plan.seed {
                    cvm.seed(seed).map_err(incompatible)?;
                }
                cvm.restore(plan.recorded).map_err(incompatible)?;
                plan.segment
            }
            None => {
                self.restore_entries(&id, seq, (tip, redo_tip), &mut cvm)?;
                None
            }
        };
        let end = match (status.as_str(), end_state) {
            ("RUNNING" | "WAITING", _) => None,
            (_, Some(json)) => Some(
                end_from_json(&cvm, &json)
                    .ok_or_else(|| self.corrupt(format!("run `{id}`: unreadable end state")))?,
            ),
            (other, None) => {
                return Err(
                    self.corrupt(format!("run `{id}`: status `{other}` without an end state"))
                );
            }
        };
        let mut resumed = Resumed {
            id: id.clone(),
            name,
            cvm,
            end,
            base_dir: base_dir.unwrap_or_else(|| std::path::PathBuf::from(".")),
            lock: None,
        };
        if resumed.is_finished() {
            lock = None;
        }
        resumed.lock = lock;
        if record && !resumed.is_finished() {
            let mut resumed = resumed;
            let recorder = JournalRecorder::new(&self.path, seq, &id, config.durability())?
                .meter(resumed.cvm.capabilities().meter().cloned())
                .segment(segment);
            resumed.cvm.set_recorder(Box::new(recorder));
            return Ok(resumed);
        }
        Ok(resumed)
    }

    /// Whether run `seq` has migrated: a migration entry fires nothing (`ops` is `[]`).
    fn migrated(&self, seq: i64) -> Result<bool, JournalError> {
        self.with(|c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM entries WHERE id BETWEEN ?1 AND ?2 AND ops = '[]')",
                (store::entry_id(seq, 0), store::entry_id(seq, u32::MAX)),
                |r| r.get(0),
            )
        })
    }

    /// Restores run `id`'s entries into `cvm` as they are read (never all in memory at once),
    /// then its position `at` (tip, redo tip).
    fn restore_entries(
        &self,
        id: &str,
        seq: i64,
        at: (Option<i64>, Option<i64>),
        cvm: &mut Cvm,
    ) -> Result<(), JournalError> {
        let tip = node_index(at.0).map_err(|w| self.corrupt(format!("run `{id}`: {w}")))?;
        let redo_tip = node_index(at.1).map_err(|w| self.corrupt(format!("run `{id}`: {w}")))?;
        let incompatible = |what: String| JournalError::Incompatible {
            run: id.to_owned(),
            what,
        };
        let mut restoring = cvm.restoring().map_err(|e| incompatible(e.to_string()))?;
        let read = self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT node, body FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            )?;
            let range = (store::entry_id(seq, 0), store::entry_id(seq, u32::MAX));
            let mut rows = st.query(range)?;
            let mut i = 0i64;
            while let Some(row) = rows.next()? {
                let node: i64 = row.get(0)?;
                if node != i {
                    return Ok(Err(
                        self.corrupt(format!("run `{id}`: entry #{i} is missing"))
                    ));
                }
                let body = row.get_ref(1)?.as_str().map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        1,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?;
                let step = match codec::decode(body) {
                    Ok(step) => step,
                    Err(what) => return Ok(Err(incompatible(format!("entry #{i}: {what}")))),
                };
                if let Err(e) = restoring.push(step) {
                    return Ok(Err(incompatible(e.to_string())));
                }
                i += 1;
            }
            Ok(Ok(()))
        })?;
        read?;
        restoring
            .finish(tip, redo_tip)
            .map_err(|e| incompatible(e.to_string()))
    }
}
