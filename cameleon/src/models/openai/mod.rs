//! The `openai` kind: any OpenAI-compatible HTTP endpoint — OpenAI, Ollama, vLLM, llama.cpp's
//! server — for chat (`POST {base_url}/chat/completions`) and embeddings
//! (`POST {base_url}/embeddings`).

mod http;
mod live;
mod stream;
mod structured;
mod wire;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::operator::capability::{
    CapFuture, CapabilityError, ChatModel, ChatReply, ChatRequest, Embedded, Embedder, Usage,
};
use http::{ApiEndpoint, Failure};
use structured::Learned;
pub use structured::StructuredOutput;

/// The settings of an `openai` chat model or embedder, as a capabilities file writes them:
/// `{kind: openai, base_url: "http://127.0.0.1:11434/v1", model: "llama3.2", api_key_env: "OPENAI_API_KEY"}`.
///
/// The API key is never part of the settings: `api_key_env` names the environment variable it
/// is read from, at each call (so a rotated key is picked up, and the key appears in no file,
/// trace or message). Without `api_key_env` no `Authorization` header is sent (a local Ollama
/// wants none).
///
/// Each call gets `timeout_ms`; a 429, a 5xx, a timeout or a broken connection is tried again
/// up to `max_retries` times, waiting what the answer's `Retry-After` (or `retry-after-ms`)
/// says, else `backoff_ms`, doubling each time; never more than `max_backoff_ms` per wait. Any
/// other 4xx fails at once with the server's message. A 5xx whose body names `response_format`
/// is a refusal of the request's shape, not an outage: never retried (see
/// [`StructuredOutput`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including `/v1`. Default `https://api.openai.com/v1`.
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// The model the endpoint serves (`llama3.2`, `gpt-4o-mini`, `nomic-embed-text`).
    pub model: String,
    /// The environment variable holding the API key, if the endpoint wants one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Most time for one request, in milliseconds. Default 120 000.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Most time to connect, in milliseconds. Default 10 000.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Retries of a 429, a 5xx, a timeout or a broken connection. Default 3.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The first wait between tries, in milliseconds, doubled each time. Default 500.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// The longest wait between tries, `Retry-After` included, in milliseconds. Default 30 000.
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
    /// Embeddings: most texts per request (at least 1). Default 64.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Embeddings: the vectors' length, when known before the first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dim: Option<usize>,
    /// The largest answer read, in bytes (its body; an error's body is read up to 64 KiB and
    /// the rest dropped). Default 33 554 432 (32 MiB). A larger answer fails the call, naming
    /// this setting.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
    /// Chat: the one form a request for JSON takes (`json_schema`, `json_object`, `prompt`);
    /// unset, the model tries them in that order and keeps the first the server takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
}

fn default_base_url() -> String {
    "https://api.openai.com/v1".to_owned()
}
fn default_timeout_ms() -> u64 {
    120_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_max_retries() -> u32 {
    3
}
fn default_backoff_ms() -> u64 {
    500
}
fn default_max_backoff_ms() -> u64 {
    30_000
}
fn default_batch_size() -> usize {
    64
}
fn default_max_response_bytes() -> u64 {
    32 * 1024 * 1024
}

impl OpenAiConfig {
    /// The settings for `model` at `base_url`, every other one at its default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeout_ms: default_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            max_retries: default_max_retries(),
            backoff_ms: default_backoff_ms(),
            max_backoff_ms: default_max_backoff_ms(),
            batch_size: default_batch_size(),
            max_response_bytes: default_max_response_bytes(),
            dim: None,
            structured_output: None,
        }
    }

    /// The same, with the API key read from environment variable `var`.
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Whether the settings can work: `Err((setting, what is wrong, how to fix it))` for a
    /// `base_url` that is not an http(s) URL or an empty `model`. Checked when a capabilities
    /// file is read, so the problem is reported at its line before anything runs.
    pub fn check(&self) -> Result<(), (&'static str, String, String)> {
        let example =
            "write it like `http://127.0.0.1:11434/v1` (Ollama) or `https://api.openai.com/v1`";
        match reqwest::Url::parse(&self.base_url) {
            Err(e) => {
                return Err((
                    "base_url",
                    format!("base_url `{}` is not a URL ({e})", self.base_url),
                    example.to_owned(),
                ));
            }
            Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                return Err((
                    "base_url",
                    format!(
                        "base_url `{}` must start with http:// or https://",
                        self.base_url
                    ),
                    example.to_owned(),
                ));
            }
            Ok(_) => {}
        }
        if self.model.trim().is_empty() {
            return Err((
                "model",
                "`model` is empty".to_owned(),
                "name the endpoint's model, like `llama3.2` or `gpt-4o-mini`".to_owned(),
            ));
        }
        Ok(())
    }

    /// Whether the API key's variable is set now: what a loader checks before a run starts, so
    /// a missing key is reported up front rather than at the first call. The error names the
    /// variable (never a value).
    pub fn check_key(&self) -> Result<(), String> {
        match &self.api_key_env {
            Some(var) if std::env::var(var).map_or(true, |k| k.trim().is_empty()) => Err(format!(
                "the environment variable `{var}` (api_key_env) is not set; export it with the \
                 API key (`export {var}=…`), or remove api_key_env for an endpoint without a key"
            )),
            _ => Ok(()),
        }
    }
}

