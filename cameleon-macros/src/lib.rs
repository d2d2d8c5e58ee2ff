//! Procedural macros of Caméléon. Use them through the `cameleon` crate, which re-exports them.

mod pipeline;

use proc_macro::TokenStream;

/// Builds a `Net` in code, with every connection type-checked by the compiler. See the
/// `cameleon` crate's documentation of `pipeline!`.
#[proc_macro]
pub fn pipeline(input: TokenStream) -> TokenStream {
    pipeline::expand(input.into()).into()
}
