//! The manifest: one line per episode of a dataset, `mbag-dataset-manifest/1`.
//!
//! ```text
//! {"kind":"manifest","format":"mbag-dataset-manifest/1","episodes":22}
//! {"kind":"episode","episode_id":"human_alone_p03_...","file":"human_alone_p03_....jsonl",...}
//! ```
//!
//! The first line is the format tag and the number of episode lines; then one
//! [`EpisodeEntry`] per recording, sorted by file. Nothing in it depends on when
//! or where it was written (no timestamps, paths relative to the dataset's
//! root), so indexing the same files twice gives the same bytes and a manifest
//! can be kept under version control beside the data.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{DatasetError, relative_name};
use crate::jsonl::Float;
use crate::recording::header::{Controller, Header, Role, SourceKind, hex};
use crate::recording::stats::EpisodeStats;
use crate::recording::{EndReason, Recording, RecordingError};

/// The format tag on a manifest's first line.
pub const MANIFEST_FORMAT: &str = "mbag-dataset-manifest/1";

/// The manifest's name inside the dataset's folder, where `mbag dataset`
/// commands look for it unless told otherwise.
pub const MANIFEST_FILE: &str = "manifest.jsonl";

/// Keys of a header's `source.origin` naming the experimental condition, in
/// the order they are tried (`split` is the converted human data's name for it).
const CONDITION_KEYS: [&str; 2] = ["condition", "split"];
/// Keys of `source.origin` naming the participant (the converted human data has
/// `participant_id`).
const PARTICIPANT_KEYS: [&str; 2] = ["participant", "participant_id"];
/// Keys of `source.origin` naming the goal (the human data's `house_id`).
const GOAL_NAME_KEYS: [&str; 4] = ["goal", "goal_name", "house", "house_id"];

/// How an episode's file ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeEnd {
    /// The footer says the env ended it (goal completed or horizon).
    Done,
    /// The footer says it was stopped on purpose (a step limit, the end of a
    /// source episode), or the file has no footer and ends in a partial line
    /// (its writer was killed mid-write: see [`EpisodeEntry::cut_line`]).
    Truncated,
    /// The footer says an error or an operator stopped it.
    Aborted,
    /// No footer, and the last line is whole: the writer stopped between steps.
    Unfinished,
}

impl EpisodeEnd {
    /// The name the manifest writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Truncated => "truncated",
            Self::Aborted => "aborted",
            Self::Unfinished => "unfinished",
        }
    }
}

/// The goal an episode builds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GoalRef {
    /// Lower-case hex SHA-256 of the goal grid: the world size, then the block
    /// ids and block states as the header stores them. Equal goals have equal
    /// hashes whatever the file, so it groups episodes of one house.
    pub sha256: String,
    /// The source's name for the goal (`source.origin`'s `goal`, `goal_name`,
    /// `house` or `house_id`), when it has one.
    pub name: Option<String>,
}

impl GoalRef {
    /// The goal as tables show it: the hash's first 12 digits, then the name.
    pub fn label(&self) -> String {
        let short = &self.sha256[..self.sha256.len().min(12)];
        match &self.name {
            Some(name) => format!("{short} {name}"),
            None => short.to_owned(),
        }
    }
}

/// One seat of an episode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// Human or assistant.
    pub role: Role,
    /// Person or agent.
    pub controller: Controller,
    /// The agent spec, for agents.
    pub agent: Option<String>,
}

/// A model file an agent loaded, pinned by content.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The seat whose agent loaded it.
    pub player: usize,
    /// The path as the agent spec gave it.
    pub path: String,
    /// Lower-case hex SHA-256 of the file.
    pub sha256: String,
}

/// One player's attempted actions, by type (the six moves together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCounts {
    /// PLACE_BLOCK.
    pub place: u64,
    /// BREAK_BLOCK.
    #[serde(rename = "break")]
    pub break_: u64,
    /// The six MOVE types.
    #[serde(rename = "move")]
    pub moves: u64,
    /// GIVE_BLOCK.
    pub give: u64,
    /// NOOP (and unknown types, which the env treats as NOOPs).
    pub noop: u64,
}

