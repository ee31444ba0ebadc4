//! The MissionInit document (PROTOCOL.md §3.2): the mission plus who plays which
//! role on which ports. The agent sends it, as one line, to a client's
//! mission-control port; the mod echoes it back on the agent's mission-control
//! port, re-serialised by JAXB with the fields it filled in, as the start signal.
//!
//! [`MissionInit::render`] writes two forms:
//!
//! * [`MissionInitForm::AgentHost`], the real MalmoPython AgentHost's bytes. It
//!   re-serialises the mission through boost's property tree and deletes every
//!   `\n`, which leaves three quirks, all reproduced: each element's whitespace
//!   text (the reference's indentation) is written, concatenated, right after its
//!   start tag, so long runs of spaces stand between elements; the mission's root
//!   attributes (`xmlns`) are dropped; and `MinecraftServerConnection` is written
//!   with a leading space in both values (`address=" 127.0.0.1" port=" 60393"`).
//!   The mod's JDK validator accepts that space; xmllint does not.
//! * [`MissionInitForm::Compact`], the recommended form: the same document with no
//!   whitespace between elements and no leading spaces. It validates with xmllint.
//!
//! [`MissionInit::parse`] reads both, and the mod's JAXB echo, which orders
//! attributes differently, moves `xmlns` last and writes no whitespace.

use std::fmt;

use crate::MALMO_VERSION;
use crate::mission::{MissionDocument, MissionError, Role};
use crate::xml::{Element, Node, ReadError};

/// The declaration boost writes (lower-case `utf-8`).
const BOOST_DECLARATION: &str = r#"<?xml version="1.0" encoding="utf-8"?>"#;

/// The declaration the mod's JAXB marshaller writes.
const JAXB_DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;
/// Malmo's XML namespace.
pub(crate) const MALMO_NAMESPACE: &str = "http://ProjectMalmo.microsoft.com";

/// The XML Schema instance namespace, declared by the AgentHost.
const XSI_NAMESPACE: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Which bytes [`MissionInit::render`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissionInitForm {
    /// Exactly what MalmoPython's AgentHost sends, quirks included (see the module
    /// docs); the `*.sent_by_agenthost.xml` examples.
    AgentHost,
    /// The recommended form, valid for xmllint: no whitespace between elements
    /// and no leading spaces (`missioninit_2p.role1.recommended.xml`).
    Compact,
    /// The mod's echo as its JAXB classes write it: the standalone declaration,
    /// root attributes `SchemaVersion`, `PlatformVersion`, `xmlns` in that order,
    /// no `xmlns:xsi` and no whitespace between elements
    /// (`missioninit_1p.role0.returned_by_mod_jaxb.xml`). Attributes inside the
    /// mission keep the reference's order, where JAXB may order some differently.
    ModEcho,
}

/// An experiment id: any non-empty text without whitespace or control characters,
/// since it travels inside control lines (`MALMO_FIND_SERVER<id>`). MBAG uses a
/// fresh UUID per episode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExperimentId(String);

/// A string that cannot be an [`ExperimentId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad experiment id {0:?}: needs 1 or more characters, none of them whitespace or control")]
pub struct BadExperimentId(pub String);

impl ExperimentId {
    /// An id, checked.
    pub fn new(id: &str) -> Result<Self, BadExperimentId> {
        if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(BadExperimentId(id.to_owned()));
        }
        Ok(Self(id.to_owned()))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where role 0's Minecraft server listens (`MinecraftServerConnection`): sent by
/// roles > 0 as learned from `MALMOS<address>:<port>`, and filled in by role 0's
/// mod once its world is open to LAN.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerConnection {
    /// Role 0's client address.
    pub address: String,
    /// The LAN server port.
    pub port: u16,
}

/// The agent's listening ports; 0 for a channel the agent does not use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AgentPorts {
    /// Mission control (pings, the echo, MissionEnded).
    pub mission_control: u16,
    /// Video frames (the MBAG spectator only).
    pub video: u16,
    /// Depth frames (unused by MBAG).
    pub depth: u16,
    /// Luminance frames (unused by MBAG).
    pub luminance: u16,
    /// Observations.
    pub observations: u16,
    /// Rewards.
    pub rewards: u16,
    /// Colour-map frames (unused by MBAG).
    pub colour_map: u16,
}