/// A chat model behind an OpenAI-compatible endpoint (`POST {base_url}/chat/completions`).
///
/// The request's messages, `temperature`, `max_tokens`, tools (OpenAI's `tools` of
/// `type: function`) and response schema are sent as the API defines them — the schema as
/// `response_format: {type: json_schema}`, or, when the server refuses that, in the next form
/// it takes ([`StructuredOutput`]: `json_object`, then the prompt alone; the first that works
/// is remembered for this model, and `structured_output` pins one); the `context` passages are numbered and put before the last user
/// message, after the line "Answer using the context below. If it does not contain the answer,
/// say so." The answer's first choice is the reply: its text, its `tool_calls` (arguments
/// parsed from their JSON text), its `usage`.
///
/// ```no_run
/// use cameleon::operator::capability::{ChatModel, ChatRequest};
/// use cameleon::models::{OpenAiChat, OpenAiConfig};
///
/// let model = OpenAiChat::new(
///     &OpenAiConfig::new("http://127.0.0.1:11434/v1", "llama3.2"),
///     "chat model `default`",
/// )?;
/// let reply = cameleon::runtime::block_on(model.chat(&ChatRequest::prompt("Say hello.")))?;
/// println!("{}", reply.text);
/// # Ok::<(), cameleon::operator::capability::CapabilityError>(())
/// ```
#[derive(Debug)]
pub struct OpenAiChat {
    endpoint: ApiEndpoint,
    /// The form of structured output that worked last.
    learned: Learned,
}

