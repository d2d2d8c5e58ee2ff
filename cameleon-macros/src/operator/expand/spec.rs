//! `__cameleon_spec`: the `OpSpec` of an instance — its ports with their types, in order, for
//! the sizes its variadic groups have — and the initial value of its internal state.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::decl::{family_tokens, label, policy_tokens};
use super::{bounded_generics, private};
use crate::operator::ast::{Dir, Operator, Port, PortKind, unraw};

/// The names of the variadic size params, deduplicated, in declaration order.
pub fn count_params(op: &Operator) -> Vec<Ident> {
    let mut v: Vec<Ident> = Vec::new();
    for port in op.ports() {
        if let Some(g) = &port.variadic
            && !v.contains(&g.param)
        {
            v.push(g.param.clone());
        }
    }
    v
}

/// `TypeRef` of one port (for a variadic `Any` port, of the port at letter `__i`). A port typed
/// by the struct's type parameter number `k` is that type, or, when the parameter is `Any` (as
/// the catalogue builds it), the type variable `Tk`, in either family: a behavioral `Delay<T>`
/// passes on the type it receives.
fn type_ref(op: &Operator, port: &Port) -> TokenStream {
    let p = private();
    let ty = &port.ty;
    let span = ty.span();
    match port.kind {
        PortKind::Generic(k) => {
            let k = k as u8;
            quote_spanned!(span=> #p::TypeRef::var_or::<#ty>(#k))
        }
        PortKind::Any if op.is_structural() => quote!(#p::TypeRef::Var(__i as u8)),
        _ => quote_spanned!(span=> #p::TypeRef::of::<#ty>()),
    }
}

/// The inherent `__cameleon_spec(sizes…)` (and `__cameleon_initial_state()`, with state).
pub fn spec_fn(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let id = op.args.id.as_ref().map(|i| i.value()).unwrap_or_default();
    let label = label(op);
    let family = family_tokens(op);
    let policy = policy_tokens(op);
    let counts = count_params(op);
    let mut steps = Vec::new();
    for port in op.ports() {
        let tr = type_ref(op, port);
        let method = match (port.dir, port.optional) {
            (Dir::In, false) => quote!(input),
            (Dir::In, true) => quote!(optional_input),
            (Dir::Out, _) => quote!(output),
        };
        steps.push(match &port.variadic {
            None => {
                let name = unraw(&port.name);
                quote!(let __s = __s.#method(#name, #tr);)
            }
            Some(v) => {
                let (prefix, start, count) = (&v.prefix, v.start, &v.param);
                quote! {
                    let __s = {
                        let mut __s = __s;
                        for __i in #start..#p::variadic_count(#count) {
                            __s = __s.#method(#p::letter_port(#prefix, __i), #tr);
                        }
                        __s
                    };
                }
            }
        });
    }
    if let Some(sets) = &op.args.emits {
        let sets = sets.iter().map(|set| {
            let names = set.iter().map(|n| n.to_string());
            quote!(&[#(#names),*])
        });
        steps.push(quote!(let __s = __s.emits(&[#(#sets),*]);));
    }
    let initial_state = (!op.state.is_empty()).then(|| {
        let tys = op.state.iter().map(|(_, t)| t);
        let inits = op.state.iter().map(|(_, t)| {
            let ops = quote_spanned!(t.span()=> #p::state::<#t>());
            quote!((#ops.initial)())
        });
        quote! {
            #[doc(hidden)]
            fn __cameleon_initial_state() -> (#(#tys,)*) {
                (#(#inits,)*)
            }
        }
    });
    quote! {
        impl #impl_g #ident #ty_g #where_c {
            #[doc(hidden)]
            fn __cameleon_spec(#(#counts: usize),*) -> #p::OpSpec {
                let __s = #p::OpSpec::new(#id, #label, #family, #policy);
                #(#steps)*
                __s
            }
            #initial_state
        }
    }
}
