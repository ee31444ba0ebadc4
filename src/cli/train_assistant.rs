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
use crate::train::assistant::remote::RemoteSettings;
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
    /// libtorch's intra-op threads [default on the CPU: the cores, since every
    /// forward pass runs on the one inference thread while the self-play
    /// threads' tree work takes about 2% of the time; libtorch's choice on CUDA].
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
    /// Play self-play on Ray: the Ray cluster at ADDRESS (`ray start --head`
    /// prints it) runs `--ray-workers` workers as actors, each an `mbag train
    /// assistant-worker` process that plays its share of the iteration's
    /// environments with the weights this learner sends and sends back its
    /// fragments (python/RAY.md). Needs the mbag_rs package and Ray in
    /// `--ray-python`, and this binary and the run's files at the same paths on
    /// every node.
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
    /// Self-play workers on Ray; the iteration's environments are shared among
    /// them.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::WORKERS))]
    pub ray_workers: usize,
    /// Where the learner listens for its workers (with --ray). Loopback by
    /// default, which serves a cluster on this machine; a multi-machine cluster
    /// needs an address its nodes reach, e.g. 0.0.0.0:7799.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// The Python that starts the workers on Ray (with ray and mbag_rs installed;
    /// scripts/ray-example makes .deps/ray).
    #[arg(long, value_name = "PYTHON", default_value = ".deps/ray/bin/python")]
    pub ray_python: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `mbag train assistant-worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The learner's HOST:PORT (`mbag train assistant --ray` starts workers with it).
    #[arg(long, value_name = "HOST:PORT")]
    pub learner: String,
    /// This worker's index among the learner's workers.
    #[arg(long, value_name = "I", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::WORKER_INDEX))]
    pub index: usize,
    /// Where the network plays: cpu, cuda, or auto.
    #[arg(long, value_name = "DEVICE", default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
}

/// Runs `mbag train assistant-worker`: self-play for a learner until it stops.
pub fn run_worker(args: WorkerArgs) -> anyhow::Result<u8> {
    let device = args
        .device
        .resolve()
        .with_context(|| format!("--device {}", args.device))?;
    super::torch_threads::apply(None, args.device);
    let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
        args.device,
        ServiceConfig::default(),
    )));
    crate::train::assistant::remote::run_worker(&args.learner, args.index, &factory, device)
        .with_context(|| format!("self-play worker {} of {}", args.index, args.learner))?;
    Ok(0)
}

/// Binds the learner's port and starts the workers on Ray; the launcher process
/// ends when its workers have.
fn start_ray_workers(
    args: &AssistantArgs,
    address: &str,
) -> anyhow::Result<(RemoteSettings, std::process::Child)> {
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("--listen {}", args.listen))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        log::warn!(
            "the learner listens on {bound}, beyond loopback: any host that reaches it can join as a worker"
        );
    }
    let mbag = std::env::current_exe().context("finding this mbag binary")?;
    let cwd = std::env::current_dir()?;
    let child = std::process::Command::new(&args.ray_python)
        .args(["-m", "mbag_rs.ray_workers", "--address", address])
        .arg("--learner")
        .arg(bound.to_string())
        .arg("--workers")
        .arg(args.ray_workers.to_string())
        .arg("--mbag")
        .arg(&mbag)
        .arg("--cwd")
        .arg(&cwd)
        .spawn()
        .with_context(|| {
            format!(
                "starting the Ray workers with {} (scripts/ray-example sets up .deps/ray)",
                args.ray_python.display()
            )
        })?;
    println!(
        "learner on {bound}: {} self-play workers on Ray at {address}",
        args.ray_workers
    );
    Ok((
        RemoteSettings {
            listener: Arc::new(listener),
            workers: args.ray_workers,
            connect_timeout: std::time::Duration::from_secs(300),
        },
        child,
    ))
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
    // Every forward pass runs on the one inference thread, which gets the
    // cores: self-play's own threads only walk trees (SPEED.md).
    super::torch_threads::apply(args.torch_threads, args.device);
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
    let (remote, launcher) = match &args.ray {
        Some(address) => {
            let (settings, child) = start_ray_workers(&args, address)?;
            (Some(settings), Some(child))
        }
        None => (None, None),
    };
    let options = RunOptions {
        remote,
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
    let summary = trainer::train(&config, &options, &factory, &mut on_iteration);
    // The workers stop when the learner's connections close (on success and on
    // failure alike); then their launcher ends.
    if let Some(mut launcher) = launcher {
        match launcher.wait() {
            Ok(status) if !status.success() => {
                log::warn!("the Ray workers' launcher ended with {status}")
            }
            Ok(_) => {}
            Err(e) => log::warn!("waiting for the Ray workers' launcher: {e}"),
        }
    }
    let summary = summary?;
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
