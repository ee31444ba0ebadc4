//! A participant's sessions: which comes next, what it plays, where it is
//! filed, and how a crash is recovered.
//!
//! Files, under `DIR/participants/P/`:
//! - `session-NN-SLUG.jsonl`: the session's recording (`NN` from 00, the
//!   practice first when the study has one; `SLUG` is `practice` or the
//!   blinded name, `assistant-b`), written by the daemon.
//! - `session-NN.json`: its sidecar ([`SessionRecord`]): the index, the
//!   blinded name, the condition and its assistant spec, the recording's file,
//!   the status, and earlier attempts that did not finish. The daemon's
//!   recording header has no field for a study, so the sidecar carries it.
//!
//! A session is complete when its recording has a footer that ends it as done
//! (the house built) or truncated (the step limit). A sidecar left `running`
//! (the process died) or `failed` (Minecraft failed, Ctrl-C) means the session
//! is run again from its start: the unfinished recording is kept, renamed
//! `session-NN-SLUG.attemptK.jsonl`, and listed in the sidecar's `attempts`; a
//! crash after the footer but before the sidecar was updated counts as
//! complete. After the last session `next` refuses to run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use malmo_bridge::agent::Timeouts;
use serde::{Deserialize, Serialize};

use super::StudyError;
use super::design::{Participant, Study};
use crate::agents::spec::AgentSpec;
use crate::daemon::episode::{EmulatedPerson, EpisodeSettings, Minecraft, Mode, Seat};
use crate::daemon::lockstep::LockstepSettings;
use crate::recording::{EndReason, Fsync, Recording};
use crate::sim::config::Config;
use crate::sim::coords::WorldSize;
use crate::sim::presets::{BlockSupply, Game, Malmo, Player};

/// The participants' folder inside a study folder.
pub const PARTICIPANTS_DIR: &str = "participants";
/// The label of the practice round.
pub const PRACTICE_LABEL: &str = "Practice";
/// The sidecar's format tag.
pub const SESSION_FORMAT: &str = "mbag-study-session/1";

/// One session of a participant's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSpec {
    /// Its index in the participant's sequence (the practice is 0 when the
    /// study has one).
    pub index: usize,
    /// What the participant sees: [`PRACTICE_LABEL`] or the blinded name.
    pub label: String,
    /// The condition's index in the study, `None` for the practice.
    pub condition: Option<usize>,
    /// The assistant spec (`none` for the practice).
    pub assistant: String,
    /// The goal generator.
    pub goals: String,
    /// The seed of the goal, start and agents.
    pub seed: u64,
    /// The world.
    pub world_size: WorldSize,
    /// Players have a palette of finite blocks.
    pub finite_blocks: bool,
}

impl SessionSpec {
    /// Whether this is the practice round.
    pub fn is_practice(&self) -> bool {
        self.condition.is_none()
    }

    /// The file-name part naming it: `practice`, `assistant-b`.
    pub fn slug(&self) -> String {
        self.label.to_lowercase().replace(' ', "-")
    }
}

/// The sessions `participant` plays, in order.
pub fn plan(study: &Study, participant: &Participant) -> Vec<SessionSpec> {
    let world = study
        .session
        .world_size
        .unwrap_or(WorldSize::new(11, 10, 10));
    let mut out = Vec::new();
    if let Some(practice) = &study.practice {
        let tutorial = practice.goals == "tutorial";
        out.push(SessionSpec {
            index: 0,
            label: PRACTICE_LABEL.into(),
            condition: None,
            assistant: "none".into(),
            goals: practice.goals.clone(),
            seed: participant.goal.seed,
            world_size: practice.world_size.unwrap_or(if tutorial {
                WorldSize::new(6, 6, 6)
            } else {
                world
            }),
            // The tutorial is played with finite blocks, as `mbag record
            // --session tutorial` plays it.
            finite_blocks: tutorial || study.session.finite_blocks,
        });
    }
    for &c in &participant.order {
        out.push(SessionSpec {
            index: out.len(),
            label: study.conditions[c].label.clone(),
            condition: Some(c),
            assistant: study.conditions[c].assistant.clone(),
            goals: participant.goal.generator.clone(),
            seed: participant.goal.seed,
            world_size: world,
            finite_blocks: study.session.finite_blocks,
        });
    }
    out
}

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Started and not known to have ended (or the process died).
    Running,
    /// Its recording ended as done or truncated.
    Complete,
    /// It ended early (an error, an operator's stop) and will be run again.
    Failed,
}

