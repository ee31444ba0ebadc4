//! `mbag goal-model learn|score`: the assistant's goal predictor, learned from
//! the house corpus' training split and scored on houses it never saw.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use super::evaluate::{goal_config_named, parse_world_size};
use crate::agents::spec::{AgentFactory, AgentSpec, StandardAgents};
use crate::goal_model::learn::{self, Builds, CorpusIndex};
use crate::goal_model::score::{self, Observation, Scores};
use crate::goal_model::{GoalModel, Smoothing, plot, rollouts};
use crate::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use crate::sim::coords::WorldSize;
use crate::sim::presets::Game;
use crate::sim::presets::Movement;
use std::sync::Arc;

/// The `goal-model` subcommands.
#[derive(Debug, Subcommand)]
pub enum GoalModelCommand {
    /// Learn the goal model from partial builds of the corpus' training houses
    /// (never its test split): count the goal block of every cell's context,
    /// then choose the smoothing on training styles held out of the counts.
    ///
    /// Example: mbag goal-model learn --out models/assistant_goal.json.gz
    Learn(LearnArgs),
    /// Score a goal model on partial builds of houses it never saw: cross-entropy
    /// and accuracy beside the block-frequency and current-world baselines, the
    /// air cells where it is sure enough for a place to pay (p > 2/3) and its
    /// precision there, and a calibration table (and plot).
    ///
    /// Example: mbag goal-model score --model models/assistant_goal.json.gz --goals held_out --houses ../shared/data/house_corpus/test
    Score(ScoreArgs),
    /// Drop the contexts seen fewer than N times (below the coarsest level),
    /// for a smaller file; with smoothing weight alpha, N well below alpha
    /// changes predictions little (check with `score`).
    ///
    /// Example: mbag goal-model prune /tmp/goal.json.gz models/assistant_goal.json.gz --min-count 40
    Prune(PruneArgs),
}

/// Arguments of `mbag goal-model prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The model to prune.
    pub model: PathBuf,
    /// Where to write the pruned model.
    pub out: PathBuf,
    /// Contexts seen fewer times are dropped.
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<u32>(1..=1_000_000))]
    pub min_count: u32,
}

/// Arguments of `mbag goal-model learn`.
#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The house corpus (its `index.json` names each house's split and style).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Where to write the model (gzipped JSON).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Goals drawn from the training houses (through the human-study chain).
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = crate::cli::numeric::count::<usize>(1..=1_000_000))]
    pub goals: usize,
    /// Partial builds of each goal.
    #[arg(long, value_name = "K", default_value_t = 4, value_parser = crate::cli::numeric::count::<usize>(1..=1_000))]
    pub builds_per_goal: usize,
    /// Contexts seen fewer times are dropped from the finer levels.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = crate::cli::numeric::count::<u32>(1..=1_000_000))]
    pub min_count: u32,
    /// Every Nth training style (by name) is held out of the counts to choose
    /// the smoothing.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = crate::cli::numeric::count::<usize>(1..=1_000))]
    pub hold_out_every: usize,
    /// Goals of the held-out styles the smoothing is chosen on.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub validation_goals: usize,
    /// World size, WxHxD.
    #[arg(long, value_name = "WxHxD", default_value = "11x10x10", value_parser = parse_world_size)]
    pub world_size: WorldSize,
    /// Counting threads.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = crate::cli::numeric::count::<usize>(1..=256))]
    pub threads: usize,
    /// Seed of the draws.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Also count this human model's own builds of the counted houses (the
    /// paper's pretraining corpus: the human model building alone), and choose
    /// the smoothing on its builds of the held-out styles.
    #[arg(long, value_name = "SPEC")]
    pub human: Option<String>,
    /// Episodes the human model builds for counting.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub human_episodes: usize,
    /// Episodes on the held-out styles for choosing the smoothing.
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub human_validation_episodes: usize,
    /// Steps of each human episode.
    #[arg(long, value_name = "N", default_value_t = 1_500, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub human_steps: usize,
    /// Keep the world every N steps of a human episode.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub human_every: usize,
    /// Threads playing human episodes (they share one inference thread).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = crate::cli::numeric::count::<usize>(1..=256))]
    pub human_threads: usize,
}

