//! `mbag bench daemon`: the daemon's own latency in an emulated episode in watch
//! mode (two agents acting in the in-process emulator), inference excluded:
//! from an observation's arrival on its socket to the detector's update of the
//! Minecraft mirror, and from an agent's decision to its first command written
//! to the client's socket.

use std::sync::Arc;
use std::time::Duration;

use super::bridge::Percentiles;
use crate::agents::spec::{AgentSpec, StandardAgents};
use crate::daemon::episode::{
    EpisodeError, EpisodeHooks, EpisodeSettings, Minecraft, Mode, Seat, run_episode,
};
use crate::daemon::lockstep::{LockstepSettings, LoopStats};
use crate::nn::{DeviceChoice, ServiceAgents, ServiceConfig};
use crate::sim::config::ConfigError;
use crate::sim::goal::{GoalConfig, GoalError};
use crate::sim::presets::{Game, PAPER_WORLD, Player};

/// The p99 both daemon latencies should stay under.
pub const DAEMON_TARGET: Duration = Duration::from_millis(5);

/// What to measure.
#[derive(Clone, Debug)]
pub struct DaemonBench {
    /// The agent in both seats.
    pub agent: AgentSpec,
    /// Steps to play.
    pub steps: u64,
    /// The time between steps.
    pub step_period: Duration,
}

/// What the episode measured.
#[derive(Debug)]
pub struct DaemonLatencies {
    /// Observation arrival on the socket to the detector's update.
    pub observation_to_update: Option<Percentiles>,
    /// An agent's decision to its first command on the socket.
    pub decision_to_command: Option<Percentiles>,
    /// The agents' inference, for scale (not the daemon's).
    pub inference: Option<Percentiles>,
    /// Steps played.
    pub steps: u64,
    /// The loop's counters (observations, divergences, ...).
    pub stats: LoopStats,
}

/// Why the measurement could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonBenchError {
    /// The game config was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The goal generator could not be built.
    #[error(transparent)]
    Goals(#[from] crate::sim::goal::config::ConfigError),
    /// No goal could be generated.
    #[error(transparent)]
    Goal(#[from] GoalError),
    /// The scratch folder or the runtime could not be made.
    #[error("bench daemon: {0}")]
    Io(#[from] std::io::Error),
    /// The episode could not start.
    #[error(transparent)]
    Episode(#[from] EpisodeError),
    /// The episode started and then failed.
    #[error("the bench episode failed: {0}")]
    Failed(String),
}

/// Plays the episode and returns its latencies. The recording goes to a
/// scratch folder removed afterwards.
pub fn measure(bench: &DaemonBench) -> Result<DaemonLatencies, DaemonBenchError> {
    let assistant = Player {
        goal_visible: false,
        ..Player::named("assistant")
    };
    let config = Game::live(vec![Player::named("human"), assistant], PAPER_WORLD).config()?;
    let dir = std::env::temp_dir().join(format!("mbag-bench-daemon-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let settings = EpisodeSettings {
        mode: Mode::Watch,
        config,
        seats: vec![
            Seat::Agent(bench.agent.clone()),
            Seat::Agent(bench.agent.clone()),
        ],
        seed: 0,
        minecraft: Minecraft::Emulated {
            mod_flavour: malmo_bridge::mod_patch::ModFlavour::Stock,
            faults: Vec::new(),
        },
        recording: dir.join("bench.jsonl"),
        fsync: crate::recording::Fsync::Never,
        lockstep: LockstepSettings {
            step_period: bench.step_period,
            max_steps: Some(bench.steps),
            ..LockstepSettings::default()
        },
        agent_address: std::net::Ipv4Addr::LOCALHOST.into(),
        timeouts: malmo_bridge::agent::Timeouts::default(),
        episode_id: "bench-daemon".into(),
        start_from: None,
        origin: serde_json::Map::new(),
    };
    let factory = Arc::new(StandardAgents::with_network(Arc::new(ServiceAgents::new(
        DeviceChoice::Cpu,
        ServiceConfig::default(),
    ))));
    let mut goals = GoalConfig::from_env("random", &serde_json::json!({}))?.build()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        let (_stop_tx, stop) = tokio::sync::watch::channel(false);
        run_episode(
            settings,
            Some(goals.as_mut()),
            factory,
            stop,
            EpisodeHooks::default(),
        )
        .await
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&dir);
    let report = report?;
    if let Some(e) = &report.end.error {
        return Err(DaemonBenchError::Failed(e.to_string()));
    }
    let mut stats = report.stats;
    Ok(DaemonLatencies {
        observation_to_update: Percentiles::of(&mut stats.observation_to_update),
        decision_to_command: Percentiles::of(&mut stats.decision_to_command),
        inference: Percentiles::of(&mut stats.inference),
        steps: report.steps,
        stats,
    })
}
