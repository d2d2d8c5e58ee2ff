//! Capabilities files (`cameleon.yaml`): read with the `.cm` loader's located YAML tree, so
//! every problem has its file, line, column and hint, like a `.cm` file's.
//!
//! ```yaml
//! chat:
//!   default: { kind: openai, base_url: "http://127.0.0.1:11434/v1", model: "llama3.2", api_key_env: "OPENAI_API_KEY" }
//! embedders:
//!   default: { kind: hash, dim: 384 }
//! memories:
//!   default: { kind: flat }
//! ```
//!
//! Every entry has a `kind:` (a [`ProviderKind`](super::ProviderKind) of the program); its other
//! keys are the kind's settings. A key ending in `_env` names an environment variable, which must
//! be set (its value is read when the provider calls out, and never written anywhere); a secret
//! written in the file itself (`api_key:`) is refused. `grants: [TOOL, …]` grants tools.
//!
//! A file that is not trusted (a `cameleon.yaml` found beside a `.cm` file that the user has
//! not recorded with `cameleon trust`) may not send an environment variable anywhere, send the
//! run's data to a host other than a loopback one, run a program or grant tools: each such key
//! is a problem of kind `untrusted`, and nothing is built (docs/security.md).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::kinds::{Build, KindConfig, Section, find, kinds};
use super::{CapabilitiesBuilder, CapabilityNames, Entry};
use crate::cm::tree::{self, Kind, Node, Span};
use crate::cm::{CmError, CmProblem, CmProblemKind};

/// The environment variable naming a capabilities file.
pub const ENV_VAR: &str = "CAMELEON_CAPABILITIES";

/// Largest capabilities file accepted, in bytes.
const MAX_BYTES: u64 = 1024 * 1024;

/// Keys that would hold a secret in the file itself.
const SECRET_KEYS: &[&str] = &["api_key", "key", "token", "secret", "password"];

const WHAT: &str = "capabilities file";

/// Whether a file is trusted, and if not, why not (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trust {
    /// Given explicitly (code, `--capabilities`, `CAMELEON_CAPABILITIES`, the user's config
    /// directory).
    Given,
    /// Found beside the `.cm` file: trusted when the user's trust store holds it with the hash
    /// of the bytes read.
    Project,
}

/// Reads the file at `path` into `b`.
pub(super) fn load_config_file(
    path: &Path,
    trust: Trust,
    b: &mut CapabilitiesBuilder,
) -> Result<(), CmError> {
    let (name, text, base, trusted) = read_file(path, trust)?;
    load_into(&name, &text, &base, trusted, b)
}

/// Reads the names the file at `path` defines into `names`, building nothing: its syntax, keys,
/// kinds and secrets are checked as [`load_config_file`] checks them, but no kind's factory is
/// called (so nothing it configures is started or contacted) and the environment variables it
/// names need not be set (they are needed to run, not to check).
pub(super) fn config_file_names(
    path: &Path,
    trust: Trust,
    names: &mut CapabilityNames,
) -> Result<(), CmError> {
    let (name, text, base, trusted) = read_file(path, trust)?;
    let read = read_entries(&name, &text, &base, false, trusted)?;
    for (section, cfg, _, _) in read.ready {
        names.define(section, &cfg.name, &format!("`{name}`"));
    }
    for (tool, _) in read.grants {
        names.grant(&tool);
    }
    Ok(())
}

