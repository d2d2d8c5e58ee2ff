//! `std-flow`: the operators of the workflow control-flow patterns (docs/semantics.md §10):
//! cancellation ([`Cancel`], [`Terminate`]), critical sections ([`Mutex`]), milestones
//! ([`Milestone`]), transient triggers ([`Trigger`]), and several threads on one connection
//! ([`ThreadSplit`], [`ThreadMerge`]). The partial join is [`Join`](super::Join) with a
//! `quorum`.
//!
//! Each declares its rule to the verifier: a cancellation its region
//! ([`Cancels`](crate::operator::Cancels)), an operator whose rule depends on an internal state a
//! [`FiniteControl`], and one whose outputs depend on its input states the emission set each
//! state gives.

mod threads;

pub use threads::{MAX_THREADS, ThreadMerge, ThreadSplit};

use std::marker::PhantomData;

use crate::connection::ConnState;
use crate::operator;
use crate::operator::{
    CanFire, FiniteControl, Firing, In, InputSet, OpError, OpSpec, Out, ParamError, Region, Run,
};
use crate::policy::Enabling;
use crate::types::{Any, PortType, Value};

use super::structural::{MAX_ARITY, letter_port};

fn value_of<O: ?Sized>(cx: &Firing<'_, O>, i: usize, port: &str) -> Result<Value, OpError> {
    cx.value_at(i)
        .cloned()
        .ok_or_else(|| OpError::new(format!("input `{port}` has no value")))
}

// ---------------------------------------------------------------------------------------------
// Cancellation

