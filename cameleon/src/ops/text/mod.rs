//! `std-text`: text operators — [`Replace`] (`replace`), [`Case`] (`case`), [`Trim`] (`trim`),
//! [`Truncate`] (`truncate`), and on lists and patterns [`SplitText`] (`split_text`),
//! [`JoinText`] (`join_text`) and [`RegexExtract`] (`regex_extract`).
//!
//! Patterns (`replace` with `regex: true`, `split_text` with `regex: true`, `regex_extract`)
//! are the [`regex`] crate's syntax: matching takes time linear in the text, there is no
//! look-around and no backreference. A pattern is compiled when the net is loaded — a bad one
//! is a problem at its param, with line and column — and is refused past
//! [`MAX_PATTERN_CHARS`] characters or when it compiles to more than [`MAX_PATTERN_BYTES`], so a
//! pattern from a `.cm` file cannot take the machine's memory.
//!
//! Lengths are in **characters**: Unicode scalar values, Rust's `char` (`é` is one character
//! whether written precomposed; an emoji with a skin tone is two).

mod lists;
#[cfg(test)]
mod tests;

pub use lists::{JoinText, RegexExtract, SplitText};

use regex::{Regex, RegexBuilder};

use crate::operator;
use crate::operator::ParamError;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::DataString;

/// The longest pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 1_000;

/// The most memory a compiled pattern may take, in bytes (1 MiB; the `regex` crate's
/// `size_limit`, also the limit of its lazy DFA's cache).
pub const MAX_PATTERN_BYTES: usize = 1 << 20;

/// Compiles `pattern`, the value of param `param`, within the limits; the error says what is
/// wrong with it and how to write it.
pub fn compile_pattern(param: &str, pattern: &str) -> Result<Regex, ParamError> {
    let n = pattern.chars().count();
    if n > MAX_PATTERN_CHARS {
        return Err(ParamError::new(
            param.to_owned(),
            format!(
                "the pattern is {n} characters long, more than the {MAX_PATTERN_CHARS} allowed"
            ),
        )
        .with_hint("split the work over several operators, or match less at once"));
    }
    RegexBuilder::new(pattern)
        .size_limit(MAX_PATTERN_BYTES)
        .dfa_size_limit(MAX_PATTERN_BYTES)
        .build()
        .map_err(|e| {
            let message = match &e {
                regex::Error::CompiledTooBig(limit) => format!(
                    "the pattern compiles to more than {limit} bytes, the limit for a pattern"
                ),
                // The syntax error, drawn on its own lines with a caret under the fault.
                other => format!(
                    "`{pattern}` is not a valid regular expression: {}",
                    other
                        .to_string()
                        .lines()
                        .last()
                        .unwrap_or_default()
                        .trim()
                        .trim_start_matches("error: ")
                ),
            };
            ParamError::new(param.to_owned(), message).with_hint(
                "the syntax is the `regex` crate's (no look-around, no backreferences); write a \
                 literal `.`, `(`, `[`, `*`, `+`, `?`, `|`, `\\` as `\\.`, `\\(`, …",
            )
        })
}

/// A pattern compiled again at firing time (validated at load: this fails only for an instance
/// built in code with a bad pattern).
fn pattern_at_run(param: &str, pattern: &str) -> Result<Regex, OpError> {
    compile_pattern(param, pattern).map_err(|e| OpError::new(e.to_string()))
}

/// Replaces text in the DataString on `in_data` and emits the result on `out_data`: every
/// occurrence of `find` (or with `all: false` the first) becomes `with`; with `regex: true`,
/// `find` is a regular expression and `with` may use its groups (`$1`, `${name}`). E.g.
/// `params: {find: "-", with: " "}` turns `"a-b-c"` into `"a b c"`; `params: {find: "(\\d+)
/// apples", with: "$1 pears", regex: true}` turns `"3 apples"` into `"3 pears"`.
///
/// A text without a match passes unchanged. A pattern that is not valid is a problem of the
/// `.cm` file at `find`, reported when the net is loaded.
#[operator(id = "replace", label = "Replace", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Replace {
    /// The text to find, matched exactly (case included); with `regex: true`, a regular
    /// expression (the `regex` crate's syntax). Must not be empty.
    #[param]
    pub find: String,
    /// What each match becomes (default: nothing, the match is removed). With `regex: true`,
    /// `$1` or `${name}` is the text of a group of the match, `$$` a literal `$`.
    #[param(default = "")]
    pub with: String,
    /// Whether `find` is a regular expression (default: `false`, a literal text).
    #[param(default = false)]
    pub regex: bool,
    /// Whether every match is replaced (default: `true`); `false` replaces the first only.
    #[param(default = true)]
    pub all: bool,
    /// the text to change
    #[input]
    in_data: In<DataString>,
    /// the text with the matches replaced
    #[output]
    out_data: Out<DataString>,
}