/// `ClientAgentConnection`: how the client and the agent reach each other.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientAgentConnection {
    /// The client's address (the pool entry's).
    pub client_address: String,
    /// The client's mission-control port.
    pub client_mission_control_port: u16,
    /// The client's commands port: 0 ("client decides") as MBAG sends it, the real
    /// port (control port + 1000 in the MBAG fork) in the echo.
    pub client_commands_port: u16,
    /// The agent's address: `127.0.0.1` as MalmoPython sends it; the mod replaces
    /// it with the host name of the TCP peer (e.g. `localhost`).
    pub agent_address: String,
    /// The agent's listening ports.
    pub agent_ports: AgentPorts,
}

/// A MissionInit document.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MissionInit {
    /// `SchemaVersion`: MalmoPython sends it empty and the mod does not check it.
    pub schema_version: String,
    /// `PlatformVersion`: must equal the mod's version exactly.
    pub platform_version: String,
    /// The mission as this role sees it.
    pub mission: MissionDocument,
    /// The experiment id, shared by every role of one mission.
    pub experiment_id: ExperimentId,
    /// Role 0's server, when known.
    pub server: Option<ServerConnection>,
    /// The role this client plays.
    pub role: Role,
    /// The client and agent addresses and ports.
    pub connection: ClientAgentConnection,
}

