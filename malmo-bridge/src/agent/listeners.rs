//! The agent's listeners: the mod connects to them and sends length-prefixed
//! frames (mission control, observations, rewards, video). Every frame is stamped
//! when it arrives and handed to the mission over one bounded channel.
//!
//! The listeners bind the address they are given (loopback unless the clients
//! are remote) and admit only the peers a [`PeerFilter`] names. Whatever a
//! connection does wrong costs only that connection: a peer that is refused, one
//! over the connection limit, or one that breaks the framing (an oversize or
//! hostile length prefix) is dropped with a warning naming it, and the listener
//! keeps serving the mod.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};

use crate::frame::FrameDecoder;
use crate::mission_init::AgentPorts;

use super::error::AgentError;
use super::peers::PeerFilter;

/// Connections open at once per listener. The mod keeps one per channel (and
/// opens a new one when a write fails); the rest of the budget absorbs
/// reconnects whose old connection has not closed yet, and bounds what stray
/// connections from an admitted host can hold.
pub const MAX_CONNECTIONS: usize = 16;

/// Refusals logged as warnings per listener before they are only counted, so a
/// flood of connections cannot flood the log.
const LOGGED_REFUSALS: u64 = 16;

/// One of the channels the mod sends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Mission control: pings, the MissionInit echo, MissionEnded.
    MissionControl,
    /// Observation JSON.
    Observations,
    /// Rewards (`dim:value,…`).
    Rewards,
    /// Video frames (spectator only).
    Video,
}

impl Channel {
    /// The channel's short name, as in the captures.
    pub fn name(self) -> &'static str {
        match self {
            Self::MissionControl => "mcp",
            Self::Observations => "obs",
            Self::Rewards => "rew",
            Self::Video => "vid",
        }
    }

    /// The largest frame accepted: generous for the real traffic (observations are
    /// about 22 KB, a 1920x1080 video frame about 6.2 MB), bounded against a corrupt
    /// length prefix.
    pub fn max_frame(self) -> usize {
        match self {
            Self::MissionControl => 4 << 20,
            Self::Observations => 16 << 20,
            Self::Rewards => 64 << 10,
            Self::Video => 64 << 20,
        }
    }
}

/// One accepted connection of one listener; connections are numbered from 1 in
/// the order they were accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

/// What arrived on a listener.
#[derive(Debug)]
pub struct Incoming {
    /// The channel.
    pub channel: Channel,
    /// Which of the channel's connections it came on.
    pub connection: ConnectionId,
    /// The connection's peer.
    pub peer: SocketAddr,
    /// Wall-clock time of arrival (MBAG orders observations by it).
    pub received: SystemTime,
    /// Monotonic time of arrival.
    pub at: Instant,
    /// A frame, or the end of the connection.
    pub event: ConnectionEvent,
}

/// A frame or a change of a connection's state.
#[derive(Debug)]
pub enum ConnectionEvent {
    /// An admitted peer connected.
    Connected,
    /// One whole frame's payload.
    Frame(Vec<u8>),
    /// The peer closed the connection (cleanly or not).
    Closed,
    /// The peer broke the framing; the connection was dropped (and a warning
    /// naming the peer logged).
    Malformed(String),
}

/// Bound listeners and the tasks serving them; dropping it stops them and every
/// connection they accepted.
#[derive(Debug)]
pub struct Listeners {
    ports: AgentPorts,
    tasks: Vec<JoinHandle<()>>,
}

