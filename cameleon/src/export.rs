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

use std::collections::VecDeque;
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

/// The layer of each operator: the longest path to it from a source, loops left out (an edge
/// back to an operator on the current depth-first path is a loop's back edge).
fn layers(net: &Net) -> Vec<usize> {
    let n = net.operators().len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in net.connections() {
        succ[c.from.op.index()].push(c.to.op.index());
    }
    // Depth-first search from the sources (then from anything left), marking back edges.
    let (mut state, mut back) = (vec![0u8; n], std::collections::HashSet::new());
    let roots = (0..n)
        .filter(|&i| net.operators()[i].spec.inputs.is_empty())
        .chain(0..n);
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((v, next)) = stack.pop() {
            if let Some(&w) = succ[v].get(next) {
                stack.push((v, next + 1));
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => {
                        back.insert((v, w));
                    }
                    _ => {}
                }
            } else {
                state[v] = 2;
            }
        }
    }
    // Longest path over the remaining acyclic edges (Kahn's order).
    let mut indeg = vec![0usize; n];
    for (v, ws) in succ.iter().enumerate() {
        for &w in ws {
            if !back.contains(&(v, w)) {
                indeg[w] += 1;
            }
        }
    }
    let mut layer = vec![0usize; n];
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    while let Some(v) = queue.pop_front() {
        for &w in &succ[v] {
            if back.contains(&(v, w)) {
                continue;
            }
            layer[w] = layer[w].max(layer[v] + 1);
            indeg[w] -= 1;
            if indeg[w] == 0 {
                queue.push_back(w);
            }
        }
    }
    layer
}

/// Top-left corner of each operator: its `x`/`y` when every operator has one, else a layered
/// layout (layer = longest path from the sources, declaration order within a layer).
fn layout(net: &Net) -> Vec<(f64, f64)> {
    let ops = net.operators();
    if !ops.is_empty() && ops.iter().all(|o| o.pos.is_some()) {
        let pos: Vec<(f64, f64)> = ops.iter().map(|o| o.pos.unwrap_or_default()).collect();
        let min_x = pos.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let min_y = pos.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        return pos
            .into_iter()
            .map(|(x, y)| (x - min_x + MARGIN, y - min_y + MARGIN))
            .collect();
    }
    let n = ops.len();
    let layer = layers(net);
    let mut next_y = vec![MARGIN; n.max(1)];
    ops.iter()
        .enumerate()
        .map(|(i, o)| {
            let l = layer[i];
            let y = next_y[l];
            next_y[l] += box_height(o.spec.inputs.len(), o.spec.outputs.len()) + ROW_GAP;
            (MARGIN + l as f64 * (BOX_W + COL_GAP), y)
        })
        .collect()
}

/// The net as a standalone SVG drawing: operators as boxes with their ports, connections as
/// curves coloured by data type.
pub fn svg(net: &Net) -> String {
    let pos = layout(net);
    let ops = net.operators();
    let heights: Vec<f64> = ops
        .iter()
        .map(|o| box_height(o.spec.inputs.len(), o.spec.outputs.len()))
        .collect();
    let width = pos
        .iter()
        .map(|p| p.0 + BOX_W + MARGIN)
        .fold(200.0, f64::max);
    let bottom = pos
        .iter()
        .zip(&heights)
        .map(|(p, h)| p.1 + h)
        .fold(0.0, f64::max);
    let back_edges = net
        .connections()
        .iter()
        .filter(|c| pos[c.to.op.index()].0 <= pos[c.from.op.index()].0 + BOX_W + 20.0)
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
    let _ = writeln!(s, "  <title>{}</title>", xml_escape(net.name()));
    s.push_str("  <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"context-stroke\"/></marker></defs>\n");
    s.push_str("  <rect width=\"100%\" height=\"100%\" fill=\"#fbfcfe\"/>\n");
    for c in net.connections() {
        let (f, t) = (c.from.op.index(), c.to.op.index());
        let (x1, y1) = (
            pos[f].0 + BOX_W,
            port_y(f, c.from.port as usize, ops[f].spec.outputs.len()),
        );
        let (x2, y2) = (
            pos[t].0,
            port_y(t, c.to.port as usize, ops[t].spec.inputs.len()),
        );
        let d = if x2 > x1 + 20.0 {
            let bend = ((x2 - x1) / 2.0).max(40.0);
            format!(
                "M {x1:.1} {y1:.1} C {:.1} {y1:.1}, {:.1} {y2:.1}, {x2:.1} {y2:.1}",
                x1 + bend,
                x2 - bend
            )
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
            "  <path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" marker-end=\"url(#arrow)\"><title>{} ({})</title></path>",
            color(c.ty),
            xml_escape(&c.name),
            xml_escape(c.ty.name),
        );
    }
    for (i, o) in ops.iter().enumerate() {
        let (x, y) = pos[i];
        let h = heights[i];
        let stroke = match o.spec.family {
            Family::Structural => "#5b6b86",
            Family::Behavioral => "#2d3748",
        };
        let _ = writeln!(
            s,
            "  <g><title>{} ({})</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{BOX_W}\" height=\"{h:.1}\" rx=\"8\" fill=\"#ffffff\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>",
            xml_escape(&o.name),
            xml_escape(&o.spec.type_id),
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
            xml_escape(o.display_label())
        );
        for (p, port) in o.spec.inputs.iter().enumerate() {
            let py = port_y(i, p, o.spec.inputs.len());
            let _ = writeln!(
                s,
                "    <circle cx=\"{x:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{}\"><title>{} : {}</title></circle>",
                color(o.in_types[p]),
                xml_escape(&port.name),
                xml_escape(o.in_types[p].name)
            );
        }
        for (p, port) in o.spec.outputs.iter().enumerate() {
            let py = port_y(i, p, o.spec.outputs.len());
            let _ = writeln!(
                s,
                "    <circle cx=\"{:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{}\"><title>{} : {}</title></circle>",
                x + BOX_W,
                color(o.out_types[p]),
                xml_escape(&port.name),
                xml_escape(o.out_types[p].name)
            );
        }
        s.push_str("  </g>\n");
    }
    s.push_str("</svg>\n");
    s
}
