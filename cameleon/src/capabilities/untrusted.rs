//! What only a trusted capabilities file may hold, and `grants:`: the checks
//! [`config`](super::config) applies to a file that is not trusted (docs/security.md, "The
//! project folder and its capabilities file").

use super::config::{Cx, Untrusted};
use super::kinds::Section;
use crate::cm::CmProblemKind;
use crate::cm::tree::{Kind, Node, Span};

/// A tool name as `#[tool]` takes one: letters, digits, `_`, `-`, at most 64.
fn is_tool_name(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The key granting tools.
pub(super) const GRANTS: &str = "grants";

/// Reads `grants: [TOOL, …]`, which only a trusted file may hold.
pub(super) fn read_grants(cx: &mut Cx<'_>, key: &Node, v: &Node, out: &mut Vec<(String, usize)>) {
    let items: &[Node] = match &v.kind {
        Kind::Seq(items) => items,
        Kind::Null => &[],
        other => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!(
                    "`grants` must be a list of tool names, not {}",
                    other.describe()
                ),
                Some("e.g. `grants: [write_file]`".into()),
            );
            return;
        }
    };
    let mut names = Vec::new();
    for item in items {
        match item.as_str() {
            Some(t) if is_tool_name(t) => names.push((t.to_owned(), item.span.line)),
            _ => cx.push(
                CmProblemKind::Schema,
                item.span,
                format!(
                    "`grants` lists tool names, and this is {}",
                    item.kind.describe()
                ),
                Some("`cameleon tools` lists the tools of this build".into()),
            ),
        }
    }
    if names.is_empty() {
        return;
    }
    if let Some(u) = cx.untrusted {
        let listed: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        let message = format!(
            "`grants:` would let the tools {} run unasked under a net's `allow:`, whatever their effects",
            listed.join(", ")
        );
        untrusted(cx, u, key.span, message);
        return;
    }
    out.extend(names);
}

/// A problem for a key only a trusted file may hold: what it would do, why the file is not
/// trusted, and how to trust it.
pub(super) fn untrusted(cx: &mut Cx<'_>, u: Untrusted, span: Span, what: String) {
    let file = cx.file.to_owned();
    let why = if u.changed {
        "it changed since you trusted it"
    } else {
        "it was found beside the .cm file, and you have not trusted it"
    };
    cx.push(
        CmProblemKind::Untrusted,
        span,
        format!("{what}, but `{file}` is not trusted: {why}"),
        Some(format!(
            "read the file; if you trust it, run `cameleon trust {file}` (a changed file must be trusted again), or give it with `--capabilities {file}`; your own settings belong in {}",
            user_file_shown()
        )),
    );
}

/// The user's capabilities file, as messages show it.
fn user_file_shown() -> String {
    super::trust::config_dir().map_or_else(
        || "your config directory".to_owned(),
        |d| format!("`{}`", d.join(super::trust::USER_FILE).display()),
    )
}

/// Keys that run a program (an entry that starts a server, e.g. a tool server's `command`).
const PROGRAM_KEYS: &[&str] = &["command"];

/// Checks entry `name`'s keys against what an untrusted file may hold: no `_env` key (it sends
/// a variable to the entry's host), no URL other than a loopback one (it sends the run's data
/// there), no program to run.
pub(super) fn check_trust(cx: &mut Cx<'_>, section: Section, name: &str, map: &[(Node, Node)]) {
    let Some(u) = cx.untrusted else {
        return;
    };
    let what = section.what();
    let url = map
        .iter()
        .find(|(k, _)| {
            k.as_str()
                .is_some_and(|k| k == "base_url" || k.ends_with("_url"))
        })
        .and_then(|(_, v)| v.as_str());
    let host = url
        .and_then(super::trust::host_of)
        .map_or_else(|| "its endpoint".to_owned(), |h| format!("`{h}`"));
    for (k, v) in map {
        let key = k.as_str().unwrap_or_default();
        let message = if key.ends_with("_env") {
            let var = v.as_str().unwrap_or_default();
            format!(
                "{what} `{name}` would send the environment variable `{var}` (its `{key}`) to {host}"
            )
        } else if key == "base_url" || key.ends_with("_url") {
            match v.as_str() {
                Some(u) if !super::trust::is_loopback_url(u) => format!(
                    "{what} `{name}` would send the run's prompts and data to {host} (its `{key}`), which is not a loopback address"
                ),
                _ => continue,
            }
        } else if PROGRAM_KEYS.contains(&key) {
            format!("{what} `{name}` would run a program (its `{key}`)")
        } else {
            continue;
        };
        untrusted(cx, u, k.span, message);
    }
}
