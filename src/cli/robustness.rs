//! `mbag robustness`: the robustness unit tests of `tests/robustness/` (issue 21).
//!
//! # JSON (`robustness run --json FILE`)
//!
//! ```text
//! {
//!   "format": "mbag-robustness/1",
//!   "tests_dir": "tests/robustness", "rollouts": 50,
//!   "pass_rate": 0.8, "variant_floor": 0.5,  // when a test counts as passed
//!   "columns": [{                            // the assistant, then oracle, then noop
//!     "assistant": "az:...",
//!     "tests": [{"id", "category": "SR" | "AR" | "A+MR", "passed": bool,
//!                "rate": {"successes", "n", "rate", "low", "high"},   // Wilson 95%
//!                "cases": [{"case": "base" | "translate [1, 0, 3]" | ..., "rate"}]}],
//!     "categories": [{"category", "tests", "tests_passed", "rate"}],
//!     "tests_passed": 9, "overall": {rate},
//!     "goal_percentage": {"n", "mean", "half_width", "low", "high", ...} | null
//!   }],
//!   "flags": {"bad_tests": [ids the oracle fails], "vacuous_tests": [ids noop passes],
//!             "disagreements": ["... passes more ... but builds less ..."]},
//!   "evaluate": {"humans": [specs], "episodes_per_human": 2, "horizon": 1500} | null
//! }
//! ```

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde::Serialize;

use super::runner_args::RunnerArgs;
use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::nn::{ServiceAgents, ServiceConfig};
use crate::recording::Recording;
use crate::robustness::capture::CaptureSettings;
use crate::robustness::format::{Category, read_suite};
use crate::robustness::suite::{self, ColumnResult, Flags, GoalCheck, SuiteSettings};
use crate::sim::presets::{Game, Movement};

/// The robustness subcommands.
#[derive(Debug, Subcommand)]
pub enum RobustnessCommand {
    /// Run the suite for an assistant beside the `oracle` and `noop` references:
    /// pass rate per test, variant and category with Wilson intervals, the
    /// tests passed, bad tests (the oracle fails them) and vacuous ones (noop
    /// passes them), and the ordinary goal % with held-out human models, flagging
    /// where the two rank assistants differently.
    ///
    /// Example: mbag robustness run --assistant oracle --rollouts 20 --json robustness.json
    Run(RunArgs),
    /// Turn a moment of a recording into a test skeleton: the goal, the world a
    /// few edits earlier, those edits as the history, both players' positions; a
    /// stationary partner and a placeholder pass predicate to edit.
    ///
    /// Example: mbag robustness capture recordings/samples/play.jsonl --step 40 --out tests/robustness/my_test.json
    Capture(CaptureArgs),
}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The recording (.jsonl or .jsonl.gz).
    pub recording: PathBuf,
    /// The step whose end is the test's start (0: before the first step).
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::STEP_INDEX))]
    pub step: usize,
    /// Where to write the test; its file stem is the test's id.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// At least this many of the last edits become the history the assistant
    /// watches (whole steps are kept together).
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::STEP_INDEX))]
    pub history: usize,
    /// The test's horizon in steps.
    #[arg(long, value_name = "STEPS", default_value_t = 100, value_parser = crate::cli::numeric::count::<u64>(1..=crate::robustness::format::MAX_HORIZON))]
    pub horizon: u64,
    /// The category: SR, AR or A+MR.
    #[arg(long, value_name = "CAT", default_value = "SR", value_parser = parse_category)]
    pub category: Category,
    /// The partner as an agent spec [default: a stationary person].
    #[arg(long, value_name = "SPEC")]
    pub partner: Option<AgentSpec>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

fn parse_category(text: &str) -> Result<Category, String> {
    Category::ALL
        .into_iter()
        .find(|c| c.label() == text)
        .ok_or_else(|| format!("{text:?}: the categories are SR, AR and A+MR"))
}

#[derive(Debug, Args)]
#[command(after_help = "\
A test counts as passed when at least 80% of its rollouts pass, every variant
counted, and no variant falls below 50%. The format of a test is documented in
tests/robustness/README.md.

Examples:
  mbag robustness run --assistant oracle --rollouts 20
  mbag robustness run --assistant 'az:models/assistant.json?sims=20' --json r.json
  mbag robustness run --assistant heuristic:random --test sr_wall_gap --eval-episodes 0")]
