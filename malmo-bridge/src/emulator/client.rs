//! One emulated client's mission-control port (PROTOCOL.md §3.3): one request
//! line per connection, one length-prefixed ASCII reply, then the client closes
//! the connection. A line that is no request gets no reply.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::agent::ClientAddr;
use crate::control::{ControlReply, ControlRequest};
use crate::frame::{FrameError, LineDecoder, encode_frame};
use crate::mission_init::{MissionInit, ServerConnection};
use crate::mod_patch::{ModFlavour, PATCHED_MOD_VERSION};

use super::fault_schedule::MissionClock;
use super::faults::Faults;
use super::transcript::{TranscriptChannel, TranscriptEntry};
use super::{EmulatorError, Shared, mod_version, session};

/// The longest control line the mod reads.
const MAX_LINE: usize = 10_000_000;

/// How long a control connection may take to send its line.
const READ_DEADLINE: Duration = Duration::from_secs(30);

/// What the text after a version mismatch says.
const VERSION_ADVICE: &str =
    "check your path for old versions of MalmoPython/MalmoJava/Malmo.lib etc";

/// Where a client stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientStatus {
    /// Idle (DORMANT), perhaps reserved.
    Dormant {
        /// The experiment it is reserved for, if the reservation holds.
        reserved_for: Option<String>,
    },
    /// Running (or starting) a mission.
    InMission {
        /// The mission's experiment id.
        experiment_id: String,
        /// The role it plays.
        role: u32,
    },
}

#[derive(Debug, Default)]
pub(crate) struct ClientState {
    reservation: Option<(String, Instant)>,
    pub mission: Option<MissionInit>,
    /// Role 0's server, once its world is open to LAN (or the one a role > 0
    /// was told about).
    pub server: Option<ServerConnection>,
}

impl ClientState {
    fn reserved(&self) -> Option<&str> {
        match &self.reservation {
            Some((id, until)) if Instant::now() < *until => Some(id),
            _ => None,
        }
    }
}

/// What the tasks of one client share.
#[derive(Debug)]
pub(crate) struct Client {
    pub index: usize,
    pub control_port: u16,
    pub commands_port: u16,
    pub host: std::net::IpAddr,
    pub faults: Faults,
    /// Where its missions stand, for scheduled faults.
    pub clock: watch::Sender<MissionClock>,
    state: Mutex<ClientState>,
    /// The commands port, bound for the client's lifetime; each mission accepts
    /// its agent's connection from it.
    pub commands: TcpListener,
    /// Signalled when `MALMO_KILL_CLIENT` succeeded.
    killed: tokio::sync::Notify,
}

impl Client {
    pub(crate) fn state(&self) -> MutexGuard<'_, ClientState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Back to DORMANT, as at the end of every mission.
    pub(crate) fn set_dormant(&self) {
        let mut state = self.state();
        state.mission = None;
        state.server = None;
    }
}

/// A handle on one emulated client.
#[derive(Clone, Debug)]
pub struct ClientHandle {
    client: Arc<Client>,
}

impl ClientHandle {
    /// Its index in the pool.
    pub fn index(&self) -> usize {
        self.client.index
    }

    /// Its mission-control port.
    pub fn control_port(&self) -> u16 {
        self.client.control_port
    }

    /// Its commands port.
    pub fn commands_port(&self) -> u16 {
        self.client.commands_port
    }

    /// Its address, as a pool entry.
    pub fn addr(&self) -> ClientAddr {
        ClientAddr::new(self.client.host.to_string(), self.client.control_port)
    }

    /// Its fault hooks.
    pub fn faults(&self) -> &Faults {
        &self.client.faults
    }

    pub(crate) fn shared_client(&self) -> &Arc<Client> {
        &self.client
    }

    /// The agent's listener ports named by the MissionInit of the mission it
    /// runs (`None` while dormant): where a test plays a stranger to the agent.
    pub fn agent_ports(&self) -> Option<crate::mission_init::AgentPorts> {
        let state = self.client.state();
        state
            .mission
            .as_ref()
            .map(|init| init.connection.agent_ports)
    }

