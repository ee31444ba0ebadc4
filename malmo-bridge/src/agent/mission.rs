//! Starting a mission on Minecraft clients and running it (PROTOCOL.md §3-§7), as
//! MalmoPython's `AgentHost` does, but with a deadline on every wait and typed
//! errors that keep what each client said.

use std::collections::{HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::MALMO_VERSION;
use crate::command::Command;
use crate::control::{ControlReply, ControlRequest};
use crate::frame::encode_line;

use super::client::{ClientAddr, exchange};
use super::error::{AgentError, Attempt, Attempts, Stage, hint_for};
use super::listeners::{Channel, ConnectionEvent, ConnectionId, Incoming, Listeners};
use super::peers::PeerFilter;
use crate::mission_ended::{MissionEnded, MissionEndedStatus};
use crate::mission_init::{AgentPorts, MissionInit, ServerConnection};

/// How long MalmoPython reserves a client for, in milliseconds.
pub const RESERVATION_MS: u64 = 20_000;

/// How many frames may wait between the listeners and the mission's reader.
const INCOMING_CAPACITY: usize = 1024;

/// How many frames that arrive before the MissionInit echo are kept for
/// delivery after it (the oldest go first): a few seconds of one client's
/// observations, which only the newest of matter once the mission runs.
const EARLY_CAPACITY: usize = 256;

/// Every deadline of the agent side. The defaults follow MBAG's own waits where it
/// has them, and are much shorter than MalmoPython's 60 s per exchange where it
/// does not, so that a dead Minecraft is reported in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeouts {
    /// One control exchange: connect, send, reply.
    pub exchange: Duration,
    /// Polling for role 0's server (roles > 0); MBAG polls for 60 s.
    pub find_server: Duration,
    /// Pause between server polls (MBAG: 2 s).
    pub find_server_poll: Duration,
    /// From the MissionInit being accepted to its echo (MBAG waits 120 s; the
    /// echo comes only once every role has joined).
    pub begin: Duration,
    /// Silence on mission control (pings come every second) after which the
    /// client counts as lost.
    pub silence: Duration,
    /// Waiting for MissionEnded after `quit`.
    pub end: Duration,
    /// Connecting to the commands port and writing a command.
    pub command: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            exchange: Duration::from_secs(10),
            find_server: Duration::from_secs(60),
            find_server_poll: Duration::from_secs(2),
            begin: Duration::from_secs(120),
            silence: Duration::from_secs(5),
            end: Duration::from_secs(10),
            command: Duration::from_secs(5),
        }
    }
}

/// Role 0's reservation: asks the pool's clients in order until `needed` have
/// accepted, and cancels what it reserved if there are not enough.
pub async fn reserve_clients(
    pool: &[ClientAddr],
    needed: usize,
    experiment_id: &str,
    timeouts: &Timeouts,
) -> Result<Vec<ClientAddr>, AgentError> {
    let request = ControlRequest::RequestClient {
        version: MALMO_VERSION.to_owned(),
        reservation_ms: RESERVATION_MS,
        experiment_id: experiment_id.to_owned(),
    };
    let mut reserved = Vec::new();
    let mut attempts = Vec::new();
    for client in pool {
        if reserved.len() == needed {
            break;
        }
        let outcome = exchange(client, &request, timeouts.exchange).await;
        if matches!(outcome, Ok(ControlReply::Ok)) {
            reserved.push(client.clone());
        }
        log::debug!("reservation: {}", display_outcome(client, &outcome));
        attempts.push(Attempt {
            client: client.clone(),
            outcome,
        });
    }
    if reserved.len() < needed {
        for client in &reserved {
            if let Err(e) =
                exchange(client, &ControlRequest::CancelRequest, timeouts.exchange).await
            {
                log::warn!("cancelling the reservation of {client}: {e}");
            }
        }
        let attempts = Attempts(attempts);
        return Err(AgentError::InsufficientClients {
            stage: Stage::Reservation,
            accepted: reserved.len(),
            needed,
            hint: hint_for(&attempts),
            attempts,
        });
    }
    Ok(reserved)
}

fn display_outcome(
    client: &ClientAddr,
    outcome: &Result<ControlReply, super::error::ContactError>,
) -> String {
    match outcome {
        Ok(r) => format!("{client} replied {r}"),
        Err(e) => format!("{client}: {e}"),
    }
}