impl ActionCounts {
    /// Counts by type id (0 NOOP ... 9 GIVE), as [`EpisodeStats::actions`] has them.
    pub fn from_type_counts(by_type: &[u64; 10]) -> Self {
        Self {
            place: by_type[1],
            break_: by_type[2],
            moves: by_type[3..9].iter().sum(),
            give: by_type[9],
            noop: by_type[0],
        }
    }

    /// Adds another player's or episode's counts.
    pub fn add(&mut self, other: &Self) {
        self.place += other.place;
        self.break_ += other.break_;
        self.moves += other.moves;
        self.give += other.give;
        self.noop += other.noop;
    }
}

/// Chat messages by intent flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatCounts {
    /// Approval.
    pub accept: u64,
    /// Disapproval.
    pub reject: u64,
    /// Questions.
    pub inquiry: u64,
    /// Nothing for the assistant.
    pub none: u64,
}

impl ChatCounts {
    /// Every message.
    pub fn total(&self) -> u64 {
        self.accept + self.reject + self.inquiry + self.none
    }

    /// Adds another player's or episode's counts.
    pub fn add(&mut self, other: &Self) {
        self.accept += other.accept;
        self.reject += other.reject;
        self.inquiry += other.inquiry;
        self.none += other.none;
    }
}

/// What the manifest knows about one episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeEntry {
    /// The header's episode id.
    pub episode_id: String,
    /// The file, relative to the dataset's root, `/`-separated.
    pub file: String,
    /// The file's size on disk in bytes.
    pub bytes: u64,
    /// How the episode came about.
    pub source: SourceKind,
    /// The `mbag` version that wrote the file.
    pub mbag_version: String,
    /// When the file was created (the header's RFC 3339 time).
    pub created: String,
    /// The goal.
    pub goal: GoalRef,
    /// The experimental condition: `source.origin`'s `condition` (or the
    /// converted data's `split`) when present, else the seats as
    /// `HUMAN with ASSISTANT` or `HUMAN alone`, each a person or an agent spec.
    pub condition: String,
    /// The participant (`source.origin`'s `participant` or `participant_id`),
    /// when the source names one.
    pub participant: Option<String>,
    /// The seats, by player index.
    pub players: Vec<Seat>,
    /// Every model file the agents loaded, with its hash.
    pub models: Vec<ModelEntry>,
    /// Wall-clock time of the first timed step, seconds since the Unix epoch.
    pub first_wall: Option<f64>,
    /// Wall-clock time of the last timed step.
    pub last_wall: Option<f64>,
    /// `last_wall - first_wall`: the episode's length in seconds.
    pub duration_s: Option<f64>,
    /// Complete step lines.
    pub steps: u64,
    /// How the file ends.
    pub end: EpisodeEnd,
    /// The 1-based line where the file is cut mid-line, if it is.
    pub cut_line: Option<usize>,
    /// Whether the world equalled the goal at the end (the footer's
    /// `goal_completed`; for a file without a footer, whether the last recorded
    /// goal percentage is 100%; `None` when neither is known).
    pub goal_completed: Option<bool>,
    /// The human's goal percentage (0..1) after the last step, if recorded (NaN
    /// when the goal was complete at reset).
    pub final_goal_percentage: Option<Float>,
    /// Attempted actions, by player.
    pub actions: Vec<ActionCounts>,
    /// Chat messages said, by player.
    pub chat: Vec<ChatCounts>,
    /// Lower-case hex SHA-256 of the step lines, each serialised again and
    /// followed by a newline: equal for the same steps whatever the header,
    /// the whitespace or the compression, so copies under other names show.
    pub steps_sha256: String,
}

impl EpisodeEntry {
    /// Reads the recording at `path` (below `root`) and summarises it; the
    /// recording is returned too for callers that go on to replay it.
    pub fn read(root: &Path, path: &Path) -> Result<(Self, Recording), RecordingError> {
        let rec = Recording::read(path)?;
        let bytes = std::fs::metadata(path)
            .map_err(|source| RecordingError::Io {
                path: path.to_owned(),
                source,
            })?
            .len();
        Ok((Self::of(&rec, relative_name(root, path), bytes), rec))
    }

