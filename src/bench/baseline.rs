//! The reference's measured speed (`speed_baseline.json`, or a fresh file written by
//! `../shared/reference/bench/run --json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Min and median of a measurement over repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct MinMedian {
    /// The smallest value.
    pub min: f64,
    /// The median.
    pub median: f64,
}

/// The parts of a reference speed file that mbag compares with.
#[derive(Clone, Debug, Deserialize)]
pub struct Baseline {
    /// Steps per second per scenario key.
    pub results: BTreeMap<String, MinMedian>,
    /// Seconds per reset with goal generation.
    pub reset_with_goal_generation_s: MinMedian,
    /// The machine it was measured on.
    #[serde(default)]
    pub machine: String,
    /// When it was measured.
    #[serde(default)]
    pub measured: Option<String>,
    /// Where it was read from (filled in by [`Baseline::read`]).
    #[serde(skip)]
    pub path: PathBuf,
}

/// A reference speed file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// It cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a reference speed file.
    #[error("{path}: not a reference speed file: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

impl Baseline {
    /// Reads a speed file.
    pub fn read(path: &Path) -> Result<Self, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut baseline: Self =
            serde_json::from_str(&text).map_err(|e| BaselineError::Format {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        baseline.path = path.to_owned();
        Ok(baseline)
    }

    /// The reference's median steps/s of a scenario.
    pub fn median(&self, scenario: &str) -> Option<f64> {
        self.results.get(scenario).map(|r| r.median)
    }
}