    /// Where it stands.
    pub fn status(&self) -> ClientStatus {
        let state = self.client.state();
        match &state.mission {
            Some(init) => ClientStatus::InMission {
                experiment_id: init.experiment_id.to_string(),
                role: init.role.0,
            },
            None => ClientStatus::Dormant {
                reserved_for: state.reserved().map(str::to_owned),
            },
        }
    }
}

/// Starts serving a client's control port.
pub(crate) fn start(
    index: usize,
    control: TcpListener,
    commands: TcpListener,
    shared: &Arc<Shared>,
) -> Result<ClientHandle, EmulatorError> {
    let port = |l: &TcpListener| {
        l.local_addr()
            .map(|a| a.port())
            .map_err(|source| EmulatorError::Bind {
                client: index,
                host: shared.config.host,
                port: 0,
                source,
            })
    };
    let client = Arc::new(Client {
        index,
        control_port: port(&control)?,
        commands_port: port(&commands)?,
        host: shared.config.host,
        faults: Faults::default(),
        clock: watch::Sender::new(MissionClock::default()),
        state: Mutex::new(ClientState::default()),
        commands,
        killed: tokio::sync::Notify::new(),
    });
    shared
        .tasks
        .spawn(serve(control, Arc::clone(&client), Arc::clone(shared)));
    Ok(ClientHandle { client })
}

/// Accepts control connections until shutdown (or `MALMO_KILL_CLIENT`).
async fn serve(listener: TcpListener, client: Arc<Client>, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => return,
            () = client.killed.notified() => {
                log::info!("client {}: killed by MALMO_KILL_CLIENT", client.index);
                return;
            }
        };
        let Ok((stream, peer)) = accepted else {
            continue;
        };
        let (client, shared2) = (Arc::clone(&client), Arc::clone(&shared));
        shared.tasks.spawn(async move {
            if exchange(stream, peer, &client, &shared2).await {
                client.killed.notify_one();
            }
        });
    }
}

/// Serves one control connection; true if the client was killed.
async fn exchange(
    mut stream: TcpStream,
    peer: SocketAddr,
    client: &Arc<Client>,
    shared: &Arc<Shared>,
) -> bool {
    let line = match read_line(&mut stream).await {
        Ok(Some(line)) => line,
        Ok(None) => return false,
        Err(FrameError::LineTooLong { .. }) => {
            write_reply(
                &mut stream,
                "MALMOERROR Input too long",
                shared.config.one_byte_replies,
            )
            .await;
            return false;
        }
        Err(_) => return false,
    };
    let text = String::from_utf8_lossy(&line).into_owned();
    let record = |reply: Option<String>| {
        if let Some(transcript) = &shared.config.transcript {
            transcript.record(TranscriptEntry {
                client: client.index,
                channel: TranscriptChannel::Control,
                received: text.clone(),
                reply,
            });
        }
    };
    let request = match text.parse::<ControlRequest>() {
        Ok(request) => request,
        Err(e) => {
            // The mod closes the socket without a reply.
            log::info!("client {}: {e}; closing without a reply", client.index);
            record(None);
            return false;
        }
    };
    if request == ControlRequest::MbagVersion && shared.config.mod_flavour == ModFlavour::Stock {
        // The stock mod does not know the request: no reply, like any unknown line.
        log::info!(
            "client {}: {request} (stock mod); closing without a reply",
            client.index
        );
        record(None);
        return false;
    }
    let (reply, start) = decide(client, shared, &request);
    // Recorded before the reply leaves, so an agent that has its reply finds
    // the exchange in the transcript.
    record(Some(reply.to_string()));
    log::info!(
        "client {}: {} -> {}",
        client.index,
        describe(&request),
        reply
    );
    write_reply(
        &mut stream,
        &reply.to_string(),
        shared.config.one_byte_replies,
    )
    .await;
    drop(stream);
    if let Some(init) = start {
        session::spawn(Arc::clone(client), Arc::clone(shared), init, peer.ip());
    }
    matches!(request, ControlRequest::KillClient) && reply == ControlReply::Ok
}

fn describe(request: &ControlRequest) -> String {
    match request {
        ControlRequest::MissionInit(_) => "MissionInit".into(),
        other => other.to_string(),
    }
}