impl Listeners {
    /// Binds the mission-control, observation and reward listeners (and video if
    /// asked) on `address` at free ports, admitting the peers `peers` admits and
    /// sending what arrives to `tx`.
    pub async fn bind(
        address: IpAddr,
        peers: PeerFilter,
        video: bool,
        tx: mpsc::Sender<Incoming>,
    ) -> Result<Self, AgentError> {
        let mut channels = vec![
            Channel::MissionControl,
            Channel::Observations,
            Channel::Rewards,
        ];
        if video {
            channels.push(Channel::Video);
        }
        let peers = Arc::new(peers);
        let mut ports = Vec::new();
        let mut tasks = Vec::new();
        for channel in channels {
            let listener =
                TcpListener::bind((address, 0))
                    .await
                    .map_err(|source| AgentError::Io {
                        what: format!("binding the {} listener on {address}", channel.name()),
                        source,
                    })?;
            let port = listener
                .local_addr()
                .map_err(|source| AgentError::Io {
                    what: format!("reading the {} listener's port", channel.name()),
                    source,
                })?
                .port();
            ports.push(port);
            tasks.push(tokio::spawn(serve(
                listener,
                channel,
                peers.clone(),
                tx.clone(),
            )));
        }
        Ok(Self {
            // Unused channels are port 0 in the MissionInit, as MalmoPython writes.
            ports: AgentPorts {
                mission_control: ports[0],
                observations: ports[1],
                rewards: ports[2],
                video: ports.get(3).copied().unwrap_or(0),
                depth: 0,
                luminance: 0,
                colour_map: 0,
            },
            tasks,
        })
    }

    /// The bound ports, as the MissionInit names them.
    pub fn ports(&self) -> AgentPorts {
        self.ports
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Accepts connections on one listener for as long as the mission lives; the mod
/// may reconnect, and each connection is read on its own task (owned by the
/// `JoinSet`, so aborting this task ends them too).
async fn serve(
    listener: TcpListener,
    channel: Channel,
    peers: Arc<PeerFilter>,
    tx: mpsc::Sender<Incoming>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut readers = JoinSet::new();
    let mut accepted = 0u64;
    let mut refused = 0u64;
    let mut refuse = |peer: SocketAddr, why: &str| {
        refused += 1;
        if refused <= LOGGED_REFUSALS || refused.is_multiple_of(1000) {
            log::warn!(
                "{}: refused a connection from {peer}: {why} ({refused} refused so far)",
                channel.name()
            );
        }
    };
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, for example: wait instead of spinning.
                log::debug!("{}: accept failed: {e}", channel.name());
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let admitted = stream
            .local_addr()
            .is_ok_and(|local| peers.admits(peer.ip(), local.ip()));
        if !admitted {
            refuse(peer, "not a Minecraft client of this mission");
            continue;
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refuse(peer, "too many open connections");
            continue;
        };
        while readers.try_join_next().is_some() {}
        accepted += 1;
        let connection = ConnectionId(accepted);
        log::debug!("{}: connection {accepted} from {peer}", channel.name());
        let sender = tx.clone();
        readers.spawn(async move {
            read_frames(stream, channel, connection, peer, sender).await;
            drop(slot);
        });
        if tx.is_closed() {
            break;
        }
    }
}

/// Reads one connection's frames until it closes or breaks the framing.
async fn read_frames(
    mut stream: TcpStream,
    channel: Channel,
    connection: ConnectionId,
    peer: SocketAddr,
    tx: mpsc::Sender<Incoming>,
) {
    let incoming = |event| Incoming {
        channel,
        connection,
        peer,
        received: SystemTime::now(),
        at: Instant::now(),
        event,
    };
    if tx.send(incoming(ConnectionEvent::Connected)).await.is_err() {
        return;
    }
    let mut decoder = FrameDecoder::new(channel.max_frame());
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match decoder.next_frame() {
            Ok(Some(frame)) => {
                // A full channel makes this wait, and so the mod's writes: bounded
                // memory, and the mod's own 30 s write timeout notices a stuck agent.
                if tx
                    .send(incoming(ConnectionEvent::Frame(frame)))
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                // The rest of the stream cannot be framed: this connection is
                // given up, the listener goes on.
                log::warn!(
                    "{}: dropped the connection from {peer}: {e}",
                    channel.name()
                );
                let _ = tx
                    .send(incoming(ConnectionEvent::Malformed(e.to_string())))
                    .await;
                return;
            }
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => {
                // The end of the stream inside a frame is a broken frame, not a
                // clean close: the frame's sender died or cut it short.
                let event = match decoder.buffered() {
                    0 => ConnectionEvent::Closed,
                    n => {
                        let detail = format!(
                            "the connection closed inside a frame ({n} bytes of it received)"
                        );
                        log::warn!("{}: from {peer}: {detail}", channel.name());
                        ConnectionEvent::Malformed(detail)
                    }
                };
                let _ = tx.send(incoming(event)).await;
                return;
            }
            Ok(n) => decoder.push(&buf[..n]),
        }
    }
}
