//! The standard tools: `read_file`, `list_dir`, `write_file` (confined to the base folder),
//! `calc` (arithmetic) and `json_query` (JSON Pointer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::fs::MAX_READ_BYTES;
use super::{ToolContext, ToolError};
use crate::files::{self, Who};
use crate::tool;

/// Arguments of `read_file` and `list_dir`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// A path relative to the base folder (the `.cm` file's folder); `..`, absolute paths and
    /// symbolic links leading out of it are refused.
    pub path: String,
}

/// Arguments of `write_file`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// A path relative to the base folder; missing folders are created.
    pub path: String,
    /// The text to write (replacing the file).
    pub content: String,
}

/// Arguments of `calc`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalcArgs {
    /// An arithmetic expression: numbers, `+ - * / % ^`, parentheses, unary minus.
    pub expr: String,
}

/// Arguments of `json_query`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonQueryArgs {
    /// Any JSON value.
    pub value: Json,
    /// A JSON Pointer (RFC 6901) into it: `/items/0/name`; `""` is the whole value.
    pub path: String,
}

/// One entry of a folder, as `list_dir` returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// `file`, `dir` or `symlink`.
    pub kind: String,
    /// Size in bytes (files).
    pub size: u64,
}

/// What `write_file` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Written {
    /// The path, as given.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
}

/// Reads a UTF-8 text file of the base folder (the `.cm` file's folder) and returns its text.
#[tool(name = "read_file", effects = read)]
fn read_file(cx: &ToolContext, args: PathArgs) -> Result<String, ToolError> {
    let bytes = files::read(
        Who::Tools,
        cx.base_dir(),
        &args.path,
        false,
        MAX_READ_BYTES,
        "read_file",
    )?;
    String::from_utf8(bytes).map_err(|e| {
        ToolError::new(format!(
            "`{}` is not UTF-8 text (invalid byte at offset {})",
            args.path,
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Lists a folder of the base folder: each entry's name, kind (`file`, `dir`, `symlink`) and
/// size, sorted by name. `"."` is the base folder itself.
#[tool(name = "list_dir", effects = read)]
fn list_dir(cx: &ToolContext, args: PathArgs) -> Result<Vec<DirEntry>, ToolError> {
    Ok(files::list(cx.base_dir(), &args.path)?
        .into_iter()
        .map(|e| DirEntry {
            name: e.name,
            kind: e.kind.to_owned(),
            size: e.size,
        })
        .collect())
}

/// Writes a text file in the base folder (the `.cm` file's folder), replacing it; creates
/// missing folders. Only a regular file with one link is written. Returns the path and the
/// number of bytes written.
#[tool(name = "write_file", effects = write)]
fn write_file(cx: &ToolContext, args: WriteArgs) -> Result<Written, ToolError> {
    files::write(cx.base_dir(), &args.path, args.content.as_bytes())?;
    Ok(Written {
        path: args.path,
        bytes: args.content.len() as u64,
    })
}

/// Evaluates an arithmetic expression: numbers, `+ - * / % ^` (`^` is the power,
/// right-associative), parentheses and unary minus, with the usual precedence. Whole results
/// are integers.
#[tool(name = "calc", effects = none)]
fn calc(args: CalcArgs) -> Result<serde_json::Number, ToolError> {
    let v = super::calc::eval(&args.expr).map_err(|e| ToolError::new(e.to_string()))?;
    // Whole numbers that an f64 holds exactly are written as integers.
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        return Ok(serde_json::Number::from(v as i64));
    }
    serde_json::Number::from_f64(v)
        .ok_or_else(|| ToolError::new("the result is not a finite number"))
}

/// Reads the part of a JSON value at a JSON Pointer (RFC 6901): `/items/0/name` is the `name` of
/// the first of `items`; `""` is the whole value.
#[tool(name = "json_query", effects = none)]
fn json_query(args: JsonQueryArgs) -> Result<Json, ToolError> {
    let path = args.path.as_str();
    if !path.is_empty() && !path.starts_with('/') {
        return Err(ToolError::invalid_args(format!(
            "`{path}` is not a JSON Pointer: it starts with `/` (e.g. `/{path}`), or is empty for the whole value"
        )));
    }
    if let Some(v) = args.value.pointer(path) {
        return Ok(v.clone());
    }
    // Name the longest prefix that exists, so the mistake is easy to see.
    let mut found = String::new();
    for part in path.split('/').skip(1) {
        let next = format!("{found}/{part}");
        if args.value.pointer(&next).is_none() {
            let at = if found.is_empty() {
                "the value"
            } else {
                found.as_str()
            };
            return Err(ToolError::new(format!(
                "nothing at `{path}`: `{at}` has no `{part}`"
            )));
        }
        found = next;
    }
    Err(ToolError::new(format!("nothing at `{path}`")))
}
