//! What can go wrong on the agent side, each with enough detail to act on.

use std::fmt;
use std::time::Duration;

use crate::control::ControlReply;
use crate::frame::FrameError;
use crate::mission_ended::MissionEndedStatus;

use super::client::ClientAddr;

/// Why one request/reply exchange with a client's mission-control port failed.
#[derive(Debug, thiserror::Error)]
pub enum ContactError {
    /// Nothing accepted the connection (Minecraft not running, or another port).
    #[error("cannot connect: {0}")]
    Connect(#[source] std::io::Error),
    /// The connection broke while writing or reading.
    #[error("connection failed: {0}")]
    Io(#[source] std::io::Error),
    /// The deadline passed (a hung or overloaded Minecraft).
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// The client closed the connection without replying (the mod does this for
    /// requests it does not understand).
    #[error("the client closed the connection without a reply")]
    NoReply,
    /// The reply broke the framing rules (for example a length over 1024 bytes).
    #[error("malformed reply: {0}")]
    Framing(#[from] FrameError),
}

/// What one client answered (or why it did not) while a mission was being set up.
#[derive(Debug)]
pub struct Attempt {
    /// The client asked.
    pub client: ClientAddr,
    /// Its reply, or why there was none.
    pub outcome: Result<ControlReply, ContactError>,
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Ok(reply) => write!(f, "{}: replied {reply}", self.client),
            Err(e) => write!(f, "{}: {e}", self.client),
        }
    }
}

/// A list of attempts, shown one per line.
#[derive(Debug, Default)]
pub struct Attempts(pub Vec<Attempt>);

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for a in &self.0 {
            write!(f, "\n  {a}")?;
        }
        Ok(())
    }
}

impl Attempts {
    /// Whether any client answered with a version mismatch.
    pub fn any_version_mismatch(&self) -> bool {
        self.0
            .iter()
            .any(|a| matches!(&a.outcome, Ok(r) if r.is_version_mismatch()))
    }
}

/// An agent-side failure. Unlike MalmoPython, every variant keeps what the clients
/// said, so that the cause is never lost.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Fewer clients accepted than the mission needs (MalmoPython's
    /// `MISSION_INSUFFICIENT_CLIENTS_AVAILABLE`).
    #[error(
        "{stage}: {accepted} of the {needed} clients needed accepted ({hint}); what each said:{attempts}"
    )]
    InsufficientClients {
        /// Reserving clients (role 0) or handing over the MissionInit.
        stage: Stage,
        /// How many accepted.
        accepted: usize,
        /// How many were needed.
        needed: usize,
        /// What to try, derived from the replies.
        hint: &'static str,
        /// Every client asked, with its reply.
        attempts: Attempts,
    },
    /// No client knows a server for this experiment: role 0 has not started it
    /// (`MISSION_SERVER_NOT_FOUND`).
    #[error("no client hosts the mission's server (start role 0 first); what each said:{attempts}")]
    ServerNotFound {
        /// Every client asked, with its reply.
        attempts: Attempts,
    },
    /// Role 0's world is still being created (`MISSION_SERVER_WARMING_UP`); retry.
    #[error("role 0's world is still being created (MALMONOSERVERYET); retry shortly")]
    ServerWarmingUp,
    /// A wait ran past its deadline.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The deadline.
        after: Duration,
    },
    /// A local socket could not be set up (binding a listener).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The mission ended with a status other than ENDED or PLAYER_DIED.
    #[error("the mission ended abnormally: {status} {text:?}")]
    MissionEndedAbnormally {
        /// The MissionEnded status.
        status: MissionEndedStatus,
        /// Its human-readable text.
        text: String,
    },
    /// The client stopped answering during the mission (Minecraft died, hung or
    /// lost the network): MalmoPython never notices this.
    #[error("lost the Minecraft client of role {role}: {reason}")]
    ClientLost {
        /// The role whose client was lost.
        role: usize,
        /// What was observed.
        reason: String,
    },
    /// A command was sent to a mission that has not begun or has ended.
    #[error("role {role}: cannot send commands, the mission is {state}")]
    NotRunning {
        /// The role.
        role: usize,
        /// Where the mission stands (`starting` or `over`).
        state: &'static str,
    },
    /// The client sent something that breaks the protocol.
    #[error("protocol violation on {channel}: {detail}")]
    Protocol {
        /// The channel.
        channel: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// Which step of starting a mission failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Role 0 reserving one client per role.
    Reservation,
    /// Handing the MissionInit to a client.
    MissionInit,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Reservation => "reserving clients",
            Self::MissionInit => "sending the MissionInit",
        })
    }
}

/// The advice for a failed reservation or MissionInit, from what clients said.
pub(crate) fn hint_for(attempts: &Attempts) -> &'static str {
    let replies = || attempts.0.iter().filter_map(|a| a.outcome.as_ref().ok());
    if attempts.any_version_mismatch() {
        "a client speaks another Malmo version; mbag needs the MBAG mod 0.38.0"
    } else if replies().any(|r| matches!(r, ControlReply::Error(_))) {
        "a client rejected the request; see its error message"
    } else if replies().any(|r| *r == ControlReply::Busy) {
        "clients are busy with another mission or reserved; wait 20 s or restart them"
    } else if attempts
        .0
        .iter()
        .all(|a| matches!(a.outcome, Err(ContactError::Connect(_))))
    {
        "nothing is listening: is Minecraft running with the Malmo mod on these ports?"
    } else {
        "clients did not answer properly; check that Minecraft is running and responsive"
    }
}
