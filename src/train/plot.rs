//! Learning curves from a metrics log ([`super::log`]) as a PNG: one panel per
//! metric family, every metric of the family a line over training steps.
//!
//! Families group a metric's name after its first segment, so `train/loss` and
//! `valid/loss` share the `loss` panel, and `valid/accuracy/place` joins the other
//! `accuracy/*` lines. Text is drawn with DejaVu Sans bundled in the binary (the
//! `dejavu` crate), so plots render on machines without any fonts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use super::error::TrainError;
use super::log::LogRecord;

/// The size of one panel in pixels.
pub const PANEL_SIZE: (u32, u32) = (560, 380);

/// One panel: a title and its lines, each `(name, [(step, value)])`.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// The family's name (`loss`, `accuracy`, `goal_pct`, ...).
    pub title: String,
    /// The lines, by full metric name, finite points only.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// The family a metric name belongs to.
pub fn family(name: &str) -> &str {
    let rest = match name.split_once('/') {
        Some((_, rest)) => rest,
        None => name,
    };
    rest.split('/').next().unwrap_or(rest)
}

/// Groups a log's metrics into panels (families in name order, empty ones left out).
pub fn panels(records: &[LogRecord]) -> Vec<Panel> {
    let mut by_family: BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>> = BTreeMap::new();
    for record in records {
        for (name, value) in &record.metrics {
            if !value.0.is_finite() {
                continue;
            }
            by_family
                .entry(family(name).to_owned())
                .or_default()
                .entry(name.clone())
                .or_default()
                .push((record.step as f64, value.0));
        }
    }
    by_family
        .into_iter()
        .map(|(title, series)| Panel {
            title,
            series: series.into_iter().collect(),
        })
        .collect()
}

/// Registers the bundled DejaVu Sans under plotters' family names (once per
/// process); every plot of mbag calls it before drawing text.
pub(crate) fn register_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            // The bundled font is valid TrueType, so this cannot fail.
            let _ = register_font(family, FontStyle::Normal, dejavu::sans::regular());
            let _ = register_font(family, FontStyle::Bold, dejavu::sans::bold());
        }
    });
}

/// Draws `records` into a PNG at `out`: a grid of [`PANEL_SIZE`] panels, about
/// square. Returns the image's size.
pub fn plot_log(records: &[LogRecord], title: &str, out: &Path) -> Result<(u32, u32), TrainError> {
    let panels = panels(records);
    if panels.is_empty() {
        return Err(TrainError::Plot {
            path: out.to_owned(),
            message: "the log has no finite metric to draw".into(),
        });
    }
    register_fonts();
    let cols = (panels.len() as f64).sqrt().ceil() as usize;
    let rows = panels.len().div_ceil(cols);
    let header = 40;
    let size = (
        PANEL_SIZE.0 * cols as u32,
        PANEL_SIZE.1 * rows as u32 + header,
    );
    let err = |e: &dyn std::fmt::Display| TrainError::Plot {
        path: out.to_owned(),
        message: e.to_string(),
    };
    let root = BitMapBackend::new(out, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(header);
    top.titled(title, ("sans-serif", 24).into_font())
        .map_err(|e| err(&e))?;
    let areas = body.split_evenly((rows, cols));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        draw_panel(panel, area).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(size)
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let points = panel.series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0) * 0.05).max(1e-6);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(52)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .x_labels(6)
        .y_labels(6)
        .label_style(("sans-serif", 12))
        .draw()?;
    for (i, (name, points)) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        if points.len() == 1 {
            // A line needs two points; a lone value (one validation) is a dot.
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_group_train_and_valid_lines() {
        assert_eq!(family("train/loss"), "loss");
        assert_eq!(family("valid/accuracy/place"), "accuracy");
        assert_eq!(family("goal_pct"), "goal_pct");
    }

    #[test]
    fn a_log_plots_as_a_png_of_one_panel_per_family() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<LogRecord> = (0..20u64)
            .map(|step| LogRecord {
                step,
                epoch: 0,
                wall_s: step as f64,
                metrics: [
                    ("train/loss", 3.0 / (1.0 + step as f64)),
                    ("valid/loss", 3.5 / (1.0 + step as f64)),
                    ("valid/accuracy", step as f64 / 20.0),
                    ("eval/goal_pct", f64::NAN),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), crate::jsonl::Float(v)))
                .collect(),
            })
            .collect();
        let got = panels(&records);
        assert_eq!(
            got.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(),
            ["accuracy", "loss"]
        );
        let out = dir.path().join("p.png");
        let (w, h) = plot_log(&records, "test", &out).unwrap();
        assert_eq!((w, h), (2 * PANEL_SIZE.0, PANEL_SIZE.1 + 40));
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), w);
    }
}
