//! Cross-validation summaries: the last validation of each fold's run, side by
//! side, with the mean over folds and, where every run logged its target
//! counts, the pooled cross-entropy over all held-out targets (what the paper's
//! "cross-validated cross-entropy" is: every episode scored once, by the model
//! that did not see it).

use std::path::{Path, PathBuf};

use super::config::Fold;
use super::data::ActionGroup;
use crate::train::error::TrainError;
use crate::train::log::{LogRecord, read_log};

/// One fold's last validation.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldResult {
    /// The run folder.
    pub run: PathBuf,
    /// The fold the run held out (`None`: the run's config names none).
    pub fold: Option<Fold>,
    /// The step of the validation.
    pub step: u64,
    /// The epoch of the validation.
    pub epoch: u64,
    /// Held-out cross-entropy over every target.
    pub ce: f64,
    /// Targets scored, if the run logged them.
    pub targets: Option<f64>,
    /// Per action group: cross-entropy and, if logged, targets.
    pub by_group: Vec<(ActionGroup, f64, Option<f64>)>,
}

/// The folds together.
#[derive(Clone, Debug, PartialEq)]
pub struct CvSummary {
    /// Every fold, in the order given.
    pub folds: Vec<FoldResult>,
    /// The mean of the folds' cross-entropies.
    pub mean_ce: f64,
    /// The standard error of that mean (0 for one fold).
    pub standard_error: f64,
    /// Cross-entropy over all held-out targets of all folds, when every fold
    /// logged its count.
    pub pooled_ce: Option<f64>,
    /// Per group, the pooled cross-entropy (when counts were logged).
    pub pooled_by_group: Vec<(ActionGroup, f64)>,
}

/// Reads the last validation record of `run` (a `train bc` output folder).
pub fn fold_result(run: &Path) -> Result<FoldResult, TrainError> {
    let records = read_log(&run.join("metrics.jsonl"))?;
    let last: &LogRecord = records
        .iter()
        .rev()
        .find(|r| r.get("valid/ce").is_some())
        .ok_or_else(|| {
            TrainError::Data(format!(
                "{}: the metrics log has no validation yet (valid/ce)",
                run.display()
            ))
        })?;
    let fold = read_fold(&run.join("config.json"))?;
    let by_group = ActionGroup::ALL
        .iter()
        .filter_map(|g| {
            let ce = last.get(&format!("valid/ce_by_type/{}", g.name()))?;
            let n = last.get(&format!("valid/targets_by_type/{}", g.name()));
            Some((*g, ce, n))
        })
        .collect();
    Ok(FoldResult {
        run: run.to_owned(),
        fold,
        step: last.step,
        epoch: last.epoch,
        ce: last.get("valid/ce").unwrap_or(f64::NAN),
        targets: last.get("valid/targets"),
        by_group,
    })
}

fn read_fold(config: &Path) -> Result<Option<Fold>, TrainError> {
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TrainError::io(config)(e)),
    };
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| TrainError::Json {
        path: config.to_owned(),
        line: None,
        message: e.to_string(),
    })?;
    Ok(json
        .pointer("/data/fold")
        .and_then(|f| serde_json::from_value(f.clone()).ok()))
}