/// An earlier try of a session that did not finish.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// The kept recording's file name (in the participant's folder), if one
    /// was written.
    pub recording: Option<String>,
    /// Why it did not count.
    pub reason: String,
}

/// A session's sidecar, `session-NN.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    /// [`SESSION_FORMAT`].
    pub format: String,
    /// The participant.
    pub participant: String,
    /// The session's index.
    pub index: usize,
    /// What the participant saw.
    pub label: String,
    /// The condition's index in the study (`None`: the practice).
    pub condition: Option<usize>,
    /// The assistant spec played.
    pub assistant: String,
    /// The recording's file name in the participant's folder.
    pub recording: String,
    /// Where it stands.
    pub status: SessionStatus,
    /// When the current try started (RFC 3339, UTC).
    pub started: String,
    /// When it was found complete or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Why it failed (the recording's end message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Earlier tries that did not finish.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
}

/// A participant's folder.
pub fn participant_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join(PARTICIPANTS_DIR).join(id)
}

fn sidecar_path(pdir: &Path, index: usize) -> PathBuf {
    pdir.join(format!("session-{index:02}.json"))
}

fn recording_name(spec: &SessionSpec) -> String {
    format!("session-{:02}-{}.jsonl", spec.index, spec.slug())
}

/// Reads a sidecar, `None` if there is none yet.
pub fn read_record(pdir: &Path, index: usize) -> Result<Option<SessionRecord>, StudyError> {
    let path = sidecar_path(pdir, index);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StudyError::Parse {
                path,
                message: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StudyError::Io { path, source }),
    }
}

fn write_record(pdir: &Path, record: &SessionRecord) -> Result<(), StudyError> {
    let path = sidecar_path(pdir, record.index);
    let text = serde_json::to_string_pretty(record).map_err(|e| StudyError::Parse {
        path: path.clone(),
        message: e.to_string(),
    })?;
    super::write_atomically(&path, format!("{text}\n").as_bytes())
}

/// How a recording ended: `Ok(())` if it completes its session, else why not.
fn judge(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Err("no recording was written".into());
    }
    let rec = Recording::read(path).map_err(|e| format!("unreadable recording: {e}"))?;
    match &rec.footer {
        None => Err(format!(
            "the recording stops after {} steps with no footer (the run died)",
            rec.steps.len()
        )),
        Some(f) => match f.end.reason {
            EndReason::Done | EndReason::Truncated => Ok(()),
            EndReason::Aborted => Err(format!(
                "aborted after {} steps: {}",
                f.steps,
                f.end.message.as_deref().unwrap_or("stopped")
            )),
        },
    }
}

/// Each planned session with its sidecar, if any.
pub fn progress(
    dir: &Path,
    study: &Study,
    participant: &str,
) -> Result<Vec<(SessionSpec, Option<SessionRecord>)>, StudyError> {
    let p = study.participant(participant)?;
    let pdir = participant_dir(dir, participant);
    plan(study, p)
        .into_iter()
        .map(|s| {
            let record = read_record(&pdir, s.index)?;
            Ok((s, record))
        })
        .collect()
}

/// The next session to run, ready to [`NextSession::begin`].
#[derive(Clone, Debug)]
pub struct NextSession {
    /// What it plays.
    pub spec: SessionSpec,
    /// Its sidecar as it will be written when it begins.
    pub record: SessionRecord,
    /// The participant's folder.
    pub dir: PathBuf,
    /// The study's folder.
    pub study_dir: PathBuf,
    /// How many sessions the participant has in all.
    pub of: usize,
    /// Why it is run again, if it is (the earlier try that did not finish).
    pub rerun: Option<Attempt>,
}

impl NextSession {
    /// Where its recording goes.
    pub fn recording(&self) -> PathBuf {
        self.dir.join(&self.record.recording)
    }

