//! The model of an `#[operator]` declaration, built from the struct and its attributes.

use proc_macro2::{Span, TokenStream};
use syn::{
    Attribute, Data, DeriveInput, Expr, Field, Fields, GenericArgument, GenericParam, Generics,
    Ident, PathArguments, Type, Visibility,
};

use super::attr::{self, FieldAttrs, OperatorArgs, PortArgs, Role};
use crate::ctxt::Ctxt;

/// A whole declaration.
pub struct Operator {
    /// The struct's own attributes (derives, docs…), ours removed.
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub ident: Ident,
    pub generics: Generics,
    pub args: OperatorArgs,
    /// The struct's doc comment: the catalogue description.
    pub doc: String,
    /// The struct's type parameters, in order (a port typed by one is generic).
    pub type_params: Vec<Ident>,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    pub params: Vec<Param>,
    /// `#[context]` fields.
    pub context: Vec<Ident>,
    /// Internal state: fields without a role attribute (or with `#[state]`).
    pub state: Vec<(Ident, Type)>,
    /// The fields that stay in the struct (params, context, state), ours attributes removed.
    pub kept_fields: Vec<Field>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

/// What a port's data type is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// The struct's type parameter number `n`.
    Generic(usize),
    /// The literal type `Any`.
    Any,
    /// Any other type.
    Concrete,
}

/// An `#[input]` or `#[output]` field.
pub struct Port {
    pub dir: Dir,
    /// The port's name (the field's, unless `name = "…"`).
    pub name: Ident,
    /// The field declaring it.
    pub field: Ident,
    /// The data type `T` of `In<T>` / `Out<T>`.
    pub ty: Type,
    /// The field's type as written (`In<T>`).
    pub field_ty: Type,
    pub kind: PortKind,
    pub optional: bool,
    pub variadic: Option<Variadic>,
    pub doc: Vec<String>,
}

/// A variadic group: ports `prefix_a`, `prefix_b`, …, as many as param `param` says, starting
/// at letter `start` (the declared field is the first of the group).
pub struct Variadic {
    pub param: Ident,
    pub prefix: String,
    pub start: usize,
}

/// A `#[param]` field.
pub struct Param {
    pub field: Ident,
    /// The name in `.cm` `params:`.
    pub name: String,
    pub name_span: Span,
    pub ty: Type,
    pub default: Option<Expr>,
    pub doc: String,
}

impl Operator {
    /// Builds the model; returns `None` when the item is not a struct with named fields (the
    /// error is recorded).
    pub fn from_input(cx: &Ctxt, args: TokenStream, input: &DeriveInput) -> Option<Operator> {
        let args = OperatorArgs::parse(cx, args);
        let fields = match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(n) => n.named.iter().collect::<Vec<_>>(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(u) => {
                    cx.error_spanned_by(
                        u,
                        "`#[operator]` needs named fields: each port and param is named after its field (`#[input] text: In<DataString>`)",
                    );
                    return None;
                }
            },
            Data::Enum(e) => {
                cx.error_spanned_by(
                    e.enum_token,
                    "`#[operator]` goes on a struct, not an enum: its fields declare the operator's ports and params (`pub struct Chunker { #[input] text: In<DataString>, … }`)",
                );
                return None;
            }
            Data::Union(u) => {
                cx.error_spanned_by(
                    u.union_token,
                    "`#[operator]` goes on a struct, not a union: its fields declare the operator's ports and params (`pub struct Chunker { #[input] text: In<DataString>, … }`)",
                );
                return None;
            }
        };

        let type_params: Vec<Ident> = input
            .generics
            .params
            .iter()
            .filter_map(|p| match p {
                GenericParam::Type(t) => Some(t.ident.clone()),
                _ => None,
            })
            .collect();

        let mut op = Operator {
            attrs: input
                .attrs
                .iter()
                .filter(|a| !a.path().is_ident("operator"))
                .cloned()
                .collect(),
            vis: input.vis.clone(),
            ident: input.ident.clone(),
            generics: input.generics.clone(),
            args,
            doc: attr::doc_lines(&input.attrs).join("\n").trim().to_owned(),
            type_params,
            inputs: Vec::new(),
            outputs: Vec::new(),
            params: Vec::new(),
            context: Vec::new(),
            state: Vec::new(),
            kept_fields: Vec::new(),
        };

