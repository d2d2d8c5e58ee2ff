//! Diagrams of a net: Graphviz DOT, Mermaid and a self-contained SVG.
//!
//! Edges are coloured by the connection's data type (docs/semantics.md §9 colours); operators are labelled
//! with their instance name and type.
//!
//! | file | does |
//! |---|---|
//! | `mod.rs` | DOT and Mermaid; [`svg`] and [`positions`] of a net |
//! | `diagram.rs` | [`Diagram`], what the SVG draws, built from a net or by hand |
//! | `sketch.rs` | [`Diagram::sketch`]: what can be drawn of a `.cm` file that is not a valid net yet |
//! | `position.rs` | where the boxes go: given positions, else a layered layout (the `layout-rs` crate with the `layout` feature, a simpler longest-path layering without it) |
//! | `svg.rs` | the SVG text |
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

mod diagram;
mod position;
mod sketch;
mod svg;

pub use diagram::{Diagram, DiagramConn, DiagramOp};

use crate::net::Net;
use crate::policy::Family;
use crate::types::TypeInfo;

const NO_COLOR: &str = "#8a94a6";

pub(crate) fn color(t: &TypeInfo) -> &'static str {
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

/// The net as a standalone SVG drawing: operators as boxes with their ports, connections as
/// curves coloured by data type.
///
/// Each operator is a `<g data-op="NAME">`; each connection a `<path data-conn="FROM.PORT ->
/// TO.PORT" data-state="EMPTY" data-type="TYPE">` (the initial marking; `cameleon serve` keeps
/// `data-state` current).
pub fn svg(net: &Net) -> String {
    Diagram::of(net).svg()
}

/// Top-left corner of each operator of `net` (see [`Diagram::positions`]).
pub fn positions(net: &Net) -> Vec<(f64, f64)> {
    Diagram::of(net).positions()
}

#[cfg(test)]
mod tests {
    use super::position::{BOX_W, box_height};
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
    #[cfg(feature = "layout")]
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
