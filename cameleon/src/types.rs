//! Data types: what travels on connections (docs/semantics.md §9).
//!
//! A token's value is any `'static + Send + Sync + Clone` type that serde can serialize and
//! deserialize, declared once with [`data_type!`](crate::data_type). The engine never looks inside a
//! value: it moves [`Value`]s, which are shared references (`Arc`), so a fan-out never deep-copies.
//!
//! ```
//! use cameleon::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! /// An image, as raw bytes plus its size.
//! #[derive(Clone, Debug, Serialize, Deserialize)]
//! pub struct DataImage { pub width: u32, pub height: u32, pub bytes: Vec<u8> }
//! cameleon::data_type!(DataImage, color = "#e879f9");
//!
//! let v = Value::new(DataImage { width: 1, height: 1, bytes: vec![0] });
//! assert_eq!(v.type_name(), "DataImage");
//! assert_eq!(v.downcast_ref::<DataImage>().map(|i| i.width), Some(1));
//! ```

use std::any::Any as StdAny;
use std::fmt;
use std::io;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

mod preview;

pub use preview::Preview;

/// Static facts about a data type: its name, its display colour, and how to rebuild a value of it
/// from JSON (traces, journals, `.cm` literals).
pub struct TypeInfo {
    /// The type's name as written in `.cm` files, the catalogue and traces (`DataString`).
    pub name: &'static str,
    /// Display colour for renderers (`#4f8aff`), if the type has one.
    pub color: Option<&'static str>,
    /// Rebuilds a value of this type from its JSON form.
    pub from_json: fn(serde_json::Value) -> Result<Value, serde_json::Error>,
}

impl TypeInfo {
    /// Whether this is the `Any` pseudo-type.
    pub fn is_any(&self) -> bool {
        self == Any::INFO
    }
}

impl PartialEq for TypeInfo {
    /// Same type: the same declaration (one `static` per type), or, across separately built
    /// code, the same name.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || self.name == other.name
    }
}
impl Eq for TypeInfo {}

impl fmt::Debug for TypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for TypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A type that may label a port: every [`DataType`], and [`Any`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Caméléon data type",
    label = "ports carry data types",
    note = "declare it with `cameleon::data_type!({Self});` (it must be Clone + Send + Sync + Serialize + Deserialize), or use a built-in type such as `DataString`"
)]
pub trait PortType: 'static + Send + Sync {
    /// The type's static facts.
    const INFO: &'static TypeInfo;
}

/// A concrete data type: a value of it can travel on a connection.
///
/// Implement it with [`data_type!`](crate::data_type), not by hand.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Caméléon data type",
    label = "not a data type",
    note = "declare it with `cameleon::data_type!({Self});` (it must be Clone + Send + Sync + Serialize + Deserialize)"
)]
pub trait DataType:
    PortType + Clone + fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// Declares a data type: `data_type!(MyType)` or `data_type!(MyType, color = "#e879f9")`,
