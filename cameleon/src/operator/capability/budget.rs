//! Token and cost budgets (docs/semantics.md §4.7): what a run may spend on models, what it
//! spent, and the check made before every request.
//!
//! A run's [`Meter`] lives in its capabilities ([`Capabilities::meter`]): the inner runs of its
//! sub-nets and maps get the same capabilities, so they share it, and an agent's turns are
//! requests like any other. Before each chat or embedding request, [`Meter::check`] refuses it
//! once the budget is spent; after it, [`Meter::add`] counts the tokens the provider reported
//! (priced by the model's `price_usd`, docs/capabilities.md). A refused request fails its firing,
//! and the engine ends the run in `BUDGET` instead of `ERROR` ([`Meter::stopped`]): nothing of
//! the firing is recorded, but what it spent before the refusal stays counted.
//!
//! ```
//! use cameleon::operator::capability::{Budget, Meter, Price, Usage};
//!
//! let meter = Meter::new(Budget { tokens: Some(100), cost_usd: None });
//! assert!(meter.check().is_ok());
//! let price = Price { prompt_per_mtok: 1.0, completion_per_mtok: 2.0 };
//! meter.add(Usage { prompt_tokens: 80, completion_tokens: 30 }, Some(price));
//! assert_eq!(meter.spent().total_tokens, 110);
//! assert!(meter.check().is_err()); // 110 of 100: the next request does not start
//! assert!(meter.stopped());
//! meter.set_limit(Budget { tokens: Some(500), cost_usd: None }); // `resume --budget 500`
//! assert!(meter.check().is_ok() && !meter.stopped());
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::{
    CapFuture, CapabilityError, ChatModel, ChatReply, ChatRequest, Embedded, Embedder, Usage,
};

/// An amount in US dollars. Compared by its bits, so that budgets and end states can be `Eq`
/// (amounts are never NaN: they are checked where they are read).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Usd(pub f64);

impl PartialEq for Usd {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Usd {}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${:.6}", self.0)
    }
}

/// What a run may spend: `config: budget: {tokens: N, cost_usd: X}` in a `.cm` file, or
/// `--budget N` / `--budget-usd X` on the command line. Each bound is optional; no bound, no
/// limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Most tokens (prompt and completion, of chat and embedding requests that report them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Most US dollars, at the prices of the capabilities file (`price_usd:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<Usd>,
}

impl Budget {
    /// No bound.
    pub const NONE: Budget = Budget {
        tokens: None,
        cost_usd: None,
    };

    /// Whether it bounds anything.
    pub fn is_limited(&self) -> bool {
        self.tokens.is_some() || self.cost_usd.is_some()
    }

    /// This budget with the bounds `other` sets replacing its own.
    pub fn overridden_by(self, other: Budget) -> Budget {
        Budget {
            tokens: other.tokens.or(self.tokens),
            cost_usd: other.cost_usd.or(self.cost_usd),
        }
    }

    /// Whether `spent` reaches a bound: the next request would start once the budget is spent.
    pub fn spent_by(&self, spent: &Spent) -> bool {
        self.tokens.is_some_and(|t| spent.total_tokens >= t)
            || self.cost_usd.is_some_and(|c| spent.cost_usd.0 >= c.0)
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.tokens, self.cost_usd) {
            (Some(t), Some(c)) => write!(f, "{t} tokens or {c}"),
            (Some(t), None) => write!(f, "{t} tokens"),
            (None, Some(c)) => write!(f, "{c}"),
            (None, None) => f.write_str("no bound"),
        }
    }
}

/// A model's price, in US dollars per million tokens (`price_usd:` of a capabilities entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt (input) tokens.
    #[serde(default)]
    pub prompt_per_mtok: f64,
    /// Per million completion (output) tokens.
    #[serde(default)]
    pub completion_per_mtok: f64,
}

impl Price {
    /// What `usage` costs.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt_per_mtok
            + usage.completion_tokens as f64 * self.completion_per_mtok)
            / 1_000_000.0
    }
}

/// What a run spent on models, summed over its requests (inner runs' included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// US dollars, at the prices of the models called (a model without `price_usd` costs 0).
    pub cost_usd: Usd,
    /// Model requests made (chat and embedding), those that reported no usage included.
    pub requests: u64,
}

impl Spent {
    fn add(&mut self, usage: Usage, price: Option<Price>) {
        self.prompt_tokens += usage.prompt_tokens;
        self.completion_tokens += usage.completion_tokens;
        self.total_tokens = self.prompt_tokens + self.completion_tokens;
        if let Some(p) = price {
            self.cost_usd.0 += p.cost(usage);
        }
    }
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tokens ({} prompt, {} completion) in {} request{}",
            self.total_tokens,
            self.prompt_tokens,
            self.completion_tokens,
            self.requests,
            if self.requests == 1 { "" } else { "s" }
        )?;
        if self.cost_usd.0 > 0.0 {
            write!(f, ", {}", self.cost_usd)?;
        }
        Ok(())
    }
}

