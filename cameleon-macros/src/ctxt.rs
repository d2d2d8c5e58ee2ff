//! An error context that accumulates every mistake of a declaration (serde's `Ctxt`).

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Collects errors while a declaration is parsed and checked. Must be finished with
/// [`check`](Self::check); dropping it unchecked is a bug in the macro and panics.
pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error at the span of `obj`.
    pub fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error at `span`.
    pub fn error_at<T: Display>(&self, span: proc_macro2::Span, msg: T) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// Records a `syn` error (a parse error, say).
    pub fn syn_error(&self, err: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(err);
        }
    }

    /// Consumes the context: every error combined into one, or `Ok`.
    pub fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.borrow_mut().take().into_iter().flatten();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}
