//! The mod's side of the real AgentHost captures, replayed against our agent side:
//! every control reply, ping, echo, observation, reward and MissionEnded is sent
//! byte for byte as captured, at the captured pace, and every request our agent
//! makes is checked against the real AgentHost's bytes. Each failure case must give
//! the typed error that the capture's agent-side JSON implies.
//!
//! Only port numbers are rewritten: the agent's listener ports inside the
//! MissionInit (ours are bound at random), and the commands port in the echo (the
//! replaying mod listens at a random port instead of 11000+i, so tests can run in
//! parallel).

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use malmo_bridge::agent::{
    AgentError, AgentMission, ClientAddr, MissionEvent, Stage, Timeouts, find_server,
    reserve_clients, start_role,
};
use malmo_bridge::control::ControlReply;
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mission_init::{AgentPorts, MissionInit, MissionInitForm, ServerConnection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

const EXPERIMENT: &str = "0d9f3b52-7c1e-4a8e-b6f2-3e4a5c6d7e8f";
const EXPERIMENT_2P: &str = "5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11";

fn captures() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/malmo/captures"
    ))
}

#[derive(Clone, Debug)]
struct Record {
    t: f64,
    conn: u64,
    channel: String,
    dir: String,
    bytes: Vec<u8>,
    note: String,
}

fn load(stem: &str) -> Vec<Record> {
    let records = load_raw(stem);
    if records.iter().any(|r| r.channel.is_empty()) {
        from_tcpdump(records)
    } else {
        records
    }
}

fn load_raw(stem: &str) -> Vec<Record> {
    let path = captures().join(format!("{stem}.jsonl"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::io::BufReader::new(file)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            Record {
                t: v["t"].as_f64().unwrap(),
                conn: v["conn"].as_u64().unwrap(),
                channel: v["channel"].as_str().unwrap().to_owned(),
                dir: v["dir"].as_str().unwrap().to_owned(),
                bytes: base64::engine::general_purpose::STANDARD
                    .decode(v["b64"].as_str().unwrap_or(""))
                    .unwrap(),
                note: v["note"].as_str().unwrap_or("").to_owned(),
            }
        })
        .collect()
}

/// Brings a tcpdump capture (one record per TCP segment, channels named only on
/// `connect` events, ports in the notes) into the fake-mod captures' form, telling
/// the agent's listeners apart by the ports its MissionInit announced.
fn from_tcpdump(records: Vec<Record>) -> Vec<Record> {
    let init = records
        .iter()
        .map(|r| String::from_utf8_lossy(&r.bytes).into_owned())
        .find(|text| text.contains("<MissionInit"))
        .expect("the capture holds a MissionInit");
    let port_of = |name: &str| element(&init, name).and_then(|v| v.trim().parse::<u16>().ok());
    let agent_ports = [
        (port_of("AgentMissionControlPort"), "mcp"),
        (port_of("AgentObservationsPort"), "obs"),
        (port_of("AgentRewardsPort"), "rew"),
    ];
    let mut channel_of: HashMap<u64, String> = HashMap::new();
    let mut out = Vec::new();
    for mut r in records {
        if let Some(rest) = r.note.strip_prefix("connect ") {
            // "connect A -> B (agent->mod)": B is the listening port.
            let to: u16 = rest
                .split(" -> ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|p| p.parse().ok())
                .expect("a port");
            let (channel, note) = if r.note.ends_with("(agent->mod)") {
                let channel = if to >= 11000 { "commands" } else { "control" };
                (channel.to_owned(), format!("accept on :{to}"))
            } else {
                let channel = agent_ports
                    .iter()
                    .find(|(p, _)| *p == Some(to))
                    .map(|(_, c)| *c)
                    .expect("a listener the MissionInit announced");
                let note = match channel {
                    "mcp" => format!("mod connected to agent mission-control port {to}"),
                    "obs" => "mod connected to agent observations port".to_owned(),
                    _ => "mod connected to agent rewards port".to_owned(),
                };
                (channel.to_owned(), note)
            };
            channel_of.insert(r.conn, channel.clone());
            r.channel = channel;
            r.note = note;
        } else {
            r.channel = channel_of.get(&r.conn).cloned().unwrap_or_default();
        }
        out.push(r);
    }
    out
}

/// The value of `<name>…</name>` in a document.
fn element(xml: &str, name: &str) -> Option<String> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    Some(xml[start..end].to_owned())
}

