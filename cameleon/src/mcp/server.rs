//! [`McpServer`]: one configured MCP server of a generation — started when first needed,
//! started again once if it exits, stopped when dropped.

use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Weak};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::Value as Json;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};

use super::tool::{McpTool, content_of};
use super::{IDEMPOTENCY_META_KEY, McpServerConfig, McpTransport};
use crate::operator::capability::CapFuture;
use crate::tools::{Tool, ToolError, ToolProvider};

/// How many times a server is started in all: once, and once more after it exits.
const MAX_STARTS: u32 = 2;

/// The guard of a stdio server's process group: it waits for its standard input to close —
/// when the server is stopped, or when this process ends, however it ends — then kills the
/// group (itself included). It ignores the terminal's signals, so a Ctrl-C that ends this
/// process does not end the guard before it has done its work.
const GUARD: &str = "trap '' INT TERM HUP; read -r _; kill -s KILL -- \"-$1\" 2>/dev/null";

/// One MCP server of a capability generation: a [`ToolProvider`] of tools named `NAME.TOOL`.
pub struct McpServer {
    config: McpServerConfig,
    me: Weak<McpServer>,
    state: tokio::sync::Mutex<ServerState>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct ServerState {
    conn: Option<Conn>,
    starts: u32,
    /// The tools it listed (once, at its first start).
    listed: Option<Vec<rmcp::model::Tool>>,
    /// How it ended last, for messages.
    ended: Option<String>,
}

/// A running connection, and for a stdio server its process and the group's guard.
struct Conn {
    service: RunningService<RoleClient, ()>,
    process: Option<Process>,
}

struct Process {
    child: Child,
    /// Dropping it (its standard input closes) makes the guard kill the group.
    _guard: Child,
}

impl Conn {
    /// Why it is no longer usable, if it is not.
    fn gone(&mut self) -> Option<String> {
        if let Some(p) = &mut self.process
            && let Ok(Some(status)) = p.child.try_wait()
        {
            return Some(format!("it exited ({status})"));
        }
        (self.service.is_closed() || self.service.peer().is_transport_closed())
            .then(|| "its connection closed".to_owned())
    }
}

impl McpServer {
    /// The server of `config`, not started.
    pub fn new(config: McpServerConfig) -> Arc<McpServer> {
        Arc::new_cyclic(|me| McpServer {
            config,
            me: me.clone(),
            state: tokio::sync::Mutex::new(ServerState::default()),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    fn label(&self) -> String {
        format!("MCP server `{}` ({})", self.config.name, self.config.from)
    }

    /// A usable connection: the running one, else a new start (at most [`MAX_STARTS`] in all).
    async fn peer(&self, st: &mut ServerState) -> Result<Peer<RoleClient>, String> {
        if let Some(c) = &mut st.conn {
            match c.gone() {
                None => return Ok(c.service.peer().clone()),
                Some(why) => {
                    tracing::warn!(target: "cameleon::mcp", server = %self.config.name, "the server stopped: {why}");
                    st.ended = Some(why);
                    st.conn = None;
                }
            }
        }
        if st.starts >= MAX_STARTS {
            return Err(format!(
                "{} stopped ({}) and was started again once; it stopped again, so its tools fail in this capability generation (the next one starts it anew)",
                self.label(),
                st.ended.as_deref().unwrap_or("it exited")
            ));
        }
        st.starts += 1;
        let conn = start(&self.config)
            .await
            .map_err(|e| format!("{} could not start: {e}", self.label()))?;
        let peer = conn.service.peer().clone();
        st.conn = Some(conn);
        Ok(peer)
    }

    /// Starts it if needed and lists its tools (listed once, at the first start).
    async fn list(self: Arc<Self>) -> Result<Vec<Arc<dyn Tool>>, String> {
        let mut st = self.state.lock().await;
        if st.listed.is_none() {
            let peer = self.peer(&mut st).await?;
            let tools = peer
                .list_all_tools()
                .await
                .map_err(|e| format!("{} did not list its tools: {e}", self.label()))?;
            st.listed = Some(tools);
        }
        let listed = st.listed.as_deref().unwrap_or_default();
        Ok(listed
            .iter()
            .map(|t| Arc::new(McpTool::new(Arc::clone(&self), t)) as Arc<dyn Tool>)
            .collect())
    }

    /// Calls its tool `remote` with `args` (an object: the gate checked them against the
    /// tool's schema), the idempotency key in the request's `_meta`.
    pub(super) async fn call(
        self: Arc<Self>,
        remote: String,
        args: Json,
        key: Option<String>,
    ) -> Result<Json, ToolError> {
        let peer = {
            let mut st = self.state.lock().await;
            self.peer(&mut st).await.map_err(ToolError::new)?
        };
        let mut params = CallToolRequestParams::new(remote.clone());
        params.arguments = match args {
            Json::Object(m) => Some(m),
            Json::Null => None,
            other => {
                return Err(ToolError::invalid_args(format!(
                    "the arguments of an MCP tool are a JSON object, not `{other}`"
                )));
            }
        };
        if let Some(k) = key {
            let mut meta = MetaObject::new();
            meta.0
                .insert(IDEMPOTENCY_META_KEY.to_owned(), Json::String(k));
            params.meta = Some(RequestMetaObject(meta));
        }
        match peer.call_tool(params).await {
            Ok(r) => content_of(&self.config.name, &remote, r),
            Err(e) if peer.is_transport_closed() => {
                let next = if self.state.lock().await.starts >= MAX_STARTS {
                    "it was started again once already, so its tools fail from now on in this capability generation"
                } else {
                    "it is started again at the next call"
                };
                Err(ToolError::new(format!(
                    "{} stopped during the call of `{remote}` ({e}): the call may or may not have acted; {next}",
                    self.label()
                )))
            }
            Err(e) => Err(ToolError::new(format!(
                "{} failed the call of `{remote}`: {e}",
                self.label()
            ))),
        }
    }
}

impl ToolProvider for McpServer {
    fn prefix(&self) -> &str {
        &self.config.name
    }

    fn tools(&self) -> CapFuture<'_, Result<Vec<Arc<dyn Tool>>, String>> {
        let me = self.me.upgrade();
        Box::pin(async move {
            let me = me.ok_or_else(|| "the MCP server was stopped".to_owned())?;
            // Its pipes and connection belong to Caméléon's runtime, whoever asks.
            crate::runtime::spawn(me.list())
                .await
                .unwrap_or_else(|e| Err(format!("the MCP server's start stopped: {e}")))
        })
    }
}

/// Starts a connection to the server of `cfg`.
async fn start(cfg: &McpServerConfig) -> Result<Conn, String> {
    match &cfg.transport {
        McpTransport::Stdio { command, args, cwd } => {
            let (process, stdout, stdin) = spawn(&cfg.name, command, args, cwd)?;
            let service =
                ().serve((stdout, stdin))
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            Ok(Conn {
                service,
                process: Some(process),
            })
        }
        McpTransport::Http { url, headers_env } => {
            let transport = http_transport(url, headers_env)?;
            let service = ()
                .serve(transport)
                .await
                .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?;
            Ok(Conn {
                service,
                process: None,
            })
        }
    }
}

/// Starts `command` in a process group of its own, with the group's guard, and its standard
/// error sent to the log.
fn spawn(
    name: &str,
    command: &str,
    args: &[String],
    cwd: &std::path::Path,
) -> Result<
    (
        Process,
        tokio::process::ChildStdout,
        tokio::process::ChildStdin,
    ),
    String,
> {
    let mut child = Command::new(command)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    let pid = child
        .id()
        .ok_or_else(|| format!("`{command}` ended at once"))?;
    let guard = Command::new("/bin/sh")
        .args(["-c", GUARD, "cameleon-mcp-guard", &pid.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(pid as i32)
        .spawn()
        .map_err(|e| format!("cannot start the guard of its process group (/bin/sh): {e}"))?;
    if let Some(err) = child.stderr.take() {
        tokio::spawn(log_stderr(name.to_owned(), err));
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("its standard input or output is missing".to_owned());
    };
    Ok((
        Process {
            child,
            _guard: guard,
        },
        stdout,
        stdin,
    ))
}

/// Longest line of a server's standard error logged as one event (longer ones are cut).
const MAX_LOG_LINE: usize = 8 * 1024;

/// Sends a stdio server's standard error to the log, line by line (target `cameleon::mcp`,
/// level INFO: `--log` shows it).
async fn log_stderr(server: String, mut err: ChildStderr) {
    let mut buf = [0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match err.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' || line.len() >= MAX_LOG_LINE {
                emit(&server, &line);
                line.clear();
                if b == b'\n' {
                    continue;
                }
            }
            line.push(b);
        }
    }
    if !line.is_empty() {
        emit(&server, &line);
    }
}

fn emit(server: &str, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    tracing::info!(target: "cameleon::mcp", server = %server, "{}", text.trim_end());
}

/// Installs rustls' `ring` provider as the process default unless one is installed already
/// (reqwest needs one to build a client).
fn ensure_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread that installed one is fine: there is one now.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The streamable HTTP transport to `url`, with the headers read from their variables. No
/// redirect is followed: a request (with its headers) is never sent to another address.
fn http_transport(
    url: &str,
    headers_env: &std::collections::BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    ensure_tls_provider();
    let client = reqwest::Client::builder()
        .user_agent(concat!("cameleon/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    for (header, var) in headers_env {
        let value = std::env::var(var).map_err(|_| {
            format!("environment variable `{var}` (its header `{header}`) is not set")
        })?;
        let name = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| format!("`{header}` is not an HTTP header name"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("the value of `{var}` (its header `{header}`) is not a valid header value")
        })?;
        value.set_sensitive(true);
        cfg.custom_headers.insert(name, value);
    }
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, cfg,
    ))
}
