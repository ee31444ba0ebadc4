//! Checking a dataset: every recording read and replayed, then what only shows
//! across files (duplicates, orphans, split episodes), each problem naming its
//! file(s).
//!
//! BEDD's demonstrations were cut into five-minute files by the recorder, and
//! telling which files make one episode took a heuristic (appendix C.2.1). A
//! recording here is cut only by a crash, so the same question has a sharper
//! answer: an episode that did not end by itself, followed in time by one of the
//! same participant, goal and condition, is one episode in several files.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::manifest::{EpisodeEnd, EpisodeEntry, Manifest};
use super::{DatasetError, recording_files, relative_name};
use crate::recording::verify;

/// How `validate` decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValidateSettings {
    /// Longest pause in seconds between the last step of one file and the first
    /// step of the next for the two to count as one split episode.
    pub split_gap_s: f64,
    /// Whether to replay every recording through the simulator (the check that
    /// costs time; without it only reading and the cross-file checks run).
    pub replay: bool,
}

impl Default for ValidateSettings {
    /// Ten minutes of gap; replay on.
    fn default() -> Self {
        Self {
            split_gap_s: 600.0,
            replay: true,
        }
    }
}

/// Something wrong with a dataset, naming the file(s) concerned.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Problem {
    /// There is no manifest where one was looked for.
    NoManifest {
        /// Where it was looked for.
        manifest: String,
    },
    /// The manifest cannot be read.
    BadManifest {
        /// The manifest.
        manifest: String,
        /// Why.
        error: String,
    },
    /// A file is not a readable recording.
    Unreadable {
        /// The file, relative to the dataset's root.
        file: String,
        /// Why.
        error: String,
    },
    /// A recording reads but cannot be replayed (a bad config, an impossible
    /// action).
    NotReplayable {
        /// The file.
        file: String,
        /// Why.
        error: String,
    },
    /// The simulator disagrees with what a recording says.
    Mismatch {
        /// The file.
        file: String,
        /// Mismatches found (at most 50 are counted).
        mismatches: usize,
        /// The first, with its line.
        first: String,
    },
    /// A file ends in a partial line: its writer was killed mid-write.
    Cut {
        /// The file.
        file: String,
        /// The 1-based line that is cut.
        line: usize,
        /// The complete steps before it.
        steps: u64,
    },
    /// A file has no footer though its last line is whole: its writer stopped
    /// between steps.
    Unfinished {
        /// The file.
        file: String,
        /// The steps it holds.
        steps: u64,
    },
    /// One episode id in several files.
    DuplicateId {
        /// The id.
        episode_id: String,
        /// The files, sorted.
        files: Vec<String>,
    },
    /// The same step lines in several files (a copy under another name, or
    /// compressed beside the original).
    DuplicateContent {
        /// The files, sorted.
        files: Vec<String>,
    },
    /// A recording the manifest does not list.
    Orphan {
        /// The file.
        file: String,
    },
    /// A manifest entry whose file is not there.
    Missing {
        /// The file the manifest names.
        file: String,
        /// The episode it says the file holds.
        episode_id: String,
    },
    /// A file that changed since the manifest was written.
    Stale {
        /// The file.
        file: String,
        /// The manifest fields that no longer match, comma-separated.
        fields: String,
    },
    /// One episode cut into several files: the same participant, goal and
    /// condition, consecutive in time, every file but the last not ended by
    /// the env.
    Split {
        /// The participant.
        participant: String,
        /// The goal (see `GoalRef::label`).
        goal: String,
        /// The files in time order.
        files: Vec<String>,
    },
}

