//! The syntax of `pipeline!`, parsed statement by statement so that one malformed statement does
//! not hide the mistakes in the others.
//!
//! ```text
//! pipeline! {
//!     name = "rag";                                   // setting: name, mode, max_loop_iterations
//!     /// Reads the text.                             // doc comments are allowed, and ignored
//!     #[label = "Loader"] #[instance = 1]             // optional label and `.cm` instance number
//!     let loader = TextFile::new("doc.txt") @ (90, 150);  // instance, optional layout position
//!     let sink: Sink = Sink::new();                   // optional type
//!     loader.out_data -> sink.in_data;                // connection
//! }
//! ```

use proc_macro2::{TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Token, Type};

use crate::ctxt::Ctxt;

/// A parsed `pipeline!` body: every statement that parsed, in order.
pub struct Pipeline {
    pub settings: Vec<Setting>,
    pub instances: Vec<Instance>,
    pub connections: Vec<Connection>,
}

/// `key = value;`
pub struct Setting {
    pub key: Ident,
    pub value: Expr,
}

/// `#[label = "…"] let name: Type = EXPR @ (x, y);`
pub struct Instance {
    pub name: Ident,
    pub ty: Option<Type>,
    pub expr: Expr,
    pub pos: Option<(Expr, Expr)>,
    pub label: Option<Expr>,
    pub number: Option<Expr>,
}

/// `a.port -> b.port;`
pub struct Connection {
    pub from: Endpoint,
    pub arrow: Token![->],
    pub to: Endpoint,
}

/// `instance.port`
pub struct Endpoint {
    pub instance: Ident,
    pub port: Ident,
}

impl Endpoint {
    /// The instance's name as written in the net (a raw identifier loses its `r#`).
    pub fn instance_name(&self) -> String {
        self.instance.unraw().to_string()
    }

    /// The port's name.
    pub fn port_name(&self) -> String {
        self.port.unraw().to_string()
    }

    /// `instance.port`.
    pub fn text(&self) -> String {
        format!("{}.{}", self.instance_name(), self.port_name())
    }
}

impl Instance {
    /// The instance's name as written in the net.
    pub fn name_str(&self) -> String {
        self.name.unraw().to_string()
    }
}

enum Statement {
    Setting(Setting),
    Instance(Box<Instance>),
    Connection(Connection),
}

/// Parses the macro's input, recording every malformed statement in `cx`.
pub fn parse(input: TokenStream, cx: &Ctxt) -> Pipeline {
    let mut p = Pipeline {
        settings: Vec::new(),
        instances: Vec::new(),
        connections: Vec::new(),
    };
    for stmt in split_statements(input) {
        match parse_statement.parse2(stmt) {
            Ok(Statement::Setting(s)) => p.settings.push(s),
            Ok(Statement::Instance(i)) => p.instances.push(*i),
            Ok(Statement::Connection(c)) => p.connections.push(c),
            Err(e) => cx.syn_error(e),
        }
    }
    p
}

/// Splits at top-level `;` (a `;` inside brackets belongs to a token group, not to us). A last
/// statement without its `;` is accepted.
fn split_statements(input: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for tt in input {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ';' => {
                out.push(cur.drain(..).collect());
            }
            _ => cur.push(tt),
        }
    }
    if !cur.is_empty() {
        out.push(cur.into_iter().collect());
    }
    out
}