pub struct RunArgs {
    /// The assistant under test (any agent spec; `oracle` and `heuristic:noop`
    /// are run beside it as references).
    #[arg(long, value_name = "SPEC")]
    pub assistant: AgentSpec,
    /// The folder of tests.
    #[arg(long, value_name = "DIR", default_value = "tests/robustness")]
    pub tests: PathBuf,
    /// Only this test (repeatable).
    #[arg(long = "test", value_name = "ID")]
    pub only: Vec<String>,
    /// Rollouts of each test and of each of its variants.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES))]
    pub rollouts: usize,
    /// Held-out human models for the ordinary evaluation's goal %, comma
    /// separated [default: the five cross-validation folds of the shipped human
    /// model].
    #[arg(long, value_name = "SPEC,...", value_delimiter = ',')]
    pub humans: Vec<AgentSpec>,
    /// Evaluation episodes per human model and column (0: no evaluation).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES_OR_NONE))]
    pub eval_episodes: usize,
    /// Steps of each evaluation episode (held-out houses, the paper's game).
    #[arg(long, value_name = "STEPS", default_value_t = 1500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub eval_horizon: u64,
    /// Write the results as JSON (shape in src/cli/robustness.rs).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// Runs a robustness subcommand.
pub fn run(command: RobustnessCommand) -> anyhow::Result<u8> {
    match command {
        RobustnessCommand::Run(args) => run_suite(args),
        RobustnessCommand::Capture(args) => capture(args),
    }
}

fn capture(args: CaptureArgs) -> anyhow::Result<u8> {
    let id = args
        .out
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|s| s.trim_end_matches(".json").to_owned())
        .context("--out needs a file name")?;
    anyhow::ensure!(
        args.force || !args.out.exists(),
        "{} exists (--force replaces it)",
        args.out.display()
    );
    let rec = Recording::read(&args.recording)?;
    let settings = CaptureSettings {
        id,
        category: args.category,
        step: args.step,
        history: args.history,
        horizon: args.horizon,
        partner: args.partner.map(|p| p.to_string()),
    };
    let test = crate::robustness::capture::capture(&rec, &settings)?;
    let text = crate::robustness::capture::test_text(&test);
    fs::write(&args.out, text).with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "wrote {} ({} history edits); edit its situation, partner and pass predicate, then\n  mbag robustness run --assistant oracle --test {}",
        args.out.display(),
        test["start"]["history"].as_array().map_or(0, Vec::len),
        settings.id
    );
    Ok(0)
}

#[derive(Serialize)]
struct EvaluateNote<'a> {
    humans: &'a [AgentSpec],
    episodes_per_human: usize,
    horizon: u64,
}

#[derive(Serialize)]
struct Report<'a> {
    format: &'static str,
    tests_dir: &'a std::path::Path,
    rollouts: usize,
    pass_rate: f64,
    variant_floor: f64,
    columns: &'a [ColumnResult],
    flags: &'a Flags,
    evaluate: Option<EvaluateNote<'a>>,
}