impl Problem {
    /// The problem's kind as the JSON report names it (`duplicate_id`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoManifest { .. } => "no_manifest",
            Self::BadManifest { .. } => "bad_manifest",
            Self::Unreadable { .. } => "unreadable",
            Self::NotReplayable { .. } => "not_replayable",
            Self::Mismatch { .. } => "mismatch",
            Self::Cut { .. } => "cut",
            Self::Unfinished { .. } => "unfinished",
            Self::DuplicateId { .. } => "duplicate_id",
            Self::DuplicateContent { .. } => "duplicate_content",
            Self::Orphan { .. } => "orphan",
            Self::Missing { .. } => "missing",
            Self::Stale { .. } => "stale",
            Self::Split { .. } => "split",
        }
    }

    /// The files the problem concerns (the manifest, for manifest problems).
    pub fn files(&self) -> Vec<&str> {
        match self {
            Self::NoManifest { manifest } | Self::BadManifest { manifest, .. } => vec![manifest],
            Self::Unreadable { file, .. }
            | Self::NotReplayable { file, .. }
            | Self::Mismatch { file, .. }
            | Self::Cut { file, .. }
            | Self::Unfinished { file, .. }
            | Self::Orphan { file }
            | Self::Missing { file, .. }
            | Self::Stale { file, .. } => vec![file],
            Self::DuplicateId { files, .. }
            | Self::DuplicateContent { files }
            | Self::Split { files, .. } => files.iter().map(String::as_str).collect(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoManifest { manifest } => write!(
                f,
                "no manifest at {manifest} (`mbag dataset index` writes one), so orphans were not looked for"
            ),
            Self::BadManifest { manifest, error } => {
                write!(f, "the manifest {manifest} cannot be read: {error}")
            }
            Self::Unreadable { file, error } => write!(f, "{file}: unreadable: {error}"),
            Self::NotReplayable { file, error } => {
                write!(f, "{file}: cannot be replayed: {error}")
            }
            Self::Mismatch {
                file,
                mismatches,
                first,
            } => write!(
                f,
                "{file}: the replay disagrees ({mismatches} mismatches), first at {first}"
            ),
            Self::Cut { file, line, steps } => write!(
                f,
                "{file}: cut mid-line at line {line} (its writer was killed), {steps} complete steps"
            ),
            Self::Unfinished { file, steps } => write!(
                f,
                "{file}: no footer (its writer stopped after {steps} steps)"
            ),
            Self::DuplicateId { episode_id, files } => write!(
                f,
                "episode id {episode_id:?} in {} files: {}",
                files.len(),
                files.join(", ")
            ),
            Self::DuplicateContent { files } => write!(
                f,
                "the same steps in {} files: {}",
                files.len(),
                files.join(", ")
            ),
            Self::Orphan { file } => write!(f, "{file}: not in the manifest"),
            Self::Missing { file, episode_id } => write!(
                f,
                "{file}: listed in the manifest (episode {episode_id:?}) but not there"
            ),
            Self::Stale { file, fields } => write!(
                f,
                "{file}: changed since the manifest was written ({fields} differ)"
            ),
            Self::Split {
                participant,
                goal,
                files,
            } => write!(
                f,
                "one episode split over {} files (participant {participant}, goal {goal}): {}",
                files.len(),
                files.join(", ")
            ),
        }
    }
}

/// What `validate` found.
#[derive(Clone, Debug)]
pub struct ValidateReport {
    /// Recording files looked at (readable or not).
    pub files: usize,
    /// Steps replayed through the simulator.
    pub steps_replayed: usize,
    /// Everything wrong, per file in file order, then across files.
    pub problems: Vec<Problem>,
    /// The readable recordings as they are now.
    pub manifest: Manifest,
}

