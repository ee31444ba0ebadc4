//! Project Malmo's wire protocol, spoken from both ends, and a Minecraft emulator.
//!
//! This crate knows nothing about the MBAG rules or neural networks: it is the voice
//! mbag uses to talk to a running Minecraft (Project Malmo mod), and the stand-in
//! Minecraft that the tests and demos talk to instead.
//!
//! Built so far: [`frame`], the sans-IO framing of every channel (length-prefixed
//! frames and newline-terminated lines), [`control`], the mission-control requests
//! and replies, [`command`], the typed commands an agent sends,
//! [`observation`], the observations the mod sends, and [`agent`], the agent side on
//! tokio that replaces MalmoPython's `AgentHost`.
#![deny(missing_docs)]

pub mod agent;
pub mod command;
pub mod control;
pub mod frame;
pub mod observation;

/// The Malmo protocol version that the MBAG fork of the mod speaks.
pub const MALMO_VERSION: &str = "0.38.0";
