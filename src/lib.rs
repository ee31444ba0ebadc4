//! mbag: the Minecraft Building Assistance Game in Rust.
//!
//! # Layout
//! - [`sim`]: the pure simulator, at exact parity with the reference environment.
//! - [`golden`]: checks against the reference's golden data.
#![warn(missing_docs)]

pub mod golden;
pub mod sim;
