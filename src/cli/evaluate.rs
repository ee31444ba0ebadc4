//! `mbag evaluate`: many simulated episodes of a human (model) and an assistant,
//! summarised as the paper's Tables 1 and 3.
//!
//! # JSON (`--json FILE`)
//!
//! ```text
//! {
//!   "format": "mbag-evaluate/1",
//!   "human": "heuristic:lowest_block",      // specs as given (with --sims applied)
//!   "assistant": "none",
//!   "goals": "paper", "seed": 0, "episodes": 2, "threads": 2, "lanes": 1,
//!   "sims": null,
//!   "human_chat": null,                     // or {"model", "probability", "delay_steps"}
//!   "env_config": {...},                    // the config episodes ran in (full,
//!                                           // less the goal generator keys)
//!   "wall_seconds": 1.5,
//!   "env_steps_per_s": 550.0,               // all episodes' steps over the wall time
//!   "per_episode": [{
//!     "episode": 0, "seed": ..., "length": 412,
//!     "goal_percentage": 0.93, "goal_completed": false, "goal_size": 180,
//!     "reward": 160.0,
//!     "human_place_break": 201, "human_actions": 201, "human_goal_percentage": 0.93,
//!     "assistant_place_break": null, "assistant_actions": null,
//!     "assistant_goal_percentage": null,  // numbers when there is an assistant
//!     "assistant_wrong_places": null,     // its placements the goal disagrees with
//!     "human_messages": 0, "assistant_messages": null,   // chat said
//!     "assistant_move_ms": null           // or {"mean_ms", "max_ms"}
//!   }, ...],
//!   "summary": {
//!     "episodes": 2,
//!     "goal_percentage": {"n", "skipped", "mean", "std", "half_width", "low", "high"},
//!     "completion": {"successes", "n", "rate", "low", "high"},
//!     "human_place_break", "human_actions", "human_goal_percentage",
//!     "assistant_goal_percentage", "assistant_place_break", "assistant_wrong_places",
//!     "human_messages", "assistant_messages", "length", "reward",
//!     "assistant_move_ms": mean-with-interval objects like goal_percentage (the
//!                          assistant ones null without an assistant),
//!     "assistant_move_max_ms": number or null
//!   }
//! }
//! ```
//!
//! Goal percentages are fractions, as the reference's `goal_percentage` (Table 1's
//! "Overall goal %" is `summary.goal_percentage.mean * 100 ± half_width * 100`,
//! "Human actions" is `summary.human_place_break`, "Assistant goal %" is
//! `summary.assistant_goal_percentage`). Intervals are 95%: Student's t for means,
//! Wilson for the completion rate; values that cannot be computed (NaN) are null.

use std::fs;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};

use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::chat::person::{ChatPersonConfig, HumanChat};
use crate::eval::record::RecordEpisodes;
use crate::eval::run::{self, EpisodeRecord, EvalSettings, Evaluation, HumanChatSettings};
use crate::eval::stats::MeanCi;
use crate::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use crate::recording::starts::Starts;
use crate::sim::config::Config;
use crate::sim::coords::WorldSize;
use crate::sim::goal::{GoalConfig, Subset};
use crate::sim::presets::{Game, Movement};