        for field in fields {
            let FieldAttrs {
                role,
                role_span,
                doc,
                kept,
            } = FieldAttrs::parse(cx, field);
            let Some(ident) = field.ident.clone() else {
                continue;
            };
            match role {
                Role::Input(p) => {
                    if let Some(port) = op.port(cx, Dir::In, field, p, role_span, &doc) {
                        op.inputs.push(port);
                    }
                }
                Role::Output(p) => {
                    if let Some(port) = op.port(cx, Dir::Out, field, p, role_span, &doc) {
                        op.outputs.push(port);
                    }
                }
                Role::Param(p) => {
                    let (name, name_span) = match &p.name {
                        Some(n) => (n.value(), n.span()),
                        None => (unraw(&ident), ident.span()),
                    };
                    op.params.push(Param {
                        field: ident.clone(),
                        name,
                        name_span,
                        ty: field.ty.clone(),
                        default: p.default,
                        doc: doc.join(" ").trim().to_owned(),
                    });
                    op.keep(field, kept);
                }
                Role::Context => {
                    op.context.push(ident.clone());
                    op.keep(field, kept);
                }
                Role::State => {
                    op.state.push((ident.clone(), field.ty.clone()));
                    op.keep(field, kept);
                }
            }
        }
        Some(op)
    }

    fn keep(&mut self, field: &Field, attrs: Vec<Attribute>) {
        let mut f = field.clone();
        f.attrs = attrs;
        self.kept_fields.push(f);
    }

    fn port(
        &self,
        cx: &Ctxt,
        dir: Dir,
        field: &Field,
        args: PortArgs,
        role_span: Span,
        doc: &[String],
    ) -> Option<Port> {
        let ident = field.ident.as_ref()?;
        let (wrapper, attr) = match dir {
            Dir::In => ("In", "input"),
            Dir::Out => ("Out", "output"),
        };
        let Some(ty) = marker_arg(&field.ty, wrapper) else {
            let other = if wrapper == "In" { "Out" } else { "In" };
            let msg = if marker_arg(&field.ty, other).is_some() {
                format!(
                    "an `#[{attr}]` port is declared `{wrapper}<T>`, not `{other}<T>`: write `#[{attr}] {}: {wrapper}<…>`",
                    unraw(ident)
                )
            } else {
                format!(
                    "an `#[{attr}]` port is declared `{wrapper}<T>` with `T` a data type, e.g. `#[{attr}] {}: {wrapper}<DataString>`",
                    unraw(ident)
                )
            };
            cx.error_spanned_by(&field.ty, msg);
            return None;
        };
        let name = match &args.name {
            Some(n) => match syn::parse_str::<Ident>(&n.value()) {
                Ok(mut id) => {
                    id.set_span(n.span());
                    id
                }
                Err(_) => {
                    cx.error_spanned_by(
                        n,
                        format!(
                            "port name `{}` is not an identifier: port names are used as handles (`Op::{}`), so they are snake_case words such as `in_data`",
                            n.value(),
                            n.value()
                        ),
                    );
                    return None;
                }
            },
            // A raw field (`r#type`) keeps its raw handle; the port is named `type`.
            None => ident.clone(),
        };
        let variadic = args.variadic.and_then(|param| {
            let n = unraw(&name);
            let letter = n
                .rsplit_once('_')
                .filter(|(p, l)| !p.is_empty() && l.len() == 1 && l.as_bytes()[0].is_ascii_lowercase());
            match letter {
                Some((prefix, l)) => Some(Variadic {
                    param,
                    prefix: prefix.to_owned(),
                    start: usize::from(l.as_bytes()[0] - b'a'),
                }),
                None => {
                    cx.error_spanned_by(
                        &name,
                        format!(
                            "a variadic port group is named after its first port, which ends in a letter: `{n}_a` gives `{n}_a`, `{n}_b`, …"
                        ),
                    );
                    None
                }
            }
        });
        if dir == Dir::Out && args.optional {
            cx.error_at(role_span, "only inputs can be `optional`");
        }
        Some(Port {
            dir,
            kind: self.kind_of(&ty),
            name,
            ty,
            field_ty: field.ty.clone(),
            field: ident.clone(),
            optional: args.optional,
            variadic,
            doc: doc.to_vec(),
        })
    }

    fn kind_of(&self, ty: &Type) -> PortKind {
        let Type::Path(p) = ty else {
            return PortKind::Concrete;
        };
        if p.qself.is_some() {
            return PortKind::Concrete;
        }
        if let Some(id) = p.path.get_ident()
            && let Some(i) = self.type_params.iter().position(|t| t == id)
        {
            return PortKind::Generic(i);
        }
        match p.path.segments.last() {
            Some(last) if last.ident == "Any" && last.arguments.is_none() => PortKind::Any,
            _ => PortKind::Concrete,
        }
    }

    /// Every port, inputs then outputs.
    pub fn ports(&self) -> impl Iterator<Item = &Port> {
        self.inputs.iter().chain(&self.outputs)
    }

    pub fn is_structural(&self) -> bool {
        matches!(self.args.family, Some((attr::Family::Structural, _)))
    }
}

impl Port {
    /// The handles this port declares: itself, or every port its variadic group may have.
    /// Each is `(index among the ports of its direction when the group is full, name)`.
    pub fn names(&self, first_index: usize) -> Vec<(usize, Ident)> {
        match &self.variadic {
            None => vec![(first_index, self.name.clone())],
            Some(v) => (v.start..26)
                .map(|i| {
                    let name = format!("{}_{}", v.prefix, (b'a' + i as u8) as char);
                    (
                        first_index + i - v.start,
                        Ident::new(&name, self.name.span()),
                    )
                })
                .collect(),
        }
    }
}

/// `T` in `In<T>` (when `wrapper` is `In`), by the last path segment.
fn marker_arg(ty: &Type, wrapper: &str) -> Option<Type> {
    let Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut it = args.args.iter();
    match (it.next(), it.next()) {
        (Some(GenericArgument::Type(t)), None) => Some(t.clone()),
        _ => None,
    }
}

/// An identifier's text without `r#`.
pub fn unraw(id: &Ident) -> String {
    let s = id.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}
