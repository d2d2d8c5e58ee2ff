//! One tool of an MCP server behind the gate: its manifest (name `SERVER.TOOL`, effects from
//! its annotations under the trust rules) and its results.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ToolAnnotations};
use serde_json::Value as Json;

use super::McpServer;
use crate::operator::capability::{Effect, ToolManifest};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// The key of the request's `_meta` that carries a call's idempotency key (stable across
/// re-runs of the same firing), so a server can tell a repeated request from a new one.
pub const IDEMPOTENCY_META_KEY: &str = "cameleon/idempotency_key";

/// The effects of an MCP tool with `annotations`, from a server configured in a `trusted`
/// capabilities file or not: untrusted, `external` whatever the annotations say; trusted,
/// `readOnlyHint: true` → `read`, `openWorldHint: false` (it acts on its own environment only)
/// → `write`, anything else (`destructiveHint`, no annotations) → `external`.
///
/// ```
/// use cameleon::mcp::effects_of;
/// use cameleon::tools::Effect;
/// use rmcp::model::ToolAnnotations;
///
/// let mut ro = ToolAnnotations::default();
/// ro.read_only_hint = Some(true);
/// assert_eq!(effects_of(Some(&ro), true), Effect::Read);
/// assert_eq!(effects_of(Some(&ro), false), Effect::External);
/// assert_eq!(effects_of(None, true), Effect::External);
/// ```
pub fn effects_of(annotations: Option<&ToolAnnotations>, trusted: bool) -> Effect {
    let Some(a) = annotations.filter(|_| trusted) else {
        return Effect::External;
    };
    if a.read_only_hint == Some(true) {
        Effect::Read
    } else if a.open_world_hint == Some(false) {
        Effect::Write
    } else {
        Effect::External
    }
}

/// Whether a tool is idempotent (a repeated call does what the first did, so a run that
/// reuses recorded firings may reuse one calling it: docs/semantics.md §5.9): its
/// `idempotentHint`, read only when the server is configured in a trusted capabilities file.
pub fn idempotent_of(annotations: Option<&ToolAnnotations>, trusted: bool) -> bool {
    annotations
        .filter(|_| trusted)
        .is_some_and(|a| a.idempotent_hint == Some(true))
}

/// A tool of an MCP server, as the gate calls it.
#[derive(Debug)]
pub(super) struct McpTool {
    pub(super) server: Arc<McpServer>,
    /// Its name on the server (`echo`).
    pub(super) remote: String,
    pub(super) manifest: ToolManifest,
    pub(super) timeout_ms: Option<u64>,
    pub(super) origin: String,
}

impl McpTool {
    pub(super) fn new(server: Arc<McpServer>, t: &rmcp::model::Tool) -> McpTool {
        let cfg = server.config();
        let description = t
            .description
            .as_deref()
            .map(str::to_owned)
            .or_else(|| t.title.clone())
            .unwrap_or_default();
        let output_schema = t
            .output_schema
            .as_ref()
            .map_or(Json::Bool(true), |s| Json::Object((**s).clone()));
        McpTool {
            remote: t.name.to_string(),
            manifest: ToolManifest {
                name: format!("{}.{}", cfg.name, t.name),
                description,
                effects: effects_of(t.annotations.as_ref(), cfg.trusted),
                input_schema: Json::Object((*t.input_schema).clone()),
                output_schema,
                idempotent: idempotent_of(t.annotations.as_ref(), cfg.trusted),
            },
            timeout_ms: cfg.timeout_ms,
            origin: format!("mcp:{}", cfg.name),
            server,
        }
    }
}

impl Tool for McpTool {
    fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    fn origin(&self) -> &str {
        &self.origin
    }

    fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a> {
        let server = Arc::clone(&self.server);
        let remote = self.remote.clone();
        let key = cx.idempotency_key.clone();
        ToolOutput::Pending(Box::pin(async move {
            // The server's pipes belong to Caméléon's runtime: the call runs there, and is
            // abandoned (its task aborted) when the gate stops waiting.
            let mut task = Abort(crate::runtime::spawn(server.call(remote, args, key)));
            match (&mut task.0).await {
                Ok(r) => r,
                Err(e) => Err(ToolError::new(format!("the MCP call stopped: {e}"))),
            }
        }))
    }
}

/// A task aborted when dropped (the gate timed out, the run was cancelled).
struct Abort<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Abort<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The content of a tool's result: with `isError`, an error carrying the server's text;
/// otherwise the structured content when there is some, the text when the result is one text
/// block, else the content blocks as JSON (`[{"type": "image", …}, …]`).
pub(super) fn content_of(server: &str, tool: &str, r: CallToolResult) -> Result<Json, ToolError> {
    let blocks: Vec<Json> = r
        .content
        .iter()
        .map(|b| serde_json::to_value(b).unwrap_or(Json::Null))
        .collect();
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    if r.is_error == Some(true) {
        let text = texts.join("\n");
        return Err(ToolError::new(if text.is_empty() {
            format!("MCP tool `{server}.{tool}` reported an error, without text")
        } else {
            text
        }));
    }
    if let Some(s) = r.structured_content {
        return Ok(s);
    }
    match (blocks.len(), texts.as_slice()) {
        (1, [one]) => Ok(Json::String((*one).to_owned())),
        _ => Ok(Json::Array(blocks)),
    }
}