    /// Writes the sidecar as running (before the episode starts, so that a
    /// crash leaves a trace).
    pub fn begin(&self) -> Result<(), StudyError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| StudyError::Io {
            path: self.dir.clone(),
            source,
        })?;
        write_record(&self.dir, &self.record)
    }

    /// Judges the recording and writes the sidecar as complete or failed.
    pub fn finish(mut self) -> Result<SessionRecord, StudyError> {
        let judged = judge(&self.recording());
        self.record.ended = Some(now());
        match judged {
            Ok(()) => self.record.status = SessionStatus::Complete,
            Err(reason) => {
                self.record.status = SessionStatus::Failed;
                self.record.message = Some(reason);
            }
        }
        write_record(&self.dir, &self.record)?;
        Ok(self.record)
    }
}

fn now() -> String {
    crate::recording::codec::rfc3339_utc(crate::recording::codec::now_unix_s())
}

/// Finds `participant`'s next session, recovering an unfinished one: a
/// session whose sidecar is running or failed is judged by its recording
/// (complete after all if it has a done or truncated footer), else its
/// recording is kept under an attempt name and the session is run again.
/// After the last session: [`StudyError::Finished`].
pub fn next(dir: &Path, study: &Study, participant: &str) -> Result<NextSession, StudyError> {
    let p = study.participant(participant)?;
    let pdir = participant_dir(dir, participant);
    let sessions = plan(study, p);
    let of = sessions.len();
    for spec in sessions {
        let mut attempts = Vec::new();
        let mut rerun = None;
        if let Some(mut record) = read_record(&pdir, spec.index)? {
            if record.status == SessionStatus::Complete {
                continue;
            }
            let path = pdir.join(&record.recording);
            match judge(&path) {
                Ok(()) => {
                    // The footer was written, the sidecar not: it finished.
                    record.status = SessionStatus::Complete;
                    record.ended = Some(now());
                    record.message = None;
                    write_record(&pdir, &record)?;
                    continue;
                }
                Err(reason) => {
                    let reason = record.message.clone().unwrap_or(reason);
                    let kept = if path.exists() {
                        let name = format!(
                            "{}.attempt{}.jsonl",
                            record.recording.trim_end_matches(".jsonl"),
                            record.attempts.len() + 1
                        );
                        std::fs::rename(&path, pdir.join(&name)).map_err(|source| {
                            StudyError::Io {
                                path: path.clone(),
                                source,
                            }
                        })?;
                        Some(name)
                    } else {
                        None
                    };
                    let attempt = Attempt {
                        recording: kept,
                        reason,
                    };
                    attempts = record.attempts;
                    attempts.push(attempt.clone());
                    rerun = Some(attempt);
                }
            }
        }
        let record = SessionRecord {
            format: SESSION_FORMAT.into(),
            participant: participant.to_owned(),
            index: spec.index,
            label: spec.label.clone(),
            condition: spec.condition,
            assistant: spec.assistant.clone(),
            recording: recording_name(&spec),
            status: SessionStatus::Running,
            started: now(),
            ended: None,
            message: None,
            attempts,
        };
        // The sidecar is rewritten now, so the renamed attempt is never lost
        // from it even if the next run dies before `begin`.
        if rerun.is_some() {
            write_record(
                &pdir,
                &SessionRecord {
                    status: SessionStatus::Failed,
                    ..record.clone()
                },
            )?;
        }
        return Ok(NextSession {
            spec,
            record,
            dir: pdir,
            study_dir: dir.to_owned(),
            of,
            rerun,
        });
    }
    Err(StudyError::Finished {
        participant: participant.to_owned(),
        sessions: of,
    })
}

/// How `next` runs a session: where Minecraft is and who plays the person
/// when it is emulated.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Real clients or the emulator.
    pub minecraft: Minecraft,
    /// The emulated person in the study's houses (emulated Minecraft only).
    pub emulated_human: AgentSpec,
    /// The emulated person in the practice round.
    pub practice_human: AgentSpec,
    /// Where Minecraft clients reach this machine.
    pub agent_address: std::net::IpAddr,
    /// How long to wait for Minecraft to start the mission.
    pub start_timeout: Duration,
    /// When the recording is flushed to disk.
    pub fsync: Fsync,
}