/// Arguments of `mbag evaluate`.
#[derive(Debug, Args)]
#[command(after_help = "\
Agent specs:
  heuristic:NAME   a reference heuristic agent: lowest_block, layer_builder, priority_queue,
                   mirror_building, random, noop, movement
  bc:PATH          behaviour cloning network (PATH: model config JSON, weights beside it)
  pikl:PATH        piKL human model (network + MCTS)
  az:PATH          AssistanceZero assistant (network + MCTS)
  pretrained:PATH  the paper's pretrained (Copilot-style) assistant: a goal-blind policy cloned
                   from a BC human's episodes, doing what it expects the person to do next, at
                   temperature 0.3 unless ?temperature= says (models/pretrained_assistant.json)
  oracle           a scripted assistant shown the goal, which builds it (the upper reference)
  none             no assistant: the human plays alone in a 1-player env (\"human alone\")
  Network specs take options: az:PATH?sims=20&temperature=0.3 (keys: sims, temperature,
  argmax; bc also max_idle=N: never more than N NOOPs in a row; az also oracle_goal=true: plan with the true goal instead of the goal head's
  prediction, the upper bound of what the search can do; goal_model=FILE: a goal model
  (mbag goal-model) in place of the goal head, tilt=T: raise its sure places in the prior,
  guide=W, guide_threshold=P: give W of the prior to walking to and building the cells it
  gives more than P; refill=true: the guide may build again where the person cleared). A model config's \"play\" object holds the same settings for
  `az:PATH` without options (models/assistant.json does).

Goals (--goals):
  paper            the human-study pipeline on the CraftAssist test houses (default)
  paper_train      the same on the training houses
  held_out         the human-study pipeline on every house of ../shared/data/houses (CraftAssist,
                   GrabCraft, prismarine-schematic), or of --houses DIR; never trained on
  corpus_train     the human-study pipeline on the house corpus' 2,487 training buildings
                   (../shared/data/house_corpus/train): what training may use
  corpus_test      the same on its 533 test buildings (styles no training saw); never trained on
  procedural_house random procedural houses placed on the ground
  basic, tutorial, simple_overhang, random, ...   a simulator generator with its defaults
  FILE.json        {\"goal_generator\": NAME, \"goal_generator_config\": {...}}, as in env configs

Output: a table of means with 95% confidence intervals (t for means, Wilson for the
completion rate); --json FILE writes the settings, every episode and the summary (the
shape is documented in src/cli/evaluate.rs; Table 1/3's columns are summary.goal_percentage,
summary.human_place_break and summary.assistant_goal_percentage, percentages as fractions).
Goal %s are player 0's; the assistant's goal % is its goal-dependent reward over the
denominator of player 0's goal % (W*H*D minus the similarity at reset).

Examples:
  mbag evaluate --human heuristic:lowest_block --assistant none --episodes 20
  mbag evaluate --human heuristic:lowest_block --assistant heuristic:mirror_building \\
      --episodes 100 --seed 1 --json mirror.json
  mbag evaluate --human heuristic:lowest_block --assistant none --goals basic \\
      --world-size 6x6x6 --horizon 200 --episodes 2 --per-episode")]
pub struct EvaluateArgs {
    /// Who plays the human (player 0) [default: the shipped human model,
    /// bc:models/human.json].
    #[arg(long, value_name = "SPEC", default_value = crate::agents::defaults::HUMAN, hide_default_value = true)]
    pub human: AgentSpec,
    /// Who plays the assistant (player 1), or `none` [default: the shipped
    /// assistant, az:models/assistant.json].
    #[arg(long, value_name = "SPEC", default_value = crate::agents::defaults::ASSISTANT, hide_default_value = true)]
    pub assistant: AgentSpec,
    /// Number of episodes.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::EPISODES))]
    pub episodes: usize,
    /// Where goals come from (see below).
    #[arg(long, value_name = "GENERATOR", default_value = "paper")]
    pub goals: String,
    /// Folder of houses: CraftAssist ones for the `paper` goals [default:
    /// ../shared/data/houses/craftassist], any collection (searched with its
    /// subfolders) for `held_out` [default: ../shared/data/houses].
    #[arg(long, value_name = "DIR")]
    pub houses: Option<PathBuf>,
    /// MCTS simulations per move for pikl/az specs that do not set `?sims=` (the
    /// paper evaluates with 20).
    #[arg(long, value_name = "K", value_parser = crate::cli::numeric::count::<u32>(crate::cli::numeric::SIMS))]
    pub sims: Option<u32>,
    /// Run seed: episode i is the same for the same seed, whatever --threads is.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Worker threads [default: available cores].
    #[arg(long, value_name = "T", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub threads: Option<usize>,
    /// Episodes each worker thread keeps in flight, so that network agents'
    /// moves from many episodes meet in one batch; results do not depend on it
    /// [default: 16 with a network agent, else 1].
    #[arg(long, value_name = "K", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub lanes: Option<usize>,
    /// Maximum steps per episode (episodes also end when the goal is built).
    #[arg(long, default_value_t = 1500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::STEPS))]
    pub horizon: u64,
    /// World size, WxHxD.
    #[arg(long, value_name = "WxHxD", default_value = "11x10x10", value_parser = parse_world_size)]
    pub world_size: WorldSize,
    /// Players walk instead of teleporting (the paper's exact setting; the heuristic
    /// builders refuse it).
    #[arg(long)]
    pub walking: bool,
    /// Start episodes from recorded moments instead of a fresh world: a step of
    /// a recording under DIR (every --starts-every-th step of each is a
    /// candidate), drawn per episode; the goal is that recording's, so --goals
    /// is not used. Recordings of another world size are skipped.
    #[arg(long, value_name = "DIR")]
    pub starts: Option<PathBuf>,
    /// With --starts: use every K-th step of each recording as a start.
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::STRIDE))]
    pub starts_every: usize,
    /// Give the human a voice in chat that the assistant hears: `rejecting`
    /// says "no" (in words varied from the labelled chat set) to the
    /// assistant's placements of a block the goal does not have there. Compare
    /// with the same run without it to measure what chat buys.
    #[arg(long, value_name = "MODEL")]
    pub human_chat: Option<HumanChatArg>,
    /// With --human-chat: the chance that a wrong placement is remarked on.
    #[arg(long, value_name = "P", default_value_t = 0.8, value_parser = crate::cli::numeric::probability)]
    pub chat_probability: f64,
    /// With --human-chat: steps between seeing a wrong placement and saying so.
    #[arg(long, value_name = "STEPS", default_value_t = 1, value_parser = crate::cli::numeric::count::<u32>(crate::cli::numeric::DELAY_STEPS))]
    pub chat_delay: u32,
    /// Write settings, episodes and summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every episode as a recording into DIR (episode_00000.jsonl, ...),
    /// step by step as it plays: data for `mbag train bc` (the pretrained
    /// assistant learns from a BC human's episodes this way), pairs for
    /// `mbag rate pairs`, and episodes for `mbag view`.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Print one line per episode.
    #[arg(long)]
    pub per_episode: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Where network agents run: cpu, cuda or auto (CUDA when available).
    #[arg(long, value_name = "DEVICE", default_value = "auto")]
    pub device: DeviceChoice,
    /// Most leaves one network call evaluates; searches on every episode thread
    /// share each model's inference thread, which batches their leaves.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::BATCH))]
    pub max_batch: usize,
    /// How long the inference thread waits to fill a batch, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 500, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::WAIT_US))]
    pub max_wait_us: u64,
    /// libtorch's intra-op threads for network agents [default on the CPU: the
    /// cores]. Every network runs on one inference thread, which the episode
    /// workers mostly wait for. Ignored by heuristic-only runs.
    #[arg(long, value_name = "N", value_parser = super::torch_threads::parse)]
    pub torch_threads: Option<usize>,
}

