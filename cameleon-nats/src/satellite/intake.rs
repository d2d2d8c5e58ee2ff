//! A satellite's intake: bounded. A request over the size limit is answered `bad_request`, and
//! one that arrives while the satellite runs as many calls as it may is answered `busy` — both
//! at once, without a task. A firing of an inline operator (quick by declaration) is run and
//! answered at once too; every other call runs on a task of its own. Each holds one of the
//! `concurrency` places until its reply is sent.

use std::sync::Arc;
use std::time::Duration;

use async_nats::Message;
use bytes::Bytes;
use cameleon::tools::{ToolResult, ToolStatus};
use futures_util::StreamExt;
use tokio::sync::OwnedSemaphorePermit;

use super::answer::{Prepared, answer_op, answer_op_now, handle_tool, prepare, read_op};
use super::{Shared, lock};
use crate::NatsError;
use crate::wire::{ACK_HELD, ErrorKind, OpReply, ToolReply, WIRE_VERSION, names};

/// What a subject serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Operator firings.
    Op,
    /// Tool calls.
    Tool,
}

/// A request taken from an endpoint or from the satellite's own subjects.
pub(super) enum Call {
    /// From an endpoint: the services API's request (it counts the reply in `$SRV.STATS`).
    Endpoint(async_nats::service::Request),
    /// From the satellite's own subjects.
    Direct(Message),
}

impl Call {
    pub(super) fn message(&self) -> &Message {
        match self {
            Call::Endpoint(r) => &r.message,
            Call::Direct(m) => m,
        }
    }

    async fn respond(&self, shared: &Shared, body: Bytes) {
        match self {
            Call::Endpoint(r) => {
                let _ = r.respond_with_headers(Ok(body), shared.headers()).await;
            }
            Call::Direct(m) => {
                if let Some(reply) = &m.reply {
                    let _ = shared
                        .client
                        .publish_with_headers(reply.clone(), shared.headers(), body)
                        .await;
                }
            }
        }
    }

    /// Tells the caller this satellite holds the call (its name and heartbeat period), if it
    /// asked: before the reply; for a call answered `at_once`, only if it asked for every call
    /// (`Cameleon-Want-Ack: 1`) rather than for those held (`held`).
    ///
    /// A held call's acknowledgement is flushed to the server before the call runs: a publish
    /// only queues the message, and a satellite that dies while the acknowledgement still waits
    /// in its queue (after its effect began) would leave the run not knowing who held the call —
    /// no failover in heartbeats, only the instance's timeout (docs/wire.md, "Acknowledgement
    /// and failover"). Calls answered at once need no flush: the reply follows in the same write.
    /// The flush waits for the write to the socket, not for the server (no round trip).
    async fn acknowledge(&self, shared: &Shared, at_once: bool) {
        let m = self.message();
        let wanted = match m.headers.as_ref().and_then(|h| h.get(names::WANT_ACK)) {
            None => false,
            Some(v) => !(at_once && v.as_str() == ACK_HELD),
        };
        if let (true, Some(reply)) = (wanted, &m.reply) {
            let sent = shared
                .client
                .publish_with_headers(reply.clone(), shared.ack_headers.clone(), Bytes::new())
                .await;
            if sent.is_ok() && !at_once {
                // Bounded: with the server unreachable the call runs after one heartbeat
                // period, as before (the run cannot hear of it either way).
                let period = shared.config.heartbeat;
                let _ = tokio::time::timeout(period, shared.client.flush()).await;
            }
        }
    }

    fn log_taken(&self, shared: &Shared) {
        let m = self.message();
        tracing::info!(
            satellite = %shared.name,
            subject = %m.subject,
            key = m
                .headers
                .as_ref()
                .and_then(|h| h.get(names::KEY))
                .map_or("", |k| k.as_str()),
            "call taken"
        );
    }
}

