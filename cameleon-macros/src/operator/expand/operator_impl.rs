//! The `Operator` impl: the glue between the engine and the user's code. `spec` and `params`
//! come from the declaration; `run`, `consumes`, `control`, `rollback` and `replay` go to the user's
//! `Run` (or, for `exec = async`, `RunAsync`), `can_fire` to `CanFire` for `firing = custom`;
//! the internal state is saved and restored through its `State` (a clone).

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::decl::execution_tokens;
use super::spec::count_params;
use super::{bounded_generics, private};
use crate::operator::ast::Operator;
use crate::operator::attr::{Exec, Policy};

/// How the generated code reaches the user's trait for the operator type `ty`: a function path,
/// given the name of a method of `Run` (`consumes`), or of the `AsyncOps` table of `RunAsync`
/// for `exec = async`. Every use is spanned at one place, so a missing impl is one error there
/// (rustc reports each distinct diagnostic once): the struct's name for `Run`, the `async` of
/// `exec = async` for `RunAsync` (`ty` too, so the whole path is there).
pub fn user_fn(op: &Operator, ty: &TokenStream, method: &str) -> TokenStream {
    let p = private();
    match op.args.exec {
        Some((Exec::Async, span)) => {
            let method = Ident::new(method, span);
            let ty = respan(ty.clone(), span);
            quote_spanned!(span=> (#p::async_ops::<#ty>().#method))
        }
        _ => {
            let span = op.ident.span();
            let method = Ident::new(method, span);
            quote_spanned!(span=> <#ty as #p::Run>::#method)
        }
    }
}

/// `tokens` with every token, in groups too, at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// The `impl Operator`, spliced into the expansion's `const _` block.
pub fn operator_impl(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let counts = count_params(op);
    let this = quote_spanned!(ident.span()=> Self);
    let [consumes, control, rollback, replay, refine_spec] =
        ["consumes", "control", "rollback", "replay", "refine_spec"].map(|m| user_fn(op, &this, m));

    // `exec = inline | blocking` says how parallel mode runs `run`; `exec = async` makes the
    // operator async: `run_async` awaits `RunAsync::run` (`run_async_boxed`), and `run` drives it
    // to completion (`run_async_blocking`).
    let run = if op.args.is_async() {
        let [run, run_async] = ["run", "run_async"].map(|m| user_fn(op, &this, m));
        quote! {
            fn execution(&self) -> #p::Execution {
                #p::Execution::Async
            }
            fn run(&mut self, cx: &mut #p::Firing<'_>) -> #p::Result<(), #p::OpError> {
                #run(self, cx)
            }
            fn run_async<'__a>(
                &'__a mut self,
                cx: &'__a mut #p::Firing<'_>,
            ) -> #p::OpFuture<'__a> {
                #run_async(self, cx)
            }
        }
    } else {
        let [run, calls_tool, has_answer, answer] =
            ["run", "calls_tool", "has_answer", "answer"].map(|m| user_fn(op, &this, m));
        let execution = op.args.exec.is_some().then(|| {
            let exec = execution_tokens(op);
            quote! {
                fn execution(&self) -> #p::Execution {
                    #exec
                }
            }
        });
        quote! {
            fn run(&mut self, cx: &mut #p::Firing<'_>) -> #p::Result<(), #p::OpError> {
                #run(self, &mut cx.typed::<Self>())
            }
            fn calls_tool(&self) -> #p::Option<&str> {
                #calls_tool(self)
            }
            fn has_answer(&self) -> bool {
                #has_answer(self)
            }
            fn answer(&mut self, value: #p::Value) {
                #answer(self, value)
            }
            #execution
        }
    };

    let settings = (op.args.timeout_ms.is_some() || op.args.retry.is_some()).then(|| {
        quote! {
            fn settings(&self) -> #p::OpSettings {
                __CAMELEON_SETTINGS
            }
        }
    });

    let params_fn = if op.params.is_empty() {
        quote! {
            fn params(&self) -> #p::Params {
                #p::Params::new()
            }
        }
    } else {
        let inserts = op.params.iter().map(|prm| {
            let (field, name, ty) = (&prm.field, &prm.name, &prm.ty);
            let param = quote_spanned!(ty.span()=> #p::param::<#ty>());
            let write = quote!((#param.write)(&self.#field));
            quote!(__params.insert(#p::ToOwned::to_owned(#name), #write);)
        });
        quote! {
            fn params(&self) -> #p::Params {
                let mut __params = #p::Params::new();
                #(#inserts)*
                __params
            }
        }
    };

    let can_fire = match op.args.firing {
        Some((Policy::Custom, span)) => {
            let path = quote_spanned!(span=> <Self as #p::CanFire>::can_fire);
            quote! {
                fn can_fire(&self, e: &#p::Enabling<'_>) -> bool {
                    #path(self, e)
                }
            }
        }
        _ => TokenStream::new(),
    };

    let state = if op.state.is_empty() {
        TokenStream::new()
    } else {
        let fields: Vec<&Ident> = op.state.iter().map(|(f, _)| f).collect();
        let tys: Vec<&syn::Type> = op.state.iter().map(|(_, t)| t).collect();
        let ops: Vec<TokenStream> = op
            .state
            .iter()
            .map(|(_, t)| quote_spanned!(t.span()=> #p::state::<#t>()))
            .collect();
        let saves = fields
            .iter()
            .zip(&ops)
            .map(|(f, o)| quote!((#o.save)(&self.#f)));
        let restores = fields.iter().zip(&ops).enumerate().map(|(i, (f, o))| {
            let i = syn::Index::from(i);
            quote!(self.#f = (#o.save)(&__saved.#i);)
        });
        // The journal's form of the state: a JSON array, one element per field, each through the
        // field's own serde form (so a field that is not serde is reported once, at the field).
        let to_json = ops.iter().enumerate().map(|(i, o)| {
            let i = syn::Index::from(i);
            quote!((#o.to_json)(&__s.#i)?)
        });
        let from_json = fields.iter().zip(&ops).map(|(f, o)| {
            let name = f.to_string();
            quote!(#p::state_field(__it.next(), #name, #o.from_json)?)
        });
        let n = fields.len();
        quote! {
            fn save_state(&self) -> #p::Option<#p::OpState> {
                #p::Some(#p::OpState::with_codec(
                    (#(#saves,)*),
                    #p::StateCodec {
                        to_json: |__any: &(dyn #p::StdAny + ::core::marker::Send)| {
                            let __s = __any
                                .downcast_ref::<(#(#tys,)*)>()
                                .ok_or_else(|| #p::String::from("the state is not of this operator's type"))?;
                            #p::Ok(#p::serde_json::Value::Array(#p::Vec::from([#(#to_json,)*])))
                        },
                        from_json: |__v: #p::serde_json::Value| {
                            let mut __it = #p::state_fields(__v, #n)?;
                            let __s: (#(#tys,)*) = (#(#from_json,)*);
                            #p::Ok(#p::Box::new(__s) as #p::Box<dyn #p::StdAny + ::core::marker::Send>)
                        },
                    },
                ))
            }
            fn restore_state(&mut self, state: &#p::OpState) {
                if let #p::Some(__saved) = state.get::<(#(#tys,)*)>() {
                    #(#restores)*
                }
            }
        }
    };

    // An operator without params or context is, in its initial state, what the catalogue
    // builds from its (empty) params: `fresh` makes it without the catalogue's round trip
    // (a sub-net's or a map's runs renew their operators each run).
    let fresh = (op.params.is_empty() && op.context.is_empty()).then(|| {
        let validate = user_fn(op, &this, "validate");
        let state_vars: Vec<Ident> = (0..op.state.len())
            .map(|i| quote::format_ident!("__state{}", i))
            .collect();
        let state_init = (!op.state.is_empty())
            .then(|| quote!(let (#(#state_vars,)*) = Self::__cameleon_initial_state();));
        let state_inits = op
            .state
            .iter()
            .zip(&state_vars)
            .map(|((f, _), v)| quote!(#f: #v,));
        let phantom =
            (!op.type_params.is_empty()).then(|| quote!(__cameleon_ports: #p::PhantomData,));
        quote! {
            fn fresh(&self) -> #p::Option<#p::Box<dyn #p::Operator>> {
                #state_init
                let __op: Self = #ident {
                    #(#state_inits)*
                    #phantom
                };
                #validate(&__op).ok()?;
                #p::Some(#p::Box::new(__op))
            }
        }
    });

    let spec_args = counts.iter().map(|c| quote!(self.#c));
    quote! {
        impl #impl_g #p::Operator for #ident #ty_g #where_c {
            fn spec(&self) -> #p::OpSpec {
                #refine_spec(self, Self::__cameleon_spec(#(#spec_args),*))
            }
            #params_fn
            #can_fire
            fn consumes(&self, inputs: &[#p::ConnState]) -> #p::InputSet {
                #consumes(self, inputs)
            }
            fn control(&self) -> #p::Option<&dyn #p::FiniteControl> {
                #control(self)
            }
            #run
            #settings
            #state
            #fresh
            fn rollback(
                &mut self,
                before: #p::Option<&#p::OpState>,
                emitted: &[(u16, #p::Value)],
            ) {
                #rollback(self, &#p::Emitted::new(emitted));
                if let #p::Some(__before) = before {
                    <Self as #p::Operator>::restore_state(self, __before);
                }
            }
            fn replay(
                &mut self,
                after: #p::Option<&#p::OpState>,
                emitted: &[(u16, #p::Value)],
            ) {
                if let #p::Some(__after) = after {
                    <Self as #p::Operator>::restore_state(self, __after);
                }
                #replay(self, &#p::Emitted::new(emitted));
            }
        }
    }
}
