//! One episode's Minecraft side: the mission MBAG generates for a config and its
//! grids, started on the given clients, each role's [`AgentMission`] begun.

use malmo_bridge::agent::{
    AgentError, AgentMission, ClientAddr, Timeouts, begin_all, start_mission,
};
use malmo_bridge::mission::Mission;
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mission_init::{BadExperimentId, ExperimentId};
use tokio::task::JoinSet;

use super::seam::mission::MissionBuildError;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The mission could not be built.
    #[error(transparent)]
    Mission(#[from] MissionBuildError),
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