/// Takes the calls of one endpoint.
pub(super) async fn serve(
    shared: Arc<Shared>,
    kind: Kind,
    mut endpoint: async_nats::service::endpoint::Endpoint,
) {
    while let Some(request) = endpoint.next().await {
        take(&shared, kind, Call::Endpoint(request)).await;
    }
}

/// How long a starting satellite waits for the NATS server to confirm its subscriptions
/// before it serves anyway.
pub(super) const READY_WAIT: Duration = Duration::from_secs(2);

/// Waits until the NATS server has every subscription the satellite made so far, so that a
/// call sent (from any connection) once [`Satellite::start`](super::Satellite::start) returns
/// finds it. Writing the subscriptions out is not enough: the server reads each connection on
/// its own, and a client's call can overtake them. So the satellite publishes a probe on a
/// subject nobody subscribes to, with a reply subject under its own subjects; the server
/// handles a connection's messages in order, so its no-responders notice on the reply subject
/// comes after it has taken the subscriptions (docs/wire.md, "Ready"). Needs no permission
/// beyond the satellite's own. Should someone subscribe to the probe's subject, no notice
/// comes: the satellite serves after `wait`. Returns the calls that came on its own subjects
/// meanwhile, for [`serve_direct`].
pub(super) async fn confirm_subscriptions(
    shared: &Shared,
    direct: &mut async_nats::Subscriber,
    wait: Duration,
) -> Result<Vec<Message>, NatsError> {
    let reply = shared.subjects.ready_reply(&shared.name);
    shared
        .client
        .publish_with_reply(
            shared.subjects.ready_probe(&shared.name),
            reply.clone(),
            Bytes::new(),
        )
        .await
        .map_err(|e| NatsError::Nats(format!("cannot publish: {e}")))?;
    let mut early = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, direct.next()).await {
            Ok(Some(m)) if m.subject.as_str() == reply => return Ok(early),
            Ok(Some(m)) => early.push(m),
            Ok(None) => {
                return Err(NatsError::Nats(
                    "the connection to the NATS server closed while the satellite started"
                        .to_owned(),
                ));
            }
            Err(_) => {
                tracing::warn!(
                    satellite = %shared.name,
                    "the NATS server did not confirm the satellite's subscriptions within {} ms; serving anyway",
                    wait.as_millis()
                );
                return Ok(early);
            }
        }
    }
}

/// Takes the calls sent to this satellite alone: `<prefix>.sat.<name>.op.<type>` and
/// `<prefix>.sat.<name>.tool.<tool>` (a run re-sending a call whose satellite was lost);
/// `early` first, the calls taken from `sub` while the satellite started.
pub(super) async fn serve_direct(
    shared: Arc<Shared>,
    mut sub: async_nats::Subscriber,
    early: Vec<Message>,
) {
    let head = format!("{}.sat.{}.", shared.subjects.prefix(), shared.name);
    let mut stop = shared.stop.subscribe();
    let mut early = early.into_iter();
    loop {
        let message = match early.next() {
            Some(m) => Some(m),
            None => tokio::select! {
                m = sub.next() => m,
                _ = stop.wait_for(|s| *s) => None,
            },
        };
        let Some(message) = message else { return };
        let tail = message.subject.as_str().strip_prefix(&head).unwrap_or("");
        let kind = if tail.starts_with("op.") {
            Kind::Op
        } else if tail.starts_with("tool.") {
            Kind::Tool
        } else {
            continue;
        };
        take(&shared, kind, Call::Direct(message)).await;
    }
}

