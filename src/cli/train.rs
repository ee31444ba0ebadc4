//! `mbag train ...`: training networks. `bc` clones recorded human (or assistant)
//! behaviour into a policy network; `assistant` trains an AssistanceZero
//! assistant by self-play (its arguments are in `train_assistant`).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::train_assistant::{self, AssistantArgs};
use crate::nn::DeviceChoice;
use crate::train::bc::{self, BcConfig, RunOptions};

/// Training subcommands.
#[derive(Debug, Subcommand)]
pub enum TrainCommand {
    /// Train a policy by behaviour cloning on recordings (the paper's BC human
    /// models).
    ///
    /// Every recording under --data is replayed through the simulator to get each
    /// step's observation and valid actions for the players of the config's role
    /// (`data.role`, default human); episodes are split into training and
    /// validation, cut into sequences of `seq_len` steps, and the network learns
    /// to predict each recorded action (cross-entropy over the valid actions).
    /// The config file (JSON; see configs/train/bc_small.json and bc_paper.json)
    /// holds the network, the optimizer and the schedule; unknown keys are errors.
    ///
    /// OUT gets metrics.jsonl (every metric; draw it with `mbag plot`),
    /// checkpoints/ (every `checkpoint_every` steps; `--resume` continues from the
    /// latest, losing at most that interval), config.json, and at the end
    /// model.json + model.safetensors, usable as `bc:OUT/model.json`.
    ///
    /// Examples:
    ///
    /// mbag recording convert --out recordings/human
    ///
    /// mbag train bc --data recordings/human --config configs/train/bc_small.json --out runs/bc
    ///
    /// mbag train bc --data recordings/human --config configs/train/bc_small.json --out runs/bc --resume
    ///
    /// mbag plot runs/bc/metrics.jsonl --out runs/bc/curves.png
    ///
    /// mbag evaluate --human bc:runs/bc/model.json --assistant none --walking --episodes 10
    Bc(BcArgs),
    /// Train an AssistanceZero assistant by self-play (section 4.2 and appendix A
    /// of the paper).
    ///
    /// Each iteration plays `training.rollout_len` moves in each of
    /// `training.num_envs` environments: the human model (--human) as player 0,
    /// the assistant as player 1 choosing every move by MCTS on the current
    /// network (leaves of all environments batched on an inference thread). The
    /// samples (observation, MCTS policy, discounted return, the true goal, the
    /// human's action, the goal predicted at play time) go to a replay buffer;
    /// then Adam minimises the paper's loss (policy towards the MCTS policy,
    /// value, goal prediction, KL to the played goal predictions, the human's
    /// action) on `training.samples_per_iteration` samples drawn from it.
    ///
    /// The config file (JSON; configs/train/assistant_small.json learns in
    /// minutes on a CPU, assistant_paper.json is the paper's Table 14 for a GPU)
    /// holds the env and its goals, the network, the search, the loop and the
    /// loss weights; unknown keys are errors naming the key.
    ///
    /// OUT gets metrics.jsonl (every metric of every iteration: losses, goal %,
    /// env steps/s, MCTS simulations/s, SGD samples/s; draw it with `mbag plot`),
    /// checkpoints/ (every `training.checkpoint_every` iterations; --resume
    /// continues from the latest, losing at most that interval), and at the end
    /// model.json + model.safetensors, usable as `az:OUT/model.json`.
    ///
    /// Examples:
    ///
    /// mbag train assistant --human heuristic:lowest_block --config configs/train/assistant_small.json --out runs/az
    ///
    /// mbag train assistant --human heuristic:lowest_block --config configs/train/assistant_small.json --out runs/az --resume
    ///
    /// mbag plot runs/az/metrics.jsonl --out runs/az/curves.png
    ///
    /// mbag evaluate --human heuristic:lowest_block --assistant az:runs/az/model.json --goals tutorial --world-size 6x6x6 --horizon 100
    Assistant(AssistantArgs),
    /// One self-play worker of `mbag train assistant --ray`, started by Ray on a
    /// node of the cluster: it connects to the learner, plays each iteration's
    /// share of environments with the weights it is sent and sends the fragments
    /// back, until the learner stops.
    #[command(hide = true)]
    AssistantWorker(train_assistant::WorkerArgs),
    /// Summarise a cross-validation: the last validation of each fold's
    /// `train bc` run (`--fold K/N`), side by side, with the mean over folds ±
    /// its standard error and the cross-entropy pooled over every held-out
    /// target (each episode scored once by the model that did not see it).
    ///
    /// Examples:
    ///
    /// mbag train cv runs/human_cpu/fold_*
    ///
    /// mbag train cv runs/human_cpu/fold_* --json runs/human_cpu/cv.json
    Cv(CvArgs),
}