fn replace_element(xml: &str, name: &str, value: &str) -> String {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    match (xml.find(&open), xml.find(&close)) {
        (Some(a), Some(b)) => format!("{}{open}{value}{}", &xml[..a], &xml[b..]),
        _ => xml.to_owned(),
    }
}

/// One control exchange as captured: what the agent sent and what the mod wrote.
#[derive(Debug)]
struct Exchange {
    request: Vec<u8>,
    replies: Vec<Vec<u8>>,
    /// Capture time of the last reply.
    reply_t: f64,
}

/// A connection the mod opened to the agent, and what it wrote on it, with times.
#[derive(Debug)]
struct ModConnection {
    channel: String,
    connect_t: f64,
    sends: Vec<(f64, Vec<u8>)>,
    closes: Option<f64>,
    /// The capture's agent mission-control port this belongs to.
    capture_mcp: u16,
}

/// What the replaying mod learned and saw.
#[derive(Debug, Default)]
struct Seen {
    /// Capture agent mcp port -> our listener ports.
    ports: HashMap<u16, AgentPorts>,
    /// Requests that differed from the real AgentHost's (beyond rewritten ports).
    mismatches: Vec<String>,
    /// Command lines received, per commands connection.
    commands: Vec<Vec<String>>,
}

struct Replay {
    /// Capture control port -> our port.
    control_ports: HashMap<u16, u16>,
    seen: Arc<Mutex<Seen>>,
    _tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Replay {
    fn pool(&self, capture_ports: &[u16]) -> Vec<ClientAddr> {
        capture_ports
            .iter()
            .map(|p| ClientAddr::new("127.0.0.1", self.control_ports[p]))
            .collect()
    }
}

fn port_in(note: &str, after: &str) -> Option<u16> {
    let rest = &note[note.find(after)? + after.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Starts the replaying mod for a capture.
async fn replay(stem: &str) -> Replay {
    let records = load(stem);
    let seen = Arc::new(Mutex::new(Seen::default()));
    // Control exchanges per capture port, in order; commands ports the same way.
    let mut conn_port: HashMap<u64, u16> = HashMap::new();
    let mut exchanges: HashMap<u64, Exchange> = HashMap::new();
    let mut control_order: HashMap<u16, Vec<u64>> = HashMap::new();
    let mut mod_conns: HashMap<u64, ModConnection> = HashMap::new();
    let mut last_echo_mcp: Option<u16> = None;
    for r in &records {
        match (r.channel.as_str(), r.dir.as_str()) {
            ("control", "event") if r.note.starts_with("accept on :") => {
                let port = port_in(&r.note, "accept on :").unwrap();
                conn_port.insert(r.conn, port);
                control_order.entry(port).or_default().push(r.conn);
                exchanges.insert(
                    r.conn,
                    Exchange {
                        request: Vec::new(),
                        replies: Vec::new(),
                        reply_t: r.t,
                    },
                );
            }
            ("control", "agent->mod") => {
                exchanges.get_mut(&r.conn).unwrap().request.extend(&r.bytes)
            }
            ("control", "mod->agent") => {
                let e = exchanges.get_mut(&r.conn).unwrap();
                e.replies.push(r.bytes.clone());
                e.reply_t = r.t;
            }
            ("mcp" | "obs" | "rew" | "vid", "event") if r.note.starts_with("mod connected") => {
                let capture_mcp = if r.channel == "mcp" {
                    port_in(&r.note, "mission-control port ").unwrap()
                } else {
                    last_echo_mcp.expect("a data channel opens after an echo")
                };
                mod_conns.insert(
                    r.conn,
                    ModConnection {
                        channel: r.channel.clone(),
                        connect_t: r.t,
                        sends: Vec::new(),
                        closes: None,
                        capture_mcp,
                    },
                );
            }
            ("mcp" | "obs" | "rew" | "vid", "mod->agent") => {
                let c = mod_conns.get_mut(&r.conn).unwrap();
                if c.channel == "mcp" && r.bytes.windows(12).any(|w| w == b"<MissionInit") {
                    last_echo_mcp = Some(c.capture_mcp);
                }
                c.sends.push((r.t, r.bytes.clone()));
            }
            ("mcp" | "obs" | "rew" | "vid", "event") => {
                if let Some(c) = mod_conns.get_mut(&r.conn) {
                    c.closes.get_or_insert(r.t);
                }
            }
            _ => {}
        }
    }

    let mut tasks = Vec::new();
    let mut control_ports = HashMap::new();
    // Commands listener(s): one random port stands for every captured one.
    let commands = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let commands_port = commands.local_addr().unwrap().port();
    {
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = commands.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let _ = s.read_to_end(&mut buf).await;
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    seen.lock()
                        .unwrap()
                        .commands
                        .push(text.lines().map(str::to_owned).collect());
                });
            }
        }));
    }
    let mod_conns = Arc::new(Mutex::new(mod_conns));
    for (port, conns) in control_order {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        control_ports.insert(port, listener.local_addr().unwrap().port());
        let mut queue: VecDeque<Exchange> =
            conns.iter().map(|c| exchanges.remove(c).unwrap()).collect();
        let seen = seen.clone();
        let mod_conns = mod_conns.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(exchange) = queue.pop_front() {
                let (mut s, _) = listener.accept().await.unwrap();
                // Each captured write leaves as its own segment (the real mod writes
                // control replies one byte at a time).
                let _ = s.set_nodelay(true);
                let mut got = Vec::new();
                let mut byte = [0u8; 1];
                while !got.ends_with(b"\n") {
                    if s.read(&mut byte).await.unwrap_or(0) == 0 {
                        break;
                    }
                    got.push(byte[0]);
                }
                let expected = String::from_utf8_lossy(&exchange.request).into_owned();
                let ours = String::from_utf8_lossy(&got).into_owned();
                if expected.contains("<MissionInit") {
                    // Learn our ports, then compare with the ports put back.
                    let num = |xml: &str, name: &str| {
                        element(xml, name).and_then(|v| v.trim().parse::<u16>().ok())
                    };
                    let capture_mcp = num(&expected, "AgentMissionControlPort").unwrap();
                    let ports = MissionInit::parse(ours.trim_end())
                        .expect("our MissionInit parses")
                        .connection
                        .agent_ports;
                    let mut restored = ours.clone();
                    for name in [
                        "AgentMissionControlPort",
                        "AgentObservationsPort",
                        "AgentRewardsPort",
                        "AgentVideoPort",
                    ] {
                        if let Some(v) = element(&expected, name) {
                            restored = replace_element(&restored, name, &v);
                        }
                    }
                    let mut seen = seen.lock().unwrap();
                    if restored != expected {
                        seen.mismatches
                            .push(format!("MissionInit differs on port {port}"));
                    }
                    seen.ports.insert(capture_mcp, ports);
                } else if ours != expected {
                    seen.lock().unwrap().mismatches.push(format!(
                        "port {port}: sent {ours:?}, AgentHost sent {expected:?}"
                    ));
                }
                for reply in &exchange.replies {
                    if s.write_all(reply).await.is_err() {
                        break;
                    }
                }
                drop(s);
                // A MissionInit accepted opens the gate of its mod connections.
                if expected.contains("<MissionInit")
                    && exchange.replies.concat().ends_with(b"MALMOOK")
                {
                    let capture_mcp = element(&expected, "AgentMissionControlPort")
                        .and_then(|v| v.trim().parse::<u16>().ok())
                        .unwrap();
                    let gate = (Instant::now(), exchange.reply_t);
                    let conns: Vec<u64> = mod_conns
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|(_, c)| c.capture_mcp == capture_mcp)
                        .map(|(&k, _)| k)
                        .collect();
                    for k in conns {
                        let conn = mod_conns.lock().unwrap().remove(&k).unwrap();
                        let seen = seen.clone();
                        tokio::spawn(play_mod_connection(conn, gate, seen, commands_port));
                    }
                }
            }
        }));
    }
    Replay {
        control_ports,
        seen,
        _tasks: tasks,
    }
}

