//! What can be drawn of a `.cm` file that is not a valid net yet (`cameleon serve` shows it
//! while the text is being edited).

use crate::catalogue::{BuildContext, Catalogue};
use crate::cm::CmFile;
use crate::operator::{PortSpec, TypeRef};
use crate::policy::Family;
use crate::types::{Any, PortType as _, TypeInfo};

use super::{Diagram, DiagramConn, DiagramOp};

impl Diagram {
    /// What can be drawn of `file`, a `.cm` file read but not (or not yet) a valid net: every
    /// operator it declares — with its type's ports when `catalogue` knows the type, built from
    /// its params when they are valid (an n-ary operator then has its `arity` ports) — and
    /// every connection between ports that exist. An unknown type is drawn as a box without
    /// ports, labelled so.
    ///
    /// ```
    /// use cameleon::catalogue::Catalogue;
    /// use cameleon::cm::Loader;
    /// use cameleon::export::Diagram;
    ///
    /// // `b.in_dat` is no port of a sink: not a net, but two boxes can be drawn.
    /// let text = "operators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: b, type: sink}\nconnections:\n  - {from: a.out_data, to: b.in_dat}\n";
    /// let file = Loader::new().parse_str(text)?;
    /// let d = Diagram::sketch(&file, Catalogue::global());
    /// assert_eq!((d.ops.len(), d.conns.len()), (2, 0));
    /// assert!(d.svg().contains("<g data-op=\"b\">"));
    /// # Ok::<(), cameleon::cm::CmError>(())
    /// ```
    pub fn sketch(file: &CmFile, catalogue: &Catalogue) -> Diagram {
        let mut d = Diagram {
            name: file.name.clone().unwrap_or_default(),
            ..Diagram::default()
        };
        for o in &file.operators {
            let type_id = o.type_.clone().unwrap_or_default();
            let spec = catalogue.get(&type_id).map(|e| {
                o.params
                    .as_ref()
                    .and_then(|p| (e.build)(p, &BuildContext::default()).ok())
                    .map_or_else(|| (e.spec)(), |op| op.spec())
            });
            d.ops.push(DiagramOp {
                name: o.id.clone(),
                label: spec.as_ref().map_or_else(
                    || format!("unknown type `{type_id}`"),
                    |s| s.label.to_string(),
                ),
                type_id,
                structural: spec
                    .as_ref()
                    .is_some_and(|s| s.family == Family::Structural),
                inputs: spec.as_ref().map(|s| ports(&s.inputs)).unwrap_or_default(),
                outputs: spec.as_ref().map(|s| ports(&s.outputs)).unwrap_or_default(),
                pos: o.x.zip(o.y),
            });
        }
        let conns: Vec<DiagramConn> = file
            .connections
            .iter()
            .filter_map(|c| {
                let (fo, fp, ty) = d.port(&c.from, true)?;
                let (to, tp, _) = d.port(&c.to, false)?;
                Some(DiagramConn {
                    name: format!("{} -> {}", c.from.trim(), c.to.trim()),
                    from: (fo, fp),
                    to: (to, tp),
                    ty,
                })
            })
            .collect();
        d.conns = conns;
        d
    }

    /// The operator index, port index and type of the end `op.port` of a connection (an
    /// output when `output`), if the diagram has that port.
    fn port(&self, end: &str, output: bool) -> Option<(usize, usize, &'static TypeInfo)> {
        let (op, port) = end.trim().split_once('.')?;
        let i = self.ops.iter().position(|o| o.name == op)?;
        let ports = if output {
            &self.ops[i].outputs
        } else {
            &self.ops[i].inputs
        };
        let p = ports.iter().position(|(n, _)| n == port)?;
        Some((i, p, ports[p].1))
    }
}

/// A port list as drawn: name and type, a type variable drawn as `Any`.
fn ports(ps: &[PortSpec]) -> Vec<(String, &'static TypeInfo)> {
    ps.iter()
        .map(|p| {
            let ty = match p.ty {
                TypeRef::Is(t) => t,
                TypeRef::Var(_) => Any::INFO,
            };
            (p.name.to_string(), ty)
        })
        .collect()
}
