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
//! `scripts/setup` installs a CPU-only libtorch 2.13.0 into `.libtorch/`
//! (`../shared/setup/LIBTORCH.md`); `.cargo/config.toml` points torch-sys at it and
//! bakes `$ORIGIN` rpaths into every binary. [`DeviceChoice`] selects the device.
//!
//! CUDA is not set up here (no GPU on the development machines). It needs two
//! things the CPU install lacks:
//! - the full CUDA wheel set (`pip install torch==2.13.0` with its dependencies,
//!   and `libtorch_cuda.so` not deleted);
//! - link flags that keep `libtorch_cuda.so`, which rustc's `--as-needed` otherwise
//!   drops so that `tch::Cuda::is_available()` stays false even on a GPU machine
//!   (LIBTORCH.md pitfall 2): add `"-C", "link-arg=-Wl,--no-as-needed",
//!   "-C", "link-arg=-ltorch_cuda", "-C", "link-arg=-Wl,--as-needed"` to the
//!   rustflags in `.cargo/config.toml`.

pub mod allocator;
mod config;
mod error;
mod evaluator;
pub mod flat;
pub mod golden;
mod layers;
mod model;
mod obs;
pub mod service;

use std::fmt;
use std::str::FromStr;

pub use config::{ModelClass, ModelConfig, NetConfig};
pub use error::NnError;
pub use evaluator::{NetEvaluator, ServiceAgents, SharedState};
pub use model::{Model, Outputs, RecurrentState, Trace};
pub use obs::ObsBatch;
pub use service::{
    InferenceHandle, InferenceRequest, InferenceService, Pending, Prediction, ServiceConfig,
    ServiceStats, StateSource, StreamId,
};

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
