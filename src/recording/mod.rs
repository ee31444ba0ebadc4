//! Recordings: the `mbag-recording/1` format (`recordings/README.md`), written one
//! step at a time so a crash loses at most the step in flight, read back whole or
//! cut short, verified by replaying through the simulator, summarised, and
//! converted from the shared human data.
//!
//! - `header`, `step`, `footer`: the three line types; `codec`: base64 arrays,
//!   non-finite floats, action arrays, dates.
//! - `state`: between `EnvState` and the recorded forms (snapshots, sync edits).
//! - `writer`: [`RecordingWriter`]; `record`: [`EpisodeRecorder`], records from a
//!   running env; `simulate`: a heuristic episode through both.
//! - `reader`: [`Recording::read`], which reports a cut last line as a
//!   [`TruncatedTail`]; `verify`: the replay check; `stats`: summaries.
//! - `convert`: `mbag-human-episode/1` to recordings.

pub mod codec;
pub mod convert;
mod error;
pub mod footer;
pub mod header;
pub mod reader;
pub mod record;
pub mod simulate;
pub mod starts;
pub mod state;
pub mod stats;
pub mod step;
pub mod verify;
pub mod writer;

pub use error::RecordingError;
pub use footer::{EndReason, EndRecord, Footer};
pub use header::{FORMAT, Header};
pub use reader::{Recording, TruncatedTail};
pub use record::{EpisodeRecorder, SnapshotMode};
pub use state::apply_sync;
pub use step::{ChatRecord, ExplainRecord, StateSnapshot, StepRecord, SyncEdits};
pub use verify::{Mismatch, RepairCount, VerifyReport, verify};
pub use writer::{Fsync, RecordingWriter, gzip_file};
