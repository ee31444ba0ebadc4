//! The MBAG simulator: pure, deterministic, no I/O, no threads, no tch.
//!
//! It re-implements the reference environment step for step
//! (`../shared/reference/ENV_SPEC.md`), quirks included, and is checked against the
//! reference's golden trajectories (in the `mbag` crate, which re-exports this one as
//! `mbag::sim`). [`vecenv`] alone uses threads: many environments stepped in one call.
//!
//! It is a crate of its own so that the Python wheel (`python/`) can build it without
//! the networks and libtorch.
#![warn(missing_docs)]

pub mod action;
pub mod block;
pub mod config;
pub mod coords;
pub mod distribution;
pub mod env;
pub mod goal;
pub mod inventory;
pub mod mask;
pub mod numpy;
pub mod obs;
pub mod presets;
pub mod pyhash;
pub mod state;
pub mod vecenv;
pub mod viewpoint;

/// `relative` (one of the `../shared/...` defaults, relative to the project root)
/// from this crate's tests, which run in `mbag-sim/`.
#[cfg(test)]
pub(crate) fn from_project_root(relative: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

pub use action::{Action, ActionType, FlatLayout};
pub use block::{BlockId, Blocks, NUM_BLOCKS};
pub use config::Config;
pub use coords::{Cell, CellIndex, PlayerId, PlayerPos, WorldSize};
pub use env::{Env, StepInfo, StepOutcome};
pub use obs::Observation;
pub use state::EnvState;
