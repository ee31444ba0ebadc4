//! Project Malmo's wire protocol, spoken from both ends, and a Minecraft emulator.
//!
//! This crate knows nothing about the MBAG rules or neural networks: it is the voice
//! mbag uses to talk to a running Minecraft (Project Malmo mod), and the stand-in
//! Minecraft that the tests and demos talk to instead.
//!
//! Built so far: [`frame`], the sans-IO framing of every channel (length-prefixed
//! frames and newline-terminated lines), [`control`], the mission-control requests
//! and replies, [`command`], the typed commands an agent sends, [`observation`],
//! the observations the mod sends, and the XML documents: [`mission`], the Mission
//! MBAG generates (over [`block`] and [`grid`], MBAG's block types and world
//! grids), byte for byte as the reference writes it; [`mission_init`], the
//! MissionInit in the real AgentHost's bytes or a clean form, and the mod's echo;
//! and [`mission_ended`]. Every document parses back into its typed value, and a
//! malformed one is a typed error naming the element path ([`ReadError`]).
//! [`decoded`] reads observations for the live loop without a JSON tree.
//! [`mod_patch`] holds what mbag's patches to the mod add (a version string,
//! block changes that name the player).
//! [`agent`] is the agent side on tokio that replaces MalmoPython's `AgentHost`,
//! and [`emulator`] the other side: Minecraft clients running the MBAG fork of the
//! mod, emulated over a small block world, with fault hooks for tests.
#![deny(missing_docs)]

pub mod agent;
pub mod block;
pub mod command;
pub mod control;
pub mod decoded;
pub mod emulator;
pub mod frame;
pub mod grid;
pub mod mission;
pub mod mission_ended;
pub mod mission_init;
pub mod mod_patch;
pub mod observation;
mod xml;

pub use xml::ReadError;

/// The Malmo protocol version that the MBAG fork of the mod speaks.
pub const MALMO_VERSION: &str = "0.38.0";
