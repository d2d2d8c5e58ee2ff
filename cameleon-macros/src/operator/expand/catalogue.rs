//! The catalogue entry: the `Catalogued` impl (id, aliases, label, docs, params with their
//! defaults, the spec with default sizes, the build function that makes an instance from `.cm`
//! params) and its `inventory` submission, which puts the operator in the catalogue.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::decl::{execution_tokens, family_tokens, label, policy_tokens, settings_tokens};
use super::operator_impl::user_fn;
use super::spec::count_params;
use super::{bounded_generics, private};
use crate::operator::ast::{Operator, unraw};
use crate::operator::check::default_json;

/// The type the catalogue builds: every type parameter `Any`.
fn catalogue_type(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    if op.type_params.is_empty() {
        quote!(#ident)
    } else {
        let anys = op.type_params.iter().map(|_| quote!(#p::Any));
        quote!(#ident<#(#anys),*>)
    }
}

/// The catalogue items, spliced into the expansion's `const _` block.
pub fn catalogue(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let any_ty = catalogue_type(op);
    let id = op.args.id.as_ref().map(|i| i.value()).unwrap_or_default();
    let aliases = op.args.aliases.iter().map(|a| a.value());
    let label = label(op);
    let family = family_tokens(op);
    let policy = policy_tokens(op);
    let doc = &op.doc;

    let infos = op.params.iter().map(|prm| {
        let (name, ty, pdoc) = (&prm.name, &prm.ty, &prm.doc);
        let param = quote_spanned!(ty.span()=> #p::param::<#ty>());
        let ty_name = quote!(#param.name);
        let default = match prm.default.as_ref().and_then(default_json) {
            Some(json) => quote!(#p::Some(#json)),
            None => quote!(#param.implicit_default),
        };
        quote! {
            #p::ParamInfo { name: #name, ty: #ty_name, default: #default, doc: #pdoc }
        }
    });

    let port_docs = op.ports().filter(|port| !port.doc.is_empty()).map(|port| {
        let doc = port
            .doc
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let (name, group) = (unraw(&port.name), port.variadic.is_some());
        quote!(#p::PortDoc { name: #name, group: #group, doc: #doc })
    });

    let count_defaults = count_params(op).into_iter().map(|c| {
        op.params
            .iter()
            .find(|prm| prm.field == c)
            .and_then(|prm| prm.default.clone())
            .map_or_else(|| quote!(0), |d| quote!(#d))
    });

    let param_inits = op.params.iter().map(|prm| {
        let (field, name, ty) = (&prm.field, &prm.name, &prm.ty);
        let param = quote_spanned!(ty.span()=> #p::param::<#ty>());
        quote!(#field: (#param.read)(&__reader, #name)?,)
    });
    let context_inits = op
        .context
        .iter()
        .map(|f| quote!(#f: #p::FromContext::from_context(__cx),));
    // Through the generic impl: a state type may name the type parameters, not in scope here.
    let state_vars: Vec<Ident> = (0..op.state.len())
        .map(|i| format_ident!("__state{}", i))
        .collect();
    let state_init = (!op.state.is_empty())
        .then(|| quote!(let (#(#state_vars,)*) = <#any_ty>::__cameleon_initial_state();));
    let state_inits = op
        .state
        .iter()
        .zip(&state_vars)
        .map(|((f, _), v)| quote!(#f: #v,));
    let phantom = (!op.type_params.is_empty()).then(|| quote!(__cameleon_ports: #p::PhantomData,));
    let reader = if op.params.is_empty() {
        quote!(#p::ParamReader::new(__params, __CAMELEON_PARAMS)?;)
    } else {
        quote!(let __reader = #p::ParamReader::new(__params, __CAMELEON_PARAMS)?;)
    };
    let cx_name = if op.context.is_empty() {
        quote!(_)
    } else {
        quote!(__cx)
    };
    let validate = user_fn(op, &any_ty, "validate");
    let execution = execution_tokens(op);

    let settings = settings_tokens(op);
    quote! {
        const __CAMELEON_PARAMS: &[#p::ParamInfo] = &[#(#infos),*];

        const __CAMELEON_SETTINGS: #p::OpSettings = #settings;

        fn __cameleon_catalogue_spec() -> #p::OpSpec {
            <#any_ty>::__cameleon_spec(#(#count_defaults),*)
        }

        fn __cameleon_build(
            __params: &#p::Params,
            #cx_name: &#p::BuildContext,
        ) -> #p::Result<#p::Box<dyn #p::Operator>, #p::ParamError> {
            #reader
            #state_init
            let __op: #any_ty = #ident {
                #(#param_inits)*
                #(#context_inits)*
                #(#state_inits)*
                #phantom
            };
            #validate(&__op)?;
            #p::Ok(#p::Box::new(__op))
        }

        impl #impl_g #p::Catalogued for #ident #ty_g #where_c {
            const ENTRY: #p::CatalogueEntry = #p::CatalogueEntry {
                id: #id,
                aliases: &[#(#aliases),*],
                label: #label,
                family: #family,
                policy: #policy,
                doc: #doc,
                params: __CAMELEON_PARAMS,
                ports: &[#(#port_docs),*],
                spec: __cameleon_catalogue_spec,
                build: __cameleon_build,
                execution: #execution,
                settings: __CAMELEON_SETTINGS,
            };
        }

        #p::inventory::submit! {
            <#any_ty as #p::Catalogued>::ENTRY
        }
    }
}
