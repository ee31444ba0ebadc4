//! Integration tests of the mbag crate. They read the reference data in
//! `../shared` by relative path, as CI does.

mod golden_episodes;
