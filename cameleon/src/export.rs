//! Diagrams of a net: Graphviz DOT, Mermaid and a self-contained SVG.
//!
//! Edges are coloured by the connection's data type (docs/semantics.md §9 colours); operators are labelled
//! with their instance name and type.
//!
//! ```
//! use cameleon::Net;
//!
//! let net = Net::from_cm("operators:\n  - {id: a, type: source, params: {value: x}}\n  - {id: b, type: sink}\nconnections:\n  - {from: a.out_data, to: b.in_data}\n")?;
//! assert!(cameleon::export::dot(&net).contains("\"a\" -> \"b\""));
//! assert!(cameleon::export::mermaid(&net).starts_with("flowchart LR"));
//! assert!(cameleon::export::svg(&net).starts_with("<svg"));
//! # Ok::<(), cameleon::cm::CmError>(())
//! ```

use std::fmt::Write as _;

use crate::net::Net;
use crate::policy::Family;
use crate::types::TypeInfo;

const NO_COLOR: &str = "#8a94a6";

fn color(t: &TypeInfo) -> &'static str {
    t.color.unwrap_or(NO_COLOR)
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The net as a Graphviz `digraph`, left to right.
pub fn dot(net: &Net) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph \"{}\" {{", dot_escape(net.name()));
    s.push_str("  graph [rankdir=LR, fontname=\"Helvetica\"];\n");
    s.push_str(
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n",
    );
    s.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for o in net.operators() {
        let fill = match o.spec.family {
            Family::Structural => "#eef1f6",
            Family::Behavioral => "#ffffff",
        };
        let _ = writeln!(
            s,
            "  \"{}\" [label=\"{}\\n{}\", fillcolor=\"{fill}\"];",
            dot_escape(&o.name),
            dot_escape(&o.name),
            dot_escape(&o.spec.type_id),
        );
    }
    for c in net.connections() {
        let (from, to) = (net.op(c.from.op), net.op(c.to.op));
        let _ = writeln!(
            s,
            "  \"{}\" -> \"{}\" [label=\"{} → {}\", color=\"{}\", fontcolor=\"{}\", tooltip=\"{}\"];",
            dot_escape(&from.name),
            dot_escape(&to.name),
            dot_escape(&from.spec.outputs[c.from.port as usize].name),
            dot_escape(&to.spec.inputs[c.to.port as usize].name),
            color(c.ty),
            color(c.ty),
            dot_escape(c.ty.name),
        );
    }
    s.push_str("}\n");
    s
}

fn mermaid_escape(s: &str) -> String {
    s.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
        .replace('\n', " ")
}

