//! The `mcp:` section of a capabilities file: MCP servers whose tools join the gate as
//! `SERVER.TOOL` (docs/mcp.md). Running a program (`command`), sending an environment variable
//! (`headers_env`) and sending calls to a host that is not a loopback address (`url`) are
//! honoured only from a trusted file.

use std::collections::BTreeMap;
use std::path::Path;

use super::config::Cx;
use super::untrusted::untrusted;
use crate::cm::CmProblemKind;
use crate::cm::tree::{Kind, Node, Span};

/// The key of the section.
pub(super) const MCP: &str = "mcp";

/// The keys of an entry.
const KEYS: &[&str] = &["command", "args", "url", "headers_env", "timeout_ms"];

/// One server as read: its name, what reaches it, its line.
#[derive(Clone, Debug)]
pub(super) struct McpEntry {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) transport: Transport,
    pub(super) timeout_ms: Option<u64>,
}

#[derive(Clone, Debug)]
pub(super) enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
    },
    Http {
        url: String,
        headers_env: BTreeMap<String, String>,
    },
}

/// A server's name: letters, digits, `_`, `-` (no `.`: it separates the server from its tool
/// in `SERVER.TOOL`), at most 64.
fn is_server_name(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads `mcp: {NAME: {command, args} | {url, headers_env}, …}`, every problem at once.
pub(super) fn read_mcp(cx: &mut Cx<'_>, v: &Node, out: &mut Vec<McpEntry>) {
    let entries = match &v.kind {
        Kind::Map(m) => m.as_slice(),
        Kind::Null => &[],
        other => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!(
                    "`mcp` must be a mapping of server names to servers, not {}",
                    other.describe()
                ),
                Some(EXAMPLE.into()),
            );
            return;
        }
    };
    for (k, entry) in entries {
        let name = k.as_str().unwrap_or_default();
        if !is_server_name(name) {
            cx.push(
                CmProblemKind::Schema,
                k.span,
                format!("`{name}` is not an MCP server name"),
                Some(
                    "a name is letters, digits, `_` and `-` (its tools are named `NAME.TOOL`)"
                        .into(),
                ),
            );
            continue;
        }
        if let Some(e) = read_server(cx, name, entry) {
            out.push(e);
        }
    }
}

const EXAMPLE: &str = "e.g. `mcp: {everything: {command: npx, args: [\"-y\", \"@modelcontextprotocol/server-everything\"]}}` or `mcp: {search: {url: \"http://127.0.0.1:8931/mcp\"}}`";

fn read_server(cx: &mut Cx<'_>, name: &str, entry: &Node) -> Option<McpEntry> {
    let Some(map) = entry.as_map() else {
        cx.push(
            CmProblemKind::Schema,
            entry.span,
            format!(
                "MCP server `{name}` must be a mapping with `command:` or `url:`, not {}",
                entry.kind.describe()
            ),
            Some(EXAMPLE.into()),
        );
        return None;
    };
    let before = cx.problems_len();
    let mut command = None;
    let mut args = Vec::new();
    let mut url = None;
    let mut headers_env = BTreeMap::new();
    let mut timeout_ms = None;
    for (k, v) in map {
        let key = k.as_str().unwrap_or_default();
        match key {
            "command" => command = string(cx, name, key, v),
            "url" => url = string(cx, name, key, v).map(|u| (u, v.span)),
            "args" => match &v.kind {
                Kind::Seq(items) => {
                    for i in items {
                        match i.as_str() {
                            Some(s) => args.push(s.to_owned()),
                            None => cx.push(
                                CmProblemKind::Schema,
                                i.span,
                                format!(
                                    "the `args` of MCP server `{name}` are strings, and this is {}",
                                    i.kind.describe()
                                ),
                                None,
                            ),
                        }
                    }
                }
                other => cx.push(
                    CmProblemKind::Schema,
                    v.span,
                    format!("`args` must be a list of strings, not {}", other.describe()),
                    Some(
                        "e.g. `args: [\"-y\", \"@modelcontextprotocol/server-everything\"]`".into(),
                    ),
                ),
            },
            "headers_env" => read_headers(cx, name, v, &mut headers_env),
            "timeout_ms" => match &v.kind {
                Kind::UInt(n) if *n > 0 => timeout_ms = Some(*n),
                Kind::Int(n) if *n > 0 => timeout_ms = Some(n.unsigned_abs()),
                other => cx.push(
                    CmProblemKind::Schema,
                    v.span,
                    format!(
                        "`timeout_ms` must be a positive whole number of milliseconds, not {}",
                        other.describe()
                    ),
                    None,
                ),
            },
            _ => {
                let hint = match crate::util::did_you_mean(key, KEYS.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("the keys of an MCP server are {}", KEYS.join(", ")),
                };
                let message = if key == "env" || key.ends_with("_env") {
                    format!(
                        "unknown key `{key}` of MCP server `{name}` (only `headers_env` sends variables, as headers)"
                    )
                } else {
                    format!("unknown key `{key}` of MCP server `{name}`")
                };
                cx.push(CmProblemKind::Schema, k.span, message, Some(hint));
            }
        }
    }
    let span_of = |key: &str| {
        map.iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map_or(entry.span, |(k, _)| k.span)
    };
    let transport = match (command, url) {
        (Some(command), None) => {
            if !headers_env.is_empty() {
                cx.push(
                    CmProblemKind::Schema,
                    span_of("headers_env"),
                    format!("MCP server `{name}` runs a program: `headers_env` is for a `url`"),
                    None,
                );
            }
            if let Some(u) = cx.untrusted {
                untrusted(
                    cx,
                    u,
                    span_of("command"),
                    format!("MCP server `{name}` would run a program (its `command`: `{command}`)"),
                );
            }
            Transport::Stdio { command, args }
        }
        (None, Some((url, url_span))) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                cx.push(
                    CmProblemKind::Schema,
                    url_span,
                    format!("the `url` of MCP server `{name}` must be an http:// or https:// URL"),
                    None,
                );
            }
            if !args.is_empty() {
                cx.push(
                    CmProblemKind::Schema,
                    span_of("args"),
                    format!("MCP server `{name}` is reached at a `url`: `args` is for a `command`"),
                    None,
                );
            }
            check_http_trust(
                cx,
                name,
                &url,
                url_span,
                &headers_env,
                span_of("headers_env"),
            );
            Transport::Http { url, headers_env }
        }
        (Some(_), Some(_)) => {
            cx.push(
                CmProblemKind::Schema,
                span_of("url"),
                format!("MCP server `{name}` has both `command` and `url`"),
                Some(
                    "a server is a program to run (`command`) or an address (`url`), not both"
                        .into(),
                ),
            );
            return None;
        }
        (None, None) => {
            if cx.problems_len() == before {
                cx.push(
                    CmProblemKind::Schema,
                    entry.span,
                    format!("MCP server `{name}` has neither `command` nor `url`"),
                    Some(EXAMPLE.into()),
                );
            }
            return None;
        }
    };
    (cx.problems_len() == before).then(|| McpEntry {
        name: name.to_owned(),
        line: entry.span.line,
        transport,
        timeout_ms,
    })
}