    /// Summarises a recording read from `file` (relative to the dataset's root)
    /// of `bytes` bytes.
    pub fn of(rec: &Recording, file: String, bytes: u64) -> Self {
        let h = &rec.header;
        let stats = EpisodeStats::of(rec);
        let end = match (&rec.footer, &rec.tail) {
            (Some(f), _) => match f.end.reason {
                EndReason::Done => EpisodeEnd::Done,
                EndReason::Truncated => EpisodeEnd::Truncated,
                EndReason::Aborted => EpisodeEnd::Aborted,
            },
            (None, Some(_)) => EpisodeEnd::Truncated,
            (None, None) => EpisodeEnd::Unfinished,
        };
        let final_goal_percentage = stats.goal_percentage;
        let goal_completed = match &rec.footer {
            Some(f) => Some(f.goal_completed),
            None => final_goal_percentage
                .filter(|p| !p.is_nan())
                .map(|p| p >= 1.0),
        };
        let first_wall = rec.steps.iter().find_map(|s| s.wall);
        let last_wall = rec.steps.iter().rev().find_map(|s| s.wall);
        let mut models: Vec<ModelEntry> = h
            .players
            .iter()
            .flat_map(|p| {
                p.models.iter().map(|m| ModelEntry {
                    player: p.index,
                    path: m.path.clone(),
                    sha256: m.sha256.clone(),
                })
            })
            .collect();
        models.sort();
        Self {
            episode_id: h.episode_id.clone(),
            file,
            bytes,
            source: h.source.kind,
            mbag_version: h.mbag_version.clone(),
            created: h.created.clone(),
            goal: GoalRef {
                sha256: goal_hash(h),
                name: origin_text(h, &GOAL_NAME_KEYS),
            },
            condition: condition(h),
            participant: origin_text(h, &PARTICIPANT_KEYS),
            players: h
                .players
                .iter()
                .map(|p| Seat {
                    role: p.role,
                    controller: p.controller,
                    agent: p.agent.clone(),
                })
                .collect(),
            models,
            first_wall,
            last_wall,
            duration_s: stats.duration_s,
            steps: rec.steps.len() as u64,
            end,
            cut_line: rec.tail.as_ref().map(|t| t.line),
            goal_completed,
            final_goal_percentage: final_goal_percentage.map(Float),
            actions: stats
                .actions
                .iter()
                .map(ActionCounts::from_type_counts)
                .collect(),
            chat: stats
                .chat
                .iter()
                .map(|c| ChatCounts {
                    accept: c[0],
                    reject: c[1],
                    inquiry: c[2],
                    none: c[3],
                })
                .collect(),
            steps_sha256: steps_hash(rec),
        }
    }

    /// Whether the episode built its goal (see [`EpisodeEntry::goal_completed`]).
    /// An episode the env ended by its horizon is not a success, as a BEDD
    /// demonstration that timed out is not.
    pub fn succeeded(&self) -> bool {
        self.goal_completed == Some(true)
    }

    /// When the episode started: its first timed step, else the file's creation
    /// time (for files without step times).
    pub fn start_s(&self) -> Option<f64> {
        self.first_wall
            .or_else(|| crate::recording::codec::parse_iso_utc(&self.created))
    }

    /// When the episode's last step happened, else when it started.
    pub fn end_s(&self) -> Option<f64> {
        self.last_wall.or_else(|| self.start_s())
    }

    /// The players' counts in one role, summed.
    pub fn role_actions(&self, role: Role) -> Option<ActionCounts> {
        let mut sum = None::<ActionCounts>;
        for (seat, counts) in self.players.iter().zip(&self.actions) {
            if seat.role == role {
                sum.get_or_insert_with(ActionCounts::default).add(counts);
            }
        }
        sum
    }

    /// Every player's chat messages, summed.
    pub fn chat_total(&self) -> ChatCounts {
        let mut sum = ChatCounts::default();
        for c in &self.chat {
            sum.add(c);
        }
        sum
    }
}

