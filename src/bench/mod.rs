//! Speed measurements against the reference's figures (`mbag bench ...`).

pub mod baseline;
pub mod env;
