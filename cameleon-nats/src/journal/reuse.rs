//! Recorded runs on JetStream read for reuse across runs (docs/journal.md "Reuse from
//! JetStream"): `run --reuse`, `diff` and `test` on a `nats://` journal.

use cameleon::journal::{
    JournalError, Names, RecordedFolder, ResumeOptions, Resumed, StepsReuse, rebuild,
};

use super::{JetStreamJournal, corrupt};

impl JetStreamJournal {
    /// The recorded firings of run `run` (of every run when `None`), read once into an index
    /// in memory: the stream has no index by firing key, so every entry of the runs named is
    /// read here, and the bodies of those with reusable firings are kept (docs/journal.md).
    pub fn reuse(&self, run: Option<&str>) -> Result<StepsReuse, JournalError> {
        let ids = match run {
            Some(id) => vec![id.to_owned()],
            // Oldest first: a key recorded by several runs points to the newest's firing.
            None => self.runs()?.into_iter().rev().map(|r| r.id).collect(),
        };
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            let (f, _) = self.read(&id)?;
            runs.push((id, f.entries));
        }
        Ok(StepsReuse::new(self.url.clone(), runs))
    }

    /// Brings run `id` back at its recorded position without journaling anything done with it
    /// afterwards (to compare it), as `Journal::open_run_with_names` does: its net loaded in
    /// the folder it recorded, with `names`.
    pub fn open_run(&self, id: &str, names: &Names) -> Result<Resumed, JournalError> {
        self.open_run_with_reuse(id, |_| names.clone(), false)
            .map(|(r, _)| r)
    }

    /// [`open_run`](Self::open_run), the names from `names` given the folder the run recorded,
    /// with the run's recorded firings as [`reuse`](Self::reuse)`(Some(id))` gives them when
    /// `reuse` — all from one read of the run.
    pub fn open_run_with_reuse(
        &self,
        id: &str,
        names: impl FnOnce(&RecordedFolder) -> Names,
        reuse: bool,
    ) -> Result<(Resumed, Option<StepsReuse>), JournalError> {
        let (f, _) = self.read(id)?;
        let header = f
            .header
            .ok_or_else(|| corrupt(&self.url, format!("run `{id}` has no header")))?;
        if header.id != id {
            return Err(corrupt(
                &self.url,
                format!("run `{id}` holds the header of run `{}`", header.id),
            ));
        }
        let names = names(&header.recorded_folder());
        let source = reuse
            .then(|| StepsReuse::new(self.url.clone(), vec![(id.to_owned(), f.entries.clone())]));
        let run = rebuild(
            &self.url,
            &header,
            &f.progress,
            f.entries,
            &ResumeOptions::default(),
            &names,
            None,
        )?;
        Ok((run, source))
    }
}
