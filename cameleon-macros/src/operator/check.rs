//! The rules a declaration must follow, one small function each. Every rule records its
//! problems in the [`Ctxt`] and the checks go on, so all mistakes are reported together.

use proc_macro2::Span;
use syn::{Expr, ExprArray, ExprLit, ExprUnary, GenericParam, Lit, Type, UnOp};

use super::ast::{Dir, Operator, PortKind};
use super::attr::Exec;
use crate::ctxt::Ctxt;
use crate::suggest;

pub fn check(cx: &Ctxt, op: &Operator) {
    check_id(cx, op);
    check_generics(cx, op);
    check_port_names_unique(cx, op);
    check_param_names_unique(cx, op);
    check_variadic_groups(cx, op);
    check_any_ports(cx, op);
    check_emits(cx, op);
    check_param_defaults(cx, op);
    check_param_types_are_concrete(cx, op);
    check_exec(cx, op);
}

/// A structural operator runs inline whatever it declares (it only moves references,
/// `docs/semantics.md` §7): `exec = blocking` or `exec = async` on one would be silently ignored,
/// so it is an error.
fn check_exec(cx: &Ctxt, op: &Operator) {
    if let Some((exec, span)) = op.args.exec
        && exec != Exec::Inline
        && op.is_structural()
    {
        let kind = if exec == Exec::Async {
            "async"
        } else {
            "blocking"
        };
        cx.error_at(
            span,
            format!(
                "a structural operator always runs inline (it only moves references), so `exec = {kind}` would be ignored: remove it, or declare the operator `family = behavioral`"
            ),
        );
    }
}

/// A param's type does not name a type parameter: the catalogue builds a generic operator with
/// `Any` for each, and `.cm` params are read before any type is known.
fn check_param_types_are_concrete(cx: &Ctxt, op: &Operator) {
    fn mentions(tokens: proc_macro2::TokenStream, names: &[syn::Ident]) -> Option<syn::Ident> {
        tokens.into_iter().find_map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if names.contains(&i) => Some(i),
            proc_macro2::TokenTree::Group(g) => mentions(g.stream(), names),
            _ => None,
        })
    }
    for p in &op.params {
        let ty = &p.ty;
        if let Some(t) = mentions(quote::quote!(#ty), &op.type_params) {
            cx.error_spanned_by(
                ty,
                format!(
                    "param `{}` cannot depend on the type parameter `{t}`: params are read from `.cm` for the operator built with `Any`; give it a concrete type",
                    p.name
                ),
            );
        }
    }
}

/// `id` is given, and is a `.cm` type id: lowercase ASCII letters, digits and `_`, starting with
/// a letter.
fn check_id(cx: &Ctxt, op: &Operator) {
    let Some(id) = &op.args.id else {
        if op.args.id_given {
            return; // its value is wrong, and reported
        }
        cx.error_at(
            Span::call_site(),
            format!(
                "`#[operator]` needs an `id`, the operator's name in `.cm` files and the catalogue: `#[operator(id = \"{}\", …)]`",
                snake_case(&op.ident.to_string())
            ),
        );
        return;
    };
    let v = id.value();
    let ok = v.starts_with(|c: char| c.is_ascii_lowercase())
        && v.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok {
        cx.error_spanned_by(
            id,
            format!(
                "operator id `{v}` is not a `.cm` type id: use lowercase letters, digits and `_`, starting with a letter (e.g. `{}`)",
                snake_case(&v)
            ),
        );
    }
    for alias in &op.args.aliases {
        if alias.value() == v {
            cx.error_spanned_by(alias, format!("alias `{v}` is the operator's own id"));
        }
    }
}

/// Type parameters only: the catalogue builds a generic operator with `Any` for each of them, so
/// lifetimes and const parameters have no value to take.
fn check_generics(cx: &Ctxt, op: &Operator) {
    for p in &op.generics.params {
        match p {
            GenericParam::Type(_) => {}
            GenericParam::Lifetime(l) => cx.error_spanned_by(
                l,
                "an operator cannot have lifetime parameters: it is stored in a net and lives as long as it (`'static`)",
            ),
            GenericParam::Const(c) => cx.error_spanned_by(
                c,
                "an operator cannot have const parameters: the catalogue must be able to build it from `.cm` params; use a `#[param]` instead",
            ),
        }
    }
}

