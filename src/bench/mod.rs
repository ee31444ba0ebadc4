//! Speed measurements against the reference's figures (`mbag bench ...`).

pub mod baseline;
pub mod bridge;
pub mod cpu;
pub mod daemon;
pub mod env;
pub mod mcts;
pub mod nn;
pub mod python;