/// The file's name in messages, its text, its folder, and why it is trusted (`None`: it is
/// not).
fn read_file(
    path: &Path,
    trust: Trust,
) -> Result<(String, String, PathBuf, Option<Untrusted>), CmError> {
    let name = path.display().to_string();
    let one = |message: String| {
        CmError::new(
            &name,
            "",
            vec![CmProblem::new(
                CmProblemKind::Io,
                "",
                Span {
                    line: 1,
                    column: 1,
                    ..Span::default()
                },
                message,
                None,
            )],
        )
        .about(WHAT)
    };
    let file = std::fs::File::open(path).map_err(|e| one(format!("cannot read `{name}`: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| one(format!("cannot read `{name}`: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(one(format!(
            "the file is larger than {MAX_BYTES} bytes, the limit for capabilities files"
        )));
    }
    let untrusted = match trust {
        Trust::Given => None,
        Trust::Project => {
            let store = super::trust::TrustStore::user().unwrap_or_default();
            (!store.trusts(path, &bytes)).then(|| Untrusted {
                changed: store.knows(path),
            })
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| one("the file is not UTF-8 text".into()))?;
    Ok((name, text, crate::cm::folder_of(path), untrusted))
}

/// A file that is not trusted: found beside the `.cm` file, not recorded with `cameleon trust`
/// (or recorded with other content).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Untrusted {
    /// Recorded once, with other content: it changed since.
    changed: bool,
}

/// Reads capabilities text (named `name` in messages) into a fresh builder and reports its
/// problems; what a test or a tool checking a file uses.
///
/// ```
/// let e = cameleon::capabilities::load_config_str("caps.yaml", "chat:\n  default: {kind: nope}\n")
///     .unwrap_err();
/// assert_eq!(e.problems()[0].line, 2);
/// assert!(e.to_string().contains("unknown chat model kind `nope`"));
/// ```
pub fn load_config_str(name: &str, text: &str) -> Result<(), CmError> {
    let mut b = CapabilitiesBuilder::new();
    load_into(name, text, Path::new("."), None, &mut b)
}

struct Cx<'s> {
    src: &'s str,
    problems: Vec<CmProblem>,
    /// Whether an `_env` key's variable must be set (to run, not to check names).
    check_env: bool,
    /// The file's name, and `Some` when it is not trusted.
    file: &'s str,
    untrusted: Option<Untrusted>,
}

impl Cx<'_> {
    fn push(&mut self, kind: CmProblemKind, span: Span, message: String, hint: Option<String>) {
        self.problems
            .push(CmProblem::new(kind, self.src, span, message, hint));
    }
}

fn load_into(
    name: &str,
    text: &str,
    base: &Path,
    untrusted: Option<Untrusted>,
    b: &mut CapabilitiesBuilder,
) -> Result<(), CmError> {
    let read = read_entries(name, text, base, true, untrusted)?;
    let (tree, built) = (read.tree, read.ready);
    let mut cx = Cx {
        src: text,
        problems: Vec::new(),
        check_env: true,
        file: name,
        untrusted,
    };
    for (tool, line) in read.grants {
        b.grant(tool, format!("`grants:` of `{name}` line {line}"));
    }
    for (section, cfg, line, build) in built {
        let from = format!("`{name}` line {line}");
        match build {
            Build::Chat(f) => match f(&cfg) {
                Ok(v) => {
                    b.chat.insert(cfg.name.clone(), Entry { value: v, from });
                }
                Err(e) => kind_error(&mut cx, &tree, section, &cfg, e),
            },
            Build::Embedder(f) => match f(&cfg) {
                Ok(v) => {
                    b.embedders
                        .insert(cfg.name.clone(), Entry { value: v, from });
                }
                Err(e) => kind_error(&mut cx, &tree, section, &cfg, e),
            },
            Build::Memory(f) => match f(&cfg) {
                Ok(v) => {
                    b.memories
                        .insert(cfg.name.clone(), Entry { value: v, from });
                }
                Err(e) => kind_error(&mut cx, &tree, section, &cfg, e),
            },
        }
    }
    if cx.problems.is_empty() {
        Ok(())
    } else {
        Err(CmError::new(name, text, cx.problems).about(WHAT))
    }
}

/// What a capabilities file holds, read and checked.
struct FileRead {
    tree: Node,
    ready: Vec<Ready>,
    /// `grants:`: each tool with its line.
    grants: Vec<(String, usize)>,
}