/// A string or number under the first of `keys` in the header's
/// `source.origin` (numbers written as JSON writes them).
fn origin_text(h: &Header, keys: &[&str]) -> Option<String> {
    let origin = h.source.origin.as_ref()?;
    keys.iter().find_map(|k| match origin.get(k)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// The episode's condition (see [`EpisodeEntry::condition`]).
fn condition(h: &Header) -> String {
    if let Some(c) = origin_text(h, &CONDITION_KEYS) {
        return c;
    }
    let seats = |role: Role| -> Vec<String> {
        h.players
            .iter()
            .filter(|p| p.role == role)
            .map(|p| match p.controller {
                Controller::Person => "person".to_owned(),
                Controller::Agent => p.agent.clone().unwrap_or_else(|| "agent".into()),
            })
            .collect()
    };
    let humans = seats(Role::Human);
    let assistants = seats(Role::Assistant);
    let human = if humans.is_empty() {
        "nobody".to_owned()
    } else {
        humans.join(" + ")
    };
    if assistants.is_empty() {
        format!("{human} alone")
    } else {
        format!("{human} with {}", assistants.join(" + "))
    }
}

/// SHA-256 of the goal grid (see [`GoalRef::sha256`]).
fn goal_hash(h: &Header) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"mbag-goal/1\n");
    // The same bytes in another shape are another goal.
    hasher.update(
        h.config
            .get("world_size")
            .map_or(String::new(), Value::to_string),
    );
    hasher.update(b"\n");
    hasher.update((h.goal.blocks.0.len() as u64).to_le_bytes());
    hasher.update(&h.goal.blocks.0);
    hasher.update(&h.goal.block_states.0);
    hex(&hasher.finalize())
}

/// SHA-256 of the step lines (see [`EpisodeEntry::steps_sha256`]).
fn steps_hash(rec: &Recording) -> String {
    let mut hasher = Sha256::new();
    for s in &rec.steps {
        // A step that was read serialises again; nothing here can fail.
        let line = serde_json::to_vec(s).unwrap_or_default();
        hasher.update(&line);
        hasher.update(b"\n");
    }
    hex(&hasher.finalize())
}

/// A line's kind, read before the rest of it.
#[derive(Deserialize)]
struct KindOnly {
    kind: Option<String>,
}

/// The format line.
#[derive(Serialize, Deserialize)]
struct FormatLine {
    kind: String,
    format: String,
    episodes: usize,
}

/// An episode line as written: the entry after its kind.
#[derive(Serialize)]
struct EpisodeLine<'a> {
    kind: &'static str,
    #[serde(flatten)]
    entry: &'a EpisodeEntry,
}

/// Parses one manifest line, naming the field that is wrong.
fn parse<T: serde::de::DeserializeOwned>(
    path: &Path,
    line: usize,
    text: &str,
) -> Result<T, DatasetError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        DatasetError::Manifest {
            path: path.to_owned(),
            line,
            message: format!("field `{field}`: {}", e.into_inner()),
        }
    })
}

/// A dataset's episodes, sorted by file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// One entry per recording.
    pub episodes: Vec<EpisodeEntry>,
}

impl Manifest {
    /// A manifest of `episodes`, sorted by file (then episode id), which makes
    /// it the same whatever order the files were read in.
    pub fn new(mut episodes: Vec<EpisodeEntry>) -> Self {
        episodes.sort_by(|a, b| {
            a.file
                .cmp(&b.file)
                .then_with(|| a.episode_id.cmp(&b.episode_id))
        });
        Self { episodes }
    }

