//! `delay`: waits, asynchronously, then passes its input on. For demos and tests of parallel
//! mode — and an example of an operator declared `#[operator(…, exec = async)]`.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use crate::operator;
use crate::operator::{Firing, In, OpError, Out, RunAsync};
use crate::types::{Any, PortType};

/// Waits `ms` milliseconds without blocking a thread, then passes `in_data` to `out_data` unchanged.
///
/// Never less than `ms`, and on an idle machine at most a few tenths of a millisecond more; on
/// a paused tokio clock, exactly `ms` of virtual time (docs/semantics.md §7, "Timing").
///
/// Its ports carry one type variable: `out_data` has the type of whatever feeds `in_data`.
/// Async: in parallel mode the delays of one step overlap.
///
/// The same shared value is passed on. In Rust the type variable is the type parameter `T`:
/// `Delay::new(ms)` is a `Delay<Any>`, whose ports the net binds by unification (as the `.cm`
/// loader builds it); in `pipeline!`, `Delay::after(ms)` takes its type from its connections.
#[operator(id = "delay", label = "Delay", family = behavioral, exec = async)]
pub struct Delay<T: PortType = Any> {
    /// milliseconds to wait
    #[param(default = 100)]
    pub ms: u64,
    /// the value to pass on after the wait
    #[input]
    in_data: In<T>,
    /// the same value, `ms` milliseconds later
    #[output]
    out_data: Out<T>,
}

// A delay's point is to take time: a run that reuses recorded firings still waits.
inventory::submit! { crate::engine::NotReusable { op_type: "delay" } }

impl Delay {
    /// The default wait, in milliseconds.
    pub const DEFAULT_MS: u64 = 100;

    /// A delay of `ms` milliseconds whose ports are a type variable, bound by the net's
    /// connections (for [`NetBuilder`](crate::NetBuilder)).
    pub fn new(ms: u64) -> Self {
        Delay::after(ms)
    }
}

impl<T: PortType> Delay<T> {
    /// A delay of `ms` milliseconds of values of type `T`; in `pipeline!`, `T` is inferred from
    /// the connections.
    pub fn after(ms: u64) -> Self {
        Delay {
            ms,
            __cameleon_ports: PhantomData,
        }
    }
}

impl<T: PortType> Default for Delay<T> {
    fn default() -> Self {
        Delay::after(<Delay>::DEFAULT_MS)
    }
}

// By hand: derives would ask `T: Clone + Debug + PartialEq`, and `Any` is not `PartialEq`.
impl<T: PortType> Clone for Delay<T> {
    fn clone(&self) -> Self {
        Delay::after(self.ms)
    }
}

impl<T: PortType> fmt::Debug for Delay<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delay").field("ms", &self.ms).finish()
    }
}

impl<T: PortType> PartialEq for Delay<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ms == other.ms
    }
}

impl<T: PortType> Eq for Delay<T> {}

impl<T: PortType> RunAsync for Delay<T> {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        crate::runtime::sleep(Duration::from_millis(self.ms)).await;
        let v = cx
            .value(Self::in_data)
            .cloned()
            .ok_or_else(|| OpError::new("input `in_data` has no value"))?;
        cx.emit_value(Self::out_data, v);
        Ok(())
    }
}
