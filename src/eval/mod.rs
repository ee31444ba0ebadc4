//! Evaluation: episode metrics with the reference's definitions, and the runner
//! that plays many episodes of a human and an assistant and summarises them.
//!
//! - [`metrics`]: the reference's `calculate_metrics`.
//! - [`plot`]: goal % against steps beside the paper's Table 2 (`mbag plot`).
//! - [`record`]: evaluated episodes written as recordings (`--record`).
//! - [`run`]: parallel, seed-deterministic evaluation runs (`mbag evaluate`).
//! - [`stats`]: means with t intervals and Wilson intervals for rates.
//! - [`watch_help`]: watch a demonstration, then help build its goal
//!   (`mbag watch-help`).

pub mod metrics;
pub mod plot;
pub mod record;
pub mod run;
pub mod stats;
pub mod watch_help;

pub use metrics::{EpisodeMetrics, PlayerMetrics};
pub use run::{
    EpisodeOutcome, EpisodeRecord, EvalError, EvalSettings, Evaluation, Summary, evaluate,
};
pub use stats::{MeanCi, RateCi};
