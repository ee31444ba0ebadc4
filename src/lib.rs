//! mbag: the Minecraft Building Assistance Game in Rust.
//!
//! # Layout
//! - [`sim`]: the pure simulator, at exact parity with the reference environment.
//! - [`agents`]: the reference's heuristic and hardcoded agents, acting on observations.
//! - [`eval`]: episode metrics with the reference's definitions.
//! - [`goal_model`]: a goal predictor learned by counting contexts in partial builds
//!   of real houses, calibrated on styles it never saw; the assistant's search reads it.
//! - [`golden`]: reading the reference's golden data and replaying it through [`sim`].
//! - [`vecenv`]: many environments stepped on worker threads.
//! - [`nn`]: the reference networks in `tch` (conv and transformer), checkpoints and
//!   golden checks.
//! - [`recording`]: the `mbag-recording/1` episode format: writer, reader, replay
//!   verification, stats, and conversion of the shared human data.
//! - [`dataset`]: folders of recordings as datasets: manifest, validation
//!   (duplicates, orphans, split episodes), statistics tables and datasheets.
//! - [`bench`]: speed measurements against the reference's figures.
//! - [`daemon`]: the lockstep daemon's pure translation between the simulator and
//!   Minecraft (human-action detection, assistant commands, divergence repair).
//! - [`train`]: training networks (AssistanceZero self-play, behaviour cloning)
//!   with metrics logs, Adam and resumable checkpoints.
//! - [`view`]: episodes in the browser: recordings and live runs drawn in 3-D.
//! - [`study`]: human studies: Latin-square designs with blinded assistants,
//!   sessions run through the daemon, surveys, and the statistics of the report.
//! - [`rate`]: people compare two episodes side by side; TrueSkill rates the agents.
//! - [`cli`]: the `mbag` command line.
#![warn(missing_docs)]

pub mod agents;
pub mod bench;
pub mod chat;
pub mod cli;
pub mod daemon;
pub mod dataset;
pub mod eval;
pub mod goal_model;
pub mod golden;
pub mod http;
pub mod jsonl;
pub mod mcts;
pub mod nn;
/// Text others wrote, made safe to print on a terminal.
pub mod printable;
pub mod rate;
pub mod recording;
pub mod robustness;
pub mod study;
pub mod train;
pub mod view;

// The simulator and the vectorised environment live in their own crate so that the
// Python wheel (python/) builds them without linking libtorch.
pub use mbag_sim as sim;
pub use mbag_sim::vecenv;