/// The net as a Mermaid `flowchart`, left to right, edges coloured by type.
pub fn mermaid(net: &Net) -> String {
    let mut s = String::from("flowchart LR\n");
    for (i, o) in net.operators().iter().enumerate() {
        let _ = writeln!(
            s,
            "  n{i}[\"{}<br/><small>{}</small>\"]",
            mermaid_escape(&o.name),
            mermaid_escape(&o.spec.type_id)
        );
    }
    for c in net.connections() {
        let (from, to) = (net.op(c.from.op), net.op(c.to.op));
        let _ = writeln!(
            s,
            "  n{} -->|\"{} → {}\"| n{}",
            c.from.op.index(),
            mermaid_escape(&from.spec.outputs[c.from.port as usize].name),
            mermaid_escape(&to.spec.inputs[c.to.port as usize].name),
            c.to.op.index(),
        );
    }
    for (i, c) in net.connections().iter().enumerate() {
        let _ = writeln!(s, "  linkStyle {i} stroke:{}", color(c.ty));
    }
    s
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

const BOX_W: f64 = 170.0;
const COL_GAP: f64 = 90.0;
const ROW_GAP: f64 = 40.0;
const PORT_STEP: f64 = 16.0;
const MARGIN: f64 = 30.0;

fn box_height(inputs: usize, outputs: usize) -> f64 {
    (inputs.max(outputs) as f64 * PORT_STEP + 24.0).max(48.0)
}

/// What [`svg`] draws: operators with their ports, connections between ports, each with its
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

    fn heights(&self) -> Vec<f64> {
        self.ops
            .iter()
            .map(|o| box_height(o.inputs.len(), o.outputs.len()))
            .collect()
    }

    /// Top-left corner of each operator: its `x`/`y` when every operator has one, else a
    /// layered (Sugiyama) layout left to right by the `layout-rs` crate — loops are broken for
    /// ranking, long connections routed through virtual nodes, crossings reduced.
    pub fn positions(&self) -> Vec<(f64, f64)> {
        self.layout().0
    }

    /// The positions, and per connection the points a long connection passes through (the
    /// layout's virtual nodes; none for a short one, or with given positions).
    fn layout(&self) -> Layout {
        let ops = &self.ops;
        let none = || vec![Vec::new(); self.conns.len()];
        if !ops.is_empty() && ops.iter().all(|o| o.pos.is_some()) {
            let pos: Vec<(f64, f64)> = ops.iter().map(|o| o.pos.unwrap_or_default()).collect();
            let min_x = pos.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
            let min_y = pos.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let pos = pos
                .into_iter()
                .map(|(x, y)| (x - min_x + MARGIN, y - min_y + MARGIN))
                .collect();
            return (pos, none());
        }
        let heights = self.heights();
        let edges: Vec<(usize, usize)> = self.conns.iter().map(|c| (c.from.0, c.to.0)).collect();
        layered(&heights, &edges).unwrap_or_else(|| {
            // The layout crate refused the graph (it asserts on shapes it cannot handle): one
            // column, in declaration order, rather than no drawing.
            let mut y = MARGIN;
            let pos = heights
                .iter()
                .map(|h| {
                    let at = (MARGIN, y);
                    y += h + ROW_GAP;
                    at
                })
                .collect();
            (pos, none())
        })
    }

    /// The diagram as a standalone SVG drawing (see [`svg`]).
    pub fn svg(&self) -> String {
        render(self)
    }
}

/// Top-left corner of each operator of `net` (see [`Diagram::positions`]).
pub fn positions(net: &Net) -> Vec<(f64, f64)> {
    Diagram::of(net).positions()
}

/// Records where the layout crate would draw each connection: the points of its path, by the
/// connection's index (passed as the arrow's properties).
#[derive(Default)]
struct Routes(Vec<(usize, Vec<(f64, f64)>)>);

impl layout::core::format::RenderBackend for Routes {
    fn draw_rect(
        &mut self,
        _: layout::core::geometry::Point,
        _: layout::core::geometry::Point,
        _: &layout::core::style::StyleAttr,
        _: Option<String>,
        _: Option<layout::core::format::ClipHandle>,
    ) {
    }
    fn draw_line(
        &mut self,
        _: layout::core::geometry::Point,
        _: layout::core::geometry::Point,
        _: &layout::core::style::StyleAttr,
        _: Option<String>,
    ) {
    }
    fn draw_circle(
        &mut self,
        _: layout::core::geometry::Point,
        _: layout::core::geometry::Point,
        _: &layout::core::style::StyleAttr,
        _: Option<String>,
    ) {
    }
    fn draw_text(
        &mut self,
        _: layout::core::geometry::Point,
        _: &str,
        _: &layout::core::style::StyleAttr,
    ) {
    }
    fn draw_arrow(
        &mut self,
        path: &[(layout::core::geometry::Point, layout::core::geometry::Point)],
        _: bool,
        _: (bool, bool),
        _: &layout::core::style::StyleAttr,
        properties: Option<String>,
        _: &str,
    ) {
        if let Some(i) = properties.and_then(|p| p.parse().ok()) {
            self.0
                .push((i, path.iter().map(|(p, _)| (p.x, p.y)).collect()));
        }
    }
    fn create_clip(
        &mut self,
        _: layout::core::geometry::Point,
        _: layout::core::geometry::Point,
        _: usize,
    ) -> layout::core::format::ClipHandle {
        0
    }
}

/// The positions and routes.
type Layout = (Vec<(f64, f64)>, Vec<Vec<(f64, f64)>>);