/// Why a MissionInit cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissionInitError {
    /// The document is not readable as a MissionInit.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The embedded mission is not an MBAG mission.
    #[error("Mission: {0}")]
    Mission(#[from] MissionError),
    /// The experiment id is not valid.
    #[error("MissionInit/ExperimentUID: {0}")]
    ExperimentId(#[from] BadExperimentId),
    /// The role has no AgentSection in the mission.
    #[error("MissionInit/ClientRole: role {role} but the mission has {agents} agents")]
    RoleOutOfRange {
        /// The role.
        role: Role,
        /// The mission's AgentSections.
        agents: usize,
    },
}

impl MissionInit {
    /// A MissionInit as MalmoPython builds one: empty `SchemaVersion`, this crate's
    /// `PlatformVersion`, and no server connection.
    pub fn new(
        mission: MissionDocument,
        experiment_id: ExperimentId,
        role: Role,
        connection: ClientAgentConnection,
    ) -> Self {
        Self {
            schema_version: String::new(),
            platform_version: MALMO_VERSION.to_owned(),
            mission,
            experiment_id,
            server: None,
            role,
            connection,
        }
    }

    /// The same MissionInit with role 0's server (or without it).
    pub fn with_server(mut self, server: Option<ServerConnection>) -> Self {
        self.server = server;
        self
    }

    /// The document text, without the `\n` that ends the control line.
    pub fn render(&self, form: MissionInitForm) -> String {
        let root = self.to_element(form);
        let mut out = String::from(BOOST_DECLARATION);
        match form {
            MissionInitForm::AgentHost => {
                root.write_boost(&mut out);
                // MalmoPython sends the document as one line.
                out.retain(|c| c != '\n');
            }
            MissionInitForm::Compact => root.write_compact(&mut out),
            MissionInitForm::ModEcho => {
                out = String::from(JAXB_DECLARATION);
                root.write_compact(&mut out);
            }
        }
        out
    }

    fn to_element(&self, form: MissionInitForm) -> Element {
        let mut mission = self.mission.to_element();
        // boost keeps the root's attributes under `<xmlattr>`, which MalmoPython
        // does not copy into the MissionInit: the mission inherits the namespace.
        mission.attributes.clear();
        let root = if form == MissionInitForm::ModEcho {
            Element::new("MissionInit")
                .attr("SchemaVersion", &self.schema_version)
                .attr("PlatformVersion", &self.platform_version)
                .attr("xmlns", MALMO_NAMESPACE)
        } else {
            Element::new("MissionInit")
                .attr("xmlns", MALMO_NAMESPACE)
                .attr("xmlns:xsi", XSI_NAMESPACE)
                .attr("SchemaVersion", &self.schema_version)
                .attr("PlatformVersion", &self.platform_version)
        };
        let mut root = root
            .child(mission)
            .child(Element::new("ExperimentUID").text(&self.experiment_id));
        if let Some(server) = &self.server {
            // boost prints optional values with a leading space (PROTOCOL.md §3.2).
            let pad = if form == MissionInitForm::AgentHost {
                " "
            } else {
                ""
            };
            root = root.child(
                Element::new("MinecraftServerConnection")
                    .attr("address", format_args!("{pad}{}", server.address))
                    .attr("port", format_args!("{pad}{}", server.port)),
            );
        }
        let c = &self.connection;
        let p = &c.agent_ports;
        let connection = [
            ("ClientIPAddress", c.client_address.clone()),
            (
                "ClientMissionControlPort",
                c.client_mission_control_port.to_string(),
            ),
            ("ClientCommandsPort", c.client_commands_port.to_string()),
            ("AgentIPAddress", c.agent_address.clone()),
            ("AgentMissionControlPort", p.mission_control.to_string()),
            ("AgentVideoPort", p.video.to_string()),
            ("AgentDepthPort", p.depth.to_string()),
            ("AgentLuminancePort", p.luminance.to_string()),
            ("AgentObservationsPort", p.observations.to_string()),
            ("AgentRewardsPort", p.rewards.to_string()),
            ("AgentColourMapPort", p.colour_map.to_string()),
        ]
        .into_iter()
        .fold(Element::new("ClientAgentConnection"), |e, (name, value)| {
            e.child(Element::new(name).text(value))
        });
        root.child(Element::new("ClientRole").text(self.role))
            .child(connection)
    }

    /// Reads a MissionInit in any of the forms: the AgentHost's, the compact one,
    /// or the mod's JAXB echo. Values are trimmed as the schema's `xs:int` and the
    /// mod's `trim()` do, so the AgentHost's `address=" 127.0.0.1"` reads as
    /// `127.0.0.1`.
    pub fn parse(xml: &str) -> Result<Self, MissionInitError> {
        let element = Element::parse_document(xml)?;
        let root = Node::root(&element, "MissionInit")?;
        let mission = MissionDocument::from_element(root.child("Mission")?.element)?;
        let experiment_id = ExperimentId::new(root.child_text("ExperimentUID")?.trim())?;
        let server = match root.optional_child("MinecraftServerConnection") {
            Some(server) => Some(ServerConnection {
                address: server.attribute("address")?.trim().to_owned(),
                port: server.parsed_attribute("port", "a port number")?,
            }),
            None => None,
        };
        let role = Role(root.parsed_child("ClientRole", "a role number")?);
        if role.0 as usize >= mission.mission.num_agents() {
            return Err(MissionInitError::RoleOutOfRange {
                role,
                agents: mission.mission.num_agents(),
            });
        }
        let c = root.child("ClientAgentConnection")?;
        let port = |name: &'static str| c.parsed_child::<u16>(name, "a port number");
        let connection = ClientAgentConnection {
            client_address: c.child_text("ClientIPAddress")?.trim().to_owned(),
            client_mission_control_port: port("ClientMissionControlPort")?,
            client_commands_port: port("ClientCommandsPort")?,
            agent_address: c.child_text("AgentIPAddress")?.trim().to_owned(),
            agent_ports: AgentPorts {
                mission_control: port("AgentMissionControlPort")?,
                video: port("AgentVideoPort")?,
                depth: port("AgentDepthPort")?,
                luminance: port("AgentLuminancePort")?,
                observations: port("AgentObservationsPort")?,
                rewards: port("AgentRewardsPort")?,
                colour_map: port("AgentColourMapPort")?,
            },
        };
        Ok(Self {
            // MalmoPython requires both attributes.
            schema_version: root.attribute("SchemaVersion")?.to_owned(),
            platform_version: root.attribute("PlatformVersion")?.to_owned(),
            mission,
            experiment_id,
            server,
            role,
            connection,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_ids_are_single_tokens() {
        assert!(ExperimentId::new("5f0c1e8a-3b7d-4c55-9a51-7f0e2d6b9c11").is_ok());
        assert!(ExperimentId::new("").is_err());
        assert!(ExperimentId::new("a b").is_err());
        assert!(ExperimentId::new("a\n").is_err());
    }
}
