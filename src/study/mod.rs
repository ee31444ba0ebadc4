//! Human studies (issue 23, item 4; the paper's Appendix C): a
//! within-subjects comparison of assistants, run, surveyed and analysed.
//!
//! - [`design`]: the study file `DIR/study.json`: conditions (assistant specs
//!   under blinded names "Assistant A", ...), each participant's goal and
//!   order of conditions from a balanced Latin square, the practice round,
//!   the session settings and the survey's questions (`mbag study init`).
//! - [`session`]: a participant's next session as a daemon `play` episode,
//!   filed under `DIR/participants/P/` with a sidecar naming the session,
//!   its blinded name and condition; crash recovery (`mbag study next`).
//! - [`survey`] and [`server`]: Likert answers and comments per completed
//!   session, from a local web page, stored as JSON Lines per participant
//!   (`mbag study survey`).
//! - [`report`], [`inference`], [`dist`] and [`plot`]: per-condition means
//!   with standard errors and 90% intervals, paired one-sided t-tests, a
//!   repeated-measures ANOVA with Tukey's HSD, and PNG plots (`mbag study
//!   report`).

pub mod design;
pub mod dist;
pub mod inference;
pub mod plot;
pub mod report;
pub mod server;
pub mod session;
pub mod survey;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why a study command failed.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("{}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The design is inconsistent.
    #[error("study design: {0}")]
    Design(String),
    /// `init` would replace a study.
    #[error("{} exists: a study is already set up there (its blinding and orders may be in use)", .0.display())]
    Exists(PathBuf),
    /// No such participant.
    #[error("no participant {id} in the study (participants: {known})")]
    UnknownParticipant {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// Every session of the participant is complete.
    #[error("participant {participant} has completed all {sessions} sessions")]
    Finished {
        /// The participant.
        participant: String,
        /// Their number of sessions.
        sessions: usize,
    },
    /// A survey answer was refused.
    #[error("{0}")]
    Answer(String),
    /// A recording could not be read.
    #[error(transparent)]
    Recording(#[from] crate::recording::RecordingError),
    /// The survey server could not listen.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A plot could not be drawn.
    #[error("plotting {}: {message}", path.display())]
    Plot {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new
/// one: a temporary file beside it, synced, then renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StudyError> {
    let io = |source| StudyError::Io {
        path: path.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)?;
    // The rename itself reaches the disk with the folder's entry.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && let Ok(d) = std::fs::File::open(parent)
    {
        let _ = d.sync_all();
    }
    Ok(())
}
