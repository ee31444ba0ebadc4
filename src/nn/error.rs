//! The errors of [`crate::nn`].

use std::path::PathBuf;

/// Why a model could not be configured, loaded, saved or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NnError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A model config (JSON) does not parse or lacks a key.
    #[error("{path}: bad model config: {message}")]
    Config {
        /// The config file (empty for an in-memory config).
        path: PathBuf,
        /// What is wrong, with the JSON path of the bad key.
        message: String,
    },
    /// The config asks for an option this implementation does not build.
    #[error("model {model}: unsupported option {option} (no shipped checkpoint uses it)")]
    Unsupported {
        /// The model's name.
        model: String,
        /// The option, as written in `custom_model_config`.
        option: String,
    },
    /// The weights file lacks a tensor the model needs.
    #[error("{path}: missing tensor {name} (the model expects shape {expected:?})")]
    MissingTensor {
        /// The weights file.
        path: PathBuf,
        /// The tensor's state-dict name.
        name: String,
        /// The shape the model expects.
        expected: Vec<i64>,
    },
    /// The weights file holds a tensor of the wrong shape.
    #[error("{path}: tensor {name} has shape {found:?}, the model expects {expected:?}")]
    ShapeMismatch {
        /// The weights file.
        path: PathBuf,
        /// The tensor's state-dict name.
        name: String,
        /// The shape the model expects.
        expected: Vec<i64>,
        /// The shape in the file.
        found: Vec<i64>,
    },
    /// The weights file holds a tensor the model has no place for (other than the
    /// BatchNorm counters `*.num_batches_tracked`, which inference does not need).
    #[error("{path}: unexpected tensor {name} of shape {found:?}: the model has no such weight")]
    UnexpectedTensor {
        /// The weights file.
        path: PathBuf,
        /// The tensor's state-dict name.
        name: String,
        /// Its shape in the file.
        found: Vec<i64>,
    },
    /// An input tensor has the wrong shape or dtype for this model.
    #[error("model {model}: input {input}: {message}")]
    BadInput {
        /// The model's name.
        model: String,
        /// Which input (`world`, `inventory`, `timestep`, `prev_action`, `state`).
        input: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The tensors of an observation batch do not fit together.
    #[error("observation batch: {input}: {message}")]
    BadBatch {
        /// Which tensor (`world`, `inventory`, `timestep`, `prev_action`).
        input: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A golden file lacks a tensor or has an unexpected shape.
    #[error("{path}: golden tensor {name}: {message}")]
    Golden {
        /// The golden file.
        path: PathBuf,
        /// The tensor's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A number format the model cannot use here, or a use it does not serve.
    #[error("model {model}: precision {precision}: {message}")]
    Precision {
        /// The model's name.
        model: String,
        /// The precision asked for.
        precision: super::Precision,
        /// Why not.
        message: String,
    },
    /// The requested device is not available.
    #[error("device {0}: CUDA is not available (see the CUDA notes in src/nn/mod.rs)")]
    DeviceUnavailable(String),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    /// The inference service has shut down (or its thread has died), so the
    /// request was not, or will never be, answered.
    #[error("the inference service is shut down")]
    ServiceClosed,
    /// The forward pass of a batch that held this request failed or panicked; every
    /// caller in that batch gets the same message.
    #[error("inference batch of {batch} samples failed: {message}")]
    BatchFailed {
        /// How many samples the failed forward pass held.
        batch: usize,
        /// libtorch's error or the panic's message.
        message: String,
    },
    /// The inference thread could not be started, or panicked outside a batch.
    #[error("inference thread: {0}")]
    ServiceThread(String),
}
