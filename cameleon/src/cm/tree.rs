//! The YAML of a `.cm` file as a tree of located nodes, and a serde `Deserializer` over it.
//!
//! Loading parses the text once, with budgets (see [`limits`](super::limits)), into a [`Node`]
//! tree where every node knows its line, column and byte span. The typed form
//! ([`CmFile`](super::CmFile) and friends) is then read from the tree with [`NodeDe`], one part
//! at a time, so one mistake does not hide the others, and every error carries the location of
//! the node it is about.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_saphyr::Spanned;

use super::limits;

/// Where a node is in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    /// Byte offset.
    pub offset: usize,
    /// Byte length (0 for a collection: it points at its start).
    pub len: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Span {
    fn from_location(l: &serde_saphyr::Location) -> Span {
        let s = l.span();
        Span {
            offset: s.byte_offset().unwrap_or(s.offset()) as usize,
            len: s.byte_len().unwrap_or(s.len()) as usize,
            line: l.line() as usize,
            column: l.column() as usize,
        }
    }
}

/// A YAML node with its location.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub span: Span,
    pub kind: Kind,
}

impl Node {
    /// A copy without the mapping entries (at any depth) whose key is at one of `spans`, or
    /// `None` when no key is there (nothing to prune).
    pub(crate) fn without_keys_at(&self, spans: &[Span]) -> Option<Node> {
        fn prune(n: &Node, spans: &[Span], pruned: &mut bool) -> Node {
            let kind = match &n.kind {
                Kind::Map(entries) => {
                    let mut kept = Vec::with_capacity(entries.len());
                    for (k, v) in entries {
                        if spans.contains(&k.span) {
                            *pruned = true;
                        } else {
                            kept.push((k.clone(), prune(v, spans, pruned)));
                        }
                    }
                    Kind::Map(kept)
                }
                Kind::Seq(items) => {
                    Kind::Seq(items.iter().map(|i| prune(i, spans, pruned)).collect())
                }
                other => other.clone(),
            };
            Node { span: n.span, kind }
        }
        let mut pruned = false;
        let copy = prune(self, spans, &mut pruned);
        pruned.then_some(copy)
    }
}

