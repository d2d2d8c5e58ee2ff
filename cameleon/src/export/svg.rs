//! The SVG text of a diagram: boxes with their ports, connections as curves coloured by data
//! type, each named for scripts (`data-op`, `data-conn`, `data-state`, `data-type`).

use std::fmt::Write as _;

use super::Diagram;
use super::color;
use super::position::{BOX_W, MARGIN, PORT_STEP};

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

pub(super) fn render(d: &Diagram) -> String {
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
