//! `mbag plot`: learning curves of a training run's metrics log, or goal %
//! against steps of evaluations beside the paper's Table 2, as a PNG.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use crate::eval::plot::{Curve, goal_by_step};
use crate::train::log::read_log;
use crate::train::plot::plot_log;

/// Arguments of `mbag plot`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  mbag plot runs/bc/metrics.jsonl --out runs/bc/curves.png
  mbag evaluate --human bc:models/human.json --assistant none --goals held_out --walking \\
      --episodes 24 --json bc.json
  mbag plot bc.json pikl.json --label BC --label piKL --out table2.png")]
pub struct PlotArgs {
    /// What to draw: a metrics log (`metrics.jsonl` in a training run's output
    /// folder; a run still writing it is fine, a cut last line is skipped), or
    /// one or more `mbag evaluate --json` reports (`.json`), drawn as goal %
    /// against steps with 95% bands beside the paper's BC, piKL and people rows.
    #[arg(required = true, value_name = "LOG | REPORT.json")]
    pub inputs: Vec<PathBuf>,
    /// With reports: the legend's name of each, in order (default: its seats
    /// and goals).
    #[arg(long)]
    pub label: Vec<String>,
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

/// Draws the log or the reports; returns the exit code.
pub fn run(args: PlotArgs) -> anyhow::Result<u8> {
    if args.inputs.iter().any(|p| is_report(p)) {
        return plot_reports(&args);
    }
    if !args.label.is_empty() {
        bail!("--label names evaluation reports (.json); a metrics log has its own names");
    }
    let [log] = args.inputs.as_slice() else {
        bail!(
            "one metrics log at a time ({} given); only evaluation reports (.json) share a plot",
            args.inputs.len()
        );
    };
    let mut records = read_log(log)?;
    if !args.only.is_empty() {
        for r in &mut records {
            r.metrics
                .retain(|name, _| args.only.iter().any(|o| name.contains(o.as_str())));
        }
    }
    if records.iter().all(|r| r.metrics.is_empty()) {
        bail!(
            "{}: no metrics to plot{}",
            log.display(),
            if args.only.is_empty() {
                ""
            } else {
                " (after --only)"
            }
        );
    }
    let title = args.title.unwrap_or_else(|| log.display().to_string());
    let (w, h) = plot_log(&records, &title, &args.out)
        .with_context(|| format!("plotting {}", log.display()))?;
    println!(
        "{}: {} records, {w}x{h} pixels",
        args.out.display(),
        records.len()
    );
    Ok(0)
}

/// Goal % against steps of every report, beside the paper's rows.
fn plot_reports(args: &PlotArgs) -> anyhow::Result<u8> {
    if let Some(log) = args.inputs.iter().find(|p| !is_report(p)) {
        bail!(
            "{}: evaluation reports (.json) and a metrics log cannot share a plot",
            log.display()
        );
    }
    if args.label.len() > args.inputs.len() {
        bail!(
            "{} labels for {} reports",
            args.label.len(),
            args.inputs.len()
        );
    }
    let curves = args
        .inputs
        .iter()
        .enumerate()
        .map(|(i, p)| Curve::read(p, args.label.get(i).map(String::as_str)))
        .collect::<Result<Vec<_>, _>>()?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| "goal % built against steps".into());
    goal_by_step(&curves, &title, &args.out)?;
    println!(
        "{}: {} evaluation(s) beside the paper's Table 2",
        args.out.display(),
        curves.len()
    );
    Ok(0)
}

/// Whether `path` names an evaluation report (`.json`) rather than a metrics
/// log (`.jsonl`).
fn is_report(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}