/// Reads the request line; `None` if the peer closed or timed out first.
async fn read_line(stream: &mut TcpStream) -> Result<Option<Vec<u8>>, FrameError> {
    let mut decoder = LineDecoder::new(MAX_LINE);
    let mut buf = vec![0u8; 64 << 10];
    let work = async {
        loop {
            if let Some(line) = decoder.next_line()? {
                return Ok(Some(line));
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(n) => decoder.push(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(READ_DEADLINE, work)
        .await
        .unwrap_or(Ok(None))
}

/// Writes a reply frame: the header and the body as separate writes, and one
/// byte per write if asked, as the mod's `DataOutputStream.writeBytes` does.
async fn write_reply(stream: &mut TcpStream, reply: &str, one_byte: bool) {
    let mut frame = Vec::with_capacity(reply.len() + 4);
    if encode_frame(reply.as_bytes(), &mut frame).is_err() {
        return;
    }
    let _ = stream.set_nodelay(true);
    let result = if one_byte {
        let mut result = Ok(());
        for byte in &frame {
            result = stream.write_all(std::slice::from_ref(byte)).await;
            if result.is_err() {
                break;
            }
        }
        result
    } else {
        stream
            .write_all(&frame[..4])
            .await
            .and(stream.write_all(&frame[4..]).await)
    };
    if let Err(e) = result {
        log::debug!("writing a control reply: {e}");
    }
}

/// The reply to a request, and the MissionInit to start if it was accepted.
fn decide(
    client: &Client,
    shared: &Shared,
    request: &ControlRequest,
) -> (ControlReply, Option<MissionInit>) {
    let version = mod_version(&client.faults);
    let mut state = client.state();
    let dormant = state.mission.is_none();
    match request {
        ControlRequest::RequestClient {
            version: theirs,
            reservation_ms,
            experiment_id,
        } => {
            if *theirs != version {
                return (
                    ControlReply::Error(format!(
                        "VERSIONMISMATCH in reservation string (Got {request}, expected MALMO_REQUEST_CLIENT:{version}: - {VERSION_ADVICE})"
                    )),
                    None,
                );
            }
            if dormant && state.reserved().is_none() {
                let until = Instant::now() + Duration::from_millis(*reservation_ms);
                state.reservation = Some((experiment_id.clone(), until));
                (ControlReply::Ok, None)
            } else {
                (ControlReply::Busy, None)
            }
        }
        ControlRequest::CancelRequest => {
            if state.reserved().is_some() {
                state.reservation = None;
                (ControlReply::Ok, None)
            } else {
                (
                    ControlReply::Error(
                        "Attempt to cancel a reservation that was never made.".into(),
                    ),
                    None,
                )
            }
        }
        ControlRequest::FindServer { experiment_id } => {
            let reply = match (&state.mission, &state.server) {
                (Some(init), Some(server)) if init.experiment_id.as_str() == experiment_id => {
                    ControlReply::Server {
                        address: server.address.clone(),
                        port: server.port,
                    }
                }
                (Some(init), None) if init.experiment_id.as_str() == experiment_id => {
                    ControlReply::NoServerYet
                }
                _ => ControlReply::NoServer,
            };
            (reply, None)
        }
        ControlRequest::MbagVersion => {
            (ControlReply::MbagVersion(PATCHED_MOD_VERSION.into()), None)
        }
        ControlRequest::KillClient => {
            let reply = if !dormant {
                ControlReply::Busy
            } else if state.reserved().is_none() && shared.config.replaceable {
                ControlReply::Ok
            } else {
                ControlReply::Error("NOTKILLABLE".into())
            };
            (reply, None)
        }
        ControlRequest::MissionInit(xml) => {
            let init = match MissionInit::parse(xml) {
                Ok(init) => init,
                Err(e) => return (ControlReply::Error(e.to_string()), None),
            };
            if init.platform_version != version {
                return (
                    ControlReply::Error(format!(
                        "VERSIONMISMATCH (Got {}, expected {version} - {VERSION_ADVICE})",
                        init.platform_version
                    )),
                    None,
                );
            }
            let free = match state.reserved() {
                None => true,
                Some(id) => id == init.experiment_id.as_str(),
            };
            if !(dormant && free) {
                return (ControlReply::Busy, None);
            }
            state.reservation = None;
            state.mission = Some(init.clone());
            // A role > 0 knows role 0's server from its MissionInit.
            state.server = init.server.clone();
            (ControlReply::Ok, Some(init))
        }
    }
}
