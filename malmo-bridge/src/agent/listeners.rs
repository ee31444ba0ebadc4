//! The agent's listeners: the mod connects to them and sends length-prefixed
//! frames (mission control, observations, rewards, video). Every frame is stamped
//! when it arrives and handed to the mission over one bounded channel.

use std::time::{Instant, SystemTime};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::frame::FrameDecoder;
use crate::mission_init::AgentPorts;

use super::error::AgentError;

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

/// What arrived on a listener.
#[derive(Debug)]
pub struct Incoming {
    /// The channel.
    pub channel: Channel,
    /// Wall-clock time of arrival (MBAG orders observations by it).
    pub received: SystemTime,
    /// Monotonic time of arrival.
    pub at: Instant,
    /// A frame, or the end of the mod's connection.
    pub event: ConnectionEvent,
}

/// A frame or a change of a connection's state.
#[derive(Debug)]
pub enum ConnectionEvent {
    /// The mod connected.
    Connected,
    /// One whole frame's payload.
    Frame(Vec<u8>),
    /// The mod closed the connection (cleanly or not).
    Closed,
    /// The mod broke the framing; the connection was dropped.
    Malformed(String),
}

/// Bound listeners and the tasks serving them; dropping it stops them.
#[derive(Debug)]
pub struct Listeners {
    ports: AgentPorts,
    tasks: Vec<JoinHandle<()>>,
}

impl Listeners {
    /// Binds the mission-control, observation and reward listeners (and video if
    /// asked) on every IPv4 interface at free ports, sending what arrives to `tx`.
    pub async fn bind(video: bool, tx: mpsc::Sender<Incoming>) -> Result<Self, AgentError> {
        let mut channels = vec![
            Channel::MissionControl,
            Channel::Observations,
            Channel::Rewards,
        ];
        if video {
            channels.push(Channel::Video);
        }
        let mut ports = Vec::new();
        let mut tasks = Vec::new();
        for channel in channels {
            let listener =
                TcpListener::bind(("0.0.0.0", 0))
                    .await
                    .map_err(|source| AgentError::Io {
                        what: format!("binding the {} listener", channel.name()),
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
            tasks.push(tokio::spawn(serve(listener, channel, tx.clone())));
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
/// may reconnect, and each connection is read on its own task.
async fn serve(listener: TcpListener, channel: Channel, tx: mpsc::Sender<Incoming>) {
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        log::debug!("{}: the mod connected from {peer}", channel.name());
        readers.retain(|r| !r.is_finished());
        readers.push(tokio::spawn(read_frames(stream, channel, tx.clone())));
        if tx.is_closed() {
            break;
        }
    }
    for r in readers {
        r.abort();
    }
}

fn incoming(channel: Channel, event: ConnectionEvent) -> Incoming {
    Incoming {
        channel,
        received: SystemTime::now(),
        at: Instant::now(),
        event,
    }
}

async fn read_frames(mut stream: TcpStream, channel: Channel, tx: mpsc::Sender<Incoming>) {
    if tx
        .send(incoming(channel, ConnectionEvent::Connected))
        .await
        .is_err()
    {
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
                    .send(incoming(channel, ConnectionEvent::Frame(frame)))
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                let _ = tx
                    .send(incoming(channel, ConnectionEvent::Malformed(e.to_string())))
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
                    n => ConnectionEvent::Malformed(format!(
                        "the connection closed inside a frame ({n} bytes of it received)"
                    )),
                };
                let _ = tx.send(incoming(channel, event)).await;
                return;
            }
            Ok(n) => decoder.push(&buf[..n]),
        }
    }
}
