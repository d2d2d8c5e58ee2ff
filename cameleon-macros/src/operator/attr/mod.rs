//! Parsing of `#[operator(...)]` and of the field attributes. Problems are recorded in the
//! [`Ctxt`](crate::ctxt::Ctxt) and parsing goes on, so every mistake is reported at once; a key
//! given twice is reported at its second occurrence.
//!
//! [`args`] reads `#[operator(...)]`, [`field`] the field attributes (`#[input]`, `#[param]`…),
//! both with the key and value readers of [`keys`].

mod args;
mod field;
pub mod keys;

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

pub use args::{Exec, Family, OperatorArgs, Policy};
pub use field::{FieldAttrs, PortArgs, Role};

/// The lines of the doc comment among `attrs`, each without its first space.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| {
            s.split('\n')
                .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}
