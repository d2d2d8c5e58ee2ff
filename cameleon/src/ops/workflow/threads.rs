//! Several threads on one connection: the thread split and the thread merge (docs/semantics.md
//! §10.10).

use std::marker::PhantomData;

use super::value_of;
use crate::connection::ConnState;
use crate::operator;
use crate::operator::{
    CanFire, FiniteControl, Firing, In, InputSet, OpError, Out, ParamError, Run,
};
use crate::policy::Enabling;
use crate::types::{Any, PortType, TypedValue};

// ---------------------------------------------------------------------------------------------
// Threads on one connection

/// Thread split: emits the value of `in_data` `n` times on `out_data`, one thread per firing, each once the previous one was consumed.
///
/// docs/semantics.md §10.10. A connection holds one token, so the threads follow each other on
/// it; a new `in_data` is taken only once all `n` are out.
#[operator(id = "thread_split", label = "Thread split", family = structural, firing = custom)]
#[derive(Clone, Debug)]
pub struct ThreadSplit<T: PortType = Any> {
    /// threads per value (1..=1024)
    #[param(default = 2)]
    n: usize,
    /// Threads emitted of the current value (its control state).
    k: usize,
    /// The value being split.
    value: Option<TypedValue>,
    /// the value to split into `n` threads
    #[input]
    in_data: In<T>,
    /// the value, `n` times, one thread after another
    #[output]
    out_data: Out<T>,
}

/// Most threads a thread split or a thread merge counts (its control states).
pub const MAX_THREADS: usize = 1024;

fn check_threads(n: usize) -> Result<(), ParamError> {
    if (1..=MAX_THREADS).contains(&n) {
        Ok(())
    } else {
        Err(ParamError::new(
            "n".to_owned(),
            format!("`n` must be between 1 and {MAX_THREADS}, not {n}"),
        ))
    }
}

impl<T: PortType> ThreadSplit<T> {
    /// Splits each value into `n` threads.
    pub fn new(n: usize) -> Self {
        ThreadSplit {
            n,
            k: 0,
            value: None,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> CanFire for ThreadSplit<T> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        FiniteControl::can_fire(self, self.k as u32, e)
    }
}

impl<T: PortType> Run for ThreadSplit<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if self.k == 0 {
            self.value = Some(TypedValue(value_of(cx, 0, "in_data")?));
        }
        let v = self
            .value
            .as_ref()
            .map(|t| t.0.clone())
            .ok_or_else(|| OpError::new("no value to split"))?;
        cx.emit_value(Self::out_data, v);
        self.k = (self.k + 1) % self.n.max(1);
        if self.k == 0 {
            self.value = None;
        }
        Ok(())
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        FiniteControl::consumes(self, self.k as u32, inputs).unwrap_or_default()
    }
    fn validate(&self) -> Result<(), ParamError> {
        check_threads(self.n)
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
}

/// The control state: threads emitted of the current value.
impl<T: PortType> FiniteControl for ThreadSplit<T> {
    fn count(&self) -> u32 {
        self.n.clamp(1, MAX_THREADS) as u32
    }
    fn initial(&self) -> u32 {
        self.k as u32
    }
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        q > 0 || e.inputs.first() == Some(&ConnState::New)
    }
    fn consumes(&self, q: u32, inputs: &[ConnState]) -> Option<InputSet> {
        Some(if q == 0 {
            InputSet::new_inputs(inputs)
        } else {
            InputSet(0)
        })
    }
    fn fire(&self, q: u32, _inputs: &[ConnState]) -> Vec<(usize, u32)> {
        vec![(0, (q + 1) % self.count())]
    }
}

/// Thread merge: takes `n` threads arriving one after another on `in_data` and passes on one, the `n`-th, on `out_data`.
///
/// docs/semantics.md §10.10.
#[operator(
    id = "thread_merge",
    label = "Thread merge",
    family = structural,
    emits = [[], [out_data]]
)]
#[derive(Clone, Debug)]
pub struct ThreadMerge<T: PortType = Any> {
    /// threads merged into one (1..=1024)
    #[param(default = 2)]
    n: usize,
    /// Threads taken so far in this round (its control state).
    k: usize,
    /// the threads to merge, one after another
    #[input]
    in_data: In<T>,
    /// one thread, once `n` have arrived
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> ThreadMerge<T> {
    /// Merges `n` threads into one.
    pub fn new(n: usize) -> Self {
        ThreadMerge {
            n,
            k: 0,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for ThreadMerge<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        self.k += 1;
        if self.k >= self.n {
            self.k = 0;
            return cx.forward(Self::in_data, Self::out_data);
        }
        Ok(())
    }
    fn validate(&self) -> Result<(), ParamError> {
        check_threads(self.n)
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
}

/// The control state: threads taken in this round.
impl<T: PortType> FiniteControl for ThreadMerge<T> {
    fn count(&self) -> u32 {
        self.n.clamp(1, MAX_THREADS) as u32
    }
    fn initial(&self) -> u32 {
        self.k as u32
    }
    fn fire(&self, q: u32, _inputs: &[ConnState]) -> Vec<(usize, u32)> {
        let taken = q + 1;
        if taken as usize >= self.n {
            vec![(1, 0)]
        } else {
            vec![(0, taken)]
        }
    }
}