fn string(cx: &mut Cx<'_>, name: &str, key: &str, v: &Node) -> Option<String> {
    match v.as_str() {
        Some(s) if !s.is_empty() => Some(s.to_owned()),
        _ => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!(
                    "the `{key}` of MCP server `{name}` must be a non-empty string, not {}",
                    v.kind.describe()
                ),
                None,
            );
            None
        }
    }
}

/// `headers_env: {HEADER: VARIABLE, …}`: each variable must be set (when running).
fn read_headers(cx: &mut Cx<'_>, name: &str, v: &Node, out: &mut BTreeMap<String, String>) {
    let Some(map) = v.as_map() else {
        cx.push(
            CmProblemKind::Schema,
            v.span,
            format!(
                "`headers_env` maps header names to environment variables, not {}",
                v.kind.describe()
            ),
            Some("e.g. `headers_env: {Authorization: SEARCH_TOKEN}`".into()),
        );
        return;
    };
    for (h, var) in map {
        let header = h.as_str().unwrap_or_default();
        match var.as_str() {
            Some(var_name) if !var_name.is_empty() => {
                if cx.check_env() && std::env::var_os(var_name).is_none_or(|x| x.is_empty()) {
                    cx.push(
                        CmProblemKind::Env,
                        var.span,
                        format!("environment variable `{var_name}` (named by `headers_env` of MCP server `{name}`, header `{header}`) is not set"),
                        Some(format!("set it before running (`export {var_name}=…`); the value itself never goes in this file")),
                    );
                }
                out.insert(header.to_owned(), var_name.to_owned());
            }
            _ => cx.push(
                CmProblemKind::Schema,
                var.span,
                format!(
                    "header `{header}` names an environment variable: a word, not {}",
                    var.kind.describe()
                ),
                None,
            ),
        }
    }
}

/// From an untrusted file: no variable sent, no calls to a host that is not a loopback one.
fn check_http_trust(
    cx: &mut Cx<'_>,
    name: &str,
    url: &str,
    url_span: Span,
    headers_env: &BTreeMap<String, String>,
    headers_span: Span,
) {
    let Some(u) = cx.untrusted else {
        return;
    };
    let host =
        super::trust::host_of(url).map_or_else(|| "its endpoint".to_owned(), |h| format!("`{h}`"));
    for (header, var) in headers_env {
        untrusted(
            cx,
            u,
            headers_span,
            format!(
                "MCP server `{name}` would send the environment variable `{var}` (its header `{header}` of `headers_env`) to {host}"
            ),
        );
    }
    if !super::trust::is_loopback_url(url) {
        untrusted(
            cx,
            u,
            url_span,
            format!(
                "MCP server `{name}` would send the run's tool calls to {host} (its `url`), which is not a loopback address"
            ),
        );
    }
}

/// The configuration of a server read from the file `file` in folder `base`.
#[cfg(feature = "mcp")]
pub(super) fn config(
    e: McpEntry,
    file: &str,
    base: &Path,
    trusted: bool,
) -> crate::mcp::McpServerConfig {
    use crate::mcp::{McpServerConfig, McpTransport};
    McpServerConfig {
        from: format!("`{file}` line {}", e.line),
        name: e.name,
        transport: match e.transport {
            Transport::Stdio { command, args } => McpTransport::Stdio {
                command,
                args,
                cwd: base.to_path_buf(),
            },
            Transport::Http { url, headers_env } => McpTransport::Http { url, headers_env },
        },
        timeout_ms: e.timeout_ms,
        trusted,
    }
}
