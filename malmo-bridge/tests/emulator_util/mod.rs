//! Shared by the `emulator_*` tests: missions, starting them with our agent side
//! against an emulator, and waiting for observations.
#![allow(dead_code)]

use std::time::Duration;

use malmo_bridge::agent::{AgentError, AgentMission, MissionEvent, Timeouts, start_mission};
use malmo_bridge::block::Block;
use malmo_bridge::emulator::{Emulator, EmulatorConfig};
use malmo_bridge::grid::{BlockGrid, WorldSize};
use malmo_bridge::mission::{Mission, MissionDocument, Player, PlayerName, Role};
use malmo_bridge::mission_init::{
    AgentPorts, ClientAgentConnection, ExperimentId, MissionInit, MissionInitForm, ServerConnection,
};
use malmo_bridge::observation::Observation;

pub const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared");

/// A mission from `../shared/malmo/examples`.
pub fn example_mission(stem: &str) -> Mission {
    let path = format!("{SHARED}/malmo/examples/{stem}.role0.xml");
    let xml = std::fs::read_to_string(&path).unwrap();
    MissionDocument::parse(&xml).unwrap().mission
}

/// One human in a 5x5x5 world: a planks goal block, a wool block built.
pub fn one_player_mission() -> Mission {
    let size = WorldSize::new(5, 5, 5).unwrap();
    let mut goal = BlockGrid::flat(size);
    goal.set(2, 2, 2, Block::Planks);
    let mut current = BlockGrid::flat(size);
    current.set(4, 2, 4, Block::Wool);
    Mission::new(
        &goal,
        &current,
        vec![Player::human(PlayerName::new("human").unwrap())],
    )
    .unwrap()
}

/// An emulator on free ports with a short world creation.
pub async fn emulator(clients: usize) -> Emulator {
    let config = EmulatorConfig {
        world_delay: Duration::from_millis(100),
        ..EmulatorConfig::ephemeral(clients)
    };
    Emulator::start(config).await.unwrap()
}

pub fn timeouts() -> Timeouts {
    Timeouts {
        exchange: Duration::from_secs(5),
        find_server: Duration::from_secs(10),
        find_server_poll: Duration::from_millis(100),
        begin: Duration::from_secs(10),
        silence: Duration::from_secs(3),
        end: Duration::from_secs(10),
        command: Duration::from_secs(5),
    }
}

/// The recommended MissionInit for `role`, with the agent's ports and server.
pub fn init_for(
    mission: &Mission,
    role: u32,
    experiment: &str,
    client: (&str, u16),
) -> impl FnOnce(&AgentPorts, Option<&ServerConnection>) -> String + use<> {
    let document = mission.document(Role(role));
    let experiment = ExperimentId::new(experiment).unwrap();
    let (host, port) = (client.0.to_owned(), client.1);
    move |ports, server| {
        let connection = ClientAgentConnection {
            client_address: host,
            client_mission_control_port: port,
            client_commands_port: 0,
            agent_address: "127.0.0.1".into(),
            agent_ports: *ports,
        };
        MissionInit::new(document, experiment, Role(role), connection)
            .with_server(server.cloned())
            .render(MissionInitForm::Compact)
    }
}

/// Starts every role of `mission` as MBAG does (reservation, role 0, then the
/// others via MALMO_FIND_SERVER), returning the missions before they begin.
pub async fn start(
    emulator: &Emulator,
    mission: &Mission,
    experiment: &str,
) -> Result<Vec<AgentMission>, AgentError> {
    let experiment = ExperimentId::new(experiment).unwrap();
    start_mission(
        &emulator.pool(),
        mission,
        &experiment,
        std::net::Ipv4Addr::LOCALHOST.into(),
        timeouts(),
    )
    .await
}

/// Starts every role and waits until all have begun.
pub async fn start_and_begin(
    emulator: &Emulator,
    mission: &Mission,
    experiment: &str,
) -> Vec<AgentMission> {
    let missions = start(emulator, mission, experiment).await.unwrap();
    let results = begin_all(missions).await;
    results
        .into_iter()
        .map(|(m, r)| {
            r.unwrap();
            m
        })
        .collect()
}

/// Waits for every role's echo at once (they arrive only once all have joined).
pub async fn begin_all(missions: Vec<AgentMission>) -> Vec<(AgentMission, Result<(), AgentError>)> {
    let handles: Vec<_> = missions
        .into_iter()
        .map(|mut m| {
            tokio::spawn(async move {
                let r = m.wait_until_begun().await.map(|_| ());
                (m, r)
            })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// The next observation (text and parsed), skipping pings.
pub async fn next_observation(mission: &mut AgentMission) -> (String, Observation) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), mission.next_event())
            .await
            .expect("an event within 5 s")
            .unwrap();
        if let MissionEvent::Observation { json, .. } = event {
            let parsed = Observation::parse(json.as_bytes()).unwrap();
            return (json, parsed);
        }
    }
}

/// The first observation for which `check` holds, within 5 s.
pub async fn observation_where(
    mission: &mut AgentMission,
    mut check: impl FnMut(&Observation) -> bool,
) -> Observation {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no matching observation in 5 s"
        );
        let (_, obs) = next_observation(mission).await;
        if check(&obs) {
            return obs;
        }
    }
}

/// The grid cell (x, y, z) of a `world` grid of size `(w, h, d)`: y, then z, then x.
pub fn cell<'a>(
    grid: &[&'a str],
    (w, _h, d): (usize, usize, usize),
    x: usize,
    y: usize,
    z: usize,
) -> &'a str {
    grid[(y * d + z) * w + x]
}
