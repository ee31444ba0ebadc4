//! Training networks: AssistanceZero assistants by self-play ([`assistant`]) and
//! the pieces every trainer shares: a JSON Lines metrics log ([`log`]), Adam with
//! savable state ([`optim`]), and crash-safe resumable checkpoints
//! ([`checkpoint`]).

pub mod assistant;
pub mod bc;
pub mod checkpoint;
pub mod error;
pub mod log;
pub mod optim;
pub mod plot;

pub use checkpoint::{CheckpointPaths, Checkpointer, Loaded, Progress};
pub use error::TrainError;
pub use log::{LogRecord, MetricsLog, read_log};
pub use optim::{Adam, AdamConfig, LrSchedule, StepStats};
