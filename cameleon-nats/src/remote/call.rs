//! One call from a run to the satellites: sent on the queue subject, acknowledged by the
//! satellite that takes it, answered — or re-sent. Re-sent while nobody listens or every answer
//! is `busy` (neither is a failed attempt), and re-sent at once to a live satellite's own subject
//! when the one holding it is unseen for 3 of its heartbeat periods (a lost satellite is not a
//! failed attempt either: the call gets its whole time again). docs/wire.md, "Acknowledgement
//! and failover".

use std::time::{Duration, Instant};

use bytes::Bytes;
use cameleon::OpError;
use cameleon::tools::ToolError;
use serde::de::DeserializeOwned;

use super::{Failover, Remote};
use crate::wire::{ErrorKind, OpReply, OpRequest, ToolReply, ToolRequest, WIRE_VERSION, names};

/// Why a call got no reply.
pub(super) enum Failure {
    /// Nobody subscribes to the subject.
    NoResponders,
    /// A satellite took the call and did not answer in time.
    TimedOut,
    /// Nobody even acknowledged the call (a satellite that does not acknowledge, or a server
    /// that refused the publish).
    Unacknowledged,
    /// Every answer was `busy`; the last satellite that said so.
    Busy(String),
    Other(String),
}

/// A reply: its wire version and who sent it.
pub(super) trait Versioned {
    fn version(&self) -> u32;
    fn satellite(&self) -> &str;
}

impl Versioned for OpReply {
    fn version(&self) -> u32 {
        self.v
    }
    fn satellite(&self) -> &str {
        &self.satellite
    }
}

impl Versioned for ToolReply {
    fn version(&self) -> u32 {
        self.v
    }
    fn satellite(&self) -> &str {
        &self.satellite
    }
}

/// Waits `pause` (at most until `deadline`) and doubles it, up to 100 ms; whether time is left
/// to send the call again.
async fn wait_before_resending(pause: &mut Duration, deadline: Instant) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::sleep((*pause).min(left)).await;
    *pause = (*pause * 2).min(Duration::from_millis(100));
    Instant::now() < deadline
}

/// The satellite holding a call: its name, heartbeat period, and when it acknowledged.
struct Holder {
    name: String,
    period: Duration,
    acked: Instant,
}

impl Remote {
    /// Sends one firing and waits for its reply: re-sent while no satellite hosting the type
    /// answers or all are busy, and to another satellite when the one running it is lost —
    /// until `limit` passes without a reply.
    pub async fn fire(&self, req: &OpRequest, limit: Duration) -> Result<OpReply, OpError> {
        self.fire_in(req, limit, false).await
    }

    /// [`fire`](Self::fire), for a firing of a step with others (parallel mode): the request
    /// is encoded, then the task yields once before publishing it, so the engine, polling the
    /// step's firings together, encodes every remote firing of the step first and then
    /// publishes them back to back — sent together, before any reply is awaited, which the
    /// connection writes out in one go.
    pub async fn fire_with_step(
        &self,
        req: &OpRequest,
        limit: Duration,
    ) -> Result<OpReply, OpError> {
        self.fire_in(req, limit, true).await
    }

    async fn fire_in(
        &self,
        req: &OpRequest,
        limit: Duration,
        with_step: bool,
    ) -> Result<OpReply, OpError> {
        let body = serde_json::to_vec(req)
            .map_err(|e| OpError::new(format!("cannot encode the firing request: {e}")))?;
        if with_step {
            tokio::task::yield_now().await;
        }
        let reply = self
            .exchange(
                false,
                &req.ty,
                body.into(),
                Some(&req.key),
                limit,
                |r: &OpReply| r.kind == Some(ErrorKind::Busy),
            )
            .await
            .map_err(|e| {
                let what = format!("operator type `{}` (instance `{}`)", req.ty, req.instance);
                self.explain(e, &self.subjects.op(&req.ty), &what, limit)
            })?;
        if reply.ok {
            self.record_ran(req, &reply.satellite);
        }
        Ok(reply)
    }