/// The file's located tree and its entries, ready to build; every problem of its shape (keys,
/// kinds, secrets, with `check_env` unset variables, and what an untrusted file may not hold)
/// at once.
fn read_entries(
    name: &str,
    text: &str,
    base: &Path,
    check_env: bool,
    untrusted: Option<Untrusted>,
) -> Result<FileRead, CmError> {
    let mut cx = Cx {
        src: text,
        problems: Vec::new(),
        check_env,
        file: name,
        untrusted,
    };
    let tree = match tree::parse(text) {
        Ok(t) => t,
        Err(e) => {
            let kind = if e.is_limit {
                CmProblemKind::Limit
            } else {
                CmProblemKind::Syntax
            };
            cx.push(kind, e.span, e.message, e.hint);
            return Err(CmError::new(name, text, cx.problems).about(WHAT));
        }
    };
    let mut built = Vec::new();
    let mut grants = Vec::new();
    match &tree.kind {
        Kind::Null => {}
        Kind::Map(entries) => {
            for (k, v) in entries {
                let key = k.as_str().unwrap_or_default();
                if key == GRANTS {
                    read_grants(&mut cx, k, v, &mut grants);
                    continue;
                }
                match Section::ALL.iter().find(|s| s.key() == key) {
                    Some(&section) => read_section(&mut cx, section, v, base, &mut built),
                    None => {
                        let keys = Section::ALL.map(Section::key);
                        let hint = match crate::util::did_you_mean(
                            key,
                            keys.into_iter().chain([GRANTS]),
                        ) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => "the keys of a capabilities file are `chat`, `embedders`, `memories` and `grants`".into(),
                        };
                        cx.push(
                            CmProblemKind::Schema,
                            k.span,
                            format!("unknown key `{key}` in the capabilities file"),
                            Some(hint),
                        );
                    }
                }
            }
        }
        other => cx.push(
            CmProblemKind::Schema,
            tree.span,
            format!(
                "a capabilities file is a mapping with `chat:`, `embedders:`, `memories:`, but this file holds {}",
                other.describe()
            ),
            None,
        ),
    }
    if !cx.problems.is_empty() {
        return Err(CmError::new(name, text, cx.problems).about(WHAT));
    }
    Ok(FileRead {
        tree,
        ready: built,
        grants,
    })
}

