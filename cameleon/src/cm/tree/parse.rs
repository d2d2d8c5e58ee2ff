//! Text → tree: parsing `.cm` text into a located [`Node`] tree within the [`limits`], how
//! serde builds the tree from the YAML parser, and the messages (with hints) of syntax errors
//! and refused input.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::{Kind, Node, Span};
use crate::cm::limits;

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
                    Err(E::custom(NON_FINITE))
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

/// What a `.nan` or `.inf` in a `.cm` file is told.
const NON_FINITE: &str = "`.nan` and `.inf` are not allowed in .cm files: numbers must be finite";

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
    } else if message.contains("non-finite float") {
        // The parser refuses them before the tree sees them (`visit_f64` says the same).
        message = NON_FINITE.into();
        Some("write a finite number, or quote the text (`\".nan\"`) to mean a string".into())
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
