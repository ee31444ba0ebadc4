//! Writing evaluated episodes as recordings (`mbag evaluate --record DIR`).
//!
//! An evaluation's episodes are the data of other work: the pretrained
//! assistant learns from a BC human's episodes, `mbag rate pairs` pairs two
//! runs' episodes of the same goal, and `mbag view` replays any of them. Each
//! episode becomes `DIR/episode_NNNNN.jsonl` (its index in the run), written step
//! by step as it is played, so that an interrupted run keeps every step it took;
//! the file verifies by replay like any other recording.

use std::path::{Path, PathBuf};

use super::run::{ASSISTANT, HUMAN};
use crate::agents::spec::AgentSpec;
use crate::recording::RecordingError;
use crate::recording::footer::{EndReason, EndRecord};
use crate::recording::header::{Controller, PlayerEntry, Role, Source, SourceKind};
use crate::recording::record::{EpisodeRecorder, SnapshotMode};
use crate::recording::writer::{Fsync, RecordingWriter};
use crate::sim::action::Action;
use crate::sim::env::{Env, StepOutcome};

/// Where an evaluation writes its episodes, and what it says about them.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordEpisodes {
    /// The folder (created if missing).
    pub dir: PathBuf,
    /// A sentence naming the run, for each recording's header.
    pub description: String,
}

impl RecordEpisodes {
    /// The file of episode `index`.
    pub fn path_of(&self, index: usize) -> PathBuf {
        self.dir.join(format!("episode_{index:05}.jsonl"))
    }

    /// Creates the folder.
    pub fn prepare(&self) -> Result<(), RecordingError> {
        std::fs::create_dir_all(&self.dir).map_err(RecordingError::io(&self.dir))
    }
}

/// One episode being written.
#[derive(Debug)]
pub struct EpisodeWriter {
    recorder: EpisodeRecorder,
    writer: RecordingWriter,
}

impl EpisodeWriter {
    /// Starts episode `index` at the env's state just after its reset; `specs`
    /// are the seats' agents, human first.
    pub fn start(
        target: &RecordEpisodes,
        env: &Env,
        index: usize,
        seed: u64,
        specs: &[&AgentSpec],
    ) -> Result<Self, RecordingError> {
        let players = specs
            .iter()
            .enumerate()
            .map(|(p, spec)| PlayerEntry {
                index: p,
                role: if p == HUMAN {
                    Role::Human
                } else {
                    debug_assert_eq!(p, ASSISTANT);
                    Role::Assistant
                },
                controller: Controller::Agent,
                agent: Some(spec.to_string()),
                models: Vec::new(),
                note: None,
            })
            .collect();
        let source = Source {
            kind: SourceKind::Simulated,
            description: Some(target.description.clone()),
            origin: Some(serde_json::json!({"episode": index, "seed": seed})),
        };
        let (recorder, header) = EpisodeRecorder::start(
            env,
            format!("episode_{index:05}"),
            source,
            players,
            SnapshotMode::Changes,
        );
        let writer =
            RecordingWriter::create(&target.path_of(index), &header, Fsync::HeaderAndFooter)?;
        Ok(Self { recorder, writer })
    }

    /// Appends the step just taken.
    pub fn step(
        &mut self,
        env: &Env,
        actions: &[Action],
        outcome: &StepOutcome,
    ) -> Result<(), RecordingError> {
        let record = self.recorder.step(env, actions, outcome);
        self.writer.append(&record)
    }

    /// Writes the footer; the episode ended by the env's `done`.
    pub fn finish(self, env: &Env) -> Result<PathBuf, RecordingError> {
        let footer = self.recorder.footer(
            env,
            EndRecord {
                reason: EndReason::Done,
                message: None,
            },
        );
        self.writer.finish(&footer)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }
}
