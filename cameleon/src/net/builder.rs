//! [`NetBuilder`]: operators and connections added in any order, validated at `build`.

use std::fmt;

use crate::operator::{OpSettings, Operator, Retry};

use super::validate::Validator;
use super::{Net, NetConfig, NetError, Placement, ToolPolicy};

pub(super) struct PendingOp {
    pub(super) name: String,
    pub(super) label: Option<String>,
    pub(super) instance: Option<i64>,
    pub(super) pos: Option<(f64, f64)>,
    pub(super) settings: OpSettings,
    pub(super) placement: Placement,
    pub(super) op: Box<dyn Operator>,
}

pub(super) struct PendingConn {
    pub(super) from: String,
    pub(super) to: String,
}

/// Builds a [`Net`]. Add operators and connections in any order that suits; [`build`](Self::build)
/// validates everything and reports every problem at once.
pub struct NetBuilder {
    pub(super) name: String,
    pub(super) config: NetConfig,
    pub(super) ops: Vec<PendingOp>,
    pub(super) conns: Vec<PendingConn>,
    pub(super) tools: Option<ToolPolicy>,
    pub(super) description: Option<String>,
}

impl fmt::Debug for NetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetBuilder")
            .field("name", &self.name)
            .field("operators", &self.ops.len())
            .field("connections", &self.conns.len())
            .finish()
    }
}

/// Options of an operator just added to a [`NetBuilder`].
#[derive(Debug)]
pub struct OpOptions<'a>(&'a mut NetBuilder, usize);

impl OpOptions<'_> {
    /// Sets the layout position.
    pub fn at(self, x: f64, y: f64) -> Self {
        self.0.ops[self.1].pos = Some((x, y));
        self
    }

    /// Overrides the label.
    pub fn label(self, label: impl Into<String>) -> Self {
        self.0.ops[self.1].label = Some(label.into());
        self
    }

    /// Sets the `.cm` `instance:` number.
    pub fn instance(self, n: i64) -> Self {
        self.0.ops[self.1].instance = Some(n);
        self
    }

    /// Fails a firing of this instance that has not finished after `ms` milliseconds
    /// (`.cm` `timeout_ms:`), overriding the operator type's timeout.
    pub fn timeout_ms(self, ms: u64) -> Self {
        self.0.ops[self.1].settings.timeout_ms = Some(ms);
        self
    }

    /// Retries a failed firing of this instance up to `max` times, waiting `backoff_ms`
    /// (doubling each time) in between (`.cm` `retry: {max, backoff_ms}`).
    pub fn retry(self, max: u32, backoff_ms: u64) -> Self {
        self.0.ops[self.1].settings.retry = Some(Retry { max, backoff_ms });
        self
    }

    /// Sets where this instance runs (`.cm` `placement:`).
    pub fn placement(self, placement: Placement) -> Self {
        self.0.ops[self.1].placement = placement;
        self
    }

    /// Sets this instance's timeout and retries at once.
    pub fn settings(self, settings: OpSettings) -> Self {
        self.0.ops[self.1].settings = settings;
        self
    }
}

impl fmt::Debug for PendingOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl NetBuilder {
    /// A builder for a net named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        NetBuilder {
            name: name.into(),
            config: NetConfig::default(),
            ops: Vec::new(),
            conns: Vec::new(),
            tools: None,
            description: None,
        }
    }

    /// Sets the configuration.
    pub fn config(&mut self, config: NetConfig) -> &mut Self {
        self.config = config;
        self
    }

    /// Sets the tools the net's operators may call (`.cm` `tools:`); without one, none.
    pub fn tools(&mut self, policy: ToolPolicy) -> &mut Self {
        self.tools = Some(policy);
        self
    }

    /// Sets what the net does, in a sentence or two (`.cm` `description:`): the description of
    /// the net offered as a tool (docs/tools.md#nets-as-tools).
    pub fn description(&mut self, text: impl Into<String>) -> &mut Self {
        self.description = Some(text.into());
        self
    }

    /// Adds an operator instance named `name`.
    pub fn add(&mut self, name: impl Into<String>, op: impl Operator) -> OpOptions<'_> {
        self.add_boxed(name, Box::new(op))
    }

    /// Adds a boxed operator instance named `name`.
    pub fn add_boxed(&mut self, name: impl Into<String>, op: Box<dyn Operator>) -> OpOptions<'_> {
        self.ops.push(PendingOp {
            name: name.into(),
            label: None,
            instance: None,
            pos: None,
            settings: OpSettings::NONE,
            placement: Placement::Local,
            op,
        });
        let i = self.ops.len() - 1;
        OpOptions(self, i)
    }

    /// Connects output `from` to input `to`, both written `instance.port`.
    pub fn connect(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.conns.push(PendingConn {
            from: from.into(),
            to: to.into(),
        });
        self
    }

    /// Validates the net (docs/semantics.md §1) and builds it, or reports every problem found.
    pub fn build(self) -> Result<Net, NetError> {
        Validator::new(self).run()
    }
}
