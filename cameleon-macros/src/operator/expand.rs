//! Code generation for `#[operator]`. Everything is generated against
//! `::cameleon::__private`, inside a `const _: () = { … };` block, except the struct itself
//! (its port fields removed).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Generics, Ident, parse_quote};

use super::ast::{Dir, Operator, Port, PortKind, unraw};
use super::attr::{Exec, Family, Policy};
use super::check::{self, default_json};
use crate::ctxt::Ctxt;
use crate::symbol;

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

fn private() -> TokenStream {
    quote!(::cameleon::__private)
}

/// The struct's generics with `T: PortType` added for every type parameter.
fn bounded_generics(op: &Operator) -> Generics {
    let p = private();
    let mut g = op.generics.clone();
    let wc = g.make_where_clause();
    for t in &op.type_params {
        wc.predicates.push(parse_quote!(#t: #p::PortType));
    }
    g
}

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

/// The struct as the user wrote it, without its port fields and our attributes; a hidden
/// `PhantomData` keeps the type parameters that only ports used.
fn cleaned_struct(op: &Operator) -> TokenStream {
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

/// One port handle: a constant of the operator type and a field of its `Ports`.
struct Handle {
    name: Ident,
    index: usize,
    /// The handle's type, with `owner` as the operator type.
    ty: TokenStream,
    /// Its constructor (`InPort::new`…).
    ctor: TokenStream,
    /// Whether it is the declared port (not a further port of a variadic group).
    declared: bool,
}

/// Every handle the ports declare.
fn handles(op: &Operator, owner: &TokenStream) -> Vec<Handle> {
    let p = private();
    let mut out: Vec<Handle> = Vec::new();
    for (dir, ports) in [(Dir::In, &op.inputs), (Dir::Out, &op.outputs)] {
        for (i, port) in ports.iter().enumerate() {
            let ty = &port.ty;
            let accepts_any = dir == Dir::In && port.kind == PortKind::Any;
            let (handle, ctor) = match dir {
                Dir::In if accepts_any => {
                    (quote!(#p::AnyInPort<#owner>), quote!(#p::AnyInPort::new))
                }
                Dir::In => (quote!(#p::InPort<#owner, #ty>), quote!(#p::InPort::new)),
                Dir::Out => (quote!(#p::OutPort<#owner, #ty>), quote!(#p::OutPort::new)),
            };
            for (k, (index, name)) in port.names(i).into_iter().enumerate() {
                // A duplicate is an error reported by `check`; the fallback keeps the first.
                if !out.iter().any(|h| h.name == name) {
                    out.push(Handle {
                        name,
                        index,
                        ty: handle.clone(),
                        ctor: ctor.clone(),
                        declared: k == 0,
                    });
                }
            }
        }
    }
    out
}

fn port_doc(op: &Operator, port: &Port, name: &Ident) -> String {
    if !port.doc.is_empty() && *name == port.name {
        return port.doc.join("\n");
    }
    let dir = if port.dir == Dir::In {
        "Input"
    } else {
        "Output"
    };
    let ty = &port.ty;
    let ty = quote!(#ty).to_string().replace(' ', "");
    let opt = if port.optional { " (optional)" } else { "" };
    match &port.variadic {
        Some(v) => format!(
            "{dir} port `{name}` (`{ty}`) of `{}`: one of the ports `{}_{}`, … whose number is param `{}`.",
            op.ident,
            v.prefix,
            (b'a' + v.start as u8) as char,
            v.param
        ),
        None => format!("{dir} port `{name}` (`{ty}`){opt} of `{}`.", op.ident),
    }
}

fn port_handles(op: &Operator) -> TokenStream {
    let ident = &op.ident;
    let vis = &op.vis;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let consts = handles(op, &quote!(Self)).into_iter().map(|h| {
        let Handle {
            name,
            index,
            ty,
            ctor,
            declared,
        } = h;
        let doc = op
            .ports()
            .find(|port| port.names(0).iter().any(|(_, n)| *n == name))
            .map(|port| port_doc(op, port, &name))
            .unwrap_or_default();
        let hidden = (!declared).then(|| quote!(#[doc(hidden)]));
        let index = index as u16;
        let text = unraw(&name);
        quote! {
            #[doc = #doc]
            #hidden
            #vis const #name: #ty = #ctor(#index, #text);
        }
    });
    quote! {
        // Port handles are named after their ports (`Chunker::in_data`), like fields.
        #[allow(non_upper_case_globals)]
        impl #impl_g #ident #ty_g #where_c {
            #(#consts)*
        }
    }
}

fn ports_struct(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    let vis = &op.vis;
    let ports_ident = format_ident!("{}Ports", ident);
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let owner = quote!(#ident #ty_g);
    let hs = handles(op, &owner);
    let fields = hs.iter().map(|h| {
        let (name, ty) = (&h.name, &h.ty);
        let doc = format!("The handle of port `{}`.", unraw(name));
        quote!(#[doc = #doc] pub #name: #ty)
    });
    let inits = hs.iter().map(|h| {
        let name = &h.name;
        quote!(#name: <#owner>::#name)
    });
    let debug_fields = hs.iter().map(|h| {
        let (name, text) = (&h.name, unraw(&h.name));
        quote!(.field(#text, &self.#name))
    });
    let doc = format!("The port handles of [`{ident}`], one field per port (for `pipeline!`).");
    let ports_text = ports_ident.to_string();
    let input_decls = input_decls(op);
    let policy = policy_tokens(op);
    let struct_generics = &op.generics;
    let struct_where = bounded_generics(op).where_clause;
    quote! {
        #[doc = #doc]
        #vis struct #ports_ident #struct_generics #struct_where {
            #(#fields,)*
        }

        impl #impl_g ::core::clone::Clone for #ports_ident #ty_g #where_c {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl #impl_g ::core::marker::Copy for #ports_ident #ty_g #where_c {}

        impl #impl_g ::core::fmt::Debug for #ports_ident #ty_g #where_c {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#ports_text) #(#debug_fields)* .finish()
            }
        }

        impl #impl_g #p::HasPorts for #ident #ty_g #where_c {
            type Ports = #ports_ident #ty_g;
            fn ports() -> Self::Ports {
                #ports_ident { #(#inits,)* }
            }
            const INPUTS: &'static [#p::InputDecl] = &[#(#input_decls),*];
            const POLICY: #p::Policy = #policy;
        }
    }
}

/// `HasPorts::INPUTS`, for `pipeline!`'s check that every required input is connected: each
/// input with whether it may stay unconnected. A variadic group lists every letter; those past
/// its size param's default are optional (an instance built with the default params does not
/// have them).
fn input_decls(op: &Operator) -> Vec<TokenStream> {
    let p = private();
    let mut out = Vec::new();
    for (i, port) in op.inputs.iter().enumerate() {
        let optional = port.optional;
        match &port.variadic {
            None => {
                let name = unraw(&port.name);
                out.push(quote!(#p::InputDecl { name: #name, optional: #optional }));
            }
            Some(v) => {
                let default = op
                    .params
                    .iter()
                    .find(|prm| prm.field == v.param)
                    .and_then(|prm| prm.default.as_ref())
                    .map_or_else(|| quote!(0usize), |d| quote!(#d));
                for (k, (_, name)) in port.names(i).into_iter().enumerate() {
                    let letter = v.start + k;
                    let name = unraw(&name);
                    out.push(quote! {
                        #p::InputDecl { name: #name, optional: #optional || #letter >= #default }
                    });
                }
            }
        }
    }
    out
}

fn family_tokens(op: &Operator) -> TokenStream {
    let p = private();
    match op.args.family {
        Some((Family::Structural, _)) => quote!(#p::Family::Structural),
        _ => quote!(#p::Family::Behavioral),
    }
}

/// The declared policy; without `firing`, `any`, or `source` for an operator with no inputs
/// (SPEC §3: an operator with zero inputs uses Source).
fn policy(op: &Operator) -> Policy {
    match op.args.firing {
        Some((p, _)) => p,
        None if op.inputs.is_empty() => Policy::Source,
        None => Policy::Any,
    }
}

fn policy_tokens(op: &Operator) -> TokenStream {
    let p = private();
    match policy(op) {
        Policy::Any => quote!(#p::Policy::Any),
        Policy::All => quote!(#p::Policy::All),
        Policy::AnyNoGuard => quote!(#p::Policy::AnyNoGuard),
        Policy::Source => quote!(#p::Policy::Source),
        Policy::Custom => quote!(#p::Policy::Custom),
    }
}

/// The names of the variadic size params, deduplicated, in declaration order.
fn count_params(op: &Operator) -> Vec<Ident> {
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

fn spec_fn(op: &Operator) -> TokenStream {
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

fn label(op: &Operator) -> String {
    op.args
        .label
        .as_ref()
        .map_or_else(|| op.ident.to_string(), |l| l.value())
}

/// How the `Operator` glue reaches the user's trait for the operator type `ty`: a function
/// path, given the name of a method of [`Run`] (`consumes`), or of the `AsyncOps` table of
/// `RunAsync` for `exec = async`. Every use is spanned at the struct's name, so a missing impl is
/// one error there: rustc reports each distinct diagnostic once.
fn user_fn(op: &Operator, ty: &TokenStream, method: &str) -> TokenStream {
    let p = private();
    let span = op.ident.span();
    let method = Ident::new(method, span);
    if op.args.is_async() {
        quote_spanned!(span=> (#p::async_ops::<#ty>().#method))
    } else {
        quote_spanned!(span=> <#ty as #p::Run>::#method)
    }
}

/// The `Execution` the engine sees: structural operators always run inline; a behavioral one
/// runs as declared, `blocking` by default.
fn execution_tokens(op: &Operator) -> TokenStream {
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
fn settings_tokens(op: &Operator) -> TokenStream {
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

fn operator_impl(op: &Operator) -> TokenStream {
    let p = private();
    let ident = &op.ident;
    let g = bounded_generics(op);
    let (impl_g, ty_g, where_c) = g.split_for_impl();
    let counts = count_params(op);
    let this = quote_spanned!(ident.span()=> Self);
    let [consumes, control, rollback] =
        ["consumes", "control", "rollback"].map(|m| user_fn(op, &this, m));

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
        let run = user_fn(op, &this, "run");
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
        quote! {
            fn save_state(&self) -> #p::Option<#p::OpState> {
                #p::Some(#p::OpState::new((#(#saves,)*)))
            }
            fn restore_state(&mut self, state: &#p::OpState) {
                if let #p::Some(__saved) = state.get::<(#(#tys,)*)>() {
                    #(#restores)*
                }
            }
        }
    };

    let spec_args = counts.iter().map(|c| quote!(self.#c));
    quote! {
        impl #impl_g #p::Operator for #ident #ty_g #where_c {
            fn spec(&self) -> #p::OpSpec {
                Self::__cameleon_spec(#(#spec_args),*)
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
        }
    }
}

fn catalogue(op: &Operator) -> TokenStream {
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

fn generate(op: &Operator) -> TokenStream {
    let declarations = declarations(op);
    let item = cleaned_struct(op);
    let handles = port_handles(op);
    let ports = ports_struct(op);
    let spec = spec_fn(op);
    let operator = operator_impl(op);
    let catalogue = catalogue(op);
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

/// What is emitted next to errors: the item without our attributes (so no "unknown
/// attribute" follows), the port handles that could be read (so `Self::in_data` in the user's
/// `run` still resolves), and an `Operator` stub (so uses of the type do not fail too).
fn fallback(op: Option<&Operator>, input: &DeriveInput) -> TokenStream {
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