/// Opens one of the mod's connections to our agent and plays what the mod wrote at
/// the captured pace: an event at capture time `t` happens `t - gate.1` after the
/// moment `gate.0` that this role's MissionInit was accepted.
async fn play_mod_connection(
    conn: ModConnection,
    gate: (Instant, f64),
    seen: Arc<Mutex<Seen>>,
    commands_port: u16,
) {
    let at = |t: f64| gate.0 + Duration::from_secs_f64((t - gate.1).max(0.0));
    // The listener ports are known once our MissionInit has been read.
    let ports = loop {
        if let Some(p) = seen.lock().unwrap().ports.get(&conn.capture_mcp) {
            break *p;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let port = match conn.channel.as_str() {
        "mcp" => ports.mission_control,
        "obs" => ports.observations,
        "rew" => ports.rewards,
        _ => ports.video,
    };
    tokio::time::sleep_until(at(conn.connect_t)).await;
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return;
    };
    let _ = stream.set_nodelay(true);
    // The echo names the commands port: point it at our commands listener, and fix
    // its length prefix, which the mod writes with the body or just before it.
    let mut sends = conn.sends.clone();
    for k in 0..sends.len() {
        let text = String::from_utf8_lossy(&sends[k].1).into_owned();
        if !text.contains("<ClientCommandsPort>") {
            continue;
        }
        let port = commands_port.to_string();
        let with_header = sends[k].1.len() > 4
            && u32::from_be_bytes(sends[k].1[..4].try_into().unwrap()) as usize
                == sends[k].1.len() - 4;
        if with_header {
            let body = replace_element(&text[4..], "ClientCommandsPort", &port);
            let mut framed = (body.len() as u32).to_be_bytes().to_vec();
            framed.extend(body.as_bytes());
            sends[k].1 = framed;
        } else {
            let body = replace_element(&text, "ClientCommandsPort", &port);
            sends[k - 1].1 = (body.len() as u32).to_be_bytes().to_vec();
            sends[k].1 = body.into_bytes();
        }
    }
    for (t, bytes) in &sends {
        tokio::time::sleep_until(at(*t)).await;
        if stream.write_all(bytes).await.is_err() {
            return;
        }
    }
    if let Some(t) = conn.closes {
        tokio::time::sleep_until(at(t)).await;
        let _ = stream.shutdown().await;
    } else {
        // Held open until the test ends.
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

/// The MissionInit the real AgentHost sent for `role`, read into its typed value and
/// rendered again in the AgentHost's form with our listener ports.
fn mission_init_for(
    stem: &str,
    role: usize,
) -> impl FnOnce(&AgentPorts, Option<&ServerConnection>) -> String {
    let inits: Vec<String> = load(stem)
        .into_iter()
        .filter(|r| r.channel == "control" && r.dir == "agent->mod")
        .map(|r| {
            String::from_utf8_lossy(&r.bytes)
                .trim_end_matches('\n')
                .to_owned()
        })
        .filter(|s| s.contains("<MissionInit"))
        .filter(|s| element(s, "ClientRole").as_deref().map(str::trim) == Some(&role.to_string()))
        .collect();
    let captured = inits.last().cloned().expect("a MissionInit for the role");
    let mut init = MissionInit::parse(&captured).expect("the AgentHost's MissionInit parses");
    move |ports: &AgentPorts, server: Option<&ServerConnection>| {
        init.connection.agent_ports = *ports;
        if let Some(server) = server {
            assert_eq!(init.server.as_ref().map(|s| s.port), Some(server.port));
        }
        init.render(MissionInitForm::AgentHost)
    }
}

fn timeouts() -> Timeouts {
    Timeouts {
        exchange: Duration::from_secs(5),
        silence: Duration::from_millis(2500),
        ..Timeouts::default()
    }
}

fn assert_matches_agenthost(replay: &Replay) {
    let seen = replay.seen.lock().unwrap();
    assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
}

#[tokio::test]
async fn busy_client_is_insufficient_clients_with_the_reply_kept() {
    let replay = replay("agenthost_error_busy").await;
    let err = reserve_clients(&replay.pool(&[10000]), 1, EXPERIMENT, &timeouts())
        .await
        .unwrap_err();
    match &err {
        AgentError::InsufficientClients {
            stage: Stage::Reservation,
            accepted: 0,
            attempts,
            ..
        } => assert!(matches!(attempts.0[0].outcome, Ok(ControlReply::Busy))),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("MALMOBUSY"), "{err}");
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn version_mismatch_is_named() {
    let replay = replay("agenthost_error_version_mismatch").await;
    let err = reserve_clients(&replay.pool(&[10000]), 1, EXPERIMENT, &timeouts())
        .await
        .unwrap_err();
    let AgentError::InsufficientClients { attempts, hint, .. } = &err else {
        panic!("{err}");
    };
    assert!(attempts.any_version_mismatch());
    assert!(hint.contains("version"), "{hint}");
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn rejected_mission_init_keeps_the_mods_reason() {
    let stem = "agenthost_error_mission_init_rejected";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000]);
    let reserved = reserve_clients(&pool, 1, EXPERIMENT, &timeouts())
        .await
        .unwrap();
    let err = start_role(
        &reserved,
        0,
        EXPERIMENT,
        false,
        mission_init_for(stem, 0),
        timeouts(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::InsufficientClients {
                stage: Stage::MissionInit,
                ..
            }
        ),
        "{err}"
    );
    // MalmoPython loses this text; we keep it.
    assert!(err.to_string().contains("cvc-complex-type.2.4.a"), "{err}");
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn role_one_before_role_zero_finds_no_server() {
    let replay = replay("agenthost_error_server_not_found").await;
    let err = find_server(&replay.pool(&[10000, 10001]), EXPERIMENT, &timeouts())
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::ServerNotFound { .. }), "{err}");
    assert!(err.to_string().contains("start role 0 first"), "{err}");
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn failed_world_creation_ends_the_mission_before_it_begins() {
    let stem = "agenthost_error_world_creation_failed";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000]);
    let reserved = reserve_clients(&pool, 1, EXPERIMENT, &timeouts())
        .await
        .unwrap();
    let mut mission = start_role(
        &reserved,
        0,
        EXPERIMENT,
        false,
        mission_init_for(stem, 0),
        timeouts(),
    )
    .await
    .unwrap();
    let err = mission.wait_until_begun().await.unwrap_err();
    match &err {
        AgentError::MissionEndedAbnormally { status, .. } => {
            assert_eq!(*status, MissionEndedStatus::ModFailedToCreateWorld)
        }
        other => panic!("{other}"),
    }
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn a_vanishing_mod_is_noticed() {
    let stem = "agenthost_error_mod_vanishes";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000]);
    let reserved = reserve_clients(&pool, 1, EXPERIMENT, &timeouts())
        .await
        .unwrap();
    let mut mission: AgentMission = start_role(
        &reserved,
        0,
        EXPERIMENT,
        false,
        mission_init_for(stem, 0),
        timeouts(),
    )
    .await
    .unwrap();
    mission.wait_until_begun().await.unwrap();
    let began = Instant::now();
    let (mut observations, mut rewards) = (0, Vec::new());
    let err = loop {
        match mission.next_event().await {
            Ok(MissionEvent::Observation { json, .. }) => {
                serde_json::from_str::<serde_json::Value>(&json).unwrap();
                observations += 1;
            }
            Ok(MissionEvent::Reward(r)) => rewards.push(r),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(observations, 2);
    assert_eq!(rewards, ["0:1.5"]);
    assert!(
        matches!(err, AgentError::ClientLost { role: 0, .. }),
        "{err}"
    );
    // Noticed when the sockets closed (1.5 s after the start), not at some timeout.
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    // Commands can no longer be sent silently into the void.
    let sent = mission.send_line("chat hello").await.unwrap_err();
    assert!(
        matches!(sent, AgentError::NotRunning { role: 0, .. }),
        "{sent}"
    );
    assert_matches_agenthost(&replay);
}

#[tokio::test]
async fn a_warming_up_server_is_waited_for_and_both_roles_run() {
    let stem = "agenthost_error_server_warming_up";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000, 10001]);
    let t = Timeouts {
        find_server_poll: Duration::from_secs(2),
        ..timeouts()
    };
    let reserved = reserve_clients(&pool, 2, EXPERIMENT, &t).await.unwrap();
    assert_eq!(reserved, pool);
    let mut role0 = start_role(
        &reserved,
        0,
        EXPERIMENT,
        false,
        mission_init_for(stem, 0),
        t,
    )
    .await
    .unwrap();
    // The first look finds the world still being created.
    let err = find_server(&pool, EXPERIMENT, &t).await.unwrap_err();
    assert!(matches!(err, AgentError::ServerWarmingUp), "{err}");
    let mut role1 = start_role(&pool, 1, EXPERIMENT, false, mission_init_for(stem, 1), t)
        .await
        .unwrap();
    let (a, b) = tokio::join!(role0.wait_until_begun(), role1.wait_until_begun());
    a.unwrap();
    b.unwrap();
    let mut statuses = Vec::new();
    for mission in [&mut role0, &mut role1] {
        let status = loop {
            match mission.next_event().await {
                Ok(MissionEvent::Ended(ended)) => break ended.status,
                Ok(_) => {}
                Err(e) => panic!("role {}: {e}", mission.role()),
            }
        };
        statuses.push(status);
    }
    assert_eq!(statuses, [MissionEndedStatus::Ended; 2]);
    assert_matches_agenthost(&replay);
}

