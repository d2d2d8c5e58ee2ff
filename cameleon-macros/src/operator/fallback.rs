//! The stub emitted next to the errors of a declaration (as thiserror does), so that the
//! user sees only their real mistakes and no cascade: the item, cleaned of our attributes, the
//! port handles that could be read, and an `Operator` impl whose methods are unreachable.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields};

use super::ast::Operator;
use super::expand::ports::port_handles;
use super::expand::{bounded_generics, cleaned_struct, private};
use crate::symbol;

/// What is emitted next to errors: the item without our attributes (so no "unknown
/// attribute" follows), the port handles that could be read (so `Self::in_data` in the user's
/// `run` still resolves), and an `Operator` stub (so uses of the type do not fail too).
pub fn fallback(op: Option<&Operator>, input: &DeriveInput) -> TokenStream {
    let Some(op) = op else {
        return strip_attrs(input);
    };
    let p = private();
    let ident = &op.ident;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let item = cleaned_struct(op);
    let handles = port_handles(op);
    quote! {
        #item
        #handles
        impl #impl_g #p::Operator for #ident #ty_g #where_c {
            fn spec(&self) -> #p::OpSpec {
                ::core::unreachable!("`#[operator]` failed to expand")
            }
            fn run(&mut self, _: &mut #p::Firing<'_>) -> #p::Result<(), #p::OpError> {
                ::core::unreachable!("`#[operator]` failed to expand")
            }
        }
    }
}

/// The item with our field attributes removed.
fn strip_attrs(input: &DeriveInput) -> TokenStream {
    let mut input = input.clone();
    let ours = |a: &syn::Attribute| symbol::FIELD_ATTRS.iter().any(|s| a.path() == *s);
    let strip = |fields: &mut Fields| {
        for f in fields.iter_mut() {
            f.attrs.retain(|a| !ours(a));
        }
    };
    match &mut input.data {
        Data::Struct(s) => strip(&mut s.fields),
        Data::Enum(e) => {
            for v in &mut e.variants {
                strip(&mut v.fields);
            }
        }
        Data::Union(u) => {
            for f in &mut u.fields.named {
                f.attrs.retain(|a| !ours(a));
            }
        }
    }
    quote!(#input)
}
