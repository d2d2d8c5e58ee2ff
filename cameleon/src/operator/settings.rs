//! How an operator's firings are run: execution kind, timeout and retries.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::OpError;
#[cfg(doc)]
use super::Operator;

/// How parallel mode runs an operator's firings (docs/semantics.md §7). Sequential mode calls
/// [`Operator::run`] on the engine's thread whatever the kind.
///
/// Structural operators always run inline, whatever they declare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// `run` is quick and never blocks: it runs on the engine's task, while the step's blocking
    /// and async firings proceed concurrently.
    Inline,
    /// `run` may block (CPU work, blocking I/O): it runs on tokio's blocking pool, concurrently
    /// with the step's other firings. The default for behavioral operators.
    #[default]
    Blocking,
    /// The operator is async: [`Operator::run_async`] is awaited concurrently with the step's
    /// other firings, and can be cut short by a timeout or a cancellation.
    Async,
}

impl Execution {
    /// `inline`, `blocking` or `async`.
    pub fn as_str(self) -> &'static str {
        match self {
            Execution::Inline => "inline",
            Execution::Blocking => "blocking",
            Execution::Async => "async",
        }
    }
}

/// The future of one firing of an async operator, as [`Operator::run_async`] returns it.
pub type OpFuture<'a> = Pin<Box<dyn Future<Output = Result<(), OpError>> + Send + 'a>>;

/// Retries of a failed firing (`retry: {max, backoff_ms}`), applied before the failure counts
/// (docs/semantics.md §4).
///
/// A firing is attempted at most `1 + max` times. Before the `k`-th retry the engine waits
/// `backoff_ms × 2^(k-1)` milliseconds (exponential backoff; `0` retries at once) and restores
/// the operator's internal state to what it was before the first attempt. A retry never
/// changes the result's place in the trace: the step still commits in declaration order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// How many times a failed firing is tried again.
    pub max: u32,
    /// The wait before the first retry, in milliseconds; it doubles at each further retry.
    #[serde(default)]
    pub backoff_ms: u64,
}

impl Retry {
    /// The wait before retry number `k` (1-based).
    pub fn backoff(&self, k: u32) -> Duration {
        let factor = 1u64 << k.saturating_sub(1).min(20);
        Duration::from_millis(self.backoff_ms.saturating_mul(factor))
    }
}

/// Per-operator run settings: a timeout and retries. An operator type declares defaults with
/// [`Operator::settings`]; an instance in a net overrides them field by field
/// ([`OpMeta::settings`](crate::net::OpMeta::settings), `.cm` keys `timeout_ms:` and `retry:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSettings {
    /// A firing that has not finished after this many milliseconds fails with `timed out`.
    /// An async firing is cut short at the deadline; an inline or blocking `run` cannot be
    /// interrupted, so it fails when it returns late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries of a failed firing (a timeout counts as a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
}

impl OpSettings {
    /// No timeout, no retry.
    pub const NONE: OpSettings = OpSettings {
        timeout_ms: None,
        retry: None,
    };

    /// These settings, with each field left unset taken from `fallback`.
    pub fn or(self, fallback: OpSettings) -> OpSettings {
        OpSettings {
            timeout_ms: self.timeout_ms.or(fallback.timeout_ms),
            retry: self.retry.or(fallback.retry),
        }
    }

    /// Whether nothing is set.
    pub fn is_none(&self) -> bool {
        self.timeout_ms.is_none() && self.retry.is_none()
    }

    /// The timeout as a duration.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}
