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

use super::caller::NetEntry;
use super::kinds::{Build, KindConfig, Section, find, kind_error, kinds};
use super::mcp_section::{MCP, McpEntry, read_mcp};
use super::nets_section::{NETS, read_nets};
use super::price::{PRICE, read_price};
use super::untrusted::{GRANTS, check_trust, read_grants};
use super::{CapabilitiesBuilder, CapabilityNames, Registered};
use crate::cm::tree::{self, Kind, Node, Span};
use crate::cm::{CmError, CmProblem, CmProblemKind};
use crate::operator::capability::Price;

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
    for (section, cfg, _, _, _) in read.ready {
        names.define(section, &cfg.name, &format!("`{name}`"));
    }
    for (tool, _) in read.grants {
        names.grant(&tool);
    }
    for server in read.mcp {
        names.mcp_server(&server.name, &format!("`{name}` line {}", server.line));
    }
    for net in read.nets {
        names.tool(&net.name);
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
pub(super) struct Untrusted {
    /// Recorded once, with other content: it changed since.
    pub(super) changed: bool,
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

pub(super) struct Cx<'s> {
    src: &'s str,
    problems: Vec<CmProblem>,
    /// Whether an `_env` key's variable must be set (to run, not to check names).
    check_env: bool,
    /// The file's name, and `Some` when it is not trusted.
    pub(super) file: &'s str,
    pub(super) untrusted: Option<Untrusted>,
}

impl Cx<'_> {
    /// The file's text.
    pub(super) fn src(&self) -> &str {
        self.src
    }

    /// How many problems so far.
    pub(super) fn problems_len(&self) -> usize {
        self.problems.len()
    }

    /// Whether an `_env` key's variable must be set (to run, not to check names).
    pub(super) fn check_env(&self) -> bool {
        self.check_env
    }

    pub(super) fn push(
        &mut self,
        kind: CmProblemKind,
        span: Span,
        message: String,
        hint: Option<String>,
    ) {
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
    let mut read = read_entries(name, text, base, true, untrusted)?;
    let (tree, built) = (read.tree, std::mem::take(&mut read.ready));
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
    for net in read.nets {
        b.net_tool(net);
    }
    #[cfg(feature = "mcp")]
    for server in read.mcp {
        b.mcp_server(super::mcp_section::config(
            server,
            name,
            base,
            untrusted.is_none(),
        ));
    }
    for (section, cfg, line, build, price) in built {
        let from = format!("`{name}` line {line}");
        match build {
            Build::Chat(f) => match f(&cfg) {
                Ok(v) => {
                    b.chat.insert(
                        cfg.name.clone(),
                        Registered {
                            value: v,
                            from,
                            price,
                        },
                    );
                }
                Err(e) => kind_error(&mut cx, &tree, section, &cfg, e),
            },
            Build::Embedder(f) => match f(&cfg) {
                Ok(v) => {
                    b.embedders.insert(
                        cfg.name.clone(),
                        Registered {
                            value: v,
                            from,
                            price,
                        },
                    );
                }
                Err(e) => kind_error(&mut cx, &tree, section, &cfg, e),
            },
            Build::Memory(f) => match f(&cfg) {
                Ok(v) => {
                    b.memories.insert(
                        cfg.name.clone(),
                        Registered {
                            value: v,
                            from,
                            price,
                        },
                    );
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
    /// `mcp:`: the MCP servers.
    mcp: Vec<McpEntry>,
    /// `nets:`: the nets offered as tools.
    nets: Vec<NetEntry>,
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
    let mut mcp = Vec::new();
    let mut nets = Vec::new();
    match &tree.kind {
        Kind::Null => {}
        Kind::Map(entries) => {
            for (k, v) in entries {
                let key = k.as_str().unwrap_or_default();
                if key == GRANTS {
                    read_grants(&mut cx, k, v, &mut grants);
                    continue;
                }
                if key == NETS {
                    read_nets(&mut cx, v, base, &mut nets);
                    continue;
                }
                if key == MCP {
                    if cfg!(feature = "mcp") {
                        read_mcp(&mut cx, v, &mut mcp);
                    } else {
                        cx.push(
                            CmProblemKind::Schema,
                            k.span,
                            "this build has no MCP client: `mcp:` needs Caméléon built with the `mcp` feature".into(),
                            Some("build with `--features mcp` (a default feature)".into()),
                        );
                    }
                    continue;
                }
                match Section::ALL.iter().find(|s| s.key() == key) {
                    Some(&section) => read_section(&mut cx, section, v, base, &mut built),
                    None => {
                        let keys = Section::ALL.map(Section::key);
                        let hint = match crate::util::did_you_mean(
                            key,
                            keys.into_iter().chain([GRANTS, MCP, NETS]),
                        ) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => "the keys of a capabilities file are `chat`, `embedders`, `memories`, `mcp`, `nets` and `grants`".into(),
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
        mcp,
        nets,
    })
}

/// An entry ready to build: its section, config, line, the kind's factory, and its price.
type Ready = (Section, KindConfig, usize, Build, Option<Price>);

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
    let mut price = None;
    let mut settings = serde_json::Map::new();
    for (k, v) in map {
        let key = k.as_str().unwrap_or_default();
        if key == PRICE {
            price = read_price(cx, section, name, v);
            ok &= price.is_some();
            continue;
        }
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
            price,
        )
    })
}
