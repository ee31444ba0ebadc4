//! `mbag bench ...`: speed against the reference, ratios printed in the same run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::agents::spec::StandardAgents;
use crate::bench::baseline::Baseline;
use crate::bench::env::{EnvBench, ROLLOUTS, measure as measure_env, median};
use crate::bench::nn::{
    BenchModel, DirectTiming, MODELS, OutputCopy, direct_time_of, load_model, observations,
    run_service, time_direct,
};
use crate::nn::{DeviceChoice, Precision, ServiceConfig};

/// What to measure.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The simulator: the reference's scenarios (SPEED.md), resets with goal
    /// generation, and the vectorised API on every core.
    ///
    /// Ratios are against the reference's medians in speed_baseline.json, or in a
    /// fresh file made on this machine with `../shared/reference/bench/run --json F`
    /// and passed as `--reference F` (machines of one class differ by up to 5x, so a
    /// fresh file gives the ratio that holds).
    Env(EnvBenchArgs),
    /// The Minecraft bridge: reading an observation frame (parse the JSON and
    /// decode its block grid), against the target of 50 us for a 22 KB
    /// observation; and the command-to-observation round trip through the
    /// emulator on loopback (our agent side sends `tp`, and the clock stops at the
    /// first observation that echoes it), against the target of 2 ms at p99.
    ///
    /// The emulator runs in this process with an observation every --tick-ms
    /// (1 ms by default; the real mod's tick is 50 ms, and a command waits for
    /// the next tick, so with the real tick the wait would hide the bridge).
    /// Each command is sent right after the previous one's observation, so each
    /// trip includes about one whole tick of waiting.
    ///
    /// Example: mbag bench bridge --iterations 20000 --round-trips 5000
    Bridge(BridgeBenchArgs),
    /// The daemon: an emulated episode in watch mode (two BC agents acting in
    /// the in-process emulator), timing the daemon's own work, inference
    /// excluded: from an observation's arrival on its socket to the detector's
    /// update of the Minecraft mirror, and from an agent's decision to its
    /// first command written to the client's socket. Target: p99 under 5 ms.
    ///
    /// Example: mbag bench daemon --seconds 30
    Daemon(DaemonBenchArgs),
    /// The networks and the inference service.
    ///
    /// First, for each model, direct calls (observations to tensors, forward, outputs
    /// to the CPU) at each batch size: samples/s and latency per call. Models:
    /// `paper` (paper_assistant_full, the paper's conv network with random weights,
    /// about 11 GFLOP per sample: batch 128 on a 2-core CPU takes tens of seconds per
    /// call, so large batches run once without warm-up), `small`
    /// (paper_assistant_small) and `transformer` (az_test_assistant).
    ///
    /// Then the inference service on `--service-model`: 1, 4 and 16 caller threads
    /// each evaluate one zero-state sample per call in a loop; its throughput is
    /// compared with direct calls on exactly the batch sizes the service formed
    /// (overhead %, target at most 10% at 16 callers) and with direct batch-1
    /// calls (lift).
    ///
    /// Examples:
    ///
    /// mbag bench nn
    ///
    /// mbag bench nn --models small,transformer --batches 1,32 --seconds 1
    ///
    /// mbag bench nn --models none --service-model paper --callers 16
    Nn(NnBenchArgs),
    /// The AssistanceZero assistant's search: assistant moves per second and
    /// simulations per second per model, device and simulation count, through the
    /// code that plays (an `az:PATH?sims=N` spec: the search agent on the model's
    /// inference service; `sims=0` is the policy head alone), with a human
    /// model as player 0. Only the assistant's moves are timed, after one untimed
    /// move. Then self-play (as `train assistant` plays it) on each model and
    /// device: env steps/s and simulations/s.
    ///
    /// Models: `transformer` (az_test_assistant, trained), `small`
    /// (paper_assistant_small, the paper's conv architecture at 16 channels) and
    /// `paper` (paper_assistant_full, random weights: seconds per move on a CPU).
    ///
    /// Examples:
    ///
    /// mbag bench mcts
    ///
    /// mbag bench mcts --models transformer --sims 20,100 --seconds 10 --devices cpu,cuda
    Mcts(MctsBenchArgs),
}

