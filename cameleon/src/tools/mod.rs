//! Tools: functions a pipeline (or a model, the command line, a satellite) may call, each
//! through **one gate** with one access policy and one result shape.
//!
//! - A tool is declared with [`#[tool]`](macro@crate::tool) on a function — sync or async —
//!   taking one arguments struct (`Deserialize + JsonSchema`) and returning
//!   `Result<impl Serialize, ToolError>`; it registers itself with `inventory`, like an
//!   operator. Its [`ToolManifest`] (name, description, input and output JSON Schemas) is what an
//!   LLM sees (`cameleon tools --json`).
//! - [`ToolRegistry`] holds the tools of a capability generation: every `#[tool]` of the
//!   program, plus tools registered in code ([`Tool`] is object-safe; a satellite's remote
//!   tools implement it too).
//! - [`ToolGate`] is the door: it applies the net's `tools:` policy (`allow`, `approve`; no
//!   key: every tool denied), checks the arguments against the tool's schema, runs the tool
//!   (catching a panic, bounding its time) and returns a [`ToolResult`] — `ok`, `error`,
//!   `denied` or `timeout`, with `meta` (tool, origin, duration, attempts). A call that is not
//!   allowed never runs.
//! - The standard tools: `read_file`, `list_dir`, `write_file` (confined to the base folder,
//!   the `.cm` file's), `calc` (arithmetic) and `json_query` (JSON Pointer).
//!
//! ```
//! use cameleon::operator::capability::{ToolCall, ToolStatus};
//! use cameleon::net::ToolPolicy;
//! use cameleon::tools::{ToolGate, ToolRegistry};
//! use serde_json::json;
//!
//! let registry = ToolRegistry::global();
//! let policy = ToolPolicy::allow(["calc"]);
//! let gate = ToolGate::new(registry.clone(), Some(&policy), ".");
//!
//! let r = gate.call_blocking(ToolCall::new("calc", json!({"expr": "2 + 3 * 4"})));
//! assert_eq!(r.status, ToolStatus::Ok);
//! assert_eq!(r.content, json!(14));
//!
//! // Not in `allow`: denied, and the tool never runs.
//! let r = gate.call_blocking(ToolCall::new("read_file", json!({"path": "secret.txt"})));
//! assert_eq!(r.status, ToolStatus::Denied);
//! ```
//!
//! docs/tools.md describes the policy, the result shape and the standard tools.

mod calc;
mod effects;
mod error;
mod fs;
mod gate;
mod registry;
mod schema;
mod std_tools;

pub use crate::operator::capability::{
    AskFirst, Effect, ToolAccess, ToolCall, ToolManifest, ToolMeta, ToolResult, ToolStatus,
};
pub use calc::{CalcError, eval as calc_eval};
pub use effects::{net_effects, op_effects, tools_called};
pub use error::{ToolError, ToolErrorKind};
pub use gate::{Approval, Approver, ToolGate};
pub use registry::{
    DuplicateTool, Tool, ToolContext, ToolEntry, ToolFn, ToolOutput, ToolProvider, ToolRegistry,
};
pub use schema::{SCHEMAS, Schema};
pub use std_tools::{CalcArgs, JsonQueryArgs, PathArgs, WriteArgs};
