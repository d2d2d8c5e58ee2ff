//! The recorder of a run journaled on JetStream, and the run's lease.
//!
//! Each flush publishes one frame (in chunks past the server's `max_payload`) carrying
//! `Nats-Expected-Last-Subject-Sequence`: the sequence of the run's last message this process
//! wrote or read. A process whose lease lapsed and whose run another process went on with
//! cannot append: the server refuses, and the run stops with the error.
//!
//! - `sync`, `strict`: each step is acknowledged by the server before the engine goes on;
//! - `batch`: steps wait in memory; a flusher thread publishes what waits every `ms`, one frame;
//! - `exit`: steps wait until the run ends (or the recorder is dropped).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::kv::Store;
use bytes::Bytes;
use cameleon::engine::{Committed, EndState, Position, RecordError, Recorder};
use cameleon::journal::{
    Durability, EncodedStep, StepEncoder, StoredProgress, end_status, with_usage,
};
use cameleon::operator::capability::Meter;

use super::frame::{self, CHUNK_HEADER};

/// Where a run's frames go.
pub(crate) struct Appender {
    pub(crate) js: jetstream::Context,
    pub(crate) subject: String,
    /// The sequence of the run's last message (0: none).
    pub(crate) last: u64,
    /// The largest message the server takes.
    pub(crate) max_payload: usize,
}

impl Appender {
    /// Publishes `frame`, each chunk acknowledged before the next.
    pub(crate) async fn append(&mut self, frame: Vec<u8>) -> Result<(), String> {
        // Room for the headers.
        let room = self.max_payload.saturating_sub(512).max(1024);
        let frame = Bytes::from(frame);
        let n = frame.len().div_ceil(room).max(1);
        for i in 0..n {
            let part = frame.slice(i * room..((i + 1) * room).min(frame.len()));
            let mut h = async_nats::HeaderMap::new();
            h.insert(
                async_nats::header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE,
                self.last.to_string().as_str(),
            );
            if n > 1 {
                h.insert(CHUNK_HEADER, format!("{}/{n}", i + 1).as_str());
            }
            let ack = self
                .js
                .publish_with_headers(self.subject.clone(), h, part)
                .await
                .map_err(|e| e.to_string())?
                .await
                .map_err(|e| {
                    format!(
                        "{e} (another process may have gone on with the run after this one lost its lease)"
                    )
                })?;
            self.last = ack.sequence;
        }
        Ok(())
    }
}

/// What waits to be published.
#[derive(Default)]
struct Pending {
    entries: Vec<EncodedStep>,
    progress: Option<StoredProgress>,
    error: Option<String>,
    stop: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    appender: tokio::sync::Mutex<Appender>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Publishes everything waiting, as one frame.
fn flush(shared: &Shared) -> Result<(), RecordError> {
    let (entries, progress) = {
        let mut p = lock(&shared.pending);
        if let Some(e) = &p.error {
            return Err(RecordError(e.clone()));
        }
        (std::mem::take(&mut p.entries), p.progress.take())
    };
    if entries.is_empty() && progress.is_none() {
        return Ok(());
    }
    let r = cameleon::runtime::block_on(async {
        let mut a = shared.appender.lock().await;
        let mut out = Vec::with_capacity(entries.iter().map(|e| e.body.len() + 64).sum());
        for e in &entries {
            frame::entry(&mut out, e)?;
        }
        if let Some(p) = &progress {
            frame::progress(&mut out, p);
        }
        a.append(out).await
    });
    r.map_err(|e| {
        let msg = format!("cannot write to the journal on JetStream: {e}");
        lock(&shared.pending).error = Some(msg.clone());
        RecordError(msg)
    })
}

/// The [`Recorder`] of one run journaled on JetStream.
pub(crate) struct JetStreamRecorder {
    durability: Durability,
    /// The run's meter: what it spent goes with its status (`"usage"` in `end_state`).
    meter: Option<Arc<Meter>>,
    encoder: StepEncoder,
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl JetStreamRecorder {
    pub(crate) fn new(
        appender: Appender,
        durability: Durability,
        meter: Option<Arc<Meter>>,
    ) -> Self {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            appender: tokio::sync::Mutex::new(appender),
        });
        let flusher = match durability {
            Durability::Batch { ms } => {
                let s = Arc::clone(&shared);
                let every = Duration::from_millis(ms.max(1));
                std::thread::Builder::new()
                    .name("cameleon-journal-js".into())
                    .spawn(move || {
                        loop {
                            let stop = {
                                let p = lock(&s.pending);
                                let (p, _) = s
                                    .wake
                                    .wait_timeout_while(p, every, |p| !p.stop)
                                    .unwrap_or_else(PoisonError::into_inner);
                                p.stop
                            };
                            let _ = flush(&s); // a failure is kept in `pending.error`
                            if stop {
                                return;
                            }
                        }
                    })
                    .ok()
            }
            _ => None,
        };
        JetStreamRecorder {
            durability,
            meter,
            encoder: StepEncoder::new(),
            shared,
            flusher,
        }
    }