/// Arguments of `mbag bench mcts`.
#[derive(Debug, Args)]
pub struct MctsBenchArgs {
    /// Models (transformer, small, paper).
    #[arg(long, value_delimiter = ',', default_value = "transformer,small")]
    pub models: Vec<String>,
    /// Simulations per move (0: the policy head, no search).
    #[arg(long, value_delimiter = ',', default_value = "0,1,10,20,100", value_parser = crate::cli::numeric::count::<u32>(crate::cli::numeric::SIMS))]
    pub sims: Vec<u32>,
    /// Leaves each search gathers per network call, under virtual loss (1: the
    /// reference's one-at-a-time search); a row for each.
    #[arg(long, value_delimiter = ',', default_value = "1,8", value_parser = clap::value_parser!(u32).range(1..=crate::agents::spec::MAX_LEAVES as i64))]
    pub leaves: Vec<u32>,
    /// Number formats on the CPU: `checked` (bfloat16 where `mbag nn
    /// check-precision` allows, as play and evaluate run) or `f32`; a row for each.
    #[arg(long, value_delimiter = ',', default_value = "f32,checked")]
    pub formats: Vec<crate::nn::reduced::FormatChoice>,
    /// Devices (cpu, cuda) [default: cpu, and cuda when available].
    #[arg(long, value_delimiter = ',')]
    pub devices: Vec<DeviceChoice>,
    /// Seconds of assistant moves timed per row (at least --min-moves moves).
    #[arg(long, default_value = "2.0", value_parser = crate::cli::numeric::seconds)]
    pub seconds: crate::cli::numeric::Seconds,
    /// Fewest moves timed per row.
    #[arg(long, default_value_t = 1, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::ITERATIONS))]
    pub min_moves: u64,
    /// The human (player 0); its moves are not timed.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "bc:../shared/models/bc_human_inf_blocks.json"
    )]
    pub human: crate::agents::spec::AgentSpec,
    /// Goals (as `mbag evaluate --goals`).
    #[arg(long, default_value = "paper_train")]
    pub goals: String,
    /// libtorch intra-op threads for the inference thread [default on the CPU:
    /// the cores].
    #[arg(long, value_name = "N", value_parser = super::torch_threads::parse)]
    pub torch_threads: Option<usize>,
    /// Self-play's simulations per move (0 skips self-play).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::SIMS))]
    pub selfplay_sims: usize,
    /// Self-play's leaves per network call per search.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=crate::agents::spec::MAX_LEAVES as i64))]
    pub selfplay_leaves: u32,
    /// Self-play's environments.
    #[arg(long, default_value_t = 32, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::BATCH))]
    pub selfplay_envs: usize,
    /// Self-play's threads [default: the available cores].
    #[arg(long, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub selfplay_threads: Option<usize>,
    /// Self-play steps timed per environment (after one untimed step).
    #[arg(long, default_value_t = 2, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub selfplay_steps: usize,
}

/// Arguments of `mbag bench nn`.
#[derive(Debug, Args)]
pub struct NnBenchArgs {
    /// Models for the batch-size table (paper, small, transformer; `none` for none).
    #[arg(long, value_delimiter = ',', default_value = "paper,small,transformer")]
    pub models: Vec<String>,
    /// Also time these trained models (a model's `.json`, its weights beside
    /// it), e.g. `--model-file models/human.json`; rows are named by file stem.
    #[arg(long, value_name = "PATH")]
    pub model_file: Vec<PathBuf>,
    /// Batch sizes for the batch-size table.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,128", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::BATCH))]
    pub batches: Vec<usize>,
    /// Time budget per measurement in seconds (at least one call runs).
    #[arg(long, default_value = "2.0", value_parser = crate::cli::numeric::seconds)]
    pub seconds: crate::cli::numeric::Seconds,
    /// Model behind the inference service (paper, small, transformer; `none` to
    /// skip the service).
    #[arg(long, default_value = "small")]
    pub service_model: String,
    /// Concurrent callers of each service run.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub callers: Vec<usize>,
    /// Seconds each service run lasts.
    #[arg(long, default_value = "3.0", value_parser = crate::cli::numeric::seconds)]
    pub service_seconds: crate::cli::numeric::Seconds,
    /// The service's largest batch.
    #[arg(long, default_value_t = 64, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::BATCH))]
    pub max_batch: usize,
    /// The service's longest wait for more requests, in microseconds.
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::WAIT_US))]
    pub max_wait_us: u64,
    /// libtorch intra-op threads [default: the available cores].
    #[arg(long, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub threads: Option<usize>,
    /// Where to run the models: cpu, cuda, or auto (CUDA when available).
    #[arg(long, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// Number formats for the batch-size table, each measured in turn: f32, bf16,
    /// f16 (CUDA only). The service runs in the first. Whether a model may use
    /// bf16 in play is `mbag nn check-precision`'s answer.
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    pub precision: Vec<Precision>,
    /// Let cuDNN time its convolution algorithms for each new input shape and keep
    /// the fastest (the first call of each shape is slower).
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// In the batch-size table, copy only the value back to the CPU (which still
    /// waits for the device), timing the network without its outputs' transfer.
    #[arg(long)]
    pub outputs_on_device: bool,
}

/// Arguments of `mbag bench bridge`.
#[derive(Debug, Args)]
pub struct BridgeBenchArgs {
    /// Observations read per measurement.
    #[arg(long, default_value_t = 20_000, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub iterations: usize,
    /// Timed command-to-observation round trips (after 50 untimed ones).
    #[arg(long, default_value_t = 1_000, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub round_trips: usize,
    /// The emulator's time between observations, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1, value_parser = crate::cli::numeric::count::<u64>(crate::cli::numeric::POSITIVE_MILLIS))]
    pub tick_ms: u64,
}

/// Arguments of `mbag bench daemon`.
#[derive(Debug, Args)]
pub struct DaemonBenchArgs {
    /// How long the episode runs, roughly, in seconds.
    #[arg(long, default_value = "30.0", value_parser = crate::cli::numeric::seconds)]
    pub seconds: crate::cli::numeric::Seconds,
    /// The step period, in seconds.
    #[arg(long, default_value = "0.2", value_parser = crate::cli::numeric::seconds)]
    pub step_period: crate::cli::numeric::Seconds,
    /// The agent playing both seats.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "bc:../shared/models/az_test_human.json"
    )]
    pub agent: crate::agents::spec::AgentSpec,
}

