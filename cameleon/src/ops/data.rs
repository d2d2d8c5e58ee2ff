//! `std-data`: data processing.

use serde_json::{Value as Json, json};

use super::io::params;
use super::test_expr::Test;
use crate::operator::{Execution, Firing, OpError, OpSpec, Operator, Params, TypeRef};
use crate::policy::{Family, Policy};
use crate::types::{Any, Binary, DataBool, DataChunk, DataJSON, DataString, DataType, Value};

fn input<'a>(cx: &Firing<'a>, i: usize, port: &str) -> Result<&'a Value, OpError> {
    cx.value_at(i)
        .ok_or_else(|| OpError::new(format!("input `{port}` has no value")))
}

fn typed<'a, T: DataType>(cx: &Firing<'a>, i: usize, port: &str) -> Result<&'a T, OpError> {
    let v = input(cx, i, port)?;
    v.downcast_ref::<T>().ok_or_else(|| {
        OpError::new(format!(
            "input `{port}` holds a {}, expected {}",
            v.type_name(),
            <T as crate::types::PortType>::INFO.name
        ))
    })
}

/// The text of a value: a `DataString` as is, `Binary` as lossy UTF-8, anything else as
/// compact JSON (a `DataBool` is `true`/`false`).
pub fn text_of(v: &Value) -> String {
    if let Some(s) = v.downcast_ref::<DataString>() {
        s.0.clone()
    } else if let Some(b) = v.downcast_ref::<Binary>() {
        String::from_utf8_lossy(&b.0).into_owned()
    } else {
        v.to_json().to_string()
    }
}

macro_rules! unary {
    (
        $(#[$doc:meta])* $name:ident, $id:literal, $label:literal, $policy:expr,
        $in_ty:ty => $out_ty:ty, |$self_:ident, $v:ident| $body:expr
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name;

        impl $name {
            /// The operator.
            pub fn new() -> Self {
                $name
            }
        }

        impl Operator for $name {
            fn spec(&self) -> OpSpec {
                OpSpec::new($id, $label, Family::Behavioral, $policy)
                    .input("in_data", TypeRef::of::<$in_ty>())
                    .output("out_data", TypeRef::of::<$out_ty>())
            }
            fn execution(&self) -> Execution {
                Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
            }
            fn run(&mut $self_, cx: &mut Firing<'_>) -> Result<(), OpError> {
                let $v = input(cx, 0, "in_data")?;
                let out: $out_ty = $body?;
                cx.emit_at(0, out);
                Ok(())
            }
        }
    };
}

unary!(
    /// Turns any value into text (`transform.in_data` any type → `out_data`, `DataString`): a
    /// `DataString` as is, a `DataJSON` as compact JSON, a `DataBool` as `true`/`false`, `Binary`
    /// as lossy UTF-8.
    Transform, "transform", "Transform", Policy::Any, Any => DataString,
    |self, v| Ok::<_, OpError>(DataString(text_of(v)))
);

unary!(
    /// Parses JSON text (`json_parse`, `DataString` → `DataJSON`).
    JsonParse, "json_parse", "JSON parse", Policy::Any, DataString => DataJSON,
    |self, v| {
        let s = v.downcast_ref::<DataString>().map(|s| s.0.as_str()).unwrap_or_default();
        serde_json::from_str::<Json>(s)
            .map(DataJSON)
            .map_err(|e| OpError::new(format!("invalid JSON: {e}")))
    }
);

unary!(
    /// Decodes bytes as UTF-8 text, replacing invalid sequences (`binary_to_string`,
    /// `Binary` → `DataString`).
    BinaryToString, "binary_to_string", "Binary to string", Policy::Any, Binary => DataString,
    |self, v| Ok::<_, OpError>(DataString(text_of(v)))
);

unary!(
    /// Adds one to a JSON number; integers stay integers (`counter`, `DataJSON` → `DataJSON`).
    Counter, "counter", "Counter", Policy::Any, DataJSON => DataJSON,
    |self, v| increment(&v.to_json()).map(DataJSON)
);

fn increment(v: &Json) -> Result<Json, OpError> {
    match v {
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.checked_add(1)
                    .map(Json::from)
                    .ok_or_else(|| OpError::new("counter overflow"))
            } else if let Some(u) = n.as_u64() {
                u.checked_add(1)
                    .map(Json::from)
                    .ok_or_else(|| OpError::new("counter overflow"))
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN) + 1.0;
                serde_json::Number::from_f64(f)
                    .map(Json::Number)
                    .ok_or_else(|| OpError::new("counter overflow"))
            }
        }
        other => Err(OpError::new(format!(
            "counter needs a JSON number, got `{other}`"
        ))),
    }
}

