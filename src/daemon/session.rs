//! One episode's Minecraft side: the mission MBAG generates for a config and its
//! grids, started on the given clients, each role's [`AgentMission`] begun.

use malmo_bridge::agent::{
    AgentError, AgentMission, ClientAddr, Timeouts, begin_all, start_mission,
};
use malmo_bridge::grid::{BlockGrid, GridError, WorldSize as GridSize};
use malmo_bridge::mission::{
    BadPlayerName, Boundary, Mission, MissionError, Player, PlayerName, Spectator,
};
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mission_init::{BadExperimentId, ExperimentId};
use tokio::task::JoinSet;

use crate::sim::block::Blocks;
use crate::sim::config::Config;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The world does not fit a Minecraft mission grid.
    #[error("the world cannot be a mission grid: {0}")]
    Grid(#[from] GridError),
    /// A player name Minecraft would refuse.
    #[error(transparent)]
    PlayerName(#[from] BadPlayerName),
    /// The mission could not be built.
    #[error("the mission cannot be built: {0}")]
    Mission(#[from] MissionError),
    /// The experiment id is not usable.
    #[error(transparent)]
    ExperimentId(#[from] BadExperimentId),
    /// Fewer clients than the mission has agents.
    #[error("the mission needs {needed} Minecraft clients, {given} given")]
    TooFewClients {
        /// Agents in the mission (players, plus the spectator).
        needed: usize,
        /// Clients named.
        given: usize,
    },
    /// Minecraft did not start the mission.
    #[error("starting the mission: {0}")]
    Start(#[from] AgentError),
}

/// The mission the reference generates for `config`, the goal and the current
/// world (`_get_mission_spec_xml`): one Malmo agent per player, named as the
/// config says (or `player_N`), humans in survival and AIs in creative, plus the
/// spectator and walls when the config asks for them.
pub fn mission_for(
    config: &Config,
    goal: &Blocks,
    current: &Blocks,
) -> Result<Mission, SessionError> {
    let s = goal.size();
    let size = GridSize::new(s.width as u32, s.height as u32, s.depth as u32)?;
    let grid = |blocks: &Blocks| BlockGrid::from_mbag_ids(size, blocks.ids());
    let players = config
        .players
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = match &p.player_name {
                Some(name) => PlayerName::truncated(name)?,
                None => PlayerName::default_for(i),
            };
            Ok(if p.is_human {
                Player::human(name)
            } else {
                Player::ai(name)
            })
        })
        .collect::<Result<Vec<_>, SessionError>>()?;
    let boundary = if config.malmo.restrict_players {
        Boundary::Walled
    } else {
        Boundary::Open
    };
    Ok(Mission::new(&grid(goal)?, &grid(current)?, players)?
        .with_spectator(config.malmo.use_spectator.then(Spectator::default))
        .with_boundary(boundary))
}

/// A started mission: one begun [`AgentMission`] per role, in role order
/// (players first, then the spectator).
#[derive(Debug)]
pub struct Session {
    /// The mission as sent.
    pub mission: Mission,
    /// Each role's connection to its Minecraft client.
    pub roles: Vec<AgentMission>,
}

impl Session {
    /// Starts `mission` on `clients` and waits until every role has begun.
    /// `agent_address` is where the clients reach this machine (the listeners
    /// bind it).
    pub async fn start(
        mission: Mission,
        clients: &[ClientAddr],
        experiment_id: &str,
        agent_address: std::net::IpAddr,
        timeouts: Timeouts,
    ) -> Result<Self, SessionError> {
        if clients.len() < mission.num_agents() {
            return Err(SessionError::TooFewClients {
                needed: mission.num_agents(),
                given: clients.len(),
            });
        }
        let id = ExperimentId::new(experiment_id)?;
        let started = start_mission(clients, &mission, &id, agent_address, timeouts).await?;
        let roles = begin_all(started).await?;
        log::info!(
            "mission {experiment_id} running on {}",
            roles
                .iter()
                .map(|r| r.client().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Self { mission, roles })
    }

    /// Ends the mission: every role quits at once (the mod ends a mission only
    /// when all its agents have quit, so quitting one by one would wait on the
    /// others), and each role's MissionEnded status comes back in role order.
    pub async fn quit(self) -> Vec<Result<MissionEndedStatus, AgentError>> {
        let mut quitting = JoinSet::new();
        for (i, mut role) in self.roles.into_iter().enumerate() {
            quitting.spawn(async move { (i, role.quit().await) });
        }
        let mut statuses: Vec<Option<Result<MissionEndedStatus, AgentError>>> =
            (0..quitting.len()).map(|_| None).collect();
        while let Some(joined) = quitting.join_next().await {
            let (i, status) = joined.expect("quit tasks do not panic");
            statuses[i] = Some(status);
        }
        statuses
            .into_iter()
            .map(|s| s.expect("every role answered"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use malmo_bridge::agent::MissionEvent;
    use malmo_bridge::decoded::DecodedObservation;
    use malmo_bridge::emulator::{Emulator, EmulatorConfig};
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use serde_json::json;

    use super::*;
    use crate::sim::block::BlockId;
    use crate::sim::coords::Cell;
    use crate::sim::env::Env;

    fn timeouts() -> Timeouts {
        Timeouts {
            exchange: Duration::from_secs(5),
            find_server: Duration::from_secs(10),
            find_server_poll: Duration::from_millis(100),
            ..Timeouts::default()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_two_player_episode_starts_on_the_emulator() {
        let config = Config::from_json(&json!({
            "world_size": [6, 5, 6],
            "num_players": 2,
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": true},
            "players": [
                {"player_name": "human", "is_human": true},
                {"player_name": "assistant"}
            ],
            "malmo": {"use_malmo": true},
        }))
        .unwrap();
        let mut env = Env::new(config.clone());
        let mut goal = Blocks::initial_world(env.size());
        goal.set(Cell::new(2, 2, 2), BlockId(7));
        env.reset_with_goal(goal, &mut StdRng::seed_from_u64(0));
        let mission = mission_for(&config, env.goal(), &env.state().blocks).unwrap();
        let emulator = Emulator::start(EmulatorConfig {
            world_delay: Duration::from_millis(50),
            ..EmulatorConfig::ephemeral(2)
        })
        .await
        .unwrap();

        let too_few = Session::start(
            mission.clone(),
            &emulator.pool()[..1],
            "mbag-test",
            std::net::Ipv4Addr::LOCALHOST.into(),
            timeouts(),
        )
        .await;
        assert!(
            matches!(
                too_few,
                Err(SessionError::TooFewClients {
                    needed: 2,
                    given: 1
                })
            ),
            "{too_few:?}"
        );

        let mut session = Session::start(
            mission,
            &emulator.pool(),
            "mbag-test",
            std::net::Ipv4Addr::LOCALHOST.into(),
            timeouts(),
        )
        .await
        .unwrap();
        assert_eq!(session.roles.len(), 2);
        for (role, name) in session.roles.iter_mut().zip(["human", "assistant"]) {
            let observation = loop {
                let event = tokio::time::timeout(Duration::from_secs(5), role.next_event())
                    .await
                    .expect("an event within 5 s")
                    .unwrap();
                if let MissionEvent::Observation { json, .. } = event {
                    break DecodedObservation::decode(json.as_bytes()).unwrap();
                }
            };
            assert_eq!(observation.name.as_deref(), Some(name));
        }
        for status in session.quit().await {
            assert_eq!(status.unwrap(), MissionEndedStatus::Ended);
        }
    }
}
