//! Chat with the assistant (issue 22): intent flags of the person's messages,
//! what they do to the assistant's search, and what it says back.
//!
//! - [`intent`]: [`intent::Intent`] (accept, reject, inquiry, none), the
//!   [`intent::IntentParser`] trait and the rule-based default.
//! - [`about`]: what a message refers to (the last edit, a block, a place,
//!   everything) and places resolved to cells.
//! - [`conversation`]: the assistant's side: heard messages into
//!   [`crate::mcts::Steering`] (bans, holds, goal log-odds) and rate-limited,
//!   templated messages back.
//! - [`person`]: [`person::RejectingPerson`], a person agent that rejects the
//!   other players' wrong placements in words (`mbag evaluate --human-chat`).
//! - [`eval`]: accuracy per flag on a labelled JSON Lines file
//!   (`mbag chat eval`).

pub mod about;
pub mod conversation;
pub mod eval;
pub mod intent;
pub mod person;
