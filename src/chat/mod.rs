//! Chat with the assistant (issue 22): intent flags of the person's messages.
//!
//! - [`intent`]: [`intent::Intent`] (accept, reject, inquiry, none), the
//!   [`intent::IntentParser`] trait and the rule-based default.
//! - [`eval`]: accuracy per flag on a labelled JSON Lines file
//!   (`mbag chat eval`).

pub mod eval;
pub mod intent;
