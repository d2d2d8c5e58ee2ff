//! Loading: text → located tree → typed declarations → operators from the catalogue → a
//! validated [`Net`], collecting every problem on the way.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::{CmError, CmProblem, CmProblemKind};
use super::format::{CmConfig, CmConnection, CmFile, CmOperator, FILE_KEYS, FORMAT_VERSION};
use super::limits;
use super::tree::{self, DeError, Node, Span};
use crate::catalogue::{BuildContext, BuildError, Catalogue};
use crate::net::{End, Location, Net, NetConfig, ProblemKind};
use crate::operator::{Firing, OpError, OpSpec, Operator};

/// Loads `.cm` files: which catalogue resolves operator types, where relative paths point, and
/// whether file-reading operators may leave that folder.
///
/// ```
/// use cameleon::cm::Loader;
///
/// let text = "operators:\n  - {id: hi, type: source, params: {value: hi}}\n  - {id: out, type: sink}\nconnections:\n  - {from: hi.out_data, to: out.in_data}\n";
/// let net = Loader::new().file_name("hello.cm").load_str(text)?;
/// assert_eq!(net.operators().len(), 2);
/// # Ok::<(), cameleon::cm::CmError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Loader<'c> {
    catalogue: &'c Catalogue,
    base_dir: Option<PathBuf>,
    allow_outside: bool,
    name: Option<String>,
}

impl Default for Loader<'static> {
    fn default() -> Self {
        Loader::new()
    }
}

impl Loader<'static> {
    /// A loader using the global catalogue, paths relative to the current directory.
    pub fn new() -> Self {
        Loader {
            catalogue: Catalogue::global(),
            base_dir: None,
            allow_outside: false,
            name: None,
        }
    }
}