/// The layered layout of boxes of heights `heights` linked by `edges`: top-left corners, and
/// per edge the points it passes through between its ends (for a long edge, the virtual nodes
/// the crate placed on the layers it crosses). `None` if the layout crate panicked.
fn layered(heights: &[f64], edges: &[(usize, usize)]) -> Option<Layout> {
    use layout::core::base::Orientation;
    use layout::core::geometry::Point;
    use layout::core::style::StyleAttr;
    use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
    use layout::topo::layout::VisualGraph;

    if heights.is_empty() {
        return Some((Vec::new(), vec![Vec::new(); edges.len()]));
    }
    let run = || {
        let mut vg = VisualGraph::new(Orientation::LeftToRight);
        let handles: Vec<_> = heights
            .iter()
            .map(|&h| {
                vg.add_node(Element::create(
                    ShapeKind::Box(String::new()),
                    StyleAttr::simple(),
                    Orientation::LeftToRight,
                    // Room between layers and rows: the crate packs boxes by their size.
                    Point::new(BOX_W + COL_GAP / 2.0, h + ROW_GAP / 2.0),
                ))
            })
            .collect();
        for (i, &(from, to)) in edges.iter().enumerate() {
            vg.add_edge(
                Arrow::simple_with_properties("", i.to_string()),
                handles[from],
                handles[to],
            );
        }
        let mut routes = Routes::default();
        vg.do_it(false, false, false, &mut routes);
        let centers = handles
            .iter()
            .map(|&h| {
                let c = vg.pos(h).center();
                (c.x, c.y)
            })
            .collect::<Vec<_>>();
        (centers, routes.0)
    };
    let (centers, drawn) = std::panic::catch_unwind(run).ok()?;
    let min_x = centers
        .iter()
        .map(|p| p.0 - BOX_W / 2.0)
        .fold(f64::INFINITY, f64::min);
    let min_y = centers
        .iter()
        .zip(heights)
        .map(|(p, h)| p.1 - h / 2.0)
        .fold(f64::INFINITY, f64::min);
    let shift = |(x, y): (f64, f64)| (x - min_x + MARGIN, y - min_y + MARGIN);
    let pos = centers
        .iter()
        .zip(heights)
        .map(|(&(x, y), h)| shift((x - BOX_W / 2.0, y - h / 2.0)))
        .collect();
    let mut routes = vec![Vec::new(); edges.len()];
    for (i, path) in drawn {
        if let Some(r) = routes.get_mut(i)
            && path.len() > 2
        {
            // The ends are the boxes' own; the points between are the virtual nodes.
            *r = path[1..path.len() - 1].iter().map(|&p| shift(p)).collect();
        }
    }
    Some((pos, routes))
}

/// The net as a standalone SVG drawing: operators as boxes with their ports, connections as
/// curves coloured by data type.
///
/// Each operator is a `<g data-op="NAME">`; each connection a `<path data-conn="FROM.PORT ->
/// TO.PORT" data-state="EMPTY" data-type="TYPE">` (the initial marking; `cameleon serve` keeps
/// `data-state` current).
pub fn svg(net: &Net) -> String {
    render(&Diagram::of(net))
}

