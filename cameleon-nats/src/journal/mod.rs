//! The journal on NATS JetStream (docs/journal.md "The JetStream store"): a run's history in a
//! replicated, persistent stream, resumed by any process that reaches the server.
//!
//! Under the subject prefix `P` (`--subject-prefix`, `cameleon` by default), with `N` the
//! prefix whose dots are underscores:
//!
//! - the stream `N_journal` holds the subjects `P.journal.>`; run `ID`'s frames are the
//!   messages of `P.journal.ID`, in order: its header (the net's canonical `.cm`, its mode, its
//!   config), its entries (each step's record, the same JSON the SQLite store's `body` holds),
//!   and its progress (status, position) at the end of each frame;
//! - the KV bucket `N_leases` (its `max_age` is the lease's time to live) holds, under key `ID`,
//!   who goes on with run `ID`.
//!
//! The stream keeps every run until `cameleon runs --delete` (or a retention set on the stream
//! by its operator).

mod frame;
mod recorder;
mod reuse;

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use cameleon::Cvm;
use cameleon::journal::{
    HistoryEntry, JournalError, Names, PinCaps, RecordedFolder, ResumeOptions, Resumed, RunHeader,
    RunHistory, RunInfo, RunOptions, StoredProgress, history_of, rebuild, usage_of,
};
use futures_util::StreamExt;

use crate::NatsOptions;
use frame::{Chunks, Folded};
pub use recorder::Lease;
use recorder::{Appender, JetStreamRecorder};

/// The default time to live of a run's lease.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// How long a request to JetStream (a step's acknowledgement included) may wait.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A journal on a NATS server with JetStream: any number of runs, each resumed by one process
/// at a time (its [`Lease`]).
pub struct JetStreamJournal {
    url: String,
    prefix: String,
    js: jetstream::Context,
    stream: stream::Stream,
    leases: kv::Store,
    ttl: Duration,
    max_payload: usize,
}

impl std::fmt::Debug for JetStreamJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamJournal")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// The stream's name for prefix `prefix`.
pub fn stream_name(prefix: &str) -> String {
    format!("{}_journal", prefix.replace('.', "_"))
}

/// The lease bucket's name for prefix `prefix`.
pub fn bucket_name(prefix: &str) -> String {
    format!("{}_leases", prefix.replace('.', "_"))
}

/// Who this process is, as a lease names it.
fn holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "an unnamed host".to_owned());
    format!("process {} on {host}", std::process::id())
}

impl JetStreamJournal {
    /// Connects, and creates the stream and the lease bucket if they are missing (a new
    /// bucket's `max_age` is `ttl`; an existing one keeps its own).
    pub fn connect(options: &NatsOptions, ttl: Duration) -> Result<Self, JournalError> {
        let o = options.clone();
        cameleon::runtime::block_on(async move {
            match cameleon::runtime::spawn(async move { Self::connect_async(&o, ttl).await }).await
            {
                Ok(r) => r,
                Err(e) => Err(io(&options.url, format!("the connection task failed: {e}"))),
            }
        })
    }

    async fn connect_async(options: &NatsOptions, ttl: Duration) -> Result<Self, JournalError> {
        let url = options.url.clone();
        let client = options
            .connect_here(Some("cameleon-journal"))
            .await
            .map_err(|e| io(&url, e))?;
        let max_payload = client.server_info().max_payload;
        // Bounded: a request the server's permissions refuse is never answered.
        let js = jetstream::ContextBuilder::new()
            .timeout(REQUEST_TIMEOUT)
            .build(client);
        let stream = js
            .get_or_create_stream(stream::Config {
                name: stream_name(&options.prefix),
                subjects: vec![format!("{}.journal.>", options.prefix)],
                storage: stream::StorageType::File,
                allow_direct: true,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                io(
                    &url,
                    format!("cannot open the journal's stream (is JetStream enabled? `nats-server -js`): {e}"),
                )
            })?;
        let leases = match js.get_key_value(bucket_name(&options.prefix)).await {
            Ok(kv) => kv,
            Err(_) => {
                // The bucket's stream as the KV API lays it out; made here because the
                // client's `create_key_value` reads account fields server 2.9 lacks.
                let bucket = bucket_name(&options.prefix);
                js.get_or_create_stream(stream::Config {
                    name: format!("KV_{bucket}"),
                    subjects: vec![format!("$KV.{bucket}.>")],
                    max_messages_per_subject: 1,
                    max_age: ttl,
                    storage: stream::StorageType::File,
                    allow_rollup: true,
                    deny_delete: true,
                    allow_direct: true,
                    num_replicas: 1,
                    discard: stream::DiscardPolicy::New,
                    ..Default::default()
                })
                .await
                .map_err(|e| io(&url, format!("cannot open the lease bucket: {e}")))?;
                js.get_key_value(bucket)
                    .await
                    .map_err(|e| io(&url, format!("cannot open the lease bucket: {e}")))?
            }
        };
        Ok(JetStreamJournal {
            url,
            prefix: options.prefix.clone(),
            js,
            stream,
            leases,
            ttl,
            max_payload,
        })
    }