impl<'c> Loader<'c> {
    /// Resolves operator types in `catalogue` instead of the global one.
    pub fn catalogue<'d>(self, catalogue: &'d Catalogue) -> Loader<'d> {
        Loader {
            catalogue,
            base_dir: self.base_dir,
            allow_outside: self.allow_outside,
            name: self.name,
        }
    }

    /// The folder file-reading operators resolve relative paths against (and are confined
    /// to). [`load_file`](Self::load_file) uses the file's folder unless this is set.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Lets file-reading operators read outside their folder (off by default).
    pub fn allow_outside(mut self, allow: bool) -> Self {
        self.allow_outside = allow;
        self
    }

    /// The name errors show for the text (default `<input>`, or the path for
    /// [`load_file`](Self::load_file)).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    fn shown_name(&self) -> &str {
        self.name.as_deref().unwrap_or("<input>")
    }

    /// Loads a net from `.cm` text.
    pub fn load_str(&self, text: &str) -> Result<Net, CmError> {
        let mut cx = Cx {
            src: text,
            problems: Vec::new(),
        };
        let net = self.load_inner(&mut cx);
        match net {
            Some(net) if cx.problems.is_empty() => Ok(net),
            _ => Err(CmError::new(self.shown_name(), text, cx.problems)),
        }
    }

    /// Reads and loads the `.cm` file at `path`. Errors name the file; relative paths of
    /// file-reading operators are relative to the file's folder.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Net, CmError> {
        let path = path.as_ref();
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| path.display().to_string());
        let text = read_text(path, &name)?;
        let base = self.base_dir.clone().unwrap_or_else(|| {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        });
        Loader {
            catalogue: self.catalogue,
            base_dir: Some(base),
            allow_outside: self.allow_outside,
            name: Some(name),
        }
        .load_str(&text)
    }

    /// Reads `.cm` text into its declarations, without resolving operators or checking the
    /// net: the file's shape only (for tools that edit files).
    pub fn parse_str(&self, text: &str) -> Result<CmFile, CmError> {
        let mut cx = Cx {
            src: text,
            problems: Vec::new(),
        };
        let tree = parse_tree(&mut cx);
        let decl = tree.as_ref().and_then(|t| read_decls(&mut cx, t, text));
        match decl {
            Some(d) if cx.problems.is_empty() => Ok(d.into_file()),
            _ => Err(CmError::new(self.shown_name(), text, cx.problems)),
        }
    }

    fn load_inner(&self, cx: &mut Cx<'_>) -> Option<Net> {
        let tree = parse_tree(cx)?;
        let src = cx.src;
        let decls = read_decls(cx, &tree, src)?;
        let build_cx = BuildContext {
            base_dir: self.base_dir.clone(),
            allow_outside: self.allow_outside,
        };

        let mut b = Net::builder(decls.name.clone().unwrap_or_default());
        b.config(net_config(decls.config.as_ref()));

        // Operators. `ops[i]` is the declaration index of the builder's i-th operator.
        let mut ops: Vec<usize> = Vec::new();
        let mut placeholders: HashSet<usize> = HashSet::new();
        let mut failed: HashSet<String> = HashSet::new();
        for (i, (node, decl)) in decls.operators.iter().enumerate() {
            let Some(decl) = decl else {
                if let Some(id) = node.get("id").and_then(Node::as_str) {
                    failed.insert(id.to_owned());
                }
                continue;
            };
            let pos = match (decl.x, decl.y) {
                (Some(x), Some(y)) => Some((x, y)),
                (None, None) => None,
                (x, _) => {
                    let (have, missing) = if x.is_some() { ("x", "y") } else { ("y", "x") };
                    let span = node.entry(have).map_or(node.span, |(k, _)| k.span);
                    cx.push(
                        CmProblemKind::Schema,
                        span,
                        format!("operator `{}` has `{have}` but no `{missing}`", decl.id),
                        Some("give both `x` and `y`, or neither".to_owned()),
                    );
                    None
                }
            };
            let type_id = decl.type_.as_deref().unwrap_or(&decl.id);
            let type_node = node.get("type").or_else(|| node.get("id"));
            let params = decl.params.clone().unwrap_or_default();
            let op: Box<dyn Operator> = match self.catalogue.build(type_id, &params, &build_cx) {
                Ok(op) => op,
                Err(BuildError::UnknownType { id, suggestion }) => {
                    let hint = match suggestion {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "`cameleon catalogue` lists the operator types".to_owned(),
                    };
                    let mut msg = format!("unknown operator type `{id}`");
                    if decl.type_.is_none() {
                        msg.push_str(" (without `type:`, an operator's `id` is its type)");
                    }
                    cx.push(
                        CmProblemKind::UnknownType,
                        type_node.map_or(node.span, |n| n.span),
                        msg,
                        Some(hint),
                    );
                    failed.insert(decl.id.clone());
                    continue;
                }
                Err(BuildError::Param(e)) => {
                    let params_node = node.entry("params");
                    let span = match (&e.param, params_node) {
                        (Some(p), Some((_, pv))) => pv
                            .entry(p)
                            .map(|(k, v)| join(k.span, v.span))
                            .unwrap_or_else(|| params_node.map_or(node.span, |(k, _)| k.span)),
                        (_, Some((k, _))) => k.span,
                        (_, None) => type_node.map_or(node.span, |n| n.span),
                    };
                    cx.push(
                        CmProblemKind::Param,
                        span,
                        format!("`{}` ({type_id}): {}", decl.id, e.message),
                        e.hint.clone(),
                    );
                    // Stand in with the default instance's ports so connections are still checked.
                    let spec = self.catalogue.get(type_id).map(|entry| (entry.spec)());
                    match spec {
                        Some(spec) => {
                            placeholders.insert(ops.len());
                            Box::new(Placeholder(spec))
                        }
                        None => {
                            failed.insert(decl.id.clone());
                            continue;
                        }
                    }
                }
            };
            let mut o = b.add_boxed(decl.id.clone(), op);
            if let Some((x, y)) = pos {
                o = o.at(x, y);
            }
            if let Some(l) = &decl.label {
                o = o.label(l.clone());
            }
            if let Some(n) = decl.instance {
                o = o.instance(n);
            }
            match decl.timeout_ms {
                Some(0) => {
                    let span = node.entry("timeout_ms").map_or(node.span, |(_, v)| v.span);
                    cx.push(
                        CmProblemKind::Schema,
                        span,
                        format!(
                            "operator `{}` has `timeout_ms: 0`; no firing can finish in 0 ms",
                            decl.id
                        ),
                        Some("give a timeout of at least 1 ms, or remove `timeout_ms`".to_owned()),
                    );
                }
                Some(ms) => o = o.timeout_ms(ms),
                None => {}
            }
            if let Some(r) = decl.retry {
                o.retry(r.max, r.backoff_ms);
            }
            ops.push(i);
        }

        // Connections. `conns[i]` is the declaration index of the builder's i-th connection.
        let mut conns: Vec<usize> = Vec::new();
        for (i, (_, decl)) in decls.connections.iter().enumerate() {
            if let Some(c) = decl {
                b.connect(c.from.clone(), c.to.clone());
                conns.push(i);
            }
        }

        match b.build() {
            Ok(net) => Some(net),
            Err(e) => {
                // Operators with a connection meant for one of their inputs whose port is
                // wrong: "input not connected" would only repeat that problem.
                let broken_targets: HashSet<String> = e
                    .problems
                    .iter()
                    .filter_map(|p| match p.at {
                        Location::Connection {
                            index,
                            end: Some(End::To),
                        } => {
                            let (_, c) = decls.connections.get(*conns.get(index)?)?;
                            endpoint_op(&c.as_ref()?.to).map(str::to_owned)
                        }
                        _ => None,
                    })
                    .collect();
                let map = Mapping {
                    decls: &decls,
                    ops: &ops,
                    conns: &conns,
                    placeholders: &placeholders,
                    failed: &failed,
                    broken_targets: &broken_targets,
                };
                for p in e.problems {
                    if let Some(span) = map.locate(&p) {
                        cx.push(CmProblemKind::Net(p.kind), span, p.message, p.hint);
                    }
                }
                None
            }
        }
    }
}

