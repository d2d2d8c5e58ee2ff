//! Which operator types have side effects: [`OperatorEffects`], declared beside the type like
//! a [`CapabilityParam`](super::CapabilityParam), and what `cameleon catalogue --json` shows
//! (docs/tools.md#effects-and-grants).

use std::fmt;

use serde::{Serialize, Serializer};

use super::Effect;

/// The side effects of an operator type's firings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpEffects {
    /// Always these (a file reader: `read`).
    Fixed(Effect),
    /// Those of the tools an instance may call — its tool params (`tool`'s `name`, `agent`'s
    /// `tools`) within the net's `tools:` policy: their union
    /// ([`tools::op_effects`](crate::tools::op_effects) computes it for an instance).
    OfTools,
}

impl OpEffects {
    /// `none`, `read`, `write`, `external`, or `tools` (the union of its tools' effects).
    pub fn as_str(self) -> &'static str {
        match self {
            OpEffects::Fixed(e) => e.as_str(),
            OpEffects::OfTools => "tools",
        }
    }
}

impl fmt::Display for OpEffects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for OpEffects {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The side effects of an operator type, declared beside it with
/// [`submit_operator_effects!`](crate::submit_operator_effects). A type that declares none has
/// none (`none`): declare yours if its firings read or write files or act on the world.
///
/// ```
/// use cameleon::operator::capability::{Effect, OpEffects, OperatorEffects, operator_effects};
///
/// cameleon::submit_operator_effects!(OperatorEffects {
///     op_type: "acme_upload",
///     effects: OpEffects::Fixed(Effect::External),
/// });
///
/// assert_eq!(operator_effects("acme_upload"), OpEffects::Fixed(Effect::External));
/// assert_eq!(operator_effects("text_file"), OpEffects::Fixed(Effect::Read));
/// assert_eq!(operator_effects("agent"), OpEffects::OfTools);
/// assert_eq!(operator_effects("split_text"), OpEffects::Fixed(Effect::None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorEffects {
    /// The operator type's catalogue id (`text_file`).
    pub op_type: &'static str,
    /// Its effects.
    pub effects: OpEffects,
}

inventory::collect!(OperatorEffects);

/// The effects operator type `op_type` declares; `none` when it declares none.
pub fn operator_effects(op_type: &str) -> OpEffects {
    inventory::iter::<OperatorEffects>
        .into_iter()
        .find(|e| e.op_type == op_type)
        .map_or(OpEffects::Fixed(Effect::None), |e| e.effects)
}

/// Submits an [`OperatorEffects`]: the side effects of an operator type.
#[macro_export]
macro_rules! submit_operator_effects {
    ($effects:expr) => {
        $crate::__private::inventory::submit! { $effects }
    };
}