/// Summarises the runs of a cross-validation. Refuses two runs of the same
/// fold, and folds of different `N`.
pub fn summarise(runs: &[PathBuf]) -> Result<CvSummary, TrainError> {
    if runs.is_empty() {
        return Err(TrainError::Data("no runs to summarise".into()));
    }
    let folds = runs
        .iter()
        .map(|r| fold_result(r))
        .collect::<Result<Vec<_>, _>>()?;
    let named: Vec<Fold> = folds.iter().filter_map(|f| f.fold).collect();
    if let Some(f) = named.iter().find(|f| f.of != named[0].of) {
        return Err(TrainError::Data(format!(
            "folds of different splits: {} and {f}",
            named[0]
        )));
    }
    for (i, a) in named.iter().enumerate() {
        if named[..i].contains(a) {
            return Err(TrainError::Data(format!("fold {a} is given twice")));
        }
    }
    let n = folds.len() as f64;
    let mean_ce = folds.iter().map(|f| f.ce).sum::<f64>() / n;
    let standard_error = if folds.len() > 1 {
        let var = folds.iter().map(|f| (f.ce - mean_ce).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt()
    } else {
        0.0
    };
    let pooled = |ce_n: &dyn Fn(&FoldResult) -> Option<(f64, f64)>| -> Option<f64> {
        let pairs: Option<Vec<(f64, f64)>> = folds.iter().map(ce_n).collect();
        let pairs = pairs?;
        let total: f64 = pairs.iter().map(|(_, n)| n).sum();
        (total > 0.0).then(|| pairs.iter().map(|(ce, n)| ce * n).sum::<f64>() / total)
    };
    let pooled_ce = pooled(&|f| f.targets.map(|n| (f.ce, n)));
    let pooled_by_group = ActionGroup::ALL
        .iter()
        .filter_map(|g| {
            let ce = pooled(&|f| {
                match f.by_group.iter().find(|(h, _, _)| h == g) {
                    Some((_, ce, n)) => n.map(|n| (*ce, n)),
                    // A fold without targets of this group adds nothing.
                    None => Some((0.0, 0.0)),
                }
            })?;
            Some((*g, ce))
        })
        .collect();
    Ok(CvSummary {
        folds,
        mean_ce,
        standard_error,
        pooled_ce,
        pooled_by_group,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(dir: &Path, fold: Option<(usize, usize)>, lines: &[&str]) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
        if let Some((index, of)) = fold {
            let config = format!(r#"{{"data": {{"fold": {{"index": {index}, "of": {of}}}}}}}"#);
            std::fs::write(dir.join("config.json"), config).unwrap();
        }
    }

    fn valid(step: u64, ce: f64, place: f64, n_place: f64, n_move: f64) -> String {
        format!(
            r#"{{"step":{step},"epoch":1,"wall_s":1.0,"metrics":{{"valid/ce":{ce},"valid/targets":{},"valid/ce_by_type/place":{place},"valid/targets_by_type/place":{n_place},"valid/ce_by_type/move":1.0,"valid/targets_by_type/move":{n_move}}}}}"#,
            n_place + n_move
        )
    }

    #[test]
    fn folds_are_averaged_and_pooled_by_their_targets() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("fold_0");
        let b = root.path().join("fold_1");
        // Fold 0: 10 places at ce 3 and 30 moves at 1 -> 1.5; fold 1: 10 and 10
        // -> 2.0. The last validation counts, not an earlier one.
        write_run(
            &a,
            Some((0, 2)),
            &[
                &valid(5, 9.0, 9.0, 10.0, 30.0),
                r#"{"step":6,"epoch":1,"wall_s":2.0,"metrics":{"train/ce":1.0}}"#,
                &valid(10, 1.5, 3.0, 10.0, 30.0),
            ],
        );
        write_run(&b, Some((1, 2)), &[&valid(10, 2.0, 3.0, 10.0, 10.0)]);
        let s = summarise(&[a, b]).unwrap();
        assert_eq!(s.folds[0].step, 10);
        assert_eq!(s.folds[1].fold, Some(Fold { index: 1, of: 2 }));
        assert!((s.mean_ce - 1.75).abs() < 1e-12);
        assert!((s.standard_error - 0.25).abs() < 1e-12);
        // (1.5 * 40 + 2.0 * 20) / 60
        assert!((s.pooled_ce.unwrap() - 100.0 / 60.0).abs() < 1e-12);
        let place = s
            .pooled_by_group
            .iter()
            .find(|(g, _)| *g == ActionGroup::Place);
        assert_eq!(place.map(|(_, ce)| *ce), Some(3.0));
    }

    #[test]
    fn the_same_fold_twice_and_runs_without_validation_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        let b = root.path().join("b");
        let c = root.path().join("c");
        write_run(&a, Some((0, 3)), &[&valid(1, 2.0, 3.0, 1.0, 1.0)]);
        write_run(&b, Some((0, 3)), &[&valid(1, 2.0, 3.0, 1.0, 1.0)]);
        write_run(
            &c,
            None,
            &[r#"{"step":1,"epoch":0,"wall_s":1.0,"metrics":{"train/ce":1.0}}"#],
        );
        let err = summarise(&[a.clone(), b]).unwrap_err().to_string();
        assert!(err.contains("fold 0/3 is given twice"), "{err}");
        let err = summarise(&[a, c]).unwrap_err().to_string();
        assert!(err.contains("no validation yet"), "{err}");
    }
}
