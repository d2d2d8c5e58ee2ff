//! The tokio runtime behind the synchronous API.
//!
//! [`Cvm::run_async`](crate::Cvm::run_async) and friends run on the caller's runtime. The
//! synchronous API ([`Cvm::step`](crate::Cvm::step), [`Cvm::run`](crate::Cvm::run)) needs one
//! only in parallel mode, for an operator with a timeout or retries, or for an async operator:
//! it then uses a process-wide multi-threaded runtime, started on first use, with every driver
//! the build of tokio offers (timers always; I/O when some crate in the program enables tokio's
//! `net` feature).
//!
//! Also the one way a panic of user code is caught ([`catch_panic`], [`CatchPanic`]), and the
//! precise waits of the `delay` operator (`timer`).

mod panic;
mod timer;

pub use panic::{CatchPanic, Panic, catch_panic};
pub(crate) use timer::sleep;

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// The process-wide runtime.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .enable_all()
            .thread_name("cameleon")
            .build()
            // No user input is involved: this fails only if the OS refuses threads.
            .unwrap_or_else(|e| panic!("cannot start the tokio runtime: {e}"))
    })
}

/// Drives `f` to completion from synchronous code, on Caméléon's runtime.
///
/// Works outside any runtime and also inside one (an async operator's sync `run` called from
/// async code, a [`Cvm::step`](crate::Cvm::step) in a `#[tokio::main]`): there, `f` runs on a
/// helper thread while the calling thread waits, since a thread cannot block on a runtime it
/// is driving. Prefer the `_async` methods from async code.
pub fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime();
    if Handle::try_current().is_err() {
        return rt.block_on(f);
    }
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("cameleon-block-on".into())
            .spawn_scoped(s, || rt.block_on(f))
            // No user input is involved: this fails only if the OS refuses threads.
            .unwrap_or_else(|e| panic!("cannot start a thread: {e}"));
        helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Runs `f` as a task on Caméléon's runtime, whatever runtime (if any) the caller is on; await
/// the handle for its output.
///
/// For I/O whose resources belong to one runtime (an HTTP client's connection pool): every use
/// then happens on the same runtime, so a pooled connection never outlives the runtime that
/// opened it.
pub fn spawn<F>(f: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_works_outside_a_runtime() {
        let v = block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            7
        });
        assert_eq!(v, 7);
    }

    #[tokio::test]
    async fn block_on_works_inside_a_current_thread_runtime() {
        let v = block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            8
        });
        assert_eq!(v, 8);
    }
}
