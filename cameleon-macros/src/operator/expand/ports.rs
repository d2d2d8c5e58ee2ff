//! The port handles of an operator type: a constant per port (`Chunker::in_data`), the
//! `…Ports` struct with one field per port, and its `HasPorts` impl, which `pipeline!` connects
//! through. The fallback emits the handles too, so the user's `run` still resolves them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::decl::policy_tokens;
use super::{bounded_generics, private};
use crate::operator::ast::{Dir, Operator, Port, PortKind, unraw};

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

/// The port handles, as constants of the operator type.
pub fn port_handles(op: &Operator) -> TokenStream {
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

/// The `…Ports` struct, one field per port handle, and `HasPorts`.
pub fn ports_struct(op: &Operator) -> TokenStream {
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
