//! The model of a `#[tool]` function: its name, doc, whether it is async, its context and
//! arguments parameters, and the `Ok` type of its result.

use syn::{FnArg, GenericArgument, ItemFn, PathArguments, ReturnType, Type};

use super::attr::ToolArgs;
use crate::operator::ast::unraw;
use crate::operator::attr::doc_lines;

/// A `#[tool]` declaration, as far as it could be read.
pub struct Tool<'a> {
    /// The function, as written.
    pub item: &'a ItemFn,
    /// `#[tool(...)]`.
    pub args: ToolArgs,
    /// The tool's name: `name = "…"`, else the function's.
    pub name: String,
    /// The doc comment, lines joined with `\n`.
    pub doc: String,
    /// `async fn`.
    pub is_async: bool,
    /// The context parameter's type (`&ToolContext`), when there are two parameters.
    pub context: Option<&'a Type>,
    /// The arguments parameter's type.
    pub args_ty: Option<&'a Type>,
    /// The `T` of `-> Result<T, E>`.
    pub ok_ty: Option<&'a Type>,
}

impl<'a> Tool<'a> {
    /// Reads the declaration; what cannot be read is left `None` for `check` to report.
    pub fn from_item(item: &'a ItemFn, args: ToolArgs) -> Self {
        let name = args
            .name
            .as_ref()
            .map_or_else(|| unraw(&item.sig.ident), syn::LitStr::value);
        let doc = doc_lines(&item.attrs).join("\n").trim().to_owned();
        let typed: Vec<&Type> = item
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                FnArg::Typed(t) => Some(&*t.ty),
                FnArg::Receiver(_) => None,
            })
            .collect();
        let (context, args_ty) = match typed.as_slice() {
            [a] => (None, Some(*a)),
            [c, a] => (Some(*c), Some(*a)),
            _ => (None, None),
        };
        Tool {
            item,
            name,
            doc,
            is_async: item.sig.asyncness.is_some(),
            context,
            args_ty,
            ok_ty: ok_type(&item.sig.output),
            args,
        }
    }
}

/// The `T` of a return type written `Result<T, …>` (any path ending in `Result`).
pub fn ok_type(ret: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = ret else {
        return None;
    };
    let Type::Path(p) = &**ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}
