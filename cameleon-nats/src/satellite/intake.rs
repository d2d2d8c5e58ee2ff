//! A satellite's intake: bounded. A request over the size limit is answered `bad_request`, and
//! one that arrives while the satellite runs as many calls as it may is answered `busy` — both
//! at once, without a task. Every other call runs on a task of its own holding one of the
//! `concurrency` places until its reply is sent.

use std::sync::Arc;

use async_nats::Message;
use bytes::Bytes;
use cameleon::tools::{ToolResult, ToolStatus};
use futures_util::StreamExt;
use tokio::sync::OwnedSemaphorePermit;

use super::answer::{handle_op, handle_tool};
use super::{Shared, lock};
use crate::wire::{
    ACK_HEADER, ErrorKind, HEARTBEAT_HEADER, KEY_HEADER, OpReply, ToolReply, WANT_ACK_HEADER,
    WIRE_VERSION,
};

/// What a subject serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Operator firings.
    Op,
    /// Tool calls.
    Tool,
}

/// A request taken from an endpoint or from the satellite's own subjects.
pub(super) struct Call {
    pub(super) message: Message,
    /// The services API's request (it counts the reply in `$SRV.STATS`), or none for a call
    /// on the satellite's own subjects.
    request: Option<async_nats::service::Request>,
}

impl Call {
    async fn respond(&self, shared: &Shared, body: Bytes) {
        match (&self.request, &self.message.reply) {
            (Some(r), _) => {
                let _ = r.respond_with_headers(Ok(body), shared.headers()).await;
            }
            (None, Some(reply)) => {
                let _ = shared
                    .client
                    .publish_with_headers(reply.clone(), shared.headers(), body)
                    .await;
            }
            (None, None) => {}
        }
    }

    /// Tells the caller this satellite holds the call (its name and heartbeat period).
    async fn acknowledge(&self, shared: &Shared) {
        let wanted = self
            .message
            .headers
            .as_ref()
            .is_some_and(|h| h.get(WANT_ACK_HEADER).is_some());
        if let (true, Some(reply)) = (wanted, &self.message.reply) {
            let mut h = shared.headers();
            h.insert(ACK_HEADER, shared.name.as_str());
            h.insert(
                HEARTBEAT_HEADER,
                shared.config.heartbeat.as_millis().to_string().as_str(),
            );
            let _ = shared
                .client
                .publish_with_headers(reply.clone(), h, Bytes::new())
                .await;
        }
    }
}

/// Takes the calls of one endpoint.
pub(super) async fn serve(
    shared: Arc<Shared>,
    kind: Kind,
    mut endpoint: async_nats::service::endpoint::Endpoint,
) {
    while let Some(request) = endpoint.next().await {
        let call = Call {
            message: request.message.clone(),
            request: Some(request),
        };
        take(&shared, kind, call).await;
    }
}

/// Takes the calls sent to this satellite alone: `<prefix>.sat.<name>.op.<type>` and
/// `<prefix>.sat.<name>.tool.<tool>` (a run re-sending a call whose satellite was lost).
pub(super) async fn serve_direct(shared: Arc<Shared>, mut sub: async_nats::Subscriber) {
    let head = format!("{}.sat.{}.", shared.subjects.prefix(), shared.name);
    let mut stop = shared.stop.subscribe();
    loop {
        let message = tokio::select! {
            m = sub.next() => m,
            _ = stop.wait_for(|s| *s) => None,
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
        take(
            &shared,
            kind,
            Call {
                message,
                request: None,
            },
        )
        .await;
    }
}

/// Answers `call` at once when it is too large or the satellite is full; runs it otherwise.
async fn take(shared: &Arc<Shared>, kind: Kind, call: Call) {
    let size = call.message.payload.len();
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
    let s = Arc::clone(shared);
    let mut tasks = lock(&shared.tasks);
    while tasks.try_join_next().is_some() {}
    tasks.spawn(async move { run(s, kind, call, permit).await });
}

/// Runs one call on its task and sends the reply.
async fn run(shared: Arc<Shared>, kind: Kind, call: Call, permit: OwnedSemaphorePermit) {
    call.acknowledge(&shared).await;
    tracing::info!(
        satellite = %shared.name,
        subject = %call.message.subject,
        key = call
            .message
            .headers
            .as_ref()
            .and_then(|h| h.get(KEY_HEADER))
            .map_or("", |k| k.as_str()),
        "call taken"
    );
    let body = match kind {
        Kind::Op => encode(&handle_op(&shared, &call.message, permit).await),
        Kind::Tool => encode(&handle_tool(&shared, &call.message, permit).await),
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
