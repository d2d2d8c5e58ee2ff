//! `cameleon mcp`: Caméléon as an MCP server (docs/mcp.md) — each verified net of a folder with
//! an `input`/`output` boundary as a tool, plus `check` and `catalogue`, over standard input and
//! output or (with `--port`) streamable HTTP behind a token.

mod handler;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::{Io, exit};
use crate::serve::token::Token;
use cameleon::capabilities::CapabilitiesError;
use cameleon::nets::NetTool;
use handler::Handler;

/// `cameleon mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The folder whose `.cm` files are offered as tools (not its subfolders).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub nets: PathBuf,
    /// Serve streamable HTTP on this port (0: any free one) instead of standard input and
    /// output; the endpoint is `/mcp`.
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// With `--port`: the address to listen on. Beyond loopback, `--token` is required.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1",
        requires = "port"
    )]
    pub bind: IpAddr,
    /// With `--port`: the token clients send (`Authorization: Bearer T`); default: a random
    /// one, printed at start.
    #[arg(long, value_name = "T", conflicts_with = "no_token", requires = "port")]
    pub token: Option<String>,
    /// With `--port` on loopback: no token (every local user and program can call the nets).
    #[arg(long, requires = "port")]
    pub no_token: bool,
    /// The capabilities file (default: your config directory's `cameleon.yaml`, the file
    /// `CAMELEON_CAPABILITIES` names, then `cameleon.yaml` in DIR once trusted).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Let tool TOOL run unasked under a net's `tools: allow:` whatever its effects (repeatable).
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
}

/// The nets of `dir` offered as tools, each with why when it is not.
fn net_tools(
    dir: &std::path::Path,
    registry: &Arc<cameleon::tools::ToolRegistry>,
) -> std::io::Result<(Vec<NetTool>, Vec<String>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cm") && p.is_file())
        .collect();
    files.sort();
    let mut tools: Vec<NetTool> = Vec::new();
    let mut skipped = Vec::new();
    for f in files {
        match NetTool::load(&f, registry) {
            Ok(t) if handler::RESERVED.contains(&t.manifest().name.as_str()) => {
                skipped.push(format!(
                    "`{}`: its name is one of the server's own tools (check, catalogue)",
                    f.display()
                ))
            }
            Ok(t) => tools.push(t),
            Err(why) => skipped.push(why),
        }
    }
    Ok((tools, skipped))
}