/// One pass of `MALMO_FIND_SERVER` over the whole pool, stopping at the first
/// client that knows the server.
pub async fn find_server(
    pool: &[ClientAddr],
    experiment_id: &str,
    timeouts: &Timeouts,
) -> Result<ServerConnection, AgentError> {
    let request = ControlRequest::FindServer {
        experiment_id: experiment_id.to_owned(),
    };
    let mut attempts = Vec::new();
    for client in pool {
        let outcome = exchange(client, &request, timeouts.exchange).await;
        if let Ok(ControlReply::Server { address, port }) = &outcome {
            return Ok(ServerConnection {
                address: address.trim().to_owned(),
                port: *port,
            });
        }
        attempts.push(Attempt {
            client: client.clone(),
            outcome,
        });
    }
    if attempts
        .iter()
        .any(|a| matches!(a.outcome, Ok(ControlReply::NoServerYet)))
    {
        Err(AgentError::ServerWarmingUp)
    } else {
        Err(AgentError::ServerNotFound {
            attempts: Attempts(attempts),
        })
    }
}

/// Polls [`find_server`] until it succeeds or `timeouts.find_server` passes;
/// "warming up" and "not found yet" are both retried (role 0 may still be starting).
pub async fn find_server_patiently(
    pool: &[ClientAddr],
    experiment_id: &str,
    timeouts: &Timeouts,
) -> Result<ServerConnection, AgentError> {
    let deadline = Instant::now() + timeouts.find_server;
    loop {
        match find_server(pool, experiment_id, timeouts).await {
            Ok(server) => return Ok(server),
            Err(e @ (AgentError::ServerWarmingUp | AgentError::ServerNotFound { .. })) => {
                if Instant::now() + timeouts.find_server_poll > deadline {
                    return Err(e);
                }
                log::info!("waiting for role 0's server: {e}");
                tokio::time::sleep(timeouts.find_server_poll).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends the MissionInit line to `clients[start % n]`, then the next ones in turn,
/// until one accepts; returns that client.
pub async fn hand_over_mission_init(
    clients: &[ClientAddr],
    start: usize,
    mission_init: &str,
    timeouts: &Timeouts,
) -> Result<ClientAddr, AgentError> {
    let request = ControlRequest::MissionInit(mission_init.to_owned());
    let n = clients.len();
    let mut attempts = Vec::new();
    for k in 0..n {
        let client = &clients[(start + k) % n];
        let outcome = exchange(client, &request, timeouts.exchange).await;
        if matches!(outcome, Ok(ControlReply::Ok)) {
            return Ok(client.clone());
        }
        log::debug!("MissionInit: {}", display_outcome(client, &outcome));
        attempts.push(Attempt {
            client: client.clone(),
            outcome,
        });
    }
    let attempts = Attempts(attempts);
    Err(AgentError::InsufficientClients {
        stage: Stage::MissionInit,
        accepted: 0,
        needed: 1,
        hint: hint_for(&attempts),
        attempts,
    })
}

/// Where one role's client runs its mission: what the MissionInit echo says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandsEndpoint {
    /// The client's address (`ClientIPAddress`).
    pub host: String,
    /// The commands port the client opened (`ClientCommandsPort`).
    pub port: u16,
}

/// What a running mission delivers.
#[derive(Debug, PartialEq)]
pub enum MissionEvent {
    /// An observation's JSON text.
    Observation {
        /// Wall-clock time the frame arrived on its socket.
        received: SystemTime,
        /// Monotonic time the frame arrived on its socket, for latencies.
        arrived: Instant,
        /// The JSON text.
        json: String,
    },
    /// A reward message (`dim:value,…`).
    Reward(String),
    /// A ping on mission control.
    Ping,
    /// A video frame (header and pixels).
    VideoFrame(Vec<u8>),
    /// The mission ended normally (ENDED or PLAYER_DIED).
    Ended(MissionEnded),
}

/// A command's round trip ([`AgentMission::round_trip`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RoundTrip {
    /// From sending the command to receiving the observation that echoes it.
    pub elapsed: Duration,
    /// That observation's JSON text.
    pub observation: String,
}

/// Where one role's mission stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissionState {
    /// The MissionInit was accepted; waiting for its echo.
    Starting,
    /// The echo arrived and the commands connection is open.
    Running,
    /// MissionEnded arrived, or the mission was given up.
    Ended,
}

/// One role's mission on one Minecraft client: its listeners, the incoming frames
/// and the commands connection.
#[derive(Debug)]
pub struct AgentMission {
    role: usize,
    client: ClientAddr,
    timeouts: Timeouts,
    listeners: Listeners,
    rx: mpsc::Receiver<Incoming>,
    commands: Option<TcpStream>,
    state: MissionState,
    last_control: Instant,
    echo: Option<MissionInit>,
    /// Frames that arrived while waiting for the echo, delivered afterwards
    /// (at most [`EARLY_CAPACITY`]).
    early: VecDeque<MissionEvent>,
    /// The mission-control connections that spoke the mod's protocol (a ping,
    /// the echo, MissionEnded): one of them closing means the client is gone,
    /// while a stray connection (a port scan) closing means nothing.
    mod_control: HashSet<ConnectionId>,
    /// The observation, reward and video connections that delivered a whole
    /// frame: the mod's. A broken frame on one of them means the mod's stream
    /// is broken (an error, as before); on any other connection it is a
    /// stranger's, dropped by the listener.
    mod_data: HashSet<(Channel, ConnectionId)>,
    /// The mission-control connection that delivered the MissionInit echo:
    /// the mod keeps that one connection for the whole mission, so only it
    /// may end the mission.
    echo_connection: Option<ConnectionId>,
    /// Connections whose foreign MissionEnded was logged (once each).
    foreign_ends: HashSet<ConnectionId>,
}

/// A frame from an admitted peer.
struct Frame {
    channel: Channel,
    connection: ConnectionId,
    /// When the frame arrived on its socket (wall clock).
    received: SystemTime,
    at: Instant,
    payload: Vec<u8>,
}

/// [`start_role_at`] with the listeners on loopback, for clients on this machine.
pub async fn start_role(
    clients: &[ClientAddr],
    role: usize,
    experiment_id: &str,
    video: bool,
    mission_init: impl FnOnce(&AgentPorts, Option<&ServerConnection>) -> String,
    timeouts: Timeouts,
) -> Result<AgentMission, AgentError> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    start_role_at(
        loopback,
        clients,
        role,
        experiment_id,
        video,
        mission_init,
        timeouts,
    )
    .await
}

