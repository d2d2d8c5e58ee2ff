//! The `nets:` section of a capabilities file: nets offered as tools (docs/tools.md#nets-as-tools),
//! `NAME: FILE` or `NAME: {file: FILE, max_depth: N}`, each `.cm` file inside the capabilities
//! file's folder. Any file may hold it, trusted or not: a net-tool grants nothing (its calls
//! go through the caller's gate, its own tools through the caller's policy and the user's
//! grants), and it is offered only once `check --verify` holds for it.

use std::path::{Component, Path};

use super::caller::{DEFAULT_MAX_DEPTH, NetEntry};
use super::config::Cx;
use crate::cm::CmProblemKind;
use crate::cm::tree::{Kind, Node};

/// The key of the section.
pub(super) const NETS: &str = "nets";

const EXAMPLE: &str = "e.g. `nets: {summarize: \"nets/summarize.cm\"}` or `nets: {calculator: {file: \"nets/calculator.cm\", max_depth: 2}}`";

/// A net-tool's name: letters, digits, `_`, `-` (no `.`, which names an MCP server's tools),
/// at most 64.
fn is_net_name(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads `nets: {NAME: FILE | {file, max_depth}, …}` of the file in folder `base`, every
/// problem at once.
pub(super) fn read_nets(cx: &mut Cx<'_>, v: &Node, base: &Path, out: &mut Vec<NetEntry>) {
    let entries = match &v.kind {
        Kind::Map(m) => m.as_slice(),
        Kind::Null => &[],
        other => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!(
                    "`nets` must be a mapping of tool names to `.cm` files, not {}",
                    other.describe()
                ),
                Some(EXAMPLE.into()),
            );
            return;
        }
    };
    for (k, entry) in entries {
        let name = k.as_str().unwrap_or_default();
        if !is_net_name(name) {
            cx.push(
                CmProblemKind::Schema,
                k.span,
                format!("`{name}` is not a tool name"),
                Some("a name is letters, digits, `_` and `-`".into()),
            );
            continue;
        }
        let (file, max_depth) = match &entry.kind {
            Kind::Map(m) => {
                let mut file = None;
                let mut depth = DEFAULT_MAX_DEPTH;
                for (key, val) in m {
                    match key.as_str().unwrap_or_default() {
                        "file" => file = Some(val),
                        "max_depth" => match &val.kind {
                            Kind::UInt(n) if (1..=64).contains(n) => depth = *n as u32,
                            Kind::Int(n) if (1..=64).contains(n) => depth = *n as u32,
                            other => cx.push(
                                CmProblemKind::Schema,
                                val.span,
                                format!(
                                    "`max_depth` of net-tool `{name}` must be a whole number from 1 to 64, not {}",
                                    other.describe()
                                ),
                                Some(format!("the default is {DEFAULT_MAX_DEPTH}")),
                            ),
                        },
                        other => cx.push(
                            CmProblemKind::Schema,
                            key.span,
                            format!("unknown key `{other}` of net-tool `{name}`"),
                            Some("the keys of a net-tool are `file` and `max_depth`".into()),
                        ),
                    }
                }
                let Some(file) = file else {
                    cx.push(
                        CmProblemKind::Schema,
                        entry.span,
                        format!("net-tool `{name}` has no `file`"),
                        Some(EXAMPLE.into()),
                    );
                    continue;
                };
                (file, depth)
            }
            _ => (entry, DEFAULT_MAX_DEPTH),
        };
        let Some(path) = file.as_str().filter(|s| !s.is_empty()) else {
            cx.push(
                CmProblemKind::Schema,
                file.span,
                format!(
                    "net-tool `{name}` names a `.cm` file: a path, not {}",
                    file.kind.describe()
                ),
                Some(EXAMPLE.into()),
            );
            continue;
        };
        match confined(base, path) {
            Ok(resolved) => out.push(NetEntry {
                name: name.to_owned(),
                file: resolved,
                max_depth,
                from: format!("`{}` line {}", cx.file, k.span.line),
            }),
            Err(why) => cx.push(
                CmProblemKind::Schema,
                file.span,
                format!("net-tool `{name}`: {why}"),
                Some(
                    "a net offered as a tool is a `.cm` file in the capabilities file's folder or below it, named relative to it"
                        .into(),
                ),
            ),
        }
    }
}

/// `path` resolved against `base`, if it stays inside it: relative, no `..`, and (once the
/// file exists) no symbolic link leading out.
fn confined(base: &Path, path: &str) -> Result<std::path::PathBuf, String> {
    let p = Path::new(path);
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(format!(
            "`{path}` leads out of the capabilities file's folder (an absolute path or `..`)"
        ));
    }
    let joined = base.join(p);
    if let (Ok(b), Ok(f)) = (base.canonicalize(), joined.canonicalize())
        && !f.starts_with(&b)
    {
        return Err(format!(
            "`{path}` leads out of the capabilities file's folder (through a symbolic link)"
        ));
    }
    Ok(joined)
}