impl OpenAiChat {
    /// A chat model for `cfg`; `label` names it in messages (`chat model `default``). An
    /// error when `base_url` is not an http(s) URL or `model` is empty.
    pub fn new(cfg: &OpenAiConfig, label: &str) -> Result<Self, CapabilityError> {
        Ok(OpenAiChat {
            endpoint: ApiEndpoint::new(cfg, label)?,
            learned: Learned::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OpenAiConfig {
        self.endpoint.config()
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatReply, CapabilityError> {
        if request.response_schema.is_some() {
            return self.call_structured(request).await;
        }
        let bytes = self
            .send(request, StructuredOutput::JsonSchema)
            .await
            .map_err(|f| f.error)?;
        self.reply_of(&bytes)
    }

    /// Asks with `stream: true` (and `stream_options: {include_usage: true}`, so the last
    /// event carries the usage), handing `delta` each piece of text as it is read. A request
    /// for structured output is asked whole (its answer is JSON, not prose to watch), then
    /// shown as one piece.
    async fn call_streamed(
        &self,
        request: &ChatRequest,
        delta: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<ChatReply, CapabilityError> {
        if request.response_schema.is_some() {
            let reply = self.call_structured(request).await?;
            if !reply.text.is_empty() {
                delta(&reply.text);
            }
            return Ok(reply);
        }
        let mut body = wire::chat_body(&self.config().model, request, StructuredOutput::JsonSchema);
        body["stream"] = serde_json::json!(true);
        body["stream_options"] = serde_json::json!({ "include_usage": true });
        match self
            .endpoint
            .post_streamed("chat/completions", body, delta)
            .await?
        {
            live::Streamed::Reply(reply) => Ok(reply),
            live::Streamed::Whole(bytes) => {
                let reply = self.reply_of(&bytes)?;
                if !reply.text.is_empty() {
                    delta(&reply.text);
                }
                Ok(reply)
            }
        }
    }

    /// POSTs `request`, structured output (if it asks for any) in form `form`.
    async fn send(
        &self,
        request: &ChatRequest,
        form: StructuredOutput,
    ) -> Result<Vec<u8>, Failure> {
        let body = wire::chat_body(&self.config().model, request, form);
        self.endpoint.post_shaped("chat/completions", body).await
    }

    /// The reply in a chat completion's body.
    fn reply_of(&self, bytes: &[u8]) -> Result<ChatReply, CapabilityError> {
        let url = self.endpoint.url("chat/completions");
        let parsed: wire::ChatResponse = serde_json::from_slice(bytes).map_err(|e| {
            CapabilityError::new(format!(
                "{}: `{url}` answered with something that is not a chat completion ({e}); it \
                 began: {}",
                self.endpoint.label(),
                wire::excerpt(bytes)
            ))
        })?;
        parsed.into_reply().ok_or_else(|| {
            CapabilityError::new(format!(
                "{}: `{url}` answered with no choice",
                self.endpoint.label()
            ))
        })
    }
}

impl ChatModel for OpenAiChat {
    fn kind(&self) -> &str {
        "openai"
    }

    fn model_name(&self) -> Option<&str> {
        Some(&self.config().model)
    }

    fn identity(&self) -> serde_json::Value {
        let c = self.config();
        serde_json::json!({
            "kind": "openai",
            "model": c.model,
            "base_url": c.base_url,
            "structured_output": c.structured_output,
        })
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(self.call(request))
    }

    fn chat_streamed<'a>(
        &'a self,
        request: &'a ChatRequest,
        delta: &'a (dyn Fn(&str) + Send + Sync),
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(self.call_streamed(request, delta))
    }
}

/// An embedder behind an OpenAI-compatible endpoint (`POST {base_url}/embeddings`), sending at
/// most `batch_size` texts per request.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    endpoint: ApiEndpoint,
    /// The configured length, else the last one seen (0: not known yet).
    dim: AtomicUsize,
}

impl OpenAiEmbedder {
    /// An embedder for `cfg`; `label` names it in messages.
    pub fn new(cfg: &OpenAiConfig, label: &str) -> Result<Self, CapabilityError> {
        Ok(OpenAiEmbedder {
            endpoint: ApiEndpoint::new(cfg, label)?,
            dim: AtomicUsize::new(cfg.dim.unwrap_or(0)),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OpenAiConfig {
        self.endpoint.config()
    }

    /// The vectors of `texts`, in order, and the tokens the endpoint says it used.
    pub async fn embed_counted(&self, texts: &[String]) -> Result<Embedded, CapabilityError> {
        let url = self.endpoint.url("embeddings");
        let mut out = Vec::with_capacity(texts.len());
        let mut tokens: Option<u64> = None;
        for batch in texts.chunks(self.config().batch_size.max(1)) {
            let body = wire::embeddings_body(&self.config().model, batch);
            let bytes = self.endpoint.post("embeddings", body).await?;
            let bad = |why: String| {
                CapabilityError::new(format!(
                    "{}: `{url}` answered with something that is not a list of embeddings ({why}); \
                     it began: {}",
                    self.endpoint.label(),
                    wire::excerpt(&bytes)
                ))
            };
            let parsed: wire::EmbeddingsResponse =
                serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
            if let Some(u) = parsed.usage {
                *tokens.get_or_insert(0) += u.prompt_tokens;
            }
            out.extend(parsed.into_vectors(batch.len()).map_err(bad)?);
        }
        let expected = self.dim.load(Ordering::Relaxed);
        if let Some(v) = out.iter().find(|v| expected != 0 && v.len() != expected) {
            return Err(CapabilityError::new(format!(
                "{}: `{url}` returned vectors of {} dimensions, {expected} expected (dim)",
                self.endpoint.label(),
                v.len()
            )));
        }
        if let Some(v) = out.first() {
            self.dim.store(v.len(), Ordering::Relaxed);
        }
        Ok((
            out,
            tokens.map(|t| Usage {
                prompt_tokens: t,
                completion_tokens: 0,
            }),
        ))
    }
}

impl Embedder for OpenAiEmbedder {
    fn kind(&self) -> &str {
        "openai"
    }

    fn identity(&self) -> serde_json::Value {
        let c = self.config();
        serde_json::json!({
            "kind": "openai",
            "model": c.model,
            "base_url": c.base_url,
            "dim": c.dim,
        })
    }

    fn dim(&self) -> usize {
        self.dim.load(Ordering::Relaxed)
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Vec<Vec<f32>>, CapabilityError>> {
        Box::pin(async move { self.embed_counted(texts).await.map(|(v, _)| v) })
    }

    fn embed_with_usage<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Embedded, CapabilityError>> {
        Box::pin(self.embed_counted(texts))
    }
}
