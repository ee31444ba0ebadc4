//! Survey answers: one JSON Lines file per participant,
//! `DIR/participants/P/survey.jsonl`, one [`Answer`] per line.
//!
//! Every save rewrites the whole file under a temporary name, syncs it and
//! renames it over the old one, so a crash leaves either the old answers or
//! the new ones, never half a line. Answering a session again adds a line;
//! the last answer of a session is the one that counts (earlier ones stay, as
//! a record of the change).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StudyError;
use super::design::Study;
use super::session::{self, SessionStatus};

/// The answers file's name in a participant's folder.
pub const SURVEY_FILE: &str = "survey.jsonl";
/// The longest free-text comment kept, in characters.
pub const MAX_COMMENT: usize = 10_000;

/// One participant's answers about one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The participant.
    pub participant: String,
    /// The session's index.
    pub session: usize,
    /// The blinded name the participant rated.
    pub label: String,
    /// Per survey item id, the point chosen (1..=scale).
    pub scores: BTreeMap<String, u8>,
    /// Free text.
    #[serde(default)]
    pub comment: String,
    /// When it was given (RFC 3339, UTC).
    pub submitted: String,
}

/// What a page submits: the session and the points, before checking.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// The session's index.
    pub session: usize,
    /// Per item id, the point chosen.
    pub scores: BTreeMap<String, u8>,
    /// Free text.
    #[serde(default)]
    pub comment: String,
}

/// A session as the survey page lists it: blinded, never the condition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SurveySession {
    /// The session's index.
    pub index: usize,
    /// Its blinded name.
    pub label: String,
    /// The last answer given, if any.
    pub answer: Option<Answer>,
}

/// The file of `participant`'s answers.
pub fn path(dir: &Path, participant: &str) -> PathBuf {
    session::participant_dir(dir, participant).join(SURVEY_FILE)
}

/// Every answer in the file, oldest first (none if there is no file yet).
pub fn read_answers(dir: &Path, participant: &str) -> Result<Vec<Answer>, StudyError> {
    let path = path(dir, participant);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(StudyError::Io { path, source }),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| StudyError::Parse {
                path: path.clone(),
                message: format!("line {}: {e}", i + 1),
            })
        })
        .collect()
}

/// Per session index, the last answer.
pub fn latest(answers: &[Answer]) -> BTreeMap<usize, &Answer> {
    let mut out = BTreeMap::new();
    for a in answers {
        out.insert(a.session, a);
    }
    out
}

/// The sessions `participant` can rate: complete ones with an assistant
/// condition (the practice is not rated), with their last answers.
pub fn sessions(
    dir: &Path,
    study: &Study,
    participant: &str,
) -> Result<Vec<SurveySession>, StudyError> {
    let answers = read_answers(dir, participant)?;
    let last = latest(&answers);
    Ok(session::progress(dir, study, participant)?
        .into_iter()
        .filter(|(spec, record)| {
            !spec.is_practice()
                && record
                    .as_ref()
                    .is_some_and(|r| r.status == SessionStatus::Complete)
        })
        .map(|(spec, _)| SurveySession {
            index: spec.index,
            label: spec.label,
            answer: last.get(&spec.index).map(|a| (*a).clone()),
        })
        .collect())
}

