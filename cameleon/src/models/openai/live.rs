//! A chat completion asked with `stream: true`: the request runs as a task on Caméléon's
//! runtime, which hands each piece of text to the caller as it is read; dropping the caller's
//! future aborts the task and closes the connection (a cancelled firing ends its request at
//! once). Retries, as for a whole answer, only until the first piece is shown: after that a
//! broken stream fails the call (showing the answer again would repeat it).

use std::time::Duration;

use serde_json::Value as Json;

use super::http::{AbortOnDrop, ApiEndpoint, Sent, redact};
use super::stream::{Assembled, SseReader};
use crate::operator::capability::{CapabilityError, ChatReply};

/// How a streamed request ended.
pub(crate) enum Streamed {
    /// The events added up to this reply.
    Reply(ChatReply),
    /// The server answered a whole completion instead of events (it ignores `stream`): its
    /// body.
    Whole(Vec<u8>),
}

/// How one attempt ended.
enum Attempt {
    Done(Streamed),
    Fatal(String),
    /// Trying again may work (nothing was shown yet); the server's wait, if it said.
    Retry(String, Option<u64>),
}

impl ApiEndpoint {
    /// POSTs `body` (which asks for `stream: true`) to `path`, calling `delta` with each piece
    /// of text as it arrives.
    pub(crate) async fn post_streamed(
        &self,
        path: &str,
        body: Json,
        delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Streamed, CapabilityError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let this = self.clone();
        let path = path.to_owned();
        let mut task = AbortOnDrop(crate::runtime::spawn(async move {
            this.stream_here(&path, &body, tx).await
        }));
        // The channel closes when the task ends, whatever its outcome.
        while let Some(piece) = rx.recv().await {
            delta(&piece);
        }
        (&mut task).await.map_err(|e| {
            CapabilityError::new(format!("{}: the request task failed: {e}", self.label()))
        })?
    }

    async fn stream_here(
        &self,
        path: &str,
        body: &Json,
        tx: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<Streamed, CapabilityError> {
        let url = self.url(path);
        let cfg = self.config();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let key = self.api_key()?;
            let (message, wait) = match self.stream_once(&url, body, key.as_deref(), &tx).await {
                Attempt::Done(s) => return Ok(s),
                Attempt::Fatal(m) => return Err(CapabilityError::new(redact(m, key.as_deref()))),
                Attempt::Retry(m, wait) => (redact(m, key.as_deref()), wait),
            };
            if attempt > cfg.max_retries {
                return Err(CapabilityError::retryable(format!(
                    "{message} (gave up after {attempt} attempt{}; max_retries is {})",
                    if attempt == 1 { "" } else { "s" },
                    cfg.max_retries
                )));
            }
            let backoff = cfg.backoff_ms.saturating_mul(1u64 << (attempt - 1).min(20));
            let delay = wait.unwrap_or(backoff).min(cfg.max_backoff_ms);
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }

    async fn stream_once(
        &self,
        url: &str,
        body: &Json,
        key: Option<&str>,
        tx: &tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Attempt {
        let resp = match self.open(url, body, key).await {
            Ok(r) => r,
            Err(sent) => return attempt_of(sent),
        };
        let events = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !resp.status().is_success() || !events {
            // An error, or a whole answer from a server that does not stream.
            return match self.read(url, resp).await {
                Sent::Ok(bytes) => Attempt::Done(Streamed::Whole(bytes)),
                other => attempt_of(other),
            };
        }
        self.read_events(url, resp, tx).await
    }

    /// Reads the events of a streamed answer, sending each piece of text on `tx`.
    async fn read_events(
        &self,
        url: &str,
        mut resp: reqwest::Response,
        tx: &tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Attempt {
        let max = self.config().max_response_bytes;
        let mut read: u64 = 0;
        let mut sse = SseReader::default();
        let mut answer = Assembled::default();
        let mut shown = false;
        let broken = |why: String, shown: bool| {
            let m = format!(
                "{}: the answer streamed from `{url}` broke off: {why}",
                self.label()
            );
            if shown {
                Attempt::Fatal(m)
            } else {
                Attempt::Retry(m, None)
            }
        };
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return broken(self.transport_error(url, &e), shown),
            };
            read += chunk.len() as u64;
            if read > max {
                return Attempt::Fatal(format!(
                    "{}: the answer streamed from `{url}` is larger than {max} bytes \
                     (max_response_bytes); raise max_response_bytes if the answer is expected \
                     to be that large",
                    self.label()
                ));
            }
            let fed = sse.feed(&chunk, |data| {
                let piece = answer.take(data)?;
                if !piece.is_empty() {
                    shown = true;
                    // The caller went away (its firing was cancelled): the task is aborted.
                    let _ = tx.send(piece);
                }
                Ok(())
            });
            if let Err(why) = fed {
                return Attempt::Fatal(format!("{}: `{url}` streamed {why}", self.label()));
            }
            if answer.done {
                break;
            }
        }
        let finished = sse.finish(|data| {
            answer.take(data).map(|piece| {
                if !piece.is_empty() {
                    let _ = tx.send(piece);
                }
            })
        });
        if let Err(why) = finished {
            return Attempt::Fatal(format!("{}: `{url}` streamed {why}", self.label()));
        }
        if answer.chunks == 0 {
            return broken("the stream ended before any answer".to_owned(), shown);
        }
        Attempt::Done(Streamed::Reply(answer.into_reply()))
    }
}

fn attempt_of(sent: Sent) -> Attempt {
    match sent {
        Sent::Ok(bytes) => Attempt::Done(Streamed::Whole(bytes)),
        Sent::Fatal(m, _) => Attempt::Fatal(m),
        Sent::Retry(m, wait) => Attempt::Retry(m, wait),
    }
}