    /// Calls a tool on a satellite, as [`fire`](Self::fire) sends a firing.
    pub async fn call_tool(
        &self,
        req: &ToolRequest,
        limit: Duration,
    ) -> Result<ToolReply, ToolError> {
        let body = serde_json::to_vec(req)
            .map_err(|e| ToolError::new(format!("cannot encode the tool call: {e}")))?;
        let what = format!("tool `{}`", req.tool);
        let key = req.key.as_deref();
        self.exchange(true, &req.tool, body.into(), key, limit, |r: &ToolReply| {
            r.kind == Some(ErrorKind::Busy)
        })
        .await
        .map_err(|e| {
            let subject = self.subjects.tool(&req.tool);
            ToolError::new(self.explain(e, &subject, &what, limit).message().to_owned())
        })
    }

    /// One call of operator type (or tool, when `tool`) `name`. See the module's text.
    async fn exchange<R: DeserializeOwned + Versioned>(
        &self,
        tool: bool,
        name: &str,
        body: Bytes,
        key: Option<&str>,
        limit: Duration,
        busy: fn(&R) -> bool,
    ) -> Result<R, Failure> {
        let queue = if tool {
            self.subjects.tool(name)
        } else {
            self.subjects.op(name)
        };
        let mut headers = self.follow.headers.clone();
        if let Some(k) = key {
            headers.insert(names::KEY, k);
        }
        // A core kept awake for the reply (docs/wire.md, "Latency").
        let _awake = super::awake::KeepAwake::global().and_then(|k| k.hold(self.keep_awake));
        // One subject per call, under the connection's one reply subscription.
        let (inbox, mut replies) = self.follow.mux.register();
        let mut deadline = Instant::now() + limit;
        let mut subject = queue.clone();
        let mut pause = Duration::from_millis(1);
        let mut last_busy: Option<String> = None;
        let mut lost: Vec<String> = Vec::new();
        'send: loop {
            self.client
                .publish_with_reply_and_headers(
                    subject.clone(),
                    inbox.clone(),
                    headers.clone(),
                    body.clone(),
                )
                .await
                .map_err(|e| Failure::Other(format!("cannot send on `{subject}`: {e}")))?;
            let mut holder: Option<Holder> = None;
            loop {
                let now = Instant::now();
                if now >= deadline {
                    return Err(match (&holder, last_busy) {
                        (Some(_), _) => Failure::TimedOut,
                        (None, Some(b)) => Failure::Busy(b),
                        (None, None) => Failure::Unacknowledged,
                    });
                }
                let wake = match &holder {
                    Some(h) => deadline.min(now + (h.period / 20).max(Duration::from_millis(1))),
                    None => deadline,
                };
                // A message already there is taken without arming the timer.
                let message = tokio::select! {
                    biased;
                    m = replies.recv() => m,
                    () = tokio::time::sleep_until(wake.into()) => {
                        if let Some(h) = &holder
                            && let Some(to) = self.lost(h, tool, name, &lost)
                        {
                            lost.push(h.name.clone());
                            subject = match &to {
                                Some(other) if tool => self.subjects.direct_tool(other, name),
                                Some(other) => self.subjects.direct_op(other, name),
                                None => queue.clone(),
                            };
                            tracing::info!(from = %h.name, to = ?to, key, "satellite lost: call sent again");
                            deadline = Instant::now() + limit;
                            continue 'send;
                        }
                        continue;
                    }
                };
                let Some(m) = message else {
                    return Err(Failure::Other("the reply subscription ended".to_owned()));
                };
                if m.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                    // Nobody listens (yet): none hosts it, or the chosen one just left.
                    subject = queue.clone();
                    if !wait_before_resending(&mut pause, deadline).await {
                        return Err(last_busy.map_or(Failure::NoResponders, Failure::Busy));
                    }
                    continue 'send;
                }
                if let Some(acker) = m.headers.as_ref().and_then(|h| h.get(names::ACK)) {
                    let period = m
                        .headers
                        .as_ref()
                        .and_then(|h| h.get(names::HEARTBEAT))
                        .and_then(|v| v.as_str().parse().ok())
                        .map_or(Duration::from_secs(1), Duration::from_millis);
                    holder = Some(Holder {
                        name: acker.as_str().to_owned(),
                        period,
                        acked: Instant::now(),
                    });
                    continue;
                }
                let reply: R = serde_json::from_slice(&m.payload).map_err(|e| {
                    Failure::Other(format!("the reply on `{subject}` cannot be read: {e}"))
                })?;
                if reply.version() != WIRE_VERSION {
                    return Err(Failure::Other(format!(
                        "wire version mismatch: satellite `{}` answered in version {}, this program speaks {WIRE_VERSION} (run satellites built with the same Caméléon version; docs/wire.md)",
                        reply.satellite(),
                        reply.version()
                    )));
                }
                if !busy(&reply) {
                    return Ok(reply);
                }
                let satellite = reply.satellite().to_owned();
                subject = queue.clone();
                if !wait_before_resending(&mut pause, deadline).await {
                    return Err(Failure::Busy(satellite));
                }
                last_busy = Some(satellite);
                continue 'send;
            }
        }
    }

    /// Whether the holder is lost (unseen — no heartbeat, no acknowledgement — for 3 of its
    /// heartbeat periods); if so, the satellite to send the call to instead (`Some(None)`:
    /// none known alive, the queue subject), and the failover recorded.
    fn lost(&self, h: &Holder, tool: bool, name: &str, lost: &[String]) -> Option<Option<String>> {
        let now = Instant::now();
        let Ok(registry) = self.follow.registry.lock() else {
            return None;
        };
        let last = registry
            .last_seen(&h.name)
            .map_or(h.acked, |at| at.max(h.acked));
        let silent = now.saturating_duration_since(last);
        if silent < h.period * super::MISSED_HEARTBEATS {
            return None;
        }
        let mut exclude = lost.to_vec();
        exclude.push(h.name.clone());
        let to = registry.pick(tool, name, &exclude, now);
        let failover = Failover {
            from: h.name.clone(),
            to: to.clone(),
            silent,
            period: h.period,
            heartbeats_of_the_next: to
                .as_deref()
                .map_or(0, |t| registry.heartbeats_since(t, last)),
        };
        drop(registry);
        if let Ok(mut f) = self.follow.failovers.lock() {
            f.push(failover);
        }
        Some(to)
    }

    pub(super) fn explain(
        &self,
        f: Failure,
        subject: &str,
        what: &str,
        limit: Duration,
    ) -> OpError {
        let ms = limit.as_millis();
        OpError::new(match f {
            Failure::NoResponders => format!(
                "no satellite hosts {what}: nothing answered on `{subject}` at {} within {ms} ms; start one with `cameleon satellite --nats {}` from a program that links it",
                self.url, self.url
            ),
            Failure::TimedOut => format!(
                "the satellite running {what} did not answer within {ms} ms (it may be overloaded or cut off from NATS); set the instance's `timeout_ms:` and `retry:` to retry on another"
            ),
            Failure::Unacknowledged => format!(
                "no satellite took {what} on `{subject}` within {ms} ms (none acknowledged the call: may this client publish there? docs/wire.md, \"Who may call\")"
            ),
            Failure::Busy(last) => format!(
                "every satellite hosting {what} was busy for {ms} ms (the last to answer: `{last}`); start more satellites, raise their `--concurrency`, or give the instance a longer `timeout_ms:`"
            ),
            Failure::Other(e) => format!("NATS request on `{subject}` failed: {e}"),
        })
    }
}
