//! One HTTP endpoint: POST a JSON body, with the API key read at call time, timeouts, and
//! retries with exponential backoff on 429 and 5xx honouring `Retry-After`. Answers are read
//! up to `max_response_bytes` (error bodies up to [`MAX_ERROR_BYTES`]), and a request is never
//! redirected to another origin (docs/security.md).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;

use super::OpenAiConfig;
use super::wire::error_message;
use crate::operator::capability::CapabilityError;

/// What replaces a secret wherever it would appear in a message.
const REDACTED: &str = "[redacted]";

/// Most of an error answer's body read (for its message); the rest is dropped.
pub(crate) const MAX_ERROR_BYTES: u64 = 64 * 1024;

/// Most redirects followed (within the endpoint's own origin).
const MAX_REDIRECTS: usize = 10;

/// Redirects are followed within the origin the request went to only: a POST carrying the
/// request (and its key) is never sent to another scheme, host or port. A redirect elsewhere
/// is not followed: its answer is the 3xx, reported with its `Location`.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// A configured endpoint: the HTTP client and the settings. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ApiEndpoint {
    http: reqwest::Client,
    cfg: Arc<OpenAiConfig>,
    /// `chat model `default``, for messages.
    label: Arc<str>,
}

impl fmt::Debug for ApiEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is never held, only the name of its variable.
        f.debug_struct("ApiEndpoint")
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .field("api_key_env", &self.cfg.api_key_env)
            .finish_non_exhaustive()
    }
}

