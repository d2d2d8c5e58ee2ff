//! Partial output: what a firing shows of its result while it is still being written (a model's
//! answer as it streams). The engine publishes each piece as an
//! [`Event::Partial`](crate::Event::Partial) to whoever watches the run; nothing of it is
//! recorded (docs/semantics.md §4.12).

use std::fmt;
use std::sync::Arc;

/// Where the engine takes partial output: `(step, operator instance, text)`. Installed by the
/// engine only while somebody listens ([`Cvm::events`](crate::Cvm::events),
/// [`Cvm::on_partial`](crate::Cvm::on_partial)).
pub(crate) type PartialSink = Arc<dyn Fn(u32, &str, &str) + Send + Sync>;

/// A handle on one firing's partial output, taken with
/// [`Firing::partials`](super::Firing::partials): cheap to clone, `Send + Sync + 'static`, so
/// it can be moved into a task or a callback that outlives the borrow of the firing context.
/// When nobody listens it is inert and [`send`](Self::send) costs one branch.
///
/// ```
/// use cameleon::prelude::*;
///
/// /// Counts to three, showing each number as it goes.
/// #[operator(id = "doc_count", label = "Count", family = behavioral)]
/// pub struct Count {
///     #[output]
///     out_text: Out<DataString>,
/// }
///
/// impl Run for Count {
///     fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
///         let partials = cx.partials();
///         let mut text = String::new();
///         for n in ["one ", "two ", "three"] {
///             partials.send(n); // an `Event::Partial` for whoever watches the run
///             text.push_str(n);
///         }
///         cx.emit(Self::out_text, DataString(text)); // the result: what history records
///         Ok(())
///     }
/// }
/// # fn main() {}
/// ```
#[derive(Clone, Default)]
pub struct Partials {
    to: Option<(PartialSink, u32, Arc<str>)>,
}

impl fmt::Debug for Partials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.to {
            Some((_, step, op)) => f
                .debug_struct("Partials")
                .field("step", step)
                .field("op", op)
                .finish(),
            None => f.write_str("Partials(nobody listens)"),
        }
    }
}

impl Partials {
    /// A handle sending partial output of firing `step` of instance `op` to `sink`, if any.
    pub(crate) fn new(sink: Option<&PartialSink>, step: u32, op: &str) -> Self {
        Partials {
            to: sink.map(|s| (Arc::clone(s), step, Arc::from(op))),
        }
    }

    /// A handle that sends nowhere (what a firing gets when nobody listens).
    pub fn none() -> Self {
        Partials::default()
    }

    /// Whether somebody listens: an operator that would have to do more work to produce
    /// partial output (ask a model to stream) does it only then.
    #[inline]
    pub fn listening(&self) -> bool {
        self.to.is_some()
    }

    /// Shows `text` as the next piece of the firing's output (appended to the pieces before
    /// it). Nothing when nobody listens.
    #[inline]
    pub fn send(&self, text: &str) {
        if let Some((sink, step, op)) = &self.to {
            sink(*step, op, text);
        }
    }
}
