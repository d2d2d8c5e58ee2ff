//! The JSON of the OpenAI-compatible API: `POST /chat/completions` and `POST /embeddings`,
//! as OpenAI, Ollama, vLLM and llama.cpp's server speak it.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::StructuredOutput;
use crate::operator::capability::{
    ChatMessage, ChatReply, ChatRequest, Role, ToolManifest, ToolRequest, Usage,
};

/// How the request's `context` passages are put before the last user message.
pub(crate) const CONTEXT_INTRO: &str =
    "Answer using the context below. If it does not contain the answer, say so.\n\nContext:";

/// How the prompt asks for JSON when the schema goes in the prompt only
/// ([`StructuredOutput::Prompt`]) and no message carries it yet.
pub(crate) const SCHEMA_INSTRUCTION: &str =
    "Answer with only a JSON value (no other text) that satisfies this JSON Schema:";

/// The body of `POST /chat/completions` for `request`, asking `model`; a request with a
/// response schema asks for structured output in the form `format`.
pub(crate) fn chat_body(model: &str, request: &ChatRequest, format: StructuredOutput) -> Json {
    let mut asked = std::borrow::Cow::Borrowed(&request.messages);
    if let (Some(schema), StructuredOutput::Prompt) = (&request.response_schema, format) {
        let text = schema.to_string();
        if !request.messages.iter().any(|m| m.content.contains(&text)) {
            let instruction = format!("{SCHEMA_INSTRUCTION}\n{text}");
            let messages = asked.to_mut();
            match messages.first_mut() {
                Some(m) if m.role == Role::System => {
                    m.content = format!("{}\n\n{instruction}", m.content);
                }
                _ => messages.insert(0, ChatMessage::new(Role::System, instruction)),
            }
        }
    }
    let last_user = asked.iter().rposition(|m| m.role == Role::User);
    let messages: Vec<Json> = asked
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if Some(i) == last_user && !request.context.is_empty() {
                let mut content = String::from(CONTEXT_INTRO);
                for (n, c) in request.context.iter().enumerate() {
                    content.push_str(&format!("\n[{}] {}", n + 1, c));
                }
                content.push_str("\n\nQuestion: ");
                content.push_str(&m.content);
                message(&ChatMessage {
                    content,
                    ..m.clone()
                })
            } else {
                message(m)
            }
        })
        .collect();
    let mut body = json!({ "model": model, "messages": messages });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = request.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if !request.tools.is_empty() {
        body["tools"] = Json::Array(request.tools.iter().map(tool).collect());
    }
    if let Some(schema) = &request.response_schema {
        match format {
            StructuredOutput::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": { "name": "answer", "schema": schema },
                });
            }
            // llama-cpp-python's form: JSON mode, constrained by the schema.
            StructuredOutput::JsonObject => {
                body["response_format"] = json!({ "type": "json_object", "schema": schema });
            }
            StructuredOutput::Prompt => {}
        }
    }
    body
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn message(m: &ChatMessage) -> Json {
    let mut v = json!({ "role": role(m.role), "content": m.content });
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = Json::Array(
            m.tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.args.to_string() },
                    })
                })
                .collect(),
        );
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

fn tool(t: &ToolManifest) -> Json {
    json!({
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
        },
    })
}

/// `POST /chat/completions`'s answer (the fields read).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: WireMessage,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    /// A JSON text (OpenAI); some servers send the object itself.
    #[serde(default)]
    arguments: Json,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        }
    }
}

impl ChatResponse {
    /// The first choice as a [`ChatReply`]; `None` when there is no choice.
    pub(crate) fn into_reply(self) -> Option<ChatReply> {
        let choice = self.choices.into_iter().next()?;
        let tool_calls = choice
            .message
            .tool_calls
            .into_iter()
            .map(|c| ToolRequest {
                id: c.id,
                name: c.function.name,
                args: match c.function.arguments {
                    // Arguments are a JSON text; one that does not parse is passed on as the
                    // text, and the tool gate reports it as invalid arguments.
                    Json::String(s) => serde_json::from_str(&s).unwrap_or(Json::String(s)),
                    Json::Null => json!({}),
                    other => other,
                },
            })
            .collect();
        Some(ChatReply {
            text: choice.message.content.unwrap_or_default(),
            tool_calls,
            usage: self.usage.map(Usage::from),
        })
    }
}

/// The body of `POST /embeddings`.
pub(crate) fn embeddings_body(model: &str, texts: &[String]) -> Json {
    json!({ "model": model, "input": texts })
}

/// `POST /embeddings`' answer.
#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
    #[serde(default)]
    pub(crate) usage: Option<EmbeddingsUsage>,
}

#[derive(Debug, Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// Tokens of an embeddings request.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct EmbeddingsUsage {
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
}

