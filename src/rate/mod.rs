//! `mbag rate`: people compare two episodes of the same goal side by side,
//! and the answers rate the agents with TrueSkill (issue 23, item 3), as the
//! BEDD evaluation rated BASALT agents and humans.
//!
//! - [`episode`]: which recordings can be compared: each one's agent (the
//!   assistant seat's spec, or `human`) and goal (a hash of the goal grid).
//! - [`answer`]: the form's questions as types (overall verdict, factor
//!   questions, human-likeness, a justification of at least 100 characters)
//!   and the checks every answer passes.
//! - [`db`]: the SQLite file (WAL; one transaction per change; answers unique
//!   per comparison and rater, so a retried submit is stored once).
//! - [`pairs`]: choosing the comparisons that most reduce the ratings'
//!   uncertainty.
//! - [`leaderboard`]: TrueSkill per agent from the answers, sorted by
//!   `mu - 3 sigma`, and per-factor scores.
//! - [`serve`]: the local web page showing the next pending pair with two
//!   `mbag view` players and the form, timing each answer.

use std::path::PathBuf;

pub mod answer;
pub mod db;
pub mod episode;
pub mod leaderboard;
pub mod pairs;
pub mod serve;

/// Why rating could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RateError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A recording's header is not a `mbag-recording/1` header.
    #[error("{path}: line 1 is not a recording header: {message}")]
    Header {
        /// The recording.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The database refused or failed.
    #[error("rating database {path}: {message}")]
    Db {
        /// The database file.
        path: PathBuf,
        /// SQLite's message, or ours.
        message: String,
    },
    /// An answer failed its checks.
    #[error(transparent)]
    Answer(#[from] answer::AnswerError),
    /// No comparison has this id.
    #[error("there is no comparison {0}")]
    UnknownComparison(i64),
    /// A comparison names episodes that are not catalogued.
    #[error("episodes {left} and {right} are not both in the catalogue")]
    UnknownEpisodes {
        /// The left episode's id.
        left: i64,
        /// The right episode's id.
        right: i64,
    },
    /// The rater was never handed this comparison (by `POST /next`), so an
    /// answer to it is not one the rater gave after seeing the pair.
    #[error(
        "rater {rater} was never shown comparison {comparison}; answer the pairs the page shows"
    )]
    NotShown {
        /// The comparison.
        comparison: i64,
        /// The rater.
        rater: String,
    },
    /// The rater already answered this comparison differently; the first
    /// answer stands.
    #[error(
        "rater {rater} already answered comparison {comparison} differently; the first answer stands"
    )]
    Conflict {
        /// The comparison.
        comparison: i64,
        /// The rater.
        rater: String,
    },
}