/// Port names are unique across inputs and outputs: each names a handle (`Op::in_data`) and a
/// field of the operator's `Ports`. A variadic group claims every name it may take.
fn check_port_names_unique(cx: &Ctxt, op: &Operator) {
    let mut seen: Vec<(String, String)> = Vec::new(); // (name, who declared it)
    for port in op.ports() {
        let dir = if port.dir == Dir::In {
            "input"
        } else {
            "output"
        };
        let who = match (&port.variadic, port.name == port.field) {
            (Some(_), _) => format!("the variadic {dir} group `{}`, …", port.name),
            (None, true) => format!("{dir} `{}`", port.name),
            (None, false) => format!("{dir} `{}` (field `{}`)", port.name, port.field),
        };
        for (_, name) in port.names(0) {
            let n = name.to_string();
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == n) {
                cx.error_spanned_by(
                    &port.name,
                    format!(
                        "duplicate port name `{n}`: it is already declared by {first}; port names are unique across inputs and outputs"
                    ),
                );
                break;
            }
            seen.push((n, who.clone()));
        }
    }
}

/// Param names (their `.cm` keys) are unique.
fn check_param_names_unique(cx: &Ctxt, op: &Operator) {
    for (i, p) in op.params.iter().enumerate() {
        if op.params[..i].iter().any(|q| q.name == p.name) {
            cx.error_at(
                p.name_span,
                format!("duplicate param name `{}`: `.cm` params are unique", p.name),
            );
        }
    }
}

/// A variadic group's size is a `#[param]` with a default (the catalogue shows the operator
/// with its default ports); the group is the last port of its direction (the indices of later
/// ports would depend on the size) and the only group of it.
fn check_variadic_groups(cx: &Ctxt, op: &Operator) {
    for (dir, ports) in [(Dir::In, &op.inputs), (Dir::Out, &op.outputs)] {
        let word = if dir == Dir::In { "input" } else { "output" };
        for (i, port) in ports.iter().enumerate() {
            let Some(v) = &port.variadic else { continue };
            match op.params.iter().find(|p| p.field == v.param) {
                None => {
                    let names: Vec<String> = op.params.iter().map(|p| p.field.to_string()).collect();
                    let hint = suggest::did_you_mean(&v.param.to_string(), names.iter().map(String::as_str))
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    cx.error_spanned_by(
                        &v.param,
                        format!(
                            "`variadic = {}` names no `#[param]` field; {hint}declare the size as a param: `#[param(default = 2)] {}: usize`",
                            v.param, v.param
                        ),
                    );
                }
                Some(p) if p.default.is_none() => cx.error_spanned_by(
                    &v.param,
                    format!(
                        "param `{}` sizes a variadic group, so it needs a default (the catalogue lists the operator's default ports): `#[param(default = 2)]`",
                        p.name
                    ),
                ),
                Some(_) => {}
            }
            if i + 1 != ports.len() {
                cx.error_spanned_by(
                    &port.name,
                    format!(
                        "a variadic group must be the last {word}: the ports after it would move with its size"
                    ),
                );
            }
        }
    }
}

/// `Any` means two things (`docs/semantics.md` §1): on a behavioral operator's input, "accepts
/// every type"; on a structural operator, a type variable. A structural operator names its
/// variables with type parameters (`Fork<T>`); only its variadic groups use `Any`, one variable
/// per position (the position's letter: `in_c` and `out_c` share one). A behavioral output emits
/// one known type.
fn check_any_ports(cx: &Ctxt, op: &Operator) {
    let structural = op.is_structural();
    for port in op.ports() {
        if port.kind != PortKind::Any {
            continue;
        }
        match (&port.variadic, structural, port.dir) {
            (None, true, _) => cx.error_spanned_by(
                &port.ty,
                format!(
                    "a structural operator's ports are type variables, not `Any`: give `{}` a type parameter (`pub struct {}<T: PortType = Any>`) and declare the port `{}<T>`",
                    op.ident,
                    op.ident,
                    if port.dir == Dir::In { "In" } else { "Out" }
                ),
            ),
            (Some(v), true, _) if v.start < op.type_params.len() => cx.error_spanned_by(
                &port.name,
                format!(
                    "the `Any` ports of a variadic group take the type variable of their letter, and `{}`'s letter is that of a type parameter: start the group after the typed ports (at `{}_{}`)",
                    port.name,
                    v.prefix,
                    (b'a' + op.type_params.len().min(25) as u8) as char
                ),
            ),
            (_, false, Dir::Out) => cx.error_spanned_by(
                &port.ty,
                "an output emits values of one data type; `Any` is only for inputs (that accept every type)",
            ),
            _ => {}
        }
    }
}

