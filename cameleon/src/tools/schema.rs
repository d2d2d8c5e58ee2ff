//! Checking a JSON value against a JSON Schema: a tool call's arguments (the gate) and a model's
//! answer (`llm_json`). With the `json-schema` feature (on by default) by the `jsonschema`
//! crate; without it, [`Schema::compile`] refuses with a message naming the feature, and the
//! gate leaves a call's arguments to the tool's own reading of them.

use serde_json::Value as Json;

/// Whether this build checks values against JSON Schemas (the `json-schema` feature).
pub const SCHEMAS: bool = cfg!(feature = "json-schema");

/// A compiled JSON Schema.
#[derive(Debug)]
pub struct Schema {
    #[cfg(feature = "json-schema")]
    validator: jsonschema::Validator,
    #[cfg(not(feature = "json-schema"))]
    _none: std::convert::Infallible,
}

impl Schema {
    /// Compiles `schema`. `Err`: it is not a valid JSON Schema, or this build has no validator
    /// (without the `json-schema` feature), with why.
    pub fn compile(schema: &Json) -> Result<Schema, String> {
        #[cfg(feature = "json-schema")]
        {
            jsonschema::validator_for(schema)
                .map(|validator| Schema { validator })
                .map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "json-schema"))]
        {
            let _ = schema;
            Err("this build of Caméléon checks no JSON Schema: build it with the `json-schema` feature of the `cameleon` crate (on by default)".to_owned())
        }
    }

    /// Why `v` breaks the schema, one line per problem (`at `/path`: …`), at most `n`; empty
    /// when it satisfies it.
    pub fn problems(&self, v: &Json, n: usize) -> Vec<String> {
        #[cfg(feature = "json-schema")]
        {
            self.validator
                .iter_errors(v)
                .take(n)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("at `{at}`: {e}")
                    }
                })
                .collect()
        }
        #[cfg(not(feature = "json-schema"))]
        {
            let _ = (v, n);
            match self._none {}
        }
    }

    /// Why the arguments `args` of tool `tool` break the schema, if they do: where in the
    /// arguments, which schema keyword, and what it wants — never the value itself (it may be
    /// a secret or a file's content).
    pub(crate) fn args_problem(&self, tool: &str, args: &Json) -> Option<String> {
        #[cfg(feature = "json-schema")]
        {
            self.validator
                .iter_errors(args)
                .next()
                .map(|e| invalid_args(tool, &e))
        }
        #[cfg(not(feature = "json-schema"))]
        {
            let _ = (tool, args);
            match self._none {}
        }
    }
}

#[cfg(feature = "json-schema")]
fn invalid_args(tool: &str, e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let what = match e.kind() {
        K::Type {
            kind: TypeKind::Single(t),
        } => format!("expected {t}"),
        K::Type { .. } => "not of an allowed type".to_owned(),
        K::Required { property } => format!("missing required property {property}"),
        K::AdditionalProperties { unexpected } => format!(
            "unexpected propert{} {}",
            if unexpected.len() == 1 { "y" } else { "ies" },
            unexpected
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        K::Enum { .. } | K::Constant { .. } => "not one of the allowed values".to_owned(),
        K::Minimum { limit } => format!("less than the minimum {limit}"),
        K::Maximum { limit } => format!("more than the maximum {limit}"),
        K::MinLength { limit } => format!("shorter than {limit} characters"),
        K::MaxLength { limit } => format!("longer than {limit} characters"),
        _ => {
            let keyword = e
                .schema_path()
                .as_str()
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            format!("does not satisfy `{keyword}`")
        }
    };
    let at = e.instance_path().as_str();
    let at = if at.is_empty() { "/" } else { at };
    format!(
        "invalid arguments for `{tool}`: {what} at `{at}` (schema path `{}`); `cameleon tools --json` shows the tool's input schema",
        e.schema_path().as_str()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    #[cfg(feature = "json-schema")]
    fn problems_name_the_place() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .unwrap();
        assert_eq!(s.problems(&json!({"n": 3}), 5), Vec::<String>::new());
        let p = s.problems(&json!({"n": "three"}), 5);
        assert!(p[0].starts_with("at `/n`:"), "{p:?}");
        assert!(s.problems(&json!({}), 5)[0].contains("\"n\""));
        let a = s.args_problem("t", &json!({"n": "three"})).unwrap();
        assert!(a.contains("expected integer at `/n`"), "{a}");
        assert!(
            !a.contains("three"),
            "the value is never in the message: {a}"
        );
    }

    #[test]
    #[cfg(not(feature = "json-schema"))]
    fn without_the_feature_compiling_a_schema_names_the_feature() {
        let e = Schema::compile(&json!({"type": "object"})).unwrap_err();
        assert!(e.contains("`json-schema` feature"), "{e}");
        const { assert!(!SCHEMAS) };
    }
}
