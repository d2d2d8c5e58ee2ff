//! Generates the block that builds the net, with the compile-time checks.

use std::collections::BTreeMap;

use proc_macro2::{Delimiter, Group, Punct, Spacing, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::ast::{Connection, Endpoint, Instance};
use super::check::{Checked, Mode};

/// The expansion: a block evaluating to a `Net`.
pub fn expand(c: &Checked<'_>) -> TokenStream {
    let lets = c.instances.iter().map(|i| instance_let(i));
    let ports = c.instances.iter().map(|i| {
        let var = ports_var(&i.name);
        let name = &i.name;
        quote_spanned! {i.name.span()=>
            let #var = ::cameleon::__private::ports_of(&#name);
        }
    });
    let markers = endpoint_markers(c);
    let checks = c
        .connections
        .iter()
        .map(|(conn, _, _)| connection_check(conn));
    let wiring = c
        .instances
        .iter()
        .enumerate()
        .map(|(n, i)| wiring_check(c, n, i));

    let b = builder_var();
    let name = c.name.map_or_else(|| quote!(""), |e| quote!(#e));
    let config = config(c);
    let adds = c.instances.iter().map(|i| instance_add(i));
    let connects = c.connections.iter().map(|(conn, _, _)| {
        let (from, to) = (conn.from.text(), conn.to.text());
        quote!(#b.connect(#from, #to);)
    });
    quote! {{
        #(#lets)*
        {
            #(#ports)*
            #markers
            #(#checks)*
            #(#wiring)*
        }
        let mut #b = ::cameleon::__private::Net::builder(#name);
        #config
        #(#adds)*
        #(#connects)*
        ::cameleon::__private::build_net(#b)
    }}
}

/// The `NetBuilder` variable: hygienic, so no user expression can name it.
fn builder_var() -> Ident {
    Ident::new("__cameleon_b", Span::mixed_site())
}

/// `let name = EXPR;`, keeping the user's name so `EXPR`s and errors refer to it.
fn instance_let(i: &Instance) -> TokenStream {
    let name = &i.name;
    let expr = &i.expr;
    match &i.ty {
        Some(ty) => quote!(let #name: #ty = #expr;),
        None => quote!(let #name = #expr;),
    }
}

/// The variable holding an instance's port handles, located at the instance's name. It keeps
/// the user's span (not a mixed-site one) so rustc can join it with the port's span into one
/// `instance.port` range for errors; the `__cameleon_` prefix keeps it clear of user names.
fn ports_var(name: &Ident) -> Ident {
    Ident::new(
        &format!("__cameleon_ports_{}", name.unraw_str()),
        name.span(),
    )
}

/// The marker type naming an endpoint in messages: `loader·out_data`.
fn marker(e: &Endpoint) -> Ident {
    Ident::new(
        &format!("{}·{}", e.instance_name(), e.port_name()),
        e.port.span(),
    )
}

/// One unit struct per distinct endpoint, named after it, so trait errors can say which ports
/// a connection joins.
fn endpoint_markers(c: &Checked<'_>) -> TokenStream {
    let mut seen = BTreeMap::new();
    for (conn, _, _) in &c.connections {
        for e in [&conn.from, &conn.to] {
            seen.entry(e.text()).or_insert_with(|| marker(e));
        }
    }
    let markers = seen.values();
    let items = markers.map(|m| {
        quote_spanned! {m.span()=>
            #[allow(non_camel_case_types)]
            struct #m;
        }
    });
    quote!(#(#items)*)
}

/// `check::<marker>(handle)` located on the endpoint `instance.port`: the path at the
/// instance, the parentheses at the port, the handle from one to the other.
fn endpoint_check(check: TokenStream, e: &Endpoint) -> TokenStream {
    let m = marker(e);
    let path = respan(
        quote!(::cameleon::__private::#check::<#m>),
        e.instance.span(),
    );
    let mut args = Group::new(Delimiter::Parenthesis, handle(e));
    args.set_span(e.port.span());
    quote!(#path #args)
}

/// `Endpoint(handle, marker)`, located on the endpoint `instance.port`.
fn endpoint_value(e: &Endpoint) -> TokenStream {
    let path = respan(quote!(::cameleon::__private::Endpoint), e.instance.span());
    let h = handle(e);
    let m = marker(e);
    let mut args = Group::new(Delimiter::Parenthesis, quote!(#h, #m));
    args.set_span(e.port.span());
    quote!(#path #args)
}

/// `__cameleon_ports_instance.port`, located on `instance.port`.
fn handle(e: &Endpoint) -> TokenStream {
    let var = ports_var(&e.instance);
    let port = &e.port;
    quote_spanned!(e.port.span()=> #var.#port)
}

/// The checks of one connection `a.out -> b.in`: `a.out` is an output and `b.in` an input (each
/// reported at its endpoint), and the types agree (reported at the `->`).
fn connection_check(conn: &Connection) -> TokenStream {
    let source = endpoint_check(quote!(check_source), &conn.from);
    let target = endpoint_check(quote!(check_target), &conn.to);
    let from = endpoint_value(&conn.from);
    let to = endpoint_value(&conn.to);
    let mut gt1 = Punct::new('>', Spacing::Joint);
    gt1.set_span(conn.arrow.spans[0]);
    let mut gt2 = Punct::new('>', Spacing::Alone);
    gt2.set_span(conn.arrow.spans[1]);
    quote! {
        #source;
        #target;
        #from #gt1 #gt2 #to;
    }
}

fn respan(ts: TokenStream, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            tt.set_span(span);
            tt
        })
        .collect()
}

/// The `const` check of an instance's wiring: required inputs connected, a source feeding
/// something. Located at the instance's name.
fn wiring_check(c: &Checked<'_>, n: usize, i: &Instance) -> TokenStream {
    let mut inputs: Vec<String> = c
        .connections
        .iter()
        .filter(|(_, _, to)| *to == n)
        .map(|(conn, _, _)| conn.to.port_name())
        .collect();
    inputs.dedup();
    let feeds = c.connections.iter().any(|(_, from, _)| *from == n);
    let name = &i.name;
    let name_str = i.name_str();
    let f = format_ident!("__cameleon_wiring_{}", name.unraw_str(), span = name.span());
    quote_spanned! {name.span()=>
        #[allow(non_snake_case)]
        fn #f<O: ::cameleon::__private::HasPorts>(_: &O) {
            const {
                if let ::core::option::Option::Some(e) =
                    &::cameleon::__private::check_wiring::<O>(#name_str, &[#(#inputs),*], #feeds)
                {
                    ::core::panic!("{}", e.as_str())
                }
            }
        }
        #f(&#name);
    }
}

/// The `config` settings, if any: `mode`, `max_loop_iterations` (its expression located where
/// the user wrote it, so a type error points there).
fn config(c: &Checked<'_>) -> TokenStream {
    let cfg = Ident::new("__cameleon_cfg", Span::mixed_site());
    let mode = c.mode.map(|m| {
        let v = match m {
            Mode::Sequential => quote!(Sequential),
            Mode::Parallel => quote!(Parallel),
        };
        quote!(#cfg.mode = ::cameleon::__private::Mode::#v;)
    });
    let max = c.max_loop_iterations.map(|e| {
        let value = quote_spanned!(e.span()=> #e);
        quote!(#cfg.max_loop_iterations = #value;)
    });
    if mode.is_none() && max.is_none() {
        return TokenStream::new();
    }
    let b = builder_var();
    quote! {
        let mut #cfg = ::cameleon::__private::NetConfig::default();
        #mode
        #max
        #b.config(#cfg);
    }
}

/// `add(&mut b, "name", name).at(x, y).label(…).instance(…);`, the call located at the
/// instance's name.
fn instance_add(i: &Instance) -> TokenStream {
    let name = &i.name;
    let name_str = i.name_str();
    let at = i
        .pos
        .as_ref()
        .map(|(x, y)| quote!(.at((#x) as f64, (#y) as f64)));
    let label = i.label.as_ref().map(|l| quote!(.label(#l)));
    let number = i.number.as_ref().map(|n| quote!(.instance(#n)));
    let b = builder_var();
    let add = quote_spanned!(name.span()=>
        ::cameleon::__private::add(&mut #b, #name_str, #name)
    );
    quote! {
        #add #at #label #number;
    }
}

trait UnrawStr {
    fn unraw_str(&self) -> String;
}

impl UnrawStr for Ident {
    fn unraw_str(&self) -> String {
        syn::ext::IdentExt::unraw(self).to_string()
    }
}