    /// The manifest as JSON Lines.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        let head = FormatLine {
            kind: "manifest".to_owned(),
            format: MANIFEST_FORMAT.to_owned(),
            episodes: self.episodes.len(),
        };
        // Serialising plain data to a string cannot fail.
        out.push_str(&serde_json::to_string(&head).unwrap_or_default());
        out.push('\n');
        for e in &self.episodes {
            let line = EpisodeLine {
                kind: "episode",
                entry: e,
            };
            out.push_str(&serde_json::to_string(&line).unwrap_or_default());
            out.push('\n');
        }
        out
    }

    /// Writes the manifest to `path`, through a temporary file renamed over it
    /// so a reader never sees half a manifest.
    pub fn write(&self, path: &Path) -> Result<(), DatasetError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, self.to_jsonl()).map_err(DatasetError::io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(DatasetError::io(path))
    }

    /// Reads a manifest written by [`Manifest::write`].
    pub fn read(path: &Path) -> Result<Self, DatasetError> {
        let text = std::fs::read_to_string(path).map_err(DatasetError::io(path))?;
        Self::parse(path, &text)
    }

    /// Parses a manifest's text (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, DatasetError> {
        let bad = |line: usize, message: String| DatasetError::Manifest {
            path: path.to_owned(),
            line,
            message,
        };
        let mut declared = None;
        let mut episodes = Vec::new();
        for (i, text) in text.lines().enumerate() {
            let line = i + 1;
            if text.trim().is_empty() {
                continue;
            }
            let kind = parse::<KindOnly>(path, line, text)?.kind;
            match kind.as_deref() {
                Some("manifest") if declared.is_none() && line == 1 => {
                    let head: FormatLine = parse(path, line, text)?;
                    if head.format != MANIFEST_FORMAT {
                        return Err(bad(
                            line,
                            format!("format {:?} is not {MANIFEST_FORMAT:?}", head.format),
                        ));
                    }
                    declared = Some(head.episodes);
                }
                Some("manifest") => {
                    return Err(bad(line, "the format line must be line 1, once".into()));
                }
                Some("episode") if declared.is_none() => {
                    return Err(bad(line, "line 1 is not the format line".into()));
                }
                Some("episode") => episodes.push(parse::<EpisodeEntry>(path, line, text)?),
                other => {
                    return Err(bad(
                        line,
                        format!("field `kind`: {other:?} is neither \"manifest\" nor \"episode\""),
                    ));
                }
            }
        }
        match declared {
            None => Err(bad(1, "empty: no format line".into())),
            Some(n) if n != episodes.len() => Err(bad(
                1,
                format!(
                    "says {n} episodes, lists {} (a manifest cut short?)",
                    episodes.len()
                ),
            )),
            Some(_) => Ok(Self { episodes }),
        }
    }

    /// The entry of a file (relative name), if listed.
    pub fn entry(&self, file: &str) -> Option<&EpisodeEntry> {
        self.episodes.iter().find(|e| e.file == file)
    }
}

/// A file that could not be indexed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The file, relative to the dataset's root.
    pub file: String,
    /// Why.
    pub error: String,
}

/// The result of indexing a folder.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// The readable recordings.
    pub manifest: Manifest,
    /// The files that could not be read (they are left out of the manifest).
    pub unreadable: Vec<Unreadable>,
}

