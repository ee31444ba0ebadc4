//! The client mission-control exchange: one request line from the agent, one
//! length-prefixed reply from the mod, per connection (PROTOCOL.md §3).

use std::fmt;
use std::str::FromStr;

/// A request an agent sends to a Minecraft client's mission-control port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlRequest {
    /// `MALMO_REQUEST_CLIENT:<version>:<ms>:<experiment id>`: reserve the client.
    RequestClient {
        /// Malmo version, e.g. `0.38.0`.
        version: String,
        /// How long the reservation holds, in milliseconds (MalmoPython: 20000).
        reservation_ms: u64,
        /// The experiment id.
        experiment_id: String,
    },
    /// `MALMO_CANCEL_REQUEST`: drop this client's reservation.
    CancelRequest,
    /// `MALMO_FIND_SERVER<experiment id>` (no separator): where is role 0's server?
    FindServer {
        /// The experiment id.
        experiment_id: String,
    },
    /// `MALMO_KILL_CLIENT`: ask a replaceable idle client to exit.
    KillClient,
    /// A MissionInit document on one line: start a mission.
    MissionInit(String),
    /// `MALMO_MBAG_VERSION`: which mbag patch series the mod carries (only a
    /// patched mod answers; the stock mod closes without a reply).
    MbagVersion,
}

/// A control line that is no request the mod knows (the mod closes the socket
/// without a reply).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a mission-control request: {0:?}")]
pub struct UnknownRequest(pub String);

impl fmt::Display for ControlRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RequestClient {
                version,
                reservation_ms,
                experiment_id,
            } => write!(
                f,
                "MALMO_REQUEST_CLIENT:{version}:{reservation_ms}:{experiment_id}"
            ),
            Self::CancelRequest => f.write_str("MALMO_CANCEL_REQUEST"),
            Self::FindServer { experiment_id } => write!(f, "MALMO_FIND_SERVER{experiment_id}"),
            Self::KillClient => f.write_str("MALMO_KILL_CLIENT"),
            Self::MissionInit(xml) => f.write_str(xml),
            Self::MbagVersion => f.write_str("MALMO_MBAG_VERSION"),
        }
    }
}

impl FromStr for ControlRequest {
    type Err = UnknownRequest;

    /// Parses a request line (without its `\n`).
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownRequest(line.to_owned());
        if let Some(rest) = line.strip_prefix("MALMO_REQUEST_CLIENT:") {
            let mut parts = rest.splitn(3, ':');
            let (Some(version), Some(ms), Some(id)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(unknown());
            };
            return Ok(Self::RequestClient {
                version: version.to_owned(),
                reservation_ms: ms.parse().map_err(|_| unknown())?,
                experiment_id: id.to_owned(),
            });
        }
        if let Some(id) = line.strip_prefix("MALMO_FIND_SERVER") {
            return Ok(Self::FindServer {
                experiment_id: id.to_owned(),
            });
        }
        match line {
            "MALMO_CANCEL_REQUEST" => Ok(Self::CancelRequest),
            "MALMO_KILL_CLIENT" => Ok(Self::KillClient),
            "MALMO_MBAG_VERSION" => Ok(Self::MbagVersion),
            // The mod accepts XML rooted at MissionInit; anything else gets no reply.
            _ if line.trim_start().starts_with('<') && line.contains("<MissionInit") => {
                Ok(Self::MissionInit(line.to_owned()))
            }
            _ => Err(unknown()),
        }
    }
}

/// The mod's reply to a control request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlReply {
    /// `MALMOOK`.
    Ok,
    /// `MALMOBUSY`: running a mission or reserved by another experiment.
    Busy,
    /// `MALMOS<address>:<port>`: role 0's server, for `MALMO_FIND_SERVER`.
    Server {
        /// Address of role 0's client.
        address: String,
        /// The LAN server port.
        port: u16,
    },
    /// `MALMONOSERVERYET`: the mission is known but its world is not open yet.
    NoServerYet,
    /// `MALMONOSERVER`: no mission with this experiment id.
    NoServer,
    /// `MALMOERROR<message>` (version mismatches start with `VERSIONMISMATCH`).
    Error(String),
    /// `MALMOMBAGVERSION:<version>`: a patched mod's answer to
    /// `MALMO_MBAG_VERSION` (e.g. `0.38.0+mbag.1`).
    MbagVersion(String),
    /// Anything else (MalmoPython treats it as a failed contact).
    Unknown(String),
}

