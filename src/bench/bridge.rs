//! `mbag bench bridge`: how fast mbag reads what Minecraft sends, and how long a
//! command takes to show up in an observation through the emulator.

use std::time::{Duration, Instant};

use malmo_bridge::agent::{AgentError, AgentMission, Timeouts, reserve_clients, start_role};
use malmo_bridge::block::Block;
use malmo_bridge::command::{Command, Number};
use malmo_bridge::decoded::{DecodeError, DecodedObservation};
use malmo_bridge::emulator::{Emulator, EmulatorConfig, EmulatorError};
use malmo_bridge::grid::{BlockGrid, WorldSize};
use malmo_bridge::mission::{Mission, Player, PlayerName, Role};
use malmo_bridge::mission_init::{
    AgentPorts, ClientAgentConnection, ExperimentId, MissionInit, MissionInitForm, ServerConnection,
};
use malmo_bridge::observation::{Observation, ObservationError};
use serde_json::{Map, Value, json};

/// Percentiles of a set of durations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    /// How many samples.
    pub samples: usize,
    /// The median.
    pub median: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

impl Percentiles {
    /// Percentiles of `samples` (sorted in place). `None` if empty.
    pub fn of(samples: &mut [Duration]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Some(Self {
            samples: samples.len(),
            median: at(0.5),
            p99: at(0.99),
            max: samples[samples.len() - 1],
        })
    }
}

/// What the daemon does with each observation frame: decode it, with every grid
/// read as MBAG blocks.
pub fn read_observation(payload: &[u8]) -> Result<DecodedObservation, DecodeError> {
    DecodedObservation::decode(payload)
}

/// What a recording keeps of each frame: the lossless observation, whose `world`
/// grid is then turned into MBAG block ids.
pub fn read_observation_losslessly(
    payload: &[u8],
) -> Result<(Observation, Vec<u8>), ObservationError> {
    let observation = Observation::parse(payload)?;
    let ids = observation
        .grid("world")
        .map(|names| {
            names
                .iter()
                .map(|name| Block::from_observed_name(name).map_or(u8::MAX, |b| b.mbag_id()))
                .collect()
        })
        .unwrap_or_default();
    Ok((observation, ids))
}

/// Times `read` on `payload`, `iterations` times after a warm-up.
pub fn time_reading<T, E>(
    payload: &[u8],
    iterations: usize,
    read: impl Fn(&[u8]) -> Result<T, E>,
) -> Result<Percentiles, E> {
    for _ in 0..iterations.min(100) {
        std::hint::black_box(read(payload)?);
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        std::hint::black_box(read(std::hint::black_box(payload))?);
        samples.push(start.elapsed());
    }
    Ok(Percentiles::of(&mut samples).expect("at least one iteration"))
}

/// Grows an observation to at least `target_len` bytes of JSON the way a busy
/// human's observations grow: the inventory's colour and variant keys, then mouse
/// and key events (as `ObservationFromHuman` reports them).
pub fn grow_observation(observation: &Map<String, Value>, target_len: usize) -> Vec<u8> {
    let mut grown = observation.clone();
    for slot in 0..41 {
        grown
            .entry(format!("InventorySlot_{slot}_colour"))
            .or_insert_with(|| json!("WHITE"));
        grown
            .entry(format!("InventorySlot_{slot}_variant"))
            .or_insert_with(|| json!("oak"));
    }
    let mut events: Vec<Value> = Vec::new();
    loop {
        let text = serde_json::to_vec(&grown).expect("JSON values serialise");
        if text.len() >= target_len {
            return text;
        }
        let k = events.len();
        events.push(if k % 3 == 2 {
            json!({"time": 1000, "type": "key", "command": "attack", "pressed": k.is_multiple_of(2)})
        } else {
            json!({"time": 1000, "type": "mouse", "deltaX": (k % 7) as i64 - 3, "deltaY": -2, "deltaZ": 0})
        });
        grown.insert("events".to_owned(), Value::Array(events.clone()));
    }
}

