//! Recording a simulated episode through the writer, as the daemon will record a
//! live one: step, build the record, append, repeat.

use std::path::Path;

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::error::RecordingError;
use super::footer::{EndReason, EndRecord};
use super::header::{Controller, PlayerEntry, Role, Source, SourceKind};
use super::record::{EpisodeRecorder, SnapshotMode};
use super::writer::{Fsync, RecordingWriter};
use crate::agents::spec::{AgentFactory, AgentSpec, StandardAgents};
use crate::sim::config::Config;
use crate::sim::env::Env;
use crate::sim::goal::GoalGenerator;

/// Why a simulated episode could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// Writing failed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// An agent spec cannot be built.
    #[error("player {player}: {message}")]
    Agent {
        /// Which seat.
        player: usize,
        /// Why.
        message: String,
    },
    /// The goal generator failed.
    #[error("goal: {0}")]
    Goal(String),
}

/// Plays one episode of `config` with heuristic agents `specs` (player 0 the
/// human) and writes it to `path`; at most `max_steps` steps. Returns the steps.
pub fn record_simulated(
    path: &Path,
    config: &Config,
    goals: &mut dyn GoalGenerator,
    specs: &[AgentSpec],
    seed: u64,
    max_steps: u64,
    mode: SnapshotMode,
) -> Result<u64, SimulateError> {
    let factory = StandardAgents::heuristics_only();
    let mut agents = specs
        .iter()
        .enumerate()
        .map(|(p, s)| {
            factory
                .build(s, p, config)
                .map_err(|e| SimulateError::Agent {
                    player: p,
                    message: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (p, agent) in agents.iter_mut().enumerate() {
        agent.reset(seed * 100 + p as u64);
    }
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(seed);
    env.reset(goals, &mut rng)
        .map_err(|e| SimulateError::Goal(e.to_string()))?;
    let players = specs
        .iter()
        .enumerate()
        .map(|(p, s)| PlayerEntry {
            index: p,
            role: if p == 0 { Role::Human } else { Role::Assistant },
            controller: Controller::Agent,
            agent: Some(s.to_string()),
            models: Vec::new(),
            note: None,
        })
        .collect();
    let (mut recorder, header) = EpisodeRecorder::start(
        &env,
        format!("simulated_seed{seed}"),
        Source {
            kind: SourceKind::Simulated,
            description: Some(format!("mbag recording simulate --seed {seed}")),
            origin: None,
        },
        players,
        mode,
    );
    let mut writer = RecordingWriter::create(path, &header, Fsync::HeaderAndFooter)?;
    let mut obs: Vec<_> = (0..env.num_players())
        .map(|_| env.new_observation())
        .collect();
    let mut done = false;
    while !done && writer.steps() < max_steps {
        for (p, o) in obs.iter_mut().enumerate() {
            // Overlapping players only spoil the observation's markers; the
            // agents still act on it, as in `mbag demo`.
            if let Err(e) = env.observe(p, o) {
                log::debug!("{e}");
            }
        }
        let actions: Vec<_> = agents.iter_mut().zip(&obs).map(|(a, o)| a.act(o)).collect();
        let outcome = env.step(&actions).map_err(|e| SimulateError::Agent {
            player: 0,
            message: e.to_string(),
        })?;
        done = outcome.done;
        let outcome = outcome.clone();
        let record = recorder.step(&env, &actions, &outcome);
        writer.append(&record)?;
    }
    let end = if done {
        EndRecord {
            reason: EndReason::Done,
            message: None,
        }
    } else {
        EndRecord {
            reason: EndReason::Truncated,
            message: Some(format!("step limit {max_steps}")),
        }
    };
    let steps = writer.steps();
    writer.finish(&recorder.footer(&env, end))?;
    Ok(steps)
}
