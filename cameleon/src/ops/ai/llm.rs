//! `llm` and `llm_json`: ask a chat model.

use serde_json::Value as Json;

use super::{FiringLog, ModelCall, ModelLog, ask, call_error, require_generative};
use crate::operator;
use crate::operator::capability::{ChatMessage, ChatRequest, Role};
use crate::operator::{Firing, In, OpError, Out, ParamError, Partials, RunAsync};
use crate::tools::{SCHEMAS, Schema};
use crate::types::{DataChunk, DataJSON, DataString};

/// Asks a chat model: the prompt on `in_prompt` (with the passages on `in_context`, if
/// connected, to answer from), the answer on `out_text`. With the offline default model
/// (`extractive`, not generative) the answer quotes the context sentences that best match the
/// prompt, and `cameleon run` says it is a quotation.
///
/// `model` names the chat model (`default`: the configured one, else the offline `extractive`
/// model, which quotes the context and is not generative). The request and the reply are
/// recorded with the firing, so a replay or a backward step never calls the model again; the
/// token usage is recorded with them.
#[operator(id = "llm", label = "LLM", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct Llm {
    /// the chat model's name
    #[param(default = "default")]
    pub model: String,
    /// the system message (instructions), if any
    #[param]
    pub system: Option<String>,
    /// sampling temperature (the model's default if unset)
    #[param]
    pub temperature: Option<f64>,
    /// most tokens in the answer (the model's default if unset)
    #[param]
    pub max_tokens: Option<u32>,
    /// the question or instruction sent to the model
    #[input]
    in_prompt: In<DataString>,
    /// optional: passages (e.g. from `retrieve`) the model answers from; the offline `extractive` model quotes them
    #[input(optional)]
    in_context: In<DataChunk>,
    /// the model's answer (with the offline `extractive` model, a quotation of the context)
    #[output]
    out_text: Out<DataString>,
    log: ModelLog,
}

impl Default for Llm {
    fn default() -> Self {
        Llm::new()
    }
}

impl Llm {
    /// Asks the `default` chat model, with no system message.
    pub fn new() -> Self {
        Llm {
            model: "default".to_owned(),
            system: None,
            temperature: None,
            max_tokens: None,
            log: ModelLog::default(),
        }
    }

    /// The same, asking chat model `name`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = name.into();
        self
    }

    /// The same, with a system message.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// What the last firing asked and was answered.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }
}

/// The request of a firing of `llm` or `llm_json`.
fn request(
    system: Option<&str>,
    prompt: &str,
    context: Option<&DataChunk>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
) -> ChatRequest {
    let mut messages = Vec::new();
    if let Some(s) = system {
        messages.push(ChatMessage::new(Role::System, s));
    }
    messages.push(ChatMessage::new(Role::User, prompt));
    ChatRequest {
        messages,
        context: context.map(|c| c.0.clone()).unwrap_or_default(),
        temperature: temperature.map(|t| t as f32),
        max_tokens,
        ..ChatRequest::default()
    }
}

fn check_temperature(t: Option<f64>) -> Result<(), ParamError> {
    match t {
        Some(t) if !(0.0..=2.0).contains(&t) => Err(ParamError::new(
            "temperature".to_owned(),
            format!("temperature {t} is outside 0 to 2"),
        )),
        _ => Ok(()),
    }
}

impl RunAsync for Llm {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let prompt = cx.get(Self::in_prompt)?.0.clone();
        let context = cx.try_get(Self::in_context).cloned();
        let model = cx.capabilities().chat(&self.model)?;
        let req = request(
            self.system.as_deref(),
            &prompt,
            context.as_ref(),
            self.temperature,
            self.max_tokens,
        );
        let reply = ask(&*model, &self.model, &req, &cx.partials())
            .await
            .map_err(|e| call_error("chat model", &self.model, model.kind(), e))?;
        let text = reply.text.clone();
        let mut log = FiringLog::default();
        log.push(ModelCall::Chat {
            model: self.model.clone(),
            kind: model.kind().to_owned(),
            request: req,
            reply,
            quoted: !model.generative(),
        });
        self.log.set(log);
        cx.emit(Self::out_text, DataString(text));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        check_temperature(self.temperature)
    }
}

/// Asks a chat model for JSON that satisfies the JSON Schema `schema`: the prompt on
/// `in_prompt` (with the passages on `in_context`, if connected), the validated value on
/// `out_data`. Needs a generative chat model: with the offline default (`extractive`, which
/// only quotes) the firing fails, saying how to configure one.
///
/// The schema goes to the model twice: in the system message, and as the request's response
/// schema (an OpenAI-compatible endpoint gets `response_format: {type: json_schema}`, or what
/// the server accepts, docs/capabilities.md). The
/// answer is read as JSON (a ```` ```json ```` fence around it is allowed) and validated. An
/// answer that is not JSON or breaks the schema is sent back to the model with the problems,
/// up to `retries` times; then the firing fails, naming them. Every request and reply is
/// recorded with the firing.
#[operator(id = "llm_json", label = "LLM (JSON)", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct LlmJson {
    /// the JSON Schema the answer must satisfy
    #[param]
    pub schema: Json,
    /// the chat model's name
    #[param(default = "default")]
    pub model: String,
    /// the system message (instructions), if any; the schema is appended to it
    #[param]
    pub system: Option<String>,
    /// sampling temperature (the model's default if unset)
    #[param]
    pub temperature: Option<f64>,
    /// most tokens in the answer (the model's default if unset)
    #[param]
    pub max_tokens: Option<u32>,
    /// how many times an invalid answer is sent back before the firing fails
    #[param(default = 2)]
    pub retries: u32,
    /// the instruction sent to the model, e.g. the text to extract fields from
    #[input]
    in_prompt: In<DataString>,
    /// optional: passages (e.g. from `retrieve`) the model answers from
    #[input(optional)]
    in_context: In<DataChunk>,
    /// the model's answer as JSON, validated against `schema`
    #[output]
    out_data: Out<DataJSON>,
    log: ModelLog,
}

