//! Text → tree → typed declarations: the problems found so far ([`LoadCx`]), and reading each
//! top-level key, operator and connection on its own so that every mistake is reported.

use crate::cm::error::{CmProblem, CmProblemKind};
use crate::cm::format::{
    CmConfig, CmConnection, CmFile, CmOperator, CmTools, FILE_KEYS, FORMAT_VERSION,
};
use crate::cm::tree::{self, DeError, Node, Span};

/// The problems found so far, against the source text.
pub(super) struct LoadCx<'s> {
    pub(super) src: &'s str,
    pub(super) problems: Vec<CmProblem>,
}

impl LoadCx<'_> {
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

    pub(super) fn de(&mut self, e: DeError, fallback: Span) {
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
pub(super) struct Decls<'t> {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) version: u32,
    pub(super) config: Option<CmConfig>,
    /// `tools:`, next to its node.
    pub(super) tools: Option<(&'t Node, CmTools)>,
    pub(super) operators: Vec<(&'t Node, Option<CmOperator>)>,
    pub(super) connections: Vec<(&'t Node, Option<CmConnection>)>,
}

impl Decls<'_> {
    pub(super) fn into_file(self) -> CmFile {
        CmFile {
            cameleon: self.version,
            name: self.name,
            description: self.description,
            config: self.config,
            tools: self.tools.map(|(_, t)| t),
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
pub(super) fn parse_tree(cx: &mut LoadCx<'_>) -> Option<Node> {
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
pub(super) fn read_decls<'t>(
    cx: &mut LoadCx<'_>,
    tree: &'t Node,
    src: &'t str,
) -> Option<Decls<'t>> {
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
        description: None,
        version: FORMAT_VERSION,
        config: None,
        tools: None,
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
            "description" => d.description = read_one(cx, v, src),
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
                if let Some(b) = d.config.as_ref().and_then(|c| c.budget) {
                    check_budget(cx, v.get("budget").unwrap_or(v), b);
                }
            }
            "tools" => {
                // `tools:` with nothing under it is a policy allowing nothing.
                d.tools =
                    read_one::<Option<CmTools>>(cx, v, src).map(|t| (v, t.unwrap_or_default()));
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
fn items<'t>(cx: &mut LoadCx<'_>, v: &'t Node, key: &str, item: &str) -> &'t [Node] {
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
fn read_one<T: serde::de::DeserializeOwned>(
    cx: &mut LoadCx<'_>,
    node: &Node,
    src: &str,
) -> Option<T> {
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

/// `config: budget:` bounds something: `tokens` at least 1, `cost_usd` a finite amount above 0
/// (a budget of nothing would stop the run at its first model request).
fn check_budget(cx: &mut LoadCx<'_>, node: &Node, b: crate::cm::format::CmBudget) {
    let hint = "e.g. `budget: {tokens: 20000, cost_usd: 0.50}`: the run stops in BUDGET before a \
                model request once one is reached";
    if b.tokens == Some(0) {
        let span = node.get("tokens").map_or(node.span, |n| n.span);
        cx.push(
            CmProblemKind::Schema,
            span,
            "`budget: tokens` must be at least 1".into(),
            Some(hint.into()),
        );
    }
    if let Some(c) = b.cost_usd
        && !(c.is_finite() && c > 0.0)
    {
        let span = node.get("cost_usd").map_or(node.span, |n| n.span);
        cx.push(
            CmProblemKind::Schema,
            span,
            format!("`budget: cost_usd` must be an amount of US dollars above 0, not {c}"),
            Some(hint.into()),
        );
    }
}
