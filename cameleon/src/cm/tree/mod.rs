//! The YAML of a `.cm` file as a tree of located nodes, and a serde `Deserializer` over it.
//!
//! Loading parses the text once, with budgets (see [`limits`](super::limits)), into a [`Node`]
//! tree where every node knows its line, column and byte span. The typed form
//! ([`CmFile`](super::CmFile) and friends) is then read from the tree with
//! [`NodeDe`](de::NodeDe), one part at a time, so one mistake does not hide the others, and
//! every error carries the location of the node it is about.
//!
//! - this file: the tree itself ([`Span`], [`Node`], [`Kind`]);
//! - [`parse`](mod@parse): text → tree, within the limits, with the messages of refused input;
//! - [`de`]: tree → typed values, the `Deserializer` and its located errors.

mod de;
mod parse;
#[cfg(test)]
mod tests;

pub(crate) use de::{DeError, from_node};
pub(crate) use parse::parse;

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