/// A run's meter: its budget, what it spent, and whether a request was refused.
#[derive(Debug, Default)]
pub struct Meter {
    state: Mutex<MeterState>,
}

#[derive(Debug, Default)]
struct MeterState {
    limit: Budget,
    spent: Spent,
    stopped: bool,
}

impl Meter {
    /// A meter with budget `limit`, nothing spent.
    pub fn new(limit: Budget) -> Self {
        Meter {
            state: Mutex::new(MeterState {
                limit,
                ..MeterState::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MeterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The budget.
    pub fn limit(&self) -> Budget {
        self.lock().limit
    }

    /// Sets the budget (a resumed run's `--budget`); a refusal is forgotten, so the run can go on
    /// if the new budget is not spent.
    pub fn set_limit(&self, limit: Budget) {
        let mut s = self.lock();
        s.limit = limit;
        s.stopped = false;
    }

    /// What was spent so far.
    pub fn spent(&self) -> Spent {
        self.lock().spent
    }

    /// Counts `spent` as already spent (what a resumed run spent before).
    pub fn start_from(&self, spent: Spent) {
        self.lock().spent = spent;
    }

    /// Before a model request: `Err` — and the meter [`stopped`](Self::stopped) — when the
    /// budget is spent, so the request must not start.
    pub fn check(&self) -> Result<(), CapabilityError> {
        let mut s = self.lock();
        if s.limit.spent_by(&s.spent) {
            s.stopped = true;
            return Err(CapabilityError::new(format!(
                "the run's budget of {} is spent ({} so far): the request was not made",
                s.limit, s.spent
            )));
        }
        Ok(())
    }

    /// After a request: counts its tokens (when the provider reported them) at `price`.
    pub fn add(&self, usage: Usage, price: Option<Price>) {
        self.lock().spent.add(usage, price);
    }

    /// Counts a request made (whether or not it reported usage, whether or not it succeeded).
    fn request(&self) {
        self.lock().spent.requests += 1;
    }

    /// Whether a request was refused since the budget was last set: the run stops in `BUDGET`.
    pub fn stopped(&self) -> bool {
        self.lock().stopped
    }
}

/// A chat model whose requests go through a run's [`Meter`].
#[derive(Debug)]
pub struct MeteredChat {
    inner: Arc<dyn ChatModel>,
    meter: Arc<Meter>,
    price: Option<Price>,
}

impl MeteredChat {
    /// `inner`, metered by `meter` at `price`.
    pub fn new(inner: Arc<dyn ChatModel>, meter: Arc<Meter>, price: Option<Price>) -> Self {
        MeteredChat {
            inner,
            meter,
            price,
        }
    }
}

impl ChatModel for MeteredChat {
    fn kind(&self) -> &str {
        self.inner.kind()
    }

    fn model_name(&self) -> Option<&str> {
        self.inner.model_name()
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn generative(&self) -> bool {
        self.inner.generative()
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(async move {
            self.meter.check()?;
            self.meter.request();
            let reply = self.inner.chat(request).await?;
            if let Some(u) = reply.usage {
                self.meter.add(u, self.price);
            }
            Ok(reply)
        })
    }

    /// The provider's own streaming, metered as [`chat`](Self::chat) is.
    fn chat_streamed<'a>(
        &'a self,
        request: &'a ChatRequest,
        delta: &'a (dyn Fn(&str) + Send + Sync),
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(async move {
            self.meter.check()?;
            self.meter.request();
            let reply = self.inner.chat_streamed(request, delta).await?;
            if let Some(u) = reply.usage {
                self.meter.add(u, self.price);
            }
            Ok(reply)
        })
    }
}

/// An embedder whose requests go through a run's [`Meter`]: their tokens count when the
/// provider reports them (an OpenAI-compatible server does; the offline `hash` embedder does
/// not).
#[derive(Debug)]
pub struct MeteredEmbedder {
    inner: Arc<dyn Embedder>,
    meter: Arc<Meter>,
    price: Option<Price>,
}

impl MeteredEmbedder {
    /// `inner`, metered by `meter` at `price`.
    pub fn new(inner: Arc<dyn Embedder>, meter: Arc<Meter>, price: Option<Price>) -> Self {
        MeteredEmbedder {
            inner,
            meter,
            price,
        }
    }
}

impl Embedder for MeteredEmbedder {
    fn kind(&self) -> &str {
        self.inner.kind()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn identity(&self) -> serde_json::Value {
        self.inner.identity()
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Vec<Vec<f32>>, CapabilityError>> {
        Box::pin(async move { self.embed_with_usage(texts).await.map(|(v, _)| v) })
    }

    fn embed_with_usage<'a>(
        &'a self,
        texts: &'a [String],
    ) -> CapFuture<'a, Result<Embedded, CapabilityError>> {
        Box::pin(async move {
            self.meter.check()?;
            self.meter.request();
            let (vectors, usage) = self.inner.embed_with_usage(texts).await?;
            if let Some(u) = usage {
                self.meter.add(u, self.price);
            }
            Ok((vectors, usage))
        })
    }
}
