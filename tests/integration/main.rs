//! Integration tests of the mbag crate.

mod goal_transforms;
