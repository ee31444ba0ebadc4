//! The lockstep daemon: keeps the simulator and live Minecraft in step. This is
//! the crate's only async code; CPU work (agents, inference) runs on threads it
//! talks to without blocking its tasks.
//!
//! The **translation logic** is pure (no sockets, no tokio, no threads), so that
//! every rule is tested on recorded data:
//!
//! - [`detect`]: Minecraft observations to human actions (MBAG_INTEGRATION.md §4).
//! - [`commands`]: assistant actions and mission set-up to Malmo commands (§5).
//! - [`divergence`]: comparing the simulator with Minecraft and repairing the
//!   difference (§6, §8), with the policy documented there.
//!
//! The async parts only call into those modules; everything time-dependent in
//! them is expressed as data (for example [`commands::Instruction::Sleep`]) for
//! the caller to carry out:
//!
//! - [`session`]: the mission for an episode, started on Minecraft clients, and
//!   ended by all roles at once.
//! - [`agent_thread`]: an agent on its own thread, asked from async code without
//!   blocking it.
//! - [`chat`]: messages between the seats, parsed, passed on and recorded.

pub mod agent_thread;
pub mod chat;
pub mod detect;
pub mod divergence;
pub mod episode;
pub mod executor;
pub mod lockstep;
pub mod recorder;
pub mod roles;
pub mod seam;
pub mod session;
pub mod spectator;
pub mod translate;
pub mod view;
