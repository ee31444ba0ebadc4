//! AssistanceZero training (section 4.2 and appendix A of the paper): self-play
//! with the assistant's MCTS against a human model, a replay buffer of fragments,
//! and SGD on the paper's loss.
//!
//! # Brief overview
//! - [`config`]: the JSON config (`configs/train/assistant_*.json`).
//! - [`selfplay`]: many environments played in parallel, producing samples;
//!   [`partial_builds`]: the goal corpus built without a human model.
//! - [`replay`]: samples, fragments and the replay buffer; [`replay_file`]:
//!   the buffer saved with each checkpoint.
//! - [`trainer`]: the loop (collect, replay, SGD, log, checkpoint, resume).
//! - [`loss`]: equation 1 as a function of predictions and targets; [`batch`]:
//!   samples to tensors.

pub mod batch;
pub mod config;
pub mod goal_eval;
pub mod loss;
pub mod partial_builds;
pub mod remote;
pub mod replay;
pub mod replay_file;
pub mod selfplay;
pub mod trainer;

use std::path::PathBuf;

use crate::agents::AgentError;
use crate::agents::spec::AgentSpecError;
use crate::mcts::MctsError;
use crate::nn::NnError;
use crate::sim::action::ActionError;
use crate::sim::env::{PlayersOverlapping, StepError};
use crate::sim::goal::GoalError;

/// Why assistant training failed.
#[derive(Debug, thiserror::Error)]
pub enum AssistantError {
    /// The config file cannot be read or used.
    #[error("{path}: bad assistant training config: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A goal could not be generated.
    #[error("goal generation: {0}")]
    Goal(#[from] GoalError),
    /// The human model could not be built.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// The human model could not act.
    #[error("the human model: {0}")]
    Act(#[from] AgentError),
    /// The assistant's search failed.
    #[error("the assistant's search: {0}")]
    Mcts(#[from] MctsError),
    /// The env refused a step.
    #[error("env step: {0}")]
    Step(#[from] StepError),
    /// Two players overlapped.
    #[error(transparent)]
    Observe(#[from] PlayersOverlapping),
    /// A flat action was outside the layout.
    #[error("flat action: {0}")]
    Action(#[from] ActionError),
    /// The network failed.
    #[error(transparent)]
    Nn(#[from] NnError),
    /// The metrics log or a checkpoint failed.
    #[error(transparent)]
    Train(#[from] crate::train::TrainError),
    /// libtorch failed.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// Self-play on remote workers failed (`--ray`).
    #[error("remote self-play: {0}")]
    Remote(#[from] remote::RemoteError),
}
