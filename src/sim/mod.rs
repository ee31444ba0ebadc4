//! The MBAG simulator: pure, deterministic, no I/O, no threads, no tch.
//!
//! It re-implements the reference environment step for step
//! (`../shared/reference/ENV_SPEC.md`), quirks included, and is checked against the
//! reference's golden trajectories.

pub mod action;
pub mod block;
pub mod config;
pub mod coords;
pub mod env;
pub mod goal;
pub mod inventory;
pub mod mask;
pub mod numpy;
pub mod obs;
pub mod presets;
pub mod pyhash;
pub mod state;
pub mod viewpoint;

pub use action::{Action, ActionType, FlatLayout};
pub use block::{BlockId, Blocks, NUM_BLOCKS};
pub use config::Config;
pub use coords::{Cell, CellIndex, PlayerId, PlayerPos, WorldSize};
pub use env::{Env, StepInfo, StepOutcome};
pub use obs::Observation;
pub use state::EnvState;