/// Indexes `files` (below `root`), one at a time; `on_file` hears of each one
/// after it is read (for progress).
pub fn index(root: &Path, files: &[PathBuf], on_file: &mut dyn FnMut(&Path)) -> Index {
    let mut episodes = Vec::with_capacity(files.len());
    let mut unreadable = Vec::new();
    for path in files {
        match EpisodeEntry::read(root, path) {
            Ok((entry, _)) => episodes.push(entry),
            Err(e) => unreadable.push(Unreadable {
                file: relative_name(root, path),
                error: e.to_string(),
            }),
        }
        on_file(path);
    }
    Index {
        manifest: Manifest::new(episodes),
        unreadable,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hand-made entry: `condition`, a 6x6x6 goal named by `goal`, one human
    /// seat (and an assistant agent when `assisted`).
    pub(crate) fn entry(file: &str, condition: &str, goal: &str) -> EpisodeEntry {
        EpisodeEntry {
            episode_id: file.trim_end_matches(".jsonl").to_owned(),
            file: file.to_owned(),
            bytes: 100,
            source: SourceKind::Converted,
            mbag_version: "0.1.0".into(),
            created: "2023-07-18T22:41:38.003Z".into(),
            goal: GoalRef {
                sha256: format!("{goal:0<64}"),
                name: None,
            },
            condition: condition.to_owned(),
            participant: Some("1".into()),
            players: vec![Seat {
                role: Role::Human,
                controller: Controller::Person,
                agent: None,
            }],
            models: Vec::new(),
            first_wall: Some(1_689_720_098.0),
            last_wall: Some(1_689_720_158.0),
            duration_s: Some(60.0),
            steps: 100,
            end: EpisodeEnd::Truncated,
            cut_line: None,
            goal_completed: Some(true),
            final_goal_percentage: Some(Float(1.0)),
            actions: vec![ActionCounts {
                place: 30,
                break_: 5,
                moves: 50,
                give: 0,
                noop: 15,
            }],
            chat: vec![ChatCounts::default()],
            steps_sha256: format!("{file:0>64}"),
        }
    }

    #[test]
    fn a_manifest_round_trips_through_its_text() {
        let mut odd = entry("b/odd.jsonl", "person alone", "ab");
        odd.final_goal_percentage = Some(Float(f64::NAN));
        odd.first_wall = None;
        odd.last_wall = None;
        odd.duration_s = None;
        odd.participant = None;
        odd.end = EpisodeEnd::Unfinished;
        odd.goal_completed = None;
        odd.goal.name = Some("house 7".into());
        odd.models = vec![ModelEntry {
            player: 1,
            path: "models/a.json".into(),
            sha256: "00ff".into(),
        }];
        let manifest = Manifest::new(vec![odd, entry("a.jsonl", "tutorial", "cd")]);
        assert_eq!(manifest.episodes[0].file, "a.jsonl", "sorted by file");
        let text = manifest.to_jsonl();
        assert!(text.starts_with(
            "{\"kind\":\"manifest\",\"format\":\"mbag-dataset-manifest/1\",\"episodes\":2}\n"
        ));
        assert!(text.contains("\"final_goal_percentage\":\"NaN\""));
        assert!(text.contains("\"break\":5"));
        let back = Manifest::parse(Path::new("m.jsonl"), &text).unwrap();
        assert_eq!(back, manifest);
        assert_eq!(back.to_jsonl(), text);
    }

    #[test]
    fn bad_manifests_name_the_line() {
        let good = Manifest::new(vec![entry("a.jsonl", "tutorial", "cd")]).to_jsonl();
        let cut: String = good.lines().take(1).map(|l| format!("{l}\n")).collect();
        let e = Manifest::parse(Path::new("m"), &cut)
            .unwrap_err()
            .to_string();
        assert!(e.contains("says 1 episodes, lists 0"), "{e}");
        let other = good.replace("mbag-dataset-manifest/1", "mbag-dataset-manifest/9");
        let e = Manifest::parse(Path::new("m"), &other)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m:1:") && e.contains("not"), "{e}");
        let broken = good.replace("\"steps\":100", "\"steps\":\"many\"");
        let e = Manifest::parse(Path::new("m"), &broken)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m:2:") && e.contains("steps"), "{e}");
        let headless: String = good.lines().skip(1).collect();
        let e = Manifest::parse(Path::new("m"), &headless)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1 is not the format line"), "{e}");
    }

    #[test]
    fn the_sample_recordings_are_summarised() {
        let root = Path::new("recordings/samples");
        let files = super::super::recording_files(root, &[]).unwrap();
        let index = index(root, &files, &mut |_| {});
        assert!(index.unreadable.is_empty(), "{:?}", index.unreadable);
        let by_file = |f: &str| index.manifest.entry(f).unwrap().clone();

        let tutorial = by_file("tutorial_p01_2023-07-18_15-41-19.jsonl.gz");
        assert_eq!(tutorial.condition, "tutorial");
        assert_eq!(tutorial.participant.as_deref(), Some("1"));
        assert_eq!(tutorial.goal.name, None);
        assert_eq!(tutorial.steps, 220);
        assert_eq!(tutorial.end, EpisodeEnd::Truncated);
        assert_eq!(tutorial.cut_line, None);
        assert!(tutorial.succeeded());
        assert!(tutorial.duration_s.unwrap() > 0.0);

        let full = by_file("simulated_lowest_block_pair_seed3.jsonl");
        assert_eq!(
            full.condition,
            "heuristic:lowest_block with heuristic:lowest_block"
        );
        assert_eq!(full.participant, None);
        assert!(full.duration_s.unwrap() < 10.0, "{:?}", full.duration_s);
        assert_eq!(full.steps, 40);

        let cut = by_file("simulated_seed3_killed_mid_write.jsonl");
        assert_eq!((cut.steps, cut.end), (26, EpisodeEnd::Truncated));
        assert_eq!(cut.cut_line, Some(28));
        assert_eq!(cut.episode_id, full.episode_id);
        assert_eq!(cut.goal, full.goal);
        assert_ne!(cut.steps_sha256, full.steps_sha256);
    }
}
