//! `mbag bench env --python`: env-steps/s through the Python package (`python/`)
//! against the reference, both measured in one Python process by
//! `python/bench/bench_env.py`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// One scenario's figures through Python.
#[derive(Debug, Clone, Deserialize)]
pub struct PythonScenario {
    /// The reference's env-steps/s (median over repetitions).
    pub reference_median: f64,
    /// `mbag_rs.MbagEnv`, one env stepped per call.
    pub mbag_rs_env_median: f64,
    /// `mbag_rs.MbagVecEnv`, many envs stepped per call.
    pub mbag_rs_vec_env_median: f64,
}

impl PythonScenario {
    /// The drop-in env's speed-up over the reference.
    pub fn env_ratio(&self) -> f64 {
        self.mbag_rs_env_median / self.reference_median
    }

    /// The vectorised env's speed-up over the reference.
    pub fn vec_env_ratio(&self) -> f64 {
        self.mbag_rs_vec_env_median / self.reference_median
    }
}

/// What the Python bench measured.
#[derive(Debug, Clone, Deserialize)]
pub struct PythonBench {
    /// The interpreter's version.
    pub python: String,
    /// numpy's version.
    pub numpy: String,
    /// Per scenario (keys of `speed_baseline.json`).
    pub results: BTreeMap<String, PythonScenario>,
    /// Scenarios the package cannot run, with the reason.
    #[serde(default)]
    pub not_measured: BTreeMap<String, String>,
}

/// Why the Python bench gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum PythonBenchError {
    /// The interpreter could not be started.
    #[error("cannot run {python}: {source} (scripts/setup creates .deps/python)")]
    Spawn {
        /// The interpreter.
        python: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The script failed.
    #[error("{script} failed ({status}): {stderr}")]
    Failed {
        /// The script.
        script: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The end of what it printed on stderr.
        stderr: String,
    },
    /// Its JSON could not be read.
    #[error("reading the Python bench's results {path}: {message}")]
    Results {
        /// The JSON file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Runs `script` with `python` for `reps` repetitions of `steps` steps; its progress
/// lines pass through to stderr.
pub fn measure(
    python: &Path,
    script: &Path,
    reps: usize,
    steps: usize,
) -> Result<PythonBench, PythonBenchError> {
    let json = std::env::temp_dir().join(format!("mbag-python-bench-{}.json", std::process::id()));
    let output = Command::new(python)
        .arg(script)
        .args(["--reps", &reps.to_string(), "--steps", &steps.to_string()])
        .arg("--json")
        .arg(&json)
        .output()
        .map_err(|source| PythonBenchError::Spawn {
            python: python.to_owned(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        return Err(PythonBenchError::Failed {
            script: script.to_owned(),
            status: output.status,
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    let text = std::fs::read_to_string(&json).map_err(|e| PythonBenchError::Results {
        path: json.clone(),
        message: e.to_string(),
    })?;
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text).map_err(|e| PythonBenchError::Results {
        path: json,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_scripts_results_and_computes_ratios() {
        let bench: PythonBench = serde_json::from_str(
            r#"{"python": "3.10.13", "numpy": "1.21.6", "reps": 1,
                "results": {"s": {"reference_median": 1000.0, "mbag_rs_env_median": 9000.0,
                                  "mbag_rs_vec_env_median": 60000.0, "mbag_rs_env_ratio": 9.0}},
                "not_measured": {"a": "no agents"}}"#,
        )
        .unwrap();
        let s = &bench.results["s"];
        assert_eq!((s.env_ratio(), s.vec_env_ratio()), (9.0, 60.0));
        assert_eq!(bench.not_measured["a"], "no agents");
    }

    #[test]
    fn a_missing_interpreter_is_named() {
        let err = measure(Path::new("/nonexistent/python"), Path::new("x.py"), 1, 1).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/python"), "{err}");
    }
}
