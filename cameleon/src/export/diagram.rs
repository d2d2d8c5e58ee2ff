//! What the SVG export draws: operators with their ports, connections between ports.

use crate::net::Net;
use crate::policy::Family;
use crate::types::TypeInfo;

use super::position::box_height;

/// What [`svg`](super::svg()) draws: operators with their ports, connections between ports, each with its
/// data type. [`Diagram::of`] builds it from a net; a tool may build one by hand — `cameleon
/// serve` sketches what it could read of a file that is not a valid net yet.
#[derive(Clone, Debug, Default)]
pub struct Diagram {
    /// The title.
    pub name: String,
    /// The operators, in declaration order.
    pub ops: Vec<DiagramOp>,
    /// The connections.
    pub conns: Vec<DiagramConn>,
}

/// An operator of a [`Diagram`].
#[derive(Clone, Debug)]
pub struct DiagramOp {
    /// Instance name (`data-op`).
    pub name: String,
    /// The second line of its box (its type's label).
    pub label: String,
    /// Its type id (in the tooltip).
    pub type_id: String,
    /// Drawn as flow control.
    pub structural: bool,
    /// Input ports: name and type.
    pub inputs: Vec<(String, &'static TypeInfo)>,
    /// Output ports: name and type.
    pub outputs: Vec<(String, &'static TypeInfo)>,
    /// Its position, if it has one.
    pub pos: Option<(f64, f64)>,
}

/// A connection of a [`Diagram`].
#[derive(Clone, Debug)]
pub struct DiagramConn {
    /// `a.out -> b.in` (`data-conn`).
    pub name: String,
    /// Producer: operator index, output port index.
    pub from: (usize, usize),
    /// Consumer: operator index, input port index.
    pub to: (usize, usize),
    /// The data type (its colour).
    pub ty: &'static TypeInfo,
}

impl Diagram {
    /// The diagram of `net`.
    pub fn of(net: &Net) -> Self {
        Diagram {
            name: net.name().to_owned(),
            ops: net
                .operators()
                .iter()
                .map(|o| DiagramOp {
                    name: o.name.clone(),
                    label: o.display_label().to_owned(),
                    type_id: o.spec.type_id.to_string(),
                    structural: o.spec.family == Family::Structural,
                    inputs: o
                        .spec
                        .inputs
                        .iter()
                        .zip(&o.in_types)
                        .map(|(p, t)| (p.name.to_string(), *t))
                        .collect(),
                    outputs: o
                        .spec
                        .outputs
                        .iter()
                        .zip(&o.out_types)
                        .map(|(p, t)| (p.name.to_string(), *t))
                        .collect(),
                    pos: o.pos,
                })
                .collect(),
            conns: net
                .connections()
                .iter()
                .map(|c| DiagramConn {
                    name: c.name.clone(),
                    from: (c.from.op.index(), c.from.port as usize),
                    to: (c.to.op.index(), c.to.port as usize),
                    ty: c.ty,
                })
                .collect(),
        }
    }

    pub(super) fn heights(&self) -> Vec<f64> {
        self.ops
            .iter()
            .map(|o| box_height(o.inputs.len(), o.outputs.len()))
            .collect()
    }

    /// Top-left corner of each operator: its `x`/`y` when every operator has one, else a
    /// layered layout left to right (see the module's table: with the `layout` feature a
    /// Sugiyama layout by the `layout-rs` crate — loops broken for ranking, long connections
    /// routed through virtual nodes, crossings reduced; without it, each operator one column
    /// right of its furthest producer).
    pub fn positions(&self) -> Vec<(f64, f64)> {
        self.layout().0
    }

    /// The diagram as a standalone SVG drawing (see [`svg`](super::svg())).
    pub fn svg(&self) -> String {
        super::svg::render(self)
    }
}