/// The command lines the real AgentHost sent on each commands port, by port.
fn captured_commands(stem: &str) -> HashMap<u16, Vec<String>> {
    let mut port_of = HashMap::new();
    let mut out: HashMap<u16, String> = HashMap::new();
    for r in load(stem).into_iter().filter(|r| r.channel == "commands") {
        if r.note.starts_with("accept on :") {
            port_of.insert(r.conn, port_in(&r.note, "accept on :").unwrap());
        } else if r.dir == "agent->mod" {
            out.entry(port_of[&r.conn])
                .or_default()
                .push_str(&String::from_utf8_lossy(&r.bytes));
        }
    }
    out.into_iter()
        .map(|(p, text)| (p, text.lines().map(str::to_owned).collect()))
        .collect()
}

#[tokio::test]
async fn a_two_player_mission_runs_from_start_to_mission_ended() {
    let stem = "agenthost_vs_fakemod_2p";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000, 10001]);
    let t = timeouts();
    let reserved = reserve_clients(&pool, 2, EXPERIMENT_2P, &t).await.unwrap();
    let mut role0 = start_role(
        &reserved,
        0,
        EXPERIMENT_2P,
        false,
        mission_init_for(stem, 0),
        t,
    )
    .await
    .unwrap();
    let mut role1 = start_role(&pool, 1, EXPERIMENT_2P, false, mission_init_for(stem, 1), t)
        .await
        .unwrap();
    let (a, b) = tokio::join!(role0.wait_until_begun(), role1.wait_until_begun());
    a.unwrap();
    b.unwrap();
    // Each role sends what the real AgentHost sent, in order; then both wait for
    // the end, counting observations.
    let commands = captured_commands(stem);
    let mut observations = [0usize; 2];
    for (r, mission) in [&mut role0, &mut role1].into_iter().enumerate() {
        for line in &commands[&(11000 + r as u16)] {
            mission.send_line(line).await.unwrap();
        }
    }
    for (r, mission) in [&mut role0, &mut role1].into_iter().enumerate() {
        loop {
            match mission.next_event().await {
                Ok(MissionEvent::Ended(ended)) => {
                    assert_eq!(ended.status, MissionEndedStatus::Ended);
                    break;
                }
                Ok(MissionEvent::Observation { json, .. }) => {
                    serde_json::from_str::<serde_json::Value>(&json).unwrap();
                    observations[r] += 1;
                }
                Ok(_) => {}
                Err(e) => panic!("role {r}: {e}"),
            }
        }
    }
    assert!(observations.iter().all(|&n| n > 0), "{observations:?}");
    drop((role0, role1));
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The mod received, per connection, exactly the AgentHost's command bytes.
    let seen = replay.seen.lock().unwrap();
    let mut got = seen.commands.clone();
    let mut expected: Vec<Vec<String>> = commands.into_values().collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    drop(seen);
    assert_matches_agenthost(&replay);
}

