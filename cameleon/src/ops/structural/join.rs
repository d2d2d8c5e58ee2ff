//! The AND-join, and the partial join (`quorum`) with its cancellation (docs/semantics.md §10.5).

use std::marker::PhantomData;

use super::{check_arity, letter_port, validate_arity, value_at};
use crate::connection::ConnState;
use crate::operator;
use crate::operator::FiniteControl;
use crate::operator::ParamError;
use crate::operator::{Firing, In, InputSet, OpError, OpSpec, Out, Region, Run};
use crate::policy::{Enabling, Policy};
use crate::types::{Any, PortType};

/// AND-join: waits until every input `in_a`, `in_b`, … is NEW, then passes `in_a` to `out_data`. With `quorum: m`, a partial join: passes on once m inputs have arrived, then waits for the others before it resets; with `cancel`, withdraws the tokens of the operators listed as soon as it passes on, and resets.
///
/// A partial join (docs/semantics.md §10.5) counts each input once per round: a second token on
/// an input already counted waits for the next round (it is blocking). Its inputs all carry
/// `in_a`'s type; it passes on the value of the first input, in port order, of the firing that
/// reaches the quorum. `quorum: 1` is the discriminator. A partial join has at most 16 inputs.
#[operator(id = "join", label = "Join", family = structural, firing = all)]
#[derive(Clone, Debug)]
pub struct Join<T: PortType = Any> {
    /// number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …
    #[param(default = 2)]
    arity: usize,
    /// inputs that must arrive before it passes on (1..=arity); null: every input (the AND-join)
    #[param]
    quorum: Option<usize>,
    /// operators whose tokens it withdraws when it passes on (docs/semantics.md §10.4)
    #[param(default = [])]
    cancel: Vec<String>,
    /// Partial join: the inputs counted in the current round (bit per input).
    seen: u64,
    /// the branch whose value is passed on (its type is the output's)
    #[input]
    in_a: In<T>,
    /// another branch to wait for (any type; `arity` adds `in_c`, `in_d`, …)
    #[input(variadic = arity)]
    in_b: In<Any>,
    /// `in_a`'s value, once the inputs have arrived
    #[output]
    out_data: Out<T>,
}

/// Most inputs of a partial join: its control state is the set of inputs counted so far.
pub const MAX_PARTIAL_ARITY: usize = 16;

impl<T: PortType> Join<T> {
    /// A join of `arity` inputs (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        check_arity(arity).map(|()| Join {
            arity,
            quorum: None,
            cancel: Vec::new(),
            seen: 0,
            __cameleon_ports: PhantomData,
        })
    }

    /// A partial join (docs/semantics.md §10.5): passes on once `quorum` of its `arity` inputs
    /// have arrived (`quorum` 1: a discriminator), then waits for the others before it resets.
    pub fn partial(arity: usize, quorum: usize) -> Result<Self, String> {
        let join = Join {
            quorum: Some(quorum),
            ..Join::new(arity)?
        };
        join.check_quorum()?;
        Ok(join)
    }

    /// Withdraws the tokens of the operators `region` (by instance name) when it passes on
    /// (docs/semantics.md §10.4): a cancelling join or discriminator, which then resets.
    pub fn cancelling<S: Into<String>>(mut self, region: impl IntoIterator<Item = S>) -> Self {
        self.cancel = region.into_iter().map(Into::into).collect();
        self
    }

    /// The quorum of a partial join; `None` for an AND-join.
    pub fn quorum(&self) -> Option<usize> {
        self.quorum.filter(|&m| m < self.arity)
    }

    fn check_quorum(&self) -> Result<(), String> {
        match self.quorum {
            Some(m) if m == 0 || m > self.arity => Err(format!(
                "quorum must be between 1 and the arity ({}), not {m}",
                self.arity
            )),
            Some(m) if m < self.arity && self.arity > MAX_PARTIAL_ARITY => Err(format!(
                "a partial join has at most {MAX_PARTIAL_ARITY} inputs, not {}",
                self.arity
            )),
            _ => Ok(()),
        }
    }

    fn full(&self) -> u64 {
        (1u64 << self.arity.min(63)) - 1
    }

    /// The inputs a partial join consumes in control state `seen`: the NEW ones not counted yet.
    fn fresh_inputs(seen: u64, inputs: &[ConnState]) -> InputSet {
        InputSet(InputSet::new_inputs(inputs).0 & !seen)
    }

    /// A partial join's firing in state `seen` with `consumed`: whether it passes on, and the
    /// next state.
    fn partial_step(&self, seen: u64, consumed: u64) -> (bool, u64) {
        let m = self.quorum().unwrap_or(self.arity) as u32;
        let after = seen | consumed;
        let emit = seen.count_ones() < m && after.count_ones() >= m;
        let reset = after == self.full() || (emit && !self.cancel.is_empty());
        (emit, if reset { 0 } else { after })
    }
}

impl<T: PortType> Default for Join<T> {
    fn default() -> Self {
        Join {
            arity: 2,
            quorum: None,
            cancel: Vec::new(),
            seen: 0,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Join<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if self.quorum().is_none() {
            return cx.forward(Self::in_a, Self::out_data);
        }
        let states: Vec<ConnState> = (0..cx.input_count()).map(|i| cx.state_at(i)).collect();
        let consumed = Self::fresh_inputs(self.seen, &states).0;
        let (emit, next) = self.partial_step(self.seen, consumed);
        if emit {
            let first = consumed.trailing_zeros() as usize;
            let v = value_at(cx, first, &letter_port("in", first))?.clone();
            cx.emit_value(Self::out_data, v);
        }
        self.seen = next;
        Ok(())
    }

    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        match self.quorum() {
            Some(_) => Self::fresh_inputs(self.seen, inputs),
            None => InputSet::new_inputs(inputs),
        }
    }

    fn validate(&self) -> Result<(), ParamError> {
        validate_arity(self.arity)?;
        self.check_quorum()
            .map_err(|e| ParamError::new("quorum".to_owned(), e))
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        self.quorum().map(|_| self as &dyn FiniteControl)
    }

    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        let mut spec = if self.cancel.is_empty() {
            spec
        } else {
            spec.cancels(Region::Ops(self.cancel.clone()), Some("out_data"))
        };
        if self.quorum().is_some() {
            // Every input carries `in_a`'s type: the one passed on may be any of them.
            let ty = spec.inputs[0].ty;
            for p in &mut spec.inputs {
                p.ty = ty;
            }
            spec.policy = Policy::Custom;
            spec = spec.emits(&[&[], &["out_data"]]);
        }
        spec
    }
}

/// A partial join's control state is the set of inputs counted in the current round
/// (docs/semantics.md §10.5).
impl<T: PortType> FiniteControl for Join<T> {
    fn count(&self) -> u32 {
        1 << self.arity.min(MAX_PARTIAL_ARITY)
    }
    fn initial(&self) -> u32 {
        self.seen as u32
    }
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        Self::fresh_inputs(q as u64, e.inputs).0 != 0
    }
    fn consumes(&self, q: u32, inputs: &[ConnState]) -> Option<InputSet> {
        Some(Self::fresh_inputs(q as u64, inputs))
    }
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        let consumed = Self::fresh_inputs(q as u64, inputs).0;
        let (emit, next) = self.partial_step(q as u64, consumed);
        vec![(usize::from(emit), next as u32)]
    }
}
