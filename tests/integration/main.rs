//! Integration tests of the mbag crate.