impl Default for Replace {
    fn default() -> Self {
        Replace::new("", "")
    }
}

impl Replace {
    /// Replaces every occurrence of the literal text `find` with `with`.
    pub fn new(find: impl Into<String>, with: impl Into<String>) -> Self {
        Replace {
            find: find.into(),
            with: with.into(),
            regex: false,
            all: true,
        }
    }

    /// The same, `find` being a regular expression.
    pub fn regex(mut self) -> Self {
        self.regex = true;
        self
    }

    /// `text` with the replacements made.
    pub fn apply(&self, text: &str) -> Result<String, OpError> {
        let limit = if self.all { 0 } else { 1 };
        if self.regex {
            let re = pattern_at_run("find", &self.find)?;
            Ok(re.replacen(text, limit, self.with.as_str()).into_owned())
        } else if self.all {
            Ok(text.replace(&self.find, &self.with))
        } else {
            Ok(text.replacen(&self.find, &self.with, 1))
        }
    }
}

impl Run for Replace {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let out = self.apply(&cx.get(Self::in_data)?.0)?;
        cx.emit(Self::out_data, DataString(out));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.find.is_empty() {
            return Err(ParamError::new(
                "find".to_owned(),
                "`find` is empty: there is nothing to replace",
            ));
        }
        if self.regex {
            compile_pattern("find", &self.find)?;
        }
        Ok(())
    }
}

/// Changes the letter case of the DataString on `in_data` and emits it on `out_data`: `to:
/// lower`, `upper`, or `title` (each word's first letter upper case, its other letters lower
/// case; a word is a run of letters, digits and apostrophes). E.g. `params: {to: title}` turns
/// `"the QUICK fox's den"` into `"The Quick Fox's Den"`.
///
/// Every letter of every script is converted by its Unicode case mapping (`ß` upper case is
/// `SS`, so the text may get longer).
#[operator(id = "case", label = "Change case", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The case to convert to: `lower`, `upper` or `title` (default `lower`).
    #[param(default = "lower")]
    pub to: String,
    /// the text to convert
    #[input]
    in_data: In<DataString>,
    /// the text in the case `to` names
    #[output]
    out_data: Out<DataString>,
}

impl Default for Case {
    fn default() -> Self {
        Case::new("lower")
    }
}

impl Case {
    /// The cases `to` may name.
    pub const CASES: [&'static str; 3] = ["lower", "upper", "title"];

    /// Converts to case `to` (`lower`, `upper`, `title`).
    pub fn new(to: impl Into<String>) -> Self {
        Case { to: to.into() }
    }

    /// `text` in the case, or why `to` names none.
    pub fn apply(&self, text: &str) -> Result<String, ParamError> {
        match self.to.as_str() {
            "lower" => Ok(text.to_lowercase()),
            "upper" => Ok(text.to_uppercase()),
            "title" => Ok(title_case(text)),
            other => {
                let hint = match crate::util::did_you_mean(other, Self::CASES) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => "write `lower`, `upper` or `title`".to_owned(),
                };
                Err(ParamError::new(
                    "to".to_owned(),
                    format!("unknown case `{other}`: the cases are lower, upper and title"),
                )
                .with_hint(hint))
            }
        }
    }
}

/// Each word's first letter upper case, the rest lower case (a word: letters, digits,
/// apostrophes).
fn title_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        let word_char = c.is_alphanumeric() || c == '\'' || c == '’';
        if word_char && !in_word {
            out.extend(c.to_uppercase());
        } else if word_char {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        in_word = word_char;
    }
    out
}

impl Run for Case {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let out = self
            .apply(&cx.get(Self::in_data)?.0)
            .map_err(|e| OpError::new(e.to_string()))?;
        cx.emit(Self::out_data, DataString(out));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        self.apply("").map(drop)
    }
}