/// `mbag train cv`.
#[derive(Debug, Args)]
pub struct CvArgs {
    /// The folds' run folders (each with metrics.jsonl and config.json).
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Also write the summary as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `mbag train bc`.
#[derive(Debug, Args)]
pub struct BcArgs {
    /// Recordings to learn from: files or folders (searched recursively for
    /// *.jsonl and *.jsonl.gz). Repeatable.
    #[arg(long, required = true, num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// The training config (JSON).
    #[arg(long)]
    pub config: PathBuf,
    /// The output folder (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Continue from the latest checkpoint in OUT (starts fresh if there is none).
    #[arg(long)]
    pub resume: bool,
    /// Where to train: cpu, cuda, or auto (CUDA when available).
    #[arg(long, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// libtorch's intra-op threads (default: all cores).
    #[arg(long, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub threads: Option<usize>,
    /// Stop after this many steps of this invocation, checkpointing first (a
    /// time-boxed run; `--resume` continues it).
    #[arg(long, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::ITERATIONS))]
    pub stop_after: Option<u64>,
    /// Stop after this many minutes of training in this invocation, checkpointing
    /// first (the time before the first step, loading the data and the first
    /// validation, is not counted); `--resume` continues it. For runs longer than
    /// a session: run them in chunks.
    #[arg(long, value_name = "MINUTES", value_parser = parse_minutes)]
    pub time_limit: Option<std::time::Duration>,
    /// Cross-validation by episode: hold out fold K (from 0) of N instead of
    /// the config's validation split (the config's seed shuffles the episodes
    /// once, so runs 0/N .. N-1/N hold out every episode exactly once; use one
    /// OUT per fold). Overrides `data.fold` of the config.
    #[arg(long, value_name = "K/N")]
    pub fold: Option<bc::Fold>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// A positive number of minutes, at most a week (absurd values are refused, not
/// overflowed).
pub(crate) fn parse_minutes(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(m) if m > 0.0 && m <= 7.0 * 24.0 * 60.0 => {
            Ok(std::time::Duration::from_secs_f64(m * 60.0))
        }
        _ => Err(format!(
            "{text:?} is not a number of minutes between 0 and 10080 (a week)"
        )),
    }
}

/// Runs a training subcommand; returns the exit code.
pub fn run(command: TrainCommand) -> anyhow::Result<u8> {
    match command {
        TrainCommand::Bc(args) => run_bc(args),
        TrainCommand::Assistant(args) => train_assistant::run(args),
        TrainCommand::AssistantWorker(args) => train_assistant::run_worker(args),
        TrainCommand::Cv(args) => run_cv(&args),
    }
}

fn run_bc(args: BcArgs) -> anyhow::Result<u8> {
    if let Some(n) = args.threads {
        tch::set_num_threads(n as i32);
    }
    let mut config = BcConfig::read(&args.config)?;
    if let Some(fold) = args.fold {
        config.data.fold = Some(fold);
        config.data.validation_episodes.clear();
    }
    let device = args.device.resolve()?;
    let options = RunOptions {
        data: args.data,
        out: args.out.clone(),
        device,
        resume: args.resume,
        progress_bar: !args.quiet,
        stop_after: args.stop_after,
        time_limit: args.time_limit,
    };
    let report = bc::train(&config, &options)
        .with_context(|| format!("training into {}", args.out.display()))?;
    println!(
        "{} steps ({} this run), {} samples, {:.1} samples/s on {device:?}",
        report.steps, report.steps_this_run, report.samples, report.samples_per_s
    );
    println!("last training loss {:.4}", report.last_train_loss);
    if let (Some(v), Some(b)) = (&report.validation, &report.baselines) {
        println!(
            "validation ({} targets): cross-entropy {:.4} (uniform {:.4}, frequency {:.4}), accuracy {:.4} (most frequent {:.4})",
            v.count,
            v.cross_entropy,
            b.uniform.cross_entropy,
            b.frequency.cross_entropy,
            v.accuracy,
            b.frequency.accuracy
        );
        for (g, (ce, acc, n)) in &v.by_group {
            println!(
                "  {:<6} {n:>6} targets: ce {ce:.4}, accuracy {acc:.4}",
                g.name()
            );
        }
    }
    println!(
        "{}: {}",
        if report.finished {
            "model"
        } else {
            "stopped; latest checkpoint"
        },
        report.model_path.display()
    );
    println!("metrics: {}", report.log_path.display());
    Ok(0)
}

fn run_cv(args: &CvArgs) -> anyhow::Result<u8> {
    let summary = bc::cv::summarise(&args.runs)?;
    // Every group any fold scored, whether or not counts allow pooling.
    let groups: Vec<bc::ActionGroup> = bc::ActionGroup::ALL
        .into_iter()
        .filter(|g| {
            summary
                .folds
                .iter()
                .any(|f| f.by_group.iter().any(|(h, _, _)| h == g))
        })
        .collect();
    let mut header = format!(
        "{:<32} {:>6} {:>6} {:>8} {:>7}",
        "run", "fold", "epoch", "targets", "ce"
    );
    for g in &groups {
        header += &format!(" {:>7}", g.name());
    }
    println!("{header}");
    for f in &summary.folds {
        let mut line = format!(
            "{:<32} {:>6} {:>6} {:>8} {:>7.4}",
            f.run.display().to_string(),
            f.fold.map_or("-".to_owned(), |k| k.to_string()),
            f.epoch,
            f.targets.map_or("-".to_owned(), |n| format!("{n:.0}")),
            f.ce
        );
        for g in &groups {
            let ce = f
                .by_group
                .iter()
                .find(|(h, _, _)| h == g)
                .map(|(_, ce, _)| *ce);
            line += &ce.map_or(format!(" {:>7}", "-"), |ce| format!(" {ce:>7.3}"));
        }
        println!("{line}");
    }
    println!(
        "mean over {} folds: {:.4} ± {:.4} (standard error)",
        summary.folds.len(),
        summary.mean_ce,
        summary.standard_error
    );
    match summary.pooled_ce {
        Some(ce) => {
            let by: Vec<String> = summary
                .pooled_by_group
                .iter()
                .map(|(g, ce)| format!("{} {ce:.3}", g.name()))
                .collect();
            println!(
                "pooled over every held-out target: {ce:.4} ({})",
                by.join(", ")
            );
        }
        None => println!("pooled: not available (a run did not log valid/targets)"),
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "folds": summary.folds.iter().map(|f| serde_json::json!({
                "run": f.run,
                "fold": f.fold.map(|k| k.to_string()),
                "step": f.step,
                "epoch": f.epoch,
                "ce": f.ce,
                "targets": f.targets,
                "ce_by_type": f.by_group.iter().map(|(g, ce, _)| (g.name(), *ce)).collect::<std::collections::BTreeMap<_, _>>(),
            })).collect::<Vec<_>>(),
            "mean_ce": summary.mean_ce,
            "standard_error": summary.standard_error,
            "pooled_ce": summary.pooled_ce,
            "pooled_ce_by_type": summary.pooled_by_group.iter().map(|(g, ce)| (g.name(), *ce)).collect::<std::collections::BTreeMap<_, _>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(0)
}
