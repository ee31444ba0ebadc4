//! mbag: the Minecraft Building Assistance Game in Rust.
//!
//! # Layout
//! - [`sim`]: the pure simulator, at exact parity with the reference environment.
//! - [`agents`]: the reference's heuristic and hardcoded agents, acting on observations.
//! - [`golden`]: reading the reference's golden data and replaying it through [`sim`].
#![warn(missing_docs)]

pub mod agents;
pub mod cli;
pub mod eval;
pub mod golden;
pub mod sim;
pub mod vecenv;
