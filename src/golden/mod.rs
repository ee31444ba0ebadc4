//! Checks against the reference's golden data (`../shared/reference/golden/`).

pub mod goal_transforms;
