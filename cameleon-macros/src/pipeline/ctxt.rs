//! Collects errors so the user sees every mistake at once.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Errors found so far. [`Ctxt::check`] must be called before the context is dropped.
pub struct Ctxt {
    errors: Option<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt {
            errors: Some(Vec::new()),
        }
    }

    /// Records an error at `span`.
    pub fn error_at(&mut self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// Records an error spanning `tokens`.
    pub fn error_spanned(&mut self, tokens: impl ToTokens, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, msg));
    }

    /// Records a parse error.
    pub fn syn_error(&mut self, err: syn::Error) {
        if let Some(errors) = &mut self.errors {
            errors.push(err);
        }
    }

    /// Consumes the context: the errors, as `compile_error!` invocations (empty if none).
    pub fn check(mut self) -> TokenStream {
        self.errors
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(syn::Error::into_compile_error)
            .collect()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if self.errors.is_some() && !std::thread::panicking() {
            panic!("pipeline!: errors were collected but never reported");
        }
    }
}