/// A tool name as `#[tool]` takes one: letters, digits, `_`, `-`, at most 64.
fn is_tool_name(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The key granting tools.
const GRANTS: &str = "grants";

/// Reads `grants: [TOOL, …]`, which only a trusted file may hold.
fn read_grants(cx: &mut Cx<'_>, key: &Node, v: &Node, out: &mut Vec<(String, usize)>) {
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
fn untrusted(cx: &mut Cx<'_>, u: Untrusted, span: Span, what: String) {
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
fn check_trust(cx: &mut Cx<'_>, section: Section, name: &str, map: &[(Node, Node)]) {
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

/// An entry ready to build: its section, config, line, and the kind's factory.
type Ready = (Section, KindConfig, usize, Build);

/// Reads `chat:` (or another section): a mapping of names to entries.
fn read_section(cx: &mut Cx<'_>, section: Section, v: &Node, base: &Path, out: &mut Vec<Ready>) {
    let entries = match &v.kind {
        Kind::Map(m) => m.as_slice(),
        Kind::Null => &[],
        other => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!(
                    "`{section}` must be a mapping of names to entries, not {}",
                    other.describe()
                ),
                Some(format!("e.g. `{section}: {{default: {{kind: …}}}}`")),
            );
            return;
        }
    };
    for (k, entry) in entries {
        let name = k.as_str().unwrap_or_default().to_owned();
        if let Some(r) = read_entry(cx, section, &name, entry, base) {
            out.push(r);
        }
    }
}

fn known_kinds(section: Section) -> Vec<&'static str> {
    kinds()
        .filter(|k| k.build.section() == section)
        .map(|k| k.kind)
        .collect()
}

/// Reads one entry `{kind: …, …}`, checking its kind, its `_env` variables and its secrets.
fn read_entry(
    cx: &mut Cx<'_>,
    section: Section,
    name: &str,
    entry: &Node,
    base: &Path,
) -> Option<Ready> {
    let what = section.what();
    let Some(map) = entry.as_map() else {
        cx.push(
            CmProblemKind::Schema,
            entry.span,
            format!(
                "{what} `{name}` must be a mapping with a `kind:`, not {}",
                entry.kind.describe()
            ),
            Some(format!("e.g. `{name}: {{kind: …}}`")),
        );
        return None;
    };
    let known = known_kinds(section);
    let kinds_hint = if known.is_empty() {
        format!(
            "this build has no {what} kinds (a crate providing them registers them with `submit_provider_kind!`)"
        )
    } else {
        format!("the {what} kinds of this build are: {}", known.join(", "))
    };
    let problems_before = cx.problems.len();
    check_trust(cx, section, name, map);
    let mut ok = cx.problems.len() == problems_before;
    let mut kind = None;
    let mut settings = serde_json::Map::new();
    for (k, v) in map {
        let key = k.as_str().unwrap_or_default();
        if key == "kind" {
            match v.as_str() {
                Some(s) => kind = Some((s.to_owned(), v.span)),
                None => {
                    cx.push(
                        CmProblemKind::Schema,
                        v.span,
                        format!("`kind` must be a name, not {}", v.kind.describe()),
                        Some(kinds_hint.clone()),
                    );
                    ok = false;
                }
            }
            continue;
        }
        if SECRET_KEYS.contains(&key) {
            cx.push(
                CmProblemKind::Schema,
                k.span,
                format!("`{key}` would write a secret in the capabilities file"),
                Some(format!(
                    "name the environment variable that holds it instead: `{key}_env: MY_VARIABLE`"
                )),
            );
            ok = false;
            continue;
        }
        if key.ends_with("_env") {
            match v.as_str() {
                Some(var)
                    if !cx.check_env || std::env::var_os(var).is_some_and(|x| !x.is_empty()) => {}
                Some(var) => {
                    cx.push(
                        CmProblemKind::Env,
                        v.span,
                        format!("environment variable `{var}` (named by `{key}` of {what} `{name}`) is not set"),
                        Some(format!("set it before running (`export {var}=…`); the value itself never goes in this file")),
                    );
                    ok = false;
                }
                None => {
                    cx.push(
                        CmProblemKind::Schema,
                        v.span,
                        format!(
                            "`{key}` names an environment variable: a word, not {}",
                            v.kind.describe()
                        ),
                        None,
                    );
                    ok = false;
                }
            }
        }
        match tree::from_node::<serde_json::Value>(v, cx.src) {
            Ok(j) => {
                settings.insert(key.to_owned(), j);
            }
            Err(e) => {
                for p in e.0 {
                    cx.push(
                        CmProblemKind::Schema,
                        p.span.unwrap_or(v.span),
                        p.message,
                        p.hint,
                    );
                }
                ok = false;
            }
        }
    }
    let Some((kind, kind_span)) = kind else {
        if ok {
            cx.push(
                CmProblemKind::Schema,
                entry.span,
                format!("{what} `{name}` has no `kind`"),
                Some(format!("add `kind: …`; {kinds_hint}")),
            );
        }
        return None;
    };
    let Some(pk) = find(section, &kind) else {
        let hint = match crate::util::did_you_mean(&kind, known.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None => kinds_hint,
        };
        cx.push(
            CmProblemKind::UnknownKind,
            kind_span,
            format!("unknown {what} kind `{kind}`"),
            Some(hint),
        );
        return None;
    };
    ok.then(|| {
        (
            section,
            KindConfig {
                name: name.to_owned(),
                kind,
                settings,
                base_dir: base.to_path_buf(),
            },
            entry.span.line,
            pk.build,
        )
    })
}

/// Locates a kind's refusal: at its setting, else at the entry.
fn kind_error(
    cx: &mut Cx<'_>,
    tree: &Node,
    section: Section,
    cfg: &KindConfig,
    e: super::KindError,
) {
    let entry = tree.get(section.key()).and_then(|s| s.get(&cfg.name));
    let span = match (&e.key, entry) {
        (Some(k), Some(n)) => n.get(k).map_or(n.span, |v| v.span),
        (None, Some(n)) => n.span,
        _ => tree.span,
    };
    cx.push(
        CmProblemKind::Schema,
        span,
        format!(
            "{} `{}` ({}): {}",
            section.what(),
            cfg.name,
            cfg.kind,
            e.message
        ),
        e.hint,
    );
}
