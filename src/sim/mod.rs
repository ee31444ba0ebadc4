//! The MBAG simulator: pure, deterministic, no I/O, no threads, no tch.
//!
//! It re-implements the reference environment step for step
//! (`../shared/reference/ENV_SPEC.md`), quirks included, and is checked against the
//! reference's golden trajectories.

pub mod block;
pub mod coords;
pub mod goal;

pub use block::{BlockId, Blocks, NUM_BLOCKS};
pub use coords::{Cell, CellIndex, PlayerId, PlayerPos, WorldSize};
