//! Following a recording as it is written: the daemon appends one complete
//! line per step (`recordings/README.md` §5), so reading whole lines as they
//! appear and replaying each step through the simulator gives the live page
//! the same frames a finished recording would.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::scene::{Scene, SceneChat};
use super::server::Shown;
use crate::recording::header::Header;
use crate::recording::step::StepRecord;
use crate::recording::{RecordingError, apply_sync};
use crate::sim::env::Env;

/// How often the file is checked for new lines.
const POLL: Duration = Duration::from_millis(200);

/// Why following stopped.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// The file could not be opened or read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not what the format says.
    #[error("{path}, line {line}: {message}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The header describes no env the simulator can build.
    #[error(transparent)]
    Recording(#[from] RecordingError),
}

/// The newest `*.jsonl` recording under `path` (itself when it is a file).
pub fn newest_recording(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_owned());
    }
    let files = crate::recording::reader::collect_files(&[path.to_owned()]).ok()?;
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .max_by_key(|f| f.metadata().and_then(|m| m.modified()).ok())
}

/// Follows `path` until its footer arrives or `stop()` says so, showing the
/// episode in `shown` (replaced at the header, grown at each step). Blocks:
/// run it on a thread of its own.
pub fn follow(path: &Path, shown: &Shown, stop: &dyn Fn() -> bool) -> Result<(), TailError> {
    let io = |source| TailError::Io {
        path: path.to_owned(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let mut pending = String::new();
    let mut line_no = 0;
    let mut replay: Option<(Env, Vec<u8>)> = None;
    while !stop() {
        let mut chunk = String::new();
        let n = reader.read_line(&mut chunk).map_err(io)?;
        if n == 0 {
            std::thread::sleep(POLL);
            continue;
        }
        pending.push_str(&chunk);
        // A line without its newline is still being written.
        if !pending.ends_with('\n') {
            continue;
        }
        line_no += 1;
        let line = std::mem::take(&mut pending);
        let bad = |message: String| TailError::Line {
            path: path.to_owned(),
            line: line_no,
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("header") => {
                let header: Header =
                    serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
                let env = crate::recording::verify::env_for_header(&header, path)?;
                let mut scene = Scene::start(&env, header.episode_id.clone());
                for (p, entry) in header.players.iter().enumerate() {
                    if let Some(slot) = scene.players.get_mut(p) {
                        slot.role = format!("{:?}", entry.role).to_lowercase();
                        slot.controller = entry.agent.clone().unwrap_or_else(|| "person".into());
                    }
                }
                let blocks = scene.initial.clone();
                shown.replace(scene);
                replay = Some((env, blocks));
            }
            Some("step") => {
                let step: StepRecord =
                    serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
                let Some((env, blocks)) = replay.as_mut() else {
                    return Err(bad("a step before the header".into()));
                };
                let size = env.size();
                let actions = step
                    .a
                    .iter()
                    .map(|a| a.to_tuple(size))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(bad)?;
                env.step_tuples(&actions).map_err(|e| bad(e.to_string()))?;
                if let Some(sync) = &step.sync {
                    let mut state = env.state().clone();
                    apply_sync(&mut state, sync).map_err(bad)?;
                    env.set_state(state);
                }
                let mut frame = Scene::frame_from(env, blocks);
                frame.actions = step.e.iter().map(|a| a.type_id()).collect();
                frame.explain = step.explain.clone().unwrap_or_default();
                frame.chat = SceneChat::of_step(&step);
                shown.push(frame);
            }
            Some("footer") => return Ok(()),
            _ => return Err(bad("a line of no known kind".into())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_recording_written_line_by_line_is_followed_to_its_end() {
        let sample = Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl");
        let text = std::fs::read_to_string(sample).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.jsonl");
        let mut file = File::create(&path).unwrap();
        let mut lines = text.lines();
        // The header first; the follower starts while the steps are to come.
        writeln!(file, "{}", lines.next().unwrap()).unwrap();
        let rec = crate::recording::Recording::read(sample).unwrap();
        let whole = Scene::of_recording(&rec).unwrap();
        let shown = Shown::live(Scene {
            frames: Vec::new(),
            ..whole.clone()
        });
        let follower = shown.clone();
        let following = std::thread::spawn(move || follow(&path, &follower, &|| false));
        for line in lines {
            // A line arrives in two writes, as a slow disk might deliver it.
            let (a, b) = line.split_at(line.len() / 2);
            write!(file, "{a}").unwrap();
            file.flush().unwrap();
            std::thread::sleep(Duration::from_millis(2));
            writeln!(file, "{b}").unwrap();
        }
        following.join().unwrap().unwrap();
        let followed = shown.snapshot();
        assert_eq!(followed.frames, whole.frames);
        assert_eq!(followed.initial, whole.initial);
    }
}