/// Arguments of `mbag bench env`.
#[derive(Debug, Args)]
pub struct EnvBenchArgs {
    /// Repetitions per scenario, each from a fresh env (min and median are over
    /// them). More than the reference's 5, as ours are short.
    #[arg(long, default_value_t = 25, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub reps: usize,
    /// Environment steps per repetition: 2,000 as in the reference's bench, so
    /// that a repetition mixes early and late steps of episodes as the
    /// reference's do (early ones cost more: the world is open).
    #[arg(long, default_value_t = 2_000, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub steps: usize,
    /// Seed of the first repetition (repetition r uses seed + r).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Reference figures: a speed file written by the reference's bench/run
    /// [default: ../shared/reference/speed_baseline.json].
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Environments in the vectorised-API measurement.
    #[arg(long, default_value_t = 64, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::BATCH))]
    pub vec_envs: usize,
    /// Threads of the vectorised-API measurement, against 1 [default: the
    /// available cores].
    #[arg(long, value_name = "N", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub vec_threads: Option<usize>,
    /// Steps per round of the vectorised-API measurement.
    #[arg(long, default_value_t = 100, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub vec_steps: usize,
    /// Alternating rounds (1 thread, then all) of the vectorised-API measurement.
    #[arg(long, default_value_t = 10, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub vec_rounds: usize,
    /// Run only these rollouts (comma-separated, e.g. `walk_uniform_los`), for
    /// profiling one of them; the table then shows only their scenarios.
    #[arg(long, value_delimiter = ',', value_name = "ROLLOUTS")]
    pub only: Vec<String>,
    /// Add the Python column: env-steps/s through the mbag_rs package (python/),
    /// one env per call and vectorised, against the reference measured in the same
    /// Python process (python/bench/bench_env.py). The interpreter needs mbag_rs
    /// and the reference installed, as scripts/setup and scripts/python-wheel
    /// leave .deps/python [default: .deps/python/bin/python].
    #[arg(long, value_name = "PYTHON", num_args = 0..=1, default_missing_value = ".deps/python/bin/python")]
    pub python: Option<PathBuf>,
    /// Repetitions of the Python column.
    #[arg(long, default_value_t = 3, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub python_reps: usize,
    /// Env steps per repetition of the Python column.
    #[arg(long, default_value_t = 1_000, value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::ITERATIONS))]
    pub python_steps: usize,
}

/// Runs a bench command.
pub fn run(command: BenchCommand) -> anyhow::Result<u8> {
    match command {
        BenchCommand::Env(args) => env(args),
        BenchCommand::Bridge(args) => bridge(&args),
        BenchCommand::Daemon(args) => daemon(&args),
        BenchCommand::Nn(args) => nn(&args),
        BenchCommand::Mcts(args) => mcts(&args),
    }
}

