//! The real AgentHost's captured bytes replayed into the emulator: every control
//! line (MissionInits with the agent ports rewritten to this test's listeners) must
//! get the reply the captured mod wrote, byte for byte (the LAN port in
//! `MALMOS<address>:<port>` normalised), and the captured command streams must run
//! and change the world as the reference meant them to.

mod emulator_util;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use base64::Engine as _;
use emulator_util::SHARED;
use malmo_bridge::agent::{Channel, ConnectionEvent, Incoming, Listeners, PeerFilter};
use malmo_bridge::control::ControlReply;
use malmo_bridge::emulator::world::GameMode;
use malmo_bridge::emulator::{Emulator, EmulatorConfig};
use malmo_bridge::mission_init::{MissionInit, MissionInitForm};
use malmo_bridge::observation::Observation;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[derive(Debug, serde::Deserialize)]
struct Record {
    t: f64,
    conn: u64,
    channel: String,
    dir: String,
    b64: String,
    note: String,
}

fn load(stem: &str) -> Vec<(Record, Vec<u8>)> {
    let path = format!("{SHARED}/malmo/captures/{stem}.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let r: Record = serde_json::from_str(line).unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&r.b64)
                .unwrap();
            (r, bytes)
        })
        .collect()
}

/// One captured control exchange.
#[derive(Debug, Default)]
struct Exchange {
    capture_port: u16,
    request: Vec<u8>,
    reply: Vec<u8>,
}

/// The control exchanges in the order the agent sent them.
fn exchanges(stem: &str) -> Vec<Exchange> {
    let mut by_conn: BTreeMap<u64, Exchange> = BTreeMap::new();
    let mut order = Vec::new();
    for (r, bytes) in load(stem)
        .into_iter()
        .filter(|(r, _)| r.channel == "control")
    {
        let e = by_conn.entry(r.conn).or_default();
        match r.dir.as_str() {
            "event" if r.note.starts_with("accept on :") => {
                e.capture_port = r.note["accept on :".len()..]
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
            }
            "agent->mod" => {
                if e.request.is_empty() {
                    order.push(r.conn);
                }
                e.request.extend_from_slice(&bytes);
            }
            "mod->agent" => e.reply.extend_from_slice(&bytes),
            _ => {}
        }
    }
    order
        .into_iter()
        .map(|c| by_conn.remove(&c).unwrap())
        .collect()
}

/// The reply text with a `MALMOS…:<port>` port replaced, for comparison.
fn normalised(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply).into_owned();
    match text.rsplit_once(':') {
        Some((head, _)) if text.contains("MALMOS") => format!("{head}:PORT"),
        _ => text,
    }
}

/// The emulator and what the replay learned.
struct Replay {
    emulator: Emulator,
    /// Per role, the listeners that stand in for the AgentHost's.
    agents: HashMap<u32, (Listeners, mpsc::Receiver<Incoming>)>,
    lan_port: Option<u16>,
}

async fn replay(stem: &str, config: EmulatorConfig, prepare: impl FnOnce(&Emulator)) -> Replay {
    let emulator = Emulator::start(config).await.unwrap();
    prepare(&emulator);
    replay_into(emulator, stem).await
}

async fn replay_into(emulator: Emulator, stem: &str) -> Replay {
    let mut replay = Replay {
        emulator,
        agents: HashMap::new(),
        lan_port: None,
    };
    for exchange in exchanges(stem) {
        let client = usize::from(exchange.capture_port - 10000);
        let port = replay.emulator.clients()[client].control_port();
        let mut line = exchange.request.clone();
        let text = String::from_utf8_lossy(&line).into_owned();
        if text.contains("<MissionInit") {
            let mut init = MissionInit::parse(text.trim_end()).unwrap();
            let (tx, rx) = mpsc::channel(4096);
            let video = init.connection.agent_ports.video != 0;
            // The emulated clients run on this machine, on loopback.
            let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
            let listeners = Listeners::bind(loopback, PeerFilter::new([loopback]), video, tx)
                .await
                .unwrap();
            init.connection.agent_ports = listeners.ports();
            if let Some(server) = &mut init.server {
                server.port = replay.lan_port.expect("MALMOS came first");
            }
            let rendered = init.render(MissionInitForm::AgentHost);
            // Only the ports differ from what the AgentHost sent.
            assert_eq!(
                rendered.len(),
                text.trim_end().len(),
                "{stem}: ports' digits"
            );
            line = format!("{rendered}\n").into_bytes();
            replay.agents.insert(init.role.0, (listeners, rx));
        }
        let expected = normalised(&exchange.reply);
        if expected.starts_with("\0\0\0\u{15}MALMOS") || expected.contains("MALMOS1") {
            // The captured mod had finished creating its world by then.
            wait_for_world(&replay.emulator).await;
        }
        let got = exchange_raw(port, &line).await;
        if let ControlReply::Server { port, .. } = ControlReply::parse(got.get(4..).unwrap_or(&[]))
        {
            replay.lan_port = Some(port);
        }
        assert_eq!(
            normalised(&got),
            expected,
            "{stem}: reply to {}",
            String::from_utf8_lossy(&exchange.request[..exchange.request.len().min(80)])
        );
    }
    replay
}

