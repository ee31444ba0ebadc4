//! The daemon: the simulator in lockstep with live Minecraft (issue 7). This is
//! the crate's only async code; CPU work (agents, inference) runs on threads it
//! talks to without blocking its tasks.
//!
//! - [`agent_thread`]: an agent on its own thread, asked from async code.
//! - [`session`]: the mission for an episode, started on Minecraft clients.

pub mod agent_thread;
pub mod session;