fn run_suite(args: RunArgs) -> anyhow::Result<u8> {
    let threads = args.runner.threads();
    let mut tests = read_suite(&args.tests)?;
    if !args.only.is_empty() {
        for id in &args.only {
            anyhow::ensure!(
                tests.iter().any(|t| &t.id == id),
                "--test {id}: no test has that id in {}",
                args.tests.display()
            );
        }
        tests.retain(|t| args.only.contains(&t.id));
    }
    anyhow::ensure!(!tests.is_empty(), "no tests in {}", args.tests.display());
    let mut columns = vec![args.assistant.clone()];
    for reference in [AgentSpec::Oracle, "heuristic:noop".parse()?] {
        if !columns.contains(&reference) {
            columns.push(reference);
        }
    }
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        args.runner.device,
        ServiceConfig::default(),
    )));
    let settings = SuiteSettings {
        tests,
        columns,
        rollouts: args.rollouts,
        threads,
    };
    let total: usize = settings.columns.len()
        * settings.rollouts
        * settings
            .tests
            .iter()
            .map(|t| t.cases().len())
            .sum::<usize>();
    println!(
        "mbag robustness run: {} tests from {}, {} rollouts per case, columns {}",
        settings.tests.len(),
        args.tests.display(),
        args.rollouts,
        settings
            .columns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let bar = args.runner.progress(total as u64, "rollouts");
    let start = Instant::now();
    let mut results = suite::run_suite(&settings, &factory, &|| bar.inc(1))?;
    bar.finish_and_clear();
    log::info!("suite ran in {:.1} s", start.elapsed().as_secs_f64());

    let humans: Vec<AgentSpec> = if args.humans.is_empty() {
        crate::agents::defaults::HUMAN_POPULATION
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, _>>()?
    } else {
        args.humans.clone()
    };
    if args.eval_episodes > 0 {
        let check = GoalCheck {
            config: Game::paper()
                .with_horizon(args.eval_horizon)
                .with_movement(Movement::Walking)
                .config()?,
            goals: super::evaluate::goal_config_named("held_out", None)?,
            goals_label: "held_out".into(),
            humans: humans.clone(),
            episodes: args.eval_episodes,
            threads,
        };
        for column in &mut results {
            let assistant = &column.assistant;
            let say = |human: &AgentSpec| {
                println!(
                    "evaluating {assistant} with {human} ({} episodes)",
                    args.eval_episodes
                )
            };
            column.goal_percentage = Some(
                suite::pooled_goal_percentage(assistant, &check, &factory, &say)
                    .with_context(|| format!("evaluating {assistant}"))?,
            );
        }
    }
    let flags = suite::flags(&results);
    print_table(&settings, &results, &flags);
    if let Some(path) = &args.json {
        let report = Report {
            format: "mbag-robustness/1",
            tests_dir: &args.tests,
            rollouts: args.rollouts,
            pass_rate: suite::PASS_RATE,
            variant_floor: suite::VARIANT_FLOOR,
            columns: &results,
            flags: &flags,
            evaluate: (args.eval_episodes > 0).then_some(EvaluateNote {
                humans: &humans,
                episodes_per_human: args.eval_episodes,
                horizon: args.eval_horizon,
            }),
        };
        let text = serde_json::to_string_pretty(&report)?;
        fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(0)
}

fn rate_cell(r: &crate::eval::stats::RateCi) -> String {
    format!(
        "{:>3.0}% [{:>3.0},{:>3.0}]",
        100.0 * r.rate,
        100.0 * r.low,
        100.0 * r.high
    )
}

fn print_table(settings: &SuiteSettings, columns: &[ColumnResult], flags: &Flags) {
    let width = 22;
    print!("{:<28} {:<5}", "test", "cat");
    for c in columns {
        let name = c.assistant.to_string();
        let name = if name.len() > width {
            format!("..{}", &name[name.len() - width + 2..])
        } else {
            name
        };
        print!(" {name:>width$}");
    }
    println!();
    for test in &settings.tests {
        print!("{:<28} {:<5}", test.id, test.category.label());
        for c in columns {
            let t = c.test(&test.id).expect("every column ran every test");
            let mark = if t.passed { '+' } else { ' ' };
            print!(
                " {:>w$}",
                format!("{}{mark}", rate_cell(&t.rate)),
                w = width
            );
        }
        let mut notes = Vec::new();
        if flags.bad_tests.contains(&test.id) {
            notes.push("BAD TEST (the oracle fails it)");
        }
        if flags.vacuous_tests.contains(&test.id) {
            notes.push("VACUOUS (noop passes it)");
        }
        println!("  {}", notes.join("; "));
    }
    println!("{}", "-".repeat(34 + (width + 1) * columns.len()));
    for (k, category) in columns[0].categories.iter().enumerate() {
        print!("{:<28} {:<5}", "category", category.category.label());
        for c in columns {
            let r = &c.categories[k];
            print!(
                " {:>w$}",
                format!("{}/{} {}", r.tests_passed, r.tests, rate_cell(&r.rate)),
                w = width
            );
        }
        println!();
    }
    print!("{:<34}", "all tests");
    for c in columns {
        print!(
            " {:>w$}",
            format!(
                "{}/{} {}",
                c.tests_passed,
                c.tests.len(),
                rate_cell(&c.overall)
            ),
            w = width
        );
    }
    println!();
    if columns.iter().any(|c| c.goal_percentage.is_some()) {
        print!("{:<34}", "evaluate goal % (held-out)");
        for c in columns {
            let cell = c.goal_percentage.as_ref().map_or("-".into(), |g| {
                format!("{:.1} ± {:.1}", 100.0 * g.mean, 100.0 * g.half_width)
            });
            print!(" {cell:>width$}");
        }
        println!();
    }
    println!("(rates: rollouts passed [95% Wilson interval]; + marks a test passed)");
    for d in &flags.disagreements {
        println!("disagreement: {d}");
    }
    if flags.bad_tests.is_empty() && flags.vacuous_tests.is_empty() {
        println!("every test is valid: the oracle passes it and noop does not");
    }
}
