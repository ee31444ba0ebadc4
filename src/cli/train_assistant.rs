//! `mbag train assistant`: AssistanceZero self-play training.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::nn::{DeviceChoice, Precision, ServiceAgents, ServiceConfig};
use crate::train::assistant::config::AssistantTrainConfig;
use crate::train::assistant::trainer::{self, IterationReport, RunOptions};

/// Arguments of `mbag train assistant`.
#[derive(Debug, Args)]
pub struct AssistantArgs {
    /// The human model the assistant trains with (player 0): heuristic:NAME,
    /// bc:PATH or pikl:PATH, as in `mbag evaluate`.
    #[arg(long, value_name = "SPEC")]
    pub human: AgentSpec,
    /// The training config (JSON; configs/train/assistant_small.json or
    /// assistant_paper.json).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The output folder (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Continue from the latest checkpoint in OUT (starts fresh if there is none).
    #[arg(long)]
    pub resume: bool,
    /// Where the network trains and plays: cpu, cuda, or auto (CUDA when
    /// available).
    #[arg(long, value_name = "DEVICE", default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// Stop once this many iterations are done in total (resumed ones included),
    /// checkpointing first; 0 saves the untrained network.
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::TOTAL_ITERATIONS))]
    pub iterations: Option<u64>,
    /// Stop at the end of the first iteration that ends after MINUTES,
    /// checkpointing first, so that a run longer than a working session goes on
    /// in chunks (`--resume` continues it where it stopped, losing nothing but
    /// the replay buffer's sampling order).
    #[arg(long, value_name = "MINUTES", value_parser = super::train::parse_minutes)]
    pub time_limit: Option<std::time::Duration>,
    /// libtorch's intra-op threads [default: 1 on the CPU, where the self-play
    /// threads (`training.threads`) already use the cores and more threads only
    /// contend; libtorch's choice on CUDA].
    #[arg(long, value_name = "T", value_parser = super::torch_threads::parse)]
    pub torch_threads: Option<usize>,
    /// The number format self-play's searches run the network in: f32, bf16 or
    /// f16 (CUDA only). On a GPU bf16 evaluates the paper's network about 8x as
    /// fast as exact f32 (models/README.md); training stays in f32.
    #[arg(long, value_name = "FMT", default_value_t = Precision::F32)]
    pub selfplay_precision: Precision,
    /// Start self-play episodes from recorded moments (every 10th step of every
    /// recording under DIR of the config's world size) instead of fresh worlds:
    /// the goal is then the recording's.
    #[arg(long, value_name = "DIR")]
    pub starts: Option<std::path::PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `mbag train assistant`.
pub fn run(args: AssistantArgs) -> anyhow::Result<u8> {
    let config = AssistantTrainConfig::read(&args.config)?;
    anyhow::ensure!(
        !args.human.is_none(),
        "--human none: the assistant needs a human to help"
    );
    let device = args
        .device
        .resolve()
        .with_context(|| format!("--device {}", args.device))?;
    // Self-play threads already fill every core, so on the CPU libtorch's share
    // is the minimum: one thread.
    super::torch_threads::apply(args.torch_threads, args.device, usize::MAX);
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        args.device,
        ServiceConfig::default(),
    )));
    let t = &config.file.training;
    let planned = args.iterations.unwrap_or(t.iterations).min(t.iterations);
    println!(
        "mbag train assistant: human {}, {} world, {} envs x {} steps per iteration, {} sims per move, {planned} iterations on {device:?} -> {}",
        args.human,
        config.env.world_size,
        t.num_envs,
        t.rollout_len,
        config.mcts.num_simulations,
        args.out.display()
    );
    let bar = if args.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(planned).with_style(
            ProgressStyle::with_template(
                "[{bar:30}] {pos}/{len} iterations, {elapsed}, eta {eta} {msg}",
            )
            .expect("a valid template"),
        )
    };
    let mut on_iteration = |r: &IterationReport| {
        bar.set_position(r.iteration);
        let get = |k: &str| r.get(k).map_or("-".to_owned(), |v| format!("{v:.3}"));
        let line = format!(
            "it {}: assistant goal % {}, goal loss {}, policy loss {}, {} steps/s, {} sims/s, {} samples/s",
            r.iteration,
            get("episode/assistant_goal_pct"),
            get("train/goal_loss"),
            get("train/policy_loss"),
            get("selfplay/env_steps_per_s"),
            get("selfplay/sims_per_s"),
            get("sgd/samples_per_s"),
        );
        if bar.is_hidden() {
            log::info!("{line}");
        } else {
            bar.set_message(line);
        }
    };
    let options = RunOptions {
        human: args.human.clone(),
        out: args.out.clone(),
        device,
        resume: args.resume,
        stop_after: args.iterations,
        time_limit: args.time_limit,
        selfplay_precision: args.selfplay_precision,
        starts: match &args.starts {
            Some(dir) => Some(std::sync::Arc::new(
                crate::recording::starts::Starts::load(dir, config.env.world_size, 10)
                    .with_context(|| format!("--starts {}", dir.display()))?,
            )),
            None => None,
        },
    };
    let summary = trainer::train(&config, &options, &factory, &mut on_iteration)?;
    bar.finish_and_clear();
    println!(
        "{} iterations done; model {} (metrics in {})",
        summary.iterations,
        summary.model.display(),
        args.out.join(trainer::LOG_FILE).display()
    );
    for (k, v) in &summary.last {
        println!("  {k:<32} {v:.4}");
    }
    let s = config.env.world_size;
    // A transformed generator is the paper's house pipeline, which `evaluate`
    // runs on the held-out houses as `--goals paper`.
    let goals = match config.env.goal_generator.as_str() {
        "TransformedGoalGenerator" | "transformed" => "paper",
        name => name,
    };
    println!(
        "evaluate it: mbag evaluate --human {} --assistant az:{} --world-size {}x{}x{} --horizon {} --goals {goals}{} --episodes 20",
        args.human,
        summary.model.display(),
        s.width,
        s.height,
        s.depth,
        config.env.horizon,
        if config.env.abilities.teleportation {
            ""
        } else {
            " --walking"
        }
    );
    Ok(0)
}