/// The env config of a session: the daemon's live game (walking, players
/// kept to the rules), a wrong place costing 1, the person seeing the goal and
/// an assistant only if its spec plans with it.
pub fn env_config(
    study: &Study,
    spec: &SessionSpec,
    assistant: &AgentSpec,
) -> Result<Config, StudyError> {
    let mut players = vec![Player {
        name: Some("human".into()),
        is_human: true,
        goal_visible: true,
    }];
    if !assistant.is_none() {
        players.push(Player {
            name: Some("assistant".into()),
            is_human: false,
            goal_visible: assistant.sees_goal(),
        });
    }
    let mut game = Game::live(players, spec.world_size).with_horizon(study.session.horizon);
    game.randomize_first_episode_length = Some(false);
    game.place_wrong = Some(-1.0);
    if spec.finite_blocks {
        game.blocks = BlockSupply::Palette;
    }
    game.malmo = Some(Malmo {
        action_delay: Some(study.session.step_period_s),
        restrict_players: true,
        use_spectator: false,
    });
    game.config()
        .map_err(|e| StudyError::Design(format!("session {}: {e}", spec.index)))
}

/// Checks that every condition's assistant can play the study's sessions
/// (a heuristic that needs teleportation cannot walk, say), building each
/// scripted one once for the sessions' env. Network agents (`bc:`, `az:`,
/// ...) are left to the session, which loads their models.
pub fn check_assistants(study: &Study) -> Result<(), StudyError> {
    use crate::agents::spec::{AgentFactory, StandardAgents};
    let Some(p) = study.participants.first() else {
        return Ok(());
    };
    let factory = StandardAgents::heuristics_only();
    for spec in plan(study, p).iter().filter(|s| !s.is_practice()) {
        let Some(c) = spec.condition else { continue };
        let assistant = study.conditions[c].spec()?;
        if assistant.is_none() || matches!(assistant, AgentSpec::Network { .. }) {
            continue;
        }
        let config = env_config(study, spec, &assistant)?;
        factory.build(&assistant, 1, &config).map_err(|e| {
            StudyError::Design(format!(
                "{} cannot assist in these sessions: {e}",
                study.conditions[c].assistant
            ))
        })?;
    }
    Ok(())
}

/// The daemon episode of `next`: a `play` episode with the person in seat 0
/// and the condition's assistant (none: alone) in seat 1.
pub fn episode_settings(
    study: &Study,
    next: &NextSession,
    options: &RunOptions,
) -> Result<EpisodeSettings, StudyError> {
    let spec = &next.spec;
    let assistant: AgentSpec = match spec.condition {
        Some(c) => study.conditions[c].spec()?,
        None => AgentSpec::None,
    };
    let config = env_config(study, spec, &assistant)?;
    let emulated = matches!(options.minecraft, Minecraft::Emulated { .. });
    let person = if spec.is_practice() {
        &options.practice_human
    } else {
        &options.emulated_human
    };
    let mut seats = vec![Seat::Person {
        emulated_by: (emulated && !person.is_none()).then(|| EmulatedPerson::Agent(person.clone())),
    }];
    if !assistant.is_none() {
        seats.push(Seat::Agent(assistant));
    }
    let attempt = next.record.attempts.len();
    let episode_id = if attempt == 0 {
        format!("study-{}-s{:02}", next.record.participant, spec.index)
    } else {
        format!(
            "study-{}-s{:02}-try{}",
            next.record.participant,
            spec.index,
            attempt + 1
        )
    };
    Ok(EpisodeSettings {
        mode: Mode::Play,
        config,
        seats,
        seed: spec.seed,
        minecraft: options.minecraft.clone(),
        recording: next.recording(),
        fsync: options.fsync,
        lockstep: LockstepSettings {
            step_period: Duration::from_secs_f64(study.session.step_period_s),
            max_steps: study.session.max_steps,
            ..LockstepSettings::default()
        },
        agent_address: options.agent_address,
        timeouts: Timeouts {
            find_server: options.start_timeout,
            begin: options.start_timeout,
            ..Timeouts::default()
        },
        episode_id,
        start_from: None,
        origin: origin(study, next),
    })
}

