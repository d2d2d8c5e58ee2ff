//! The MCP side of `cameleon mcp`: `tools/list` and `tools/call` over the folder's net tools
//! and the server's own `check` and `catalogue`; and the HTTP token check.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Map, Value as Json, json};

use crate::serve::token::{Presented, Token};
use cameleon::capabilities::Runtime;
use cameleon::catalogue::Catalogue;
use cameleon::cm::Loader;
use cameleon::nets::NetTool;
use cameleon::tools::Effect;

/// The server's own tools, whose names a net cannot take.
pub(super) const RESERVED: &[&str] = &["check", "catalogue"];

/// The MCP handler: the net tools, and the capabilities their runs use (each call pins the
/// generation current when it starts).
#[derive(Clone)]
pub(super) struct Handler {
    tools: Arc<Vec<NetTool>>,
    rt: Arc<Runtime>,
}

impl Handler {
    pub(super) fn new(tools: Vec<NetTool>, rt: Arc<Runtime>) -> Handler {
        Handler {
            tools: Arc::new(tools),
            rt,
        }
    }

    fn listed(&self) -> Vec<Tool> {
        let mut out: Vec<Tool> = self
            .tools
            .iter()
            .map(|t| {
                let m = t.manifest();
                let mut tool = Tool::new(
                    m.name.clone(),
                    m.description.clone(),
                    object(&m.input_schema),
                );
                tool.output_schema = Some(Arc::new(object(&m.output_schema)));
                tool.annotations = Some(annotations(m.effects));
                tool
            })
            .collect();
        let mut check = Tool::new(
            "check",
            "Validates a Caméléon net (the text of a .cm file): `{valid, problems}`, each problem with its line, column, message and hint.",
            object(&json!({
                "type": "object",
                "properties": {"cm": {"type": "string", "description": "the text of a .cm file"}},
                "required": ["cm"],
            })),
        );
        check.annotations = Some(annotations(Effect::None));
        let mut catalogue = Tool::new(
            "catalogue",
            "Every operator type of this Caméléon: ports, types, params, docs (what writing a valid .cm file needs).",
            object(&json!({"type": "object", "properties": {}})),
        );
        catalogue.annotations = Some(annotations(Effect::None));
        out.push(check);
        out.push(catalogue);
        out
    }
}

/// A JSON object (a schema), as rmcp holds one.
fn object(v: &Json) -> Map<String, Json> {
    v.as_object().cloned().unwrap_or_default()
}

/// MCP's hints for a tool of effects `e`.
fn annotations(e: Effect) -> ToolAnnotations {
    let mut a = ToolAnnotations::default();
    a.read_only_hint = Some(e <= Effect::Read);
    a.open_world_hint = Some(e == Effect::External);
    a.destructive_hint = Some(e > Effect::Read);
    a
}

fn ok(content: Json) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::structured(content))
}

fn failed(message: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(message)]))
}

/// `check`'s answer for `.cm` text: as `cameleon check --json` prints it.
fn check(text: &str) -> Json {
    match Loader::new().file_name("<cm>").load_str(text) {
        Ok(_) => json!({"valid": true, "problems": []}),
        Err(e) => json!({"valid": false, "problems": e.problems()}),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cameleon", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Caméléon's verified nets as tools: each takes its inputs as arguments and returns its outputs; `check` validates a .cm text, `catalogue` lists the operator types.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Json::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            "check" => {
                return Ok(match args.get("cm").and_then(Json::as_str) {
                    Some(text) => ok(check(text)),
                    None => failed("`check` takes `{\"cm\": \"<the text of a .cm file>\"}`".into()),
                });
            }
            "catalogue" => return Ok(ok(Catalogue::global().to_json())),
            _ => {}
        }
        let Some(i) = self
            .tools
            .iter()
            .position(|t| t.manifest().name == request.name)
        else {
            return Err(McpError::invalid_params(
                format!("no tool named `{}`", request.name),
                None,
            ));
        };
        let tools = Arc::clone(&self.tools);
        let generation = self.rt.current();
        // A net runs on a thread of its own: the engine may block (sync operators).
        let r = tokio::task::spawn_blocking(move || tools[i].run(&args, &generation))
            .await
            .map_err(|e| McpError::internal_error(format!("the run stopped: {e}"), None))?;
        Ok(match r {
            Ok(out) => ok(out),
            Err(e) => failed(e.message().to_owned()),
        })
    }
}

/// The token check of the HTTP endpoint: `Authorization: Bearer T`, compared in constant time
/// (no cookie, no query: an MCP client sends a header). 401 otherwise.
pub(super) async fn authorize(token: Option<&Token>, req: Request, next: Next) -> Response {
    if let Some(token) = token {
        let presented = Presented::read(req.headers(), None, "");
        if !presented.bearer.is_some_and(|b| token.matches(&b)) {
            return (
                StatusCode::UNAUTHORIZED,
                "missing or wrong token: send `Authorization: Bearer T` with the token `cameleon mcp` printed",
            )
                .into_response();
        }
    }
    next.run(req).await
}
