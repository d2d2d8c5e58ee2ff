//! `agent`: a chat model that may call tools, turn after turn, until it answers.

use serde_json::json;

use super::{FiringLog, ModelCall, ModelLog, ask, call_error, require_generative};
use crate::operator;
use crate::operator::capability::{ChatMessage, ChatRequest, Role, ToolCall, ToolManifest};
use crate::operator::{Firing, In, OpError, Out, ParamError, RunAsync};
use crate::types::{DataChunk, DataString};

/// A chat model that may call tools: the task on `in_prompt` (with the passages on
/// `in_context`, if connected), the final answer on `out_text`. Offered tools, it needs a
/// generative chat model: with the offline default (`extractive`, which only quotes) the firing
/// fails, saying how to configure one. The net's `tools:` key says which tools may run.
///
/// Each turn sends the conversation and the tools' manifests (name, description, JSON Schema
/// of the arguments) to chat model `model`. When it answers with tool calls, each call goes
/// through the run's tool gate — which applies the net's tool policy: a denied call never runs
/// — and its result (`{"status", "content", "error"}`) is added to the conversation for the
/// next turn. The first answer without tool calls is the final one. After `max_turns` turns
/// without one, the firing fails.
///
/// `tools` lists the tools offered (empty: every tool the gate knows). Each call carries the
/// principal `agent:<instance>` and the idempotency key
/// `<firing's key>/turn/<n>/call/<k>` — the firing's
/// [`idempotency_key`](crate::Firing::idempotency_key) (`{run}/{branch}/{step}/{op}`), the turn
/// (1-based) and the call's rank in that turn (1-based) — so a tool with effects recognises a
/// call made again when a resumed run fires the agent again. Every request, reply, tool call and
/// result is recorded with the firing: a replay or a backward step calls neither the model nor
/// a tool again.
#[operator(id = "agent", label = "Agent", family = behavioral, exec = async)]
#[derive(Clone, Debug, PartialEq)]
pub struct Agent {
    /// the chat model's name
    #[param(default = "default")]
    pub model: String,
    /// the system message (instructions), if any
    #[param]
    pub system: Option<String>,
    /// the tools offered to the model (empty: every tool of the run)
    #[param(default = [])]
    pub tools: Vec<String>,
    /// most model turns before the firing fails (at least 1)
    #[param(default = 8)]
    pub max_turns: u32,
    /// sampling temperature (the model's default if unset)
    #[param]
    pub temperature: Option<f64>,
    /// most tokens per answer (the model's default if unset)
    #[param]
    pub max_tokens: Option<u32>,
    /// the task for the agent (the first user message)
    #[input]
    in_prompt: In<DataString>,
    /// optional: passages (e.g. from `retrieve`) added to the conversation for the model to use
    #[input(optional)]
    in_context: In<DataChunk>,
    /// the model's final answer, once it stops calling tools
    #[output]
    out_text: Out<DataString>,
    log: ModelLog,
}

impl Default for Agent {
    fn default() -> Self {
        Agent::new()
    }
}

impl Agent {
    /// The `default` chat model with every tool of the run, at most 8 turns.
    pub fn new() -> Self {
        Agent {
            model: "default".to_owned(),
            system: None,
            tools: Vec::new(),
            max_turns: 8,
            temperature: None,
            max_tokens: None,
            log: ModelLog::default(),
        }
    }

    /// The same, with chat model `name`.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = name.into();
        self
    }

    /// The same, offering only these tools.
    pub fn tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tools = names.into_iter().map(Into::into).collect();
        self
    }

    /// The same, with at most `n` turns.
    pub fn max_turns(mut self, n: u32) -> Self {
        self.max_turns = n;
        self
    }

    /// What the last firing asked and was answered.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }
}

impl RunAsync for Agent {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let prompt = cx.get(Self::in_prompt)?.0.clone();
        let context = cx.try_get(Self::in_context).map(|c| c.0.clone());
        let (instance, key) = (cx.instance().to_owned(), cx.idempotency_key());
        let partials = cx.partials();
        let caps = cx.capabilities();
        let model = caps.chat(&self.model)?;
        let gate = caps.tools();
        let names = if self.tools.is_empty() {
            gate.names()
        } else {
            self.tools.clone()
        };
        let mut manifests: Vec<ToolManifest> = Vec::with_capacity(names.len());
        for name in &names {
            let m = gate.manifest(name).ok_or_else(|| {
                let known = gate.names();
                let hint = match crate::util::did_you_mean(name, known.iter().map(String::as_str)) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None if known.is_empty() => "this run has no tools".to_owned(),
                    None => format!("the run's tools are {}", known.join(", ")),
                };
                OpError::new(format!(
                    "no tool `{name}` for the agent in capability generation {} ({hint})",
                    caps.generation()
                ))
            })?;
            manifests.push(m);
        }
        if !manifests.is_empty() {
            let offered: Vec<&str> = manifests.iter().map(|m| m.name.as_str()).collect();
            let needs = format!(
                "decide to call tools (it is offered {})",
                offered.join(", ")
            );
            require_generative(&*model, &self.model, &needs)?;
        }
        let mut messages = Vec::new();
        if let Some(s) = &self.system {
            messages.push(ChatMessage::new(Role::System, s));
        }
        messages.push(ChatMessage::new(Role::User, prompt));
        let mut req = ChatRequest {
            messages,
            context: context.unwrap_or_default(),
            temperature: self.temperature.map(|t| t as f32),
            max_tokens: self.max_tokens,
            tools: manifests,
            response_schema: None,
        };
        let mut log = FiringLog::default();
        for turn in 1..=self.max_turns {
            let reply = ask(&*model, &self.model, &req, &partials)
                .await
                .map_err(|e| call_error("chat model", &self.model, model.kind(), e))?;
            log.push(ModelCall::Chat {
                model: self.model.clone(),
                kind: model.kind().to_owned(),
                request: req.clone(),
                reply: reply.clone(),
                quoted: !model.generative(),
            });
            if reply.tool_calls.is_empty() {
                self.log.set(log);
                cx.emit(Self::out_text, DataString(reply.text));
                return Ok(());
            }
            let mut asked = ChatMessage::new(Role::Assistant, reply.text);
            asked.tool_calls = reply.tool_calls.clone();
            req.messages.push(asked);
            for (i, request) in reply.tool_calls.into_iter().enumerate() {
                let call = ToolCall::new(&request.name, request.args)
                    .principal(format!("agent:{instance}"))
                    .idempotency_key(format!("{key}/turn/{turn}/call/{}", i + 1));
                let result = gate.call(call.clone()).await;
                let content = json!({
                    "status": result.status,
                    "content": result.content,
                    "error": result.error,
                });
                let mut answer = ChatMessage::new(Role::Tool, content.to_string());
                answer.tool_call_id = Some(request.id);
                req.messages.push(answer);
                log.push(ModelCall::Tool { call, result });
            }
        }
        Err(OpError::new(format!(
            "chat model `{}` ({}) gave no final answer in {} turn{} (max_turns): it kept calling \
             tools; raise max_turns, or say in the system message when to stop",
            self.model,
            model.kind(),
            self.max_turns,
            if self.max_turns == 1 { "" } else { "s" }
        )))
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.max_turns == 0 {
            return Err(ParamError::new(
                "max_turns".to_owned(),
                "max_turns must be at least 1",
            ));
        }
        Ok(())
    }
}
