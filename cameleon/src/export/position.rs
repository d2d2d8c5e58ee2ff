//! Where the boxes of a diagram go: the positions the file gives, else a layered layout left
//! to right. With the `layout` feature (on by default) the layout is the `layout-rs` crate's
//! Sugiyama layout; without it — or should that crate refuse a graph — each operator is put one
//! column right of its furthest producer (loops broken in declaration order), the operators of
//! a column one under another.

use super::Diagram;

pub(super) const BOX_W: f64 = 170.0;
pub(super) const COL_GAP: f64 = 90.0;
pub(super) const ROW_GAP: f64 = 40.0;
pub(super) const PORT_STEP: f64 = 16.0;
pub(super) const MARGIN: f64 = 30.0;

pub(super) fn box_height(inputs: usize, outputs: usize) -> f64 {
    (inputs.max(outputs) as f64 * PORT_STEP + 24.0).max(48.0)
}

/// The positions and routes: per operator its top-left corner, per connection the points a
/// long connection passes through.
pub(super) type Layout = (Vec<(f64, f64)>, Vec<Vec<(f64, f64)>>);

impl Diagram {
    /// The positions, and per connection the points a long connection passes through (the
    /// layout's virtual nodes; none for a short one, or with given positions).
    pub(super) fn layout(&self) -> Layout {
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
        layered(&heights, &edges)
    }
}

/// The layered layout of boxes of heights `heights` linked by `edges` (see the module's docs).
fn layered(heights: &[f64], edges: &[(usize, usize)]) -> Layout {
    #[cfg(feature = "layout")]
    if let Some(layout) = sugiyama(heights, edges) {
        return layout;
    }
    (columns(heights, edges), vec![Vec::new(); edges.len()])
}