/// The chatting human models of `--human-chat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HumanChatArg {
    /// Rejects the assistant's wrong placements in words.
    Rejecting,
}

pub(crate) fn parse_world_size(text: &str) -> Result<WorldSize, String> {
    super::numeric::world_size(text)
}

/// The goal generator named by `--goals`.
fn goal_config(args: &EvaluateArgs) -> anyhow::Result<GoalConfig> {
    goal_config_named(&args.goals, args.houses.as_deref())
}

/// The goal generator `name` (`paper`, `paper_train`, `held_out`,
/// `procedural_house`, a generator name or a `.json` file), with houses from
/// `houses` for the paper's and the held-out goals.
pub(crate) fn goal_config_named(
    name: &str,
    houses: Option<&std::path::Path>,
) -> anyhow::Result<GoalConfig> {
    let houses_or = |default: &str| {
        houses
            .map(std::path::Path::to_owned)
            .unwrap_or_else(|| super::shared_dir().join(default))
    };
    let houses = || houses_or("data/houses/craftassist");
    let study = |subset: Subset| -> anyhow::Result<GoalConfig> {
        let dir = houses();
        anyhow::ensure!(
            dir.is_dir(),
            "--goals {name} needs the CraftAssist houses, not found at {} (use --houses DIR)",
            dir.display()
        );
        Ok(GoalConfig::human_study_in(subset, &dir))
    };
    match name {
        "paper" => study(Subset::Test),
        "paper_train" => study(Subset::Train),
        "held_out" => {
            let dir = houses_or("data/houses");
            anyhow::ensure!(
                dir.is_dir(),
                "--goals held_out needs a folder of houses, not found at {} (use --houses DIR)",
                dir.display()
            );
            Ok(GoalConfig::held_out(&dir))
        }
        "corpus_train" | "corpus_test" => {
            let split = name.trim_start_matches("corpus_");
            let dir = super::shared_dir().join("data/house_corpus").join(split);
            anyhow::ensure!(
                dir.is_dir(),
                "--goals {name} needs the house corpus, not found at {}",
                dir.display()
            );
            Ok(GoalConfig::held_out(&dir))
        }
        "procedural_house" => Ok(GoalConfig::procedural_houses(Default::default())),
        _ if name.ends_with(".json") => {
            let text = fs::read_to_string(name).with_context(|| format!("reading {name}"))?;
            let value: Value =
                serde_json::from_str(&text).with_context(|| format!("parsing {name}"))?;
            let generator = value["goal_generator"]
                .as_str()
                .with_context(|| format!("{name} has no \"goal_generator\" name"))?;
            Ok(GoalConfig::from_env(
                generator,
                &value["goal_generator_config"],
            )?)
        }
        _ => GoalConfig::from_env(name, &json!({})).with_context(|| {
            format!(
                "--goals {name}: not paper, paper_train, held_out, corpus_train, corpus_test, \
                 procedural_house, a generator name or a .json file"
            )
        }),
    }
}

