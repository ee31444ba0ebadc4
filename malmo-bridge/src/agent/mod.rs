//! The agent side on tokio, replacing MalmoPython's `AgentHost`: reserve clients,
//! find role 0's server, hand over MissionInits, listen for what the mod sends and
//! send it commands. Every wait has a deadline, so a Minecraft that dies, hangs or
//! answers garbage is a typed [`AgentError`] within bounded time.
//!
//! A mission for N roles runs as: [`reserve_clients`] (role 0), then
//! [`start_role`] for each role in order, then [`AgentMission::wait_until_begun`]
//! on every role (the echoes arrive only once all have joined), then
//! [`AgentMission::next_event`] and [`AgentMission::send`] while it runs, and
//! [`AgentMission::quit`] at the end.
//!
//! The listeners the mod connects to bind the agent address a mission is
//! started with (loopback for clients on this machine) and admit only the
//! clients' addresses ([`PeerFilter`]). A mission ends only by a MissionEnded
//! on the mission-control connection that delivered the MissionInit echo (the
//! mod keeps that one connection for the whole mission), so that another
//! program on this machine cannot end an episode by connecting to the
//! listener.

mod client;
mod error;
mod listeners;
mod mission;
mod peers;
mod probe;
mod start;

pub use client::{COMMANDS_PORT_OFFSET, ClientAddr, DEFAULT_CONTROL_PORT, MAX_REPLY_LEN, exchange};
pub use error::{AgentError, Attempt, Attempts, ContactError, Stage};
pub use listeners::{Channel, ConnectionEvent, ConnectionId, Incoming, Listeners, MAX_CONNECTIONS};
pub use mission::{
    AgentMission, CommandsEndpoint, MissionEvent, MissionState, RESERVATION_MS, RoundTrip,
    Timeouts, find_server, find_server_patiently, hand_over_mission_init, reserve_clients,
    start_role, start_role_at,
};
pub use peers::PeerFilter;
pub use probe::{Availability, Liveness, ProbeReport, probe, query_mod_version};
pub use start::{begin_all, start_mission};
