//! What the declaration says about the operator as a whole — label, family, firing policy,
//! execution, timeout and retries — as constant expressions of the runtime's types, shared by the
//! spec, `HasPorts`, the `Operator` impl and the catalogue entry.

use proc_macro2::TokenStream;
use quote::quote;

use super::private;
use crate::operator::ast::Operator;
use crate::operator::attr::{Exec, Family, Policy};

/// The catalogue label: `label = "…"`, or the struct's name.
pub fn label(op: &Operator) -> String {
    op.args
        .label
        .as_ref()
        .map_or_else(|| op.ident.to_string(), |l| l.value())
}

/// The declared family, behavioral by default.
pub fn family_tokens(op: &Operator) -> TokenStream {
    let p = private();
    match op.args.family {
        Some((Family::Structural, _)) => quote!(#p::Family::Structural),
        _ => quote!(#p::Family::Behavioral),
    }
}

/// The declared policy; without `firing`, `any`, or `source` for an operator with no inputs
/// (`docs/semantics.md` §3: an operator with zero inputs uses Source).
fn policy(op: &Operator) -> Policy {
    match op.args.firing {
        Some((p, _)) => p,
        None if op.inputs.is_empty() => Policy::Source,
        None => Policy::Any,
    }
}

/// The firing policy, as [`policy`] decides it.
pub fn policy_tokens(op: &Operator) -> TokenStream {
    let p = private();
    match policy(op) {
        Policy::Any => quote!(#p::Policy::Any),
        Policy::All => quote!(#p::Policy::All),
        Policy::AnyNoGuard => quote!(#p::Policy::AnyNoGuard),
        Policy::Source => quote!(#p::Policy::Source),
        Policy::Custom => quote!(#p::Policy::Custom),
    }
}

/// The `Execution` the engine sees: structural operators always run inline; a behavioral one
/// runs as declared, `blocking` by default.
pub fn execution_tokens(op: &Operator) -> TokenStream {
    let p = private();
    let exec = match op.args.exec {
        _ if op.is_structural() => Exec::Inline,
        Some((e, _)) => e,
        None => Exec::Blocking,
    };
    match exec {
        Exec::Inline => quote!(#p::Execution::Inline),
        Exec::Blocking => quote!(#p::Execution::Blocking),
        Exec::Async => quote!(#p::Execution::Async),
    }
}

/// The declared `timeout_ms` and `retry`, as an `OpSettings` constant expression.
pub fn settings_tokens(op: &Operator) -> TokenStream {
    let p = private();
    let timeout = match op.args.timeout_ms {
        Some(ms) => {
            let ms = proc_macro2::Literal::u64_unsuffixed(ms);
            quote!(#p::Some(#ms))
        }
        None => quote!(#p::None),
    };
    let retry = match op.args.retry {
        Some(r) => {
            let max = proc_macro2::Literal::u32_unsuffixed(r.max);
            let backoff = proc_macro2::Literal::u64_unsuffixed(r.backoff_ms);
            quote!(#p::Some(#p::Retry { max: #max, backoff_ms: #backoff }))
        }
        None => quote!(#p::None),
    };
    quote!(#p::OpSettings { timeout_ms: #timeout, retry: #retry })
}
