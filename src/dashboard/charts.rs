//! The dashboard's pictures, drawn on the server as inline SVG (no script, nothing fetched):
//! a Gantt chart of lanes and spans, a coloured grid, horizontal bars and stacked columns.
//! Colours come from the stylesheet's classes; every label is escaped and every shape carries
//! a `<title>` (its tooltip, and what a screen reader says).

use super::html::esc;

/// One span of a Gantt lane: from and to (ms), a CSS class, a tooltip.
pub struct Span {
    pub from: i64,
    pub to: i64,
    pub class: String,
    pub title: String,
}

/// One row of a Gantt chart.
pub struct Lane {
    pub name: String,
    pub spans: Vec<Span>,
}

const LABEL_W: f64 = 110.0;
const WIDTH: f64 = 720.0;
const ROW_H: f64 = 26.0;

/// Seconds as people read a duration: `42 s`, `3 min 5 s`, `1 h 2 min`.
pub fn duration(ms: i64) -> String {
    let s = (ms.max(0) + 500) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Lanes over the time from `start` to `end` (ms), with a time axis.
pub fn gantt(id: &str, lanes: &[Lane], start: i64, end: i64) -> String {
    let span = (end - start).max(1) as f64;
    let plot = WIDTH - LABEL_W - 10.0;
    let x = |t: i64| LABEL_W + (t - start).clamp(0, end - start) as f64 / span * plot;
    let height = lanes.len() as f64 * ROW_H + 24.0;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart gantt\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"Where the time went\">"
    );
    for (i, lane) in lanes.iter().enumerate() {
        let y = i as f64 * ROW_H;
        s.push_str(&format!(
            "<text class=\"lane\" x=\"0\" y=\"{:.1}\">{}</text>",
            y + ROW_H * 0.65,
            esc(&lane.name)
        ));
        for sp in &lane.spans {
            let (x0, x1) = (x(sp.from), x(sp.to.max(sp.from)));
            s.push_str(&format!(
                "<rect class=\"span {}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\"><title>{}</title></rect>",
                esc(&sp.class),
                y + 4.0,
                (x1 - x0).max(2.0),
                ROW_H - 8.0,
                esc(&sp.title)
            ));
        }
    }
    // The axis: the start, the middle and the end, as time since the start.
    let axis_y = lanes.len() as f64 * ROW_H + 16.0;
    for (t, anchor) in [
        (start, "start"),
        (start + (end - start) / 2, "middle"),
        (end, "end"),
    ] {
        s.push_str(&format!(
            "<text class=\"axis\" x=\"{:.1}\" y=\"{axis_y:.1}\" text-anchor=\"{anchor}\">{}</text>",
            x(t),
            duration(t - start)
        ));
    }
    s.push_str("</svg>");
    s
}

/// One cell of a [`grid`]: its row and column, class and tooltip.
pub struct Cell {
    pub row: usize,
    pub col: usize,
    pub class: String,
    pub title: String,
}

/// Rows by columns of coloured squares (gates by attempt).
pub fn grid(id: &str, rows: &[String], cols: &[String], cells: &[Cell]) -> String {
    let (cw, ch) = (44.0, 24.0);
    let width = LABEL_W + cols.len() as f64 * cw + 4.0;
    let height = 20.0 + rows.len() as f64 * ch;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart grid\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" role=\"img\" aria-label=\"Gates per attempt\">"
    );
    for (j, c) in cols.iter().enumerate() {
        s.push_str(&format!(
            "<text class=\"axis\" x=\"{:.1}\" y=\"14\" text-anchor=\"middle\">{}</text>",
            LABEL_W + j as f64 * cw + cw / 2.0,
            esc(c)
        ));
    }
    for (i, r) in rows.iter().enumerate() {
        s.push_str(&format!(
            "<text class=\"lane\" x=\"0\" y=\"{:.1}\">{}</text>",
            20.0 + i as f64 * ch + ch * 0.65,
            esc(r)
        ));
    }
    for c in cells {
        s.push_str(&format!(
            "<rect class=\"cell {}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\"><title>{}</title></rect>",
            esc(&c.class),
            LABEL_W + c.col as f64 * cw + 3.0,
            20.0 + c.row as f64 * ch + 3.0,
            cw - 6.0,
            ch - 6.0,
            esc(&c.title)
        ));
    }
    s.push_str("</svg>");
    s
}