/// What the recording's header says of the session it was recorded for: the
/// study (its folder's name, creation time and seed; together they tell one
/// study from another), the participant, the session's index and attempt,
/// its blinded name and its condition as the study file defines it (the
/// assistant spec and its index; `practice` for the practice round). The
/// `participant` and `condition` keys are those `mbag dataset` files
/// episodes under.
fn origin(study: &Study, next: &NextSession) -> serde_json::Map<String, serde_json::Value> {
    let spec = &next.spec;
    let folder = next
        .study_dir
        .canonicalize()
        .unwrap_or_else(|_| next.study_dir.clone());
    let condition = match spec.condition {
        Some(c) => study.conditions[c].assistant.clone(),
        None => "practice".to_owned(),
    };
    let study_id = serde_json::json!({
        "folder": folder.file_name().map(|n| n.to_string_lossy().into_owned()),
        "created": study.created,
        "seed": study.seed,
    });
    [
        ("study", study_id),
        ("participant", next.record.participant.clone().into()),
        ("session", spec.index.into()),
        ("sessions", next.of.into()),
        ("attempt", (next.record.attempts.len() + 1).into()),
        ("label", spec.label.clone().into()),
        ("condition", condition.into()),
        ("condition_index", spec.condition.into()),
        ("goals", spec.goals.clone().into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::design::{Practice, SessionSettings, StudyPlan, Survey};

    fn study(practice: bool) -> Study {
        Study::design(
            StudyPlan {
                conditions: vec![AgentSpec::None, AgentSpec::Oracle],
                goals: vec!["random".into()],
                participants: 2,
                seed: 1,
                practice: practice.then(|| Practice {
                    goals: "tutorial".into(),
                    world_size: None,
                }),
                session: SessionSettings {
                    world_size: None,
                    horizon: 100,
                    max_steps: Some(3),
                    step_period_s: 0.05,
                    finite_blocks: false,
                    houses: None,
                },
                survey: Survey::default(),
            },
            "now".into(),
        )
        .unwrap()
    }

    #[test]
    fn the_practice_comes_first_then_the_order() {
        let s = study(true);
        let p = &s.participants[0];
        let sessions = plan(&s, p);
        assert_eq!(sessions.len(), 3);
        assert!(sessions[0].is_practice());
        assert_eq!(sessions[0].world_size, WorldSize::new(6, 6, 6));
        assert_eq!(sessions[0].slug(), "practice");
        for (i, &c) in p.order.iter().enumerate() {
            assert_eq!(sessions[i + 1].condition, Some(c));
            assert_eq!(sessions[i + 1].label, s.conditions[c].label);
            assert_eq!(sessions[i + 1].index, i + 1);
        }
        assert_eq!(plan(&study(false), p).len(), 2);
    }

    #[test]
    fn an_unfinished_session_is_run_again_and_its_recording_kept() {
        let dir = tempfile::tempdir().unwrap();
        let s = study(false);
        s.create(dir.path()).unwrap();
        let first = next(dir.path(), &s, "p01").unwrap();
        assert_eq!(first.spec.index, 0);
        assert!(first.rerun.is_none());
        first.begin().unwrap();
        // The process dies with half a recording and the sidecar running.
        std::fs::write(first.recording(), "{\"kind\":\"header\"").unwrap();
        let again = next(dir.path(), &s, "p01").unwrap();
        assert_eq!(again.spec.index, 0);
        let rerun = again.rerun.clone().unwrap();
        assert_eq!(
            rerun.recording.as_deref(),
            Some("session-00-".to_owned() + &again.spec.slug() + ".attempt1.jsonl").as_deref()
        );
        assert!(again.dir.join(rerun.recording.unwrap()).exists());
        assert!(!again.recording().exists());
        assert_eq!(again.record.attempts.len(), 1);
        // That run fails before writing anything: a second attempt, no file.
        again.begin().unwrap();
        let failed = again.finish().unwrap();
        assert_eq!(failed.status, SessionStatus::Failed);
        let third = next(dir.path(), &s, "p01").unwrap();
        assert_eq!(third.record.attempts.len(), 2);
        assert_eq!(third.record.attempts[1].recording, None);
        assert!(third.record.attempts[1].reason.contains("no recording"));
        assert!(matches!(
            next(dir.path(), &s, "p99"),
            Err(StudyError::UnknownParticipant { .. })
        ));
    }

    #[test]
    fn session_configs_follow_the_condition() {
        let s = study(true);
        let sessions = plan(&s, &s.participants[0]);
        let alone = env_config(&s, &sessions[0], &AgentSpec::None).unwrap();
        assert_eq!(alone.num_players, 1);
        let with = env_config(&s, &sessions[1], &AgentSpec::Oracle).unwrap();
        assert_eq!(with.num_players, 2);
        assert!(with.players[1].goal_visible);
        assert_eq!(with.world_size, WorldSize::new(11, 10, 10));
    }
}
