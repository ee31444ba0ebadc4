//! `mbag dataset index|validate|stats|datasheet`: a folder of recordings as one
//! dataset (the logic is `crate::dataset`).

use std::io::IsTerminal;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::cli::numeric::count;
use crate::dataset::validate::default_manifest;
use crate::dataset::{
    DatasetTable, GroupBy, ValidateReport, ValidateSettings, datasheet, index, recording_files,
    validate,
};

/// Seconds allowed between the parts of a split episode: up to a day.
const GAP_SECONDS: RangeInclusive<u64> = 1..=86_400;

/// The dataset subcommands.
#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Write the dataset's manifest: one JSON line per recording under DIR
    /// (searched recursively) with its episode id, file, goal (a hash of the
    /// goal grid, and the source's house name), condition, participant, models
    /// and their SHA-256, duration, steps, how it ended, final goal %, actions
    /// and chat counts, and a hash of its steps. The same files always give
    /// the same manifest. Unreadable files are named and left out (exit 1).
    ///
    /// Examples:
    ///   mbag recording convert --out /tmp/human
    ///   mbag dataset index /tmp/human                 # writes /tmp/human/manifest.jsonl
    ///   mbag dataset index recordings/samples --out /tmp/samples_manifest.jsonl
    #[command(verbatim_doc_comment)]
    Index(IndexArgs),
    /// Check a dataset: every recording reads and replays exactly through the
    /// simulator; no episode id and no sequence of steps is in two files; the
    /// manifest lists exactly the files there (orphans, missing and changed
    /// files); no episode is split over several files (same participant, goal
    /// and condition, consecutive in time, the earlier file not ended by the
    /// env). Prints each problem with its file(s); exit status 1 if there is any.
    ///
    /// Examples:
    ///   mbag dataset validate /tmp/human
    ///   mbag dataset validate recordings/samples --manifest /tmp/samples_manifest.jsonl
    ///   mbag dataset validate /data/study --split-gap 120 --json problems.json
    #[command(verbatim_doc_comment)]
    Validate(ValidateArgs),
    /// A table in the style of BEDD's Table 1, one row per condition (or per
    /// goal): episodes, participants, success rate (the goal was built) with
    /// its 95% Wilson interval, mean episode length in seconds and steps, total
    /// hours, actions per minute (place/break/move) of the human and assistant
    /// seats, and chat messages with their intent flags.
    ///
    /// Examples:
    ///   mbag dataset stats /tmp/human
    ///   mbag dataset stats /tmp/human --by goal
    ///   mbag dataset stats /tmp/human --json human_stats.json
    #[command(verbatim_doc_comment)]
    Stats(StatsArgs),
    /// Write a Markdown datasheet ("Datasheets for Datasets", in the sections
    /// of BEDD's appendix B): what the recordings answer is filled in (counts,
    /// conditions, participants, goals, dates, durations, models with hashes,
    /// and the problems `validate` finds as the errata); the rest is left as
    /// `TODO (fill in by hand): ...` prompts.
    ///
    /// Examples:
    ///   mbag dataset datasheet /tmp/human               # writes /tmp/human/DATASHEET.md
    ///   mbag dataset datasheet /tmp/human --out /tmp/human_datasheet.md
    #[command(verbatim_doc_comment)]
    Datasheet(DatasheetArgs),
}

/// Arguments of `mbag dataset index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The dataset's folder.
    pub dir: PathBuf,
    /// Where to write the manifest [default: DIR/manifest.jsonl].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The checks `validate` and `datasheet` share.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The manifest to check the files against [default: DIR/manifest.jsonl].
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Longest pause, in seconds, between the last step of one file and the
    /// first of the next for both to be parts of one split episode.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = count::<u64>(GAP_SECONDS))]
    pub split_gap: u64,
    /// Only read the files and check across them; skip replaying each one
    /// through the simulator.
    #[arg(long)]
    pub no_replay: bool,
}

impl CheckArgs {
    fn manifest(&self, dir: &Path) -> PathBuf {
        self.manifest
            .clone()
            .unwrap_or_else(|| default_manifest(dir))
    }

    fn settings(&self) -> ValidateSettings {
        ValidateSettings {
            split_gap_s: self.split_gap as f64,
            replay: !self.no_replay,
        }
    }
}

/// Arguments of `mbag dataset validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The dataset's folder.
    pub dir: PathBuf,
    /// The checks.
    #[command(flatten)]
    pub check: CheckArgs,
    /// Also write the problems as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Rows of `mbag dataset stats`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum By {
    /// One row per condition.
    Condition,
    /// One row per goal house.
    Goal,
}

/// Arguments of `mbag dataset stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The dataset's folder.
    pub dir: PathBuf,
    /// What the rows are.
    #[arg(long, value_enum, default_value = "condition")]
    pub by: By,
    /// Also write the table as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `mbag dataset datasheet`.
#[derive(Debug, Args)]
pub struct DatasheetArgs {
    /// The dataset's folder.
    pub dir: PathBuf,
    /// Where to write the datasheet [default: DIR/DATASHEET.md].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The checks whose problems become the errata.
    #[command(flatten)]
    pub check: CheckArgs,
}