/// Every port an emission set names is an output.
fn check_emits(cx: &Ctxt, op: &Operator) {
    let Some(sets) = &op.args.emits else { return };
    let outputs: Vec<String> = op
        .outputs
        .iter()
        .flat_map(|p| p.names(0))
        .map(|(_, n)| n.to_string())
        .collect();
    for name in sets.iter().flatten() {
        let n = name.to_string();
        if !outputs.contains(&n) {
            let hint = suggest::did_you_mean(&n, outputs.iter().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            let inputs: Vec<String> = op.inputs.iter().map(|p| p.name.to_string()).collect();
            let why = if inputs.contains(&n) {
                " (it is an input; emission sets list outputs)".to_owned()
            } else {
                hint
            };
            cx.error_spanned_by(
                name,
                format!("`emits` names `{n}`, which is not an output{why}"),
            );
        }
    }
}

/// A param default is a literal the catalogue can show as JSON (number, string, bool, a list of
/// them, `None`), and of the kind the field's type reads.
fn check_param_defaults(cx: &Ctxt, op: &Operator) {
    for p in &op.params {
        let Some(d) = &p.default else { continue };
        if default_json(d).is_none() {
            cx.error_spanned_by(
                d,
                "a param default is a literal the catalogue can show: a number, a string, `true`/`false`, a list of them, or `None`",
            );
            continue;
        }
        if let Some(expected) = literal_kind_of(&p.ty) {
            let got = literal_kind(d);
            if got.is_some_and(|g| g != expected) {
                cx.error_spanned_by(
                    d,
                    format!(
                        "param `{}` is a `{}`, so its default is {}",
                        p.name,
                        {
                            let ty = &p.ty;
                            quote::quote!(#ty).to_string().replace(' ', "")
                        },
                        match expected {
                            Kind::Int => "an integer: `default = 2`",
                            Kind::Float => "a number: `default = 0.5`",
                            Kind::Str => "a string: `default = \"…\"`",
                            Kind::Bool => "`true` or `false`",
                        }
                    ),
                );
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Str,
    Bool,
}

fn literal_kind_of(ty: &Type) -> Option<Kind> {
    let Type::Path(p) = ty else { return None };
    let id = p.path.get_ident()?.to_string();
    match id.as_str() {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            Some(Kind::Int)
        }
        "f32" | "f64" => Some(Kind::Float),
        "String" => Some(Kind::Str),
        "bool" => Some(Kind::Bool),
        _ => None,
    }
}

fn literal_kind(e: &Expr) -> Option<Kind> {
    match e {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Int(_) => Some(Kind::Int),
            Lit::Float(_) => Some(Kind::Float),
            Lit::Str(_) => Some(Kind::Str),
            Lit::Bool(_) => Some(Kind::Bool),
            _ => None,
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => literal_kind(expr),
        _ => None,
    }
}

/// The JSON text of a param default, or `None` if it is not a literal.
pub fn default_json(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Int(i) => Some(i.base10_digits().to_owned()),
            Lit::Float(f) => {
                let d = f.base10_digits();
                Some(if d.contains(['.', 'e', 'E']) {
                    d.to_owned()
                } else {
                    format!("{d}.0")
                })
            }
            Lit::Str(s) => Some(json_string(&s.value())),
            Lit::Bool(b) => Some(b.value.to_string()),
            _ => None,
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(_) | Lit::Float(_),
                ..
            }) => default_json(expr).map(|d| format!("-{d}")),
            _ => None,
        },
        Expr::Array(ExprArray { elems, .. }) => {
            let items: Option<Vec<String>> = elems.iter().map(default_json).collect();
            Some(format!("[{}]", items?.join(",")))
        }
        Expr::Path(p) if p.path.is_ident("None") => Some("null".to_owned()),
        Expr::Group(g) => default_json(&g.expr),
        Expr::Paren(p) => default_json(&p.expr),
        _ => None,
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn snake_case(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}
