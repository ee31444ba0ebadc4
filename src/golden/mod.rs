//! Reading the reference's golden data and checking the simulator against it.
//!
//! Goldens live in `../shared/reference/golden/` (format in its README). This module
//! does the file I/O and comparison; the simulator itself stays pure.

pub mod agents;
pub mod compare;
pub mod episode;
pub mod format;
pub mod goal_transforms;