/// Starts one role: binds its listeners on `address` (where the clients reach
/// this machine; the MissionInit must name it), admitting connections from
/// `clients` only, finds role 0's server (roles > 0), and hands the MissionInit
/// made by `mission_init` (from the bound ports and the server, if any) to a
/// client. Role 0 must pass the clients it reserved with [`reserve_clients`];
/// other roles pass the whole pool.
pub async fn start_role_at(
    address: IpAddr,
    clients: &[ClientAddr],
    role: usize,
    experiment_id: &str,
    video: bool,
    mission_init: impl FnOnce(&AgentPorts, Option<&ServerConnection>) -> String,
    timeouts: Timeouts,
) -> Result<AgentMission, AgentError> {
    let (tx, rx) = mpsc::channel(INCOMING_CAPACITY);
    let peers = PeerFilter::resolve(clients).await;
    let listeners = Listeners::bind(address, peers, video, tx).await?;
    let server = if role > 0 {
        Some(find_server_patiently(clients, experiment_id, &timeouts).await?)
    } else {
        None
    };
    let line = mission_init(&listeners.ports(), server.as_ref());
    let client = hand_over_mission_init(clients, role, &line, &timeouts).await?;
    log::info!("role {role}: mission accepted by {client}");
    Ok(AgentMission {
        role,
        client,
        timeouts,
        listeners,
        rx,
        commands: None,
        state: MissionState::Starting,
        last_control: Instant::now(),
        echo: None,
        early: VecDeque::new(),
        mod_control: HashSet::new(),
        mod_data: HashSet::new(),
        echo_connection: None,
        foreign_ends: HashSet::new(),
    })
}

impl AgentMission {
    /// The role.
    pub fn role(&self) -> usize {
        self.role
    }

    /// The client running it.
    pub fn client(&self) -> &ClientAddr {
        &self.client
    }

    /// The listeners' ports.
    pub fn ports(&self) -> AgentPorts {
        self.listeners.ports()
    }

    /// Where the mission stands.
    pub fn state(&self) -> MissionState {
        self.state
    }