/// Horizontal bars `width` wide: `(label, value, text shown after the bar, class)`.
pub fn bars(id: &str, width: f64, items: &[(String, f64, String, String)]) -> String {
    let max = items
        .iter()
        .map(|i| i.1)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let longest = items.iter().map(|i| i.2.chars().count()).max().unwrap_or(0) as f64;
    let plot = (width - LABEL_W - 12.0 - longest * 6.2).max(40.0);
    let height = items.len() as f64 * ROW_H + 4.0;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart bars\" viewBox=\"0 0 {width} {height}\" role=\"img\">"
    );
    for (i, (label, value, text, class)) in items.iter().enumerate() {
        let y = i as f64 * ROW_H;
        let w = (value / max * plot).max(if *value > 0.0 { 2.0 } else { 0.0 });
        s.push_str(&format!(
            "<text class=\"lane\" x=\"0\" y=\"{:.1}\">{}</text>\
             <rect class=\"bar {}\" x=\"{LABEL_W}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" rx=\"3\"><title>{}: {}</title></rect>\
             <text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            y + ROW_H * 0.65,
            esc(label),
            esc(class),
            y + 4.0,
            ROW_H - 8.0,
            esc(label),
            esc(text),
            LABEL_W + w + 6.0,
            y + ROW_H * 0.65,
            esc(text)
        ));
    }
    s.push_str("</svg>");
    s
}

/// Stacked columns `width` wide, one per `(label, [(class, count)])`, with a legend of
/// `(class, name)`.
pub fn columns(
    id: &str,
    width: f64,
    cols: &[(String, Vec<(String, u64)>)],
    legend: &[(String, String)],
) -> String {
    let max = cols
        .iter()
        .map(|(_, parts)| parts.iter().map(|p| p.1).sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (plot_h, cw) = (120.0, (width - 20.0) / cols.len().max(1) as f64);
    let mut legend_rows = 1.0;
    let mut lx = 10.0;
    for (_, name) in legend {
        let w = 14.0 + name.chars().count() as f64 * 6.5 + 12.0;
        if lx + w > width && lx > 10.0 {
            legend_rows += 1.0;
            lx = 10.0;
        }
        lx += w;
    }
    let height = plot_h + 24.0 + legend_rows * 16.0;
    let mut s = format!(
        "<svg id=\"{id}\" class=\"chart columns\" viewBox=\"0 0 {width} {height}\" role=\"img\">"
    );
    for (j, (label, parts)) in cols.iter().enumerate() {
        let x = 10.0 + j as f64 * cw;
        let mut top = plot_h;
        for (class, n) in parts.iter().filter(|p| p.1 > 0) {
            let h = *n as f64 / max * (plot_h - 10.0);
            top -= h;
            s.push_str(&format!(
                "<rect class=\"col {}\" x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{h:.1}\"><title>{}: {n} {}</title></rect>",
                esc(class),
                x + 2.0,
                (cw - 4.0).max(1.0),
                esc(label),
                esc(class.trim_start_matches("st-"))
            ));
        }
        s.push_str(&format!(
            "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x + cw / 2.0,
            plot_h + 14.0,
            esc(label)
        ));
    }
    let (mut lx, mut ly) = (10.0, plot_h + 24.0);
    for (class, name) in legend {
        let w = 14.0 + name.chars().count() as f64 * 6.5 + 12.0;
        if lx + w > width && lx > 10.0 {
            lx = 10.0;
            ly += 16.0;
        }
        s.push_str(&format!(
            "<rect class=\"col {}\" x=\"{lx:.1}\" y=\"{ly:.1}\" width=\"10\" height=\"10\"/><text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            esc(class),
            lx + 14.0,
            ly + 9.0,
            esc(name)
        ));
        lx += w;
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_counted_and_labels_escaped() {
        let lanes = vec![
            Lane {
                name: "<b>Builder</b>".into(),
                spans: vec![
                    Span {
                        from: 0,
                        to: 500,
                        class: "r-builder".into(),
                        title: "a".into(),
                    },
                    Span {
                        from: 700,
                        to: 900,
                        class: "r-builder".into(),
                        title: "b".into(),
                    },
                ],
            },
            Lane {
                name: "Gates".into(),
                spans: vec![],
            },
        ];
        let g = gantt("g", &lanes, 0, 1000);
        assert_eq!(g.matches("<rect class=\"span").count(), 2);
        assert!(g.contains("&lt;b&gt;Builder") && !g.contains("<b>"));
        let cells = vec![Cell {
            row: 0,
            col: 1,
            class: "s-bad".into(),
            title: "test: failed".into(),
        }];
        let grid = grid("x", &["test".into()], &["1".into(), "2".into()], &cells);
        assert_eq!(grid.matches("<rect class=\"cell s-bad\"").count(), 1);
        let b = bars(
            "b",
            720.0,
            &[
                ("builder".into(), 2.0, "$0.02".into(), "r-builder".into()),
                ("critic".into(), 0.0, "$0".into(), "r-critic".into()),
            ],
        );
        assert_eq!(b.matches("<rect class=\"bar").count(), 2);
        let c = columns(
            "c",
            400.0,
            &[(
                "11-24".into(),
                vec![("st-Completed".into(), 2), ("st-Failed".into(), 0)],
            )],
            &[],
        );
        assert_eq!(c.matches("<rect class=\"col").count(), 1);
        assert_eq!(duration(125_000), "2 min 5 s");
    }
}
