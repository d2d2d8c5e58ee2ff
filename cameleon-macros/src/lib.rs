//! Procedural macros of Caméléon. Use them through the `cameleon` crate, which re-exports them:
//! `#[operator]` is documented there (`cameleon::operator`).
//!
//! Layout (after serde_derive): [`operator::attr`] parses the attributes, [`operator::ast`]
//! builds the model of a declaration, [`operator::check`] states the rules, and
//! [`operator::expand`] only generates code. Mistakes accumulate in a [`ctxt::Ctxt`] so every
//! one is reported at once.

extern crate proc_macro;

mod ctxt;
mod operator;
mod symbol;

use proc_macro::TokenStream;

/// Declares an operator type: see `cameleon::operator`.
#[proc_macro_attribute]
pub fn operator(args: TokenStream, item: TokenStream) -> TokenStream {
    operator::expand::expand(args.into(), item.into()).into()
}