/// The longest-path layering: each box one column right of its furthest producer, edges that
/// close a loop (found by a depth-first search from the boxes in declaration order) left out of
/// the ranking; in a column, boxes one under another in declaration order.
fn columns(heights: &[f64], edges: &[(usize, usize)]) -> Vec<(f64, f64)> {
    let n = heights.len();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in edges {
        if from < n && to < n && from != to {
            out[from].push(to);
        }
    }
    // Depth-first, iteratively: an edge into a box still on the stack closes a loop.
    let (mut seen, mut on_stack) = (vec![false; n], vec![false; n]);
    let mut forward: Vec<(usize, usize)> = Vec::new();
    let mut order = Vec::with_capacity(n); // reverse topological order of the forward edges
    for root in 0..n {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        on_stack[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some((v, next)) = stack.last_mut() {
            let v = *v;
            if let Some(&w) = out[v].get(*next) {
                *next += 1;
                if on_stack[w] {
                    continue; // a loop's back edge
                }
                forward.push((v, w));
                if !seen[w] {
                    seen[w] = true;
                    on_stack[w] = true;
                    stack.push((w, 0));
                }
            } else {
                on_stack[v] = false;
                order.push(v);
                stack.pop();
            }
        }
    }
    let mut rank = vec![0usize; n];
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in &forward {
        into[to].push(from);
    }
    for &v in order.iter().rev() {
        rank[v] = into[v].iter().map(|&p| rank[p] + 1).max().unwrap_or(0);
    }
    let mut bottom: Vec<f64> = Vec::new(); // per column, where the next box goes
    (0..n)
        .map(|i| {
            let r = rank[i];
            if bottom.len() <= r {
                bottom.resize(r + 1, MARGIN);
            }
            let at = (MARGIN + r as f64 * (BOX_W + COL_GAP), bottom[r]);
            bottom[r] += heights[i] + ROW_GAP;
            at
        })
        .collect()
}

/// Records where the layout crate would draw each connection: the points of its path, by the
/// connection's index (passed as the arrow's properties).
#[cfg(feature = "layout")]
#[derive(Default)]
struct Routes(Vec<(usize, Vec<(f64, f64)>)>);

#[cfg(feature = "layout")]
impl ::layout::core::format::RenderBackend for Routes {
    fn draw_rect(
        &mut self,
        _: ::layout::core::geometry::Point,
        _: ::layout::core::geometry::Point,
        _: &::layout::core::style::StyleAttr,
        _: Option<String>,
        _: Option<::layout::core::format::ClipHandle>,
    ) {
    }
    fn draw_line(
        &mut self,
        _: ::layout::core::geometry::Point,
        _: ::layout::core::geometry::Point,
        _: &::layout::core::style::StyleAttr,
        _: Option<String>,
    ) {
    }
    fn draw_circle(
        &mut self,
        _: ::layout::core::geometry::Point,
        _: ::layout::core::geometry::Point,
        _: &::layout::core::style::StyleAttr,
        _: Option<String>,
    ) {
    }
    fn draw_text(
        &mut self,
        _: ::layout::core::geometry::Point,
        _: &str,
        _: &::layout::core::style::StyleAttr,
    ) {
    }
    fn draw_arrow(
        &mut self,
        path: &[(
            ::layout::core::geometry::Point,
            ::layout::core::geometry::Point,
        )],
        _: bool,
        _: (bool, bool),
        _: &::layout::core::style::StyleAttr,
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
        _: ::layout::core::geometry::Point,
        _: ::layout::core::geometry::Point,
        _: usize,
    ) -> ::layout::core::format::ClipHandle {
        0
    }
}

/// The layered layout of boxes of heights `heights` linked by `edges` by the `layout-rs` crate:
/// top-left corners, and per edge the points it passes through between its ends (for a long
/// edge, the virtual nodes the crate placed on the layers it crosses). `None` if the layout
/// crate panicked.
#[cfg(feature = "layout")]
fn sugiyama(heights: &[f64], edges: &[(usize, usize)]) -> Option<Layout> {
    use ::layout::core::base::Orientation;
    use ::layout::core::geometry::Point;
    use ::layout::core::style::StyleAttr;
    use ::layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
    use ::layout::topo::layout::VisualGraph;

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
    let (centers, drawn) = crate::runtime::catch_panic(run).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn apart(pos: &[(f64, f64)], heights: &[f64]) -> bool {
        (0..pos.len()).all(|i| {
            (i + 1..pos.len()).all(|j| {
                let (a, b) = (pos[i], pos[j]);
                a.0 + BOX_W <= b.0
                    || b.0 + BOX_W <= a.0
                    || a.1 + heights[i] <= b.1
                    || b.1 + heights[j] <= a.1
            })
        })
    }

    #[test]
    fn the_column_layout_puts_each_box_right_of_its_furthest_producer() {
        // 0 -> 1 -> 2, and 0 -> 2 directly: 2 is two columns right of 0, not one.
        let pos = columns(&[48.0; 3], &[(0, 1), (1, 2), (0, 2)]);
        assert!(pos[1].0 >= pos[0].0 + BOX_W, "{pos:?}");
        assert!(pos[2].0 >= pos[1].0 + BOX_W, "{pos:?}");
    }

    #[test]
    fn the_column_layout_breaks_loops_and_stacks_a_column() {
        // 0 -> 1 -> 2 -> 1 (a loop) and 0 -> 3: the back edge does not rank, 1 and 3 share a
        // column without overlapping.
        let heights = [48.0, 64.0, 48.0, 48.0];
        let pos = columns(&heights, &[(0, 1), (1, 2), (2, 1), (0, 3)]);
        assert!(pos[2].0 > pos[1].0, "{pos:?}");
        assert_eq!(pos[1].0, pos[3].0, "{pos:?}");
        assert!(apart(&pos, &heights), "{pos:?}");
        // Every box drawn, even with edges that name nothing (a hand-built diagram).
        assert_eq!(columns(&[48.0], &[(0, 5), (0, 0)]).len(), 1);
    }
}