impl ControlReply {
    /// Whether this is a `MALMOERRORVERSIONMISMATCH…` reply.
    pub fn is_version_mismatch(&self) -> bool {
        matches!(self, Self::Error(m) if m.starts_with("VERSIONMISMATCH"))
    }

    /// Parses a reply frame's payload (ASCII in practice; other bytes are kept as
    /// replacement characters).
    pub fn parse(payload: &[u8]) -> Self {
        let text = String::from_utf8_lossy(payload);
        match text.as_ref() {
            "MALMOOK" => Self::Ok,
            "MALMOBUSY" => Self::Busy,
            "MALMONOSERVERYET" => Self::NoServerYet,
            "MALMONOSERVER" => Self::NoServer,
            _ => {
                if let Some(version) = text.strip_prefix("MALMOMBAGVERSION:") {
                    return Self::MbagVersion(version.to_owned());
                }
                if let Some(message) = text.strip_prefix("MALMOERROR") {
                    return Self::Error(message.to_owned());
                }
                if let Some(server) = text.strip_prefix("MALMOS")
                    && let Some((address, port)) = server.rsplit_once(':')
                    && let Ok(port) = port.parse()
                {
                    return Self::Server {
                        address: address.to_owned(),
                        port,
                    };
                }
                Self::Unknown(text.into_owned())
            }
        }
    }
}

impl fmt::Display for ControlReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ok => f.write_str("MALMOOK"),
            Self::Busy => f.write_str("MALMOBUSY"),
            Self::Server { address, port } => write!(f, "MALMOS{address}:{port}"),
            Self::NoServerYet => f.write_str("MALMONOSERVERYET"),
            Self::NoServer => f.write_str("MALMONOSERVER"),
            Self::Error(message) => write!(f, "MALMOERROR{message}"),
            Self::MbagVersion(version) => write!(f, "MALMOMBAGVERSION:{version}"),
            Self::Unknown(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for line in [
            "MALMO_REQUEST_CLIENT:0.38.0:20000:5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11",
            "MALMO_CANCEL_REQUEST",
            "MALMO_FIND_SERVER5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11",
            "MALMO_KILL_CLIENT",
            "MALMO_MBAG_VERSION",
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><MissionInit SchemaVersion=\"\"/>",
        ] {
            let request: ControlRequest = line.parse().unwrap();
            assert_eq!(request.to_string(), line);
        }
        assert!("HELLO".parse::<ControlRequest>().is_err());
        assert!(
            "MALMO_REQUEST_CLIENT:0.38.0:soon:x"
                .parse::<ControlRequest>()
                .is_err()
        );
    }

    #[test]
    fn replies_parse_with_server_addresses_and_errors() {
        assert_eq!(ControlReply::parse(b"MALMOOK"), ControlReply::Ok);
        assert_eq!(
            ControlReply::parse(b"MALMOS127.0.0.1:25565"),
            ControlReply::Server {
                address: "127.0.0.1".into(),
                port: 25565
            }
        );
        assert_eq!(
            ControlReply::parse(b"MALMONOSERVER"),
            ControlReply::NoServer
        );
        assert_eq!(
            ControlReply::parse(b"MALMONOSERVERYET"),
            ControlReply::NoServerYet
        );
        let mismatch =
            ControlReply::parse(b"MALMOERRORVERSIONMISMATCH (Got 0.37.0, expected 0.38.0)");
        assert!(mismatch.is_version_mismatch());
        let version = ControlReply::parse(b"MALMOMBAGVERSION:0.38.0+mbag.1");
        assert_eq!(version, ControlReply::MbagVersion("0.38.0+mbag.1".into()));
        assert_eq!(version.to_string(), "MALMOMBAGVERSION:0.38.0+mbag.1");
        assert!(matches!(
            ControlReply::parse(b"HELLO"),
            ControlReply::Unknown(_)
        ));
    }
}