    /// The MissionInit echo, once it has arrived: the mission as the client runs
    /// it (its commands port, the agent address it saw, role 0's server).
    pub fn echo(&self) -> Option<&MissionInit> {
        self.echo.as_ref()
    }

    /// Waits for the MissionInit echo (the mission-start signal), then connects to
    /// the commands port it names. Observations that arrive first are kept.
    pub async fn wait_until_begun(&mut self) -> Result<CommandsEndpoint, AgentError> {
        let deadline = Instant::now() + self.timeouts.begin;
        loop {
            let incoming = self.receive_until(deadline, "the MissionInit echo").await?;
            let Some(frame) = self.check(incoming)? else {
                continue;
            };
            match frame.channel {
                Channel::MissionControl => {
                    let text = String::from_utf8_lossy(&frame.payload).into_owned();
                    if is_ping(&text) {
                        self.spoke_the_protocol(&frame);
                        continue;
                    }
                    if text.contains("<MissionEnded") {
                        self.spoke_the_protocol(&frame);
                        // Even a normal end before the echo means the mission never ran.
                        self.state = MissionState::Ended;
                        let ended = parse_mission_ended(&text)?;
                        return Err(AgentError::MissionEndedAbnormally {
                            status: ended.status,
                            text: ended.human_readable_status,
                        });
                    }
                    if text.contains("<MissionInit") {
                        let echo = MissionInit::parse(&text).map_err(|e| AgentError::Protocol {
                            channel: "mcp",
                            detail: format!("unreadable MissionInit echo: {e}"),
                        })?;
                        let endpoint = CommandsEndpoint {
                            host: echo.connection.client_address.trim().to_owned(),
                            port: echo.connection.client_commands_port,
                        };
                        self.spoke_the_protocol(&frame);
                        self.echo_connection = Some(frame.connection);
                        self.echo = Some(echo);
                        self.connect_commands(&endpoint).await?;
                        self.state = MissionState::Running;
                        return Ok(endpoint);
                    }
                    log::warn!(
                        "role {}: ignored an unexpected message before the echo: {}",
                        self.role,
                        shorten(&text)
                    );
                }
                _ => {
                    if self.early.len() == EARLY_CAPACITY {
                        self.early.pop_front();
                    }
                    self.early.push_back(data_event(frame));
                }
            }
        }
    }

    async fn connect_commands(&mut self, endpoint: &CommandsEndpoint) -> Result<(), AgentError> {
        let connect = TcpStream::connect((endpoint.host.as_str(), endpoint.port));
        let stream = tokio::time::timeout(self.timeouts.command, connect)
            .await
            .map_err(|_| AgentError::Timeout {
                what: format!(
                    "the commands port {}:{} of role {}",
                    endpoint.host, endpoint.port, self.role
                ),
                after: self.timeouts.command,
            })?
            .map_err(|e| AgentError::ClientLost {
                role: self.role,
                reason: format!(
                    "cannot connect to its commands port {}:{}: {e}",
                    endpoint.host, endpoint.port
                ),
            })?;
        let _ = stream.set_nodelay(true);
        self.commands = Some(stream);
        Ok(())
    }

    /// Sends one command. Unlike MalmoPython, a command that cannot be delivered is
    /// an error, not a silent loss.
    pub async fn send(&mut self, command: &Command) -> Result<(), AgentError> {
        self.send_line(&command.to_string()).await
    }