/// The paper's game, resized, with the given horizon and movement.
fn env_config(args: &EvaluateArgs) -> anyhow::Result<Config> {
    let movement = if args.walking {
        Movement::Walking
    } else {
        Movement::Teleporting
    };
    Ok(Game::paper()
        .with_world_size(args.world_size)
        .with_horizon(args.horizon)
        .with_movement(movement)
        .config()?)
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct Report<'a> {
    format: &'static str,
    human: &'a AgentSpec,
    assistant: &'a AgentSpec,
    goals: &'a str,
    seed: u64,
    episodes: usize,
    threads: usize,
    lanes: usize,
    sims: Option<u32>,
    human_chat: Option<Value>,
    env_config: Value,
    wall_seconds: f64,
    env_steps_per_s: f64,
    per_episode: &'a [EpisodeRecord],
    summary: &'a run::Summary,
}

/// Runs the evaluation.
pub fn run(args: EvaluateArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(args.episodes > 0, "--episodes must be positive");
    anyhow::ensure!(args.horizon > 0, "--horizon must be positive");
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });
    anyhow::ensure!(threads > 0, "--threads must be positive");
    // Before any model is built: the inference threads take the count when they
    // first run an operator.
    super::torch_threads::apply(args.torch_threads, args.device);
    let (human, assistant) = match args.sims {
        Some(k) => (
            args.human.clone().with_default_sims(k),
            args.assistant.clone().with_default_sims(k),
        ),
        None => (args.human.clone(), args.assistant.clone()),
    };
    let lanes = args
        .lanes
        .unwrap_or_else(|| run::default_lanes(&human, &assistant));
    anyhow::ensure!(lanes > 0, "--lanes must be positive");
    let record = args.record.as_ref().map(|dir| RecordEpisodes {
        dir: dir.clone(),
        description: format!(
            "mbag evaluate: {human} + {assistant}, goals {}, seed {}",
            args.goals, args.seed
        ),
    });
    let settings = EvalSettings {
        config: env_config(&args)?,
        goals: goal_config(&args)?,
        goals_label: args.goals.clone(),
        human,
        assistant,
        episodes: args.episodes,
        seed: args.seed,
        threads,
        lanes,
        starts: match &args.starts {
            Some(dir) => {
                let starts = Starts::load(dir, args.world_size, args.starts_every)?;
                println!(
                    "{} starts from {} recordings in {}",
                    starts.len(),
                    starts.files.len(),
                    dir.display()
                );
                Some(Arc::new(starts))
            }
            None => None,
        },
        human_chat: args.human_chat.map(|kind| HumanChatSettings {
            kind: match kind {
                HumanChatArg::Rejecting => HumanChat::Rejecting,
            },
            config: ChatPersonConfig {
                probability: args.chat_probability,
                delay_steps: args.chat_delay,
            },
        }),
        record,
    };
    // Each model gets one inference thread shared by every episode thread, so
    // leaves from all searches meet in its batches.
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        args.device,
        ServiceConfig {
            max_batch: args.max_batch.max(1),
            max_wait: Duration::from_micros(args.max_wait_us),
            ..ServiceConfig::default()
        },
    )));

    let s = args.world_size;
    println!(
        "mbag evaluate: human {} + assistant {}, {} episodes, goals {}, {s} world, horizon {}, seed {}, {threads} threads x {lanes} lanes",
        settings.human, settings.assistant, args.episodes, args.goals, args.horizon, args.seed
    );
    let bar = if args.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(args.episodes as u64).with_style(
            ProgressStyle::with_template("[{bar:30}] {pos}/{len} episodes, {elapsed}, eta {eta}")
                .expect("a valid template"),
        )
    };
    let start = Instant::now();
    let cpu = crate::bench::cpu::Utilisation::start();
    let evaluation = run::evaluate(&settings, &factory, &|_| bar.inc(1))?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let cpu = cpu.share();
    bar.finish_and_clear();

    if args.per_episode {
        print_episodes(&evaluation);
    }
    print_summary(&evaluation);
    let env_steps: u64 = evaluation.episodes.iter().map(|r| r.outcome.length).sum();
    let env_steps_per_s = env_steps as f64 / wall_seconds;
    // The cores' use says whether a slow run waited (a thread count too low)
    // or computed.
    let cpu = cpu.map_or_else(String::new, |c| format!(", cores {:.0}% busy", 100.0 * c));
    println!("{wall_seconds:.1} s, {env_steps} env steps, {env_steps_per_s:.0} env steps/s{cpu}");

    if let Some(path) = &args.json {
        let mut env_config = run::episode_config(&settings.config, &settings.assistant)?.to_json();
        // Goals come from --goals (recorded as "goals"), not from the config's own
        // generator keys, which would only mislead a reader.
        if let Some(map) = env_config.as_object_mut() {
            map.remove("goal_generator");
            map.remove("goal_generator_config");
        }
        let report = Report {
            format: "mbag-evaluate/1",
            human: &settings.human,
            assistant: &settings.assistant,
            goals: &args.goals,
            seed: args.seed,
            episodes: args.episodes,
            threads,
            lanes,
            sims: args.sims,
            human_chat: settings.human_chat.map(|c| {
                json!({"model": c.kind.name(), "probability": c.config.probability,
                       "delay_steps": c.config.delay_steps})
            }),
            env_config,
            wall_seconds,
            env_steps_per_s,
            per_episode: &evaluation.episodes,
            summary: &evaluation.summary,
        };
        let text = serde_json::to_string_pretty(&report)?;
        fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        log::info!("wrote {}", path.display());
    }
    Ok(0)
}