impl EmbeddingsResponse {
    /// The vectors in input order, or why they cannot be (`expected` inputs).
    pub(crate) fn into_vectors(self, expected: usize) -> Result<Vec<Vec<f32>>, String> {
        if self.data.len() != expected {
            return Err(format!(
                "{} embeddings for {expected} inputs",
                self.data.len()
            ));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (pos, item) in self.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(item.embedding),
                Some(Some(_)) => return Err(format!("two embeddings for input {i}")),
                None => return Err(format!("an embedding for input {i} of {expected}")),
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// The message of an error response: OpenAI's `{"error": {"message": …}}`, Ollama's
/// `{"error": "…"}`, or the body's beginning.
pub(crate) fn error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Json>(body) {
        let m = match &v["error"] {
            Json::String(s) => Some(s.clone()),
            Json::Object(o) => o.get("message").and_then(Json::as_str).map(str::to_owned),
            _ => None,
        }
        .or_else(|| v["message"].as_str().map(str::to_owned))
        .or_else(|| v["detail"].as_str().map(str::to_owned));
        if let Some(m) = m {
            return m;
        }
    }
    excerpt(body)
}

/// The first 300 characters of a body, as text.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_goes_before_the_last_question() {
        let mut r = ChatRequest::prompt("Why?");
        r.context = vec!["Because.".into(), "Also this.".into()];
        r.temperature = Some(0.5);
        let b = chat_body("m", &r, StructuredOutput::JsonSchema);
        let content = b["messages"][0]["content"].as_str().unwrap();
        assert!(content.starts_with(CONTEXT_INTRO), "{content}");
        assert!(content.ends_with("[1] Because.\n[2] Also this.\n\nQuestion: Why?"));
        assert_eq!(b["temperature"], 0.5);
        assert!(b.get("max_tokens").is_none() && b.get("tools").is_none());
    }

    #[test]
    fn tool_calls_and_results_use_the_function_shape() {
        let mut r = ChatRequest::prompt("2+2?");
        let mut asked = ChatMessage::new(Role::Assistant, "");
        asked.tool_calls.push(ToolRequest {
            id: "c1".into(),
            name: "calc".into(),
            args: json!({"expr": "2+2"}),
        });
        r.messages.push(asked);
        let mut answer = ChatMessage::new(Role::Tool, "4");
        answer.tool_call_id = Some("c1".into());
        r.messages.push(answer);
        let b = chat_body("m", &r, StructuredOutput::JsonSchema);
        assert_eq!(
            b["messages"][1]["tool_calls"][0],
            json!({"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\"expr\":\"2+2\"}"}})
        );
        assert_eq!(b["messages"][2]["tool_call_id"], "c1");
        let resp: ChatResponse = serde_json::from_value(json!({
            "choices": [{"message": {"content": null, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "calc", "arguments": "{\"expr\":\"1\"}"}}
            ]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        }))
        .unwrap();
        let reply = resp.into_reply().unwrap();
        assert_eq!(reply.tool_calls[0].args, json!({"expr": "1"}));
        assert_eq!(reply.usage.unwrap().completion_tokens, 4);
    }

    #[test]
    fn structured_output_takes_the_form_asked_for() {
        let schema = json!({"type": "object", "required": ["n"]});
        let mut r = ChatRequest::prompt("Count.");
        r.response_schema = Some(schema.clone());
        let b = chat_body("m", &r, StructuredOutput::JsonSchema);
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["schema"], schema);
        let b = chat_body("m", &r, StructuredOutput::JsonObject);
        assert_eq!(
            b["response_format"],
            json!({"type": "json_object", "schema": schema})
        );
        // In the prompt: no response_format, the schema in a system message of its own...
        let b = chat_body("m", &r, StructuredOutput::Prompt);
        assert!(b.get("response_format").is_none());
        assert_eq!(b["messages"][0]["role"], "system");
        let sys = b["messages"][0]["content"].as_str().unwrap();
        assert_eq!(sys, format!("{SCHEMA_INSTRUCTION}\n{schema}"));
        // ... or after the system message there is ...
        r.messages
            .insert(0, ChatMessage::new(Role::System, "Be terse."));
        let b = chat_body("m", &r, StructuredOutput::Prompt);
        let sys = b["messages"][0]["content"].as_str().unwrap();
        assert!(
            sys.starts_with("Be terse.\n\nAnswer with only a JSON value"),
            "{sys}"
        );
        // ... and never twice: a prompt carrying the schema already (`llm_json`'s) is sent as is.
        r.messages[0].content = format!("Use {schema}.");
        let b = chat_body("m", &r, StructuredOutput::Prompt);
        assert_eq!(b["messages"][0]["content"], format!("Use {schema}."));
        assert_eq!(b["messages"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn embeddings_come_back_in_input_order() {
        let r: EmbeddingsResponse = serde_json::from_value(json!({
            "data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]
        }))
        .unwrap();
        assert_eq!(r.into_vectors(2).unwrap(), vec![vec![1.0], vec![2.0]]);
    }

    #[test]
    fn error_messages_are_read_from_every_usual_shape() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(b"  plain text "), "plain text");
        assert_eq!(error_message(b""), "(empty body)");
    }
}
