//! `std-data`: data processing.

mod chunks;

pub use chunks::{Chunker, Passages, chunk_text};

use serde_json::Value as Json;

use super::test_expr::Test;
use crate::operator;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{Any, Binary, DataBool, DataJSON, DataString, Value};

fn input<'a, O: ?Sized>(cx: &Firing<'a, O>, i: usize, port: &str) -> Result<&'a Value, OpError> {
    cx.value_at(i)
        .ok_or_else(|| OpError::new(format!("input `{port}` has no value")))
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

/// Turns any value into text on `out_data`: a DataString as is, DataJSON as compact JSON, DataBool as true/false, Binary as lossy UTF-8.
#[operator(id = "transform", label = "Transform", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transform {
    /// any value
    #[input]
    in_data: In<Any>,
    /// the value as text
    #[output]
    out_data: Out<DataString>,
}

impl Transform {
    /// The operator.
    pub fn new() -> Self {
        Transform
    }
}

impl Run for Transform {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = input(cx, 0, "in_data")?;
        cx.emit(Self::out_data, DataString(text_of(v)));
        Ok(())
    }
}

/// Parses the JSON text on `in_data` (DataString) into a DataJSON on `out_data`.
#[operator(id = "json_parse", label = "JSON parse", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonParse {
    /// a JSON text
    #[input]
    in_data: In<DataString>,
    /// the parsed value (the firing fails on text that is not JSON)
    #[output]
    out_data: Out<DataJSON>,
}

impl JsonParse {
    /// The operator.
    pub fn new() -> Self {
        JsonParse
    }
}

impl Run for JsonParse {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let s = &cx.get(Self::in_data)?.0;
        let v = serde_json::from_str::<Json>(s)
            .map_err(|e| OpError::new(format!("invalid JSON: {e}")))?;
        cx.emit(Self::out_data, DataJSON(v));
        Ok(())
    }
}

/// Decodes the Binary on `in_data` as UTF-8 text (lossy) on `out_data`.
#[operator(id = "binary_to_string", label = "Binary to string", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BinaryToString {
    /// bytes, e.g. from `file_loader`
    #[input]
    in_data: In<Binary>,
    /// the bytes as UTF-8 text (invalid sequences become U+FFFD)
    #[output]
    out_data: Out<DataString>,
}

impl BinaryToString {
    /// The operator.
    pub fn new() -> Self {
        BinaryToString
    }
}

impl Run for BinaryToString {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = input(cx, 0, "in_data")?;
        cx.emit(Self::out_data, DataString(text_of(v)));
        Ok(())
    }
}

/// Adds one to the JSON number on `in_data` (integers stay integers), on `out_data`.
#[operator(id = "counter", label = "Counter", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counter {
    /// a JSON number
    #[input]
    in_data: In<DataJSON>,
    /// that number plus one
    #[output]
    out_data: Out<DataJSON>,
}

impl Counter {
    /// The operator.
    pub fn new() -> Self {
        Counter
    }
}

impl Run for Counter {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = input(cx, 0, "in_data")?;
        let next = increment(&v.to_json())?;
        cx.emit(Self::out_data, DataJSON(next));
        Ok(())
    }
}

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

/// Writes the DataJSON on `in_data` as JSON text (DataString) on `out_data`.
#[operator(id = "json_stringify", label = "JSON stringify", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonStringify {
    /// indent the text
    #[param(default = false)]
    pub pretty: bool,
    /// any JSON value
    #[input]
    in_data: In<DataJSON>,
    /// its JSON text
    #[output]
    out_data: Out<DataString>,
}

impl Run for JsonStringify {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = &cx.get(Self::in_data)?.0;
        let s = if self.pretty {
            serde_json::to_string_pretty(v)?
        } else {
            serde_json::to_string(v)?
        };
        cx.emit(Self::out_data, DataString(s));
        Ok(())
    }
}

/// Reads the field at `path` of the DataJSON on `in_data` (dotted, with list indices: `a.b.0`).
///
/// `user.emails.0` and `user.emails[0]` are the same path; an empty path reads the whole value.
#[operator(id = "json_get", label = "JSON get", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonGet {
    /// dotted path, e.g. `user.emails.0`
    #[param]
    pub path: String,
    /// the JSON value to read from
    #[input]
    in_data: In<DataJSON>,
    /// the value at `path` (the firing fails when there is none)
    #[output]
    out_data: Out<DataJSON>,
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

impl Run for JsonGet {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = &cx.get(Self::in_data)?.0;
        let found = json_path(v, &self.path)
            .ok_or_else(|| OpError::new(format!("path `{}` not found in {v}", self.path)))?;
        cx.emit(Self::out_data, DataJSON(found.clone()));
        Ok(())
    }
}

/// Tests the JSON value of `in_data` (any type) and emits the verdict as a DataBool on `out_data`.
#[operator(id = "predicate", label = "Predicate", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Predicate {
    /// test on the value: {lt: 10}, {eq: "stop"}, {contains: "x"}, {not: {…}}, …
    #[param]
    pub test: Test,
    /// the value to test (any type; a DataString is tested as a string)
    #[input]
    in_data: In<Any>,
    /// whether `test` holds; connect it to `gate.in_condition` to route on it
    #[output]
    out_data: Out<DataBool>,
}

impl Predicate {
    /// A predicate with the given test.
    pub fn new(test: Test) -> Self {
        Predicate { test }
    }
}

impl Run for Predicate {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = input(cx, 0, "in_data")?;
        let b = self.test.eval(&v.to_json()).map_err(OpError::new)?;
        cx.emit(Self::out_data, DataBool(b));
        Ok(())
    }
}

/// Joins two strings: `in_main`, then `separator`, then `in_meta`, on `out_data`.
#[operator(id = "format", label = "Format", family = behavioral, firing = all, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    /// put between the two strings
    #[param(default = " ")]
    pub separator: String,
    /// the first string
    #[input]
    in_main: In<DataString>,
    /// the second string (both must arrive before it fires)
    #[input]
    in_meta: In<DataString>,
    /// `in_main`, `separator`, `in_meta`
    #[output]
    out_data: Out<DataString>,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            separator: " ".into(),
        }
    }
}

impl Run for Format {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let main = &cx.get(Self::in_main)?.0;
        let meta = &cx.get(Self::in_meta)?.0;
        let text = format!("{main}{}{meta}", self.separator);
        cx.emit(Self::out_data, DataString(text));
        Ok(())
    }
}

/// Fills the `{{key}}` placeholders of `in_template` (DataString) from `in_data` (DataJSON); the text goes to `out_data`.
///
/// Keys may be dotted paths; strings are inserted as is, other values as compact JSON; a
/// missing key is an error.
#[operator(id = "template", label = "Template", family = behavioral, firing = all, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Template {
    /// the text with `{{key}}` placeholders
    #[input]
    in_template: In<DataString>,
    /// the JSON object the placeholders are filled from
    #[input]
    in_data: In<DataJSON>,
    /// the filled text
    #[output]
    out_data: Out<DataString>,
}

impl Template {
    /// The operator.
    pub fn new() -> Self {
        Template
    }
}

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

impl Run for Template {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_template)?.0;
        let d = &cx.get(Self::in_data)?.0;
        let text = fill_template(t, d).map_err(OpError::new)?;
        cx.emit(Self::out_data, DataString(text));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