fn env(args: EnvBenchArgs) -> anyhow::Result<u8> {
    let shared = super::shared_dir();
    let reference_path = args
        .reference
        .clone()
        .unwrap_or_else(|| shared.join("reference/speed_baseline.json"));
    let baseline = Baseline::read(&reference_path).context("reading the reference figures")?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bench = EnvBench {
        reps: args.reps,
        steps: args.steps,
        seed: args.seed,
        only: args.only.clone(),
        houses: shared.join("data/houses/craftassist"),
        vec_envs: args.vec_envs,
        vec_threads: args.vec_threads.unwrap_or(cores),
        vec_steps: args.vec_steps,
        vec_rounds: args.vec_rounds,
    };
    let bar = ProgressBar::new((args.reps * ROLLOUTS.len()) as u64).with_style(
        ProgressStyle::with_template("{msg:>24} [{bar:30}] {pos}/{len} rollouts, {elapsed}")
            .expect("a valid template"),
    );
    let report = measure_env(&bench, &baseline, &mut |started| match started {
        Some(name) => bar.set_message(name),
        None => bar.inc(1),
    })?;
    bar.finish_and_clear();

    println!(
        "mbag bench env: {} x {} steps per scenario, world 11x10x10, goals = CraftAssist train house through the human-study chain",
        args.reps, args.steps
    );
    println!(
        "reference figures: {} ({}{})",
        baseline.path.display(),
        baseline.machine,
        baseline
            .measured
            .as_deref()
            .map(|m| format!(", measured {m}"))
            .unwrap_or_default()
    );
    println!();
    println!(
        "| {:<40} | {:>12} | {:>12} | {:>12} | {:>8} |",
        "scenario", "steps/s min", "steps/s med", "reference", "ratio"
    );
    println!(
        "|{:-<42}|{:->14}|{:->14}|{:->14}|{:->10}|",
        "", "", "", "", ""
    );
    for s in &report.scenarios {
        println!(
            "| {:<40} | {:>12.0} | {:>12.0} | {:>12} | {:>8} |",
            s.key,
            s.min,
            s.median,
            s.reference.map_or("-".into(), |r| format!("{r:.0}")),
            s.ratio().map_or("-".into(), |r| format!("{r:.0}x")),
        );
    }
    if let Some(r) = &report.resets {
        println!(
            "| {:<40} | {:>11.2}ms | {:>11.2}ms | {:>10.1}ms | {:>7.0}x |",
            format!("reset with goal generation ({} resets)", r.count),
            r.min * 1e3,
            r.median * 1e3,
            r.reference * 1e3,
            r.reference / r.median
        );
    }
    println!();
    print!("per-step microseconds (env / masks or agents):");
    for (name, e, p) in &report.per_step_us {
        print!(" {name} {e:.2}/{p:.2};");
    }
    println!();
    let scaling = &report.vecenv;
    let one = median(&mut scaling.one.clone());
    let all = median(&mut scaling.many.clone());
    println!(
        "vectorised API, {} walking 2-player envs with masks, median of {} alternating rounds: {:.0} env-steps/s on 1 thread, {:.0} on {} threads ({:.2}x, per-round ratios {}){}",
        args.vec_envs,
        args.vec_rounds,
        one,
        all,
        scaling.threads,
        scaling.median_ratio(),
        scaling
            .many
            .iter()
            .zip(&scaling.one)
            .map(|(m, o)| format!("{:.2}", m / o))
            .collect::<Vec<_>>()
            .join(" "),
        report.vecenv_reference.map_or(String::new(), |r| format!(
            "; {:.0}x the reference's single env with masks",
            all / r
        )),
    );
    if let Some(worst) = report.worst_ratio() {
        println!("slowest scenario ratio: {worst:.0}x");
    }
    if let Some(python) = &args.python {
        print_python_column(python, args.python_reps, args.python_steps)?;
    }

    if let Some(path) = &args.json {
        let results: serde_json::Map<String, serde_json::Value> = report
            .scenarios
            .iter()
            .map(|s| {
                (
                    s.key.to_owned(),
                    serde_json::json!({"min": s.min, "median": s.median, "reference_median": s.reference, "ratio": s.ratio()}),
                )
            })
            .collect();
        let out = serde_json::json!({
            "reps": args.reps,
            "steps": args.steps,
            "reference": baseline.path,
            "results": results,
            "reset_with_goal_generation_s": report.resets.map(|r| serde_json::json!({"min": r.min, "median": r.median, "reference_median": r.reference})),
            "vecenv": {"envs": args.vec_envs, "threads": scaling.threads, "steps_per_s_1_thread": one, "steps_per_s_all_threads": all, "median_round_ratio": scaling.median_ratio(), "rounds_1_thread": scaling.one, "rounds_all_threads": scaling.many},
        });
        std::fs::write(path, serde_json::to_string_pretty(&out)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(0)
}

/// The Python column: the package against the reference in one Python process.
fn print_python_column(python: &Path, reps: usize, steps: usize) -> anyhow::Result<()> {
    use crate::bench::python::measure;
    let script = Path::new("python/bench/bench_env.py");
    let bench = measure(python, script, reps, steps)?;
    println!();
    println!(
        "through Python {} (numpy {}), {reps} x {steps} steps, reference measured in the same process:",
        bench.python, bench.numpy
    );
    println!(
        "| {:<40} | {:>10} | {:>10} | {:>6} | {:>10} | {:>6} |",
        "scenario", "reference", "MbagEnv", "ratio", "MbagVecEnv", "ratio"
    );
    println!(
        "|{:-<42}|{:->12}|{:->12}|{:->8}|{:->12}|{:->8}|",
        "", "", "", "", "", ""
    );
    // In SPEED.md's order, as the table above; anything else the script measured after.
    let known = crate::bench::env::SCENARIOS.map(|s| s.key);
    let ordered = known
        .iter()
        .filter_map(|k| bench.results.get_key_value(*k))
        .chain(
            bench
                .results
                .iter()
                .filter(|(k, _)| !known.contains(&k.as_str())),
        );
    for (key, s) in ordered {
        println!(
            "| {key:<40} | {:>10.0} | {:>10.0} | {:>5.0}x | {:>10.0} | {:>5.0}x |",
            s.reference_median,
            s.mbag_rs_env_median,
            s.env_ratio(),
            s.mbag_rs_vec_env_median,
            s.vec_env_ratio()
        );
    }
    for (key, why) in &bench.not_measured {
        println!("| {key:<40} | not measured: {why}");
    }
    let slowest = |ratio: fn(&crate::bench::python::PythonScenario) -> f64| {
        bench
            .results
            .values()
            .map(ratio)
            .fold(f64::INFINITY, f64::min)
    };
    if !bench.results.is_empty() {
        println!(
            "slowest Python ratio: MbagEnv {:.0}x, MbagVecEnv {:.0}x",
            slowest(|s| s.env_ratio()),
            slowest(|s| s.vec_env_ratio())
        );
    }
    Ok(())
}

/// Target for reading a 22 KB observation (issue acceptance).
const OBSERVATION_TARGET: std::time::Duration = std::time::Duration::from_micros(50);

fn bridge(args: &BridgeBenchArgs) -> anyhow::Result<u8> {
    use crate::bench::bridge::{
        grow_observation, read_observation, read_observation_losslessly, time_reading,
    };
    anyhow::ensure!(
        args.iterations > 0 && args.round_trips > 0 && args.tick_ms > 0,
        "--iterations, --round-trips and --tick-ms must be positive"
    );
    let path = super::shared_dir().join("malmo/examples/observation_human.synthetic.json");
    let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let base: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a JSON object", path.display()))?;
    // The example as the mod writes it (compact), and grown to the 22 KB of a busy
    // human's observation.
    let compact = serde_json::to_vec(&base).expect("JSON values serialise");
    let grown = grow_observation(&base, 22 * 1024);
    println!(
        "mbag bench bridge: {} iterations per measurement",
        args.iterations
    );
    println!();
    println!(
        "| {:<44} | {:>9} | {:>9} | {:>9} | {:>8} |",
        "observation read (decode, grids to blocks)", "median", "p99", "max", "target"
    );
    println!(
        "|{:-<46}|{:-<11}|{:-<11}|{:-<11}|{:-<10}|",
        "", "", "", "", ""
    );
    let mut worst = std::time::Duration::ZERO;
    for (label, payload) in [
        (
            format!("11x10x10 human example, {} KB", compact.len() / 1024),
            &compact,
        ),
        (
            format!(
                "grown with inventory keys and events, {} KB",
                grown.len() / 1024
            ),
            &grown,
        ),
    ] {
        let lossless = time_reading(payload, args.iterations, read_observation_losslessly)
            .with_context(|| format!("reading the {label} observation"))?;
        let p = time_reading(payload, args.iterations, read_observation)
            .with_context(|| format!("decoding the {label} observation"))?;
        // The target is stated for the 22 KB observation, the last one.
        worst = p.median;
        println!(
            "| {:<44} | {:>7.1}us | {:>7.1}us | {:>7.1}us | {:>8} |",
            format!(
                "  lossless (recordings), {}",
                &label[..label.find(',').unwrap_or(0)]
            ),
            lossless.median.as_secs_f64() * 1e6,
            lossless.p99.as_secs_f64() * 1e6,
            lossless.max.as_secs_f64() * 1e6,
            "-"
        );
        println!(
            "| {:<44} | {:>7.1}us | {:>7.1}us | {:>7.1}us | {:>6}us |",
            label,
            p.median.as_secs_f64() * 1e6,
            p.p99.as_secs_f64() * 1e6,
            p.max.as_secs_f64() * 1e6,
            OBSERVATION_TARGET.as_micros()
        );
    }
    println!();
    println!(
        "observation reading: median {:.1} us for the 22 KB case = {:.2}x the 50 us target budget ({})",
        worst.as_secs_f64() * 1e6,
        worst.as_secs_f64() / OBSERVATION_TARGET.as_secs_f64(),
        if worst <= OBSERVATION_TARGET {
            "met"
        } else {
            "NOT met"
        }
    );

    let tick = std::time::Duration::from_millis(args.tick_ms);
    let trips = crate::bench::bridge::time_round_trips(args.round_trips, 50, tick)
        .context("timing round trips through the emulator")?;
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    println!();
    println!(
        "| {:<44} | {:>9} | {:>9} | {:>9} | {:>8} |",
        "command to observation (emulator, loopback)", "median", "p99", "max", "target"
    );
    println!(
        "|{:-<46}|{:-<11}|{:-<11}|{:-<11}|{:-<10}|",
        "", "", "", "", ""
    );
    println!(
        "| {:<44} | {:>7.0}us | {:>7.0}us | {:>7.0}us | {:>6}us |",
        format!("tp, {} trips, {} ms tick", trips.samples, args.tick_ms),
        us(trips.median),
        us(trips.p99),
        us(trips.max),
        ROUND_TRIP_TARGET.as_micros()
    );
    println!();
    println!(
        "round trip: p50 {:.0} us, p99 {:.0} us = {:.2}x the 2 ms p99 target ({}); \
         each command leaves just after an observation, so about one emulator tick \
         ({} ms, as tokio's timer rounds it) of every trip is waiting for the next tick",
        us(trips.median),
        us(trips.p99),
        trips.p99.as_secs_f64() / ROUND_TRIP_TARGET.as_secs_f64(),
        if trips.p99 <= ROUND_TRIP_TARGET {
            "met"
        } else {
            "NOT met"
        },
        args.tick_ms
    );
    Ok(0)
}

/// Target for the command-to-observation round trip at p99 (issue acceptance).
const ROUND_TRIP_TARGET: std::time::Duration = std::time::Duration::from_millis(2);

fn bench_model(key: &str) -> anyhow::Result<&'static BenchModel> {
    MODELS.iter().find(|m| m.key == key).with_context(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.key).collect();
        format!("unknown model {key:?}; known: {}, none", known.join(", "))
    })
}