fn parse_statement(input: ParseStream) -> syn::Result<Statement> {
    let attrs = Attribute::parse_outer(input)?;
    let stmt = if input.peek(Token![let]) {
        Statement::Instance(Box::new(parse_instance(input, attrs)?))
    } else if input.peek(Ident::peek_any) && input.peek2(Token![=]) {
        if let Some(a) = attrs.iter().find(|a| !is_doc(a)) {
            return Err(syn::Error::new_spanned(
                a,
                "attributes go on `let` statements (operator instances), not on settings",
            ));
        }
        let key = Ident::parse_any(input)?;
        input.parse::<Token![=]>()?;
        Statement::Setting(Setting {
            key,
            value: input.parse()?,
        })
    } else if input.peek(Ident::peek_any) && input.peek2(Token![.]) {
        if let Some(a) = attrs.iter().find(|a| !is_doc(a)) {
            return Err(syn::Error::new_spanned(
                a,
                "attributes go on `let` statements (operator instances), not on connections",
            ));
        }
        let from = parse_endpoint(input)?;
        let arrow = input.parse::<Token![->]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `->`: a connection is written `source.output -> target.input`",
            )
        })?;
        let to = parse_endpoint(input)?;
        Statement::Connection(Connection { from, arrow, to })
    } else {
        return Err(input.error(
            "expected an operator instance (`let name = Operator { … };`), a connection \
             (`source.output -> target.input;`) or a setting (`name = \"…\";`)",
        ));
    };
    if !input.is_empty() {
        return Err(input.error("expected `;` to end the statement"));
    }
    Ok(stmt)
}

fn parse_endpoint(input: ParseStream) -> syn::Result<Endpoint> {
    let instance = Ident::parse_any(input)
        .map_err(|e| syn::Error::new(e.span(), "expected an instance name"))?;
    input.parse::<Token![.]>().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `.`: a connection's end is written `instance.port`",
        )
    })?;
    let port = Ident::parse_any(input).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected a port name: a connection's end is written `instance.port`",
        )
    })?;
    Ok(Endpoint { instance, port })
}

fn parse_instance(input: ParseStream, attrs: Vec<Attribute>) -> syn::Result<Instance> {
    input.parse::<Token![let]>()?;
    let name: Ident = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected the instance's name: `let name = Operator { … };`",
        )
    })?;
    let ty = if input.peek(Token![:]) {
        input.parse::<Token![:]>()?;
        Some(input.parse::<Type>()?)
    } else {
        None
    };
    input.parse::<Token![=]>()?;
    let expr: Expr = input.parse()?;
    let pos = if input.peek(Token![@]) {
        let at = input.parse::<Token![@]>()?;
        let content;
        syn::parenthesized!(content in input);
        let x: Expr = content.parse()?;
        content.parse::<Token![,]>()?;
        let y: Expr = content.parse()?;
        if !content.is_empty() {
            content.parse::<Option<Token![,]>>()?;
        }
        if !content.is_empty() {
            return Err(syn::Error::new(
                at.span(),
                "a layout position is two numbers: `@ (x, y)`",
            ));
        }
        Some((x, y))
    } else {
        None
    };
    let mut inst = Instance {
        name,
        ty,
        expr,
        pos,
        label: None,
        number: None,
    };
    let mut err: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut err {
        Some(prev) => prev.combine(e),
        None => err = Some(e),
    };
    for a in attrs {
        if is_doc(&a) {
            continue;
        }
        let key = if a.path().is_ident("label") {
            Key::Label
        } else if a.path().is_ident("instance") {
            Key::Number
        } else {
            push(syn::Error::new_spanned(
                a.path(),
                "unknown attribute: an instance takes `#[label = \"…\"]` and `#[instance = N]`",
            ));
            continue;
        };
        let value = match &a.meta {
            syn::Meta::NameValue(nv) => nv.value.clone(),
            _ => {
                push(syn::Error::new_spanned(
                    &a,
                    "write this attribute `#[label = \"…\"]` or `#[instance = N]`",
                ));
                continue;
            }
        };
        let slot = match key {
            Key::Label => &mut inst.label,
            Key::Number => &mut inst.number,
        };
        if slot.is_some() {
            push(syn::Error::new_spanned(
                a.path(),
                "this attribute is already given for this instance",
            ));
        } else {
            *slot = Some(value);
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(inst),
    }
}

enum Key {
    Label,
    Number,
}

fn is_doc(a: &Attribute) -> bool {
    a.path().is_ident("doc")
}
