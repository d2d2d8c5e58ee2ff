//! Code generation for `#[operator]`: the entry point, and the item it emits. Everything is
//! generated against `::cameleon::__private`, inside a `const _: () = { … };` block, except the
//! struct itself (its port fields removed). A declaration with errors gets the stub of
//! `operator::fallback` instead.
//!
//! One module per part of the output:
//!
//! - `ports`: the port handles (`Chunker::in_data`), the `…Ports` struct and `HasPorts`;
//! - `spec`: `__cameleon_spec`, the `OpSpec` of an instance;
//! - `operator_impl`: the `Operator` impl, glue to the user's `Run` or `RunAsync`;
//! - `catalogue`: the catalogue entry (`Catalogued`, the build function) and its `inventory`
//!   submission;
//! - `decl`: the declared label, family, policy, execution and settings as constant expressions,
//!   shared by the others.

mod catalogue;
mod decl;
mod operator_impl;
pub mod ports;
mod spec;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{DeriveInput, Generics, parse_quote};

use super::ast::Operator;
use super::check;
use super::fallback::fallback;
use crate::ctxt::Ctxt;

/// The entry point: the expansion of `#[operator(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item.clone()) {
        Ok(input) => input,
        Err(_) => {
            let err = syn::Error::new(
                Span::call_site(),
                "`#[operator]` goes on a struct whose fields declare the operator's ports and params",
            );
            let mut out = err.into_compile_error();
            out.extend(item);
            return out;
        }
    };
    let cx = Ctxt::new();
    let op = Operator::from_input(&cx, args, &input);
    if let Some(op) = &op {
        check::check(&cx, op);
    }
    match (cx.check(), op) {
        (Ok(()), Some(op)) => generate(&op),
        (Err(e), op) => {
            // The original item (cleaned) and the errors, plus stubs, so the rest of the crate
            // still type-checks and the user sees only the real mistakes.
            let mut out = e.into_compile_error();
            out.extend(fallback(op.as_ref(), &input));
            out
        }
        (Ok(()), None) => unreachable!("a declaration without a model has an error"),
    }
}

/// The path every generated item goes through.
pub fn private() -> TokenStream {
    quote!(::cameleon::__private)
}

/// The struct's generics with `T: PortType` added for every type parameter.
pub fn bounded_generics(op: &Operator) -> Generics {
    let p = private();
    let mut g = op.generics.clone();
    let wc = g.make_where_clause();
    for t in &op.type_params {
        wc.predicates.push(parse_quote!(#t: #p::PortType));
    }
    g
}

/// The struct as the user wrote it, without its port fields and our attributes; a hidden
/// `PhantomData` keeps the type parameters that only ports used.
pub fn cleaned_struct(op: &Operator) -> TokenStream {
    let p = private();
    let Operator {
        attrs,
        vis,
        ident,
        generics,
        kept_fields,
        type_params,
        ..
    } = op;
    let where_clause = &generics.where_clause;
    if kept_fields.is_empty() && type_params.is_empty() {
        return quote! {
            #(#attrs)*
            #vis struct #ident #generics #where_clause;
        };
    }
    let phantom = (!type_params.is_empty()).then(|| {
        quote! {
            #[doc(hidden)]
            __cameleon_ports: #p::PhantomData<fn() -> (#(#type_params,)*)>,
        }
    });
    quote! {
        #(#attrs)*
        #vis struct #ident #generics #where_clause {
            #(#kept_fields,)*
            #phantom
        }
    }
}

/// The port fields' types as written, in a type alias: it keeps the user's
/// `use cameleon::{In, Out}` from looking unused without checking anything twice (an alias does
/// not check bounds; the port types are checked once, by the spec).
fn declarations(op: &Operator) -> TokenStream {
    let tps = &op.type_params;
    let tys = op.ports().map(|p| &p.field_ty);
    quote! {
        #[allow(dead_code)] // only names the declared types
        type __CameleonDeclaredPorts<#(#tps),*> = (#(#tys,)*);
    }
}

/// The expansion of a declaration without errors.
fn generate(op: &Operator) -> TokenStream {
    let declarations = declarations(op);
    let item = cleaned_struct(op);
    let handles = ports::port_handles(op);
    let ports = ports::ports_struct(op);
    let spec = spec::spec_fn(op);
    let operator = operator_impl::operator_impl(op);
    let catalogue = catalogue::catalogue(op);
    quote! {
        #item
        const _: () = {
            #handles
            #declarations
            #ports
            #spec
            #operator
            #catalogue
        };
    }
}