fn nn(args: &NnBenchArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        args.batches.iter().chain(&args.callers).all(|&n| n > 0),
        "--batches and --callers must be positive"
    );
    let models: Vec<&BenchModel> = args
        .models
        .iter()
        .filter(|m| m.as_str() != "none")
        .map(|m| bench_model(m))
        .collect::<anyhow::Result<_>>()?;
    let service_model = match args.service_model.as_str() {
        "none" => None,
        key => Some(bench_model(key)?),
    };
    let device = args.device.resolve()?;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    tch::set_num_threads(threads as i32);
    let dir = super::shared_dir().join("models");
    let budget = args.seconds.duration();
    anyhow::ensure!(
        !args.precision.is_empty(),
        "--precision needs at least one format"
    );
    if args.cudnn_benchmark {
        tch::Cuda::cudnn_set_benchmark(true);
    }
    let copy = if args.outputs_on_device {
        OutputCopy::Value
    } else {
        OutputCopy::All
    };
    println!(
        "mbag bench nn: device {device:?}, {threads} libtorch threads, about {:.1} s per measurement{}",
        args.seconds,
        if args.cudnn_benchmark {
            ", cuDNN benchmark mode"
        } else {
            ""
        }
    );
    println!(
        "direct calls: observations to tensors, forward, {} copied to the CPU",
        match copy {
            OutputCopy::Value => "the value alone",
            OutputCopy::All => "all outputs",
        }
    );
    println!();

    // Shared models by key, then trained models from files, named by stem; each
    // is loaded when its rows are measured, so one is in memory at a time.
    enum Source<'a> {
        Shared(&'a BenchModel),
        File(&'a std::path::Path),
    }
    let rows: Vec<(String, String, Source)> = models
        .iter()
        .map(|m| {
            let about = format!("{} ({}.json)", m.about, m.config);
            (m.key.to_owned(), about, Source::Shared(m))
        })
        .chain(args.model_file.iter().map(|path| {
            let stem = path
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
            (stem, path.display().to_string(), Source::File(path))
        }))
        .collect();
    if !rows.is_empty() {
        let bar = ProgressBar::new((rows.len() * args.precision.len() * args.batches.len()) as u64)
            .with_style(
                ProgressStyle::with_template(
                    "{msg:>28} [{bar:30}] {pos}/{len} measurements, {elapsed}",
                )
                .expect("a valid template"),
            );
        // Rows print as they are measured (above the bar), so a run cut short
        // by a time limit still shows what it measured.
        bar.suspend(|| {
            println!(
                "| {:<12} | {:<4} | {:>5} | {:>10} | {:>11} | {:>11} | {:>8} | {:>6} |",
                "model", "fmt", "batch", "samples/s", "latency", "min", "GFLOP/s", "calls"
            );
            println!(
                "|{:-<14}|{:-<6}|{:->7}|{:->12}|{:->13}|{:->13}|{:->10}|{:->8}|",
                "", "", "", "", "", "", "", ""
            );
        });
        for (key, _, source) in &rows {
            bar.set_message(format!("loading {key}"));
            let loaded = match source {
                Source::Shared(m) => load_model(&dir, m, device)
                    .with_context(|| format!("building model {}", m.config))?,
                Source::File(path) => crate::nn::Model::load(path, device)
                    .with_context(|| format!("loading {}", path.display()))?,
            };
            for &precision in &args.precision {
                let model = loaded.inference_copy(precision)?;
                let obs = observations(&model, 16, 0);
                let flops = model.flops_per_sample() as f64;
                let mut per_sample: Option<f64> = None;
                for &b in &args.batches {
                    bar.set_message(format!("{key} {precision} batch {b}"));
                    let expected =
                        per_sample.map(|s| std::time::Duration::from_secs_f64(s * b as f64));
                    let t = time_direct(&model, &obs, b, budget, expected, copy)
                        .with_context(|| format!("{key} ({precision}) at batch {b}"))?;
                    per_sample = Some(t.mean.as_secs_f64() / b as f64);
                    bar.suspend(|| {
                        println!(
                            "| {:<12} | {:<4} | {:>5} | {:>10.1} | {:>9.2}ms | {:>9.2}ms | {:>8.1} | {:>5}{} |",
                            key,
                            precision.to_string(),
                            t.batch,
                            t.samples_per_s(),
                            t.mean.as_secs_f64() * 1e3,
                            t.min.as_secs_f64() * 1e3,
                            flops * t.samples_per_s() / 1e9,
                            t.iterations,
                            if t.warmed_up { " " } else { "*" }
                        );
                    });
                    bar.inc(1);
                }
            }
        }
        bar.finish_and_clear();
        println!("(* no warm-up call: one call takes more than the budget)");
        for (key, about, _) in &rows {
            println!("{key}: {about}");
        }
        println!();
    }

    let Some(m) = service_model else {
        return Ok(0);
    };
    let config = ServiceConfig {
        max_batch: args.max_batch,
        max_wait: std::time::Duration::from_micros(args.max_wait_us),
        ..ServiceConfig::default()
    };
    let duration = args.service_seconds.duration();
    let mut model =
        load_model(&dir, m, device).with_context(|| format!("building model {}", m.config))?;
    model.set_precision(args.precision[0])?;
    let obs = observations(&model, 16, 1);
    let direct_budget = budget.min(std::time::Duration::from_millis(500));
    let mut timings: Vec<DirectTiming> = Vec::new();
    let time_batch = |model: &crate::nn::Model, b: usize, timings: &mut Vec<DirectTiming>| {
        if timings.iter().any(|t| t.batch == b) {
            return anyhow::Ok(());
        }
        timings.push(time_direct(
            model,
            &obs,
            b,
            direct_budget,
            None,
            OutputCopy::All,
        )?);
        Ok(())
    };
    time_batch(&model, 1, &mut timings)?;
    let single = timings[0];
    let bar = ProgressBar::new(args.callers.len() as u64).with_style(
        ProgressStyle::with_template("{msg:>28} [{bar:30}] {pos}/{len} service runs, {elapsed}")
            .expect("a valid template"),
    );
    let mut runs = Vec::new();
    for &callers in &args.callers {
        bar.set_message(format!("{callers} callers"));
        let (back, run) = run_service(model, config, callers, duration, &obs)
            .with_context(|| format!("the service with {callers} callers"))?;
        model = back;
        bar.set_message(format!("direct, {callers} callers' batches"));
        for &b in run.stats.batch_sizes.keys() {
            time_batch(&model, b, &mut timings)?;
        }
        runs.push(run);
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "inference service on {} ({}), {:?}, {:.1} s per run, callers send 1 zero-state sample per call",
        m.key, m.config, config, args.service_seconds
    );
    println!(
        "| {:>7} | {:>10} | {:>10} | {:>11} | {:>13} | {:>9} | {:>9} |",
        "callers", "samples/s", "mean batch", "busy", "direct same", "overhead", "lift"
    );
    println!(
        "|{:->9}|{:->12}|{:->12}|{:->13}|{:->15}|{:->11}|{:->11}|",
        "", "", "", "", "", "", ""
    );
    let mut overhead_at_most = None;
    for run in &runs {
        let direct = direct_time_of(run, &timings);
        let direct_rate = run.samples as f64 / direct.as_secs_f64();
        let overhead = run.elapsed.as_secs_f64() / direct.as_secs_f64() - 1.0;
        if run.callers == *args.callers.iter().max().expect("callers given") {
            overhead_at_most = Some((run.callers, overhead));
        }
        println!(
            "| {:>7} | {:>10.1} | {:>10.2} | {:>9.1}% | {:>11.1}/s | {:>8.1}% | {:>8.2}x |",
            run.callers,
            run.samples_per_s(),
            run.stats.mean_batch_size(),
            run.stats.busy.as_secs_f64() / run.elapsed.as_secs_f64() * 100.0,
            direct_rate,
            overhead * 100.0,
            run.samples_per_s() / single.samples_per_s(),
        );
    }
    println!(
        "direct same: direct calls on the batch sizes the service formed; overhead: the service's time over theirs; lift: over direct batch-1 calls ({:.1} samples/s); busy: share of the run the inference thread was working",
        single.samples_per_s()
    );
    if let Some((callers, overhead)) = overhead_at_most {
        println!(
            "overhead at {callers} callers: {:.1}% (target at most 10%: {})",
            overhead * 100.0,
            if overhead <= 0.10 { "met" } else { "NOT met" }
        );
    }
    Ok(0)
}

