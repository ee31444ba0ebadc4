//! The errors of [`crate::train`].

use std::path::PathBuf;

use crate::nn::NnError;

/// Why training, a metrics log or a checkpoint failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSON file (a training config, a checkpoint's progress, a log line) does
    /// not parse or does not have the expected keys.
    #[error("{path}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Json {
        /// The file.
        path: PathBuf,
        /// The 1-based line, for JSON Lines files.
        line: Option<usize>,
        /// What is wrong, with the key's path where serde knows it.
        message: String,
    },
    /// A training config is well-formed JSON but asks for something impossible.
    #[error("{path}: bad training config: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A checkpoint is incomplete or does not fit the model or optimizer.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint's folder or file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A plot could not be drawn or written.
    #[error("plot {path}: {message}")]
    Plot {
        /// The image being written.
        path: PathBuf,
        /// The drawing backend's error.
        message: String,
    },
    /// The training data cannot be used.
    #[error("training data: {0}")]
    Data(String),
    /// A network could not be built, run or saved.
    #[error(transparent)]
    Nn(#[from] NnError),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

impl TrainError {
    /// An [`TrainError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