/// The mod's own networking and JAXB classes (tcpdump capture): control replies one
/// byte per TCP segment, split header and body writes, the JAXB echo and
/// MissionEnded.
#[tokio::test]
async fn the_mods_own_classes_one_byte_segments_and_jaxb_documents() {
    let stem = "agenthost_vs_modclasses_1p";
    let experiment = "3a1f6c2e-9b8d-4e7f-a0b1-c2d3e4f5a6b7";
    let replay = replay(stem).await;
    let pool = replay.pool(&[10000]);
    let t = timeouts();
    let reserved = reserve_clients(&pool, 1, experiment, &t).await.unwrap();
    let mut mission = start_role(
        &reserved,
        0,
        experiment,
        false,
        mission_init_for(stem, 0),
        t,
    )
    .await
    .unwrap();
    mission.wait_until_begun().await.unwrap();
    let echo = mission.echo().unwrap();
    assert!(echo.connection.client_commands_port > 0);
    assert_eq!(echo.connection.agent_address, "localhost");
    for line in &captured_commands(stem)[&11000] {
        mission.send_line(line).await.unwrap();
    }
    let mut observations = 0;
    loop {
        match mission.next_event().await {
            Ok(MissionEvent::Ended(ended)) => {
                assert_eq!(ended.status, MissionEndedStatus::Ended);
                break;
            }
            Ok(MissionEvent::Observation { json, .. }) => {
                malmo_bridge::observation::Observation::parse(json.as_bytes()).unwrap();
                observations += 1;
            }
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // Every observation frame the mod wrote, however it was segmented.
    let mut decoder = malmo_bridge::frame::FrameDecoder::new(1 << 20);
    for r in load(stem)
        .iter()
        .filter(|r| r.channel == "obs" && r.dir == "mod->agent")
    {
        decoder.push(&r.bytes);
    }
    let mut captured = 0;
    while decoder.next_frame().unwrap().is_some() {
        captured += 1;
    }
    assert_eq!(observations, captured);
    assert!(captured >= 5);
    assert_matches_agenthost(&replay);
}