/// How the builder's operators and connections map back to the declarations, and what was
/// already reported.
struct Mapping<'a, 't> {
    decls: &'a Decls<'t>,
    /// `ops[i]`: the declaration index of the builder's i-th operator.
    ops: &'a [usize],
    /// `conns[i]`: the declaration index of the builder's i-th connection.
    conns: &'a [usize],
    /// Builder indices of operators standing in for ones with bad params.
    placeholders: &'a HashSet<usize>,
    /// Names of operators that could not be built (unknown type, unreadable declaration).
    failed: &'a HashSet<String>,
    /// Names of operators a connection with a wrong input port was meant for.
    broken_targets: &'a HashSet<String>,
}

impl Mapping<'_, '_> {
    /// Where a net problem is in the file, or `None` when it only follows from a problem
    /// already reported (a connection to an operator whose type is unknown).
    fn locate(&self, p: &crate::net::Problem) -> Option<Span> {
        let (decls, ops, conns, placeholders, failed) = (
            self.decls,
            self.ops,
            self.conns,
            self.placeholders,
            self.failed,
        );
        let top = Span {
            line: 1,
            column: 1,
            ..Span::default()
        };
        match p.at {
            Location::Net => Some(top),
            Location::Operator(i) => {
                let (node, decl) = decls.operators.get(*ops.get(i)?)?;
                if p.kind == ProblemKind::UnconnectedInput {
                    // Its ports depend on the bad params, or its input comes from an operator
                    // whose type is unknown: both are already reported.
                    let name = decl.as_ref().map(|d| d.id.as_str());
                    let fed_by_failed = decls.connections.iter().any(|(_, c)| {
                        c.as_ref().is_some_and(|c| {
                            endpoint_op(&c.to) == name
                                && endpoint_op(&c.from).is_some_and(|o| failed.contains(o))
                        })
                    });
                    let broken = name.is_some_and(|n| self.broken_targets.contains(n));
                    if placeholders.contains(&i) || fed_by_failed || broken {
                        return None;
                    }
                }
                Some(node.get("id").map_or(node.span, |n| n.span))
            }
            Location::Connection { index, end } => {
                let (node, decl) = decls.connections.get(*conns.get(index)?)?;
                let decl = decl.as_ref()?;
                if let Some(end) = end {
                    let text = match end {
                        End::From => &decl.from,
                        End::To => &decl.to,
                    };
                    if let Some(o) = endpoint_op(text) {
                        if failed.contains(o) && p.kind == ProblemKind::UnknownOperator {
                            return None;
                        }
                        let is_placeholder = decls
                            .operators
                            .iter()
                            .enumerate()
                            .filter(|(_, (_, d))| d.as_ref().is_some_and(|d| d.id == o))
                            .any(|(di, _)| {
                                ops.iter()
                                    .position(|&x| x == di)
                                    .is_some_and(|bi| placeholders.contains(&bi))
                            });
                        if is_placeholder
                            && matches!(
                                p.kind,
                                ProblemKind::UnknownPort | ProblemKind::WrongDirection
                            )
                        {
                            return None;
                        }
                    }
                    let key = match end {
                        End::From => "from",
                        End::To => "to",
                    };
                    return Some(node.get(key).map_or(node.span, |n| n.span));
                }
                Some(match (node.entry("from"), node.entry("to")) {
                    (Some((fk, fv)), Some((tk, tv))) => {
                        join(join(fk.span, fv.span), join(tk.span, tv.span))
                    }
                    _ => node.span,
                })
            }
        }
    }
}

/// The operator named by an endpoint `op.port`.
fn endpoint_op(text: &str) -> Option<&str> {
    text.trim().split_once('.').map(|(o, _)| o)
}

