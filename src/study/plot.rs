//! The report's plots: per measure, a PNG of each condition's mean with its
//! interval, over the participants' own values.

use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::StudyError;
use super::report::Report;

/// The size of one plot in pixels.
pub const PLOT_SIZE: (u32, u32) = (640, 420);

/// Draws one PNG per measure into `dir` (`goal_pct.png`, ...), returning
/// their paths. A measure with no value in any condition is left out.
pub fn plot_report(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, StudyError> {
    std::fs::create_dir_all(dir).map_err(|source| StudyError::Io {
        path: dir.to_owned(),
        source,
    })?;
    crate::train::plot::register_fonts();
    let mut written = Vec::new();
    for (m, measure) in report.measures.iter().enumerate() {
        if measure.conditions.iter().all(|e| e.n == 0) {
            continue;
        }
        let path = dir.join(format!("{}.png", measure.id));
        draw(report, m, &path).map_err(|message| StudyError::Plot {
            path: path.clone(),
            message,
        })?;
        written.push(path);
    }
    Ok(written)
}

fn draw(report: &Report, m: usize, path: &Path) -> Result<(), String> {
    let measure = &report.measures[m];
    let k = report.conditions.len();
    // Each participant's value per condition (report order).
    let mut points: Vec<(usize, f64)> = Vec::new();
    for s in &report.sessions {
        let Some(&v) = s.values.get(&measure.id) else {
            continue;
        };
        let Some(c) = report.conditions.iter().position(|c| c.label == s.label) else {
            continue;
        };
        if v.is_finite() {
            points.push((c, v));
        }
    }
    let mut lo = f64::MAX;
    let mut hi = f64::MIN;
    for v in points.iter().map(|p| p.1).chain(
        measure
            .conditions
            .iter()
            .flat_map(|e| [e.low, e.high, e.mean]),
    ) {
        if v.is_finite() {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if lo > hi {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (lo, hi) = (lo - pad, hi + pad);
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = BitMapBackend::new(path, PLOT_SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let pct = (report.level * 100.0).round();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{} (mean, {pct}% interval)", measure.name),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(56)
        // plotters' integer ranges include their end: 0..k-1 is k segments.
        .build_cartesian_2d((0..k.saturating_sub(1)).into_segmented(), lo..hi)
        .map_err(|e| err(&e))?;
    let labels: Vec<String> = report
        .conditions
        .iter()
        .map(|c| {
            format!(
                "{} ({})",
                c.label.trim_start_matches("Assistant "),
                c.assistant
            )
        })
        .collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                labels.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        })
        .y_labels(8)
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(|e| err(&e))?;
    let grey = RGBColor(150, 160, 170);
    chart
        .draw_series(
            points
                .iter()
                .map(|&(c, v)| Circle::new((SegmentValue::CenterOf(c), v), 3, grey.filled())),
        )
        .map_err(|e| err(&e))?;
    for (c, e) in measure.conditions.iter().enumerate() {
        if !e.mean.is_finite() {
            continue;
        }
        let colour = Palette99::pick(c).to_rgba();
        let at = SegmentValue::CenterOf(c);
        if e.low.is_finite() && e.high.is_finite() {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(at.clone(), e.low), (at.clone(), e.high)],
                    colour.stroke_width(3),
                )))
                .map_err(|e| err(&e))?;
            // Caps: short horizontal strokes in pixels around the ends.
            for end in [e.low, e.high] {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((at.clone(), end))
                            + PathElement::new(vec![(-10, 0), (10, 0)], colour.stroke_width(3)),
                    ))
                    .map_err(|e| err(&e))?;
            }
        }
        chart
            .draw_series(std::iter::once(Circle::new(
                (at, e.mean),
                7,
                colour.filled(),
            )))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
