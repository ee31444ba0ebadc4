//! `mbag watch-help`: an assistant watches a demonstration of a goal, then helps
//! a human model build it from a different start (`eval::watch_help`).
//!
//! # JSON (`--json FILE`)
//!
//! ```text
//! {"format": "mbag-watch-help/1", "human": SPEC, "demos": [names], "episodes": N,
//!  "horizon": H, "seed": S,
//!  "columns": [{"helper": "alone" | SPEC | "random-goal",
//!               "success": {"successes", "n", "rate", "low", "high"},
//!               "speedup", "length", "reward", "conflicts":
//!                   {"n", "mean", "std", "half_width", "low", "high", ...},
//!               "precision", "recall": mean-with-interval or null (no belief),
//!               "episodes": [{"demo", "success", "length", "speedup", "reward",
//!                             "conflicts", "precision", "recall"}]}]}
//! ```

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use super::runner_args::RunnerArgs;
use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::eval::stats::MeanCi;
use crate::eval::watch_help::{self, HelpSummary, Helper, WatchHelpSettings};
use crate::nn::{ServiceAgents, ServiceConfig};

#[derive(Debug, Args)]
#[command(after_help = "\
Columns: alone (the human model by itself, the speedup's reference), heuristic:random,
oracle (shown the true goal), random-goal (the oracle's builder given another
demonstration's goal), and the assistant under test. Speedup is L_alone / L_help - 1,
lengths being the steps to build the goal (the horizon when it was not built);
conflicts count places and breaks of a cell the other player touched last; precision
and recall compare the goal the helper believes in after watching (a network's goal
head, which needs sims of at least 1: sims=0 runs the policy head alone; the oracle's
true goal) with the true one over the cells the goal changes.

Example:
  mbag recording convert --out /tmp/human
  mbag watch-help --assistant 'az:models/assistant.json?sims=0' --demos /tmp/human --episodes 8")]
pub struct WatchHelpArgs {
    /// The assistant under test (any agent spec).
    #[arg(long, value_name = "SPEC")]
    pub assistant: AgentSpec,
    /// Demonstrations: recordings under DIR (converted human data, or episodes
    /// simulated with a human model); episode i watches demonstration i mod n.
    #[arg(long, value_name = "DIR")]
    pub demos: PathBuf,
    /// Episodes per column.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES))]
    pub episodes: usize,
    /// The human model the assistant helps [default: the shipped one].
    #[arg(long, value_name = "SPEC", default_value = crate::agents::defaults::HUMAN, hide_default_value = true)]
    pub human: AgentSpec,
    /// Steps of the helping phase.
    #[arg(long, value_name = "STEPS", default_value_t = 1500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub horizon: u64,
    /// At most this many steps of each demonstration are watched.
    #[arg(long, value_name = "STEPS", default_value_t = 1500, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::STEPS))]
    pub watch_steps: usize,
    /// The run's seed.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Write the results as JSON (shape in src/cli/watch_help.rs).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

#[derive(Serialize)]
struct Report<'a> {
    format: &'static str,
    human: &'a AgentSpec,
    demos: Vec<&'a str>,
    episodes: usize,
    horizon: u64,
    seed: u64,
    columns: &'a [HelpSummary],
}

/// Runs `mbag watch-help`.
pub fn run(args: WatchHelpArgs) -> anyhow::Result<u8> {
    let threads = args.runner.threads();
    let demos = watch_help::load_demos(&args.demos, args.watch_steps)
        .with_context(|| format!("reading demonstrations in {}", args.demos.display()))?;
    anyhow::ensure!(
        !demos.is_empty(),
        "no recordings in {}",
        args.demos.display()
    );
    let mut helpers = vec![
        Helper::Agent("heuristic:random".parse()?),
        Helper::Agent(AgentSpec::Oracle),
        Helper::RandomGoal,
    ];
    let tested = Helper::Agent(args.assistant.clone());
    if !helpers.contains(&tested) {
        helpers.push(tested);
    }
    let settings = WatchHelpSettings {
        demos,
        helpers,
        human: args.human.clone(),
        episodes: args.episodes,
        horizon: args.horizon,
        seed: args.seed,
        threads,
    };
    println!(
        "mbag watch-help: {} demonstrations from {}, {} episodes per column, human {}, horizon {}",
        settings.demos.len(),
        args.demos.display(),
        args.episodes,
        args.human,
        args.horizon
    );
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        args.runner.device,
        ServiceConfig::default(),
    )));
    let total = (settings.helpers.len() + 1) * settings.episodes;
    let bar = args.runner.progress(total as u64, "episodes");
    let columns = watch_help::run(&settings, &factory, &|| bar.inc(1))?;
    bar.finish_and_clear();
    print_table(&columns);
    if let Some(path) = &args.json {
        let report = Report {
            format: "mbag-watch-help/1",
            human: &args.human,
            demos: settings.demos.iter().map(|d| d.name.as_str()).collect(),
            episodes: args.episodes,
            horizon: args.horizon,
            seed: args.seed,
            columns: &columns,
        };
        fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(0)
}

fn cell(m: &MeanCi, scale: f64) -> String {
    format!("{:.2} ± {:.2}", scale * m.mean, scale * m.half_width)
}

fn print_table(columns: &[HelpSummary]) {
    println!(
        "{:<28} {:>16} {:>14} {:>16} {:>14} {:>12} {:>12} {:>12}",
        "helper", "success %", "speedup", "length", "reward", "conflicts", "precision", "recall"
    );
    for c in columns {
        let name = c.helper.to_string();
        let name = if name.len() > 28 {
            format!("..{}", &name[name.len() - 26..])
        } else {
            name
        };
        let optional = |m: &Option<MeanCi>| m.as_ref().map_or("-".into(), |m| cell(m, 1.0));
        println!(
            "{:<28} {:>16} {:>14} {:>16} {:>14} {:>12} {:>12} {:>12}",
            name,
            format!(
                "{:.0} [{:.0},{:.0}]",
                100.0 * c.success.rate,
                100.0 * c.success.low,
                100.0 * c.success.high
            ),
            cell(&c.speedup, 1.0),
            format!("{:.0} ± {:.0}", c.length.mean, c.length.half_width),
            format!("{:.1} ± {:.1}", c.reward.mean, c.reward.half_width),
            format!("{:.1}", c.conflicts.mean),
            optional(&c.precision),
            optional(&c.recall),
        );
    }
    println!("(means ± 95% half-widths; success with its Wilson interval)");
}
