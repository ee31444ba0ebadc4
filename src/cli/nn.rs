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
    }
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