/// optionally with `name = "OtherName"` to use another name in `.cm` files and traces.
///
/// The type must be `Clone + Debug + Serialize + Deserialize + Send + Sync + 'static`.
#[macro_export]
macro_rules! data_type {
    ($ty:ident $(, name = $name:literal)? $(, color = $color:literal)? $(,)?) => {
        impl $crate::types::PortType for $ty {
            // A `static`, so every use of `INFO` is the same address and type checks compare
            // pointers.
            const INFO: &'static $crate::types::TypeInfo = {
                static INFO: $crate::types::TypeInfo = $crate::types::TypeInfo {
                    name: $crate::__data_type_name!($ty $(, $name)?),
                    color: $crate::__data_type_color!($($color)?),
                    from_json: $crate::types::__from_json::<$ty>,
                };
                &INFO
            };
        }
        impl $crate::types::DataType for $ty {}
        $crate::__private::inventory::submit! {
            $crate::types::RegisteredType(<$ty as $crate::types::PortType>::INFO)
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __data_type_name {
    ($ty:ident) => {
        stringify!($ty)
    };
    ($ty:ident, $name:literal) => {
        $name
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __data_type_color {
    () => {
        None
    };
    ($color:literal) => {
        Some($color)
    };
}

#[doc(hidden)]
pub fn __from_json<T: DataType>(v: serde_json::Value) -> Result<Value, serde_json::Error> {
    serde_json::from_value::<T>(v).map(Value::new)
}

/// A data type known to the process, registered by [`data_type!`](crate::data_type).
#[derive(Debug)]
pub struct RegisteredType(pub &'static TypeInfo);
inventory::collect!(RegisteredType);

/// Looks a data type up by name among every type declared with [`data_type!`](crate::data_type)
/// (including the built-ins), or `Any`.
pub fn type_by_name(name: &str) -> Option<&'static TypeInfo> {
    if name == Any::INFO.name {
        return Some(Any::INFO);
    }
    inventory::iter::<RegisteredType>
        .into_iter()
        .map(|r| r.0)
        .find(|t| t.name == name)
}

/// Every registered data type, sorted by name.
pub fn all_types() -> Vec<&'static TypeInfo> {
    let mut v: Vec<_> = inventory::iter::<RegisteredType>
        .into_iter()
        .map(|r| r.0)
        .collect();
    v.sort_by_key(|t| t.name);
    v.dedup_by_key(|t| t.name);
    v
}

// ---------------------------------------------------------------------------------------------
// Values

trait DynData: Send + Sync + fmt::Debug + 'static {
    fn info(&self) -> &'static TypeInfo;
    fn as_any(&self) -> &dyn StdAny;
    fn to_json(&self) -> serde_json::Value;
    fn try_to_json(&self) -> Result<serde_json::Value, serde_json::Error>;
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
    fn write_json_to(&self, out: &mut dyn io::Write, pretty: bool)
    -> Result<(), serde_json::Error>;
}

impl<T: DataType> DynData for T {
    fn info(&self) -> &'static TypeInfo {
        T::INFO
    }
    fn as_any(&self) -> &dyn StdAny {
        self
    }
    fn to_json(&self) -> serde_json::Value {
        // A data type whose Serialize fails (a map with non-string keys, say) shows as null in
        // traces rather than taking the run down.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    fn try_to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, self)
    }
    fn write_json_to(
        &self,
        out: &mut dyn io::Write,
        pretty: bool,
    ) -> Result<(), serde_json::Error> {
        if pretty {
            serde_json::to_writer_pretty(out, self)
        } else {
            serde_json::to_writer(out, self)
        }
    }
}

/// A type-erased, shared, immutable value of some [`DataType`]. Cloning is a reference-count
/// increment: fan-out shares one value among all its connections.
#[derive(Clone)]
pub struct Value(Arc<dyn DynData>);

impl Value {
    /// Wraps a value of a data type.
    pub fn new<T: DataType>(value: T) -> Self {
        Value(Arc::new(value))
    }

    /// The value's data type.
    pub fn type_info(&self) -> &'static TypeInfo {
        self.0.info()
    }

    /// The name of the value's data type.
    pub fn type_name(&self) -> &'static str {
        self.0.info().name
    }

    /// The value as a `T`, if it is one.
    pub fn downcast_ref<T: DataType>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }

    /// The value's JSON form (as serde serializes it); `null` if its `Serialize` fails.
    pub fn to_json(&self) -> serde_json::Value {
        self.0.to_json()
    }

    /// The value's JSON form, or serde's error (a record must not keep `null` for a value it
    /// could not serialise).
    pub fn try_to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        self.0.try_to_json()
    }

    /// Appends the value's JSON text to `out`, or returns serde's error (a journal must not
    /// write `null` for a value it could not serialise). On error, `out` may hold part of the
    /// text: truncate it back.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        self.0.write_json(out)
    }

    /// The start of the value's JSON text, at most `max_bytes` long (cut at a character
    /// boundary), with `pretty` indentation or compact. Serialisation stops as soon as the
    /// bound is reached, so a look at a 50 MiB value costs `max_bytes`, not the value: what a
    /// viewer (`cameleon serve`) shows of a token, however large.
    ///
    /// ```
    /// use cameleon::prelude::*;
    ///
    /// let big = Value::new(Binary(vec![7; 50 << 20]));
    /// let p = big.preview(16, false);
    /// assert_eq!((p.text.as_str(), p.truncated), ("[7,7,7,7,7,7,7,7", true));
    /// let small = Value::new(DataString("hi".into()));
    /// assert_eq!((small.preview(16, false).text.as_str(), small.preview(16, false).truncated), ("\"hi\"", false));
    /// ```
    pub fn preview(&self, max_bytes: usize, pretty: bool) -> Preview {
        Preview::write(max_bytes, |out| self.0.write_json_to(out, pretty))
    }

    /// Whether two values are the same shared allocation (not merely equal).
    pub fn ptr_eq(a: &Value, b: &Value) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl PartialEq for Value {
    /// Equal when of the same type with the same JSON form.
    fn eq(&self, other: &Self) -> bool {
        Value::ptr_eq(self, other)
            || (self.type_name() == other.type_name() && self.to_json() == other.to_json())
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// A [`Value`] with its type, for serde both ways: `{"type": "DataString", "value": …}` (a plain
/// [`Value`] serializes as its JSON alone, which does not say how to read it back). Internal state
/// that holds a value uses it, so a journaled run records the state (docs/semantics.md §5.5).
#[derive(Clone, Debug)]
pub struct TypedValue(pub Value);

impl Serialize for TypedValue {
    // The map `{"type": …, "value": …}` written entry by entry (no JSON object built first):
    // what a remote firing's request and reply carry, on its critical path.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("type", self.0.type_name())?;
        m.serialize_entry("value", &self.0.to_json())?;
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for TypedValue {
    // Read entry by entry: the type's name looked up where it stands, only the value kept as
    // JSON for the type to read; the keys in any order, others ignored.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TypedValueVisitor)
    }
}

struct TypedValueVisitor;

impl<'de> serde::de::Visitor<'de> for TypedValueVisitor {
    type Value = TypedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a typed value, {\"type\": …, \"value\": …}")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<TypedValue, A::Error> {
        use serde::de::Error;
        let mut ty: Option<&'static TypeInfo> = None;
        let mut value = None;
        while let Some(key) = map.next_key::<TypedKey>()? {
            match key {
                TypedKey::Type => ty = Some(map.next_value::<TypeByName>()?.0),
                TypedKey::Value => value = Some(map.next_value::<serde_json::Value>()?),
                TypedKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let ty = ty.ok_or_else(|| A::Error::custom("a typed value without its `type`"))?;
        (ty.from_json)(value.unwrap_or(serde_json::Value::Null))
            .map(TypedValue)
            .map_err(A::Error::custom)
    }
}

/// A key of a typed value's map.
enum TypedKey {
    Type,
    Value,
    Other,
}

impl<'de> serde::Deserialize<'de> for TypedKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = TypedKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`type` or `value`")
            }
            fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<TypedKey, E> {
                Ok(match k {
                    "type" => TypedKey::Type,
                    "value" => TypedKey::Value,
                    _ => TypedKey::Other,
                })
            }
        }
        d.deserialize_identifier(Key)
    }
}

