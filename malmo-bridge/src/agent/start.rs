//! Starting a whole mission the way MBAG does: reserve a client per agent, hand
//! role 0 its MissionInit, let every other role find role 0's server with
//! `MALMO_FIND_SERVER`, then wait until all have begun (the mod echoes only once
//! every player has joined).

use std::net::IpAddr;

use tokio::task::JoinSet;

use super::client::ClientAddr;
use super::error::AgentError;
use super::mission::{AgentMission, Timeouts, reserve_clients, start_role_at};
use crate::mission::{Mission, Role};
use crate::mission_init::{
    ClientAgentConnection, ExperimentId, MissionInit, MissionInitForm, ServerConnection,
};

/// Starts every role of `mission` on the clients of `pool`, returning the
/// missions before they begin. `agent_address` is where the clients reach our
/// listeners (`127.0.0.1` when Minecraft runs on this machine): the listeners
/// bind it and the MissionInit names it. The MissionInit
/// goes in its compact form, which the mod's schema accepts.
pub async fn start_mission(
    pool: &[ClientAddr],
    mission: &Mission,
    experiment_id: &ExperimentId,
    agent_address: IpAddr,
    timeouts: Timeouts,
) -> Result<Vec<AgentMission>, AgentError> {
    let experiment = experiment_id.as_str();
    let reserved = reserve_clients(pool, mission.num_agents(), experiment, &timeouts).await?;
    let mut missions = Vec::with_capacity(mission.num_agents());
    for role in mission.roles() {
        let r = role.0 as usize;
        // Role 0 starts on a client it reserved; the others may land on any
        // client, which the mod re-checks against the reservation.
        let clients = if r == 0 { &reserved[..] } else { pool };
        let client = &clients[r % clients.len()];
        let video = Some(role) == mission.spectator_role();
        let document = mission.document(role);
        let (host, port) = (client.host.clone(), client.control_port);
        let id = experiment_id.clone();
        let address = agent_address.to_string();
        let init = move |ports: &_, server: Option<&ServerConnection>| {
            let connection = ClientAgentConnection {
                client_address: host,
                client_mission_control_port: port,
                client_commands_port: 0,
                agent_address: address,
                agent_ports: *ports,
            };
            MissionInit::new(document, id, Role(role.0), connection)
                .with_server(server.cloned())
                .render(MissionInitForm::Compact)
        };
        missions.push(
            start_role_at(agent_address, clients, r, experiment, video, init, timeouts).await?,
        );
    }
    Ok(missions)
}

/// Waits for every mission's echo at once and returns them in role order, or the
/// first role's error.
pub async fn begin_all(missions: Vec<AgentMission>) -> Result<Vec<AgentMission>, AgentError> {
    let mut waiting = JoinSet::new();
    let n = missions.len();
    for (i, mut mission) in missions.into_iter().enumerate() {
        waiting.spawn(async move {
            let result = mission.wait_until_begun().await.map(|_| ());
            (i, mission, result)
        });
    }
    let mut begun: Vec<Option<AgentMission>> = (0..n).map(|_| None).collect();
    let mut first_error: Option<(usize, AgentError)> = None;
    while let Some(joined) = waiting.join_next().await {
        let (i, mission, result) = joined.expect("mission tasks do not panic");
        match result {
            Ok(()) => begun[i] = Some(mission),
            Err(e) => {
                if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                    first_error = Some((i, e));
                }
            }
        }
    }
    match first_error {
        Some((_, e)) => Err(e),
        None => Ok(begun
            .into_iter()
            .map(|m| m.expect("every role begun"))
            .collect()),
    }
}
