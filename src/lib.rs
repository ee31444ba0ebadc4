//! mbag: the Minecraft Building Assistance Game in Rust.
//!
//! # Layout
//! - [`sim`]: the pure simulator, at exact parity with the reference environment.
#![warn(missing_docs)]

pub mod sim;