/// Why the round-trip measurement could not run.
#[derive(Debug, thiserror::Error)]
pub enum RoundTripError {
    /// The emulator did not start.
    #[error("starting the emulator: {0}")]
    Emulator(#[from] EmulatorError),
    /// The mission could not be built.
    #[error("building the mission: {0}")]
    Mission(String),
    /// The agent side failed.
    #[error("agent side: {0}")]
    Agent(#[from] AgentError),
    /// No tokio runtime.
    #[error("starting the tokio runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Command-to-observation round trips through the emulator on loopback: the
/// emulator runs in this process on free ports with an observation every `tick`
/// (the mod's is 50 ms; a command waits for the next tick, so a short tick keeps
/// that wait from hiding the bridge's own cost), one human in an 11x10x10 world,
/// and our agent side sends `tp` commands to alternating cells, `warmup` times
/// untimed and then `iterations` times. Each trip is timed from the write to the
/// arrival of the first observation that echoes the command
/// ([`AgentMission::round_trip`], which reads it with the fast reader). Each
/// command leaves just after the previous one's observation, so every trip
/// includes about one whole tick of waiting.
pub fn time_round_trips(
    iterations: usize,
    warmup: usize,
    tick: Duration,
) -> Result<Percentiles, RoundTripError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let config = EmulatorConfig {
            world_delay: Duration::ZERO,
            tick,
            ..EmulatorConfig::ephemeral(1)
        };
        let emulator = Emulator::start(config).await?;
        let mut mission = begin_one_player_mission(&emulator).await?;
        let mut samples = Vec::with_capacity(iterations);
        for i in 0..warmup + iterations {
            let x = if i % 2 == 0 { 2.5 } else { 3.5 };
            let command = Command::Teleport {
                x: Number::Float(x),
                y: Number::Int(2),
                z: Number::Float(2.5),
            };
            let trip = mission.round_trip(&command).await?;
            if i >= warmup {
                samples.push(trip.elapsed);
            }
        }
        mission.quit().await?;
        emulator.shutdown().await;
        Ok(Percentiles::of(&mut samples).expect("at least one iteration"))
    })
}

/// Starts a one-human mission on the emulator's only client and waits for it to
/// begin.
async fn begin_one_player_mission(emulator: &Emulator) -> Result<AgentMission, RoundTripError> {
    let size = WorldSize::new(11, 10, 10).map_err(|e| RoundTripError::Mission(e.to_string()))?;
    let name = PlayerName::new("human").map_err(|e| RoundTripError::Mission(e.to_string()))?;
    let mission = Mission::new(
        &BlockGrid::flat(size),
        &BlockGrid::flat(size),
        vec![Player::human(name)],
    )
    .map_err(|e| RoundTripError::Mission(e.to_string()))?;
    let experiment = "bench-round-trip";
    let experiment_id =
        ExperimentId::new(experiment).map_err(|e| RoundTripError::Mission(e.to_string()))?;
    let timeouts = Timeouts {
        begin: Duration::from_secs(10),
        ..Timeouts::default()
    };
    let pool = emulator.pool();
    let reserved = reserve_clients(&pool, 1, experiment, &timeouts).await?;
    let client = reserved[0].clone();
    let document = mission.document(Role(0));
    let init = move |ports: &AgentPorts, server: Option<&ServerConnection>| {
        let connection = ClientAgentConnection {
            client_address: client.host.clone(),
            client_mission_control_port: client.control_port,
            client_commands_port: 0,
            agent_address: "127.0.0.1".into(),
            agent_ports: *ports,
        };
        MissionInit::new(document, experiment_id, Role(0), connection)
            .with_server(server.cloned())
            .render(MissionInitForm::Compact)
    };
    let mut agent = start_role(&reserved, 0, experiment, false, init, timeouts).await?;
    agent.wait_until_begun().await?;
    Ok(agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_readers_turn_the_world_grid_into_ids() {
        let text = br#"{"world":["bedrock","dirt","air","planks"],"XPos":0.5}"#;
        let (obs, ids) = read_observation_losslessly(text).unwrap();
        assert_eq!(obs.x, Some(0.5));
        let fast = read_observation(text).unwrap();
        let fast_ids: Vec<u8> = fast
            .grid("world")
            .unwrap()
            .iter()
            .map(|b| b.unwrap().mbag_id())
            .collect();
        assert_eq!(fast_ids, ids);
        let expected: Vec<u8> = ["bedrock", "dirt", "air", "planks"]
            .iter()
            .map(|n| Block::from_observed_name(n).unwrap().mbag_id())
            .collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn grown_observations_reach_the_size_and_stay_valid() {
        let base: Map<String, Value> =
            serde_json::from_str(r#"{"world":["air"],"Name":"human"}"#).unwrap();
        let grown = grow_observation(&base, 22 * 1024);
        assert!(grown.len() >= 22 * 1024);
        let obs = read_observation(&grown).unwrap();
        assert_eq!(obs.grid("world").unwrap().len(), 1);
        assert!(!obs.events.is_empty());
    }

    #[test]
    fn round_trips_through_the_emulator_are_timed() {
        let p = time_round_trips(10, 2, Duration::from_millis(5)).unwrap();
        assert_eq!(p.samples, 10);
        assert!(p.median > Duration::ZERO && p.median <= p.p99 && p.p99 <= p.max);
        assert!(p.max < Duration::from_secs(3), "{p:?}");
    }

    #[test]
    fn percentiles_pick_the_right_samples() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let p = Percentiles::of(&mut samples).unwrap();
        assert_eq!(p.median, Duration::from_micros(51));
        assert_eq!(p.p99, Duration::from_micros(99));
        assert_eq!(p.max, Duration::from_micros(100));
    }
}