/// The smallest span covering `a` and `b`.
fn join(a: Span, b: Span) -> Span {
    let (first, _) = if a.offset <= b.offset { (a, b) } else { (b, a) };
    let end = (a.offset + a.len).max(b.offset + b.len);
    Span {
        offset: first.offset,
        len: end - first.offset,
        line: first.line,
        column: first.column,
    }
}

fn net_config(c: Option<&CmConfig>) -> NetConfig {
    let mut config = NetConfig::default();
    if let Some(c) = c {
        if let Some(m) = c.mode {
            config.mode = m;
        }
        if let Some(n) = c.max_loop_iterations {
            config.max_loop_iterations = n;
        }
    }
    config
}

/// Reads a file within the size limit, as UTF-8 text.
fn read_text(path: &Path, name: &str) -> Result<String, CmError> {
    let io_err = |message: String, hint: Option<String>, kind: CmProblemKind| {
        CmError::new(
            name,
            "",
            vec![CmProblem::new(
                kind,
                "",
                Span {
                    line: 1,
                    column: 1,
                    ..Span::default()
                },
                message,
                hint,
            )],
        )
    };
    let file = std::fs::File::open(path).map_err(|e| {
        io_err(
            format!("cannot read `{}`: {e}", path.display()),
            None,
            CmProblemKind::Io,
        )
    })?;
    let mut bytes = Vec::new();
    let limit = limits::MAX_FILE_BYTES as u64;
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| {
        io_err(
            format!("cannot read `{}`: {e}", path.display()),
            None,
            CmProblemKind::Io,
        )
    })?;
    if bytes.len() as u64 > limit {
        return Err(io_err(
            format!("the file is larger than {limit} bytes, the limit for .cm files"),
            Some("a .cm file holds a topology, not data: read large inputs with a `text_file` or `json_file` operator".into()),
            CmProblemKind::Limit,
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let prefix = String::from_utf8_lossy(&bytes[..valid]).into_owned();
        let line = prefix.matches('\n').count() + 1;
        let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let src = String::from_utf8_lossy(bytes).into_owned();
        CmError::new(
            name,
            &src,
            vec![CmProblem::new(
                CmProblemKind::Syntax,
                &src,
                Span {
                    offset: valid,
                    len: 0,
                    line,
                    column,
                },
                format!("the file is not UTF-8 text (invalid byte at offset {valid})"),
                Some("save the file as UTF-8".into()),
            )],
        )
    })
}

/// The problems found so far, against the source text.
struct Cx<'s> {
    src: &'s str,
    problems: Vec<CmProblem>,
}

impl Cx<'_> {
    fn push(&mut self, kind: CmProblemKind, span: Span, message: String, hint: Option<String>) {
        self.problems
            .push(CmProblem::new(kind, self.src, span, message, hint));
    }

    fn de(&mut self, e: DeError, fallback: Span) {
        for p in e.0 {
            self.push(
                CmProblemKind::Schema,
                p.span.unwrap_or(fallback),
                p.message,
                p.hint,
            );
        }
    }
}

/// The declarations of a file, each next to its tree node; `None` where a declaration could not
/// be read (its problems are reported).
struct Decls<'t> {
    name: Option<String>,
    version: u32,
    config: Option<CmConfig>,
    operators: Vec<(&'t Node, Option<CmOperator>)>,
    connections: Vec<(&'t Node, Option<CmConnection>)>,
}

impl Decls<'_> {
    fn into_file(self) -> CmFile {
        CmFile {
            cameleon: self.version,
            name: self.name,
            config: self.config,
            operators: self.operators.into_iter().filter_map(|(_, d)| d).collect(),
            connections: self
                .connections
                .into_iter()
                .filter_map(|(_, d)| d)
                .collect(),
        }
    }
}

/// Parses the text into a tree, or reports why it cannot.
fn parse_tree(cx: &mut Cx<'_>) -> Option<Node> {
    match tree::parse(cx.src) {
        Ok(t) => Some(t),
        Err(e) => {
            let kind = if e.is_limit {
                CmProblemKind::Limit
            } else {
                CmProblemKind::Syntax
            };
            cx.push(kind, e.span, e.message, e.hint);
            None
        }
    }
}

