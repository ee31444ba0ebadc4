//! Evaluation: episode metrics with the reference's definitions, and the runner
//! that plays many episodes of a human and an assistant and summarises them.
//!
//! - [`metrics`]: the reference's `calculate_metrics`.
//! - [`run`]: parallel, seed-deterministic evaluation runs (`mbag evaluate`).
//! - [`stats`]: means with t intervals and Wilson intervals for rates.

pub mod metrics;
pub mod run;
pub mod stats;

pub use metrics::{EpisodeMetrics, PlayerMetrics};
pub use run::{
    EpisodeOutcome, EpisodeRecord, EvalError, EvalSettings, Evaluation, Summary, evaluate,
};
pub use stats::{MeanCi, RateCi};
