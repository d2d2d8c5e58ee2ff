//! The one form of a recorded history: [`Recorded`] (the tree and the position), made of
//! [`StepRecord`]s (one committed step) made of [`FiringRecord`]s (docs/semantics.md §5.5).
//!
//! It is what a [`Recorder`](crate::engine::Recorder) is handed for each committed step
//! ([`Committed::record`](crate::engine::Committed::record)), what the journal stores (an
//! entry's `body` is a step record's JSON), what a `subnet`'s or a `map`'s inner runs keep, and
//! what [`Cvm::restore`](crate::Cvm::restore) loads. Its serde form is the one codec:
//!
//! ```json
//! {"nodes": [{"parent": null, "firings": [{"op": 0, "written": [[0, null, 0]],
//!                                          "tokens": [{"type": "DataJSON", "value": 1}]}]}],
//!  "tip": 0, "redo_tip": null}
//! ```
//!
//! Operator and connection indices are in declaration order; token indices are in the run's
//! token arena (tokens are numbered in node order, then emission order); values are in their
//! data type's serde form, states in their operator's. Empty lists and absent states are left
//! out. Room is kept for later kinds of entries and annotations: a step has a
//! [`kind`](StepRecord::kind) (today always a firing step) and steps and firings carry
//! [`Note`]s (usage, reuse provenance, migrations), so a new kind of record is a new kind, not
//! a new shape.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A recorded history: every node of the tree, in creation order (a parent before its
/// children), and the position. What [`Cvm::record`](crate::Cvm::record) gives and
/// [`Cvm::restore`](crate::Cvm::restore) loads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// Every node of the tree, in creation order.
    pub nodes: Vec<StepRecord>,
    /// The last applied node (`None`: the initial marking).
    #[serde(default)]
    pub tip: Option<u32>,
    /// The deepest node of the recorded future (see
    /// [`Position::redo_tip`](crate::engine::Position::redo_tip)).
    #[serde(default)]
    pub redo_tip: Option<u32>,
}

/// One committed step: a node of the history tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// What the step is (left out for the default, a step of firings).
    #[serde(default, skip_serializing_if = "StepKind::is_fired")]
    pub kind: StepKind,
    /// Its parent node (`None`: a first step).
    #[serde(default)]
    pub parent: Option<u32>,
    /// Its firings, in declaration order.
    #[serde(default)]
    pub firings: Vec<FiringRecord>,
    /// Annotations of the step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

/// What a [`StepRecord`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// Operators fired (docs/semantics.md §4).
    #[default]
    Fired,
    /// The run moved onto another net (docs/migration.md): no firing; a `migrated` [`Note`]
    /// carries both nets' hashes, the new net's canonical `.cm` and the marking it starts from.
    Migrated,
}

impl StepKind {
    fn is_fired(&self) -> bool {
        *self == StepKind::Fired
    }
}

/// One firing of a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FiringRecord {
    /// The operator's index in the net.
    pub op: u32,
    /// The connections it consumed (NEW → OLD), in port order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumed: Vec<u32>,
    /// The connections it wrote, each with the token it held before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<WrittenRecord>,
    /// The tokens it emitted, in emission order: their arena indices follow every earlier
    /// node's tokens (an emission on an output nobody reads is a token too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenRecord>,
    /// The operator's state before the firing, if it has one (its serde form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Json>,
    /// The operator's state after the firing, if it has one (its serde form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Json>,
    /// Annotations of the firing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

/// A connection a firing wrote; in serde form `[conn, prior token or null, new token]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(u32, Option<u32>, u32)", into = "(u32, Option<u32>, u32)")]
pub struct WrittenRecord {
    /// The connection.
    pub conn: u32,
    /// The token it held before (`None`: it was EMPTY).
    pub prior: Option<u32>,
    /// The token written.
    pub new: u32,
}

impl From<(u32, Option<u32>, u32)> for WrittenRecord {
    fn from((conn, prior, new): (u32, Option<u32>, u32)) -> Self {
        WrittenRecord { conn, prior, new }
    }
}

impl From<WrittenRecord> for (u32, Option<u32>, u32) {
    fn from(w: WrittenRecord) -> Self {
        (w.conn, w.prior, w.new)
    }
}

/// An emitted value: its data type's name and its serde form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The data type's name (`DataString`).
    #[serde(rename = "type")]
    pub ty: Cow<'static, str>,
    /// The value, as its data type serializes it.
    pub value: Json,
}

/// An annotation of a step or a firing, tagged by its kind (`usage`, `reused`, `migrated`, …):
/// what later records add without changing the shape. A program keeps the notes whose kind it
/// does not know, and ignores them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// What the note says.
    pub kind: String,
    /// Its content.
    #[serde(default, skip_serializing_if = "Json::is_null")]
    pub data: Json,
}
