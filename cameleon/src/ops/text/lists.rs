//! `split_text`, `join_text` and `regex_extract`: text to and from JSON lists, and named groups
//! of a pattern to JSON.

use serde_json::{Map, Value as Json};

use super::{compile_pattern, pattern_at_run};
use crate::operator;
use crate::operator::ParamError;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{DataJSON, DataString};

/// Splits the DataString on `in_data` at each `separator` and emits the pieces, in order, as a
/// DataJSON list of strings on `out_data`; with `regex: true` the separator is a regular
/// expression. E.g. `params: {separator: ","}` turns `"a,b,,c"` into `["a", "b", "", "c"]`;
/// `params: {separator: "[,;]\\s*", regex: true}` turns `"a, b;c"` into `["a", "b", "c"]`.
///
/// `trim: true` trims white space from each piece; `skip_empty: true` leaves out the pieces
/// that are empty (after trimming). An empty text gives `[""]`, or `[]` with `skip_empty`.
/// `join_text` does the reverse.
#[operator(id = "split_text", label = "Split text", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct SplitText {
    /// Where to cut: a literal text (default: a line break, `"\n"`), or with `regex: true` a
    /// regular expression. Must not be empty.
    #[param(default = "\n")]
    pub separator: String,
    /// Whether `separator` is a regular expression (default: `false`, a literal text).
    #[param(default = false)]
    pub regex: bool,
    /// Whether each piece is trimmed of white space at both ends (default: `false`).
    #[param(default = false)]
    pub trim: bool,
    /// Whether empty pieces are left out (default: `false`, every piece is kept).
    #[param(default = false)]
    pub skip_empty: bool,
    /// the text to split
    #[input]
    in_data: In<DataString>,
    /// the pieces, as a JSON list of strings
    #[output]
    out_data: Out<DataJSON>,
}

impl Default for SplitText {
    fn default() -> Self {
        SplitText::new("\n")
    }
}

impl SplitText {
    /// Splits at each occurrence of the literal text `separator`.
    pub fn new(separator: impl Into<String>) -> Self {
        SplitText {
            separator: separator.into(),
            regex: false,
            trim: false,
            skip_empty: false,
        }
    }

    /// The pieces of `text`.
    pub fn apply(&self, text: &str) -> Result<Vec<String>, OpError> {
        let pieces: Vec<&str> = if self.regex {
            pattern_at_run("separator", &self.separator)?
                .split(text)
                .collect()
        } else {
            text.split(self.separator.as_str()).collect()
        };
        Ok(pieces
            .into_iter()
            .map(|p| if self.trim { p.trim() } else { p })
            .filter(|p| !(self.skip_empty && p.is_empty()))
            .map(str::to_owned)
            .collect())
    }
}

impl Run for SplitText {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let pieces = self.apply(&cx.get(Self::in_data)?.0)?;
        cx.emit(
            Self::out_data,
            DataJSON(Json::Array(pieces.into_iter().map(Json::String).collect())),
        );
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.separator.is_empty() {
            return Err(ParamError::new(
                "separator".to_owned(),
                "`separator` is empty: there is nowhere to cut",
            ));
        }
        if self.regex {
            let re = compile_pattern("separator", &self.separator)?;
            if re.is_match("") {
                return Err(ParamError::new(
                    "separator".to_owned(),
                    format!(
                        "the pattern `{}` matches an empty text, so it would cut between every \
                         character",
                        self.separator
                    ),
                )
                .with_hint(
                    "make it match at least one character, e.g. `,\\s*` rather than `,?\\s*`",
                ));
            }
        }
        Ok(())
    }
}

/// Joins the items of the DataJSON list on `in_data` into one DataString on `out_data`, with
/// `separator` between them: a string item as it is, a number or boolean as its JSON text,
/// `null` as nothing, an object or list as compact JSON. E.g. `params: {separator: ", "}`
/// turns `["a", 2, true]` into `"a, 2, true"`. (For the control-flow AND-join of several
/// branches, see `join`.)
///
/// A value that is not a list fails the firing, naming what it got.
#[operator(id = "join_text", label = "Join text", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct JoinText {
    /// What goes between two items (default: a line break, `"\n"`; `""` for nothing).
    #[param(default = "\n")]
    pub separator: String,
    /// a JSON list (e.g. from `split_text`)
    #[input]
    in_data: In<DataJSON>,
    /// the items joined into one text
    #[output]
    out_data: Out<DataString>,
}