/// Arguments of `mbag goal-model score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The model to score.
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// Goals to score on, as `mbag evaluate --goals` names them.
    #[arg(long, value_name = "GENERATOR", default_value = "held_out")]
    pub goals: String,
    /// Folder of houses for `held_out` (e.g. ../shared/data/house_corpus/test).
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
    /// Goals drawn.
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub count: usize,
    /// Partial builds of each goal.
    #[arg(long, value_name = "K", default_value_t = 4, value_parser = crate::cli::numeric::count::<usize>(1..=1_000))]
    pub builds_per_goal: usize,
    /// The least share of a goal built (the acceptance scores from 10%).
    #[arg(long, value_name = "F", default_value_t = 0.1, value_parser = crate::cli::numeric::share)]
    pub min_built: f64,
    /// The most share of a goal built.
    #[arg(long, value_name = "F", default_value_t = 0.9, value_parser = crate::cli::numeric::share)]
    pub max_built: f64,
    /// The corpus whose training houses give the frequency baseline's shares.
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// World size, WxHxD.
    #[arg(long, value_name = "WxHxD", default_value = "11x10x10", value_parser = parse_world_size)]
    pub world_size: WorldSize,
    /// Seed of the draws.
    #[arg(long, value_name = "S", default_value_t = 7)]
    pub seed: u64,
    /// Write the scores as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the calibration plot here (PNG).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Score on a human model's own builds instead of partial builds: this
    /// agent builds each goal alone (walking) and the world is kept every
    /// `--every` steps once `--min-built` of the goal stands.
    #[arg(long, value_name = "SPEC")]
    pub human: Option<String>,
    /// Steps of each human episode.
    #[arg(long, value_name = "N", default_value_t = 1_500, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub steps: usize,
    /// Keep the world every N steps of a human episode.
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = crate::cli::numeric::count::<usize>(1..=100_000))]
    pub every: usize,
    /// Score with this smoothing weight instead of the model's.
    #[arg(long, value_name = "A", value_parser = crate::cli::numeric::positive)]
    pub alpha: Option<f64>,
    /// Score with this temperature instead of the model's.
    #[arg(long, value_name = "T", value_parser = crate::cli::numeric::positive)]
    pub temperature: Option<f64>,
}

/// Runs a `goal-model` subcommand.
pub fn run(command: GoalModelCommand) -> anyhow::Result<u8> {
    match command {
        GoalModelCommand::Learn(args) => learn(args),
        GoalModelCommand::Score(args) => score(args),
        GoalModelCommand::Prune(args) => {
            let model = GoalModel::load(&args.model)?;
            let before = model.contexts();
            let model = model.prune(args.min_count);
            model
                .save(&args.out)
                .with_context(|| format!("writing {}", args.out.display()))?;
            println!(
                "contexts per level {before:?} -> {:?}; wrote {}",
                model.contexts(),
                args.out.display()
            );
            Ok(0)
        }
    }
}

fn corpus_dir(dir: Option<PathBuf>) -> PathBuf {
    dir.unwrap_or_else(|| super::shared_dir().join("data/house_corpus"))
}