/// A typed value's `type`: the data type it names.
struct TypeByName(&'static TypeInfo);

impl<'de> serde::Deserialize<'de> for TypeByName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = TypeByName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the name of a data type")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<TypeByName, E> {
                type_by_name(name)
                    .map(TypeByName)
                    .ok_or_else(|| E::custom(format!("a value of unknown type `{name}`")))
            }
        }
        d.deserialize_str(Name)
    }
}

impl<T: DataType> From<T> for Value {
    fn from(v: T) -> Self {
        Value::new(v)
    }
}

// ---------------------------------------------------------------------------------------------
// Built-in types

/// Raw bytes (a loaded file, say).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Binary(pub Vec<u8>);
data_type!(Binary, color = "#a0b0c8");

/// A text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DataString(pub String);
data_type!(DataString, color = "#4f8aff");

/// A JSON value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DataJSON(pub serde_json::Value);
data_type!(DataJSON, color = "#a78bfa");

/// A boolean (a Gate's condition, a predicate's verdict).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DataBool(pub bool);
data_type!(DataBool, color = "#f4845f");

/// The chunks a text was split into, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DataChunk(pub Vec<String>);
data_type!(DataChunk, color = "#00e5a0");

/// An operator's failure, caught and emitted as data (on an output named `error`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataError {
    /// The instance that failed.
    pub operator: String,
    /// What went wrong.
    pub message: String,
}
data_type!(DataError, color = "#e5484d");