/// Passes `in_data` on to `out_data` and, in the same firing, withdraws every token waiting on the operators of its `region` (their NEW inputs become OLD).
///
/// Cancel task, cancel region, deferred choice (docs/semantics.md §10.4): the operators of the
/// region cannot fire on the withdrawn tokens; `back` gives them back. The region lists
/// instance names; it may not hold an operator that keeps a control state (a partial join, a
/// mutex, an accumulator).
#[operator(id = "cancel", label = "Cancel", family = structural)]
#[derive(Clone, Debug)]
pub struct Cancel<T: PortType = Any> {
    /// the operators whose waiting tokens a firing withdraws (instance names)
    #[param]
    region: Vec<String>,
    /// the value whose arrival cancels the region
    #[input]
    in_data: In<T>,
    /// the same value, passed on
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Cancel<T> {
    /// Cancels the operators named in `region` each time it fires.
    pub fn new<S: Into<String>>(region: impl IntoIterator<Item = S>) -> Self {
        Cancel {
            region: region.into_iter().map(Into::into).collect(),
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Run for Cancel<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
    fn validate(&self) -> Result<(), ParamError> {
        if self.region.is_empty() {
            return Err(ParamError::new(
                "region".to_owned(),
                "`region` is empty: a cancel withdraws the tokens of the operators it lists",
            )
            .with_hint("list the operators to cancel: `region: [task_a, task_b]`"));
        }
        Ok(())
    }
    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        spec.cancels(Region::Ops(self.region.clone()), None)
    }
}

/// Ends the case: consumes `in_data` and withdraws every token of the net (every NEW connection becomes OLD), so the run completes.
///
/// Explicit termination and cancel case (docs/semantics.md §10.4). What can still fire without
/// a NEW input — a source that has not fired yet, a thread split still emitting — is not
/// stopped: put the termination after it.
#[operator(id = "terminate", label = "Terminate", family = structural)]
#[derive(Clone, Debug)]
pub struct Terminate<T: PortType = Any> {
    /// a token here ends the whole case
    #[input]
    in_data: In<T>,
}

impl<T: PortType> Terminate<T> {
    /// A termination.
    pub fn new() -> Self {
        Terminate {
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Default for Terminate<T> {
    fn default() -> Self {
        Terminate::new()
    }
}

impl<T: PortType> Run for Terminate<T> {
    fn run(&mut self, _cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        spec.cancels(Region::Net, None)
    }
}

// ---------------------------------------------------------------------------------------------
// Critical sections

/// Critical section: grants one request at a time — the first NEW of `in_a`, `in_b`, … goes on to `out_a`, `out_b`, … — and grants the next only when `in_done` says the section ended.
///
/// docs/semantics.md §10.6. Connect the end of every section to `in_done` (through a `merge`
/// when there are several). While a section runs, other requests wait (they stay NEW); among
/// waiting requests the first in port order is granted. Interleaved routing and critical
/// sections are built with it.
#[operator(
    id = "mutex",
    label = "Mutex",
    family = behavioral,
    firing = custom,
    exec = inline
)]
#[derive(Clone, Debug)]
pub struct Mutex<T: PortType = Any> {
    /// number of requests (2..=26): in_a/out_a, in_b/out_b, …
    #[param(default = 2)]
    arity: usize,
    /// Whether a section holds the mutex (its control state).
    held: bool,
    /// the end of the section that holds the mutex
    #[input]
    in_done: In<Any>,
    /// a request to enter a section (`arity` adds `in_c`, …); granted requests go to the output of the same letter
    #[input(variadic = arity)]
    in_a: In<T>,
    /// the start of the section of the same letter, when the mutex grants it
    #[output(variadic = arity)]
    out_a: Out<T>,
}

impl<T: PortType> Mutex<T> {
    /// A mutex between `arity` requests (2..=26).
    pub fn new(arity: usize) -> Result<Self, String> {
        if !(2..=MAX_ARITY).contains(&arity) {
            return Err(format!(
                "arity must be between 2 and {MAX_ARITY}, not {arity}"
            ));
        }
        Ok(Mutex {
            arity,
            held: false,
            __cameleon_ports: PhantomData,
        })
    }

    /// The request granted in a free mutex: the first NEW of `in_a`, … (input ports 1…).
    fn first_request(inputs: &[ConnState]) -> Option<usize> {
        (1..inputs.len()).find(|&i| inputs[i] == ConnState::New)
    }
}

impl<T: PortType> Default for Mutex<T> {
    fn default() -> Self {
        Mutex {
            arity: 2,
            held: false,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> CanFire for Mutex<T> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        FiniteControl::can_fire(self, u32::from(self.held), e)
    }
}

impl<T: PortType> Run for Mutex<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if self.held {
            self.held = false; // `in_done`: the section ended
            return Ok(());
        }
        let states: Vec<ConnState> = (0..cx.input_count()).map(|i| cx.state_at(i)).collect();
        let i = Self::first_request(&states).ok_or_else(|| OpError::new("no NEW request"))?;
        let v = value_of(cx, i, &letter_port("in", i - 1))?;
        cx.emit_at(i - 1, v);
        self.held = true;
        Ok(())
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        FiniteControl::consumes(self, u32::from(self.held), inputs).unwrap_or_default()
    }
    fn validate(&self) -> Result<(), ParamError> {
        Mutex::<T>::new(self.arity)
            .map(|_| ())
            .map_err(|e| ParamError::new("arity".to_owned(), e))
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
    fn refine_spec(&self, spec: OpSpec) -> OpSpec {
        // One emission set per request (its grant), and the empty one (a release).
        let mut spec = spec;
        spec.emits = (0..=self.arity)
            .map(|k| {
                if k < self.arity {
                    vec![k as u16]
                } else {
                    vec![]
                }
            })
            .collect();
        spec
    }
}

/// The control state: 0 free, 1 held.
impl<T: PortType> FiniteControl for Mutex<T> {
    fn count(&self) -> u32 {
        2
    }
    fn initial(&self) -> u32 {
        u32::from(self.held)
    }
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        if q == 1 {
            e.inputs.first() == Some(&ConnState::New)
        } else {
            Self::first_request(e.inputs).is_some()
        }
    }
    fn consumes(&self, q: u32, inputs: &[ConnState]) -> Option<InputSet> {
        Some(if q == 1 {
            InputSet(u64::from(inputs.first() == Some(&ConnState::New)))
        } else {
            Self::first_request(inputs).map_or(InputSet(0), |i| InputSet(1 << i))
        })
    }
    fn fire(&self, q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        if q == 1 {
            vec![(self.arity, 0)]
        } else {
            Self::first_request(inputs).map_or(Vec::new(), |i| vec![(i - 1, 1)])
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Milestones and triggers

/// Milestone: passes `in_data` on to `out_data` only while the milestone is reached (`in_reached` NEW) and not yet passed; `in_expire` passes it (the milestone token goes on to `out_passed`); a request that comes after goes to `out_late`.
///
/// docs/semantics.md §10.7. A request that comes before the milestone is reached waits. The
/// milestone token stays NEW while requests go through (a test, not a consumption).
#[operator(
    id = "milestone",
    label = "Milestone",
    family = behavioral,
    firing = custom,
    exec = inline,
    emits = [[out_data], [out_passed], [out_late]]
)]
#[derive(Clone, Debug)]
pub struct Milestone<T: PortType = Any, M: PortType = Any> {
    /// the request: the task that may run only while the milestone holds
    #[input]
    in_data: In<T>,
    /// the milestone is reached
    #[input]
    in_reached: In<M>,
    /// the milestone is passed: no request goes through after
    #[input]
    in_expire: In<Any>,
    /// the request, let through while the milestone holds
    #[output]
    out_data: Out<T>,
    /// the milestone token, once `in_expire` passes it
    #[output]
    out_passed: Out<M>,
    /// a request that came after the milestone was passed
    #[output]
    out_late: Out<T>,
}

/// What a milestone does, given its input states: the emission set (0 `out_data`,
/// 1 `out_passed`, 2 `out_late`) and what it consumes.
fn milestone_move(inputs: &[ConnState]) -> Option<(usize, InputSet)> {
    let [data, reached, expire] = [0, 1, 2].map(|i| inputs.get(i).copied());
    let new = Some(ConnState::New);
    if data == new && reached == new {
        Some((0, InputSet(0b001))) // the milestone holds: the request goes through
    } else if data == new && reached == Some(ConnState::Old) {
        Some((2, InputSet(0b001))) // passed: the request is late
    } else if expire == new && reached == new {
        Some((1, InputSet(0b110))) // the milestone is passed
    } else {
        None
    }
}

impl<T: PortType, M: PortType> Milestone<T, M> {
    /// A milestone.
    pub fn new() -> Self {
        Milestone {
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType, M: PortType> Default for Milestone<T, M> {
    fn default() -> Self {
        Milestone::new()
    }
}

impl<T: PortType, M: PortType> CanFire for Milestone<T, M> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        milestone_move(e.inputs).is_some()
    }
}

impl<T: PortType, M: PortType> Run for Milestone<T, M> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let states: Vec<ConnState> = (0..cx.input_count()).map(|i| cx.state_at(i)).collect();
        match milestone_move(&states) {
            Some((0, _)) => cx.forward(Self::in_data, Self::out_data),
            Some((2, _)) => cx.forward(Self::in_data, Self::out_late),
            Some(_) => cx.forward(Self::in_reached, Self::out_passed),
            None => Err(OpError::new("nothing to do")),
        }
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        milestone_move(inputs).map_or(InputSet(0), |(_, c)| c)
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
}

/// A milestone has no internal state: its input states decide its move.
impl<T: PortType, M: PortType> FiniteControl for Milestone<T, M> {
    fn count(&self) -> u32 {
        1
    }
    fn initial(&self) -> u32 {
        0
    }
    fn can_fire(&self, _q: u32, e: &Enabling<'_>) -> bool {
        milestone_move(e.inputs).is_some()
    }
    fn fire(&self, _q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        milestone_move(inputs).map_or(Vec::new(), |(set, _)| vec![(set, 0)])
    }
}

/// Transient trigger: fires on each NEW `in_trigger`; if a thread waits on `in_data` (NEW) it goes on to `out_data`, otherwise the trigger is lost (it goes to `out_lost`, which may stay unconnected).
///
/// docs/semantics.md §10.8. A persistent trigger needs no operator: a `join` of the thread and
/// the trigger keeps the trigger (NEW) until the thread arrives.
#[operator(
    id = "trigger",
    label = "Trigger",
    family = behavioral,
    firing = custom,
    exec = inline,
    emits = [[out_data], [out_lost]]
)]
#[derive(Clone, Debug)]
pub struct Trigger<T: PortType = Any, S: PortType = Any> {
    /// the thread waiting for the trigger
    #[input]
    in_data: In<T>,
    /// the trigger
    #[input]
    in_trigger: In<S>,
    /// the waiting thread, released by the trigger
    #[output]
    out_data: Out<T>,
    /// a trigger that found no thread waiting (may stay unconnected)
    #[output]
    out_lost: Out<S>,
}

fn waiting(inputs: &[ConnState]) -> bool {
    inputs.first() == Some(&ConnState::New)
}

impl<T: PortType, S: PortType> Trigger<T, S> {
    /// A transient trigger.
    pub fn new() -> Self {
        Trigger {
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType, S: PortType> Default for Trigger<T, S> {
    fn default() -> Self {
        Trigger::new()
    }
}

impl<T: PortType, S: PortType> CanFire for Trigger<T, S> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs.get(1) == Some(&ConnState::New)
    }
}

impl<T: PortType, S: PortType> Run for Trigger<T, S> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        if cx.is_new(Self::in_data) {
            cx.forward(Self::in_data, Self::out_data)
        } else {
            cx.forward(Self::in_trigger, Self::out_lost)
        }
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        if waiting(inputs) {
            InputSet(0b11)
        } else {
            InputSet(0b10)
        }
    }
    fn control(&self) -> Option<&dyn FiniteControl> {
        Some(self)
    }
}

/// A trigger has no internal state: whether the thread waits decides its move.
impl<T: PortType, S: PortType> FiniteControl for Trigger<T, S> {
    fn count(&self) -> u32 {
        1
    }
    fn initial(&self) -> u32 {
        0
    }
    fn can_fire(&self, _q: u32, e: &Enabling<'_>) -> bool {
        CanFire::can_fire(self, e)
    }
    fn fire(&self, _q: u32, inputs: &[ConnState]) -> Vec<(usize, u32)> {
        vec![(usize::from(!waiting(inputs)), 0)]
    }
}
