//! The `.cm` format as Rust types: what a file may hold, key by key, in canonical key order.
//!
//! These types are the format's single description: the loader reads them (one part at a time,
//! so that every mistake is reported), the writer writes them, and the JSON Schema shipped as
//! `cameleon/cm.schema.json` is generated from them ([`schema`](super::schema)).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::net::{Mode, Placement};
use crate::operator::Params;

/// The format version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

fn format_version() -> u32 {
    FORMAT_VERSION
}

/// A whole `.cm` file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Caméléon net (.cm)",
    description = "A Caméléon pipeline: operator instances (from the catalogue, see `cameleon catalogue`) and the connections between their ports. Every input port takes exactly one connection; a connection goes from an output `instance.out_port` to an input `instance.in_port`."
)]
pub struct CmFile {
    /// Format version; absent means 1.
    #[serde(default = "format_version")]
    #[schemars(range(min = 1, max = 1))]
    pub cameleon: u32,
    /// The net's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the net does, in a sentence or two: the description of the net offered as a tool
    /// (docs/tools.md#nets-as-tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Execution settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<CmConfig>,
    /// Which tools the net's operators may call through the tool gate (`cameleon tools` lists
    /// them). Without this key every tool call is denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<CmTools>,
    /// Operator instances, in declaration order (which breaks ties when several can fire).
    pub operators: Vec<CmOperator>,
    /// Connections from an output port to an input port, in declaration order.
    #[serde(default)]
    pub connections: Vec<CmConnection>,
}

/// `config:`: how the net runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmConfig {
    /// `sequential` (one operator per step, the first enabled in declaration order; the default)
    /// or `parallel` (every enabled operator per step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// How many times one operator may fire in a run before it stops in `LOOP_LIMIT`
    /// (default 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_loop_iterations: Option<u32>,
    /// What a run may spend on models: it stops in `BUDGET` (exit 4) before a model request
    /// that would start once a bound is reached. Shared by the run's sub-nets and maps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<CmBudget>,
}

/// `config: budget:`: bounds on what a run spends on models (docs/semantics.md §4.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmBudget {
    /// Most tokens (prompt and completion) of the run's model requests, inner runs included.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "budget_tokens"
    )]
    #[schemars(range(min = 1))]
    pub tokens: Option<u64>,
    /// Most US dollars, at the models' `price_usd` in the capabilities file (a model without
    /// one costs nothing).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "budget_usd"
    )]
    #[schemars(range(min = 0))]
    pub cost_usd: Option<f64>,
}

/// `budget: tokens`: a whole number (0 passes here and is refused by the loader's check, with
/// the others' problems).
fn budget_tokens<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    v.as_u64().map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "`tokens` must be a whole number of tokens, at least 1, not {v}"
        ))
    })
}

/// `budget: cost_usd`: a number (its sign is checked by the loader).
fn budget_usd<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    v.as_f64().map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "`cost_usd` must be an amount of US dollars above 0, not {v}"
        ))
    })
}

/// `tools:`: the net's tool policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmTools {
    /// Tools that run when called.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tools that run only once a person approves each call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
}

/// One operator instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmOperator {
    /// Instance name, unique in the net, used by connections (`id.port`). No `.`, space or `>`.
    #[schemars(length(min = 1), pattern(r"^[^. >]+$"))]
    pub id: String,
    /// Catalogue id of the operator type (`cameleon catalogue` lists them). When absent, `id`
    /// is the type (files of the original format).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Label shown in diagrams; defaults to the catalogue label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Instance number, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<i64>,
    /// Layout position, x (with `y`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    /// Layout position, y (with `x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    /// The operator's parameters, as its catalogue entry declares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
    /// A firing of this instance that has not finished after this many milliseconds fails
    /// (`timed out`); overrides the operator type's timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    /// Retries of a failed firing of this instance: at most `max` more attempts, waiting
    /// `backoff_ms` (doubling each time) in between; overrides the operator type's retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<CmRetry>,
    /// Where the instance runs: `local` (the default) or `remote` (on a satellite, when the
    /// run is connected to one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

/// `retry: {max, backoff_ms}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmRetry {
    /// How many times a failed firing is tried again.
    pub max: u32,
    /// The wait before the first retry, in milliseconds (default 0); it doubles at each retry.
    #[serde(default)]
    pub backoff_ms: u64,
}

/// One connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CmConnection {
    /// The output port feeding the connection: `instance.out_port`.
    #[schemars(pattern(r"^[^. >]+\.[^ >]+$"))]
    pub from: String,
    /// The input port it feeds: `instance.in_port`.
    #[schemars(pattern(r"^[^. >]+\.[^ >]+$"))]
    pub to: String,
}

/// Top-level keys of a file, in canonical order (the fields of [`CmFile`]).
pub(crate) const FILE_KEYS: &[&str] = &[
    "cameleon",
    "name",
    "description",
    "config",
    "tools",
    "operators",
    "connections",
];