/// Texts and their embeddings: `vectors[i]` is the embedding of `texts[i]`, every vector of one
/// length. What the `embed` operator emits and `index` stores.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataEmbeddings {
    /// The texts, in order.
    pub texts: Vec<String>,
    /// One vector per text.
    pub vectors: Vec<Vec<f32>>,
}
data_type!(DataEmbeddings, color = "#f59e0b");

impl DataEmbeddings {
    /// Pairs `texts` with `vectors`; an error says why they do not pair (counts or lengths
    /// differ).
    pub fn new(texts: Vec<String>, vectors: Vec<Vec<f32>>) -> Result<Self, String> {
        let e = DataEmbeddings { texts, vectors };
        e.check()?;
        Ok(e)
    }

    /// Checks that there is one vector per text and that every vector has the same length (a
    /// value read from JSON may not).
    pub fn check(&self) -> Result<(), String> {
        if self.texts.len() != self.vectors.len() {
            return Err(format!(
                "{} texts but {} vectors: each text needs exactly one vector",
                self.texts.len(),
                self.vectors.len()
            ));
        }
        if let Some(first) = self.vectors.first()
            && let Some(i) = self.vectors.iter().position(|v| v.len() != first.len())
        {
            return Err(format!(
                "vector {i} has {} dimensions but vector 0 has {}: one embedder makes all of them",
                self.vectors[i].len(),
                first.len()
            ));
        }
        Ok(())
    }

    /// The number of texts.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The vectors' length (0 when there is none).
    pub fn dim(&self) -> usize {
        self.vectors.first().map_or(0, Vec::len)
    }
}

/// The `Any` port type. On a *behavioral* operator's input it accepts every type; on a
/// *structural* operator it is a type variable, bound by the connections (docs/semantics.md §1). It is not a
/// value type: read such an input with [`Firing::value`](crate::Firing::value).
#[derive(Clone, Copy, Debug)]
pub enum Any {}

impl PortType for Any {
    const INFO: &'static TypeInfo = {
        static INFO: TypeInfo = TypeInfo {
            name: "Any",
            color: Some("#9aa0a6"),
            from_json: any_from_json,
        };
        &INFO
    };
}

/// A JSON value whose type is not known statically is read as `DataJSON`.
fn any_from_json(v: serde_json::Value) -> Result<Value, serde_json::Error> {
    Ok(Value::new(DataJSON(v)))
}

macro_rules! impl_from {
    ($($ty:ident($inner:ty)),*) => {$(
        impl From<$inner> for $ty {
            fn from(v: $inner) -> Self { $ty(v) }
        }
    )*};
}
impl_from!(
    Binary(Vec<u8>),
    DataString(String),
    DataJSON(serde_json::Value),
    DataBool(bool),
    DataChunk(Vec<String>)
);

impl From<&str> for DataString {
    fn from(v: &str) -> Self {
        DataString(v.to_owned())
    }
}

