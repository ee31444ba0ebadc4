//! `mbag nn ...`: the networks. `verify-golden` checks the shared models against
//! the reference's outputs; `info` prints a model's structure and cost.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::nn::golden::{golden_files, verify_model_in};
use crate::nn::{DeviceChoice, Model, ModelConfig, Precision};

/// Network subcommands.
#[derive(Debug, Subcommand)]
pub enum NnCommand {
    /// Run every shared model on its golden inputs and compare with the reference.
    ///
    /// For each `<name>.safetensors` in DIR, builds `DIR/../<name>.json`, loads its
    /// weights, runs the 8 recorded steps with the recurrent state carried and then
    /// the 8 observations as one batch, and compares every output with the
    /// tolerance |got - want| <= 1e-4 + 1e-4·|want|. Prints one line per model with
    /// its largest error, then `N passed, M failed`; the exit status is 1 if any
    /// failed.
    ///
    /// Examples:
    ///
    /// mbag nn verify-golden
    ///
    /// mbag nn verify-golden ../shared/models/golden --device cpu
    ///
    /// mbag nn verify-golden --device cuda --precision bf16
    VerifyGolden(VerifyGoldenArgs),
    /// Print a model's structure, parameter count and FLOPs per sample.
    ///
    /// Examples:
    ///
    /// mbag nn info ../shared/models/paper_assistant_full.json
    ///
    /// mbag nn info ../shared/models/az_test_assistant.json
    Info(InfoArgs),
    /// Decide per model whether it may compute in bfloat16 on the CPU.
    ///
    /// Each model runs in f32 and in bf16 on a fixed set of states it visits
    /// itself (two seeded episodes in its own world, its masked policy sampled,
    /// every fourth step kept). bf16 is used only if every state's chosen move is
    /// the same (or a near-tie within 0.05 nats), the masked policies differ by
    /// at most 0.02 in total variation, the value by 0.02 and each goal-block
    /// probability by 0.02; a shared model must also stay within 0.1 of every
    /// golden output. Agents built by `play`, `evaluate` and the benches
    /// run this check when they load a model on the CPU and use its answer.
    /// int8 is not offered (see the `nn::reduced` docs). Exit status 0 whatever
    /// the answers; 1 if a model cannot be loaded.
    ///
    /// Examples:
    ///
    /// mbag nn check-precision
    ///
    /// mbag nn check-precision models/assistant.json models/human.json
    CheckPrecision(CheckPrecisionArgs),
}

/// Arguments of `mbag nn check-precision`.
#[derive(Debug, Args)]
pub struct CheckPrecisionArgs {
    /// Model configs (`<name>.json`, weights beside them) [default: every shared
    /// model with weights, and models/*.json].
    pub models: Vec<PathBuf>,
}

/// Arguments of `mbag nn verify-golden`.
#[derive(Debug, Args)]
pub struct VerifyGoldenArgs {
    /// The golden folder (default: `models/golden` of the shared data).
    pub dir: Option<PathBuf>,
    /// Where to run the models: cpu, cuda, or auto (CUDA when available).
    #[arg(long, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// The number format the models compute in: f32, bf16 or f16 (CUDA only). The
    /// tolerance is the same for all, so reduced precision shows how far its
    /// rounding moves the outputs.
    #[arg(long, default_value_t = Precision::F32)]
    pub precision: Precision,
}

/// Arguments of `mbag nn info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A model config (`<name>.json`); its weights are not needed.
    pub config: PathBuf,
}

/// Runs a network subcommand; returns the exit code.
pub fn run(command: NnCommand) -> anyhow::Result<u8> {
    // Two intra-op threads and one inter-op thread (LIBTORCH.md §4).
    tch::set_num_threads(2);
    tch::set_num_interop_threads(1);
    match command {
        NnCommand::VerifyGolden(args) => verify_golden(args),
        NnCommand::Info(args) => info(args),
        NnCommand::CheckPrecision(args) => check_precision(args),
    }
}

fn check_precision(args: CheckPrecisionArgs) -> anyhow::Result<u8> {
    let models = if args.models.is_empty() {
        let mut found = Vec::new();
        for dir in [super::shared_dir().join("models"), PathBuf::from("models")] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut here: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|e| e == "json")
                        && p.with_extension("safetensors").exists()
                })
                .collect();
            here.sort();
            found.extend(here);
        }
        found
    } else {
        args.models
    };
    if models.is_empty() {
        bail!("no models to check (give model configs, or run from the project root)");
    }
    let mut failed = false;
    for path in &models {
        let outcome = Model::load(path, tch::Device::Cpu).and_then(|model| {
            crate::nn::reduced::check(
                &model,
                Precision::Bf16,
                &crate::nn::reduced::Tolerance::default(),
                crate::nn::reduced::golden_file_of(path).as_deref(),
            )
        });
        match outcome {
            Ok(check) => println!("{check}"),
            Err(e) => {
                println!("{}: cannot be checked: {e}", path.display());
                failed = true;
            }
        }
    }
    Ok(u8::from(failed))
}

fn verify_golden(args: VerifyGoldenArgs) -> anyhow::Result<u8> {
    let dir = args
        .dir
        .unwrap_or_else(|| super::shared_dir().join("models/golden"));
    let device = args.device.resolve()?;
    let files = golden_files(&dir).with_context(|| format!("listing {}", dir.display()))?;
    if files.is_empty() {
        bail!("no golden files (*.safetensors) in {}", dir.display());
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        match verify_model_in(file, device, args.precision) {
            Ok(report) => {
                println!("{report}");
                if report.passed() {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
            Err(e) => {
                println!("FAIL {}: {e}", file.display());
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(u8::from(failed > 0))
}

fn info(args: InfoArgs) -> anyhow::Result<u8> {
    let config = ModelConfig::read(&args.config)?;
    let stated = config.stated_num_parameters;
    let model = Model::new(config, tch::Device::Cpu)?;
    print!("{}", model.describe());
    let params = model.num_parameters();
    match stated {
        Some(n) if n != params => println!("parameters: {params} (the config states {n})"),
        _ => println!("parameters: {params}"),
    }
    let flops = model.flops_per_sample();
    println!(
        "FLOPs per sample: {flops} ({:.3} GFLOP)",
        flops as f64 / 1e9
    );
    Ok(0)
}
