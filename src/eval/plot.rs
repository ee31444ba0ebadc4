//! Goal % against steps, the paper's Table 2 as a picture: one line with its
//! 95% band per evaluation (`mbag evaluate --json` reports), beside the paper's
//! BC-combined, piKL-combined and people's rows.
//!
//! Each report holds every episode's goal % minute by minute (75 steps at the
//! study's 0.8 s per step); the curve is their mean with its t interval at each
//! minute that every episode reached.

use std::path::Path;

use plotters::prelude::*;
use serde::Deserialize;

use super::stats::MeanCi;

/// Steps in a minute of the human study (0.8 s per step).
pub const STEPS_PER_MINUTE: u64 = 75;

/// A published row of goal % after 225, 375, 750 and 1,500 steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperRow {
    /// What it measured.
    pub label: &'static str,
    /// Goal % (0 to 100) at [`PAPER_STEPS`].
    pub goal_percent: [f64; 4],
}

/// The step counts of the paper's Table 2 (3, 5, 10 and 20 minutes).
pub const PAPER_STEPS: [u64; 4] = [225, 375, 750, 1500];

/// The paper's Table 2 rows that mbag's human models are measured against.
pub const PAPER_ROWS: [PaperRow; 3] = [
    PaperRow {
        label: "paper: BC-combined",
        goal_percent: [9.0, 17.0, 41.0, 71.0],
    },
    PaperRow {
        label: "paper: piKL-combined",
        goal_percent: [26.0, 44.0, 75.0, 91.0],
    },
    PaperRow {
        label: "paper: people",
        goal_percent: [25.0, 42.0, 80.0, 95.0],
    },
];

/// One evaluation's curve: goal % (0 to 100) by step with a 95% interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The legend's name for it.
    pub label: String,
    /// `(step, mean, low, high)`, in step order.
    pub points: Vec<(u64, f64, f64, f64)>,
}

/// Why a curve could not be read or drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The report could not be read.
    #[error("{path}: {message}")]
    Report {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// Drawing failed.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The PNG.
        path: String,
        /// The backend's error.
        message: String,
    },
}

/// The parts of an `mbag evaluate --json` report a curve needs.
#[derive(Deserialize)]
struct Report {
    format: String,
    human: String,
    assistant: String,
    goals: String,
    per_episode: Vec<ReportEpisode>,
}

#[derive(Deserialize)]
struct ReportEpisode {
    goal_percentage_by_minute: Vec<f64>,
}

