//! MCP servers as tool providers (docs/mcp.md): the servers a capabilities file lists under
//! `mcp:`, reached over a child process's standard input and output (`command`) or streamable
//! HTTP (`url`), each a [`ToolProvider`](crate::tools::ToolProvider) of its generation's tool
//! registry.
//!
//! - **Names**: tool `TOOL` of server `SERVER` is `SERVER.TOOL` behind the gate — the `.cm`
//!   file's `tools:` policy, `cameleon tools`, the `tool` operator and `agent` all use that name.
//! - **Lifecycle**: a server is started when its generation first needs one of its tools (a
//!   call, a lookup, a listing), and stopped when the generation is dropped (the last run pinned
//!   to it ended and a reload replaced it). A server that exits is started again once; after
//!   that its calls fail, naming it. A stdio server runs in a process group of its own, watched
//!   by a small guard process that ends the group when this process ends, however it ends
//!   (`SIGKILL` included); its standard error goes to the log (`--log`, target `cameleon::mcp`).
//! - **Effects**: from the tool's annotations when the server is configured in a trusted
//!   capabilities file (`readOnlyHint` → `read`; `openWorldHint: false` → `write`; otherwise
//!   `external`), else `external` ([`effects_of`]).
//! - **Calls**: the call's idempotency key travels in the request's `_meta`
//!   (`cameleon/idempotency_key`); a result with `isError` is a tool error carrying the server's
//!   text.

mod server;
mod tool;

pub use server::McpServer;
pub use tool::{IDEMPOTENCY_META_KEY, effects_of, idempotent_of};

use std::collections::BTreeMap;

/// How to reach one MCP server: the entry `mcp: {NAME: …}` of a capabilities file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The entry's name: its tools are `NAME.TOOL`.
    pub name: String,
    /// The transport.
    pub transport: McpTransport,
    /// Each call's time limit, in milliseconds (`timeout_ms`; the gate's otherwise).
    pub timeout_ms: Option<u64>,
    /// Whether the file that configures it is trusted: only then do its tools' annotations
    /// count for their effects (otherwise every tool is `external`).
    pub trusted: bool,
    /// Where it was configured, for messages (`` `cameleon.yaml` line 3 ``).
    pub from: String,
}

/// The transport of an MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A program started as a child process, speaking over its standard input and output.
    Stdio {
        /// The program (`command`), looked up on `PATH` as a shell does.
        command: String,
        /// Its arguments (`args`).
        args: Vec<String>,
        /// Its working folder: the capabilities file's folder.
        cwd: std::path::PathBuf,
    },
    /// Streamable HTTP at `url`.
    Http {
        /// The endpoint (`url`).
        url: String,
        /// Headers sent with every request, each read from an environment variable at start
        /// (`headers_env: {Authorization: SEARCH_TOKEN}`).
        headers_env: BTreeMap<String, String>,
    },
}
