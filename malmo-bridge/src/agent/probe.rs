//! Asking a Minecraft client how it is, without starting anything: the answer to
//! "Minecraft is not responding".

use std::fmt;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::MALMO_VERSION;
use crate::control::{ControlReply, ControlRequest};

use super::client::{COMMANDS_PORT_OFFSET, ClientAddr, exchange};
use super::error::ContactError;

/// The experiment id probes use; no real mission has it.
const PROBE_EXPERIMENT: &str = "mbag-probe";

/// How long a probe's reservation lasts if it cannot be cancelled.
const PROBE_RESERVATION_MS: u64 = 1000;

/// What a probe found out about one client.
#[derive(Debug)]
pub struct ProbeReport {
    /// The client probed.
    pub client: ClientAddr,
    /// Whether it answers mission-control requests at all.
    pub liveness: Liveness,
    /// Whether it would take a mission now (`None` when not asked).
    pub availability: Option<Availability>,
    /// Whether its commands port accepts connections (it opens with the first
    /// mission and stays open).
    pub commands_port_open: bool,
    /// The mbag patch series of its mod (`MALMO_MBAG_VERSION`): `Some` for a
    /// patched mod, `None` for the stock one or a client that does not answer.
    pub mod_version: Option<String>,
}

/// Whether a client answers.
#[derive(Debug)]
pub enum Liveness {
    /// It answered `MALMO_FIND_SERVER` like a Malmo mod.
    Answers(ControlReply),
    /// Nothing accepts connections on the port.
    NotListening(std::io::Error),
    /// Something accepted the connection but gave no reply in time.
    Silent(Duration),
    /// Something accepted and closed without a reply: not a Malmo mod.
    ClosedWithoutReply,
    /// The reply broke the framing rules.
    Garbled(String),
}

/// Whether a client would accept a mission from mbag now.
#[derive(Debug, PartialEq, Eq)]
pub enum Availability {
    /// Idle and speaking our Malmo version (the probe's reservation was cancelled).
    Idle,
    /// Running a mission or reserved by another experiment.
    Busy,
    /// It speaks another Malmo version.
    VersionMismatch(String),
    /// It answered something else.
    Other(String),
}

impl ProbeReport {
    /// Whether mbag could start a mission on this client now.
    pub fn is_usable(&self) -> bool {
        matches!(self.liveness, Liveness::Answers(_))
            && matches!(self.availability, Some(Availability::Idle) | None)
    }

    /// What the user should do, if anything.
    pub fn advice(&self) -> Option<String> {
        let port = self.client.control_port;
        match &self.liveness {
            Liveness::NotListening(_) => Some(format!(
                "Start Minecraft with the MBAG Malmo mod listening on port {port} \
                 (e.g. `python -m malmo.minecraft launch --num_instances 2` from the \
                 mbag-malmo package, which uses ports 10000, 10001, ...), wait until its log \
                 shows `CLIENT enter state: DORMANT`, and check that nothing else uses the port."
            )),
            Liveness::Silent(after) => Some(format!(
                "Something holds port {port} but did not answer within {after:?}: Minecraft may \
                 still be loading, frozen or paused in a dialog. Wait for the main menu; if it \
                 stays silent, restart that Minecraft."
            )),
            Liveness::ClosedWithoutReply => Some(format!(
                "The program on port {port} is not a Malmo mod (it closed the connection \
                 without a reply). Point mbag at the Minecraft's mission-control port."
            )),
            Liveness::Garbled(detail) => Some(format!(
                "The program on port {port} answered outside the Malmo protocol ({detail}); \
                 it is not a Malmo 0.38 mod."
            )),
            Liveness::Answers(_) => match &self.availability {
                Some(Availability::Busy) => Some(
                    "The client is running a mission or reserved by another experiment: wait \
                     for it to end (reservations expire after 20 s) or restart it."
                        .to_owned(),
                ),
                Some(Availability::VersionMismatch(text)) => Some(format!(
                    "The mod speaks another Malmo version ({text}); mbag needs the MBAG fork \
                     {MALMO_VERSION} (pip package mbag-malmo==0.38.0.0)."
                )),
                Some(Availability::Other(text)) => {
                    Some(format!("Unexpected reply to a reservation: {text:?}."))
                }
                Some(Availability::Idle) | None => None,
            },
        }
    }
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.client)?;
        match &self.liveness {
            Liveness::Answers(reply) => write!(f, "a Malmo mod answers ({reply})")?,
            Liveness::NotListening(e) => write!(f, "nothing listening ({e})")?,
            Liveness::Silent(after) => write!(f, "connected, but no reply within {after:?}")?,
            Liveness::ClosedWithoutReply => f.write_str("closed the connection without a reply")?,
            Liveness::Garbled(detail) => write!(f, "garbled reply ({detail})")?,
        }
        match &self.availability {
            Some(Availability::Idle) => f.write_str("; idle, version ok")?,
            Some(Availability::Busy) => f.write_str("; busy")?,
            Some(Availability::VersionMismatch(_)) => f.write_str("; wrong Malmo version")?,
            Some(Availability::Other(text)) => write!(f, "; reservation answered {text:?}")?,
            None => {}
        }
        if matches!(self.liveness, Liveness::Answers(_)) {
            match &self.mod_version {
                Some(version) => write!(f, "; mbag-patched mod {version}")?,
                None => f.write_str("; stock mod (no mbag patches)")?,
            }
            let commands = self
                .client
                .control_port
                .saturating_add(COMMANDS_PORT_OFFSET);
            if self.commands_port_open {
                write!(f, "; commands port {commands} open")?;
            } else {
                write!(
                    f,
                    "; commands port {commands} not open yet (it opens with the first mission)"
                )?;
            }
        }
        Ok(())
    }
}