    /// Sends one raw command line (without its `\n`).
    pub async fn send_line(&mut self, line: &str) -> Result<(), AgentError> {
        let role = self.role;
        let (MissionState::Running, Some(stream)) = (self.state, self.commands.as_mut()) else {
            let state = match self.state {
                MissionState::Starting => "starting",
                _ => "over",
            };
            return Err(AgentError::NotRunning { role, state });
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        encode_line(line.as_bytes(), &mut bytes).map_err(|e| AgentError::Protocol {
            channel: "commands",
            detail: e.to_string(),
        })?;
        match tokio::time::timeout(self.timeouts.command, stream.write_all(&bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.commands = None;
                self.state = MissionState::Ended;
                Err(AgentError::ClientLost {
                    role,
                    reason: format!("writing a command failed: {e}"),
                })
            }
            Err(_) => Err(AgentError::ClientLost {
                role,
                reason: format!(
                    "a command could not be written within {:?}",
                    self.timeouts.command
                ),
            }),
        }
    }

    /// The next event of the running mission. Silence on mission control longer
    /// than `timeouts.silence`, or the mod closing a channel before MissionEnded,
    /// is [`AgentError::ClientLost`].
    pub async fn next_event(&mut self) -> Result<MissionEvent, AgentError> {
        if let Some(event) = self.early.pop_front() {
            return Ok(event);
        }
        loop {
            if self.state == MissionState::Ended {
                return Err(AgentError::Protocol {
                    channel: "mcp",
                    detail: format!("role {}: the mission has ended", self.role),
                });
            }
            let deadline = self.last_control + self.timeouts.silence;
            let incoming = match self.receive_until(deadline, "a ping").await {
                Ok(i) => i,
                Err(AgentError::Timeout { after, .. }) => {
                    self.state = MissionState::Ended;
                    return Err(AgentError::ClientLost {
                        role: self.role,
                        reason: format!(
                            "no ping for {:?} (Minecraft hung or died)",
                            after.max(self.timeouts.silence)
                        ),
                    });
                }
                Err(e) => return Err(e),
            };
            let Some(frame) = self.check(incoming)? else {
                continue;
            };
            if frame.channel != Channel::MissionControl {
                return Ok(data_event(frame));
            }
            let text = String::from_utf8_lossy(&frame.payload).into_owned();
            if is_ping(&text) {
                self.spoke_the_protocol(&frame);
                return Ok(MissionEvent::Ping);
            }
            if text.contains("<MissionEnded") {
                if let Some(echoed) = self.echo_connection
                    && echoed != frame.connection
                {
                    if self.foreign_ends.insert(frame.connection) {
                        log::warn!(
                            "role {}: ignored a MissionEnded on mission-control connection {:?}, not the mod's ({echoed:?})",
                            self.role,
                            frame.connection
                        );
                    }
                    continue;
                }
                self.state = MissionState::Ended;
                self.commands = None;
                let ended = parse_mission_ended(&text)?;
                return if ended.status.is_abnormal() {
                    Err(AgentError::MissionEndedAbnormally {
                        status: ended.status,
                        text: ended.human_readable_status,
                    })
                } else {
                    Ok(MissionEvent::Ended(ended))
                };
            }
            // Not the mod's: an admitted host's stray writes must not end the
            // mission.
            log::warn!(
                "role {}: ignored an unexpected mission-control message: {}",
                self.role,
                shorten(&text)
            );
        }
    }

    /// Sends `command` and waits for the first observation whose
    /// `CommandsSinceLastObservation` echoes it ([`Command::echo`]): the
    /// command-to-observation round trip, for benchmarks. Events before it are
    /// discarded. The echo must come within `timeouts.silence`.
    pub async fn round_trip(&mut self, command: &Command) -> Result<RoundTrip, AgentError> {
        let echo = command.echo();
        // Observations that cannot echo the command are skipped without parsing,
        // so that a fast emulator does not build a backlog behind the parser. Only
        // for plain text: gson escapes `<`, `>`, `&`, `=` and `'` as \u00XX.
        let plain = echo
            .bytes()
            .all(|b| b == b' ' || (b.is_ascii_graphic() && !b"<>&='\"\\".contains(&b)));
        let quoted = format!("\"{echo}\"");
        let sent = Instant::now();
        self.send(command).await?;
        let deadline = sent + self.timeouts.silence;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(wait, self.next_event()).await {
                Err(_) => {
                    return Err(AgentError::Timeout {
                        what: format!("the echo of {echo:?} from role {}", self.role),
                        after: self.timeouts.silence,
                    });
                }
                Ok(Ok(MissionEvent::Observation { json, .. })) => {
                    // The fast reader, as the daemon reads observations.
                    let echoed = (!plain || json.contains(&quoted))
                        && crate::decoded::DecodedObservation::decode(json.as_bytes())
                            .is_ok_and(|o| o.commands.contains(&echo));
                    if echoed {
                        return Ok(RoundTrip {
                            elapsed: sent.elapsed(),
                            observation: json,
                        });
                    }
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    /// Sends `quit` and waits for MissionEnded, skipping other events, within
    /// `timeouts.end`.
    pub async fn quit(&mut self) -> Result<MissionEndedStatus, AgentError> {
        if self.state == MissionState::Running {
            self.send(&Command::Quit).await?;
        }
        let deadline = Instant::now() + self.timeouts.end;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(wait, self.next_event()).await {
                Err(_) => {
                    return Err(AgentError::Timeout {
                        what: format!("MissionEnded from role {}", self.role),
                        after: self.timeouts.end,
                    });
                }
                Ok(Ok(MissionEvent::Ended(ended))) => return Ok(ended.status),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    async fn receive_until(
        &mut self,
        deadline: Instant,
        what: &str,
    ) -> Result<Incoming, AgentError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, self.rx.recv()).await {
            Ok(Some(incoming)) => Ok(incoming),
            Ok(None) => Err(AgentError::ClientLost {
                role: self.role,
                reason: "the listeners stopped".into(),
            }),
            Err(_) => Err(AgentError::Timeout {
                what: format!("{what} from role {}", self.role),
                after: wait,
            }),
        }
    }

    /// Notes that a mission-control frame was the mod's (a ping, the echo or
    /// MissionEnded): its connection is the mod's, and the client is alive.
    /// Only such frames reset the silence deadline, so a stray connection cannot
    /// keep a dead client looking alive.
    fn spoke_the_protocol(&mut self, frame: &Frame) {
        self.mod_control.insert(frame.connection);
        self.last_control = frame.at;
    }

    /// Turns connection events into errors or frames; `None` for events that need
    /// nothing done.
    fn check(&mut self, incoming: Incoming) -> Result<Option<Frame>, AgentError> {
        let Incoming {
            channel,
            connection,
            peer,
            received,
            at,
            event,
        } = incoming;
        let control = channel == Channel::MissionControl;
        match event {
            ConnectionEvent::Connected => Ok(None),
            ConnectionEvent::Frame(payload) => {
                if !control {
                    self.mod_data.insert((channel, connection));
                }
                Ok(Some(Frame {
                    channel,
                    connection,
                    received,
                    at,
                    payload,
                }))
            }
            // Observations and rewards close at a normal end, before MissionEnded;
            // the mod's mission-control connection closing first means the client
            // died.
            ConnectionEvent::Closed if control && self.mod_control.remove(&connection) => {
                self.state = MissionState::Ended;
                Err(AgentError::ClientLost {
                    role: self.role,
                    reason: "the mission-control connection closed before MissionEnded".into(),
                })
            }
            ConnectionEvent::Closed => {
                self.mod_data.remove(&(channel, connection));
                log::debug!(
                    "role {}: {} connection from {peer} closed",
                    self.role,
                    channel.name()
                );
                Ok(None)
            }
            // The mod's own stream broke: the rest of it cannot be framed.
            ConnectionEvent::Malformed(detail)
                if (control && self.mod_control.contains(&connection))
                    || self.mod_data.remove(&(channel, connection)) =>
            {
                self.state = MissionState::Ended;
                Err(AgentError::Protocol {
                    channel: channel.name(),
                    detail,
                })
            }
            // A connection that never spoke the protocol (a port scan, a
            // stranger's hostile length prefix): the listener dropped it and
            // named the peer; the mission goes on.
            ConnectionEvent::Malformed(_) => Ok(None),
        }
    }
}

/// A data frame as an event, stamped with its arrival on the socket.
fn data_event(frame: Frame) -> MissionEvent {
    let Frame {
        channel,
        received,
        at,
        payload,
        ..
    } = frame;
    match channel {
        Channel::Observations => MissionEvent::Observation {
            received,
            arrived: at,
            json: String::from_utf8_lossy(&payload).into_owned(),
        },
        Channel::Rewards => MissionEvent::Reward(String::from_utf8_lossy(&payload).into_owned()),
        Channel::Video => MissionEvent::VideoFrame(payload),
        Channel::MissionControl => unreachable!("mission control is handled by the caller"),
    }
}

fn is_ping(text: &str) -> bool {
    text.trim_end().ends_with("<ping/>")
}

fn shorten(text: &str) -> String {
    let cut: String = text.chars().take(120).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

fn parse_mission_ended(text: &str) -> Result<MissionEnded, AgentError> {
    MissionEnded::parse(text).map_err(|e| AgentError::Protocol {
        channel: "mcp",
        detail: format!("unreadable MissionEnded: {e}"),
    })
}
