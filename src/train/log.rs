//! The metrics log: JSON Lines, one [`LogRecord`] per line, so training can be
//! watched (`tail -f`, `mbag plot`) while it runs.
//!
//! Each record is written as one whole line in one `write` on an unbuffered file,
//! so a crash loses at most the line in flight, and [`read_log`] skips a cut last
//! line. On resume, [`MetricsLog::resume`] drops the records after the
//! checkpoint's step, so the log never holds two records of one step from two runs.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::error::TrainError;
use crate::jsonl::Float;

/// One line of the log: named metrics at a training step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogRecord {
    /// The optimizer step the metrics belong to (0 before the first step).
    pub step: u64,
    /// The epoch (passes over the data, or self-play iterations) at that step.
    pub epoch: u64,
    /// Seconds of training since the run began, summed over resumed runs.
    pub wall_s: f64,
    /// The metrics by name. Names use `/` to group: `train/loss`,
    /// `valid/accuracy/place`, `eval/goal_pct`. Non-finite values are written as
    /// the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    pub metrics: BTreeMap<String, Float>,
}

impl LogRecord {
    /// A metric's value, if the record has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).map(|v| v.0)
    }
}

/// An open metrics log, appending [`LogRecord`]s.
#[derive(Debug)]
pub struct MetricsLog {
    path: PathBuf,
    file: File,
    started: Instant,
    /// Wall seconds of earlier runs, when resumed.
    wall_offset_s: f64,
}

impl MetricsLog {
    /// Creates (or truncates) a log for a fresh run.
    pub fn create(path: &Path) -> Result<Self, TrainError> {
        let file = File::create(path).map_err(TrainError::io(path))?;
        Ok(Self::with_file(path, file, 0.0))
    }

    /// Opens the log of a resumed run: records after `step` (written after the
    /// checkpoint the run resumes from) and a cut last line are dropped, and wall
    /// time continues from the last record kept. A missing log starts empty.
    pub fn resume(path: &Path, step: u64) -> Result<Self, TrainError> {
        let kept: Vec<LogRecord> = if path.exists() {
            read_log(path)?
                .into_iter()
                .filter(|r| r.step <= step)
                .collect()
        } else {
            Vec::new()
        };
        let mut text = String::new();
        for record in &kept {
            text.push_str(&line_of(record));
        }
        // Rewritten through a temporary file, so a crash here keeps the old log.
        let tmp = path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, text).map_err(TrainError::io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(TrainError::io(path))?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(TrainError::io(path))?;
        let offset = kept.last().map_or(0.0, |r| r.wall_s);
        Ok(Self::with_file(path, file, offset))
    }

    fn with_file(path: &Path, file: File, wall_offset_s: f64) -> Self {
        Self {
            path: path.to_owned(),
            file,
            started: Instant::now(),
            wall_offset_s,
        }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Seconds of training so far, earlier runs included.
    pub fn wall_s(&self) -> f64 {
        self.wall_offset_s + self.started.elapsed().as_secs_f64()
    }

    /// Appends one record with the current wall time; returns it.
    pub fn write<'a>(
        &mut self,
        step: u64,
        epoch: u64,
        metrics: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Result<LogRecord, TrainError> {
        let record = LogRecord {
            step,
            epoch,
            wall_s: self.wall_s(),
            metrics: metrics
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Float(v)))
                .collect(),
        };
        self.append(&record)?;
        Ok(record)
    }

    /// Appends a record as given (one `write` of the whole line).
    pub fn append(&mut self, record: &LogRecord) -> Result<(), TrainError> {
        self.file
            .write_all(line_of(record).as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(TrainError::io(&self.path))
    }
}

fn line_of(record: &LogRecord) -> String {
    let mut line = serde_json::to_string(record).expect("a log record serialises");
    line.push('\n');
    line
}

/// Reads a metrics log. A last line without its newline that does not parse (a
/// write cut by a crash) is skipped; any other bad line is an error naming it.
pub fn read_log(path: &Path) -> Result<Vec<LogRecord>, TrainError> {
    let text = std::fs::read_to_string(path).map_err(TrainError::io(path))?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut de = serde_json::Deserializer::from_str(line);
        match serde_path_to_error::deserialize::<_, LogRecord>(&mut de) {
            Ok(record) => records.push(record),
            Err(_) if i + 1 == lines.len() && !complete => {
                log::warn!("{}: skipping a cut last line", path.display());
            }
            Err(e) => {
                return Err(TrainError::Json {
                    path: path.to_owned(),
                    line: Some(i + 1),
                    message: format!("{}: {}", e.path(), e.inner()),
                });
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_cut_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut log = MetricsLog::create(&path).unwrap();
        log.write(0, 0, [("train/loss", 2.5), ("valid/acc", f64::NAN)])
            .unwrap();
        let second = log.write(10, 1, [("train/loss", 1.25)]).unwrap();
        drop(log);
        let records = read_log(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].get("train/loss"), Some(2.5));
        assert!(records[0].get("valid/acc").unwrap().is_nan());
        assert_eq!(records[1], second);

        let text = std::fs::read_to_string(&path).unwrap();
        for cut in 1..text.len() {
            std::fs::write(&path, &text[..cut]).unwrap();
            let got = read_log(&path).unwrap();
            let whole_lines = text[..cut].matches('\n').count();
            // A cut that leaves a whole JSON object without its newline still reads.
            assert!(got.len() == whole_lines || got.len() == whole_lines + 1);
        }
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(
            &path,
            "{\"step\":0,\"epoch\":0,\"wall_s\":0.0,\"metrics\":{}}\n{\"step\":1}\n{\"step\":2,\"epoch\":0,\"wall_s\":0.0,\"metrics\":{}}\n",
        )
        .unwrap();
        let err = read_log(&path).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn resume_drops_records_after_the_checkpoint_and_keeps_wall_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut log = MetricsLog::create(&path).unwrap();
        for step in [0, 5, 10, 15] {
            log.append(&LogRecord {
                step,
                epoch: 0,
                wall_s: step as f64,
                metrics: BTreeMap::new(),
            })
            .unwrap();
        }
        drop(log);
        let mut log = MetricsLog::resume(&path, 10).unwrap();
        assert!(log.wall_s() >= 10.0);
        log.write(11, 0, [("x", 1.0)]).unwrap();
        let steps: Vec<u64> = read_log(&path).unwrap().iter().map(|r| r.step).collect();
        assert_eq!(steps, [0, 5, 10, 11]);
    }
}