/// Checks `submission` against the study and the participant's completed
/// sessions, and saves it (see the module docs). Returns the answer stored.
pub fn submit(
    dir: &Path,
    study: &Study,
    participant: &str,
    submission: Submission,
) -> Result<Answer, StudyError> {
    let bad = |m: String| Err(StudyError::Answer(m));
    let open = sessions(dir, study, participant)?;
    let Some(session) = open.iter().find(|s| s.index == submission.session) else {
        return bad(format!(
            "session {} is not a completed session of {participant} to rate",
            submission.session
        ));
    };
    for item in &study.survey.items {
        match submission.scores.get(&item.id) {
            None => return bad(format!("no answer to {:?}", item.text)),
            Some(&v) if v < 1 || v > study.survey.scale => {
                return bad(format!(
                    "{}: {v} is not on the 1 to {} scale",
                    item.id, study.survey.scale
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(unknown) = submission
        .scores
        .keys()
        .find(|k| !study.survey.items.iter().any(|i| &&i.id == k))
    {
        return bad(format!("{unknown:?} is not a survey item"));
    }
    if submission.comment.chars().count() > MAX_COMMENT {
        return bad(format!(
            "the comment is longer than {MAX_COMMENT} characters"
        ));
    }
    let answer = Answer {
        participant: participant.to_owned(),
        session: submission.session,
        label: session.label.clone(),
        scores: submission.scores,
        comment: submission.comment,
        submitted: crate::recording::codec::rfc3339_utc(crate::recording::codec::now_unix_s()),
    };
    let mut all = read_answers(dir, participant)?;
    all.push(answer.clone());
    let mut text = String::new();
    for a in &all {
        let line = serde_json::to_string(a).map_err(|e| StudyError::Answer(e.to_string()))?;
        text.push_str(&line);
        text.push('\n');
    }
    super::write_atomically(&path(dir, participant), text.as_bytes())?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::spec::AgentSpec;
    use crate::study::design::{SessionSettings, StudyPlan, Survey};
    use crate::study::session::{SessionRecord, SessionStatus};

    fn setup() -> (tempfile::TempDir, Study) {
        let dir = tempfile::tempdir().unwrap();
        let study = Study::design(
            StudyPlan {
                conditions: vec![AgentSpec::None, AgentSpec::Oracle],
                goals: vec!["random".into()],
                participants: 1,
                seed: 3,
                practice: None,
                session: SessionSettings {
                    world_size: None,
                    horizon: 10,
                    max_steps: None,
                    step_period_s: 0.1,
                    finite_blocks: false,
                    houses: None,
                },
                survey: Survey::default(),
            },
            "now".into(),
        )
        .unwrap();
        study.create(dir.path()).unwrap();
        // Session 0 complete (as `next` + `finish` leave it), session 1 not run.
        let pdir = session::participant_dir(dir.path(), "p01");
        std::fs::create_dir_all(&pdir).unwrap();
        let spec = &session::plan(&study, &study.participants[0])[0];
        let record = SessionRecord {
            format: session::SESSION_FORMAT.into(),
            participant: "p01".into(),
            index: 0,
            label: spec.label.clone(),
            condition: spec.condition,
            assistant: spec.assistant.clone(),
            recording: "x.jsonl".into(),
            status: SessionStatus::Complete,
            started: "now".into(),
            ended: None,
            message: None,
            attempts: Vec::new(),
        };
        std::fs::write(
            pdir.join("session-00.json"),
            serde_json::to_string(&record).unwrap(),
        )
        .unwrap();
        (dir, study)
    }

    fn scores(v: u8) -> BTreeMap<String, u8> {
        Survey::default()
            .items
            .iter()
            .map(|i| (i.id.clone(), v))
            .collect()
    }

    #[test]
    fn answers_are_checked_stored_and_the_last_counts() {
        let (dir, study) = setup();
        let open = sessions(dir.path(), &study, "p01").unwrap();
        assert_eq!(open.len(), 1);
        assert!(open[0].label.starts_with("Assistant "));
        let sub = |session, scores, comment: &str| Submission {
            session,
            scores,
            comment: comment.into(),
        };
        let a = submit(dir.path(), &study, "p01", sub(0, scores(5), "fine")).unwrap();
        assert_eq!(a.label, open[0].label);
        submit(dir.path(), &study, "p01", sub(0, scores(6), "better")).unwrap();
        let all = read_answers(dir.path(), "p01").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(latest(&all)[&0].comment, "better");
        // Not completed, off the scale, missing or unknown items: refused,
        // and nothing written.
        let refused = [
            sub(1, scores(5), ""),
            sub(0, scores(8), ""),
            sub(0, scores(0), ""),
            sub(0, BTreeMap::new(), ""),
            sub(
                0,
                {
                    let mut s = scores(3);
                    s.insert("extra".into(), 3);
                    s
                },
                "",
            ),
        ];
        for s in refused {
            assert!(matches!(
                submit(dir.path(), &study, "p01", s),
                Err(StudyError::Answer(_))
            ));
        }
        assert_eq!(read_answers(dir.path(), "p01").unwrap().len(), 2);
    }
}