/// Probes one client: a `MALMO_FIND_SERVER` for a made-up experiment (harmless),
/// then, if `reserve` is set and it answered, a one-second reservation that is
/// cancelled at once, to learn whether it is idle and speaks our version.
pub async fn probe(client: &ClientAddr, deadline: Duration, reserve: bool) -> ProbeReport {
    let find = ControlRequest::FindServer {
        experiment_id: PROBE_EXPERIMENT.to_owned(),
    };
    let liveness = match exchange(client, &find, deadline).await {
        Ok(reply) => Liveness::Answers(reply),
        Err(ContactError::Connect(e)) => Liveness::NotListening(e),
        Err(ContactError::Timeout(after)) => Liveness::Silent(after),
        Err(ContactError::NoReply) => Liveness::ClosedWithoutReply,
        Err(e @ (ContactError::Io(_) | ContactError::Framing(_))) => {
            Liveness::Garbled(e.to_string())
        }
    };
    let alive = matches!(liveness, Liveness::Answers(_));
    let availability = if alive && reserve {
        Some(check_availability(client, deadline).await)
    } else {
        None
    };
    let commands_port_open = alive && commands_port_accepts(client, deadline).await;
    let mod_version = if alive {
        query_mod_version(client, deadline).await.ok().flatten()
    } else {
        None
    };
    ProbeReport {
        client: client.clone(),
        liveness,
        availability,
        commands_port_open,
        mod_version,
    }
}

/// Asks a client which mbag patch series its mod carries (`MALMO_MBAG_VERSION`,
/// `mod-patch/` 0001): `Some(version)` from a patched mod, `None` from the stock
/// mod, which closes the connection without a reply. Harmless at any time: it
/// reserves and starts nothing. Errors are those of the contact itself.
pub async fn query_mod_version(
    client: &ClientAddr,
    deadline: Duration,
) -> Result<Option<String>, ContactError> {
    match exchange(client, &ControlRequest::MbagVersion, deadline).await {
        Ok(ControlReply::MbagVersion(version)) => Ok(Some(version)),
        // A mod that answers something else does not know the request either.
        Ok(_) | Err(ContactError::NoReply) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn check_availability(client: &ClientAddr, deadline: Duration) -> Availability {
    let reserve = ControlRequest::RequestClient {
        version: MALMO_VERSION.to_owned(),
        reservation_ms: PROBE_RESERVATION_MS,
        experiment_id: PROBE_EXPERIMENT.to_owned(),
    };
    match exchange(client, &reserve, deadline).await {
        Ok(ControlReply::Ok) => {
            if let Err(e) = exchange(client, &ControlRequest::CancelRequest, deadline).await {
                log::warn!("{client}: cancelling the probe's reservation: {e} (it expires in 1 s)");
            }
            Availability::Idle
        }
        Ok(ControlReply::Busy) => Availability::Busy,
        Ok(reply) if reply.is_version_mismatch() => {
            Availability::VersionMismatch(reply.to_string())
        }
        Ok(reply) => Availability::Other(reply.to_string()),
        Err(e) => Availability::Other(e.to_string()),
    }
}

async fn commands_port_accepts(client: &ClientAddr, deadline: Duration) -> bool {
    let Some(port) = client.control_port.checked_add(COMMANDS_PORT_OFFSET) else {
        return false;
    };
    // Connecting and closing at once sends the mod nothing to execute.
    matches!(
        tokio::time::timeout(deadline, TcpStream::connect((client.host.as_str(), port))).await,
        Ok(Ok(_))
    )
}