    /// The server's URL, as errors name the store.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn unknown(&self, id: &str) -> JournalError {
        JournalError::UnknownRun {
            path: self.url.clone(),
            id: id.to_owned(),
            known: Vec::new(),
        }
    }

    fn subject(&self, id: &str) -> String {
        format!("{}.journal.{id}", self.prefix)
    }

    /// Starts journaling the fresh `cvm` as a new run, holding its lease: its header is
    /// acknowledged by the server before this returns.
    pub fn start(&self, cvm: &mut Cvm, opts: &RunOptions) -> Result<(String, Lease), JournalError> {
        let header = RunHeader::new(cvm, opts)?;
        let id = header.id.clone();
        let lease = self.lease(&id)?;
        let mut appender = self.appender(&id, 0);
        let mut out = Vec::new();
        frame::header(&mut out, &header);
        frame::progress(
            &mut out,
            &StoredProgress {
                status: "RUNNING".into(),
                ..StoredProgress::default()
            },
        );
        let appended = cameleon::runtime::block_on(async {
            let r = appender.append(out).await;
            r.map(|()| appender)
        });
        let appender = appended.map_err(|e| io(&self.url, e))?;
        cvm.set_run_id(id.as_str());
        let meter = cvm.capabilities().meter().cloned();
        cvm.set_recorder(Box::new(JetStreamRecorder::new(
            appender,
            opts.durability,
            meter,
        )));
        Ok((id, lease))
    }

    fn appender(&self, id: &str, last: u64) -> Appender {
        Appender {
            js: self.js.clone(),
            subject: self.subject(id),
            last,
            max_payload: self.max_payload,
        }
    }

    fn lease(&self, id: &str) -> Result<Lease, JournalError> {
        let (kv, run, ttl) = (self.leases.clone(), id.to_owned(), self.ttl);
        let who = holder();
        let taken = cameleon::runtime::block_on(async move {
            cameleon::runtime::spawn(async move { Lease::take(kv, &run, &who, ttl).await }).await
        });
        match taken {
            Ok(Ok(lease)) => Ok(lease),
            Ok(Err(Ok(holder))) => Err(JournalError::Leased {
                store: self.url.clone(),
                run: id.to_owned(),
                holder,
                ttl_ms: u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            }),
            Ok(Err(Err(e))) => Err(io(&self.url, e)),
            Err(e) => Err(io(&self.url, e)),
        }
    }

    /// Reads run `id`'s frames; with the sequence of its last message.
    fn read(&self, id: &str) -> Result<(Folded, u64), JournalError> {
        if !valid_id(id) {
            return Err(self.unknown(id));
        }
        let subject = self.subject(id);
        let stream = self.stream.clone();
        let url = self.url.clone();
        let run = id.to_owned();
        let r = cameleon::runtime::block_on(async move {
            cameleon::runtime::spawn(async move { read_run(stream, subject).await }).await
        });
        match r {
            Ok(Ok(Some(r))) => Ok(r),
            Ok(Ok(None)) => Err(JournalError::UnknownRun {
                path: url,
                id: run,
                known: Vec::new(),
            }),
            Ok(Err(e)) => Err(corrupt(&url, format!("run `{run}`: {e}"))),
            Err(e) => Err(io(&url, e)),
        }
    }

    /// The run's id: `id`, else the most recently started one that has not finished
    /// (`RUNNING`, `WAITING`, `CANCELLED` or `BUDGET`), as `Journal::pick` chooses.
    pub fn pick(&self, id: Option<&str>) -> Result<String, JournalError> {
        if let Some(id) = id {
            if !valid_id(id) {
                return Err(self.unknown(id));
            }
            return Ok(id.to_owned());
        }
        self.runs()?
            .into_iter()
            .find(|r| {
                matches!(
                    r.status.as_str(),
                    "RUNNING" | "WAITING" | "CANCELLED" | "BUDGET"
                )
            })
            .map(|r| r.id)
            .ok_or_else(|| JournalError::NothingToResume {
                path: self.url.clone(),
            })
    }

    /// What run `id` recorded of its folder.
    pub fn recorded_folder(&self, id: Option<&str>) -> Result<RecordedFolder, JournalError> {
        let id = self.pick(id)?;
        let (f, _) = self.read(&id)?;
        let h = f
            .header
            .ok_or_else(|| corrupt(&self.url, format!("run `{id}` has no header")))?;
        Ok(h.recorded_folder())
    }

    /// Brings run `id` (or the one [`pick`](Self::pick) chooses) back, as
    /// `Journal::resume_with_names` does: an unfinished run takes its lease first (a second
    /// resumer gets [`JournalError::Leased`]) and goes on journaling here.
    pub fn resume(
        &self,
        id: Option<&str>,
        opts: &ResumeOptions,
        names: &Names,
        pin: PinCaps<'_>,
    ) -> Result<(Resumed, Option<Lease>), JournalError> {
        let id = self.pick(id)?;
        let lease = self.lease(&id)?;
        let (f, last) = self.read(&id)?;
        let header = f
            .header
            .ok_or_else(|| corrupt(&self.url, format!("run `{id}` has no header")))?;
        if header.id != id {
            return Err(corrupt(
                &self.url,
                format!("run `{id}` holds the header of run `{}`", header.id),
            ));
        }
        let progress = f.progress;
        let mut resumed = rebuild(
            &self.url,
            &header,
            &progress,
            f.entries,
            opts,
            names,
            Some(pin),
        )?;
        if resumed.is_finished() {
            return Ok((resumed, None));
        }
        let appender = self.appender(&id, last);
        let meter = resumed.cvm.capabilities().meter().cloned();
        resumed.cvm.set_recorder(Box::new(JetStreamRecorder::new(
            appender,
            header.durability(),
            meter,
        )));
        Ok((resumed, Some(lease)))
    }

    /// Every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>, JournalError> {
        let stream = self.stream.clone();
        let filter = format!("{}.journal.*", self.prefix);
        let r = cameleon::runtime::block_on(async move {
            cameleon::runtime::spawn(async move { list(stream, filter).await }).await
        });
        let mut runs = match r {
            Ok(Ok(runs)) => runs,
            Ok(Err(e)) => return Err(io(&self.url, e)),
            Err(e) => return Err(io(&self.url, e)),
        };
        runs.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(runs)
    }

    /// Run `id`'s history tree.
    pub fn history(&self, id: &str) -> Result<RunHistory, JournalError> {
        let (f, _) = self.read(id)?;
        let mut entries = Vec::with_capacity(f.entries.len());
        for e in f.entries {
            let ops: Vec<String> = serde_json::from_str(&e.ops)
                .map_err(|x| corrupt(&self.url, format!("run `{id}`: entry #{}: {x}", e.node)))?;
            entries.push(HistoryEntry {
                step: e.step,
                ops,
                branch: e.branch,
                node: e.node,
                parent: e.parent,
                migration: None,
            });
        }
        let here = f.progress.redo_tip.or(f.progress.tip);
        Ok(history_of(entries, here))
    }

    /// Run `id`'s records, as the SQLite store's `entries` hold them (for comparison).
    pub fn entries(&self, id: &str) -> Result<Vec<cameleon::journal::EncodedStep>, JournalError> {
        Ok(self.read(id)?.0.entries)
    }

    /// Deletes run `id`: purges its subject, then its lease.
    ///
    /// Unless `force`, the run's lease is taken first — refused ([`JournalError::Leased`]) while
    /// another process holds it, and held while the subject is purged so no resumer starts
    /// meanwhile — and a `RUNNING` run (stopped by a crash: it can be resumed) is refused
    /// ([`JournalError::Running`]). With `force`, a holder that goes on loses its run: the
    /// server refuses its next frame (its expected last sequence is gone). An id that names
    /// no run is [`JournalError::UnknownRun`].
    pub fn delete(&self, id: &str, force: bool) -> Result<(), JournalError> {
        // A subject token: anything else (`*`, `>`, a dot) would purge other runs.
        if !valid_id(id) {
            return Err(self.unknown(id));
        }
        let (stream, subject) = (self.stream.clone(), self.subject(id));
        let last = block(&self.url, async move {
            match stream.get_last_raw_message_by_subject(&subject).await {
                Ok(m) => Ok(Some(m.payload)),
                Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })?;
        let Some(last) = last else {
            return Err(self.unknown(id));
        };
        let lease = if force { None } else { Some(self.lease(id)?) };
        if !force {
            let mut tail = Folded::default();
            let status = last
                .split(|b| *b == b'\n')
                .rfind(|l| !l.is_empty())
                .and_then(|l| tail.frame(l).ok().map(|()| tail.progress.status));
            if status.as_deref() == Some("RUNNING") {
                return Err(JournalError::Running {
                    path: self.url.clone(),
                    run: id.to_owned(),
                });
            }
        }
        let (stream, subject) = (self.stream.clone(), self.subject(id));
        block(&self.url, async move {
            stream
                .purge()
                .filter(subject)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })?;
        match lease {
            // Dropping it removes the key.
            Some(lease) => drop(lease),
            None => {
                let (kv, run) = (self.leases.clone(), id.to_owned());
                block(&self.url, async move {
                    kv.purge(&run).await.map_err(|e| e.to_string())
                })?;
            }
        }
        Ok(())
    }
}