fn progress_bar(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} goals, {{elapsed}} (eta {{eta}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn learn(args: LearnArgs) -> anyhow::Result<u8> {
    let started = Instant::now();
    let corpus = corpus_dir(args.corpus);
    let index = CorpusIndex::load(&corpus)?;
    let (counted, held) = index.training_split(args.hold_out_every);
    anyhow::ensure!(
        !counted.is_empty() && !held.is_empty(),
        "the training split of {} gives {} houses to count and {} to hold out; change --hold-out-every",
        corpus.display(),
        counted.len(),
        held.len()
    );
    let env = Game::paper().with_world_size(args.world_size).config()?;
    let counted_goals = learn::goals_of(index.houses(&counted)?);
    let held_goals = learn::goals_of(index.houses(&held)?);
    let bar = progress_bar(args.goals, "counting");
    let mut counter = learn::count(
        &env,
        &counted_goals,
        args.goals,
        args.builds_per_goal,
        args.seed,
        args.threads,
        &|| bar.inc(1),
    )?;
    bar.finish();
    let human_validation = match &args.human {
        Some(spec) => {
            let make = human_maker(spec, args.world_size, args.human_steps)?;
            let builds = make.builds(
                "human builds",
                &counted_goals,
                args.human_episodes,
                args.human_every,
                args.seed ^ 0x4a11,
                args.human_threads,
            )?;
            for o in &builds {
                counter.add(o);
            }
            eprintln!("counted {} worlds of {spec}'s builds", builds.len());
            let mut held_builds = make.builds(
                "held-out builds",
                &held_goals,
                args.human_validation_episodes,
                args.human_every,
                args.seed ^ 0x7e57,
                args.human_threads,
            )?;
            held_builds.retain(|o| o.built_fraction() >= 0.1);
            Some(held_builds)
        }
        None => None,
    };
    let counted_seconds = learn::elapsed(started);
    let model = counter.finish(args.min_count, Smoothing::default(), json!({}));
    eprintln!(
        "counted {} builds in {counted_seconds} s; contexts per level {:?}",
        args.goals * args.builds_per_goal,
        model.contexts()
    );
    let validation = match human_validation {
        Some(builds) => builds,
        None => Builds::new(&env, &held_goals, args.seed ^ 0x00ca_11b4, (0.1, 0.9))?
            .take(args.validation_goals, 2)?,
    };
    let (best, tried) = learn::fit(&model, &validation);
    for (s, scores) in &tried {
        let c = &scores.confident[0];
        eprintln!(
            "alpha {:>4} temperature {:.1}: air CE {:.4}, p>2/3 {:.1} per observation at precision {:.3}",
            s.alpha, s.temperature, scores.air_cross_entropy, c.per_observation, c.precision
        );
    }
    let fitted = tried
        .iter()
        .find(|(s, _)| *s == best)
        .map(|(_, scores)| scores.clone());
    let provenance = json!({
        "corpus": corpus.display().to_string(),
        "split": "train",
        "houses_counted": counted.len(),
        "styles_held_out_for_smoothing": held.iter().map(|e| e.group()).collect::<std::collections::BTreeSet<_>>(),
        "houses_held_out": held.len(),
        "goals": args.goals,
        "builds_per_goal": args.builds_per_goal,
        "min_count": args.min_count,
        "world_size": args.world_size,
        "seed": args.seed,
        "human": args.human,
        "human_episodes": args.human.as_ref().map(|_| args.human_episodes),
        "human_steps": args.human_steps,
        "human_every": args.human_every,
        "validation_observations": validation.len(),
        "seconds": learn::elapsed(started),
        "validation": fitted,
    });
    let model = model.with_smoothing(best).with_provenance(provenance);
    model
        .save(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "wrote {} (alpha {}, temperature {}; {} s)",
        args.out.display(),
        best.alpha,
        best.temperature,
        learn::elapsed(started)
    );
    Ok(0)
}

fn score(args: ScoreArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.min_built)
            && (0.0..=1.0).contains(&args.max_built)
            && args.min_built <= args.max_built,
        "--min-built {} and --max-built {} must be shares with min <= max",
        args.min_built,
        args.max_built
    );
    let mut model = GoalModel::load(&args.model)?;
    if args.alpha.is_some() || args.temperature.is_some() {
        let s = model.smoothing();
        let smoothing = Smoothing {
            alpha: args.alpha.unwrap_or(s.alpha),
            temperature: args.temperature.unwrap_or(s.temperature),
        };
        anyhow::ensure!(
            smoothing.alpha > 0.0 && smoothing.temperature > 0.0,
            "--alpha and --temperature must be positive"
        );
        model = model.with_smoothing(smoothing);
    }
    let env = Game::paper().with_world_size(args.world_size).config()?;
    let goals = goal_config_named(&args.goals, args.houses.as_deref())?;
    let mut observations: Vec<Observation> = match &args.human {
        Some(spec) => human_builds(&args, spec, &goals)?,
        None => {
            let mut builds =
                Builds::new(&env, &goals, args.seed, (args.min_built, args.max_built))?;
            let bar = progress_bar(args.count, "drawing");
            let mut observations = Vec::new();
            for _ in 0..args.count {
                observations.extend(builds.next_goal(args.builds_per_goal)?);
                bar.inc(1);
            }
            bar.finish();
            observations
        }
    };
    // Mistakes can leave a build short of its drawn share: keep the floor.
    observations.retain(|o| o.built_fraction() >= args.min_built);
    let corpus = corpus_dir(args.corpus.clone());
    let index = CorpusIndex::load(&corpus)?;
    let train = index.houses(&index.split("train"))?;
    let train_goals = learn::goals_of(train);
    let shares_from =
        Builds::new(&env, &train_goals, args.seed ^ 0x5ba2e5, (0.0, 0.0))?.take(400, 1)?;
    let shares = score::block_shares(&shares_from.iter().map(|o| &o.goal).collect::<Vec<_>>());
    let baselines = score::baselines(&observations, &shares);
    let scores = score::score_model(&model, &observations);
    print_scores(&args, &scores, &baselines);
    if let Some(path) = &args.plot {
        plot::calibration(
            &scores,
            &format!("goal model calibration on {}", houses_label(&args)),
            path,
        )?;
        println!("calibration plot: {}", path.display());
    }
    if let Some(path) = &args.json {
        let doc = json!({
            "format": "mbag-goal-model-scores/1",
            "model": args.model.display().to_string(),
            "goals": args.goals,
            "houses": args.houses.as_ref().map(|h| h.display().to_string()),
            "count": args.count,
            "builds_per_goal": args.builds_per_goal,
            "built": [args.min_built, args.max_built],
            "seed": args.seed,
            "scores": scores,
            "baselines": baselines,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(0)
}

/// Builds human agents of one spec for one-player walking episodes.
struct HumanMaker {
    spec: AgentSpec,
    config: crate::sim::config::Config,
    factory: StandardAgents,
    steps: usize,
}

impl HumanMaker {
    /// The worlds its agents leave building `episodes` goals from `goals`
    /// alone, kept every `every` steps, with a progress bar labelled `what`.
    fn builds(
        &self,
        what: &str,
        goals: &crate::sim::goal::GoalConfig,
        episodes: usize,
        every: usize,
        seed: u64,
        threads: usize,
    ) -> anyhow::Result<Vec<Observation>> {
        let bar = progress_bar(episodes, what);
        let out = rollouts::collect_parallel(
            &self.config,
            goals,
            &|| self.build(),
            episodes,
            self.steps,
            every,
            seed,
            threads,
            &|| bar.inc(1),
        )?;
        bar.finish();
        Ok(out)
    }

    fn build(&self) -> Result<Box<dyn crate::agents::Agent>, crate::agents::registry::AgentError> {
        self.factory
            .build(&self.spec, 0, &self.config)
            .map_err(|e| crate::agents::registry::AgentError::Failed {
                agent: "human",
                message: e.to_string(),
            })
    }
}

fn human_maker(spec: &str, size: WorldSize, steps: usize) -> anyhow::Result<HumanMaker> {
    let spec: AgentSpec = spec.parse()?;
    let base = Game::paper()
        .with_world_size(size)
        .with_horizon(steps as u64)
        .with_movement(Movement::Walking)
        .config()?;
    let config = crate::eval::run::episode_config(&base, &AgentSpec::None)?;
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        DeviceChoice::Auto,
        ServiceConfig::default(),
    )));
    // Fail here, once, on a bad spec rather than on every thread.
    factory.build(&spec, 0, &config)?;
    Ok(HumanMaker {
        spec,
        config,
        factory,
        steps,
    })
}