impl ValidateReport {
    /// Whether nothing is wrong.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks the dataset under `dir` against the manifest at `manifest_path`
/// (reported as [`Problem::NoManifest`] when there is none). Files are read,
/// replayed and dropped one at a time; `on_file` hears of each one when done.
/// Errors only when the folder cannot be listed.
pub fn validate(
    dir: &Path,
    manifest_path: &Path,
    settings: &ValidateSettings,
    on_file: &mut dyn FnMut(&Path),
) -> Result<ValidateReport, DatasetError> {
    // The default manifest is never a recording, even when another is checked.
    let files = recording_files(dir, &[manifest_path.to_owned(), default_manifest(dir)])?;
    let mut problems = Vec::new();
    let mut entries = Vec::with_capacity(files.len());
    let mut steps_replayed = 0;
    for path in &files {
        let file = relative_name(dir, path);
        match EpisodeEntry::read(dir, path) {
            Err(e) => problems.push(Problem::Unreadable {
                file,
                error: e.to_string(),
            }),
            Ok((entry, rec)) => {
                if settings.replay {
                    match verify(&rec, &mut |_, _| {}) {
                        Ok(report) => {
                            steps_replayed += report.steps_replayed;
                            if let Some(first) = report.mismatches.first() {
                                problems.push(Problem::Mismatch {
                                    file: file.clone(),
                                    mismatches: report.mismatches.len(),
                                    first: first.to_string(),
                                });
                            }
                        }
                        Err(e) => problems.push(Problem::NotReplayable {
                            file: file.clone(),
                            error: e.to_string(),
                        }),
                    }
                }
                if let Some(line) = entry.cut_line {
                    problems.push(Problem::Cut {
                        file,
                        line,
                        steps: entry.steps,
                    });
                } else if entry.end == EpisodeEnd::Unfinished {
                    problems.push(Problem::Unfinished {
                        file,
                        steps: entry.steps,
                    });
                }
                entries.push(entry);
            }
        }
        on_file(path);
    }
    problems.extend(find_duplicates(&entries));
    let on_disk: Vec<String> = files.iter().map(|p| relative_name(dir, p)).collect();
    problems.extend(check_manifest(manifest_path, &on_disk, &entries));
    problems.extend(find_splits(&entries, settings.split_gap_s));
    Ok(ValidateReport {
        files: files.len(),
        steps_replayed,
        problems,
        manifest: Manifest::new(entries),
    })
}

/// Episode ids in several files, and the same steps in several files. Files
/// without steps are left out of the second check: every empty recording has
/// the same (empty) steps.
pub fn find_duplicates(entries: &[EpisodeEntry]) -> Vec<Problem> {
    let mut by_id: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut by_steps: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for e in entries {
        by_id.entry(&e.episode_id).or_default().push(e.file.clone());
        if e.steps > 0 {
            by_steps
                .entry(&e.steps_sha256)
                .or_default()
                .push(e.file.clone());
        }
    }
    let mut out = Vec::new();
    for (id, mut files) in by_id {
        if files.len() > 1 {
            files.sort();
            out.push(Problem::DuplicateId {
                episode_id: id.to_owned(),
                files,
            });
        }
    }
    let mut copies: Vec<Vec<String>> = by_steps
        .into_values()
        .filter(|f| f.len() > 1)
        .map(|mut f| {
            f.sort();
            f
        })
        .collect();
    copies.sort();
    out.extend(
        copies
            .into_iter()
            .map(|files| Problem::DuplicateContent { files }),
    );
    out
}

/// The manifest against the files: files it does not list, entries whose file
/// is gone, entries that no longer describe their file.
fn check_manifest(manifest: &Path, on_disk: &[String], entries: &[EpisodeEntry]) -> Vec<Problem> {
    let name = manifest.display().to_string();
    if !manifest.exists() {
        return vec![Problem::NoManifest { manifest: name }];
    }
    let listed = match Manifest::read(manifest) {
        Ok(m) => m,
        Err(e) => {
            return vec![Problem::BadManifest {
                manifest: name,
                error: e.to_string(),
            }];
        }
    };
    let mut out = Vec::new();
    for e in &listed.episodes {
        if !on_disk.contains(&e.file) {
            out.push(Problem::Missing {
                file: e.file.clone(),
                episode_id: e.episode_id.clone(),
            });
        } else if let Some(now) = entries.iter().find(|n| n.file == e.file) {
            let fields = differing_fields(e, now);
            if !fields.is_empty() {
                out.push(Problem::Stale {
                    file: e.file.clone(),
                    fields: fields.join(", "),
                });
            }
        }
    }
    for file in on_disk {
        if listed.entry(file).is_none() {
            out.push(Problem::Orphan { file: file.clone() });
        }
    }
    out
}

/// The top-level fields in which two entries differ, by name.
fn differing_fields(a: &EpisodeEntry, b: &EpisodeEntry) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return Vec::new();
    };
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Episodes cut into several files (see [`Problem::Split`]). Among the files
/// of one participant, goal and condition, in time order, a file that did not
/// end `done` is continued by a later one starting at most `max_gap_s` after
/// its last step; where several could pair up, the pairs with the shortest
/// pauses are taken first, and each file continues at most one other and is
/// continued by at most one, so copies and overlapping files do not break or
/// fork a chain. Episodes without a participant cannot be told apart from new
/// episodes and are left out.
pub fn find_splits(entries: &[EpisodeEntry], max_gap_s: f64) -> Vec<Problem> {
    type Key<'a> = (&'a str, &'a str, &'a str);
    let mut groups: BTreeMap<Key<'_>, Vec<&EpisodeEntry>> = BTreeMap::new();
    for e in entries {
        if let (Some(p), Some(_)) = (&e.participant, e.start_s()) {
            groups
                .entry((p, &e.goal.sha256, &e.condition))
                .or_default()
                .push(e);
        }
    }
    let mut out = Vec::new();
    for ((participant, _, _), mut files) in groups {
        files.sort_by(|a, b| {
            a.start_s()
                .partial_cmp(&b.start_s())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.file.cmp(&b.file))
        });
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        for (i, a) in files.iter().enumerate() {
            for (j, b) in files.iter().enumerate().skip(i + 1) {
                if let Some(gap) = pause(a, b).filter(|g| (0.0..=max_gap_s).contains(g)) {
                    pairs.push((gap, i, j));
                }
            }
        }
        pairs.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
        let mut next = vec![None; files.len()];
        let mut continued = vec![false; files.len()];
        for (_, i, j) in pairs {
            if next[i].is_none() && !continued[j] {
                next[i] = Some(j);
                continued[j] = true;
            }
        }
        for head in (0..files.len()).filter(|&i| !continued[i] && next[i].is_some()) {
            let mut chain = vec![head];
            let mut k = head;
            while let Some(j) = next[k] {
                chain.push(j);
                k = j;
            }
            out.push(Problem::Split {
                participant: participant.to_owned(),
                goal: files[head].goal.label(),
                files: chain.iter().map(|&k| files[k].file.clone()).collect(),
            });
        }
    }
    out
}

