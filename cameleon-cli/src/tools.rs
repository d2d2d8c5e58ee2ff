//! `cameleon tools`: the manifests of every tool linked into the program; `cameleon call`: one
//! tool call through the gate (docs/cli.md, docs/tools.md).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as Json;

use super::{CallArgs, Io, ToolsArgs, exit};
use cameleon::capabilities::{CapabilitiesError, ConfigFile, EnvSource, Runtime};
use cameleon::operator::capability::{ToolCall, ToolManifest};
use cameleon::tools::ToolRegistry;

/// The tools of the capabilities `tools` and `call` use: `--capabilities FILE`, else the
/// user's own file and the one `CAMELEON_CAPABILITIES` names (no project file: there is no
/// `.cm` file). `Err`: the exit code, reported.
fn registry(
    capabilities: Option<&std::path::Path>,
    io: &mut Io<'_>,
) -> std::io::Result<Result<(Runtime, Arc<ToolRegistry>), i32>> {
    let b = match capabilities {
        Some(file) => Runtime::builder().config_file(file),
        None => match ConfigFile::user() {
            Some(user) => Runtime::builder().source(user).source(EnvSource),
            None => Runtime::builder().source(EnvSource),
        },
    };
    match b.build() {
        Ok(rt) => {
            let tools = Arc::clone(rt.current().tools());
            Ok(Ok((rt, tools)))
        }
        Err(CapabilitiesError::File(e)) => {
            crate::report_invalid(&e, false, io)?;
            Ok(Err(exit::INVALID))
        }
        Err(e) => {
            writeln!(io.stderr, "error: {e}")?;
            Ok(Err(exit::INVALID))
        }
    }
}

pub(super) fn tools(a: &ToolsArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let (_rt, registry) = match registry(a.capabilities.as_deref(), io)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let manifests = registry.manifests();
    for (server, why) in registry.unavailable() {
        writeln!(
            io.stderr,
            "warning: the tools of MCP server `{server}` are not listed: {why}"
        )?;
    }
    let text = if a.json {
        let mut s = serde_json::to_string_pretty(&manifests).unwrap_or_default();
        s.push('\n');
        s
    } else {
        tools_text(&manifests)
    };
    io.stdout.write_all(text.as_bytes())?;
    Ok(exit::OK)
}

/// The terminal listing: each tool, what it does, its arguments and its result.
pub fn tools_text(manifests: &[ToolManifest]) -> String {
    let mut s = String::new();
    for (i, m) in manifests.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let summary = m.description.split("\n\n").next().unwrap_or_default();
        let _ = writeln!(s, "{} — {summary}", m.name);
        let required: Vec<&str> = m.input_schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = m.input_schema["properties"].as_object() {
            for (name, p) in props {
                let ty = type_of(p);
                let req = if required.contains(&name.as_str()) {
                    ", required"
                } else {
                    ""
                };
                let doc = p["description"]
                    .as_str()
                    .unwrap_or_default()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(s, "  arg {name} ({ty}{req}): {doc}");
            }
        }
        let _ = writeln!(s, "  returns: {}", type_of(&m.output_schema));
        let _ = writeln!(s, "  effects: {} ({})", m.effects, m.effects.describe());
    }
    s
}

/// A schema's type, in a word or two.
fn type_of(schema: &Json) -> String {
    match &schema["type"] {
        Json::String(t) if t == "array" => format!("array of {}", type_of(&schema["items"])),
        Json::String(t) => t.clone(),
        Json::Array(ts) => ts
            .iter()
            .filter_map(Json::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema == &Json::Bool(true) || schema.as_object().is_some_and(|o| o.is_empty()) => {
            "any JSON".to_owned()
        }
        _ if schema.get("$ref").is_some() => "object".to_owned(),
        _ => "any JSON".to_owned(),
    }
}

pub(super) fn call(a: &CallArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let args: Json = match serde_json::from_str(&a.args) {
        Ok(v) => v,
        Err(e) => {
            writeln!(
                io.stderr,
                "error: the arguments are not JSON ({e}); write them as one JSON object in single quotes, e.g. cameleon call calc '{{\"expr\": \"1 + 2\"}}'"
            )?;
            return Ok(exit::INVALID);
        }
    };
    let base = a.base.clone().unwrap_or_else(|| PathBuf::from("."));
    let (rt, _registry) = match registry(a.capabilities.as_deref(), io)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    // The user's own call: that tool alone, granted; a net offered as a tool runs with this
    // generation, under its own `tools:` policy.
    let caps = rt.current().for_call(&a.tool, base);
    let result = caps
        .gate()
        .call_blocking(ToolCall::new(&a.tool, args).principal("cli"));
    if a.json {
        writeln!(
            io.stdout,
            "{}",
            serde_json::to_string(&result).unwrap_or_default()
        )?;
    } else if result.is_ok() {
        match &result.content {
            Json::String(s) => writeln!(io.stdout, "{s}")?,
            other => writeln!(
                io.stdout,
                "{}",
                serde_json::to_string_pretty(other).unwrap_or_default()
            )?,
        }
    } else {
        writeln!(
            io.stderr,
            "{} {}: {}",
            a.tool,
            result.status,
            result.error.as_deref().unwrap_or("no reason given")
        )?;
    }
    Ok(if result.is_ok() {
        exit::OK
    } else {
        exit::ERROR
    })
}