async fn wait_for_world(emulator: &Emulator) {
    for _ in 0..200 {
        let ready = emulator.clients().iter().any(|c| {
            matches!(
                c.status(),
                malmo_bridge::emulator::ClientStatus::InMission { .. }
            )
        }) && !emulator.running_worlds().is_empty();
        if ready {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no world was created");
}

/// Sends the request bytes and reads everything the client writes back.
async fn exchange_raw(port: u16, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply))
        .await
        .unwrap()
        .unwrap();
    reply
}

fn config(world_delay_ms: u64) -> EmulatorConfig {
    EmulatorConfig {
        world_delay: Duration::from_millis(world_delay_ms),
        ..EmulatorConfig::ephemeral(3)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_client_answers_malmobusy() {
    // The captured client was reserved by another experiment.
    let emulator = Emulator::start(config(100)).await.unwrap();
    let other = malmo_bridge::control::ControlRequest::RequestClient {
        version: "0.38.0".into(),
        reservation_ms: 20_000,
        experiment_id: "another-experiment".into(),
    };
    let reply = malmo_bridge::agent::exchange(&emulator.pool()[0], &other, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(reply, ControlReply::Ok);
    replay_into(emulator, "agenthost_error_busy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_037_mod_answers_the_captured_version_mismatch() {
    replay(
        "agenthost_error_version_mismatch",
        config(100),
        |emulator| {
            emulator.clients()[0]
                .faults()
                .answer_as_version(Some("0.37.0"));
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_server_before_role_zero_answers_malmonoserver() {
    replay("agenthost_error_server_not_found", config(100), |_| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_being_created_answers_noserveryet_then_the_server() {
    replay("agenthost_error_server_warming_up", config(1000), |_| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_world_creation_sends_the_captured_mission_ended() {
    let mut r = replay(
        "agenthost_error_world_creation_failed",
        config(100),
        |emulator| {
            emulator.clients()[0]
                .faults()
                .fail_world_creation(Some("test"));
        },
    )
    .await;
    let captured: Vec<u8> = load("agenthost_error_world_creation_failed")
        .into_iter()
        .filter(|(r, _)| r.channel == "mcp" && r.dir == "mod->agent")
        .flat_map(|(_, b)| b)
        .collect();
    let (_, rx) = r.agents.get_mut(&0).unwrap();
    let frame = next_frame(rx, Channel::MissionControl).await;
    assert_eq!(frame, captured[4..]);
}

async fn next_frame(rx: &mut mpsc::Receiver<Incoming>, channel: Channel) -> Vec<u8> {
    loop {
        let incoming = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a frame within 10 s")
            .expect("the listeners are up");
        if incoming.channel == channel
            && let ConnectionEvent::Frame(payload) = incoming.event
        {
            return payload;
        }
    }
}

/// The command lines the AgentHost sent, in sending order: (time, captured
/// commands port, line).
fn captured_commands(stem: &str) -> Vec<(f64, u16, String)> {
    let mut port_of = HashMap::new();
    let mut pending: HashMap<u16, String> = HashMap::new();
    let mut out = Vec::new();
    for (r, bytes) in load(stem)
        .into_iter()
        .filter(|(r, _)| r.channel == "commands")
    {
        if let Some(rest) = r.note.strip_prefix("accept on :") {
            port_of.insert(
                r.conn,
                rest.split(' ').next().unwrap().parse::<u16>().unwrap(),
            );
        } else if r.dir == "agent->mod" {
            let port = port_of[&r.conn];
            let text = pending.entry(port).or_default();
            text.push_str(&String::from_utf8_lossy(&bytes));
            while let Some((line, rest)) = text.split_once('\n') {
                out.push((r.t, port, line.to_owned()));
                *text = rest.to_owned();
            }
        }
    }
    out
}

/// Replays a whole two-player capture: control, then each role's commands; every
/// command must be echoed (handled), and the world must show their effects.
async fn run_capture(stem: &str) -> (Replay, BTreeMap<u32, Vec<Observation>>) {
    let mut r = replay(stem, config(100), |_| {}).await;
    // Wait for every echo, then connect to the commands ports it names.
    let mut commands_ports = BTreeMap::new();
    for (role, (_, rx)) in r.agents.iter_mut() {
        loop {
            let frame = next_frame(rx, Channel::MissionControl).await;
            let text = String::from_utf8(frame).unwrap();
            if text.contains("<MissionInit") {
                assert!(text.starts_with(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><MissionInit SchemaVersion="" PlatformVersion="0.38.0" xmlns="#));
                let echo = MissionInit::parse(&text).unwrap();
                assert_eq!(echo.connection.agent_address, "localhost");
                commands_ports.insert(*role, echo.connection.client_commands_port);
                break;
            }
        }
    }
    // Each role's commands go on its own connection, in the captured global
    // order and with the captured gaps (capped), since game rules and gifts of one
    // role affect the other.
    let mut streams = BTreeMap::new();
    for (role, port) in &commands_ports {
        streams.insert(
            *role,
            TcpStream::connect(("127.0.0.1", *port)).await.unwrap(),
        );
    }
    let mut echoes_expected: BTreeMap<u32, usize> = BTreeMap::new();
    let mut last_t = None;
    for (t, capture_port, line) in captured_commands(stem) {
        if line == "quit" {
            continue;
        }
        let gap = last_t.map_or(0.0, |l: f64| (t - l).clamp(0.01, 0.25));
        tokio::time::sleep(Duration::from_secs_f64(gap)).await;
        last_t = Some(t);
        let role = u32::from(capture_port - 11000);
        let stream = streams.get_mut(&role).unwrap();
        stream
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        *echoes_expected.entry(role).or_default() += 1;
    }
    // Collect observations until every command has been echoed.
    let mut observations: BTreeMap<u32, Vec<Observation>> = BTreeMap::new();
    for (role, expected) in &echoes_expected {
        let (_, rx) = r.agents.get_mut(role).unwrap();
        let mut echoed = 0;
        while echoed < *expected {
            let frame = next_frame(rx, Channel::Observations).await;
            let obs = Observation::parse(&frame).unwrap();
            echoed += obs.commands.as_ref().map_or(0, Vec::len);
            observations.entry(*role).or_default().push(obs);
        }
        assert_eq!(echoed, *expected, "role {role}: every command was handled");
    }
    (r, observations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_two_player_capture_sets_up_acts_and_repairs() {
    let stem = "agenthost_vs_fakemod_2p";
    let (r, observations) = run_capture(stem).await;
    let world = r.emulator.running_worlds().pop().unwrap();
    // Set-up: the human got the silk-touch tools and one of each block, and plays
    // in survival; the assistant stays creative.
    let human = world.player("human").await.unwrap().unwrap();
    let items: Vec<&str> = human.inventory.iter().map(|s| s.item.as_str()).collect();
    assert_eq!(
        &items[..12],
        [
            "diamond_pickaxe",
            "diamond_axe",
            "diamond_shovel",
            "shears",
            "dirt",
            "cobblestone",
            "glass",
            "log",
            "planks",
            "stone",
            "stonebrick",
            "wool"
        ]
    );
    assert_eq!(human.mode, GameMode::Survival);
    assert_eq!(human.pos, [1.5, 2.0, 0.5]);
    let assistant = world.player("assistant").await.unwrap().unwrap();
    assert_eq!(assistant.mode, GameMode::Creative);
    assert_eq!(assistant.pos, [1.5, 2.0, 0.5]);
    assert_eq!((assistant.yaw, assistant.pitch), (35.0, 40.0));
    // The AI's attack (looking at 35°/40° from 0.5 2 0.5) broke the barrier at
    // (-1, 2, 1); the reference's /fill repairs put it back.
    assert_eq!(world.block([-1, 2, 1]).await.unwrap(), "barrier");
    // Before the attack, the assistant's crosshair was on that barrier's east
    // face, within reach.
    let aimed = observations[&0].iter().any(|o| {
        o.line_of_sight
            .as_ref()
            .is_some_and(|s| s.kind == "barrier" && s.x == 0.0 && s.in_range)
    });
    assert!(aimed);
    // The human's observations carried the /give feedback until the game rule
    // turned it off.
    let chat: Vec<String> = observations[&1]
        .iter()
        .flat_map(|o| o.chat.clone().unwrap_or_default())
        .collect();
    assert!(
        chat.contains(&"Given [Diamond Pickaxe] * 1 to human".to_owned()),
        "{chat:?}"
    );
    assert!(chat.contains(&"Your game mode has been updated to Survival Mode".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_capture_clones_the_palette_into_the_build_area() {
    let stem = "agenthost_vs_fakemod_2p_humans_palette";
    let (r, _) = run_capture(stem).await;
    let world = r.emulator.running_worlds().pop().unwrap();
    // `/clone 22 0 0 22 9 9 10 0 0` copies the goal's palette column (x = 2W),
    // which holds blocks above the floor.
    let mut palette = 0;
    for y in 2..10 {
        for z in 0..10 {
            palette += usize::from(world.block([22, y, z]).await.unwrap() != "air");
        }
    }
    assert!(palette > 0);
    for y in 0..10 {
        for z in 0..10 {
            assert_eq!(
                world.block([10, y, z]).await.unwrap(),
                world.block([22, y, z]).await.unwrap(),
                "({y}, {z})"
            );
        }
    }
}
