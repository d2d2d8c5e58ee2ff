//! Code generation for `#[tool]`: the function as written, then, in a `const _: () = { … };`
//! block, the glue the gate calls (arguments read from JSON, the result written to JSON), the
//! two JSON Schemas, and the `ToolEntry` submitted to the global registry with `inventory`.
//! Trait-bound checks are spanned at the user's tokens: the arguments type, the return type.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

use super::ast::Tool;
use super::attr::{Effect, ToolArgs};
use super::check;
use crate::ctxt::Ctxt;

/// The entry point: the expansion of `#[tool(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let err = syn::Error::new(
                Span::call_site(),
                "`#[tool]` goes on a function taking one arguments struct and returning `Result<impl Serialize, ToolError>`",
            );
            let mut out = err.into_compile_error();
            out.extend(item);
            return out;
        }
    };
    let cx = Ctxt::new();
    let tool_args = ToolArgs::parse(&cx, args);
    let tool = Tool::from_item(&func, tool_args);
    check::check(&cx, &tool);
    match cx.check() {
        Ok(()) => generate(&tool),
        Err(e) => {
            // The function stays, so the rest of the crate sees it; nothing is registered.
            let mut out = e.into_compile_error();
            out.extend(quote!(#func));
            out
        }
    }
}

fn generate(t: &Tool<'_>) -> TokenStream {
    let func = t.item;
    let ident = &func.sig.ident;
    let name = &t.name;
    let doc = &t.doc;
    let (Some(args_ty), Some(ok_ty)) = (t.args_ty, t.ok_ty) else {
        return quote!(#func); // unreachable: `check` requires both
    };
    let p = quote!(::cameleon::__private);
    let timeout = match t.args.timeout_ms {
        Some(ms) => quote!(#p::Some(#ms)),
        None => quote!(#p::None),
    };
    let effects = match t.args.effects.unwrap_or(Effect::External) {
        Effect::None => quote!(#p::Effect::None),
        Effect::Read => quote!(#p::Effect::Read),
        Effect::Write => quote!(#p::Effect::Write),
        Effect::External => quote!(#p::Effect::External),
    };
    let idempotent = t.args.idempotent;
    let call_args = if t.context.is_some() {
        quote!(__cx, __args)
    } else {
        quote!(__args)
    };
    // Checked at the user's tokens: the arguments type (once, here), the return type.
    let args_ops = quote_spanned! {args_ty.span()=>
        const __CAMELEON_ARGS: #p::ArgsOf<#args_ty> = #p::args_of::<#args_ty>();
    };
    let ret_span = match &func.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => ident.span(),
    };
    // The result goes through a local spanned at the return type, so an unsatisfied bound on it
    // is reported there.
    let out_var = syn::Ident::new("__out", ret_span);
    let output = |call: TokenStream| {
        let convert = quote_spanned! {ret_span=> #p::tool_output(#out_var) };
        quote! {
            let #out_var = #call;
            #convert
        }
    };
    let read_args = quote!((__CAMELEON_ARGS.read)(#name, __args)?);
    let run = if t.is_async {
        let out = output(quote!(#ident(#call_args).await));
        quote! {
            fn __cameleon_tool_run<'a>(
                __cx: &'a #p::ToolContext,
                __args: #p::serde_json::Value,
            ) -> #p::CapFuture<'a, #p::Result<#p::serde_json::Value, #p::ToolError>> {
                let _ = &__cx;
                #p::Box::pin(async move {
                    let __args: #args_ty = #read_args;
                    #out
                })
            }
            const __CAMELEON_TOOL_FN: #p::ToolFn = #p::ToolFn::Async(__cameleon_tool_run);
        }
    } else {
        let out = output(quote!(#ident(#call_args)));
        quote! {
            fn __cameleon_tool_run(
                __cx: &#p::ToolContext,
                __args: #p::serde_json::Value,
            ) -> #p::Result<#p::serde_json::Value, #p::ToolError> {
                let _ = &__cx;
                let __args: #args_ty = #read_args;
                #out
            }
            const __CAMELEON_TOOL_FN: #p::ToolFn = #p::ToolFn::Sync(__cameleon_tool_run);
        }
    };
    let output_schema = match ok_ty {
        syn::Type::ImplTrait(_) => quote!(#p::serde_json::Value::Bool(true)),
        ty => quote! {{
            #[allow(unused_imports)]
            use #p::{ToolSchemaAny as _, ToolSchemaOf as _};
            (&#p::SchemaProbe::<#ty>::new()).tool_output_schema()
        }},
    };
    quote! {
        #func

        #[doc(hidden)]
        const _: () = {
            #args_ops
            #run
            fn __cameleon_tool_input() -> #p::serde_json::Value {
                (__CAMELEON_ARGS.schema)()
            }
            fn __cameleon_tool_output() -> #p::serde_json::Value {
                #output_schema
            }
            #p::inventory::submit! {
                #p::ToolEntry {
                    name: #name,
                    description: #doc,
                    input_schema: __cameleon_tool_input,
                    output_schema: __cameleon_tool_output,
                    timeout_ms: #timeout,
                    effects: #effects,
                    idempotent: #idempotent,
                    run: __CAMELEON_TOOL_FN,
                }
            }
        };
    }
}