fn print_episodes(e: &Evaluation) {
    println!(
        "{:>7} {:>6} {:>7} {:>5} {:>10} {:>11} {:>13}",
        "episode", "length", "goal %", "done", "human p+b", "assistant %", "assist. ms/mv"
    );
    for r in &e.episodes {
        let o = &r.outcome;
        println!(
            "{:>7} {:>6} {:>7.1} {:>5} {:>10} {:>11} {:>13}",
            o.episode,
            o.length,
            100.0 * o.goal_percentage,
            if o.goal_completed { "yes" } else { "no" },
            o.human_place_break,
            o.assistant_goal_percentage
                .map_or("-".to_owned(), |a| format!("{:.1}", 100.0 * a)),
            r.assistant_move_ms
                .map_or("-".to_owned(), |t| format!("{:.3}", t.mean_ms)),
        );
    }
    println!();
}

/// `mean ± half` with `scale` applied, `-` for NaN parts.
fn cell(ci: &MeanCi, scale: f64, decimals: usize) -> String {
    let num = |v: f64| {
        if v.is_nan() {
            "-".to_owned()
        } else {
            format!("{:.decimals$}", v * scale)
        }
    };
    format!(
        "{:>9} ± {:<7} [{}, {}]",
        num(ci.mean),
        num(ci.half_width),
        num(ci.low),
        num(ci.high)
    )
}