fn render(d: &Diagram) -> String {
    let (pos, routes) = d.layout();
    let ops = &d.ops;
    let heights = d.heights();
    let width = pos
        .iter()
        .map(|p| p.0 + BOX_W + MARGIN)
        .fold(200.0, f64::max);
    let bottom = pos
        .iter()
        .zip(&heights)
        .map(|(p, h)| p.1 + h)
        .fold(0.0, f64::max);
    let back_edges = d
        .conns
        .iter()
        .filter(|c| pos[c.to.0].0 <= pos[c.from.0].0 + BOX_W + 20.0)
        .count();
    let mut lane_y = bottom + 20.0;
    let height = (bottom + 20.0 + back_edges as f64 * 8.0 + MARGIN).max(100.0);
    let port_y = |op: usize, i: usize, n: usize| {
        let h = heights[op];
        pos[op].1 + h / 2.0 + (i as f64 - (n as f64 - 1.0) / 2.0) * PORT_STEP
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"Helvetica, Arial, sans-serif\">"
    );
    let _ = writeln!(s, "  <title>{}</title>", xml_escape(&d.name));
    s.push_str("  <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"12\" markerHeight=\"12\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"context-stroke\"/></marker></defs>\n");
    s.push_str("  <rect width=\"100%\" height=\"100%\" fill=\"#fbfcfe\"/>\n");
    for (ci, c) in d.conns.iter().enumerate() {
        let (f, t) = (c.from.0, c.to.0);
        let (x1, y1) = (pos[f].0 + BOX_W, port_y(f, c.from.1, ops[f].outputs.len()));
        let (x2, y2) = (pos[t].0, port_y(t, c.to.1, ops[t].inputs.len()));
        let d = if x2 > x1 + 20.0 {
            // Through the layout's virtual nodes (a long connection goes around the boxes of
            // the layers it crosses), left to right, with horizontal tangents.
            let mut via: Vec<(f64, f64)> = routes
                .get(ci)
                .map(|r| r.iter().copied().filter(|p| p.0 > x1 && p.0 < x2).collect())
                .unwrap_or_default();
            via.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut d = format!("M {x1:.1} {y1:.1}");
            let mut at = (x1, y1);
            for p in via.into_iter().chain([(x2, y2)]) {
                let bend = ((p.0 - at.0) / 2.0).max(20.0);
                let _ = write!(
                    d,
                    " C {:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
                    at.0 + bend,
                    at.1,
                    p.0 - bend,
                    p.1,
                    p.0,
                    p.1
                );
                at = p;
            }
            d
        } else {
            // A loop's back edge: out to the right, along a lane under the drawing, in from the
            // left.
            let lane = lane_y;
            lane_y += 8.0;
            format!(
                "M {x1:.1} {y1:.1} C {:.1} {y1:.1}, {:.1} {lane:.1}, {:.1} {lane:.1} L {:.1} {lane:.1} C {:.1} {lane:.1}, {:.1} {y2:.1}, {x2:.1} {y2:.1}",
                x1 + 40.0,
                x1 + 40.0,
                x1,
                x2,
                x2 - 40.0,
                x2 - 40.0
            )
        };
        let _ = writeln!(
            s,
            "  <path data-conn=\"{}\" data-state=\"EMPTY\" data-type=\"{}\" d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" marker-end=\"url(#arrow)\"><title>{} ({})</title></path>",
            xml_escape(&c.name),
            xml_escape(c.ty.name),
            color(c.ty),
            xml_escape(&c.name),
            xml_escape(c.ty.name),
        );
    }
    for (i, o) in ops.iter().enumerate() {
        let (x, y) = pos[i];
        let h = heights[i];
        let stroke = if o.structural { "#5b6b86" } else { "#2d3748" };
        let _ = writeln!(
            s,
            "  <g data-op=\"{}\"><title>{} ({})</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{BOX_W}\" height=\"{h:.1}\" rx=\"8\" fill=\"#ffffff\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>",
            xml_escape(&o.name),
            xml_escape(&o.name),
            xml_escape(&o.type_id),
        );
        let _ = writeln!(
            s,
            "    <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\" fill=\"#1a202c\">{}</text>",
            x + BOX_W / 2.0,
            y + h / 2.0 - 2.0,
            xml_escape(&o.name)
        );
        let _ = writeln!(
            s,
            "    <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#4a5568\">{}</text>",
            x + BOX_W / 2.0,
            y + h / 2.0 + 12.0,
            xml_escape(&o.label)
        );
        for (p, (name, ty)) in o.inputs.iter().enumerate() {
            let py = port_y(i, p, o.inputs.len());
            let _ = writeln!(
                s,
                "    <circle cx=\"{x:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{}\"><title>{} : {}</title></circle>",
                color(ty),
                xml_escape(name),
                xml_escape(ty.name)
            );
        }
        for (p, (name, ty)) in o.outputs.iter().enumerate() {
            let py = port_y(i, p, o.outputs.len());
            let _ = writeln!(
                s,
                "    <circle cx=\"{:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{}\"><title>{} : {}</title></circle>",
                x + BOX_W,
                color(ty),
                xml_escape(name),
                xml_escape(ty.name)
            );
        }
        s.push_str("  </g>\n");
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> Net {
        let mut cm = String::from("operators:\n  - {id: op0, type: source, params: {value: x}}\n");
        for i in 1..n {
            cm.push_str(&format!("  - {{id: op{i}, type: transform}}\n"));
        }
        cm.push_str(&format!("  - {{id: op{n}, type: sink}}\nconnections:\n"));
        for i in 0..n {
            cm.push_str(&format!(
                "  - {{from: op{i}.out_data, to: op{}.in_data}}\n",
                i + 1
            ));
        }
        Net::from_cm(&cm).unwrap()
    }

    #[test]
    fn the_layered_layout_puts_each_operator_right_of_what_feeds_it() {
        let net = chain(6);
        let pos = positions(&net);
        for c in net.connections() {
            let (a, b) = (pos[c.from.op.index()], pos[c.to.op.index()]);
            assert!(
                b.0 >= a.0 + BOX_W,
                "{} is not right of its producer: {pos:?}",
                c.name
            );
        }
    }

    #[test]
    fn boxes_of_a_fork_do_not_overlap() {
        let net = Net::from_cm(
            "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: f, type: fork, params: {arity: 4}}\n  - {id: a, type: sink}\n  - {id: b, type: sink}\n  - {id: c, type: sink}\n  - {id: d, type: sink}\nconnections:\n  - {from: s.out_data, to: f.in_data}\n  - {from: f.out_a, to: a.in_data}\n  - {from: f.out_b, to: b.in_data}\n  - {from: f.out_c, to: c.in_data}\n  - {from: f.out_d, to: d.in_data}\n",
        )
        .unwrap();
        let pos = positions(&net);
        let h = |i: usize| {
            let o = &net.operators()[i];
            box_height(o.spec.inputs.len(), o.spec.outputs.len())
        };
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let (a, b) = (pos[i], pos[j]);
                let apart = a.0 + BOX_W <= b.0
                    || b.0 + BOX_W <= a.0
                    || a.1 + h(i) <= b.1
                    || b.1 + h(j) <= a.1;
                assert!(apart, "operators {i} and {j} overlap: {pos:?}");
            }
        }
    }

    #[test]
    fn a_long_connection_goes_through_the_layers_it_crosses() {
        // `f.out_b -> j.in_b` skips the layer of `t`: it is routed through a virtual node there.
        let net = Net::from_cm(
            "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: f, type: fork}\n  - {id: t, type: transform}\n  - {id: j, type: join}\n  - {id: out, type: sink}\nconnections:\n  - {from: s.out_data, to: f.in_data}\n  - {from: f.out_a, to: t.in_data}\n  - {from: t.out_data, to: j.in_a}\n  - {from: f.out_b, to: j.in_b}\n  - {from: j.out_data, to: out.in_data}\n",
        )
        .unwrap();
        let svg = svg(&net);
        let path = |conn: &str| {
            let at = svg.find(&format!("data-conn=\"{conn}\"")).unwrap();
            let d = &svg[at..];
            let d = &d[d.find(" d=\"").unwrap() + 4..];
            d[..d.find('"').unwrap()].to_owned()
        };
        assert_eq!(path("t.out_data -&gt; j.in_a").matches(" C ").count(), 1);
        assert!(
            path("f.out_b -&gt; j.in_b").matches(" C ").count() >= 2,
            "{svg}"
        );
    }

    #[test]
    fn the_svg_names_operators_and_connections_for_scripts() {
        let net = chain(2);
        let svg = svg(&net);
        assert!(svg.contains("<g data-op=\"op1\">"), "{svg}");
        assert!(
            svg.contains("data-conn=\"op0.out_data -&gt; op1.in_data\" data-state=\"EMPTY\" data-type=\"DataString\""),
            "{svg}"
        );
    }
}
