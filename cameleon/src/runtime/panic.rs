//! Panics caught at the edges where user code runs: an operator's firing (the engine, a
//! satellite), a tool call (the gate), a layout crate. One helper, so every caught panic is
//! worded the same way.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A caught panic.
///
/// ```
/// use cameleon::runtime::catch_panic;
///
/// let p = catch_panic(|| -> u32 { panic!("no more {}", "ink") }).unwrap_err();
/// assert_eq!(p.message(), "no more ink");
/// assert_eq!(catch_panic(|| 7).ok(), Some(7));
/// ```
pub struct Panic(Box<dyn Any + Send>);

impl Panic {
    /// The message the panic was raised with (`panic!("…")`), or `(no message)` for a payload
    /// that is not a string.
    pub fn message(&self) -> &str {
        if let Some(s) = self.0.downcast_ref::<&str>() {
            s
        } else if let Some(s) = self.0.downcast_ref::<String>() {
            s
        } else {
            "(no message)"
        }
    }

    /// What `panic!` was given, to resume the panic elsewhere.
    pub fn into_payload(self) -> Box<dyn Any + Send> {
        self.0
    }
}

impl From<Box<dyn Any + Send>> for Panic {
    fn from(payload: Box<dyn Any + Send>) -> Self {
        Panic(payload)
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Panic").field(&self.message()).finish()
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Runs `f`, catching a panic. What `f` touched is the caller's to distrust afterwards (the
/// engine discards a failed attempt's emissions; an operator's state is restored from its
/// copy).
#[inline(always)]
pub fn catch_panic<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    catch_unwind(AssertUnwindSafe(f)).map_err(Panic)
}

/// A future whose panics are caught: it resolves to `Err(Panic)` instead of unwinding into
/// the executor.
///
/// ```
/// use cameleon::runtime::{CatchPanic, block_on};
///
/// let r = block_on(CatchPanic::new(Box::pin(async { panic!("boom") as u32 })));
/// assert_eq!(r.unwrap_err().message(), "boom");
/// ```
#[derive(Debug)]
pub struct CatchPanic<F>(F);

impl<F> CatchPanic<F> {
    /// Catches the panics of `future` (an `Unpin` one: box it with `Box::pin` if needed).
    pub fn new(future: F) -> Self {
        CatchPanic(future)
    }
}

impl<F: Future + Unpin> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_panic(|| Pin::new(inner).poll(cx)) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(p)),
        }
    }
}