impl Curve {
    /// The curve of the report at `path`, named `label` or else by its seats
    /// and goals.
    pub fn read(path: &Path, label: Option<&str>) -> Result<Self, PlotError> {
        let fail = |message: String| PlotError::Report {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let report: Report = serde_json::from_str(&text)
            .map_err(|e| fail(format!("not an `mbag evaluate --json` report: {e}")))?;
        if report.format != "mbag-evaluate/1" {
            return Err(fail(format!(
                "format {:?}, expected mbag-evaluate/1",
                report.format
            )));
        }
        let label = label.map_or_else(
            || format!("{} + {} ({})", report.human, report.assistant, report.goals),
            str::to_owned,
        );
        let by_minute: Vec<&[f64]> = report
            .per_episode
            .iter()
            .map(|e| e.goal_percentage_by_minute.as_slice())
            .collect();
        Self::of_episodes(label, &by_minute).ok_or_else(|| fail("no episodes".into()))
    }

    /// The curve of episodes' goal fractions by minute, up to the last minute
    /// every episode reached; `None` without episodes.
    pub fn of_episodes(label: String, by_minute: &[&[f64]]) -> Option<Self> {
        let minutes = by_minute.iter().map(|m| m.len()).min()?;
        let points = (0..minutes)
            .map(|m| {
                let ci = MeanCi::of(by_minute.iter().map(|e| e[m]));
                let spread = if ci.half_width.is_finite() {
                    ci.half_width
                } else {
                    0.0
                };
                (
                    m as u64 * STEPS_PER_MINUTE,
                    100.0 * ci.mean,
                    100.0 * (ci.mean - spread),
                    100.0 * (ci.mean + spread),
                )
            })
            .collect();
        Some(Self { label, points })
    }
}

/// The evaluations' colours, apart from the paper rows' red, green and black.
const CURVE_COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Draws `curves` with their bands beside [`PAPER_ROWS`] into a PNG at `out`.
pub fn goal_by_step(curves: &[Curve], title: &str, out: &Path) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: out.display().to_string(),
        message: e.to_string(),
    };
    crate::train::plot::register_fonts();
    let last = curves
        .iter()
        .filter_map(|c| c.points.last().map(|p| p.0))
        .chain([PAPER_STEPS[3]])
        .max()
        .unwrap_or(PAPER_STEPS[3]);
    let root = BitMapBackend::new(out, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d(0u64..last, 0.0..100.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("steps (75 a minute)")
        .y_desc("goal % built")
        .draw()
        .map_err(|e| err(&e))?;
    // The paper's rows in fixed colours; evaluations take the palette's.
    let paper_colours = [RED, GREEN, BLACK];
    for (row, colour) in PAPER_ROWS.iter().zip(paper_colours) {
        let colour = colour.mix(0.7);
        let points: Vec<(u64, f64)> = PAPER_STEPS.iter().copied().zip(row.goal_percent).collect();
        let style = colour.stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))
            .map_err(|e| err(&e))?
            .label(row.label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        chart
            .draw_series(points.iter().map(|&p| Cross::new(p, 5, style)))
            .map_err(|e| err(&e))?;
    }
    for (i, curve) in curves.iter().enumerate() {
        let colour = CURVE_COLOURS[i % CURVE_COLOURS.len()];
        let band: Vec<(u64, f64)> = curve
            .points
            .iter()
            .map(|p| (p.0, p.3))
            .chain(curve.points.iter().rev().map(|p| (p.0, p.2)))
            .collect();
        chart
            .draw_series([Polygon::new(band, colour.mix(0.15).filled())])
            .map_err(|e| err(&e))?;
        let style = colour.stroke_width(2);
        chart
            .draw_series(LineSeries::new(
                curve.points.iter().map(|p| (p.0, p.1)),
                style,
            ))
            .map_err(|e| err(&e))?
            .label(curve.label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_is_the_mean_of_every_episode_up_to_the_shortest() {
        let a: &[f64] = &[0.0, 0.2, 0.4];
        let b: &[f64] = &[0.0, 0.4];
        let c = Curve::of_episodes("x".into(), &[a, b]).unwrap();
        assert_eq!(c.points.len(), 2);
        assert_eq!(c.points[1].0, STEPS_PER_MINUTE);
        assert!((c.points[1].1 - 30.0).abs() < 1e-9);
        assert!(c.points[1].2 < 30.0 && c.points[1].3 > 30.0);
        assert!(Curve::of_episodes("none".into(), &[]).is_none());
    }

    #[test]
    fn a_report_draws_beside_the_paper() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("eval.json");
        std::fs::write(
            &report,
            serde_json::json!({
                "format": "mbag-evaluate/1", "human": "bc:h.json", "assistant": "none",
                "goals": "held_out",
                "per_episode": [{"goal_percentage_by_minute": [0.0, 0.1, 0.3]},
                                {"goal_percentage_by_minute": [0.0, 0.2, 0.5]}]
            })
            .to_string(),
        )
        .unwrap();
        let curve = Curve::read(&report, None).unwrap();
        assert_eq!(curve.label, "bc:h.json + none (held_out)");
        let png = dir.path().join("goal.png");
        goal_by_step(&[curve], "test", &png).unwrap();
        assert!(std::fs::metadata(&png).unwrap().len() > 1000);
        std::fs::write(&report, "{\"format\": \"other\"}").unwrap();
        let err = Curve::read(&report, None).unwrap_err().to_string();
        assert!(
            err.contains("not an `mbag evaluate --json` report"),
            "{err}"
        );
    }
}