/// Installs rustls' `ring` provider as the process default unless one is installed already
/// (reqwest needs one to build a client).
fn ensure_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread that installed one is fine: there is one now.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl ApiEndpoint {
    /// A client for `cfg`; an error when the base URL is not an http(s) URL or the TLS setup
    /// fails.
    pub(crate) fn new(cfg: &OpenAiConfig, label: &str) -> Result<Self, CapabilityError> {
        cfg.check()
            .map_err(|(_, what, hint)| CapabilityError::new(format!("{label}: {what}; {hint}")))?;
        ensure_tls_provider();
        let http = reqwest::Client::builder()
            .user_agent(concat!("cameleon/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_millis(cfg.timeout_ms.max(1)))
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms.max(1)))
            .redirect(redirect_policy())
            .build()
            .map_err(|e| {
                CapabilityError::new(format!("{label}: cannot set up the HTTP client: {e}"))
            })?;
        Ok(ApiEndpoint {
            http,
            cfg: Arc::new(cfg.clone()),
            label: label.into(),
        })
    }

    /// The settings.
    pub(crate) fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    /// `label`, for messages.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The URL of `path` under the base URL.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{}", self.cfg.base_url.trim_end_matches('/'), path)
    }

    /// The API key, read from its environment variable now (`None` without `api_key_env`).
    pub(super) fn api_key(&self) -> Result<Option<String>, CapabilityError> {
        let Some(var) = &self.cfg.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_owned())),
            Ok(_) => Err(CapabilityError::new(format!(
                "{}: the environment variable `{var}` (its api_key_env) is empty; set it to the \
                 API key",
                self.label
            ))),
            Err(_) => Err(CapabilityError::new(format!(
                "{}: the environment variable `{var}` (its api_key_env) is not set; export it \
                 with the API key (`export {var}=…`), or remove api_key_env for an endpoint \
                 without a key",
                self.label
            ))),
        }
    }

    /// POSTs `body` to `path` and returns the body of the first successful answer. Runs on
    /// Caméléon's runtime (see [`crate::runtime::spawn`]), so the client's connections belong
    /// to one runtime whatever the caller's.
    pub(crate) async fn post(&self, path: &str, body: Json) -> Result<Vec<u8>, CapabilityError> {
        self.post_shaped(path, body).await.map_err(|f| f.error)
    }

    /// [`post`](Self::post), telling a refusal of the request's shape apart: a 4xx other than
    /// 401, 403, 404 and 429, or a 5xx whose body names `response_format` (llama-cpp-python
    /// answers a `json_schema` it does not take with a 500). Such a refusal is never retried:
    /// sending the same body again cannot succeed.
    pub(crate) async fn post_shaped(&self, path: &str, body: Json) -> Result<Vec<u8>, Failure> {
        let this = self.clone();
        let path = path.to_owned();
        AbortOnDrop(crate::runtime::spawn(async move {
            this.post_here(&path, &body).await
        }))
        .await
        .map_err(|e| Failure {
            error: CapabilityError::new(format!("{}: the request task failed: {e}", self.label)),
            refused: false,
        })?
    }

    async fn post_here(&self, path: &str, body: &Json) -> Result<Vec<u8>, Failure> {
        let url = self.url(path);
        let max = self.cfg.max_retries;
        let mut attempt: u32 = 0;
        let failed = |error| Failure {
            error,
            refused: false,
        };
        loop {
            attempt += 1;
            let key = self.api_key().map_err(failed)?;
            let (message, wait) = match self.send(&url, body, key.as_deref()).await {
                Sent::Ok(bytes) => return Ok(bytes),
                Sent::Fatal(m, refused) => {
                    return Err(Failure {
                        error: CapabilityError::new(redact(m, key.as_deref())),
                        refused,
                    });
                }
                Sent::Retry(m, wait) => (redact(m, key.as_deref()), wait),
            };
            if attempt > max {
                return Err(failed(CapabilityError::retryable(format!(
                    "{message} (gave up after {attempt} attempt{}; max_retries is {max})",
                    if attempt == 1 { "" } else { "s" }
                ))));
            }
            let backoff = self
                .cfg
                .backoff_ms
                .saturating_mul(1u64 << (attempt - 1).min(20));
            // The server's own wait when it gives one, else the backoff; at most max_backoff_ms.
            let delay = wait.unwrap_or(backoff).min(self.cfg.max_backoff_ms);
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }

    /// One attempt.
    async fn send(&self, url: &str, body: &Json, key: Option<&str>) -> Sent {
        match self.open(url, body, key).await {
            Ok(resp) => self.read(url, resp).await,
            Err(sent) => sent,
        }
    }

    /// Sends the request: the response, or the attempt's outcome when there is no response to
    /// read.
    pub(super) async fn open(
        &self,
        url: &str,
        body: &Json,
        key: Option<&str>,
    ) -> Result<reqwest::Response, Sent> {
        let mut req = self.http.post(url).json(body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send()
            .await
            .map_err(|e| Sent::Retry(self.transport_error(url, &e), None))
    }

    /// Reads a response whole (up to its limit): its body, or what it means.
    pub(super) async fn read(&self, url: &str, resp: reqwest::Response) -> Sent {
        let status = resp.status();
        let wait = retry_after(resp.headers());
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        let max = if status.is_success() {
            self.cfg.max_response_bytes
        } else {
            MAX_ERROR_BYTES
        };
        let bytes = match read_capped(resp, max, status.is_success()).await {
            Ok(Capped::Whole(b)) => b,
            Ok(Capped::Cut(b)) if !status.is_success() => b,
            Ok(Capped::Cut(_)) => {
                return Sent::Fatal(
                    format!(
                        "{}: the answer from `{url}` is larger than {max} bytes (max_response_bytes); nothing of it was used — raise max_response_bytes if the answer is expected to be that large",
                        self.label
                    ),
                    false,
                );
            }
            Err(e) => return Sent::Retry(self.transport_error(url, &e), None),
        };
        if status.is_success() {
            return Sent::Ok(bytes);
        }
        if status.is_redirection() {
            let to = location.as_deref().unwrap_or("nowhere it says");
            return Sent::Fatal(
                format!(
                    "{}: `{url}` answered {status}, redirecting to `{to}`: a request is never sent to another origin than base_url's (set base_url to the new address if you trust it)",
                    self.label
                ),
                false,
            );
        }
        let what = format!(
            "{}: `{url}` answered {status}: {}",
            self.label,
            error_message(&bytes)
        );
        let code = status.as_u16();
        if status.is_server_error() && names_response_format(&bytes) {
            // A server that cannot handle the request's shape, not an outage.
            Sent::Fatal(what, true)
        } else if code == 429 || status.is_server_error() {
            Sent::Retry(what, wait)
        } else {
            let refused = !matches!(code, 401 | 403 | 404);
            Sent::Fatal(format!("{what}{}", self.hint(code)), refused)
        }
    }

    pub(super) fn transport_error(&self, url: &str, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            return format!(
                "{}: no answer from `{url}` within {} ms (timeout_ms)",
                self.label, self.cfg.timeout_ms
            );
        }
        // The innermost cause says what happened ("Connection refused").
        let mut cause: &dyn std::error::Error = e;
        while let Some(inner) = cause.source() {
            cause = inner;
        }
        if e.is_connect() {
            format!(
                "{}: cannot connect to `{url}`: {cause}; is the server running, and is base_url right?",
                self.label
            )
        } else {
            format!("{}: the request to `{url}` failed: {cause}", self.label)
        }
    }

    /// How to fix a 4xx.
    fn hint(&self, status: u16) -> String {
        match status {
            401 | 403 => match &self.cfg.api_key_env {
                Some(var) => format!(" (check the API key in the environment variable `{var}`)"),
                None => " (the endpoint wants an API key: name its environment variable with \
                          api_key_env)"
                    .to_owned(),
            },
            404 => format!(
                " (check base_url `{}` — it usually ends in `/v1` — and model `{}`)",
                self.cfg.base_url, self.cfg.model
            ),
            _ => String::new(),
        }
    }
}