fn daemon(args: &DaemonBenchArgs) -> anyhow::Result<u8> {
    use crate::bench::bridge::Percentiles;
    use crate::bench::daemon::{DAEMON_TARGET, DaemonBench, measure};

    // Both are positive and bounded (`Seconds`), so the quotient is finite.
    let steps = (args.seconds.as_secs_f64() / args.step_period.as_secs_f64()).ceil() as u64;
    eprintln!(
        "mbag bench daemon: {steps} steps of {} s in emulated Minecraft...",
        args.step_period
    );
    let measured = measure(&DaemonBench {
        agent: args.agent.clone(),
        steps,
        step_period: args.step_period.duration(),
    })?;
    let show = |name: &str, p: Option<Percentiles>, target: Option<std::time::Duration>| match p {
        Some(p) => println!(
            "{name:<42} {:>7} {:>10.1} {:>10.1} {:>10.1} {}",
            p.samples,
            p.median.as_secs_f64() * 1e6,
            p.p99.as_secs_f64() * 1e6,
            p.max.as_secs_f64() * 1e6,
            target.map_or_else(String::new, |t| format!(
                "{:>8.1} ms {:>7.3}",
                t.as_secs_f64() * 1e3,
                p.p99.as_secs_f64() / t.as_secs_f64()
            )),
        ),
        None => println!("{name:<42} {:>7} (no samples)", 0),
    };
    println!(
        "{:<42} {:>7} {:>10} {:>10} {:>10} {:>11} {:>7}",
        "latency", "samples", "p50 us", "p99 us", "max us", "target p99", "p99/tgt"
    );
    show(
        "observation arrival -> detector updated",
        measured.observation_to_update,
        Some(DAEMON_TARGET),
    );
    show(
        "AI decision -> first command written",
        measured.decision_to_command,
        Some(DAEMON_TARGET),
    );
    show("inference (excluded; for scale)", measured.inference, None);
    println!(
        "{} steps, {} observations, {} divergences repaired",
        measured.steps, measured.stats.observations, measured.stats.divergences
    );
    Ok(0)
}

