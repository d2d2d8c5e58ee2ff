//! Saved internal state, and sets of input ports.

use std::any::Any as StdAny;
use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::connection::ConnState;

/// Saved internal state of an operator, for rollback and replay — and, when it has a serde form,
/// for the journal of a durable run.
///
/// [`OpState::new`] wraps any value: backward steps and replay work, but a run of the operator
/// cannot be journaled (its state could not be written to disk). [`OpState::serde`] wraps a
/// value that serde can write and read back, so a journaled run records it and a resumed run
/// restores it. `#[operator]` generates the serde form for its internal-state fields.
///
/// ```
/// use cameleon::operator::OpState;
///
/// let s = OpState::serde(vec![1, 2, 3]);
/// let json = s.to_json().unwrap();
/// assert_eq!(json, serde_json::json!([1, 2, 3]));
/// let back = s.from_json_like(json).unwrap();
/// assert_eq!(back.get::<Vec<i32>>(), Some(&vec![1, 2, 3]));
/// assert!(OpState::new(7u8).to_json().is_err()); // no serde form
/// ```
pub struct OpState {
    value: Box<dyn StdAny + Send>,
    codec: Option<StateCodec>,
}

/// How an [`OpState`] is written to JSON and read back: two functions over the type-erased
/// value. Built by [`OpState::serde`], or by `#[operator]` for its state fields.
#[derive(Clone, Copy)]
pub struct StateCodec {
    /// Writes the value (the `S` it was built for) as JSON.
    pub to_json: fn(&(dyn StdAny + Send)) -> Result<serde_json::Value, String>,
    /// Reads a value of the same type back from JSON.
    pub from_json: fn(serde_json::Value) -> Result<Box<dyn StdAny + Send>, String>,
}

impl fmt::Debug for StateCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateCodec(..)")
    }
}

/// Why an operator's state could not be written to JSON or read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The state was saved with [`OpState::new`]: it has no serde form.
    #[error(
        "its internal state has no serde form (saved with `OpState::new`; use `OpState::serde`, or declare the operator with `#[operator]`)"
    )]
    Opaque,
    /// serde failed.
    #[error("{0}")]
    Serde(String),
    /// A state was given to an operator whose type has none.
    #[error("its operator type has no internal state")]
    Stateless,
}

/// Reads operator `op`'s internal state back from its serde form: the one way a state that
/// was written out comes back — from a journal, an inner run's record, a satellite's reply or
/// request (the operator as built lends its state's type).
pub fn read_state(
    op: &dyn crate::operator::Operator,
    json: serde_json::Value,
) -> Result<OpState, StateError> {
    op.save_state()
        .ok_or(StateError::Stateless)?
        .from_json_like(json)
}

fn codec_to_json<S: Serialize + 'static>(
    v: &(dyn StdAny + Send),
) -> Result<serde_json::Value, String> {
    match v.downcast_ref::<S>() {
        Some(s) => serde_json::to_value(s).map_err(|e| e.to_string()),
        None => Err("the state is not of the type its codec was built for".into()),
    }
}

fn codec_from_json<S: DeserializeOwned + Send + 'static>(
    v: serde_json::Value,
) -> Result<Box<dyn StdAny + Send>, String> {
    serde_json::from_value::<S>(v)
        .map(|s| Box::new(s) as Box<dyn StdAny + Send>)
        .map_err(|e| e.to_string())
}

impl OpState {
    /// Wraps a state value without a serde form: backward steps and replay work, journaling
    /// does not (see [`serde`](Self::serde)).
    pub fn new<S: StdAny + Send>(s: S) -> Self {
        OpState {
            value: Box::new(s),
            codec: None,
        }
    }

    /// Wraps a state value that serde writes and reads back, so a journaled run can record it.
    pub fn serde<S: StdAny + Send + Serialize + DeserializeOwned>(s: S) -> Self {
        OpState {
            value: Box::new(s),
            codec: Some(StateCodec {
                to_json: codec_to_json::<S>,
                from_json: codec_from_json::<S>,
            }),
        }
    }

    /// Wraps a state value with an explicit codec (what `#[operator]` generates).
    pub fn with_codec<S: StdAny + Send>(s: S, codec: StateCodec) -> Self {
        OpState {
            value: Box::new(s),
            codec: Some(codec),
        }
    }

    /// The state as an `S`, if it is one.
    pub fn get<S: StdAny>(&self) -> Option<&S> {
        self.value.downcast_ref()
    }

    /// Whether the state has a serde form (a journaled run can record it).
    pub fn has_serde_form(&self) -> bool {
        self.codec.is_some()
    }

    /// The state's JSON form.
    pub fn to_json(&self) -> Result<serde_json::Value, StateError> {
        let codec = self.codec.ok_or(StateError::Opaque)?;
        (codec.to_json)(&*self.value).map_err(StateError::Serde)
    }

    /// Reads a state of the same type as `self` back from `json` (`self` only lends its type:
    /// an operator's current state is the model for the states it saved).
    pub fn from_json_like(&self, json: serde_json::Value) -> Result<OpState, StateError> {
        let codec = self.codec.ok_or(StateError::Opaque)?;
        let value = (codec.from_json)(json).map_err(StateError::Serde)?;
        Ok(OpState {
            value,
            codec: Some(codec),
        })
    }
}

impl fmt::Debug for OpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_json() {
            Ok(v) => write!(f, "OpState({v})"),
            Err(_) => f.write_str("OpState(..)"),
        }
    }
}

/// A set of input ports, as a bit mask (ports 0..64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InputSet(pub u64);

impl InputSet {
    /// Every input that is NEW: the default consumption (docs/semantics.md §4.4).
    #[inline]
    pub fn new_inputs(states: &[ConnState]) -> Self {
        let mut m = 0u64;
        // A plain indexed loop over at most 64 states (no iterator adapters, no branch).
        for (i, s) in states[..states.len().min(64)].iter().enumerate() {
            m |= u64::from(*s == ConnState::New) << i;
        }
        InputSet(m)
    }

    /// Only the first NEW input in port order (Merge).
    pub fn first_new(states: &[ConnState]) -> Self {
        states
            .iter()
            .take(64)
            .position(|s| *s == ConnState::New)
            .map_or(InputSet(0), |i| InputSet(1 << i))
    }

    /// Whether port `i` is in the set.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1 << i) != 0
    }
}
