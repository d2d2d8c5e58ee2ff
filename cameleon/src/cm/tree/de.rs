//! Deserializing typed values from the tree, with located errors: [`NodeDe`], a serde
//! `Deserializer` over a [`Node`], and [`DeError`], its list of located problems.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};

use super::{Kind, Node, Span};

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

struct MapDe<'a> {
    entries: std::slice::Iter<'a, (Node, Node)>,
    value: Option<&'a Node>,
    src: &'a str,
}

impl<'de> MapAccess<'de> for MapDe<'de> {
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
            Kind::Map(entries) => v.visit_map(MapDe {
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
        "CmBudget" => "`config: budget`",
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
