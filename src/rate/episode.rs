//! Which episodes can be compared: each recording's agent (who is rated) and
//! goal (pairs are only ever made on the same goal, as BEDD shows two videos
//! from the same seed), read from the recording's header alone.

use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::RateError;
use crate::recording::header::{Controller, Header, Role, hex};

/// The agent name of episodes whose assistant is a person (or that a person
/// played alone): humans are rated players, as in BEDD.
pub const HUMAN: &str = "human";
/// The agent name of episodes a model played alone (the `none` assistant).
pub const NO_ASSISTANT: &str = "none";

/// One recording as the rating sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpisodeInfo {
    /// The file, relative to the recordings folder (`/`-separated).
    pub path: String,
    /// The header's episode id.
    pub episode_id: String,
    /// Who is rated: see [`agent_of`].
    pub agent: String,
    /// The goal: see [`goal_of`].
    pub goal: String,
}

/// The rated agent of an episode: the assistant seat's agent spec
/// (`heuristic:lowest_block`, `az:PATH?sims=20`, ...), or [`HUMAN`] when a
/// person sat there, several seats joined with ` + `. An episode with no
/// assistant seat is [`HUMAN`] when a person built alone (the study's
/// `human_alone` episodes) and [`NO_ASSISTANT`] when a model did.
pub fn agent_of(header: &Header) -> String {
    let seat = |p: &crate::recording::header::PlayerEntry| match p.controller {
        Controller::Person => HUMAN.to_owned(),
        Controller::Agent => p.agent.clone().unwrap_or_else(|| "agent".into()),
    };
    let assistants: Vec<String> = header
        .players
        .iter()
        .filter(|p| p.role == Role::Assistant)
        .map(seat)
        .collect();
    if !assistants.is_empty() {
        return assistants.join(" + ");
    }
    let person_built = header
        .players
        .iter()
        .any(|p| p.role == Role::Human && p.controller == Controller::Person);
    if person_built { HUMAN } else { NO_ASSISTANT }.to_owned()
}

/// The goal of an episode: the first 16 hex digits of SHA-256 over the world
/// size and the goal grid's block ids and states, so that the same house in
/// the same world is the same goal whichever program recorded it.
pub fn goal_of(header: &Header) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"mbag-rate-goal/1\n");
    let size = header
        .config
        .get("world_size")
        .map_or(String::new(), Value::to_string);
    hasher.update(size.as_bytes());
    hasher.update(b"\n");
    hasher.update(&header.goal.blocks.0);
    hasher.update(&header.goal.block_states.0);
    hex(&hasher.finalize())[..16].to_owned()
}

/// Reads only the header line of a recording (`.jsonl` or `.jsonl.gz`): a
/// catalogue of long episodes need not decode their steps.
pub fn read_header(path: &Path) -> Result<Header, RateError> {
    let io = |source| RateError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut line = String::new();
    BufReader::new(reader).read_line(&mut line).map_err(io)?;
    let header: Header = serde_json::from_str(&line).map_err(|e| RateError::Header {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if header.format != crate::recording::header::FORMAT {
        return Err(RateError::Header {
            path: path.to_owned(),
            message: format!(
                "format {:?} is not {}",
                header.format,
                crate::recording::header::FORMAT
            ),
        });
    }
    Ok(header)
}

/// Every recording under `dir` (recursively), sorted by path. A file whose
/// header cannot be read is an error naming it: a catalogue that silently
/// drops episodes would rate agents on fewer than the rater thinks.
pub fn catalogue(dir: &Path) -> Result<Vec<EpisodeInfo>, RateError> {
    let files = crate::jsonl::collect_files(&[dir.to_owned()])
        .map_err(|(path, source)| RateError::Io { path, source })?;
    files
        .iter()
        .map(|file| {
            let header = read_header(file)?;
            Ok(EpisodeInfo {
                path: relative(dir, file),
                episode_id: header.episode_id.clone(),
                agent: agent_of(&header),
                goal: goal_of(&header),
            })
        })
        .collect()
}

fn relative(dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(dir).unwrap_or(file);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The file of a stored relative path under `dir`, refusing any path that
/// could leave it (absolute, `..`): paths come from the database, which other
/// programs may have written.
pub fn resolve(dir: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path);
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_are_catalogued_with_agents_and_goals() {
        let episodes = catalogue(Path::new("recordings/samples")).unwrap();
        let simulated = episodes
            .iter()
            .find(|e| e.path == "simulated_lowest_block_pair_seed3.jsonl")
            .unwrap();
        assert_eq!(simulated.agent, "heuristic:lowest_block");
        // The file cut mid-write has the same header, so the same goal.
        let cut = episodes
            .iter()
            .find(|e| e.path == "simulated_seed3_killed_mid_write.jsonl")
            .unwrap();
        assert_eq!(cut.goal, simulated.goal);
        let converted = episodes.iter().find(|e| e.path.ends_with(".gz")).unwrap();
        assert_eq!(converted.agent, HUMAN);
        assert_eq!(converted.goal.len(), 16);
    }

    #[test]
    fn stored_paths_cannot_leave_the_folder() {
        let dir = Path::new("/data/recordings");
        assert_eq!(
            resolve(dir, "a/b.jsonl"),
            Some(PathBuf::from("/data/recordings/a/b.jsonl"))
        );
        for bad in ["../x.jsonl", "/etc/passwd", "a/../../x"] {
            assert_eq!(resolve(dir, bad), None, "{bad}");
        }
    }
}
