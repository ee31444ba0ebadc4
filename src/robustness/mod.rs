//! Robustness unit tests for assistants (Knott et al.,
//! `../shared/papers/robustness_unit_tests.txt`): hand-built situations in three
//! categories (state robustness, agent robustness, agent robustness with
//! memory), each with a scripted partner, a horizon and a pass predicate that
//! may accept several reasonable behaviours.
//!
//! - [`format`]: the declarative test file (`tests/robustness/README.md`), read
//!   and checked with errors that name the file and the field.
//! - [`predicate`]: pass predicates evaluated on an episode's [`Outcome`]
//!   (predicate::Outcome): the final world and the assistant's edits.
//!
//! - [`run`]: one test episode: the start built from the test (world, goal,
//!   positions, the history observed edit by edit), the partner, the outcome.
//! - [`partner`]: the scripted persons (`stubborn`, `actions`).
//! - [`capture`]: a moment of a recording as a test skeleton.
//! - [`suite`]: many tests for several assistants side by side (the one under
//!   test, `oracle`, `noop`), pass rates with Wilson intervals, and the flags.

pub mod capture;
pub mod format;
pub mod partner;
pub mod predicate;
pub mod run;
pub mod suite;
