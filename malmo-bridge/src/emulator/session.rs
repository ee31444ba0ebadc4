//! One client's part in one mission, after it replied MALMOOK to a MissionInit
//! (PROTOCOL.md §3.3 steps 1-6, §4, §5): connect to the agent's mission-control
//! port and ping it, create the world (role 0) or join it (roles > 0), wait for
//! every role, send the MissionInit echo, open observations and rewards (and
//! video), then tick: run queued commands, send an observation, ping every
//! second, until every agent has finished and MissionEnded goes out.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::frame::{LineDecoder, encode_frame};
use crate::mission_ended::{MissionEnded, MissionEndedStatus};
use crate::mission_init::{MissionInit, MissionInitForm, ServerConnection};

use super::Shared;
use super::client::Client;
use super::fault_schedule::MissionClock;
use super::faults::{FaultChannel, Faults};
use super::server::{self, WorldHandle, WorldRequest};
use super::transcript::{TranscriptChannel, TranscriptEntry};

/// The ping the mod sends on mission control.
pub(crate) const PING: &str = r#"<?xml version="1.0" encoding="UTF-8"?><ping/>"#;

/// Pings while waiting for the mission to start: every 10 client ticks.
const PING_WHILE_WAITING: Duration = Duration::from_millis(500);

/// Pings while the mission runs.
const PING_WHILE_RUNNING: Duration = Duration::from_secs(1);

/// The mod's connect and write timeout.
const IO_DEADLINE: Duration = Duration::from_secs(30);

/// Command lines that may wait for the next tick.
const COMMAND_QUEUE: usize = 1024;

/// The longest command line the mod reads.
const MAX_COMMAND_LINE: usize = 10_000_000;

/// How a session stopped early.
enum Stop {
    /// The agent cannot be reached; nothing more can be said to it.
    AgentGone,
    /// The mission ended with this MissionEnded (already sent or not sendable).
    Ended,
    /// Minecraft "exited" (a fault) or the emulator shuts down.
    Vanished,
}

/// One of the mod's connections to the agent.
struct Link {
    channel: FaultChannel,
    stream: TcpStream,
}

impl Link {
    async fn connect(channel: FaultChannel, host: IpAddr, port: u16) -> Option<Self> {
        let connect = TcpStream::connect((host, port));
        match tokio::time::timeout(IO_DEADLINE, connect).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Some(Self { channel, stream })
            }
            Ok(Err(e)) => {
                log::warn!("cannot connect to the agent's {channel:?} port {port}: {e}");
                None
            }
            Err(_) => {
                log::warn!("connecting to the agent's {channel:?} port {port} timed out");
                None
            }
        }
    }

    /// Writes one frame, header and body as separate writes as the mod does,
    /// applying the client's faults. An error means the link is unusable.
    async fn send(&mut self, payload: &[u8], faults: &Faults) -> std::io::Result<()> {
        if let Some(delay) = faults.delay_of(self.channel) {
            tokio::time::sleep(delay).await;
        }
        if let Some(how) = faults.take_corrupt(self.channel) {
            log::info!("fault: corrupting a frame on {:?}", self.channel);
            return self.write(how.bytes()).await;
        }
        let mut frame = Vec::with_capacity(payload.len() + 4);
        encode_frame(payload, &mut frame).map_err(std::io::Error::other)?;
        if faults.take_truncate(self.channel) {
            log::info!("fault: truncating a frame on {:?}", self.channel);
            let cut = 4 + payload.len() / 2;
            self.write(&frame[..cut]).await?;
            let _ = self.stream.shutdown().await;
            return Err(std::io::Error::other("truncated by a fault"));
        }
        self.write(&frame[..4]).await?;
        self.write(&frame[4..]).await
    }

    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match tokio::time::timeout(IO_DEADLINE, self.stream.write_all(bytes)).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::other("write timed out")),
        }
    }
}

/// Starts the session task.
pub(crate) fn spawn(client: Arc<Client>, shared: Arc<Shared>, init: MissionInit, agent: IpAddr) {
    let tasks = shared.tasks.clone();
    tasks.spawn(async move {
        let mut session = Session {
            role: init.role.0 as usize,
            client,
            shared,
            init,
            agent,
            mcp: None,
            obs: None,
            rew: None,
            vid: None,
            world: None,
            owns_world: false,
            commands: None,
        };
        let stop = session.run().await;
        session.finish(stop).await;
    });
}

