//! Training networks.

pub mod assistant;
