//! Connections (Petri places) and their state (docs/semantics.md §2).

use std::fmt;

use serde::Serialize;

use crate::types::{TypeInfo, Value};

/// The sentinel index "none": no connection (an unconnected optional input), no token.
pub(crate) const NONE: u32 = u32::MAX;

/// The state of a connection. Each connection holds at most one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(u8)]
pub enum ConnState {
    /// Has never received a token (or was rolled back to before it did).
    Empty = 0,
    /// Holds a token its consumer has not consumed yet.
    New = 1,
    /// Its token was consumed; the value is kept for reactive re-use.
    Old = 2,
}

impl ConnState {
    /// `EMPTY`, `NEW` or `OLD`, as the specification and traces write it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnState::Empty => "EMPTY",
            ConnState::New => "NEW",
            ConnState::Old => "OLD",
        }
    }
}

impl fmt::Display for ConnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Index of an operator in its net (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct OpId(pub u32);

/// Index of a connection in its net (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ConnId(pub u32);

impl OpId {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl ConnId {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A token: a typed value plus logical-clock metadata (docs/semantics.md §5, §9). Never wall time.
#[derive(Clone, Debug)]
pub struct Token {
    /// The value (shared with every connection the same emission fed).
    pub value: Value,
    /// The logical step (1-based history depth) of the firing that emitted it.
    pub step: u32,
    /// The operator that emitted it.
    pub op: OpId,
}

impl Token {
    /// The name of the value's data type.
    pub fn type_name(&self) -> &'static str {
        self.value.type_name()
    }
}

/// One end of a connection: an operator's port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRef {
    /// The operator.
    pub op: OpId,
    /// The port's index among the operator's inputs or outputs.
    pub port: u16,
}

/// A connection from one output port to one input port. Its type is its source port's type.
#[derive(Clone, Debug)]
pub struct Connection {
    /// The output port feeding it.
    pub from: PortRef,
    /// The input port it feeds.
    pub to: PortRef,
    /// The connection's data type (its source port's resolved type).
    pub ty: &'static TypeInfo,
    /// `a.out -> b.in`, as written in `.cm` files, traces and [`Cvm::state_of`](crate::Cvm::state_of).
    pub name: String,
}
