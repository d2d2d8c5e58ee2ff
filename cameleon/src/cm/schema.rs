//! The JSON Schema of the `.cm` format, generated from the format types ([`CmFile`] and its parts).
//!
//! The same schema is shipped as `cameleon/cm.schema.json` (a test keeps the file equal to what
//! [`schema_json`] generates) for editors (`# yaml-language-server: $schema=…`) and for LLMs
//! writing `.cm` files. Operator types and their params are listed by `cameleon catalogue
//! --json`; the schema describes the file's shape.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};

use super::CmFile;
use crate::net::{Mode, Placement};

impl JsonSchema for Mode {
    fn schema_name() -> Cow<'static, str> {
        "Mode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Execution mode: `sequential` fires one operator per step (the first enabled in declaration order); `parallel` fires every enabled operator per step.",
            "type": "string",
            "enum": ["sequential", "parallel"]
        })
    }
}

impl JsonSchema for Placement {
    fn schema_name() -> Cow<'static, str> {
        "Placement".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Where an operator instance runs: `local` (in the process running the net, the default) or `remote` (on a satellite, when the run is connected to one).",
            "type": "string",
            "enum": ["local", "remote"]
        })
    }
}

/// The schema, as a JSON value (JSON Schema 2020-12).
pub fn schema() -> serde_json::Value {
    let schema =
        SchemaGenerator::new(SchemaSettings::draft2020_12()).into_root_schema_for::<CmFile>();
    schema.to_value()
}

/// The schema as pretty-printed JSON text with a final newline: the content of
/// `cameleon/cm.schema.json`.
pub fn schema_json() -> String {
    let mut s = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_schema_file_is_the_generated_one() {
        let shipped = include_str!("../../cm.schema.json");
        assert!(
            shipped == schema_json(),
            "cameleon/cm.schema.json is out of date: regenerate it with `cargo run -p cameleon-cli -- schema > cameleon/cm.schema.json`"
        );
    }

    #[test]
    fn schema_lists_the_top_level_keys_in_canonical_order() {
        let s = schema();
        let keys: Vec<&str> = s["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, super::super::format::FILE_KEYS);
        assert_eq!(s["required"], serde_json::json!(["operators"]));
        assert_eq!(s["additionalProperties"], serde_json::json!(false));
    }
}