    fn queue(
        &mut self,
        entry: Option<EncodedStep>,
        progress: StoredProgress,
        now: bool,
    ) -> Result<(), RecordError> {
        {
            let mut p = lock(&self.shared.pending);
            if let Some(e) = &p.error {
                return Err(RecordError(e.clone()));
            }
            p.entries.extend(entry);
            p.progress = Some(progress);
        }
        if now || matches!(self.durability, Durability::Sync | Durability::Strict) {
            flush(&self.shared)?;
        }
        Ok(())
    }
}

fn progress_at(
    meter: Option<&Meter>,
    at: Position,
    status: &str,
    end_state: Option<String>,
) -> StoredProgress {
    let (status, end_state) = with_usage(meter, status, end_state);
    StoredProgress {
        status,
        end_state,
        steps: at.depth,
        tip: at.tip,
        redo_tip: at.redo_tip,
    }
}

impl Recorder for JetStreamRecorder {
    fn committed(&mut self, step: &Committed<'_>) -> Result<(), RecordError> {
        let e = self.encoder.encode(step)?;
        let p = progress_at(self.meter.as_deref(), step.position(), "RUNNING", None);
        self.queue(Some(e), p, false)
    }

    fn moved(&mut self, at: Position) -> Result<(), RecordError> {
        let p = progress_at(self.meter.as_deref(), at, "RUNNING", None);
        self.queue(None, p, false)
    }

    fn ended(&mut self, end: &EndState, at: Position) -> Result<(), RecordError> {
        let (status, json) = end_status(end);
        let p = progress_at(self.meter.as_deref(), at, &status, json);
        self.queue(None, p, true)
    }
}

impl Drop for JetStreamRecorder {
    fn drop(&mut self) {
        if let Some(h) = self.flusher.take() {
            lock(&self.shared.pending).stop = true;
            self.shared.wake.notify_all();
            let _ = h.join();
        }
        let _ = flush(&self.shared);
    }
}

/// A run's lease: a KV entry (key: the run id, value: its holder) in a bucket whose `max_age`
/// is the lease's time to live, renewed by compare-and-set on its revision every third of it.
/// Dropping the lease deletes the entry (if still this process's), so another may resume at
/// once; a process that dies loses it after the time to live.
pub struct Lease {
    task: Option<tokio::task::JoinHandle<()>>,
    kv: Store,
    run: String,
    revision: Arc<Mutex<u64>>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("run", &self.run).finish()
    }
}

impl Lease {
    /// Takes run `run`'s lease for `holder`; `Err(Some(holder))`: another holds it.
    pub(crate) async fn take(
        kv: Store,
        run: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Lease, Result<String, String>> {
        let rev = match kv.create(run, Bytes::from(holder.to_owned())).await {
            Ok(rev) => rev,
            Err(e) if e.kind() == async_nats::jetstream::kv::CreateErrorKind::AlreadyExists => {
                let who = kv
                    .get(run)
                    .await
                    .ok()
                    .flatten()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_else(|| "another process".to_owned());
                return Err(Ok(who));
            }
            Err(e) => return Err(Err(format!("cannot take the run's lease: {e}"))),
        };
        let revision = Arc::new(Mutex::new(rev));
        let (k, r, key, value) = (
            kv.clone(),
            Arc::clone(&revision),
            run.to_owned(),
            Bytes::from(holder.to_owned()),
        );
        let every = (ttl / 3).max(Duration::from_millis(10));
        let task = cameleon::runtime::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let now = *lock(&r);
                match k.update(&key, value.clone(), now).await {
                    Ok(next) => *lock(&r) = next,
                    // Lost (another took it after it lapsed): appends are refused from now on.
                    Err(e) => {
                        tracing::warn!("run {key}: the journal lease could not be renewed: {e}");
                        return;
                    }
                }
            }
        });
        Ok(Lease {
            task: Some(task),
            kv,
            run: run.to_owned(),
            revision,
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (kv, run, rev) = (self.kv.clone(), self.run.clone(), *lock(&self.revision));
        cameleon::runtime::block_on(async move {
            let _ = kv.purge_expect_revision(&run, Some(rev)).await;
        });
    }
}