/// Writes JSON as text (`json_stringify`, `DataJSON` → `DataString`; param `pretty`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonStringify {
    /// Indent the output.
    pub pretty: bool,
}

impl Operator for JsonStringify {
    fn spec(&self) -> OpSpec {
        OpSpec::new(
            "json_stringify",
            "JSON stringify",
            Family::Behavioral,
            Policy::Any,
        )
        .input("in_data", TypeRef::of::<DataJSON>())
        .output("out_data", TypeRef::of::<DataString>())
    }
    fn params(&self) -> Params {
        params([("pretty", json!(self.pretty))])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = &typed::<DataJSON>(cx, 0, "in_data")?.0;
        let s = if self.pretty {
            serde_json::to_string_pretty(v)?
        } else {
            serde_json::to_string(v)?
        };
        cx.emit_at(0, DataString(s));
        Ok(())
    }
}

/// Reads a field of a JSON value (`json_get`, `DataJSON` → `DataJSON`; param `path`, dotted,
/// with list indices: `user.emails.0` or `user.emails[0]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonGet {
    /// The path to read; empty reads the whole value.
    pub path: String,
}

impl JsonGet {
    /// A getter of `path`.
    pub fn new(path: impl Into<String>) -> Self {
        JsonGet { path: path.into() }
    }
}

/// Splits `a.b[0].c` into `["a", "b", "0", "c"]`.
fn path_segments(path: &str) -> Vec<String> {
    path.replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The value at a dotted path, or `None`.
pub fn json_path<'a>(v: &'a Json, path: &str) -> Option<&'a Json> {
    path_segments(path)
        .iter()
        .try_fold(v, |cur, seg| match cur {
            Json::Object(m) => m.get(seg),
            Json::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        })
}

impl Operator for JsonGet {
    fn spec(&self) -> OpSpec {
        OpSpec::new("json_get", "JSON get", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<DataJSON>())
            .output("out_data", TypeRef::of::<DataJSON>())
    }
    fn params(&self) -> Params {
        params([("path", json!(self.path))])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = &typed::<DataJSON>(cx, 0, "in_data")?.0;
        let found = json_path(v, &self.path)
            .ok_or_else(|| OpError::new(format!("path `{}` not found in {v}", self.path)))?;
        cx.emit_at(0, DataJSON(found.clone()));
        Ok(())
    }
}

/// Tests a value (`predicate.in_data` any type → `out_data`, `DataBool`; param `test`).
#[derive(Clone, Debug, PartialEq)]
pub struct Predicate {
    /// The test.
    pub test: Test,
}

impl Predicate {
    /// A predicate with the given test.
    pub fn new(test: Test) -> Self {
        Predicate { test }
    }
}

impl Operator for Predicate {
    fn spec(&self) -> OpSpec {
        OpSpec::new("predicate", "Predicate", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
            .output("out_data", TypeRef::of::<DataBool>())
    }
    fn params(&self) -> Params {
        params([("test", self.test.to_json())])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = input(cx, 0, "in_data")?;
        let b = self.test.eval(&v.to_json()).map_err(OpError::new)?;
        cx.emit_at(0, DataBool(b));
        Ok(())
    }
}

/// Joins two strings: `in_main`, `separator`, `in_meta` (`format`, All policy).
#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    /// Put between the two strings (default one space).
    pub separator: String,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            separator: " ".into(),
        }
    }
}

