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
//! The runner, the suite itself and the `oracle` reference assistant are the
//! next parts of issue 21.

pub mod format;
pub mod predicate;