/// A body read up to a limit: whole, or cut at the limit (the rest not read).
enum Capped {
    Whole(Vec<u8>),
    Cut(Vec<u8>),
}

/// Reads `resp`'s body chunk by chunk, stopping at `max` bytes: one sending more is cut there
/// (and the connection dropped); with `whole_or_nothing`, one announcing more
/// (`Content-Length`) is not read at all.
async fn read_capped(
    mut resp: reqwest::Response,
    max: u64,
    whole_or_nothing: bool,
) -> Result<Capped, reqwest::Error> {
    if whole_or_nothing && resp.content_length().is_some_and(|n| n > max) {
        return Ok(Capped::Cut(Vec::new()));
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = max.saturating_sub(out.len() as u64) as usize;
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            return Ok(Capped::Cut(out));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Capped::Whole(out))
}

/// Why a POST failed, and whether the server refused the request's shape (see
/// [`ApiEndpoint::post_shaped`]).
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: CapabilityError,
    pub(crate) refused: bool,
}

/// Whether an error body names the request's `response_format`.
fn names_response_format(body: &[u8]) -> bool {
    body.windows(b"response_format".len())
        .any(|w| w == b"response_format")
}

/// The outcome of one attempt.
pub(super) enum Sent {
    Ok(Vec<u8>),
    /// A 4xx, or anything trying again will not fix; whether it refuses the request's shape.
    Fatal(String, bool),
    /// A 429, a 5xx, a timeout or a broken connection; the server's wait in ms, if it said.
    Retry(String, Option<u64>),
}

/// A task on Caméléon's runtime that is aborted when its handle is dropped: a firing that is
/// cancelled (its future dropped) ends its HTTP request at once, not when the request would
/// have finished.
pub(super) struct AbortOnDrop<T>(pub(super) tokio::task::JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The wait a 429 or 503 asks for: `retry-after-ms` (milliseconds, as OpenAI sends), else
/// `Retry-After` in seconds (integer or decimal). An HTTP date is not read (the backoff applies).
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<u64> {
    let read = |name: &str| h.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    if let Some(ms) = read("retry-after-ms").filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(ms.ceil() as u64);
    }
    read("retry-after")
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|s| (s * 1000.0).ceil() as u64)
}

/// `message` with every occurrence of `secret` replaced.
pub(crate) fn redact(message: String, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() && message.contains(s) => message.replace(s, REDACTED),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_prefers_milliseconds_and_reads_seconds() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(2000));
        h.insert("retry-after", "0.5".parse().unwrap());
        assert_eq!(retry_after(&h), Some(500));
        h.insert("retry-after-ms", "120".parse().unwrap());
        assert_eq!(retry_after(&h), Some(120));
        let mut d = reqwest::header::HeaderMap::new();
        d.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&d), None);
    }

    #[test]
    fn a_secret_is_redacted_wherever_it_appears() {
        assert_eq!(
            redact("bad key sk-123 (sk-123)".into(), Some("sk-123")),
            "bad key [redacted] ([redacted])"
        );
        assert_eq!(redact("fine".into(), None), "fine");
    }
}
