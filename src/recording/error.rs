//! Why a recording cannot be read, written or converted.

use std::path::PathBuf;

/// A recording that cannot be read, written or converted. Every variant names the
/// file, and where it can the 1-based line and the field, so a broken recording is
/// a message to act on rather than a panic.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file cannot be opened, read, written or synced.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A line is not JSON or one of its fields has the wrong shape or value.
    #[error("{path}:{line}: field `{field}`: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Path of the field within the line (empty for the whole line).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The file's structure is wrong (no header, steps out of order, ...).
    #[error("{path}:{line}: {message}")]
    Structure {
        /// The file.
        path: PathBuf,
        /// 1-based line number where the problem shows.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The writer was asked for something the format forbids.
    #[error("{path}: {message}")]
    Writer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl RecordingError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }

    pub(crate) fn field(
        path: impl Into<PathBuf>,
        line: usize,
        field: impl Into<String>,
        message: impl ToString,
    ) -> Self {
        Self::Field {
            path: path.into(),
            line,
            field: field.into(),
            message: message.to_string(),
        }
    }
}