impl Default for LlmJson {
    fn default() -> Self {
        LlmJson::new(Json::Bool(true))
    }
}

impl LlmJson {
    /// Asks the `default` chat model for a value satisfying `schema`.
    pub fn new(schema: Json) -> Self {
        LlmJson {
            schema,
            model: "default".to_owned(),
            system: None,
            temperature: None,
            max_tokens: None,
            retries: 2,
            log: ModelLog::default(),
        }
    }

    /// The same, asking chat model `name`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = name.into();
        self
    }

    /// What the last firing asked and was answered.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }

    fn validator(&self) -> Result<Schema, String> {
        Schema::compile(&self.schema)
    }
}

/// The JSON in a model's answer: the whole text, or the inside of a ```` ``` ```` fence.
fn json_in(text: &str) -> Result<Json, String> {
    let t = text.trim();
    let inner = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .unwrap_or(t);
    serde_json::from_str(inner.trim()).map_err(|e| format!("the answer is not JSON ({e})"))
}

/// At most 300 characters of `text`, for a message.
fn excerpt(text: &str) -> String {
    crate::ops::Truncate::new(300).ellipsis("…").apply(text)
}

impl RunAsync for LlmJson {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let validator = self.validator().map_err(OpError::new)?;
        let prompt = cx.get(Self::in_prompt)?.0.clone();
        let context = cx.try_get(Self::in_context).cloned();
        let model = cx.capabilities().chat(&self.model)?;
        require_generative(&*model, &self.model, "fill a JSON Schema")?;
        let instruction = format!(
            "Answer with only a JSON value (no other text) that satisfies this JSON Schema:\n{}",
            self.schema
        );
        let system = match &self.system {
            Some(s) => format!("{s}\n\n{instruction}"),
            None => instruction,
        };
        let mut req = request(
            Some(&system),
            &prompt,
            context.as_ref(),
            self.temperature,
            self.max_tokens,
        );
        req.response_schema = Some(self.schema.clone());
        let mut log = FiringLog::default();
        let attempts = self.retries + 1;
        for attempt in 1..=attempts {
            // JSON is not prose to watch: never streamed.
            let reply = ask(&*model, &self.model, &req, &Partials::none())
                .await
                .map_err(|e| call_error("chat model", &self.model, model.kind(), e))?;
            let text = reply.text.clone();
            log.push(ModelCall::Chat {
                model: self.model.clone(),
                kind: model.kind().to_owned(),
                request: req.clone(),
                reply,
                quoted: false,
            });
            let wrong = match json_in(&text) {
                Ok(v) => {
                    let p = validator.problems(&v, 5);
                    if p.is_empty() {
                        self.log.set(log);
                        cx.emit(Self::out_data, DataJSON(v));
                        return Ok(());
                    }
                    p.join("; ")
                }
                Err(e) => e,
            };
            if attempt == attempts {
                return Err(OpError::new(format!(
                    "chat model `{}` ({}) gave no valid answer in {attempts} attempt{}: the last \
                     one, {:?}, is invalid: {wrong}. Raise `retries`, simplify the schema, or \
                     use a stronger model",
                    self.model,
                    model.kind(),
                    if attempts == 1 { "" } else { "s" },
                    excerpt(&text),
                )));
            }
            req.messages.push(ChatMessage::new(Role::Assistant, text));
            req.messages.push(ChatMessage::new(
                Role::User,
                format!(
                    "That answer is invalid: {wrong}. Answer again with only a JSON value that \
                     satisfies the schema."
                ),
            ));
        }
        // `attempts ≥ 1`, and the last attempt returns.
        Err(OpError::new("no attempt was made"))
    }

    fn validate(&self) -> Result<(), ParamError> {
        check_temperature(self.temperature)?;
        // Without the `json-schema` feature the net still loads, verifies and draws; its
        // firings fail, naming the feature.
        if !SCHEMAS {
            return Ok(());
        }
        self.validator().map(drop).map_err(|e| {
            ParamError::new("schema".to_owned(), format!("not a valid JSON Schema: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_is_read_plain_or_fenced() {
        assert_eq!(json_in(" {\"a\": 1} ").unwrap(), json!({"a": 1}));
        assert_eq!(json_in("```json\n[1, 2]\n```").unwrap(), json!([1, 2]));
        assert_eq!(json_in("```\n\"x\"\n```\n").unwrap(), json!("x"));
        assert!(
            json_in("Sure! {\"a\": 1}")
                .unwrap_err()
                .contains("not JSON")
        );
    }

    #[test]
    #[cfg(not(feature = "json-schema"))]
    fn without_json_schema_the_net_loads_and_its_firing_names_the_feature() {
        use crate::engine::{Cvm, EndState};
        let net = crate::net::Net::from_cm(
            "operators:\n  - {id: q, type: source, params: {value: hi}}\n  - {id: f, type: llm_json, params: {schema: {type: object}}}\n  - {id: out, type: sink}\nconnections:\n  - {from: q.out_data, to: f.in_prompt}\n  - {from: f.out_data, to: out.in_data}\n",
        )
        .expect("a net with llm_json loads without the feature");
        match Cvm::new(net).run().unwrap() {
            EndState::Error { op, error } => {
                assert_eq!(op, "f");
                assert!(error.contains("`json-schema` feature"), "{error}");
            }
            other => panic!("expected the firing to fail: {other:?}"),
        }
    }
}