impl fmt::Display for DataString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_types_have_the_design_colours() {
        assert_eq!(Binary::INFO.color, Some("#a0b0c8"));
        assert_eq!(DataString::INFO.color, Some("#4f8aff"));
        assert_eq!(DataJSON::INFO.color, Some("#a78bfa"));
        assert_eq!(DataBool::INFO.color, Some("#f4845f"));
        assert_eq!(DataChunk::INFO.color, Some("#00e5a0"));
    }

    #[test]
    fn builtin_types_are_registered_by_name() {
        for n in [
            "Binary",
            "DataString",
            "DataJSON",
            "DataBool",
            "DataChunk",
            "DataError",
            "DataEmbeddings",
            "Any",
        ] {
            assert_eq!(type_by_name(n).map(|t| t.name), Some(n));
        }
        assert!(type_by_name("DataStrin").is_none());
    }

    #[test]
    fn value_round_trips_through_json_by_type_name() {
        let v = Value::new(DataString("hé".into()));
        let t = type_by_name(v.type_name()).unwrap();
        let back = (t.from_json)(v.to_json()).unwrap();
        assert_eq!(back, v);
        assert!(!Value::ptr_eq(&back, &v));
    }

    #[test]
    fn a_typed_value_reads_back_from_text_and_from_json_in_any_key_order() {
        let v = Value::new(DataString("hé \"q\"".into()));
        let text = serde_json::to_string(&TypedValue(v.clone())).unwrap();
        assert_eq!(text, r#"{"type":"DataString","value":"hé \"q\""}"#);
        let back: TypedValue = serde_json::from_str(&text).unwrap();
        assert_eq!(back.0, v);
        // From a JSON tree (nothing to borrow), keys swapped, an unknown key ignored.
        let tree = serde_json::json!({"value": "hé \"q\"", "note": [1], "type": "DataString"});
        let back: TypedValue = serde_json::from_value(tree).unwrap();
        assert_eq!(back.0, v);
        let no_type = serde_json::from_str::<TypedValue>(r#"{"value": 1}"#).unwrap_err();
        assert!(
            no_type.to_string().contains("without its `type`"),
            "{no_type}"
        );
        let unknown = serde_json::from_str::<TypedValue>(r#"{"type": "Nope", "value": 1}"#);
        let unknown = unknown.unwrap_err().to_string();
        assert!(unknown.contains("unknown type `Nope`"), "{unknown}");
    }

    /// A data type that counts the elements serialised, to see how much of a value a preview
    /// touches.
    #[derive(Clone, Debug, Deserialize)]
    struct Counted(Vec<u8>);
    data_type!(Counted);
    static SERIALISED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    impl Serialize for Counted {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for b in &self.0 {
                SERIALISED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                seq.serialize_element(b)?;
            }
            seq.end()
        }
    }

    #[test]
    fn a_preview_of_a_huge_value_serialises_only_what_it_shows() {
        let v = Value::new(Counted(vec![200; 50 << 20]));
        let p = v.preview(1000, false);
        assert!(p.truncated);
        assert_eq!(p.text.len(), 1000);
        assert!(p.text.starts_with("[200,200,"), "{}", p.text);
        let touched = SERIALISED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            touched <= 1000 / 4 + 1,
            "{touched} elements serialised for a 1000-byte preview of 50 MiB"
        );
        let pretty = v.preview(64, true);
        assert!(pretty.text.starts_with("[\n  200,\n"), "{}", pretty.text);
        assert!(pretty.truncated);
    }

    #[test]
    fn a_preview_cuts_at_a_character_boundary_and_says_when_it_cut() {
        let v = Value::new(DataString("ééé".into()));
        // `"ééé"` is 8 bytes: a bound of 4 falls inside the second `é`.
        let p = v.preview(4, false);
        assert_eq!((p.text.as_str(), p.truncated), ("\"é", true));
        let whole = v.preview(8, false);
        assert_eq!((whole.text.as_str(), whole.truncated), ("\"ééé\"", false));
        assert_eq!(v.preview(0, false).text, "");
    }

    #[test]
    fn fan_out_clone_shares_the_value() {
        let v = Value::new(DataChunk(vec!["a".into()]));
        let w = v.clone();
        assert!(Value::ptr_eq(&v, &w));
    }
}