/// Seconds from the last step of `prev` to the first of `next`, if `next` can
/// carry on `prev`'s episode (`prev` did not end `done`).
fn pause(prev: &EpisodeEntry, next: &EpisodeEntry) -> Option<f64> {
    if prev.end == EpisodeEnd::Done {
        return None;
    }
    Some(next.start_s()? - prev.end_s()?)
}

/// The default manifest of a dataset: `DIR/manifest.jsonl`.
pub fn default_manifest(dir: &Path) -> PathBuf {
    dir.join(super::MANIFEST_FILE)
}

#[cfg(test)]
mod tests {
    use super::super::manifest::tests::entry;
    use super::*;

    /// An entry of participant `p` on goal `g` from `start` for `len` seconds.
    fn timed(file: &str, p: &str, g: &str, start: f64, len: f64, end: EpisodeEnd) -> EpisodeEntry {
        let mut e = entry(file, "alone", g);
        e.participant = Some(p.into());
        e.first_wall = Some(start);
        e.last_wall = Some(start + len);
        e.duration_s = Some(len);
        e.end = end;
        e
    }

    #[test]
    fn consecutive_unended_files_of_one_participant_and_goal_are_one_episode() {
        use EpisodeEnd::*;
        let entries = vec![
            // Participant 1: three parts of one episode, then a new one on the
            // same goal after a finished attempt.
            timed("p1a.jsonl", "1", "aa", 0.0, 300.0, Unfinished),
            timed("p1b.jsonl", "1", "aa", 310.0, 300.0, Truncated),
            timed("p1c.jsonl", "1", "aa", 620.0, 100.0, Done),
            timed("p1d.jsonl", "1", "aa", 730.0, 100.0, Done),
            // Participant 2: same goal but the gap is too long, then another
            // goal right after an unfinished file.
            timed("p2a.jsonl", "2", "aa", 0.0, 100.0, Unfinished),
            timed("p2b.jsonl", "2", "aa", 800.0, 100.0, Unfinished),
            timed("p2c.jsonl", "2", "bb", 905.0, 100.0, Done),
        ];
        let splits = find_splits(&entries, 600.0);
        assert_eq!(
            splits,
            vec![Problem::Split {
                participant: "1".into(),
                goal: "aa0000000000".into(),
                files: vec!["p1a.jsonl".into(), "p1b.jsonl".into(), "p1c.jsonl".into()],
            }]
        );
        // Another condition is another episode, and so is an overlap in time
        // (with a gap too short for the first file to reach past the second).
        assert_eq!(find_splits(&entries, 100.0), splits);
        let mut other = entries.clone();
        other[1].condition = "with assistant".into();
        assert!(find_splits(&other, 100.0).is_empty());
        let mut overlap = entries.clone();
        overlap[1].first_wall = Some(250.0);
        let splits = find_splits(&overlap, 100.0);
        assert_eq!(splits.len(), 1);
        assert_eq!(splits[0].files(), ["p1b.jsonl", "p1c.jsonl"]);
        // A whole copy of the episode beside its parts, overlapping them in
        // time, does not break the chain.
        let mut with_whole = entries.clone();
        with_whole.push(timed("p1_whole.jsonl", "1", "aa", 0.0, 720.0, Done));
        assert_eq!(
            find_splits(&with_whole, 600.0),
            find_splits(&entries, 600.0)
        );
        // No participant, no split.
        let mut anonymous = entries;
        for e in &mut anonymous {
            e.participant = None;
        }
        assert!(find_splits(&anonymous, 600.0).is_empty());
    }

