//! The rules of a `#[tool]` declaration, one small function each, every violation reported at
//! the user's tokens.

use syn::spanned::Spanned;
use syn::{FnArg, ReturnType, Type};

use super::ast::Tool;
use crate::ctxt::Ctxt;

/// Checks every rule, recording each violation.
pub fn check(cx: &Ctxt, t: &Tool<'_>) {
    check_plain_fn(cx, t);
    check_no_receiver(cx, t);
    check_no_generics(cx, t);
    check_params(cx, t);
    check_context(cx, t);
    check_args_by_value(cx, t);
    check_returns_result(cx, t);
    check_name(cx, t);
}

/// Rule: a tool is a plain function: not `const`, `unsafe`, `extern` or variadic.
fn check_plain_fn(cx: &Ctxt, t: &Tool<'_>) {
    let sig = &t.item.sig;
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, "a `#[tool]` cannot be a `const fn`");
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        cx.error_spanned_by(
            u,
            "a `#[tool]` cannot be `unsafe`: the gate calls it with arguments a model wrote",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a `#[tool]` is a Rust function, without `extern`");
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, "a `#[tool]` cannot be variadic");
    }
}

/// Rule: a tool is a free function, not a method.
fn check_no_receiver(cx: &Ctxt, t: &Tool<'_>) {
    for a in &t.item.sig.inputs {
        if let FnArg::Receiver(r) = a {
            cx.error_spanned_by(
                r,
                "a `#[tool]` is a free function: it cannot take `self`; put the state it needs in a static or pass it in its arguments",
            );
        }
    }
}

/// Rule: a tool is not generic: the gate calls one function, with one schema.
fn check_no_generics(cx: &Ctxt, t: &Tool<'_>) {
    let g = &t.item.sig.generics;
    if !g.params.is_empty() {
        cx.error_spanned_by(
            &g.params,
            "a `#[tool]` cannot be generic: its arguments have one JSON Schema",
        );
    }
    if let Some(w) = &g.where_clause {
        cx.error_spanned_by(w, "a `#[tool]` cannot have a `where` clause");
    }
}

/// Rule: one arguments parameter, optionally after a context parameter.
fn check_params(cx: &Ctxt, t: &Tool<'_>) {
    let n = t.item.sig.inputs.len();
    if n == 1 || n == 2 {
        return;
    }
    let msg = "a `#[tool]` takes one arguments struct (`args: MyArgs`, deriving `Deserialize` and `JsonSchema`), optionally after its context (`cx: &ToolContext`)";
    if n == 0 {
        cx.error_at(t.item.sig.paren_token.span.join(), msg);
    } else {
        cx.error_spanned_by(&t.item.sig.inputs, msg);
    }
}

/// Rule: with two parameters, the first is the context, `&ToolContext`.
fn check_context(cx: &Ctxt, t: &Tool<'_>) {
    let Some(ty) = t.context else {
        return;
    };
    let is_context = match ty {
        Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "ToolContext"),
            _ => false,
        },
        _ => false,
    };
    if !is_context {
        cx.error_spanned_by(
            ty,
            "the first of two parameters of a `#[tool]` is its context: `cx: &ToolContext` (the base folder, who asks); the arguments struct comes second",
        );
    }
}

/// Rule: the arguments are taken by value, as a named type (not a reference, not `impl …`).
fn check_args_by_value(cx: &Ctxt, t: &Tool<'_>) {
    match t.args_ty {
        Some(ty @ Type::Reference(_)) => cx.error_spanned_by(
            ty,
            "a `#[tool]` takes its arguments struct by value (`args: MyArgs`), not by reference",
        ),
        Some(ty @ Type::ImplTrait(_)) => cx.error_spanned_by(
            ty,
            "a `#[tool]` takes a named arguments struct, not `impl …`: the struct's JSON Schema is what a model sees",
        ),
        _ => {}
    }
}

/// Rule: the function returns `Result<impl Serialize, ToolError>`, written `Result<…>`.
fn check_returns_result(cx: &Ctxt, t: &Tool<'_>) {
    if t.ok_ty.is_some() {
        return;
    }
    let msg = "a `#[tool]` returns `Result<T, ToolError>` where `T: Serialize` (`impl Serialize` too): write the return type as `Result<…>`";
    match &t.item.sig.output {
        ReturnType::Default => cx.error_at(t.item.sig.ident.span(), msg),
        ReturnType::Type(_, ty) => cx.error_at(ty.span(), msg),
    }
}

/// Rule: a tool's name is what models call it by: letters, digits, `_` and `-`, at most 64.
fn check_name(cx: &Ctxt, t: &Tool<'_>) {
    let ok = !t.name.is_empty()
        && t.name.len() <= 64
        && t.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        return;
    }
    let msg = format!(
        "`{}` is not a tool name: use letters, digits, `_` and `-`, at most 64 (models call tools by name)",
        t.name
    );
    match &t.args.name {
        Some(lit) => cx.error_spanned_by(lit, msg),
        None => cx.error_spanned_by(&t.item.sig.ident, msg),
    }
}
