//! Evaluation: episode metrics with the reference's definitions.

pub mod metrics;

pub use metrics::{EpisodeMetrics, PlayerMetrics};