    #[test]
    fn duplicates_are_found_by_id_and_by_steps() {
        let a = entry("a.jsonl", "alone", "aa");
        let mut copy = a.clone();
        copy.file = "sub/a_copy.jsonl.gz".into();
        copy.episode_id = "renamed".into();
        let mut same_id = entry("b.jsonl", "alone", "aa");
        same_id.episode_id = a.episode_id.clone();
        let mut empty1 = entry("e1.jsonl", "alone", "aa");
        let mut empty2 = entry("e2.jsonl", "alone", "aa");
        for e in [&mut empty1, &mut empty2] {
            e.steps = 0;
            e.steps_sha256 = "same".into();
        }
        let found = find_duplicates(&[a, copy, same_id, empty1, empty2]);
        assert_eq!(
            found,
            vec![
                Problem::DuplicateId {
                    episode_id: "a".into(),
                    files: vec!["a.jsonl".into(), "b.jsonl".into()],
                },
                Problem::DuplicateContent {
                    files: vec!["a.jsonl".into(), "sub/a_copy.jsonl.gz".into()],
                },
            ]
        );
        assert_eq!(
            found[1].to_string(),
            "the same steps in 2 files: a.jsonl, sub/a_copy.jsonl.gz"
        );
    }

    #[test]
    fn the_manifest_is_checked_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.jsonl");
        let kept = entry("kept.jsonl", "alone", "aa");
        let gone = entry("gone.jsonl", "alone", "bb");
        let changed = entry("changed.jsonl", "alone", "cc");
        Manifest::new(vec![kept.clone(), gone, changed.clone()])
            .write(&path)
            .unwrap();
        let mut now_changed = changed;
        now_changed.steps = 7;
        now_changed.steps_sha256 = "other".into();
        let new = entry("new.jsonl", "alone", "dd");
        let on_disk = ["changed.jsonl", "kept.jsonl", "new.jsonl"].map(String::from);
        let found = check_manifest(&path, &on_disk, &[now_changed, kept, new]);
        assert_eq!(
            found,
            vec![
                Problem::Stale {
                    file: "changed.jsonl".into(),
                    fields: "steps, steps_sha256".into(),
                },
                Problem::Missing {
                    file: "gone.jsonl".into(),
                    episode_id: "gone".into(),
                },
                Problem::Orphan {
                    file: "new.jsonl".into(),
                },
            ]
        );
        let none = check_manifest(&dir.path().join("nope.jsonl"), &on_disk, &[]);
        assert_eq!(none[0].kind(), "no_manifest");
        std::fs::write(&path, "{}\n").unwrap();
        let bad = check_manifest(&path, &on_disk, &[]);
        assert_eq!(bad[0].kind(), "bad_manifest");
    }
}