struct Session {
    role: usize,
    client: Arc<Client>,
    shared: Arc<Shared>,
    init: MissionInit,
    /// The agent's address: the peer of the control connection.
    agent: IpAddr,
    mcp: Option<Link>,
    obs: Option<Link>,
    rew: Option<Link>,
    vid: Option<Link>,
    world: Option<WorldHandle>,
    owns_world: bool,
    /// The task reading the commands port, and what it read.
    commands: Option<(AbortOnDrop, mpsc::Receiver<String>)>,
}

/// A task that stops when its handle is dropped, so that an aborted session
/// also stops reading its commands port.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Session {
    fn faults(&self) -> &Faults {
        &self.client.faults
    }

    fn tag(&self) -> String {
        format!("client {} role {}", self.client.index, self.role)
    }

    async fn run(&mut self) -> Stop {
        let port = self.init.connection.agent_ports.mission_control;
        self.mcp = Link::connect(FaultChannel::MissionControl, self.agent, port).await;
        if self.mcp.is_none() {
            return Stop::AgentGone;
        }
        let world = match self.open_world().await {
            Ok(world) => world,
            Err(stop) => return stop,
        };
        self.world = Some(world.clone());
        if let Err(stop) = self.join(world.clone()).await {
            return stop;
        }
        if let Err(stop) = self.begin().await {
            return stop;
        }
        self.client.clock.send_modify(MissionClock::start);
        self.tick_loop(world).await
    }

    /// Role 0 creates the world and opens it to LAN; roles > 0 find the server
    /// their MissionInit names.
    async fn open_world(&mut self) -> Result<WorldHandle, Stop> {
        if self.role > 0 {
            let server = self.init.server.clone();
            let world = server
                .as_ref()
                .and_then(|s| self.shared.world_at(s.port))
                .filter(|w| w.experiment_id() == self.init.experiment_id.as_str());
            return match world {
                Some(world) => Ok(world),
                None => Err(self
                    .end_with(
                        MissionEndedStatus::ModConnectionFailed,
                        &format!("Could not connect to the server {server:?}"),
                    )
                    .await),
            };
        }
        let deadline = Instant::now() + self.shared.config.world_delay;
        self.ping_until(deadline, PING_WHILE_WAITING).await?;
        if let Some(message) = self.faults().take_fail_world_creation() {
            let text = format!("Server world-creation handler failed to create a world: {message}");
            return Err(self
                .end_with(MissionEndedStatus::ModFailedToCreateWorld, &text)
                .await);
        }
        let lan = TcpListener::bind((self.client.host, 0)).await;
        let Ok((lan, port)) = lan.and_then(|l| l.local_addr().map(|a| (l, a.port()))) else {
            return Err(self
                .end_with(
                    MissionEndedStatus::ModFailedToCreateWorld,
                    "cannot open to LAN",
                )
                .await);
        };
        let mission = &self.init.mission.mission;
        let world = server::spawn(
            mission,
            self.init.experiment_id.as_str(),
            lan,
            port,
            &self.shared.tasks,
            self.shared.config.mod_flavour,
        );
        self.shared.register(world.clone());
        self.owns_world = true;
        if mission.num_agents() > 1 {
            self.client.state().server = Some(ServerConnection {
                address: self.init.connection.client_address.clone(),
                port,
            });
        }
        log::info!(
            "{}: world created for experiment {}, LAN port {port}",
            self.tag(),
            self.init.experiment_id
        );
        Ok(world)
    }

    /// Joins the server and waits, pinging, until every role has joined.
    async fn join(&mut self, mut world: WorldHandle) -> Result<(), Stop> {
        if world
            .request(WorldRequest::Join { role: self.role })
            .await
            .is_err()
        {
            return Err(self
                .end_with(
                    MissionEndedStatus::ModServerUnreachable,
                    "the server stopped",
                )
                .await);
        }
        let deadline = Instant::now() + self.shared.config.join_timeout;
        let mut ping = tokio::time::interval(PING_WHILE_WAITING);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut shutdown = self.shared.shutdown.clone();
        loop {
            tokio::select! {
                started = world.wait_started() => {
                    return match started {
                        Ok(()) => Ok(()),
                        Err(_) => Err(self
                            .end_with(MissionEndedStatus::ModServerUnreachable, "the server stopped")
                            .await),
                    };
                }
                _ = ping.tick() => self.ping().await?,
                () = tokio::time::sleep_until(deadline) => {
                    return Err(self
                        .end_with(
                            MissionEndedStatus::ModConnectionFailed,
                            "Too long waiting for server episode to start",
                        )
                        .await);
                }
                _ = shutdown.changed() => return Err(Stop::Vanished),
            }
        }
    }

    /// Sends the echo and opens the data connections and the commands port.
    async fn begin(&mut self) -> Result<(), Stop> {
        let mut echo = self.init.clone();
        echo.connection.client_commands_port = self.client.commands_port;
        echo.connection.agent_address = host_name(self.agent);
        if self.role == 0 && self.init.mission.mission.num_agents() > 1 {
            echo.server = self.client.state().server.clone();
        }
        self.send_mcp(echo.render(MissionInitForm::ModEcho).as_bytes())
            .await?;
        let ports = self.init.connection.agent_ports;
        self.obs = Link::connect(FaultChannel::Observations, self.agent, ports.observations).await;
        self.rew = Link::connect(FaultChannel::Rewards, self.agent, ports.rewards).await;
        if ports.video != 0 {
            self.vid = Link::connect(FaultChannel::Video, self.agent, ports.video).await;
        }
        if self.obs.is_none() || self.rew.is_none() {
            return Err(Stop::AgentGone);
        }
        self.listen_for_commands();
        log::info!("{}: mission running", self.tag());
        Ok(())
    }

    /// (Re)starts reading the commands port; a previous reader and its
    /// connection are dropped.
    fn listen_for_commands(&mut self) {
        // Dropping the previous reader closes its connection.
        self.commands = None;
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        let client = Arc::clone(&self.client);
        let task = tokio::spawn(read_commands(client, tx));
        self.commands = Some((AbortOnDrop(task), rx));
    }

    async fn tick_loop(&mut self, world: WorldHandle) -> Stop {
        let mut tick = tokio::time::interval(self.shared.config.tick);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ping = tokio::time::interval(PING_WHILE_RUNNING);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut ended = world.ended();
        let mut shutdown = self.shared.shutdown.clone();
        let mut quit = false;
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Err(stop) = self.apply_faults() {
                        return stop;
                    }
                    let commands = self.queued_commands();
                    for line in &commands {
                        log::debug!("{}: command {line:?}", self.tag());
                        if let Some(transcript) = &self.shared.config.transcript {
                            transcript.record(TranscriptEntry {
                                client: self.client.index,
                                channel: TranscriptChannel::Commands,
                                received: line.clone(),
                                reply: None,
                            });
                        }
                    }
                    let Ok(outcome) = world.tick(self.role, commands).await else {
                        return self.end_with(MissionEndedStatus::ModServerUnreachable, "the server stopped").await;
                    };
                    if let Some(observation) = outcome.observation
                        && let Err(stop) = self.send_observation(observation).await
                    {
                        return stop;
                    }
                    self.client.clock.send_modify(|c| c.ticks += 1);
                    if outcome.quit && !quit {
                        quit = true;
                        log::info!("{}: quit; waiting for the other agents", self.tag());
                        // Observations and rewards stop; mission control stays up.
                        self.obs = None;
                        self.rew = None;
                        self.vid = None;
                    }
                }
                _ = ping.tick() => {
                    if let Err(stop) = self.ping().await {
                        return stop;
                    }
                }
                ended_normally = async { ended.wait_for(|e| *e).await.is_ok() } => {
                    return if ended_normally {
                        self.end_with(MissionEndedStatus::Ended, "").await
                    } else {
                        self.end_with(MissionEndedStatus::ModServerUnreachable, "the server stopped").await
                    };
                }
                _ = shutdown.changed() => return Stop::Vanished,
            }
        }
    }

    /// Fires the faults that act at a tick.
    fn apply_faults(&mut self) -> Result<(), Stop> {
        if self.faults().take_exit() {
            log::info!("{}: fault: exiting mid-mission", self.tag());
            return Err(Stop::Vanished);
        }
        for channel in self.faults().take_drops() {
            log::info!("{}: fault: dropping the {channel:?} connection", self.tag());
            match channel {
                FaultChannel::MissionControl => self.mcp = None,
                FaultChannel::Observations => self.obs = None,
                FaultChannel::Rewards => self.rew = None,
                FaultChannel::Video => self.vid = None,
                FaultChannel::Commands => self.listen_for_commands(),
            }
        }
        Ok(())
    }

    fn queued_commands(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some((_, rx)) = &mut self.commands {
            while let Ok(line) = rx.try_recv() {
                lines.push(line);
            }
        }
        lines
    }

    async fn send_observation(&mut self, observation: String) -> Result<(), Stop> {
        let faults = self.client.faults.clone();
        let Some(obs) = &mut self.obs else {
            return Ok(());
        };
        let payload = if faults.take_malformed_json() {
            log::info!("fault: sending malformed JSON");
            observation[..observation.len() / 2].to_owned()
        } else {
            observation
        };
        if let Err(e) = obs.send(payload.as_bytes(), &faults).await {
            // The mod gives up on an agent it cannot write to.
            log::info!("observation not delivered: {e}");
            self.obs = None;
        }
        Ok(())
    }

    /// One ping, unless pings are stopped by a fault. A ping that cannot be
    /// delivered means the agent is gone.
    async fn ping(&mut self) -> Result<(), Stop> {
        if self.faults().pings_stopped() || self.mcp.is_none() {
            return Ok(());
        }
        self.send_mcp(PING.as_bytes()).await
    }

    async fn send_mcp(&mut self, payload: &[u8]) -> Result<(), Stop> {
        let faults = self.client.faults.clone();
        let Some(mcp) = &mut self.mcp else {
            return Err(Stop::AgentGone);
        };
        if let Err(e) = mcp.send(payload, &faults).await {
            log::info!(
                "{}: mission control not delivered ({e}); the agent is gone",
                self.tag()
            );
            self.mcp = None;
            return Err(Stop::AgentGone);
        }
        Ok(())
    }

    async fn ping_until(&mut self, deadline: Instant, every: Duration) -> Result<(), Stop> {
        let mut ping = tokio::time::interval(every);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // The first ping goes out one period after connecting, as in the captures.
        ping.tick().await;
        let mut shutdown = self.shared.shutdown.clone();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Ok(()),
                _ = ping.tick() => self.ping().await?,
                _ = shutdown.changed() => return Err(Stop::Vanished),
            }
        }
    }

    /// Sends MissionEnded and closes mission control.
    async fn end_with(&mut self, status: MissionEndedStatus, text: &str) -> Stop {
        let ended = MissionEnded {
            status,
            human_readable_status: text.to_owned(),
            ..MissionEnded::ended()
        };
        log::info!("{}: mission ended: {status} {text:?}", self.tag());
        let _ = self.send_mcp(ended.render().as_bytes()).await;
        self.mcp = None;
        Stop::Ended
    }

    /// Cleans up however the session stopped: the agent's connections close, the
    /// server learns this role is done, and the client returns to DORMANT.
    async fn finish(mut self, stop: Stop) {
        self.client
            .clock
            .send_if_modified(|c| std::mem::replace(&mut c.running, false));
        self.commands = None;
        let (mcp, obs, rew, vid) = (
            self.mcp.take(),
            self.obs.take(),
            self.rew.take(),
            self.vid.take(),
        );
        drop((mcp, obs, rew, vid));
        if let Some(world) = self.world.clone() {
            let world_ended = world.has_ended();
            if !matches!(stop, Stop::Ended) || !world_ended {
                let _ = world
                    .request(WorldRequest::Finish { role: self.role })
                    .await;
            }
            if self.owns_world {
                self.shared.unregister(world.port());
            }
        }
        let why = match stop {
            Stop::AgentGone => "the agent is gone",
            Stop::Ended => "MissionEnded sent",
            Stop::Vanished => "the client vanished",
        };
        log::info!("{}: back to DORMANT ({why})", self.tag());
        self.client.set_dormant();
    }
}

