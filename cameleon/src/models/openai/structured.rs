//! Structured output on every OpenAI-compatible server: the forms a request for JSON can take,
//! and the fallback from one to the next when a server refuses one (docs/capabilities.md,
//! "Structured output").
//!
//! Servers differ: OpenAI and vLLM take `response_format: {type: json_schema, …}`;
//! llama-cpp-python refuses it (a 500 whose body names `response_format`) but takes
//! `{type: json_object, schema: …}`; others take no `response_format` at all. A chat model asks
//! for `json_schema` first; when the server refuses the request's shape it tries `json_object`,
//! then the schema in the prompt alone, and remembers, for that provider instance, the first
//! form that worked — so later requests go straight to it. The `structured_output` setting pins
//! one form. Whatever the form, the answer is validated against the schema by the caller
//! (`llm_json`): a server's structured mode is never trusted.

use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

use super::OpenAiChat;
use super::http::Failure;
use crate::operator::capability::{CapabilityError, ChatReply, ChatRequest};

/// How a request with a response schema asks for JSON (the `structured_output` setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// `response_format: {type: json_schema, json_schema: {name, schema}}` (OpenAI, vLLM,
    /// Ollama).
    JsonSchema,
    /// `response_format: {type: json_object, schema}` (llama-cpp-python; OpenAI's JSON mode).
    JsonObject,
    /// No `response_format`: the schema is in the prompt only.
    Prompt,
}

impl StructuredOutput {
    /// Every form, in the order they are tried.
    pub const ALL: [StructuredOutput; 3] = [
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObject,
        StructuredOutput::Prompt,
    ];

    /// The setting's value (`json_schema`, `json_object`, `prompt`).
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::Prompt => "prompt",
        }
    }

    /// The form a setting's value names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    fn index(self) -> u8 {
        self as u8
    }
}

impl std::fmt::Display for StructuredOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first form to try for this provider: what worked last, starting with `json_schema`.
/// Shared by every request of the instance; it only moves down the list.
#[derive(Debug, Default)]
pub(crate) struct Learned(AtomicU8);

impl Learned {
    fn get(&self) -> StructuredOutput {
        let i = self.0.load(Ordering::Relaxed) as usize;
        StructuredOutput::ALL[i.min(StructuredOutput::ALL.len() - 1)]
    }

    fn set(&self, f: StructuredOutput) {
        self.0.fetch_max(f.index(), Ordering::Relaxed);
    }
}

impl OpenAiChat {
    /// The form requests for JSON take now: the pinned one, else the one learned.
    pub fn structured_output(&self) -> StructuredOutput {
        self.config()
            .structured_output
            .unwrap_or_else(|| self.learned.get())
    }

    /// Answers a request that carries a response schema, falling back form by form while the
    /// server refuses the request's shape (see the module docs).
    pub(super) async fn call_structured(
        &self,
        request: &ChatRequest,
    ) -> Result<ChatReply, CapabilityError> {
        let pinned = self.config().structured_output;
        let first = self.structured_output();
        let forms: Vec<StructuredOutput> = match pinned {
            Some(f) => vec![f],
            None => StructuredOutput::ALL
                .into_iter()
                .filter(|f| *f >= first)
                .collect(),
        };
        let mut refusals: Vec<String> = Vec::new();
        for form in forms {
            match self.send(request, form).await {
                Ok(bytes) => {
                    if pinned.is_none() {
                        if form != first {
                            tracing::info!(
                                target: "cameleon::models",
                                model = %self.endpoint.label(),
                                form = form.as_str(),
                                "structured output: the server refused the forms before this one; using it from now on"
                            );
                        }
                        self.learned.set(form);
                    }
                    return self.reply_of(&bytes);
                }
                Err(Failure {
                    error,
                    refused: true,
                }) if pinned.is_none() && form != StructuredOutput::Prompt => {
                    refusals.push(format!("{form}: {}", error.message));
                }
                Err(Failure { error, refused }) => {
                    return Err(self.explain(error, refused, pinned, &refusals));
                }
            }
        }
        // Unreachable: the last form tried is `prompt` or the pinned one, and both return.
        Err(CapabilityError::new(format!(
            "{}: the server refused every form of structured output ({})",
            self.endpoint.label(),
            refusals.join("; ")
        )))
    }

    /// The final error: what the server said, what was refused before, and what to do.
    fn explain(
        &self,
        error: CapabilityError,
        refused: bool,
        pinned: Option<StructuredOutput>,
        refusals: &[String],
    ) -> CapabilityError {
        let mut message = error.message;
        if !refusals.is_empty() {
            message.push_str(&format!(
                " (after the server refused structured output as {})",
                refusals.join("; ")
            ));
        }
        if let (Some(f), true) = (pinned, refused) {
            message.push_str(&format!(
                "; the capabilities file pins `structured_output: {f}`, which this server \
                 refuses: remove the setting to let the request fall back, or pin another form \
                 (json_schema, json_object, prompt)"
            ));
        }
        CapabilityError {
            message,
            retryable: error.retryable,
        }
    }
}