fn print_summary(e: &Evaluation) {
    let s = &e.summary;
    println!(
        "{:<24} {:>9}   {:<7} 95% CI (n = {})",
        "metric", "mean", "", s.episodes
    );
    let row = |name: &str, ci: Option<&MeanCi>, scale: f64, decimals: usize| match ci {
        Some(ci) => println!("{name:<24} {}", cell(ci, scale, decimals)),
        None => println!("{name:<24} {:>9}", "-"),
    };
    row("goal %", Some(&s.goal_percentage), 100.0, 1);
    let c = &s.completion;
    println!(
        "{:<24} {:>9.1}   {:<7} [{:.1}, {:.1}] ({}/{}, Wilson)",
        "goal completed %",
        100.0 * c.rate,
        "",
        100.0 * c.low,
        100.0 * c.high,
        c.successes,
        c.n
    );
    for at in &s.goal_percentage_at_minutes {
        let name = format!("goal % at {} min", at.minute);
        row(&name, Some(&at.goal_percentage), 100.0, 1);
    }
    row("human actions (p+b)", Some(&s.human_place_break), 1.0, 1);
    row("human actions (all)", Some(&s.human_actions), 1.0, 1);
    row("human goal %", Some(&s.human_goal_percentage), 100.0, 1);
    row(
        "assistant goal %",
        s.assistant_goal_percentage.as_ref(),
        100.0,
        1,
    );
    row(
        "assistant actions (p+b)",
        s.assistant_place_break.as_ref(),
        1.0,
        1,
    );
    row(
        "assistant wrong places",
        s.assistant_wrong_places.as_ref(),
        1.0,
        1,
    );
    if s.human_messages.mean > 0.0 || s.assistant_messages.as_ref().is_some_and(|m| m.mean > 0.0) {
        row("human chat messages", Some(&s.human_messages), 1.0, 1);
        row(
            "assistant chat messages",
            s.assistant_messages.as_ref(),
            1.0,
            1,
        );
    }
    row("episode length", Some(&s.length), 1.0, 1);
    row("reward", Some(&s.reward), 1.0, 1);
    row(
        "assistant ms per move",
        s.assistant_move_ms.as_ref(),
        1.0,
        3,
    );
    if let Some(max) = s.assistant_move_max_ms {
        println!("{:<24} {max:>9.3}", "assistant ms, slowest");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_sizes_parse() {
        assert_eq!(
            parse_world_size("11x10x10").unwrap(),
            WorldSize::new(11, 10, 10)
        );
        assert_eq!(parse_world_size("6,6,6").unwrap(), WorldSize::new(6, 6, 6));
        assert!(parse_world_size("6x6").is_err());
        assert!(parse_world_size("2x6x6").is_err());
        assert!(parse_world_size("axbxc").is_err());
    }
}