/// The worlds `spec` leaves while building `--count` goals alone.
fn human_builds(
    args: &ScoreArgs,
    spec: &str,
    goals: &crate::sim::goal::GoalConfig,
) -> anyhow::Result<Vec<Observation>> {
    human_maker(spec, args.world_size, args.steps)?.builds(
        "human builds",
        goals,
        args.count,
        args.every,
        args.seed,
        16,
    )
}

fn houses_label(args: &ScoreArgs) -> String {
    match &args.houses {
        Some(h) => format!("{} ({})", args.goals, h.display()),
        None => args.goals.clone(),
    }
}

fn print_scores(args: &ScoreArgs, s: &Scores, b: &score::Baselines) {
    println!(
        "{} observations of {} goals ({}), {:.0}-{:.0}% built",
        s.observations,
        houses_label(args),
        args.human
            .as_deref()
            .map_or("partial builds".to_owned(), |h| format!("built by {h}")),
        args.min_built * 100.0,
        args.max_built * 100.0
    );
    println!(
        "per voxel: CE {:.3} (block frequency {:.3}), accuracy {:.4} (frequency {:.4}, current world {:.4})",
        s.cross_entropy,
        b.frequency_cross_entropy,
        s.accuracy,
        b.frequency_accuracy,
        b.current_world_accuracy
    );
    println!("air cells the model is sure of (a place pays above 2/3):");
    for c in &s.confident {
        println!(
            "  p > {:.3}: {:.2} per observation, precision {:.3}",
            c.level, c.per_observation, c.precision
        );
    }
    if args.human.is_some() {
        println!("  of them, air cells no one has touched (not cleared by the person):");
        for c in &s.confident_untouched {
            println!(
                "  p > {:.3}: {:.2} per observation, precision {:.3}",
                c.level, c.per_observation, c.precision
            );
        }
    }
    println!(
        "  rule \"a run of two equal blocks continues\": {:.2} per observation, precision {:.3}",
        b.runs_per_observation, b.runs_precision
    );
    println!("calibration (air cells, best non-air block):");
    for bin in &s.calibration {
        if bin.cells > 0 {
            println!(
                "  [{:.1}, {:.1}): {:>8} cells, predicted {:.3}, observed {:.3}",
                bin.low,
                bin.low + 0.1,
                bin.cells,
                bin.predicted,
                bin.observed
            );
        }
    }
}