/// Whether `id` can name a run's subject: one token of letters, digits, `-` and `_`.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Runs `f` on the runtime and waits for it; its error (or the task's) as the store's.
fn block<T: Send + 'static>(
    url: &str,
    f: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, JournalError> {
    match cameleon::runtime::block_on(async move { cameleon::runtime::spawn(f).await }) {
        Ok(r) => r.map_err(|e| io(url, e)),
        Err(e) => Err(io(url, e)),
    }
}

/// Reads every message of `subject` in order (an ordered consumer), joining chunks into frames.
/// `None`: no message.
async fn read_run(
    stream: stream::Stream,
    subject: String,
) -> Result<Option<(Folded, u64)>, String> {
    let last = match stream.get_last_raw_message_by_subject(&subject).await {
        Ok(m) => m.sequence,
        Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            filter_subject: subject.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let mut messages = consumer.messages().await.map_err(|e| e.to_string())?;
    let mut folded = Folded::default();
    let mut chunks = Chunks::default();
    while let Some(m) = messages.next().await {
        let m = m.map_err(|e| e.to_string())?;
        let seq = m.info().map_err(|e| e.to_string())?.stream_sequence;
        let chunk = m
            .headers
            .as_ref()
            .and_then(|h| h.get(frame::CHUNK_HEADER))
            .map(|v| v.as_str().to_owned());
        if let Some(bytes) = chunks.push(chunk.as_deref(), &m.payload) {
            folded.frame(bytes)?;
        }
        if seq >= last {
            break;
        }
    }
    Ok(Some((folded, last)))
}

/// Every run under `filter`: its header (first frame) and its progress (last line).
async fn list(stream: stream::Stream, filter: String) -> Result<Vec<RunInfo>, String> {
    let mut subjects = stream
        .info_with_subjects(&filter)
        .await
        .map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    while let Some(s) = subjects.next().await {
        names.push(s.map_err(|e| e.to_string())?.0);
    }
    let mut runs = Vec::new();
    for subject in names {
        let Some(id) = subject.rsplit('.').next().map(str::to_owned) else {
            continue;
        };
        let first = stream
            .get_first_raw_message_by_subject(&subject, 1)
            .await
            .map_err(|e| e.to_string())?;
        let last = stream
            .get_last_raw_message_by_subject(&subject)
            .await
            .map_err(|e| e.to_string())?;
        let mut head = Folded::default();
        // The header is the first frame's first line.
        if let Some(line) = first.payload.split(|b| *b == b'\n').next() {
            let _ = head.frame(line);
        }
        let Some(h) = head.header else { continue };
        let mut tail = Folded::default();
        let progress = last
            .payload
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .and_then(|l| tail.frame(l).ok().map(|()| tail.progress))
            .unwrap_or_default();
        runs.push(RunInfo {
            id,
            name: h.name,
            status: progress.status.clone(),
            steps: u64::from(progress.steps),
            started: rfc3339(first.time.unix_timestamp(), first.time.millisecond()),
            usage: progress.end_state.as_deref().and_then(usage_of),
        });
    }
    Ok(runs)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a Unix time (UTC).
fn rfc3339(secs: i64, ms: u16) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn io(url: &str, e: impl std::fmt::Display) -> JournalError {
    JournalError::Io {
        path: url.to_owned(),
        what: e.to_string(),
    }
}

fn corrupt(url: &str, what: String) -> JournalError {
    JournalError::Corrupt {
        path: url.to_owned(),
        what,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_written_in_rfc_3339() {
        assert_eq!(super::rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(1_796_306_474, 5), "2026-12-03T14:01:14.005Z");
    }
}
