//! The footer line: how the episode ended. A file without one ended abnormally.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codec::Float;

/// Why the episode ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The env said done (goal completed or horizon).
    Done,
    /// Stopped early on purpose (a step limit, the end of a source file).
    Truncated,
    /// Stopped by an error or an operator.
    Aborted,
}

/// The end of the episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    /// Why.
    pub reason: EndReason,
    /// Details for people (the error, the signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The footer: the last line of a finished recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// Number of step lines.
    pub steps: u64,
    /// How it ended.
    pub end: EndRecord,
    /// Per player, the sum of rewards.
    pub total_rewards: Vec<Float>,
    /// Per player, the goal percentage after the last step.
    pub final_goal_percentage: Vec<Float>,
    /// Whether the world equals the goal at the end.
    pub goal_completed: bool,
    /// The reference's `calculate_metrics` dict (`eval::metrics`), when every
    /// step had infos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Value>,
}