/// What a node holds.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Kind {
    /// How the kind is named in error messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Null => "nothing (null)",
            Kind::Bool(_) => "a boolean",
            Kind::Int(_) | Kind::UInt(_) => "an integer",
            Kind::Float(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// The entries, if a mapping.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.kind {
            Kind::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The text, if a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The key node and value of entry `key`, if a mapping holding it.
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(k, v)| (k, v))
    }

    /// The value of entry `key`, if a mapping holding it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<Kind>::deserialize(d)?;
        Ok(Node {
            span: Span::from_location(&s.referenced),
            kind: s.value,
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl<'de> Visitor<'de> for KindVisitor {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<Kind, E> {
                Ok(Kind::Null)
            }
            fn visit_none<E>(self) -> Result<Kind, E> {
                Ok(Kind::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
                Kind::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Kind, E> {
                Ok(Kind::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Kind, E> {
                Ok(Kind::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Kind, E> {
                Ok(if let Ok(i) = i64::try_from(v) {
                    Kind::Int(i)
                } else {
                    Kind::UInt(v)
                })
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Kind, E> {
                i64::try_from(v)
                    .map(Kind::Int)
                    .or_else(|_| u64::try_from(v).map(Kind::UInt))
                    .map_err(|_| E::custom(format!("the integer {v} is too large")))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Kind, E> {
                u64::try_from(v)
                    .map(|u| self.visit_u64::<E>(u).unwrap_or(Kind::UInt(u)))
                    .map_err(|_| E::custom(format!("the integer {v} is too large")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind, E> {
                if v.is_finite() {
                    Ok(Kind::Float(v))
                } else {
                    Err(E::custom(
                        "`.nan` and `.inf` are not allowed in .cm files: numbers must be finite",
                    ))
                }
            }
            fn visit_str<E>(self, v: &str) -> Result<Kind, E> {
                Ok(Kind::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Kind, E> {
                Ok(Kind::Str(v))
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Kind, E> {
                Err(E::custom(
                    "binary (`!!binary`) values are not allowed in .cm files",
                ))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Kind, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element::<Node>()? {
                    v.push(x);
                }
                Ok(Kind::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Kind, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key::<Node>()? {
                    let val = a.next_value::<Node>()?;
                    v.push((k, val));
                }
                Ok(Kind::Map(v))
            }
        }
        d.deserialize_any(KindVisitor)
    }
}

/// A syntax error or a refused input, from [`parse`].
#[derive(Debug)]
pub(crate) struct ParseError {
    pub message: String,
    pub hint: Option<String>,
    pub span: Span,
    pub is_limit: bool,
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: limits::MAX_EVENTS,
            max_aliases: limits::MAX_ALIASES,
            max_anchors: limits::MAX_ALIASES,
            max_depth: limits::MAX_DEPTH,
            flow_nesting_limit: limits::MAX_DEPTH,
            max_documents: 1,
            max_nodes: limits::MAX_NODES,
            max_total_scalar_bytes: limits::MAX_FILE_BYTES,
            max_merge_keys: limits::MAX_ALIASES,
            max_recorded_anchor_events: limits::MAX_ALIAS_VALUES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: limits::MAX_ALIAS_VALUES,
            max_replay_stack_depth: limits::MAX_DEPTH,
            max_alias_expansions_per_anchor: limits::MAX_ALIASES,
        },
        strict_booleans: true,
    }
}

/// Parses `text` into a tree, within the limits.
pub(crate) fn parse(text: &str) -> Result<Node, ParseError> {
    if text.len() > limits::MAX_FILE_BYTES {
        return Err(ParseError {
            message: format!(
                "the file is {} bytes; .cm files are limited to {} bytes",
                text.len(),
                limits::MAX_FILE_BYTES
            ),
            hint: Some("a .cm file holds a topology, not data: read large inputs with a `text_file` or `json_file` operator".into()),
            span: Span {
                line: 1,
                column: 1,
                ..Span::default()
            },
            is_limit: true,
        });
    }
    let parse = || {
        serde_saphyr::from_str_with_options::<Node>(text, options())
            .map_err(|e| parse_error(text, &e))
    };
    // The parser recurses once per nesting level with large frames (about 50 KiB per level in
    // unoptimised builds): give it a stack of its own so the depth limit, not the caller's
    // stack size, is what bounds nesting.
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name("cm-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(s, parse)
        {
            Ok(h) => h.join().unwrap_or_else(|_| {
                Err(ParseError {
                    message: "the YAML parser failed on this input".into(),
                    hint: Some("this is a bug in the parser; please report the file".into()),
                    span: Span {
                        line: 1,
                        column: 1,
                        ..Span::default()
                    },
                    is_limit: false,
                })
            }),
            Err(_) => parse(),
        }
    })
}

/// Stack of the parsing thread: room for [`limits::MAX_DEPTH`] levels in any build.
const PARSE_STACK_BYTES: usize = 16 * 1024 * 1024;

fn parse_error(text: &str, e: &serde_saphyr::Error) -> ParseError {
    use serde_saphyr::{Error as E, MessageFormatter};
    let mut inner = e;
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = inner {
        inner = error;
    }
    let span = e
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| Span::from_location(&l))
        .unwrap_or(Span {
            line: 1,
            column: 1,
            ..Span::default()
        });
    let span = clamp(text, span);
    if let serde_saphyr::Error::Budget { breach, .. } = inner {
        let (message, hint) = budget_message(breach);
        return ParseError {
            message,
            hint: Some(hint),
            span,
            is_limit: true,
        };
    }
    let mut message = serde_saphyr::DefaultMessageFormatter
        .format_message(inner)
        .into_owned();
    let alias_limit = matches!(
        inner,
        E::AliasReplayCounterOverflow { .. }
            | E::AliasReplayLimitExceeded { .. }
            | E::AliasExpansionLimitExceeded { .. }
            | E::AliasReplayStackDepthExceeded { .. }
    );
    if alias_limit {
        return ParseError {
            message: "too many YAML alias expansions: the file looks like an alias-expansion bomb"
                .into(),
            hint: Some(format!(
                "a .cm file may expand aliases (`*name`) to at most {} values",
                limits::MAX_ALIAS_VALUES
            )),
            span,
            is_limit: true,
        };
    }
    let is_limit = message.contains("recursion limit");
    let hint = if is_limit {
        message = format!("values nest more than {} levels deep", limits::MAX_DEPTH);
        Some("a .cm file is shallow: operators, connections and small params".into())
    } else if message.contains("duplicate mapping key") {
        message = message
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or_default()
            .to_owned();
        Some("each key may appear once in a mapping; remove or rename one".into())
    } else if message.contains("tabs") {
        Some("indent with spaces, not tabs".into())
    } else {
        None
    };
    ParseError {
        message,
        hint,
        span,
        is_limit,
    }
}

/// Keeps a span inside the text and on character boundaries.
fn clamp(text: &str, mut s: Span) -> Span {
    s.offset = s.offset.min(text.len());
    while !text.is_char_boundary(s.offset) {
        s.offset -= 1;
    }
    s.len = s.len.min(text.len() - s.offset);
    while !text.is_char_boundary(s.offset + s.len) {
        s.len -= 1;
    }
    s
}

fn budget_message(b: &serde_saphyr::budget::BudgetBreach) -> (String, String) {
    use serde_saphyr::budget::BudgetBreach as B;
    let aliases = "YAML aliases (`*name`) re-use a value written once; a .cm file may use at most";
    match b {
        B::Aliases { .. } | B::Anchors { .. } | B::AliasAnchorRatio { .. } => (
            "too many YAML aliases: the file looks like an alias-expansion bomb".into(),
            format!("{aliases} {} aliases and anchors", limits::MAX_ALIASES),
        ),
        B::Depth { .. } => (
            format!("values nest more than {} levels deep", limits::MAX_DEPTH),
            "a .cm file is shallow: operators, connections and small params".into(),
        ),
        B::RecordedAnchorEvents { .. } => (
            "too many YAML alias expansions: the file looks like an alias-expansion bomb".into(),
            format!(
                "a .cm file may expand aliases (`*name`) to at most {} values",
                limits::MAX_ALIAS_VALUES
            ),
        ),
        B::Nodes { .. } | B::Events { .. } => (
            format!(
                "the file expands to more than {} YAML values (aliases included)",
                limits::MAX_NODES
            ),
            "a .cm file holds a topology, not data; if it uses aliases, check they do not multiply"
                .into(),
        ),
        B::Documents { .. } => (
            "a .cm file holds one YAML document".into(),
            "remove the `---` separators and the documents after the first".into(),
        ),
        B::ScalarBytes { .. } => (
            format!(
                "the file's text values add up to more than {} bytes",
                limits::MAX_FILE_BYTES
            ),
            "read large inputs with a `text_file` or `json_file` operator".into(),
        ),
        other => (
            format!("the file exceeds a safety limit ({other:?})"),
            "see the limits in the documentation of `cameleon::cm::limits`".into(),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Deserializing typed values from the tree, with located errors

/// One located problem met while reading the typed form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Located {
    pub span: Option<Span>,
    pub message: String,
    pub hint: Option<String>,
}

/// Errors of [`NodeDe`]: one or more located problems.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeError(pub Vec<Located>);

impl DeError {
    fn one(message: String, hint: Option<String>) -> Self {
        DeError(vec![Located {
            span: None,
            message,
            hint,
        }])
    }

    /// Gives a location to the problems that have none.
    fn at(mut self, span: Span) -> Self {
        for p in &mut self.0 {
            p.span.get_or_insert(span);
        }
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msgs: Vec<&str> = self.0.iter().map(|p| p.message.as_str()).collect();
        f.write_str(&msgs.join("; "))
    }
}

impl std::error::Error for DeError {}

fn key_hint(field: &str, expected: &'static [&'static str]) -> String {
    match crate::util::did_you_mean(field, expected.iter().copied()) {
        Some(s) => format!("did you mean `{s}`?"),
        None if expected.is_empty() => "no keys are allowed here".into(),
        None => format!(
            "the keys allowed here are: {}",
            expected
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::one(msg.to_string(), None)
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        let found = match unexp {
            de::Unexpected::Bool(b) => format!("the boolean `{b}`"),
            de::Unexpected::Unsigned(n) => format!("the integer `{n}`"),
            de::Unexpected::Signed(n) => format!("the integer `{n}`"),
            de::Unexpected::Float(n) => format!("the number `{n}`"),
            de::Unexpected::Str(s) => format!("the string {s:?}"),
            de::Unexpected::Unit | de::Unexpected::Option => "nothing (null)".into(),
            de::Unexpected::Seq => "a list".into(),
            de::Unexpected::Map => "a mapping".into(),
            other => other.to_string(),
        };
        DeError::one(format!("expected {exp}, found {found}"), None)
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError::one(
            format!("unknown key `{field}`"),
            Some(key_hint(field, expected)),
        )
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError::one(
            format!("unknown value `{variant}`"),
            Some(key_hint(variant, expected).replace("keys", "values")),
        )
    }

    fn missing_field(field: &'static str) -> Self {
        DeError::one(
            format!("missing key `{field}`"),
            Some(format!("add `{field}:` here")),
        )
    }

    fn duplicate_field(field: &'static str) -> Self {
        DeError::one(
            format!("key `{field}` appears twice"),
            Some("keep one of them".into()),
        )
    }
}

/// A serde `Deserializer` over a [`Node`]. `src` is the text the tree was parsed from: a
/// string field given a plain number or boolean (`label: 2024`) reads the text as written.
#[derive(Clone, Copy)]
pub(crate) struct NodeDe<'a> {
    pub node: &'a Node,
    pub src: &'a str,
}

impl<'a> NodeDe<'a> {
    pub fn new(node: &'a Node, src: &'a str) -> Self {
        NodeDe { node, src }
    }

    fn raw_text(&self) -> Option<&'a str> {
        let s = self.node.span;
        self.src.get(s.offset..s.offset + s.len)
    }
}

/// Reads a `T` from `node`, with every problem located.
pub(crate) fn from_node<'a, T: Deserialize<'a>>(
    node: &'a Node,
    src: &'a str,
) -> Result<T, DeError> {
    T::deserialize(NodeDe::new(node, src))
}

struct Seq<'a> {
    items: std::slice::Iter<'a, Node>,
    src: &'a str,
}

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            Some(n) => seed.deserialize(NodeDe::new(n, self.src)).map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Map<'a> {
    entries: std::slice::Iter<'a, (Node, Node)>,
    value: Option<&'a Node>,
    src: &'a str,
}

impl<'de> MapAccess<'de> for Map<'de> {
    type Error = DeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.entries.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(KeyDe(NodeDe::new(k, self.src))).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        match self.value.take() {
            Some(v) => seed.deserialize(NodeDe::new(v, self.src)),
            None => Err(DeError::one("a value without a key".into(), None)),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A mapping key: keys are strings; a plain number or boolean key reads as its text.
struct KeyDe<'a>(NodeDe<'a>);

impl<'de> Deserializer<'de> for KeyDe<'de> {
    type Error = DeError;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let span = self.0.node.span;
        match &self.0.node.kind {
            Kind::Str(s) => v.visit_borrowed_str(s),
            Kind::Bool(_) | Kind::Int(_) | Kind::UInt(_) | Kind::Float(_) => {
                match self.0.raw_text() {
                    Some(t) => v.visit_borrowed_str(t),
                    None => Err(DeError::one("a key must be a string".into(), None)),
                }
            }
            other => Err(DeError::one(
                format!("a key must be a string, not {}", other.describe()),
                Some("write keys as plain words, e.g. `id:`".into()),
            )),
        }
        .map_err(|e| e.at(span))
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let n = self.node;
        let r = match &n.kind {
            Kind::Null => v.visit_unit(),
            Kind::Bool(b) => v.visit_bool(*b),
            Kind::Int(i) => v.visit_i64(*i),
            Kind::UInt(u) => v.visit_u64(*u),
            Kind::Float(f) => v.visit_f64(*f),
            Kind::Str(s) => v.visit_borrowed_str(s),
            Kind::Seq(items) => v.visit_seq(Seq {
                items: items.iter(),
                src: self.src,
            }),
            Kind::Map(entries) => v.visit_map(Map {
                entries: entries.iter(),
                value: None,
                src: self.src,
            }),
        };
        r.map_err(|e| e.at(n.span))
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.node.kind {
            Kind::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
        .map_err(|e| e.at(self.node.span))
    }

    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match (&self.node.kind, self.raw_text()) {
            (Kind::Bool(_) | Kind::Int(_) | Kind::UInt(_) | Kind::Float(_), Some(t)) => v
                .visit_borrowed_str::<DeError>(t)
                .map_err(|e| e.at(self.node.span)),
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        let n = self.node;
        let Kind::Map(entries) = &n.kind else {
            return Err(DeError::one(
                format!(
                    "expected a mapping ({}), found {}",
                    describe_struct(name),
                    n.kind.describe()
                ),
                Some(format!(
                    "write it as `key: value` lines; its keys are: {}",
                    fields.join(", ")
                )),
            )
            .at(n.span));
        };
        // Report every unknown key at once, not only the first.
        let unknown: Vec<Located> = entries
            .iter()
            .filter_map(|(k, _)| {
                let text = match &k.kind {
                    Kind::Str(s) => s.as_str(),
                    _ => NodeDe::new(k, self.src).raw_text().unwrap_or("?"),
                };
                (!fields.contains(&text)).then(|| Located {
                    span: Some(k.span),
                    message: format!("unknown key `{text}` in {}", describe_struct(name)),
                    hint: Some(key_hint(text, fields)),
                })
            })
            .collect();
        if !unknown.is_empty() {
            return Err(DeError(unknown));
        }
        self.deserialize_any(v)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.kind {
            Kind::Str(s) => v.visit_enum(UnitVariant(s)),
            other => Err(DeError::one(
                format!("expected a name, found {}", other.describe()),
                None,
            )),
        }
        .map_err(|e| e.at(self.node.span))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map identifier ignored_any
    }
}

/// How a struct of the format is called in messages.
fn describe_struct(name: &str) -> &'static str {
    match name {
        "CmFile" => "the file",
        "CmConfig" => "`config`",
        "CmOperator" => "an operator",
        "CmConnection" => "a connection",
        _ => "this mapping",
    }
}

struct UnitVariant<'a>(&'a str);

impl<'de> EnumAccess<'de> for UnitVariant<'de> {
    type Error = DeError;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), DeError> {
        let d: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(self.0);
        seed.deserialize(d).map(|v| (v, self))
    }
}

impl<'de> VariantAccess<'de> for UnitVariant<'de> {
    type Error = DeError;
    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, DeError> {
        Err(DeError::one(format!("`{}` takes no value", self.0), None))
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, DeError> {
        Err(DeError::one(format!("`{}` takes no value", self.0), None))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, DeError> {
        Err(DeError::one(format!("`{}` takes no value", self.0), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_line_column_and_byte_span() {
        let src = "name: \"é\"\nops:\n  - id: a\n";
        let t = parse(src).unwrap();
        let Some(Kind::Seq(ops)) = t.get("ops").map(|n| &n.kind) else {
            panic!("ops is a list")
        };
        let (k, v) = ops[0].entry("id").unwrap();
        assert_eq!((k.span.line, k.span.column), (3, 5));
        assert_eq!(&src[v.span.offset..v.span.offset + v.span.len], "a");
    }

    #[test]
    fn yaml_1_1_booleans_are_plain_strings() {
        let t = parse("y: 1\nn: yes\n").unwrap();
        let m = t.as_map().unwrap();
        assert_eq!(m[0].0.as_str(), Some("y"));
        assert_eq!(m[1].1.as_str(), Some("yes"));
    }

    #[test]
    fn unknown_keys_are_all_reported_with_their_location() {
        #[derive(Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)] // only deserialized, to see the errors
        struct CmConnection {
            from: String,
            to: String,
        }
        let src = "from: a.b\ntoo: c.d\nfrmo: x\n";
        let t = parse(src).unwrap();
        let e = from_node::<CmConnection>(&t, src).unwrap_err();
        assert_eq!(e.0.len(), 2);
        assert_eq!(e.0[0].span.map(|s| s.line), Some(2));
        assert_eq!(e.0[0].hint.as_deref(), Some("did you mean `to`?"));
        assert_eq!(e.0[1].span.map(|s| s.line), Some(3));
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let src = "a:\n  - 1\n  - [x]\n";
        let t = parse(src).unwrap();
        let e = from_node::<std::collections::BTreeMap<String, Vec<u32>>>(&t, src).unwrap_err();
        assert_eq!(e.0[0].span.map(|s| (s.line, s.column)), Some((3, 5)));
        assert!(
            e.0[0].message.contains("found a list"),
            "{}",
            e.0[0].message
        );
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        assert!(parse("x: .nan\n").is_err());
        assert!(parse("x: -.inf\n").is_err());
    }
}