pub(super) fn mcp(a: &McpArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    if !a.nets.is_dir() {
        writeln!(
            io.stderr,
            "error: `{}` is not a folder (--nets DIR)",
            a.nets.display()
        )?;
        return Ok(exit::INVALID);
    }
    let token = match a.port {
        None => None,
        Some(_) => match token_for(a) {
            Ok(t) => t,
            Err(why) => {
                writeln!(io.stderr, "error: {why}")?;
                return Ok(exit::INVALID);
            }
        },
    };
    let rt = match crate::trust::sources(&a.nets, a.capabilities.as_deref(), &a.grant).build() {
        Ok(rt) => Arc::new(rt),
        Err(CapabilitiesError::File(e)) => {
            crate::report_invalid(&e, false, io)?;
            return Ok(exit::INVALID);
        }
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    let (tools, skipped) = net_tools(&a.nets, rt.current().tools())?;
    for why in &skipped {
        writeln!(io.stderr, "not offered: {why}")?;
    }
    let offered: Vec<&str> = tools.iter().map(|t| t.manifest().name.as_str()).collect();
    writeln!(
        io.stderr,
        "cameleon mcp: {} net tool(s) from `{}`{}, plus check and catalogue",
        tools.len(),
        a.nets.display(),
        if offered.is_empty() {
            String::new()
        } else {
            format!(" ({})", offered.join(", "))
        }
    )?;
    io.stderr.flush()?;
    let handler = Handler::new(tools, Arc::clone(&rt));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = match a.port {
        None => stdio(&runtime, handler, io),
        Some(port) => runtime.block_on(http(handler, a.bind, port, token, io)),
    };
    // A read of standard input may still be in flight on a blocking thread: do not wait for it.
    runtime.shutdown_background();
    match served {
        Ok(code) => Ok(code),
        Err(why) => {
            writeln!(io.stderr, "error: {why}")?;
            Ok(exit::INVALID)
        }
    }
}

/// The token of an HTTP server: `--token`, none with `--no-token` (loopback only), else a
/// random one. `Err`: why the arguments do not go together.
fn token_for(a: &McpArgs) -> Result<Option<Token>, String> {
    let loopback = a.bind.is_loopback();
    match (&a.token, a.no_token) {
        (Some(t), _) if t.is_empty() => Err("--token must not be empty".into()),
        (Some(t), _) => Ok(Some(Token::given(t.clone()))),
        (None, true) if loopback => Ok(None),
        (None, true) => Err(format!(
            "--no-token is accepted on a loopback address only; on {} give --token T",
            a.bind
        )),
        (None, false) if !loopback => Err(format!(
            "listening on {} (beyond loopback) needs an explicit --token T",
            a.bind
        )),
        (None, false) => Token::generate().map(Some).map_err(|e| e.to_string()),
    }
}

/// Serves on standard input and output until the client closes its end. The protocol's
/// output goes through `io.stdout` (the command line holds the process's standard output), fed
/// by the server's task through a channel.
fn stdio(
    runtime: &tokio::runtime::Runtime,
    handler: Handler,
    io: &mut Io<'_>,
) -> Result<i32, String> {
    use rmcp::ServiceExt;
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let task = runtime.spawn(async move {
        let running = handler
            .serve((tokio::io::stdin(), ChannelWriter(tx)))
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| format!("the MCP session stopped: {e}"))?;
        Ok::<_, String>(())
    });
    // Until the server's task ends and drops its writer.
    for chunk in rx {
        if io
            .stdout
            .write_all(&chunk)
            .and_then(|()| io.stdout.flush())
            .is_err()
        {
            break; // the client is gone
        }
    }
    runtime
        .block_on(task)
        .map_err(|e| format!("the MCP server stopped: {e}"))??;
    Ok(exit::OK)
}

/// An async writer sending what it is given to a channel (the main thread writes it out).
struct ChannelWriter(std::sync::mpsc::Sender<Vec<u8>>);

impl tokio::io::AsyncWrite for ChannelWriter {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(match self.0.send(buf.to_vec()) {
            Ok(()) => Ok(buf.len()),
            Err(_) => Err(std::io::ErrorKind::BrokenPipe.into()),
        })
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Serves streamable HTTP on `bind:port` at `/mcp` until Ctrl-C or SIGTERM.
async fn http(
    handler: Handler,
    bind: IpAddr,
    port: u16,
    token: Option<Token>,
    io: &mut Io<'_>,
) -> Result<i32, String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind((bind, port))
        .await
        .map_err(|e| format!("cannot listen on {bind}:{port}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address listened on: {e}"))?;
    let host = match addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let mut config = StreamableHttpServerConfig::default();
    // `Host`: the address listened on, and the loopback names (rmcp's default list: loopback).
    if !bind.is_loopback() {
        config.allowed_hosts.push(host.clone());
        config.allowed_hosts.push(format!("{host}:{}", addr.port()));
    }
    // `Origin`, when a request has one: only this server's own (no web page of another site).
    config.allowed_origins = vec![
        format!("http://{host}:{}", addr.port()),
        format!("http://localhost:{}", addr.port()),
    ];
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let guard = Arc::new(token.clone());
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req, next| {
            let guard = Arc::clone(&guard);
            async move { handler::authorize(guard.as_ref().as_ref(), req, next).await }
        }));
    let _ = writeln!(io.stdout, "MCP endpoint http://{host}:{}/mcp", addr.port());
    match &token {
        Some(t) => {
            let _ = writeln!(io.stdout, "token {}", t.reveal());
        }
        None => {
            let _ = writeln!(
                io.stderr,
                "warning: --no-token: every local user and program can call these nets"
            );
        }
    }
    let _ = io.stdout.flush();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown())
        .await
        .map_err(|e| format!("the server stopped: {e}"))?;
    Ok(exit::OK)
}

/// Ctrl-C or SIGTERM.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
