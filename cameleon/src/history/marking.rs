//! A marking in a form that names what it holds instead of numbering it: what a migration
//! moves from one net to another (docs/migration.md), and what a migration entry of the journal
//! keeps of the marking it starts from.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::TokenRecord;

/// A run's marking: every connection that holds a token, and every operator's internal state,
/// by name. Connections that hold nothing (EMPTY) and operators without a state are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MarkingRecord {
    /// The connections holding a token, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conns: Vec<ConnRecord>,
    /// The operators' internal states, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateRecord>,
}

/// A connection holding a token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnRecord {
    /// The connection, `a.out -> b.in`.
    pub conn: String,
    /// Its declared data type's name (`DataString`).
    #[serde(rename = "type")]
    pub ty: String,
    /// `true`: NEW (not yet consumed); `false`: OLD (consumed, its value still readable).
    pub new: bool,
    /// The token it holds.
    pub token: TokenRecord,
}

/// An operator's internal state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateRecord {
    /// The operator instance.
    pub op: String,
    /// Its operator type (`source`, `counter`).
    #[serde(rename = "type")]
    pub ty: String,
    /// The state, in the operator's serde form.
    pub state: Json,
}
