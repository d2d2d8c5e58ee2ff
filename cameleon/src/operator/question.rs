//! Questions: what an operator that waits for a value from outside the net (a person's answer,
//! an external event) asks, and how an answer is read (docs/semantics.md §6.1).

use std::fmt;

use crate::types::{DataBool, DataJSON, DataString, TypeInfo, Value};

/// What an operator asks before it can fire: a prompt, and the type of the answer it expects.
/// An operator declares one through [`Operator::question`](super::Operator::question); the
/// standard `ask` operator is the one that does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// What to ask (shown to the person who answers).
    pub prompt: String,
    /// The type an answer must have.
    pub ty: &'static TypeInfo,
}

/// An answer that cannot be used: not of the question's type, or not readable as one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AnswerError {
    /// What is wrong and how to fix it.
    pub message: String,
}

impl AnswerError {
    fn new(message: impl Into<String>) -> Self {
        AnswerError {
            message: message.into(),
        }
    }
}

impl Question {
    /// A question expecting an answer of type `ty`.
    pub fn new(prompt: impl Into<String>, ty: &'static TypeInfo) -> Self {
        Question {
            prompt: prompt.into(),
            ty,
        }
    }

    /// Checks that `value` answers this question (it has the expected type).
    pub fn check(&self, value: &Value) -> Result<(), AnswerError> {
        if self.ty.is_any() || value.type_info() == self.ty {
            Ok(())
        } else {
            Err(AnswerError::new(format!(
                "the answer is a {}, but the question expects a {}",
                value.type_name(),
                self.ty.name
            )))
        }
    }

    /// Reads an answer from its JSON form (an API request, an answers file): a `DataString`
    /// wants a JSON string, a `DataBool` `true` or `false`, a `DataJSON` any JSON value; other
    /// types their serde form.
    pub fn from_json(&self, json: serde_json::Value) -> Result<Value, AnswerError> {
        if self.ty == <DataJSON as crate::types::PortType>::INFO || self.ty.is_any() {
            return Ok(Value::new(DataJSON(json)));
        }
        let shown = shorten(&json.to_string());
        (self.ty.from_json)(json).map_err(|_| {
            AnswerError::new(format!(
                "`{shown}` is not a {}: {}",
                self.ty.name,
                expected(self.ty)
            ))
        })
    }

    /// Reads an answer typed by a person (a terminal prompt, `--answer OP=VALUE`): a
    /// `DataString` is the text as is; a `DataBool` is `yes`/`no` (also `y`, `n`, `true`,
    /// `false`, `1`, `0`); anything else is parsed as JSON.
    pub fn from_text(&self, text: &str) -> Result<Value, AnswerError> {
        if self.ty == <DataString as crate::types::PortType>::INFO {
            return Ok(Value::new(DataString(text.to_owned())));
        }
        if self.ty == <DataBool as crate::types::PortType>::INFO {
            return match text.trim().to_ascii_lowercase().as_str() {
                "yes" | "y" | "true" | "1" => Ok(Value::new(DataBool(true))),
                "no" | "n" | "false" | "0" => Ok(Value::new(DataBool(false))),
                _ => Err(AnswerError::new(format!(
                    "`{}` is not a DataBool: {}",
                    shorten(text),
                    expected(self.ty)
                ))),
            };
        }
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            AnswerError::new(format!(
                "`{}` is not valid JSON ({e}): {}",
                shorten(text),
                expected(self.ty)
            ))
        })?;
        self.from_json(json)
    }
}

impl fmt::Display for Question {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.prompt, self.ty.name)
    }
}

/// What a person should give for type `ty`.
fn expected(ty: &TypeInfo) -> &'static str {
    match ty.name {
        "DataBool" => "answer yes or no (JSON: true or false)",
        "DataString" => "answer with a text (JSON: a string)",
        "DataJSON" => "answer with any JSON value",
        _ => "answer with the type's JSON form",
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(57).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PortType;

    #[test]
    fn text_answers_are_read_by_the_question_type() {
        let s = Question::new("name?", DataString::INFO);
        assert_eq!(s.from_text("Ada").unwrap().to_json(), "Ada");
        let b = Question::new("ok?", DataBool::INFO);
        assert_eq!(b.from_text("Yes").unwrap().to_json(), true);
        assert_eq!(b.from_text("0").unwrap().to_json(), false);
        let e = b.from_text("maybe").unwrap_err();
        assert!(e.message.contains("not a DataBool"), "{e}");
        assert!(e.message.contains("yes or no"), "{e}");
        let j = Question::new("data?", DataJSON::INFO);
        assert_eq!(
            j.from_text("[1,2]").unwrap().to_json(),
            serde_json::json!([1, 2])
        );
        assert!(j.from_text("[1,").is_err());
    }

    #[test]
    fn json_answers_must_have_the_question_type() {
        let b = Question::new("ok?", DataBool::INFO);
        assert_eq!(
            b.from_json(serde_json::json!(true)).unwrap().to_json(),
            true
        );
        let e = b.from_json(serde_json::json!("yes")).unwrap_err();
        assert!(e.message.contains("`\"yes\"` is not a DataBool"), "{e}");
        let s = Question::new("name?", DataString::INFO);
        assert!(s.from_json(serde_json::json!(3)).is_err());
        assert!(s.check(&Value::new(DataBool(true))).is_err());
        assert!(s.check(&Value::new(DataString("x".into()))).is_ok());
    }
}