impl Default for JoinText {
    fn default() -> Self {
        JoinText::new("\n")
    }
}

impl JoinText {
    /// Joins with `separator`.
    pub fn new(separator: impl Into<String>) -> Self {
        JoinText {
            separator: separator.into(),
        }
    }

    /// The items of `list` joined, or why `list` is not a list.
    pub fn apply(&self, list: &Json) -> Result<String, OpError> {
        let Json::Array(items) = list else {
            let what = match list {
                Json::Object(_) => "an object",
                Json::String(_) => "a string",
                Json::Number(_) => "a number",
                Json::Bool(_) => "a boolean",
                _ => "null",
            };
            return Err(OpError::new(format!(
                "join_text joins the items of a list, but received {what}: {}",
                super::Truncate::new(200)
                    .ellipsis("…")
                    .apply(&list.to_string())
            )));
        };
        let texts: Vec<String> = items
            .iter()
            .map(|v| match v {
                Json::String(s) => s.clone(),
                Json::Null => String::new(),
                other => other.to_string(),
            })
            .collect();
        Ok(texts.join(&self.separator))
    }
}

impl Run for JoinText {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let out = self.apply(&cx.get(Self::in_data)?.0)?;
        cx.emit(Self::out_data, DataString(out));
        Ok(())
    }
}

/// Finds `pattern` (a regular expression with named groups, `(?P<name>…)`) in the DataString on
/// `in_data` and emits its groups as a DataJSON object on `out_data`, each group's text under
/// its name (`null` for a group that took no part in the match). E.g. `params: {pattern:
/// "(?P<qty>\\d+) (?P<item>\\w+)"}` turns `"3 apples"` into `{"qty": "3", "item": "apples"}`.
///
/// Without a match the value is `null`. `all: true` emits a list instead, one object per
/// match in order (`[]` without a match). The group values are always strings: parse numbers
/// downstream. A pattern without a named group emits the matched text itself (a string).
#[operator(id = "regex_extract", label = "Regex extract", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct RegexExtract {
    /// The regular expression (the `regex` crate's syntax); each named group
    /// `(?P<name>…)` becomes a key of the result.
    #[param]
    pub pattern: String,
    /// Whether every match is extracted, as a list (default: `false`, the first match only).
    #[param(default = false)]
    pub all: bool,
    /// the text to search
    #[input]
    in_data: In<DataString>,
    /// the named groups as a JSON object (a list with `all: true`; `null` without a match)
    #[output]
    out_data: Out<DataJSON>,
}

impl Default for RegexExtract {
    fn default() -> Self {
        RegexExtract::new("")
    }
}

impl RegexExtract {
    /// Extracts the named groups of the first match of `pattern`.
    pub fn new(pattern: impl Into<String>) -> Self {
        RegexExtract {
            pattern: pattern.into(),
            all: false,
        }
    }

    /// The same, every match, as a list.
    pub fn all(mut self) -> Self {
        self.all = true;
        self
    }

    /// What the operator emits for `text`.
    pub fn apply(&self, text: &str) -> Result<Json, OpError> {
        let re = pattern_at_run("pattern", &self.pattern)?;
        let names: Vec<&str> = re.capture_names().flatten().collect();
        let value = |caps: regex::Captures<'_>| -> Json {
            if names.is_empty() {
                return Json::String(caps[0].to_owned());
            }
            let m: Map<String, Json> = names
                .iter()
                .map(|n| {
                    let v = caps
                        .name(n)
                        .map_or(Json::Null, |g| Json::String(g.as_str().to_owned()));
                    ((*n).to_owned(), v)
                })
                .collect();
            Json::Object(m)
        };
        Ok(if self.all {
            Json::Array(re.captures_iter(text).map(value).collect())
        } else {
            re.captures(text).map_or(Json::Null, value)
        })
    }
}

impl Run for RegexExtract {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let v = self.apply(&cx.get(Self::in_data)?.0)?;
        cx.emit(Self::out_data, DataJSON(v));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.pattern.is_empty() {
            return Err(ParamError::new(
                "pattern".to_owned(),
                "`pattern` is empty",
            )
            .with_hint("write a regular expression with named groups, e.g. `(?P<qty>\\d+) (?P<item>\\w+)`"));
        }
        compile_pattern("pattern", &self.pattern).map(drop)
    }
}