/// Runs a dataset subcommand; returns the exit code.
pub fn run(command: DatasetCommand) -> anyhow::Result<u8> {
    match command {
        DatasetCommand::Index(args) => run_index(args),
        DatasetCommand::Validate(args) => run_validate(args),
        DatasetCommand::Stats(args) => run_stats(args),
        DatasetCommand::Datasheet(args) => run_datasheet(args),
    }
}

fn bar(len: usize, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::new(len as u64).with_style(
        ProgressStyle::with_template(&format!(
            "[{{bar:30}}] {{pos}}/{{len}} {what}, {{elapsed}} ({{msg}})"
        ))
        .expect("a valid template"),
    )
}

/// The recordings of `dir`, none of the manifests.
fn files_of(dir: &Path, manifest: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let files = recording_files(dir, &[manifest.to_owned(), default_manifest(dir)])?;
    anyhow::ensure!(
        !files.is_empty(),
        "no recordings (*.jsonl, *.jsonl.gz) under {}",
        dir.display()
    );
    Ok(files)
}

fn run_index(args: IndexArgs) -> anyhow::Result<u8> {
    let out = args.out.unwrap_or_else(|| default_manifest(&args.dir));
    let files = files_of(&args.dir, &out)?;
    let bar = bar(files.len(), "files read");
    let result = index(&args.dir, &files, &mut |path| {
        bar.set_message(path.display().to_string());
        bar.inc(1);
    });
    bar.finish_and_clear();
    for u in &result.unreadable {
        println!("SKIP {}: {}", u.file, u.error);
    }
    result.manifest.write(&out)?;
    let steps: u64 = result.manifest.episodes.iter().map(|e| e.steps).sum();
    println!(
        "{} episodes ({steps} steps) indexed into {}{}",
        result.manifest.episodes.len(),
        out.display(),
        if result.unreadable.is_empty() {
            String::new()
        } else {
            format!("; {} unreadable files left out", result.unreadable.len())
        }
    );
    Ok(u8::from(!result.unreadable.is_empty()))
}

/// Validates with a progress bar.
fn check(dir: &Path, args: &CheckArgs) -> anyhow::Result<ValidateReport> {
    let manifest = args.manifest(dir);
    let files = files_of(dir, &manifest)?;
    let bar = bar(
        files.len(),
        if args.no_replay {
            "files read"
        } else {
            "files replayed"
        },
    );
    let report = validate(dir, &manifest, &args.settings(), &mut |path| {
        bar.set_message(path.display().to_string());
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    Ok(report)
}

fn run_validate(args: ValidateArgs) -> anyhow::Result<u8> {
    let report = check(&args.dir, &args.check)?;
    for p in &report.problems {
        println!("{:<17} {p}", p.kind());
    }
    println!(
        "{} files{}; {}",
        report.files,
        if args.check.no_replay {
            " read".to_owned()
        } else {
            format!(", {} steps replayed", report.steps_replayed)
        },
        match report.problems.len() {
            0 => "no problems".to_owned(),
            1 => "1 problem".to_owned(),
            n => format!("{n} problems"),
        }
    );
    if let Some(path) = &args.json {
        let value = json!({
            "format": "mbag-dataset-validate/1",
            "files": report.files,
            "steps_replayed": report.steps_replayed,
            "problems": report.problems,
        });
        std::fs::write(path, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(u8::from(!report.passed()))
}

fn run_stats(args: StatsArgs) -> anyhow::Result<u8> {
    let files = files_of(&args.dir, &default_manifest(&args.dir))?;
    let bar = bar(files.len(), "files read");
    let result = index(&args.dir, &files, &mut |path| {
        bar.set_message(path.display().to_string());
        bar.inc(1);
    });
    bar.finish_and_clear();
    let by = match args.by {
        By::Condition => GroupBy::Condition,
        By::Goal => GroupBy::Goal,
    };
    let table = DatasetTable::of(&result.manifest.episodes, by);
    print!("{}", table.to_text());
    println!(
        "success: the goal was built (95% Wilson interval); len s: mean over episodes with \
         step times; per min: place/break/move of the human and assistant seats; chat: \
         messages, accept/reject/inquiry/none"
    );
    if !result.unreadable.is_empty() {
        println!(
            "{} unreadable files left out (`mbag dataset validate` names them)",
            result.unreadable.len()
        );
    }
    if let Some(path) = &args.json {
        let mut value = serde_json::to_value(&table)?;
        value["format"] = json!("mbag-dataset-stats/1");
        std::fs::write(path, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(0)
}

fn run_datasheet(args: DatasheetArgs) -> anyhow::Result<u8> {
    let report = check(&args.dir, &args.check)?;
    let name = std::fs::canonicalize(&args.dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| args.dir.display().to_string());
    let text = datasheet::render(&name, &report);
    let out = args.out.unwrap_or_else(|| args.dir.join("DATASHEET.md"));
    std::fs::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {}: {} episodes, {} problems in the errata, {} answers left to fill in by hand",
        out.display(),
        report.manifest.episodes.len(),
        report.problems.len(),
        text.matches(datasheet::TODO).count()
    );
    Ok(0)
}
