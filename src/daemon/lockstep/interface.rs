//! What the lockstep loop takes and gives back: its settings and parts, who
//! controls each player, the view it publishes after every step, what it
//! measured, and how and why it ended.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::daemon::agent_thread::{AgentThread, AgentThreadError};
use crate::daemon::chat::{ChatLog, ChatSettings};
use crate::daemon::executor::{Executor, ExecutorReport};
use crate::daemon::recorder::{RecorderError, RecorderThread};
use crate::daemon::roles::RoleEvent;
use crate::daemon::seam::commands;
use crate::recording::{EndRecord, EpisodeRecorder};
use crate::sim::env::Env;

/// How the loop runs.
#[derive(Clone, Debug)]
pub struct LockstepSettings {
    /// The longest a step waits for a human action (the reference's
    /// `action_delay`, 0.8 s in the human study).
    pub step_period: Duration,
    /// Stop (truncated) after this many steps.
    pub max_steps: Option<u64>,
    /// Keep every observation's JSON in the recording.
    pub keep_observations: bool,
    /// How long observations are only watched after the set-up commands, before
    /// the detector starts: teleports and gifts of the set-up are not human
    /// actions.
    pub settle: Duration,
    /// Chat between the seats (on by default); the episode also asks Minecraft
    /// to show the AI seats chat when it is on.
    pub chat: ChatSettings,
}

impl Default for LockstepSettings {
    fn default() -> Self {
        Self {
            step_period: Duration::from_millis(800),
            max_steps: None,
            keep_observations: false,
            settle: Duration::from_millis(300),
            chat: ChatSettings::default(),
        }
    }
}

/// Who chooses a player's actions.
#[derive(Debug)]
pub enum Controller {
    /// A person in Minecraft: actions come from the detector.
    Minecraft,
    /// An agent on its own thread: its actions become Malmo commands.
    Agent(AgentThread),
}

/// What the loop publishes after every step, for progress displays and for an
/// emulated human who needs to see the world.
#[derive(Clone, Debug)]
pub struct StepView {
    /// Steps taken.
    pub steps: u64,
    /// The simulator after the step.
    pub env: Arc<Env>,
    /// Per player, the detected actions that no step has taken yet: a person
    /// who reacts to the step's result waits for their own.
    pub queued: Vec<usize>,
    /// The episode is ending: an emulated person stops acting, so that the final
    /// sync sees Minecraft at rest.
    pub closing: bool,
    /// The messages said so far (with chat on), numbered, so that an emulated
    /// person who skipped steps catches up on what it missed.
    pub chat: ChatLog,
}

/// Why the loop stopped.
#[derive(Debug, thiserror::Error)]
pub enum LockstepError {
    /// A role's Minecraft connection failed.
    #[error("Minecraft connection of player {role} lost: {error}")]
    MinecraftLost {
        /// The role.
        role: usize,
        /// What happened.
        error: malmo_bridge::agent::AgentError,
    },
    /// Minecraft ended the mission before the episode was over.
    #[error(
        "Minecraft ended the mission of player {role} ({status:?}) before the episode was over"
    )]
    MinecraftEnded {
        /// The role.
        role: usize,
        /// The status Minecraft gave.
        status: malmo_bridge::mission_ended::MissionEndedStatus,
    },
    /// Every role task has stopped.
    #[error("every Minecraft connection has closed")]
    AllRolesGone,
    /// An agent failed.
    #[error("player {player}'s agent: {error}")]
    Agent {
        /// The player.
        player: usize,
        /// What happened.
        error: AgentThreadError,
    },
    /// Commands could not be queued.
    #[error(transparent)]
    Executor(#[from] crate::daemon::executor::ExecutorUnavailable),
    /// A command could not be sent.
    #[error(transparent)]
    Command(#[from] crate::daemon::roles::RoleGone),
    /// The recording could not be written.
    #[error(transparent)]
    Recording(#[from] RecorderError),
    /// The simulator refused a step.
    #[error("the simulator refused a step: {0}")]
    Step(#[from] crate::sim::env::StepError),
    /// The set-up commands could not be built.
    #[error("set-up: {0}")]
    Setup(#[from] commands::ItemError),
    /// A repair could not be applied to the simulator.
    #[error("a repair could not be applied: {0}")]
    Repair(String),
    /// Stopped from outside (Ctrl-C).
    #[error("stopped by the operator")]
    Interrupted,
}

/// Latencies the loop measured, for `mbag bench daemon`.
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    /// From an observation's arrival on its socket to the detector's update.
    pub observation_to_update: Vec<Duration>,
    /// From an AI decision to its first command written to the socket.
    pub decision_to_command: Vec<Duration>,
    /// Time agents took to decide.
    pub inference: Vec<Duration>,
    /// Observations read.
    pub observations: u64,
    /// Observations that could not be decoded (skipped).
    pub undecodable: u64,
    /// Divergences found and repaired.
    pub divergences: u64,
    /// Human actions detected.
    pub human_actions: u64,
    /// Places and breaks attributed by the patched mod's block-change events.
    pub attributed_by_mod: u64,
    /// Human actions dropped because the player's queue was full
    /// ([`MAX_QUEUED_ACTIONS`](super::detect::MAX_QUEUED_ACTIONS)).
    pub human_actions_dropped: u64,
    /// Expected effects of AI actions that Minecraft never showed.
    pub unseen_expected: u64,
    /// Steps whose sync left out cells or players that AI actions in flight
    /// were still changing.
    pub syncs_scoped: u64,
}

/// How the episode ended, for the footer and the caller.
#[derive(Debug)]
pub struct LoopEnd {
    /// The footer's end record.
    pub end: EndRecord,
    /// The error that stopped the loop, if any.
    pub error: Option<LockstepError>,
}

/// The parts a [`Lockstep`] is built from.
#[derive(Debug)]
pub struct LockstepParts {
    /// The simulator, reset to the episode's start (tracing is switched on).
    pub env: Env,
    /// Per player, who controls it.
    pub controllers: Vec<Controller>,
    /// The role tasks' events.
    pub events: mpsc::Receiver<RoleEvent>,
    /// The executor over the role tasks.
    pub executor: Executor,
    /// The executor's reports.
    pub reports: mpsc::Receiver<ExecutorReport>,
    /// The recorder started at the env's state.
    pub recorder: EpisodeRecorder,
    /// The writer thread, header written.
    pub writer: RecorderThread,
    /// Settings.
    pub settings: LockstepSettings,
    /// Set to true to stop the loop (the episode is recorded as aborted).
    pub stop: watch::Receiver<bool>,
}
