//! Project Malmo's wire protocol, spoken from both ends, and a Minecraft emulator.
//!
//! This crate knows nothing about the MBAG rules or neural networks: it is the voice
//! mbag uses to talk to a running Minecraft (Project Malmo mod), and the stand-in
//! Minecraft that the tests and demos talk to instead. It is filled in by the
//! malmo-bridge issue; today it only fixes the crate boundary.
#![deny(missing_docs)]

/// The Malmo protocol version that the MBAG fork of the mod speaks.
pub const MALMO_VERSION: &str = "0.38.0";
