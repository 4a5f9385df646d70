//! The load report as a chart and as text.

use super::{LoadLevel, LoadReport};
use crate::BenchError;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// A line's colour per class, in the order the classes come.
const COLORS: [RGBColor; 8] = [
    RED,
    BLUE,
    RGBColor(0, 140, 0),
    MAGENTA,
    CYAN,
    BLACK,
    RGBColor(200, 120, 0),
    RGBColor(120, 120, 120),
];

fn drawing(e: &dyn std::fmt::Display) -> BenchError {
    BenchError::Measure(e.to_string().into())
}

/// The chart: p99 per class against clients, a panel per transport, on a
/// log scale (a subprocess hook and a Rust guest differ a hundredfold).
pub(super) fn chart(report: &LoadReport, path: &Path) -> Result<(), BenchError> {
    let root = SVGBackend::new(path, (900, 1200)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| drawing(&e))?;
    let mut levels: Vec<usize> = report.levels.iter().map(|l| l.clients).collect();
    levels.dedup();
    let panels = [
        (
            "socket",
            "closed loop",
            "p99 per class, closed loop, over the socket",
        ),
        (
            "http",
            "closed loop",
            "p99 per class, closed loop, over HTTP",
        ),
        ("socket", "paced", "p99 per class, paced, over the socket"),
    ];
    for (area, (transport, mode, title)) in root.split_evenly((3, 1)).iter().zip(panels) {
        let rows: Vec<&LoadLevel> = report
            .levels
            .iter()
            .filter(|l| l.transport == transport && l.mix == "mix" && l.mode == mode)
            .collect();
        panel(area, &rows, &levels, title)?;
    }
    root.present().map_err(|e| drawing(&e))?;
    Ok(())
}

/// One transport's panel: a line per class through `rows`, one per level.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    rows: &[&LoadLevel],
    levels: &[usize],
    title: &str,
) -> Result<(), BenchError> {
    let names: Vec<String> = rows
        .first()
        .map(|r| r.classes.iter().map(|c| c.class.clone()).collect())
        .unwrap_or_default();
    let all = rows
        .iter()
        .flat_map(|r| r.classes.iter().map(|c| c.p99_us / 1e3))
        .filter(|v| v.is_finite() && *v > 0.0);
    let y_max = all.clone().fold(0.01, f64::max) * 4.0;
    let y_min = all.fold(f64::INFINITY, f64::min).min(y_max / 10.0) / 2.0;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(
            -0.2..(levels.len().max(1) as f64 - 0.8),
            (y_min..y_max).log_scale(),
        )
        .map_err(|e| drawing(&e))?;
    chart
        .configure_mesh()
        .x_desc("concurrent clients")
        .x_labels(levels.len().max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            levels
                .get(i as usize)
                .filter(|_| (x - i).abs() < 0.01 && i >= 0.0)
                .map_or_else(String::new, ToString::to_string)
        })
        .y_desc("ms")
        .draw()
        .map_err(|e| drawing(&e))?;
    for (n, name) in names.iter().enumerate() {
        let color = COLORS[n % COLORS.len()];
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| {
                let x = levels.iter().position(|&c| c == r.clients)? as f64;
                let c = r.classes.iter().find(|c| &c.class == name)?;
                (c.p99_us > 0.0).then_some((x, c.p99_us / 1e3))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| drawing(&e))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| drawing(&e))?;
    Ok(())
}

impl LoadReport {
    /// The report as text, for a person.
    pub fn render(&self, width: Option<u16>) -> String {
        let mut out = format!(
            "toolgate bench --load: {:.1} s per run{}\nmachine: {} ({} cores), load {} → {}\n\n{}\n\n",
            self.window_s,
            if self.debug_build {
                " — a debug build"
            } else {
                ""
            },
            self.machine.cpu,
            self.machine.cores,
            self.load_before,
            self.load_after,
            self.table(width),
        );
        out.push_str(
            "fairness (the fast class's p99 with every class in flight, over its p99 alone, \
             socket; paced is the one judged):\n",
        );
        for f in &self.fairness {
            out.push_str(&format!(
                "  {:<11} {:>4} clients: {:.3} ms / {:.3} ms = {:.2}× ({:.2}× from each call's start)\n",
                f.mode,
                f.clients,
                f.mixed_p99_us / 1e3,
                f.alone_p99_us / 1e3,
                f.ratio,
                f.started_ratio
            ));
        }
        out.push_str(&format!(
            "server RSS: {:.1} MiB warm, {:.1} MiB once the last level settled\n",
            self.warm_rss_kib as f64 / 1024.0,
            self.settled_rss_kib as f64 / 1024.0
        ));
        for s in &self.skipped {
            out.push_str(&format!("skipped: {s}\n"));
        }
        for l in &self.levels {
            for e in &l.error_examples {
                out.push_str(&format!(
                    "error ({} {} clients): {e}\n",
                    l.transport, l.clients
                ));
            }
        }
        out.push_str("\ngoals:\n");
        for g in &self.goals {
            let met = if g.met { "met" } else { "NOT MET" };
            out.push_str(&format!("  [{met}] {}: {}\n", g.goal, g.measured));
        }
        out.push_str(&format!(
            "\nreport: {}\nchart: {}",
            self.json_path.display(),
            self.chart_path.display()
        ));
        out
    }

    /// A row per class per level; a level's own columns on its first row.
    fn table(&self, width: Option<u16>) -> comfy_table::Table {
        let mut table = crate::report::new_table(
            width,
            &[
                "transport",
                "mix",
                "mode",
                "clients",
                "calls/s",
                "class",
                "p50 ms",
                "p99 ms",
                "p99.9 ms",
                "late p99 ms",
                "errors",
                "not taken",
                "peak RSS MiB",
                "peak fds",
            ],
        );
        for l in &self.levels {
            for (i, c) in l.classes.iter().enumerate() {
                let on_first = |s: String| if i == 0 { s } else { String::new() };
                table.add_row(vec![
                    on_first(l.transport.clone()),
                    on_first(l.mix.clone()),
                    on_first(match l.offered_per_s {
                        Some(rate) => format!("paced {rate:.0}/s"),
                        None => l.mode.clone(),
                    }),
                    on_first(l.clients.to_string()),
                    on_first(format!("{:.0}", l.calls_per_s)),
                    c.class.clone(),
                    format!("{:.3}", c.p50_us / 1e3),
                    format!("{:.3}", c.p99_us / 1e3),
                    format!("{:.3}", c.p999_us / 1e3),
                    format!("{:.3}", c.late_p99_us / 1e3),
                    on_first(l.errors.to_string()),
                    on_first(l.not_taken.to_string()),
                    on_first(format!("{:.1}", l.peak_rss_kib as f64 / 1024.0)),
                    on_first(l.peak_fds.to_string()),
                ]);
            }
        }
        table
    }
}
