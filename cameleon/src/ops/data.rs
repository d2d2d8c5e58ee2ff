//! `std-data`: data processing.

use serde_json::Value as Json;

use super::test_expr::Test;
use crate::operator;
use crate::operator::ParamError;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{Any, Binary, DataBool, DataChunk, DataJSON, DataString, Value};

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
    #[input]
    in_data: In<Any>,
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
    #[input]
    in_data: In<DataString>,
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
    #[input]
    in_data: In<Binary>,
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
    #[input]
    in_data: In<DataJSON>,
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
    #[input]
    in_data: In<DataJSON>,
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
    #[input]
    in_data: In<DataJSON>,
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
    #[input]
    in_data: In<Any>,
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
    #[input]
    in_main: In<DataString>,
    #[input]
    in_meta: In<DataString>,
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
    #[input]
    in_template: In<DataString>,
    #[input]
    in_data: In<DataJSON>,
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

/// Splits the text on `in_data` into chunks of `size` characters overlapping by `overlap` (DataChunk on `out_data`).
#[operator(id = "chunker", label = "Chunker", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Chunker {
    /// characters per chunk (≥ 1)
    #[param(default = 512)]
    pub size: usize,
    /// characters shared with the previous chunk (< size)
    #[param(default = 0)]
    pub overlap: usize,
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataChunk>,
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

impl Run for Chunker {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_data)?.0;
        let chunks = chunk_text(t, self.size, self.overlap).map_err(OpError::new)?;
        cx.emit(Self::out_data, DataChunk(chunks));
        Ok(())
    }
    fn validate(&self) -> Result<(), ParamError> {
        chunk_text("", self.size, self.overlap)
            .map(drop)
            .map_err(|e| ParamError::new("overlap".to_owned(), e))
    }
}

/// Splits the text on `in_data` into passages of whole sentences (or paragraphs) of at most
/// `size` characters (DataChunk on `out_data`): what a retriever and the `extractive` model
/// quote best.
///
/// The units — sentences, or with `unit: paragraphs` paragraphs, as
/// [`models::text`](crate::models::text) splits them — are packed in order, as many per passage
/// as fit in `size` characters (sentences joined by a space, paragraphs by a blank line); a
/// unit longer than `size` is a passage of its own, never cut. Unlike `chunker`, no passage
/// starts or ends inside a sentence.
#[operator(id = "passages", label = "Passages", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Passages {
    /// most characters per passage (≥ 1)
    #[param(default = 512)]
    pub size: usize,
    /// what a passage is made of: `sentences` or `paragraphs`
    #[param(default = "sentences")]
    pub unit: String,
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataChunk>,
}

impl Default for Passages {
    fn default() -> Self {
        Passages::new(512)
    }
}

impl Passages {
    /// Passages of whole sentences, at most `size` characters each.
    pub fn new(size: usize) -> Self {
        Passages {
            size,
            unit: "sentences".to_owned(),
        }
    }

    /// Passages of whole paragraphs, at most `size` characters each.
    pub fn paragraphs(size: usize) -> Self {
        Passages {
            size,
            unit: "paragraphs".to_owned(),
        }
    }

    /// The passages of `text`, or why the params do not allow any.
    pub fn split(&self, text: &str) -> Result<Vec<String>, ParamError> {
        if self.size == 0 {
            return Err(ParamError::new(
                "size".to_owned(),
                "size must be at least 1",
            ));
        }
        match self.unit.as_str() {
            "sentences" => Ok(pack(crate::models::text::sentences(text), self.size, " ")),
            "paragraphs" => {
                let paras = crate::models::text::paragraphs(text)
                    .into_iter()
                    .map(|p| p.trim().to_owned())
                    .collect();
                Ok(pack(paras, self.size, "\n\n"))
            }
            other => Err(ParamError::new(
                "unit".to_owned(),
                format!("unknown unit `{other}`: write `sentences` or `paragraphs`"),
            )),
        }
    }
}

/// Packs `units` in order into pieces of at most `size` characters, joined by `sep`.
fn pack(units: Vec<String>, size: usize, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut len = 0;
    let sep_len = sep.chars().count();
    for u in units {
        let ulen = u.chars().count();
        if !cur.is_empty() && len + sep_len + ulen > size {
            out.push(std::mem::take(&mut cur));
            len = 0;
        }
        if !cur.is_empty() {
            cur.push_str(sep);
            len += sep_len;
        }
        cur.push_str(&u);
        len += ulen;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Run for Passages {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_data)?.0;
        let passages = self.split(t).map_err(|e| OpError::new(e.to_string()))?;
        cx.emit(Self::out_data, DataChunk(passages));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        self.split("").map(drop)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
    fn passages_pack_whole_sentences_or_paragraphs() {
        let text = "One two. Three four five.\nSix.\n\nSeven eight nine ten eleven.";
        assert_eq!(
            Passages::new(20).split(text).unwrap(),
            [
                "One two.",
                "Three four five.",
                "Six.",
                "Seven eight nine ten eleven."
            ]
        );
        assert_eq!(
            Passages::new(29).split(text).unwrap(),
            [
                "One two. Three four five.",
                "Six.",
                "Seven eight nine ten eleven."
            ],
        );
        assert_eq!(
            Passages::new(30).split(text).unwrap(),
            [
                "One two. Three four five. Six.",
                "Seven eight nine ten eleven."
            ],
        );
        assert_eq!(
            Passages::paragraphs(1000).split(text).unwrap(),
            ["One two. Three four five.\nSix.\n\nSeven eight nine ten eleven."]
        );
        let words = Passages {
            size: 10,
            unit: "words".into(),
        };
        assert!(
            words
                .split(text)
                .unwrap_err()
                .to_string()
                .contains("unknown unit `words`")
        );
        assert!(Passages::new(0).split(text).is_err());
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
