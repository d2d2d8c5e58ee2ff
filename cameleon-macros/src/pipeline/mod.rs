//! `pipeline!`: parse (`ast`), check what can be checked without types (`check`), and generate
//! the block that builds the net with rustc-checked connections (`expand`).

mod ast;
mod check;
mod expand;

use proc_macro2::TokenStream;

pub fn expand(input: TokenStream) -> TokenStream {
    let cx = crate::ctxt::Ctxt::new();
    let parsed = ast::parse(input, &cx);
    let checked = check::check(&parsed, &cx);
    let net = expand::expand(&checked);
    let errors = cx.check().err().map(syn::Error::into_compile_error);
    // The errors and the expansion together: rustc then also type-checks every connection that
    // could be resolved, so the user sees all mistakes at once.
    quote::quote! {{
        #errors
        #net
    }}
}