impl Operator for Format {
    fn spec(&self) -> OpSpec {
        OpSpec::new("format", "Format", Family::Behavioral, Policy::All)
            .input("in_main", TypeRef::of::<DataString>())
            .input("in_meta", TypeRef::of::<DataString>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn params(&self) -> Params {
        params([("separator", json!(self.separator))])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let main = &typed::<DataString>(cx, 0, "in_main")?.0;
        let meta = &typed::<DataString>(cx, 1, "in_meta")?.0;
        cx.emit_at(0, DataString(format!("{main}{}{meta}", self.separator)));
        Ok(())
    }
}

/// Fills `{{key}}` placeholders of `in_template` from the `DataJSON` on `in_data` (`template`,
/// All policy). Keys may be dotted paths; strings are inserted as is, other values as compact
/// JSON; a missing key is an error.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Template;

/// Fills `{{key}}` placeholders of `template` from `data`.
pub fn fill_template(template: &str, data: &Json) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            format!(
                "unclosed `{{{{` at byte {}",
                template.len() - rest.len() + start
            )
        })?;
        let key = after[..end].trim();
        let v = json_path(data, key)
            .ok_or_else(|| format!("no value for `{{{{{key}}}}}` in {data}"))?;
        match v {
            Json::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Operator for Template {
    fn spec(&self) -> OpSpec {
        OpSpec::new("template", "Template", Family::Behavioral, Policy::All)
            .input("in_template", TypeRef::of::<DataString>())
            .input("in_data", TypeRef::of::<DataJSON>())
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let t = &typed::<DataString>(cx, 0, "in_template")?.0;
        let d = &typed::<DataJSON>(cx, 1, "in_data")?.0;
        cx.emit_at(0, DataString(fill_template(t, d).map_err(OpError::new)?));
        Ok(())
    }
}

/// Splits a text into chunks of `size` characters, each overlapping the previous one by
/// `overlap` characters (`chunker`, `DataString` → `DataChunk`).
#[derive(Clone, Debug, PartialEq)]
pub struct Chunker {
    /// Characters per chunk (≥ 1).
    pub size: usize,
    /// Characters shared with the previous chunk (< size).
    pub overlap: usize,
}

impl Default for Chunker {
    fn default() -> Self {
        Chunker {
            size: 512,
            overlap: 0,
        }
    }
}

/// Splits `text` into chunks of `size` characters overlapping by `overlap`.
pub fn chunk_text(text: &str, size: usize, overlap: usize) -> Result<Vec<String>, String> {
    if size == 0 {
        return Err("size must be at least 1".into());
    }
    if overlap >= size {
        return Err(format!(
            "overlap ({overlap}) must be smaller than size ({size})"
        ));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let end = (start + size).min(chars.len());
        out.push(chars[start..end].iter().collect());
        if end == chars.len() {
            break;
        }
        start = end - overlap;
    }
    Ok(out)
}

impl Operator for Chunker {
    fn spec(&self) -> OpSpec {
        OpSpec::new("chunker", "Chunker", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<DataString>())
            .output("out_data", TypeRef::of::<DataChunk>())
    }
    fn params(&self) -> Params {
        params([("size", json!(self.size)), ("overlap", json!(self.overlap))])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let t = &typed::<DataString>(cx, 0, "in_data")?.0;
        let chunks = chunk_text(t, self.size, self.overlap).map_err(OpError::new)?;
        cx.emit_at(0, DataChunk(chunks));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunker_overlaps_and_covers_the_text() {
        assert_eq!(chunk_text("abcdefg", 3, 1).unwrap(), ["abc", "cde", "efg"]);
        assert_eq!(chunk_text("abcd", 3, 0).unwrap(), ["abc", "d"]);
        assert_eq!(chunk_text("", 3, 0).unwrap(), Vec::<String>::new());
        assert_eq!(chunk_text("éàü", 2, 0).unwrap(), ["éà", "ü"]);
        assert!(chunk_text("abc", 2, 2).is_err());
    }

    #[test]
    fn counter_keeps_integers_integers() {
        assert_eq!(increment(&json!(41)).unwrap(), json!(42));
        assert_eq!(increment(&json!(1.5)).unwrap(), json!(2.5));
        assert!(increment(&json!("1")).is_err());
    }

    #[test]
    fn template_fills_dotted_keys() {
        let d = json!({"name": "Ada", "n": 3, "user": {"langs": ["fr", "en"]}});
        assert_eq!(
            fill_template("{{name}} has {{ n }} ({{user.langs.1}})", &d).unwrap(),
            "Ada has 3 (en)"
        );
        assert!(
            fill_template("{{missing}}", &d)
                .unwrap_err()
                .contains("missing")
        );
        assert!(fill_template("{{name", &d).is_err());
    }

    #[test]
    fn json_path_reads_fields_and_indices() {
        let d = json!({"a": {"b": [10, 20]}});
        assert_eq!(json_path(&d, "a.b[1]"), Some(&json!(20)));
        assert_eq!(json_path(&d, "a.b.0"), Some(&json!(10)));
        assert_eq!(json_path(&d, ""), Some(&d));
        assert_eq!(json_path(&d, "a.c"), None);
    }
}
