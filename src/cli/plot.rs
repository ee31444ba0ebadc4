//! `mbag plot`: learning curves of a training run's metrics log as a PNG.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;

use crate::train::log::read_log;
use crate::train::plot::plot_log;

/// Arguments of `mbag plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The metrics log (`metrics.jsonl` in a training run's output folder). A run
    /// still writing it is fine: a cut last line is skipped.
    pub log: PathBuf,
    /// The PNG to write.
    #[arg(long, short)]
    pub out: PathBuf,
    /// Only metrics whose name contains one of these (repeatable), e.g.
    /// `--only loss --only goal`.
    #[arg(long)]
    pub only: Vec<String>,
    /// The title above the panels (default: the log's path).
    #[arg(long)]
    pub title: Option<String>,
}

/// Draws the log; returns the exit code.
pub fn run(args: PlotArgs) -> anyhow::Result<u8> {
    let mut records = read_log(&args.log)?;
    if !args.only.is_empty() {
        for r in &mut records {
            r.metrics
                .retain(|name, _| args.only.iter().any(|o| name.contains(o.as_str())));
        }
    }
    if records.iter().all(|r| r.metrics.is_empty()) {
        bail!(
            "{}: no metrics to plot{}",
            args.log.display(),
            if args.only.is_empty() {
                ""
            } else {
                " (after --only)"
            }
        );
    }
    let title = args.title.unwrap_or_else(|| args.log.display().to_string());
    let (w, h) = plot_log(&records, &title, &args.out)
        .with_context(|| format!("plotting {}", args.log.display()))?;
    println!(
        "{}: {} records, {w}x{h} pixels",
        args.out.display(),
        records.len()
    );
    Ok(0)
}
