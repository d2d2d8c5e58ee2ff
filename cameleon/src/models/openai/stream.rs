//! A streamed chat completion (`stream: true`): the server-sent events of
//! `POST /chat/completions`, read as they come, and the reply they add up to — the text's
//! pieces, the tool calls whose names and arguments arrive in pieces too (by `index`), and
//! the usage of the last chunk (`stream_options: {include_usage: true}`).

use serde::Deserialize;
use serde_json::Value as Json;

use super::wire::{WireUsage, error_message};
use crate::operator::capability::{ChatReply, ToolRequest, Usage};

/// Server-sent events cut out of a byte stream: [`feed`](Self::feed) bytes as they arrive, get
/// the `data` of each complete event. Comments, `event:`, `id:` and `retry:` lines are skipped.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    /// Bytes of a line not ended yet.
    line: Vec<u8>,
    /// The `data` lines of the event under way.
    data: Option<String>,
}

impl SseReader {
    /// Takes `bytes`; calls `event` with the data of each event they complete.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        mut event: impl FnMut(&str) -> Result<(), String>,
    ) -> Result<(), String> {
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            if self.line.is_empty() {
                if let Some(data) = self.data.take() {
                    event(&data)?;
                }
                continue;
            }
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(v);
                    }
                    None => self.data = Some(v.to_owned()),
                }
            }
        }
        Ok(())
    }

    /// The end of the stream: an event not closed by a blank line still counts.
    pub(crate) fn finish(
        &mut self,
        event: impl FnOnce(&str) -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.line.is_empty() {
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                self.data.get_or_insert_with(String::new).push_str(v);
            }
        }
        match self.data.take() {
            Some(d) => event(&d),
            None => Ok(()),
        }
    }
}

/// One chunk of a streamed completion (the fields read).
#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A piece of the JSON text (some servers send the whole object at once).
    #[serde(default)]
    arguments: Option<Json>,
}

/// A tool call being put together.
#[derive(Debug, Default)]
struct ToolParts {
    id: String,
    name: String,
    args: String,
}

/// The reply a streamed completion adds up to.
#[derive(Debug, Default)]
pub(crate) struct Assembled {
    text: String,
    tools: Vec<ToolParts>,
    usage: Option<WireUsage>,
    /// `data: [DONE]` was read.
    pub(crate) done: bool,
    /// Chunks read (for messages).
    pub(crate) chunks: u64,
}

impl Assembled {
    /// Takes the data of one event; returns the piece of text it adds (empty for none).
    /// An error for data that is neither a chunk nor `[DONE]`, or an error the server sends
    /// in the stream.
    pub(crate) fn take(&mut self, data: &str) -> Result<String, String> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        if data.is_empty() {
            return Ok(String::new());
        }
        let value: Json = serde_json::from_str(data)
            .map_err(|e| format!("an event that is not JSON ({e}): {}", clip(data)))?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(format!(
                "an error in the stream: {}",
                error_message(data.as_bytes())
            ));
        }
        let chunk: Chunk = serde_json::from_value(value).map_err(|e| {
            format!(
                "an event that is not a completion chunk ({e}): {}",
                clip(data)
            )
        })?;
        self.chunks += 1;
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        let mut piece = String::new();
        // The first choice only, as for a whole answer.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let Some(delta) = choice.delta else { continue };
            if let Some(c) = delta.content {
                piece.push_str(&c);
            }
            for t in delta.tool_calls {
                let i = t.index.unwrap_or(self.tools.len().saturating_sub(1));
                if i > self.tools.len() + 64 {
                    return Err(format!("a tool call at index {i}, out of any order"));
                }
                while self.tools.len() <= i {
                    self.tools.push(ToolParts::default());
                }
                let parts = &mut self.tools[i];
                if let Some(id) = t.id {
                    parts.id.push_str(&id);
                }
                if let Some(f) = t.function {
                    if let Some(n) = f.name {
                        parts.name.push_str(&n);
                    }
                    match f.arguments {
                        Some(Json::String(s)) => parts.args.push_str(&s),
                        Some(Json::Null) | None => {}
                        Some(other) => parts.args.push_str(&other.to_string()),
                    }
                }
            }
        }
        self.text.push_str(&piece);
        Ok(piece)
    }

    /// The reply: the text, the tool calls (arguments parsed from their JSON text, as for a
    /// whole answer), the usage.
    pub(crate) fn into_reply(self) -> ChatReply {
        let tool_calls = self
            .tools
            .into_iter()
            .filter(|t| !t.name.is_empty())
            .map(|t| ToolRequest {
                id: t.id,
                name: t.name,
                args: if t.args.trim().is_empty() {
                    serde_json::json!({})
                } else {
                    serde_json::from_str(&t.args).unwrap_or(Json::String(t.args))
                },
            })
            .collect();
        ChatReply {
            text: self.text,
            tool_calls,
            usage: self.usage.map(Usage::from),
        }
    }
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(bytes: &[&[u8]]) -> Vec<String> {
        let mut r = SseReader::default();
        let mut out = Vec::new();
        for b in bytes {
            r.feed(b, |d| {
                out.push(d.to_owned());
                Ok(())
            })
            .unwrap();
        }
        r.finish(|d| {
            out.push(d.to_owned());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn events_are_cut_wherever_the_bytes_break() {
        let all = b": keep-alive\r\n\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata: two\n\ndata: [DONE]";
        for cut in 0..all.len() {
            let (a, b) = all.split_at(cut);
            assert_eq!(
                events(&[a, b]),
                ["{\"a\":1}", "one\ntwo", "[DONE]"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn text_tool_calls_and_usage_add_up() {
        let mut a = Assembled::default();
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": " me"}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "calc", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"expr\":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "now", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"2+2\"}"}}]}}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
        ];
        let mut pieces = Vec::new();
        for c in chunks {
            pieces.push(a.take(&c.to_string()).unwrap());
        }
        a.take("[DONE]").unwrap();
        assert!(a.done);
        assert_eq!(pieces[..2], ["Let", " me"]);
        let r = a.into_reply();
        assert_eq!(r.text, "Let me");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[0].args, json!({"expr": "2+2"}));
        assert_eq!(r.tool_calls[1].name, "now");
        assert_eq!(r.tool_calls[1].args, json!({}));
        assert_eq!(r.usage.unwrap().completion_tokens, 4);
    }

    #[test]
    fn an_error_in_the_stream_is_reported() {
        let mut a = Assembled::default();
        let e = a
            .take(r#"{"error": {"message": "model overloaded"}}"#)
            .unwrap_err();
        assert!(e.contains("model overloaded"), "{e}");
        assert!(a.take("not json").unwrap_err().contains("not JSON"));
    }
}