/// Removes characters from the ends of the DataString on `in_data` and emits the rest on
/// `out_data`: white space (spaces, tabs, line breaks, every Unicode white space) by default,
/// or any of the characters of `chars`; from both ends, or only the `start` or `end` (`side`).
/// E.g. with no params it turns `"  hi  "` into `"hi"`; `params: {chars: "*-", side: end}`
/// turns `"-a-**"` into `"-a"`.
#[operator(id = "trim", label = "Trim", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Trim {
    /// The characters to remove, any of them in any order (default: none given, which means
    /// white space).
    #[param]
    pub chars: Option<String>,
    /// Which ends: `both` (default), `start` or `end`.
    #[param(default = "both")]
    pub side: String,
    /// the text to trim
    #[input]
    in_data: In<DataString>,
    /// the text without the removed characters at its ends
    #[output]
    out_data: Out<DataString>,
}

impl Default for Trim {
    fn default() -> Self {
        Trim::new()
    }
}

impl Trim {
    /// Trims white space from both ends.
    pub fn new() -> Self {
        Trim {
            chars: None,
            side: "both".to_owned(),
        }
    }

    /// `text` trimmed, or why `side` names no end.
    pub fn apply<'a>(&self, text: &'a str) -> Result<&'a str, ParamError> {
        let set = self.chars.as_deref();
        let drop = |c: char| set.map_or(c.is_whitespace(), |s| s.contains(c));
        match self.side.as_str() {
            "both" => Ok(text.trim_matches(drop)),
            "start" => Ok(text.trim_start_matches(drop)),
            "end" => Ok(text.trim_end_matches(drop)),
            other => Err(ParamError::new(
                "side".to_owned(),
                format!("unknown side `{other}`: write `both`, `start` or `end`"),
            )),
        }
    }
}

impl Run for Trim {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let out = self
            .apply(&cx.get(Self::in_data)?.0)
            .map_err(|e| OpError::new(e.to_string()))?
            .to_owned();
        cx.emit(Self::out_data, DataString(out));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.chars.as_deref() == Some("") {
            return Err(ParamError::new(
                "chars".to_owned(),
                "`chars` is empty: nothing would be trimmed",
            )
            .with_hint("leave `chars` out to trim white space"));
        }
        self.apply("").map(drop)
    }
}

/// Cuts the DataString on `in_data` to at most `max` characters (Unicode scalar values, not
/// bytes) and emits it on `out_data`; a cut text ends with `ellipsis`, counted within `max`. A
/// text of `max` characters or fewer passes unchanged. E.g. `params: {max: 8, ellipsis: "…"}`
/// turns `"chameleons"` into `"chamele…"`.
#[operator(id = "truncate", label = "Truncate", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Truncate {
    /// The most characters in the result, the ellipsis included (at least 1).
    #[param]
    pub max: usize,
    /// What a cut text ends with, e.g. `"…"` or `"..."` (default: nothing). Must be shorter
    /// than `max`.
    #[param(default = "")]
    pub ellipsis: String,
    /// the text to cut
    #[input]
    in_data: In<DataString>,
    /// at most `max` characters of it
    #[output]
    out_data: Out<DataString>,
}

impl Default for Truncate {
    fn default() -> Self {
        Truncate::new(80)
    }
}

impl Truncate {
    /// Cuts to `max` characters, without an ellipsis.
    pub fn new(max: usize) -> Self {
        Truncate {
            max,
            ellipsis: String::new(),
        }
    }

    /// The same, a cut text ending with `ellipsis`.
    pub fn ellipsis(mut self, ellipsis: impl Into<String>) -> Self {
        self.ellipsis = ellipsis.into();
        self
    }

    /// `text` cut to `max` characters.
    pub fn apply(&self, text: &str) -> String {
        if text.chars().count() <= self.max {
            return text.to_owned();
        }
        let keep = self.max.saturating_sub(self.ellipsis.chars().count());
        let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
        format!("{}{}", &text[..end], self.ellipsis)
    }
}

impl Run for Truncate {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let out = self.apply(&cx.get(Self::in_data)?.0);
        cx.emit(Self::out_data, DataString(out));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        if self.max == 0 {
            return Err(ParamError::new(
                "max".to_owned(),
                "`max` must be at least 1",
            ));
        }
        let n = self.ellipsis.chars().count();
        if n >= self.max {
            return Err(ParamError::new(
                "ellipsis".to_owned(),
                format!(
                    "the ellipsis is {n} characters long, as long as `max` ({}) or longer: a cut \
                     text would be nothing but the ellipsis",
                    self.max
                ),
            ));
        }
        Ok(())
    }
}