/// Answers `call` at once when it is too large or the satellite is full, or when it is a firing
/// it cannot take or of an inline operator (quick by declaration: run and answered here — its
/// reply alone when the caller asked to hear only of the calls held, else the acknowledgement
/// and the reply in one write); runs it on a task of its own otherwise.
async fn take(shared: &Arc<Shared>, kind: Kind, call: Call) {
    let size = call.message().payload.len();
    let limit = shared.config.max_request_bytes;
    if size > limit {
        let why = format!(
            "satellite `{}` reads requests of at most {limit} bytes (`--max-request-bytes`); this one has {size}",
            shared.name
        );
        call.respond(shared, refusal(shared, kind, ErrorKind::BadRequest, why))
            .await;
        return;
    }
    let Ok(permit) = Arc::clone(&shared.permits).try_acquire_owned() else {
        let why = format!(
            "satellite `{}` is busy: it runs {} calls, its limit (`--concurrency`); send the call again, to it or another",
            shared.name,
            shared.config.concurrency.max(1)
        );
        call.respond(shared, refusal(shared, kind, ErrorKind::Busy, why))
            .await;
        return;
    };
    let work = match kind {
        Kind::Tool => Work::Tool,
        Kind::Op => {
            let prepared = read_op(shared, call.message()).and_then(|req| prepare(shared, req));
            let p = match prepared {
                Ok(p) => p,
                Err(reply) => {
                    // Taken, and answered at once: the request cannot run.
                    call.acknowledge(shared, true).await;
                    call.respond(shared, encode(&reply)).await;
                    return;
                }
            };
            if p.is_inline() {
                call.log_taken(shared);
                match answer_op_now(shared, p, permit) {
                    Ok(reply) => {
                        call.acknowledge(shared, true).await;
                        call.respond(shared, encode(&reply)).await;
                        return;
                    }
                    // The same key runs now: held, its reply awaited on a task.
                    Err(back) => {
                        call.acknowledge(shared, false).await;
                        let (p, permit) = *back;
                        return spawn(shared, call, Work::Waiting(p), permit);
                    }
                }
            }
            Work::Op(p)
        }
    };
    spawn(shared, call, work, permit);
}

/// What a task does with a call.
enum Work {
    Tool,
    /// A firing, prepared.
    Op(Prepared),
    /// A firing acknowledged already, whose key runs now.
    Waiting(Prepared),
}

fn spawn(shared: &Arc<Shared>, call: Call, work: Work, permit: OwnedSemaphorePermit) {
    let s = Arc::clone(shared);
    let mut tasks = lock(&shared.tasks);
    while tasks.try_join_next().is_some() {}
    tasks.spawn(async move { run(s, call, work, permit).await });
}

/// Runs one call on its task and sends the reply.
async fn run(shared: Arc<Shared>, call: Call, work: Work, permit: OwnedSemaphorePermit) {
    if !matches!(work, Work::Waiting(_)) {
        call.acknowledge(&shared, false).await;
        call.log_taken(&shared);
    }
    let body = match work {
        Work::Op(p) | Work::Waiting(p) => encode(&answer_op(&shared, p, permit).await),
        Work::Tool => encode(&handle_tool(&shared, call.message(), permit).await),
    };
    call.respond(&shared, body).await;
}

/// The reply to a call the satellite did not take.
fn refusal(shared: &Shared, kind: Kind, why_kind: ErrorKind, why: String) -> Bytes {
    match kind {
        Kind::Op => encode(&OpReply::failed(&shared.name, why_kind, why)),
        Kind::Tool => encode(&tool_refusal(&shared.name, "?", why_kind, why)),
    }
}

/// A tool reply for a call the satellite did not run (`kind` says why).
pub(super) fn tool_refusal(satellite: &str, tool: &str, kind: ErrorKind, why: String) -> ToolReply {
    let status = match kind {
        ErrorKind::Timeout => ToolStatus::Timeout,
        _ => ToolStatus::Error,
    };
    let mut result = ToolResult::failed(status, tool, why, 0);
    result.meta.origin = format!("satellite:{satellite}");
    ToolReply {
        v: WIRE_VERSION,
        satellite: satellite.to_owned(),
        result,
        cached: false,
        kind: Some(kind),
    }
}

pub(super) fn encode<T: serde::Serialize>(v: &T) -> Bytes {
    // The wire types serialize to JSON without fail (string keys, no non-finite floats).
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}
