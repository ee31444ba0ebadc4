//! The calibration plot: in air cells, the model's probability for its best
//! block against how often that block is the goal's, one point per bin (its
//! area by the cells in it), beside the diagonal of perfect calibration and the
//! 2/3 line above which a place pays.

use std::path::Path;

use plotters::prelude::*;

use super::score::Scores;

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("calibration plot {path}: {message}")]
pub struct PlotError {
    path: String,
    message: String,
}

/// Draws `scores`' calibration table into a PNG at `out`.
pub fn calibration(scores: &Scores, title: &str, out: &Path) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError {
        path: out.display().to_string(),
        message: e.to_string(),
    };
    crate::train::plot::register_fonts();
    let root = BitMapBackend::new(out, (640, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("predicted probability of the best block (air cells)")
        .y_desc("share whose goal is that block")
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.4)))
        .map_err(|e| err(&e))?
        .label("perfect calibration")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.4)));
    chart
        .draw_series(LineSeries::new(
            [(2.0 / 3.0, 0.0), (2.0 / 3.0, 1.0)],
            RED.mix(0.5),
        ))
        .map_err(|e| err(&e))?
        .label("p = 2/3: a place pays above")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.mix(0.5)));
    let bins: Vec<_> = scores
        .calibration
        .iter()
        .filter(|b| b.cells > 0 && b.observed.is_finite())
        .collect();
    let most = bins.iter().map(|b| b.cells).max().unwrap_or(1) as f64;
    chart
        .draw_series(LineSeries::new(
            bins.iter().map(|b| (b.predicted, b.observed)),
            BLUE.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label("goal model (point area: cells in the bin)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(bins.iter().map(|b| {
            // Area in proportion to the cells in the bin, at least visible.
            let r = (3.0 + 12.0 * (b.cells as f64 / most).sqrt()) as i32;
            Circle::new((b.predicted, b.observed), r, BLUE.mix(0.5).filled())
        }))
        .map_err(|e| err(&e))?;
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