/// The host name the mod writes as `AgentIPAddress`: Java's `getHostName()` of
/// the control connection's peer, `localhost` for loopback (no DNS lookups here).
fn host_name(ip: IpAddr) -> String {
    if ip.is_loopback() {
        "localhost".to_owned()
    } else {
        ip.to_string()
    }
}

/// Accepts the agent's commands connections for one mission and forwards their
/// lines; the bounded queue makes a flood of commands wait in the socket.
async fn read_commands(client: Arc<Client>, tx: mpsc::Sender<String>) {
    loop {
        let Ok((mut stream, peer)) = client.commands.accept().await else {
            continue;
        };
        log::debug!("client {}: commands connection from {peer}", client.index);
        let mut decoder = LineDecoder::new(MAX_COMMAND_LINE);
        let mut buf = vec![0u8; 16 << 10];
        'connection: loop {
            loop {
                match decoder.next_line() {
                    Ok(Some(line)) => {
                        if let Some(delay) = client.faults.delay_of(FaultChannel::Commands) {
                            tokio::time::sleep(delay).await;
                        }
                        let line = String::from_utf8_lossy(&line).into_owned();
                        if tx.send(line).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        log::warn!("client {}: commands: {e}", client.index);
                        break 'connection;
                    }
                }
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => decoder.push(&buf[..n]),
            }
        }
    }
}
