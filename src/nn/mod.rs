//! The reference networks in `tch`: the paper's convolutional network and the
//! axial transformer, built from the shared JSON configs and loading the shared
//! safetensors weights by name (`../shared/models/ARCHITECTURE.md`).
//!
//! # Brief overview
//! - [`ModelConfig`] reads `<name>.json`; [`Model::new`] builds the network from it
//!   and [`Model::load`] also loads `<name>.safetensors`, with a typed
//!   [`NnError`] naming any missing, unexpected or mis-shaped tensor.
//! - [`ObsBatch`] holds a batch of observations as tensors (built from
//!   [`crate::sim::obs::Observation`]s or given directly); [`Model::forward`] turns it
//!   and an optional [`RecurrentState`] into [`Outputs`]: flat policy logits in
//!   [`crate::sim::action::FlatLayout`]'s order, the value, the goal logits, the
//!   other player's predicted action, and the next state. A batching service can
//!   own a `Model` and call `forward` on concatenated batches and states.
//! - [`Model::save`] writes the same two-file format, so shared models and models
//!   trained here are interchangeable.
//! - [`golden`] checks every shared model against the reference's outputs.
//! - [`service`]: [`InferenceService`], one thread owning a `Model` that batches
//!   the requests of many callers ([`InferenceHandle`]s) into forward passes.
//!
//! # libtorch and devices
//! `scripts/setup` installs libtorch 2.11.0 (tch 0.24's; the lent GPU machine's
//! PyTorch) into `.libtorch/`: the CPU part where no GPU is present, the full CUDA
//! wheel set where `nvidia-smi` lists one. `.cargo/config.toml` points torch-sys
//! at it and bakes `$ORIGIN` rpaths into every binary. [`DeviceChoice`] selects
//! the device and [`Precision`] the number format.
//!
//! CUDA registers only if `libtorch_cuda.so` is a dependency of the binary, and
//! the linker's `--as-needed` drops it (nothing refers to its symbols), leaving
//! `tch::Cuda::is_available()` false on a GPU machine (LIBTORCH.md pitfall 2).
//! `build.rs` links it with `--no-as-needed` whenever the libtorch it builds
//! against has it. A binary built without it can still use CUDA by preloading
//! it (`LD_PRELOAD=.../libtorch_cuda.so`, what `scripts/gpu-check` does).

pub mod allocator;
mod config;
mod error;
mod evaluator;
pub mod flat;
pub mod golden;
mod layers;
mod model;
mod obs;
pub mod reduced;
pub mod service;
pub mod tf32;

use std::fmt;
use std::str::FromStr;

pub use config::{ModelClass, ModelConfig, NetConfig};
pub use error::NnError;
pub use evaluator::{NetEvaluator, ServiceAgents, SharedState};
pub use model::{Model, Outputs, RecurrentState, Trace, host_f32};
pub use obs::ObsBatch;
pub use service::{
    InferenceHandle, InferenceRequest, InferenceService, Pending, Prediction, ServiceConfig,
    ServiceStats, StateSource, StreamId,
};

/// The number format a network computes in (`--precision f32|bf16|f16`).
///
/// Reduced precision is for inference on CUDA, where it lets the tensor cores
/// run the convolutions; weights are stored and trained in `f32`. Inputs,
/// outputs and the recurrent state stay `f32`, so callers see no difference
/// but the rounding. `f32` is IEEE float32 on CUDA too: the binary turns
/// TF32 off at start-up ([`tf32`]); `NVIDIA_TF32_OVERRIDE=1` in the environment
/// leaves libtorch's TF32 convolutions on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 32-bit floats (the reference's format; the goldens' tolerance holds).
    #[default]
    F32,
    /// bfloat16: the range of `f32` with 8 bits of mantissa.
    Bf16,
    /// IEEE half precision (CUDA only).
    F16,
}

impl Precision {
    /// The libtorch element kind.
    pub fn kind(self) -> tch::Kind {
        match self {
            Self::F32 => tch::Kind::Float,
            Self::Bf16 => tch::Kind::BFloat16,
            Self::F16 => tch::Kind::Half,
        }
    }
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" | "float32" => Ok(Self::F32),
            "bf16" | "bfloat16" => Ok(Self::Bf16),
            "f16" | "float16" | "half" => Ok(Self::F16),
            _ => Err(format!(
                "unknown precision {s:?} (expected f32, bf16 or f16)"
            )),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
        })
    }
}

/// Which device to run networks on (`--device cpu|cuda|auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// The first CUDA GPU; an error if none is usable.
    Cuda,
    /// CUDA if `tch::Cuda::is_available()`, else the CPU.
    #[default]
    Auto,
}

impl DeviceChoice {
    /// The `tch` device, or [`NnError::DeviceUnavailable`] for `cuda` without CUDA.
    pub fn resolve(self) -> Result<tch::Device, NnError> {
        match self {
            Self::Cpu => Ok(tch::Device::Cpu),
            Self::Cuda if tch::Cuda::is_available() => Ok(tch::Device::Cuda(0)),
            Self::Cuda => Err(NnError::DeviceUnavailable("cuda".into())),
            Self::Auto => Ok(tch::Device::cuda_if_available()),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda),
            "auto" => Ok(Self::Auto),
            _ => Err(format!("unknown device {s:?} (expected cpu, cuda or auto)")),
        }
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Auto => "auto",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_choices_parse_and_resolve() {
        for s in ["cpu", "cuda", "auto"] {
            assert_eq!(s.parse::<DeviceChoice>().unwrap().to_string(), s);
        }
        assert!("gpu".parse::<DeviceChoice>().is_err());
        assert_eq!(DeviceChoice::Cpu.resolve().unwrap(), tch::Device::Cpu);
        // The CPU-only libtorch has no CUDA: auto falls back, cuda is an error.
        if !tch::Cuda::is_available() {
            assert_eq!(DeviceChoice::Auto.resolve().unwrap(), tch::Device::Cpu);
            assert!(matches!(
                DeviceChoice::Cuda.resolve(),
                Err(NnError::DeviceUnavailable(_))
            ));
        }
    }
}
