//! The lockstep daemon: keeps the simulator and live Minecraft in step.
//!
//! This module holds the daemon's **pure translation logic**, with no sockets, no
//! tokio and no threads, so that every rule is tested on recorded data:
//!
//! - [`detect`]: Minecraft observations to human actions (MBAG_INTEGRATION.md §4).
//! - [`commands`]: assistant actions and mission set-up to Malmo commands (§5).
//! - [`divergence`]: comparing the simulator with Minecraft and repairing the
//!   difference (§6, §8), with the policy documented there.
//!
//! The tokio parts (one task per Minecraft connection on `malmo_bridge::agent`,
//! the step loop, timers for the reference's sleeps) come later and only call into
//! these modules; everything time-dependent here is expressed as data (for example
//! [`commands::Instruction::Sleep`]) for the caller to carry out.

pub mod commands;
pub mod detect;
pub mod divergence;
