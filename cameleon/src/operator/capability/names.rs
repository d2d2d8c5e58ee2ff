//! Which params name a capability of the run: [`CapabilityParam`], what `cameleon check`
//! resolves against the capabilities before anything runs.

/// What a param's value names in the run's capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Named {
    /// A chat model (`chat:` of a capabilities file).
    Chat,
    /// An embedder (`embedders:`).
    Embedder,
    /// A memory (`memories:`).
    Memory,
    /// Tools, by name (a list of them, or one).
    Tool,
}

impl Named {
    /// What one is, in messages (`chat model`).
    pub fn what(self) -> &'static str {
        match self {
            Named::Chat => "chat model",
            Named::Embedder => "embedder",
            Named::Memory => "memory",
            Named::Tool => "tool",
        }
    }
}

/// A param of an operator type whose value names capabilities of the run — the `std-ai`
/// operators' `model`, `memory` and `tools` — so that a check can resolve each name against the
/// capabilities before the net runs (`cameleon check`). The value is a name (a string) or a list
/// of names; the instance's value counts, its default included.
///
/// An operator crate declares its own with [`submit_capability_param!`](crate::submit_capability_param):
///
/// ```
/// use cameleon::operator::capability::{CapabilityParam, Named};
///
/// cameleon::submit_capability_param!(CapabilityParam {
///     op_type: "doc_summarise",
///     param: "model",
///     names: Named::Chat,
/// });
///
/// assert!(cameleon::operator::capability::capability_params()
///     .any(|p| p.op_type == "doc_summarise" && p.names == Named::Chat));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapabilityParam {
    /// The operator type's catalogue id (`llm`).
    pub op_type: &'static str,
    /// The param (`model`).
    pub param: &'static str,
    /// What its value names.
    pub names: Named,
}

inventory::collect!(CapabilityParam);

/// Every [`CapabilityParam`] of the program.
pub fn capability_params() -> impl Iterator<Item = &'static CapabilityParam> {
    inventory::iter::<CapabilityParam>.into_iter()
}

/// Submits a [`CapabilityParam`]: a param of an operator type that names a capability.
#[macro_export]
macro_rules! submit_capability_param {
    ($param:expr) => {
        $crate::__private::inventory::submit! { $param }
    };
}