/// Reads the declarations out of the tree: each top-level key, each operator and each
/// connection on its own, so every mistake is reported.
fn read_decls<'t>(cx: &mut Cx<'_>, tree: &'t Node, src: &'t str) -> Option<Decls<'t>> {
    let top = tree.span;
    let Some(entries) = tree.as_map() else {
        let found = tree.kind.describe();
        cx.push(
            CmProblemKind::Schema,
            top,
            format!("a .cm file is a mapping with `operators:` and `connections:`, but this file holds {found}"),
            Some("start from `cameleon catalogue` and the examples: `cameleon: 1`, `name:`, `operators:`, `connections:`".into()),
        );
        return None;
    };
    let mut d = Decls {
        name: None,
        version: FORMAT_VERSION,
        config: None,
        operators: Vec::new(),
        connections: Vec::new(),
    };
    let mut seen_operators = false;
    for (k, v) in entries {
        let key = match k.as_str() {
            Some(s) => s,
            None => {
                cx.push(
                    CmProblemKind::Schema,
                    k.span,
                    format!("a key must be a word, not {}", k.kind.describe()),
                    None,
                );
                continue;
            }
        };
        match key {
            "cameleon" => {
                if let Some(n) = read_one::<u32>(cx, v, src) {
                    if n != FORMAT_VERSION {
                        cx.push(
                            CmProblemKind::Version,
                            v.span,
                            format!("format version {n} is not supported; this cameleon reads version {FORMAT_VERSION}"),
                            Some(format!("write `cameleon: {FORMAT_VERSION}`, or use a newer cameleon")),
                        );
                    }
                    d.version = n;
                }
            }
            "name" => d.name = read_one(cx, v, src),
            "config" => {
                d.config = read_one::<Option<CmConfig>>(cx, v, src).flatten();
                if let Some(c) = &d.config
                    && c.max_loop_iterations == Some(0)
                {
                    let span = v.get("max_loop_iterations").map_or(v.span, |n| n.span);
                    cx.push(
                        CmProblemKind::Schema,
                        span,
                        "`max_loop_iterations` must be at least 1".into(),
                        Some("it bounds how many times one operator may fire in a run".into()),
                    );
                }
            }
            "operators" => {
                seen_operators = true;
                for item in items(cx, v, "operators", "an operator: `- id: …`") {
                    d.operators.push((item, read_one(cx, item, src)));
                }
            }
            "connections" => {
                for item in items(
                    cx,
                    v,
                    "connections",
                    "a connection: `- from: a.out_data`, `to: b.in_data`",
                ) {
                    d.connections.push((item, read_one(cx, item, src)));
                }
            }
            other => {
                let hint = match crate::util::did_you_mean(other, FILE_KEYS.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("the top-level keys are: {}", FILE_KEYS.join(", ")),
                };
                cx.push(
                    CmProblemKind::Schema,
                    k.span,
                    format!("unknown key `{other}` in the file"),
                    Some(hint),
                );
            }
        }
    }
    if !seen_operators {
        cx.push(
            CmProblemKind::Schema,
            top,
            "missing key `operators`".into(),
            Some("list the operator instances under `operators:` (`- id: …`, `type: …`)".into()),
        );
    }
    Some(d)
}

/// The items of a list value; `null` (an empty `operators:`) is an empty list.
fn items<'t>(cx: &mut Cx<'_>, v: &'t Node, key: &str, item: &str) -> &'t [Node] {
    match &v.kind {
        tree::Kind::Seq(s) => s,
        tree::Kind::Null => &[],
        other => {
            cx.push(
                CmProblemKind::Schema,
                v.span,
                format!("`{key}` must be a list, not {}", other.describe()),
                Some(format!("write one `- ` item per line, each {item}")),
            );
            &[]
        }
    }
}

/// Reads one declaration.
fn read_one<T: serde::de::DeserializeOwned>(cx: &mut Cx<'_>, node: &Node, src: &str) -> Option<T> {
    match tree::from_node::<T>(node, src) {
        Ok(v) => Some(v),
        Err(e) => {
            // Unknown keys are reported, then the declaration is read again without them, so its
            // ports and connections are still checked and no follow-on problem ("feeds
            // nothing", "not connected") hides the real one.
            let at: Vec<_> = e.0.iter().filter_map(|p| p.span).collect();
            let retry = node
                .without_keys_at(&at)
                .and_then(|pruned| tree::from_node::<T>(&pruned, src).ok());
            cx.de(e, node.span);
            retry
        }
    }
}

/// An operator whose params are bad, standing in with the default instance's ports so the
/// rest of the net is still checked. It is never run: a net holding one is not returned.
struct Placeholder(OpSpec);

impl Operator for Placeholder {
    fn spec(&self) -> OpSpec {
        self.0.clone()
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new("this operator's params are invalid"))
    }
}
