//! The mission document MBAG generates for a config (the reference's
//! `_get_mission_spec_xml`).

use malmo_bridge::grid::{BlockGrid, GridError, WorldSize as GridSize};
use malmo_bridge::mission::{
    BadPlayerName, Boundary, Mission, MissionError, Player, PlayerName, Spectator,
};

use crate::sim::block::Blocks;
use crate::sim::config::Config;

/// Why a config's mission could not be built.
#[derive(Debug, thiserror::Error)]
pub enum MissionBuildError {
    /// The world does not fit a Minecraft mission grid.
    #[error("the world cannot be a mission grid: {0}")]
    Grid(#[from] GridError),
    /// A player name Minecraft would refuse.
    #[error(transparent)]
    PlayerName(#[from] BadPlayerName),
    /// The mission could not be built.
    #[error("the mission cannot be built: {0}")]
    Mission(#[from] MissionError),
}

/// The mission the reference generates for `config`, the goal and the current
/// world (`_get_mission_spec_xml`): one Malmo agent per player, named as the
/// config says (or `player_N`), humans in survival and AIs in creative, plus the
/// spectator and walls when the config asks for them.
pub fn mission_for(
    config: &Config,
    goal: &Blocks,
    current: &Blocks,
) -> Result<Mission, MissionBuildError> {
    mission_with_chat(config, goal, current, false)
}

/// [`mission_for`], with every AI player also observing chat when `ai_chat`
/// (the daemon's chat: an assistant's own connection then hears the others,
/// so no person's client is needed to read what is said). Without it, the
/// reference's document exactly.
pub fn mission_with_chat(
    config: &Config,
    goal: &Blocks,
    current: &Blocks,
    ai_chat: bool,
) -> Result<Mission, MissionBuildError> {
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
            } else if ai_chat {
                Player::ai(name).with_chat()
            } else {
                Player::ai(name)
            })
        })
        .collect::<Result<Vec<_>, MissionBuildError>>()?;
    let boundary = if config.malmo.restrict_players {
        Boundary::Walled
    } else {
        Boundary::Open
    };
    Ok(Mission::new(&grid(goal)?, &grid(current)?, players)?
        .with_spectator(config.malmo.use_spectator.then(Spectator::default))
        .with_boundary(boundary))
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
    use crate::daemon::session::{Session, SessionError};
    use crate::sim::block::BlockId;
    use crate::sim::coords::Cell;
    use crate::sim::env::Env;
    use malmo_bridge::agent::Timeouts;
    use malmo_bridge::mission_ended::MissionEndedStatus;

    fn timeouts() -> Timeouts {
        Timeouts {
            exchange: Duration::from_secs(5),
            find_server: Duration::from_secs(10),
            find_server_poll: Duration::from_millis(100),
            ..Timeouts::default()
        }
    }

    #[test]
    fn with_chat_only_the_ai_seats_change() {
        let config = Config::from_json(&json!({
            "world_size": [6, 5, 6],
            "num_players": 2,
            "players": [
                {"player_name": "human", "is_human": true},
                {"player_name": "assistant"}
            ],
            "malmo": {"use_malmo": true},
        }))
        .unwrap();
        let world = Blocks::initial_world(config.world_size);
        let reference = mission_for(&config, &world, &world).unwrap();
        assert_eq!(
            mission_with_chat(&config, &world, &world, false).unwrap(),
            reference
        );
        let chat = mission_with_chat(&config, &world, &world, true).unwrap();
        let hears = |m: &Mission| {
            m.players()
                .iter()
                .map(|p| p.observes_chat())
                .collect::<Vec<_>>()
        };
        assert_eq!(hears(&reference), [true, false]);
        assert_eq!(hears(&chat), [true, true]);
        assert_eq!(chat.players()[1].kind, reference.players()[1].kind);
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
