//! Datasets of recordings: a folder of `mbag-recording/1` files (searched
//! recursively) treated as one dataset, the way BEDD's demonstrations are
//! indexed, checked, summarised and documented.
//!
//! - `manifest`: [`Manifest`], one [`EpisodeEntry`] per recording (episode id,
//!   file, goal, condition, participant, models, duration, steps, how it ended,
//!   final goal %, actions and chat counts, a hash of the step lines), written as
//!   JSON Lines, deterministic for the same files; [`index()`] builds it by reading
//!   one file at a time.
//! - `validate`: [`validate()`], every file read and replayed through the
//!   simulator, then the dataset-level [`Problem`]s: duplicates (an episode id
//!   in two files, the same steps under two names), orphans against the
//!   manifest, split episodes (one episode cut into consecutive files).
//! - `stats`: [`DatasetTable`], BEDD's Table 1 for recordings: episodes,
//!   success rate with Wilson intervals, mean length, hours, actions per minute
//!   and chat, per condition or per goal.
//! - `datasheet`: [`datasheet::render`], a "Datasheets for Datasets" Markdown
//!   file with what the manifest and the checks can answer filled in and the
//!   rest left as marked prompts.
//!
//! Every recording is read, summarised and dropped before the next one is
//! opened, so memory stays bounded by the largest single file whatever the
//! dataset's size.

pub mod datasheet;
pub mod manifest;
pub mod stats;
pub mod validate;

use std::path::{Path, PathBuf};

use crate::recording::RecordingError;

pub use manifest::{
    EpisodeEnd, EpisodeEntry, Index, MANIFEST_FILE, MANIFEST_FORMAT, Manifest, index,
};
pub use stats::{DatasetTable, GroupBy, GroupStats};
pub use validate::{Problem, ValidateReport, ValidateSettings, validate};

/// A dataset that cannot be listed, or a manifest that cannot be read or
/// written. Problems with the recordings themselves are not errors: they are
/// [`Problem`]s in a [`ValidateReport`].
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// A folder or file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A manifest line is not what `mbag-dataset-manifest/1` allows.
    #[error("{path}:{line}: {message}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A recording cannot be read.
    #[error(transparent)]
    Recording(#[from] RecordingError),
}

impl DatasetError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The recordings of a dataset: every `*.jsonl` and `*.jsonl.gz` below `dir`,
/// sorted, without the files in `skip` (the manifest, which is JSON Lines too).
pub fn recording_files(dir: &Path, skip: &[PathBuf]) -> Result<Vec<PathBuf>, DatasetError> {
    if !dir.is_dir() {
        return Err(DatasetError::Io {
            path: dir.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a folder"),
        });
    }
    let skip: Vec<PathBuf> = skip.iter().map(|p| canonical(p)).collect();
    let files = crate::recording::reader::collect_files(&[dir.to_owned()])?;
    Ok(files
        .into_iter()
        .filter(|f| !skip.contains(&canonical(f)))
        .collect())
}

/// The path as the file system resolves it, or as given when it does not exist
/// yet (a manifest about to be written).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// `path` relative to the dataset's root, with `/` between components whatever
/// the platform, so manifests move between machines.
pub fn relative_name(root: &Path, path: &Path) -> String {
    let Ok(rel) = path.strip_prefix(root) else {
        return path.display().to_string();
    };
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_use_slashes_below_the_root() {
        let root = Path::new("/data/set");
        assert_eq!(
            relative_name(root, Path::new("/data/set/a/b.jsonl")),
            "a/b.jsonl"
        );
        assert_eq!(
            relative_name(root, Path::new("/elsewhere/c.jsonl")),
            "/elsewhere/c.jsonl"
        );
    }
}