fn mcts(args: &MctsBenchArgs) -> anyhow::Result<u8> {
    use crate::bench::mcts::{
        MoveBench, SelfPlayBench, assistant_spec, bench_config, time_moves, time_selfplay,
    };
    use crate::nn::{ModelConfig, ServiceAgents};

    let models: Vec<&BenchModel> = args
        .models
        .iter()
        .map(|m| bench_model(m))
        .collect::<anyhow::Result<_>>()?;
    let devices = if args.devices.is_empty() {
        let mut d = vec![DeviceChoice::Cpu];
        if tch::Cuda::is_available() {
            d.push(DeviceChoice::Cuda);
        }
        d
    } else {
        args.devices.clone()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let torch_threads = args.torch_threads.unwrap_or(cores);
    let goals = super::evaluate::goal_config_named(&args.goals, None)?;
    let dir = super::shared_dir().join("models");
    let budget = args.seconds.duration();
    println!(
        "mbag bench mcts: human {}, goals {}, {torch_threads} libtorch threads, about {:.1} s per row",
        args.human, args.goals, args.seconds
    );
    println!(
        "{:<12} {:<8} {:<5} {:>5} {:>6} {:>6} {:>9} {:>10} {:>9} {:>5}",
        "model", "device", "fmt", "sims", "leaves", "moves", "moves/s", "sims/s", "ms/move", "cpu"
    );
    let percent =
        |share: Option<f64>| share.map_or_else(|| "-".to_owned(), |s| format!("{:.0}%", 100.0 * s));
    for device in &devices {
        let tch_device = device.resolve()?;
        for model in &models {
            // The inference thread adopts the count on its first operator.
            tch::set_num_threads(torch_threads as i32);
            let path = dir.join(format!("{}.json", model.config));
            let config = ModelConfig::read(&path)?;
            let env = bench_config(&config);
            for &formats in &args.formats {
                let agents = Arc::new(
                    ServiceAgents::new(*device, ServiceConfig::default()).with_formats(formats),
                );
                if !path.with_extension("safetensors").exists() {
                    agents.insert(&path, load_model(&dir, model, tch_device)?)?;
                }
                let factory = StandardAgents::with_network(agents.clone());
                let mut first = true;
                for &sims in &args.sims {
                    for &leaves in &args.leaves {
                        // Without a search there are no leaves to gather.
                        if sims <= 1 && leaves > 1 {
                            continue;
                        }
                        let spec = assistant_spec(&path, sims, leaves)?;
                        let bench = MoveBench {
                            human: args.human.clone(),
                            goals: goals.clone(),
                            seed: u64::from(sims),
                            budget,
                            min_moves: args.min_moves.max(1),
                            // The service (one per model, device and format) warms up once.
                            warm_up: first,
                        };
                        first = false;
                        let t = time_moves(&factory, &spec, &env, &bench).with_context(|| {
                            format!("{} on {device} at {sims} sims, {leaves} leaves", model.key)
                        })?;
                        let fmt = agents
                            .precision_of(&path)
                            .map_or_else(|| "-".to_owned(), |p| p.to_string());
                        println!(
                            "{:<12} {:<8} {:<5} {:>5} {:>6} {:>6} {:>9.1} {:>10} {:>9.2} {:>5}",
                            model.key,
                            device.to_string(),
                            fmt,
                            sims,
                            leaves,
                            t.moves,
                            t.moves_per_s(),
                            if sims == 0 {
                                "-".to_owned()
                            } else {
                                format!("{:.0}", t.moves_per_s() * f64::from(sims))
                            },
                            1e3 / t.moves_per_s(),
                            percent(t.cpu),
                        );
                    }
                }
            }
        }
    }
    if args.selfplay_sims == 0 {
        return Ok(0);
    }
    let threads = args.selfplay_threads.unwrap_or(cores).max(1);
    println!();
    println!(
        "self-play ({} envs, {threads} threads, {} sims, {} leaves per call, {} steps per env timed)",
        args.selfplay_envs, args.selfplay_sims, args.selfplay_leaves, args.selfplay_steps,
    );
    println!(
        "{:<12} {:<8} {:<5} {:>10} {:>10} {:>11} {:>5}",
        "model", "device", "fmt", "steps/s", "sims/s", "mean batch", "cpu"
    );
    for device in &devices {
        // A network human runs on the device too, on a service of its own.
        let factory = StandardAgents::with_network(Arc::new(ServiceAgents::new(
            *device,
            ServiceConfig::default(),
        )));
        let tch_device = device.resolve()?;
        for model in &models {
            let path = dir.join(format!("{}.json", model.config));
            for &formats in &args.formats {
                let bench = SelfPlayBench {
                    human: args.human.clone(),
                    goals: goals.clone(),
                    sims: args.selfplay_sims,
                    leaves: args.selfplay_leaves as usize,
                    formats,
                    envs: args.selfplay_envs.max(1),
                    threads,
                    steps: args.selfplay_steps.max(1),
                    seed: 0,
                };
                let t = time_selfplay(
                    load_model(&dir, model, tch_device)?,
                    &path,
                    &factory,
                    &bench,
                )
                .with_context(|| format!("self-play with {} on {device}", model.key))?;
                println!(
                    "{:<12} {:<8} {:<5} {:>10.1} {:>10.0} {:>11.1} {:>5}",
                    model.key,
                    device.to_string(),
                    t.precision.to_string(),
                    t.env_steps as f64 / t.seconds,
                    t.simulations as f64 / t.seconds,
                    t.mean_batch,
                    percent(t.cpu),
                );
            }
        }
    }
    Ok(0)
}
