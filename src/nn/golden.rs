//! The golden checks: every shared model run on its reference inputs and compared
//! with the reference's outputs (`../shared/models/golden/README.md`): 8 steps with
//! the recurrent state carried, then the 8 observations as one batch from the zero
//! state.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use tch::{Device, Kind, Tensor};

use super::Precision;
use super::error::NnError;
use super::model::{Model, RecurrentState};
use super::obs::ObsBatch;

/// The golden tolerance: `|got - want| <= ABS_TOL + REL_TOL * |want|`.
pub const ABS_TOL: f64 = 1e-4;
/// See [`ABS_TOL`].
pub const REL_TOL: f64 = 1e-4;

/// The golden tensors of one model, by name.
#[derive(Debug)]
pub struct GoldenFile {
    path: PathBuf,
    tensors: HashMap<String, Tensor>,
}

impl GoldenFile {
    /// Reads a golden file.
    pub fn read(path: &Path) -> Result<Self, NnError> {
        if let Err(source) = std::fs::metadata(path) {
            return Err(NnError::Io {
                path: path.to_owned(),
                source,
            });
        }
        Ok(Self {
            path: path.to_owned(),
            tensors: Tensor::read_safetensors(path)?.into_iter().collect(),
        })
    }

    /// A tensor, or an error naming it.
    pub fn get(&self, name: &str) -> Result<&Tensor, NnError> {
        self.tensors.get(name).ok_or_else(|| NnError::Golden {
            path: self.path.clone(),
            name: name.to_owned(),
            message: "missing".into(),
        })
    }

    /// Whether a tensor is present.
    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The recorded inputs of steps `start..start + len` as a batch.
    pub fn inputs(&self, start: i64, len: i64) -> Result<ObsBatch, NnError> {
        ObsBatch::new(
            self.get("step.world_obs")?.narrow(0, start, len),
            self.get("step.inventory_obs")?.narrow(0, start, len),
            self.get("step.timestep")?.narrow(0, start, len),
            Some(self.get("step.prev_action")?.narrow(0, start, len)),
        )
    }

    /// Number of recorded steps (T).
    pub fn steps(&self) -> Result<i64, NnError> {
        Ok(self.get("step.world_obs")?.size()[0])
    }
}

/// The outcome of one model's golden check.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenReport {
    /// The model's name.
    pub model: String,
    /// Number of tensors compared.
    pub compared: usize,
    /// The largest absolute difference over every compared value.
    pub max_abs_error: f64,
    /// The tensor where it occurred.
    pub worst_tensor: String,
    /// The largest `|got - want| / (ABS_TOL + REL_TOL·|want|)`: below 1 passes.
    pub max_tolerance_used: f64,
    /// One line per tensor outside the tolerance (or of the wrong shape).
    pub failures: Vec<String>,
}

impl GoldenReport {
    /// Whether every tensor is within the tolerance.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    fn compare(&mut self, name: &str, got: &Tensor, want: &Tensor) {
        self.compared += 1;
        let got = got.to_device(Device::Cpu).to_kind(Kind::Double);
        let want = want.to_kind(Kind::Double);
        if got.size() != want.size() {
            self.failures.push(format!(
                "{name}: shape {:?}, golden {:?}",
                got.size(),
                want.size()
            ));
            return;
        }
        let diff = (&got - &want).abs();
        let max = diff.max().double_value(&[]);
        let tolerance = want.abs() * REL_TOL + ABS_TOL;
        let used = (&diff / &tolerance).max().double_value(&[]);
        self.max_tolerance_used = self.max_tolerance_used.max(used);
        let outside = diff.gt_tensor(&tolerance).sum(Kind::Int64).int64_value(&[]);
        log::debug!("{}: {name}: largest error {max:.3e}", self.model);
        // NaN compares false above, so count it as outside explicitly.
        let outside = if max.is_nan() {
            outside.max(1)
        } else {
            outside
        };
        if max > self.max_abs_error || max.is_nan() {
            self.max_abs_error = max;
            self.worst_tensor = name.to_owned();
        }
        if outside > 0 {
            self.failures.push(format!(
                "{name}: {outside} of {} values outside the tolerance, largest error {max:.3e}",
                want.numel()
            ));
        }
    }
}

impl fmt::Display for GoldenReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = if self.passed() { "ok  " } else { "FAIL" };
        write!(
            f,
            "{status} {}: {} tensors, largest error {:.2e} ({}), {:.1}% of the tolerance at most",
            self.model,
            self.compared,
            self.max_abs_error,
            self.worst_tensor,
            100.0 * self.max_tolerance_used
        )?;
        for failure in &self.failures {
            write!(f, "\n     {failure}")?;
        }
        Ok(())
    }
}

/// Runs one model against its golden file: the model is `<golden dir>/../<name>.json`
/// with its weights.
pub fn verify_model(golden_path: &Path, device: Device) -> Result<GoldenReport, NnError> {
    verify_model_in(golden_path, device, Precision::F32)
}

/// [`verify_model`] with the model computing in `precision` (the tolerance
/// stays the same: reduced precision passes only where its rounding is that
/// small).
pub fn verify_model_in(
    golden_path: &Path,
    device: Device,
    precision: Precision,
) -> Result<GoldenReport, NnError> {
    let name = golden_path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    let models_dir = golden_path
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new(".."));
    let mut model = Model::load(&models_dir.join(format!("{name}.json")), device)?;
    model.set_precision(precision)?;
    let golden = GoldenFile::read(golden_path)?;
    verify_loaded(&model, &golden)
}

/// Runs a loaded model against a golden file.
pub fn verify_loaded(model: &Model, golden: &GoldenFile) -> Result<GoldenReport, NnError> {
    let mut report = GoldenReport {
        model: model.config().name.clone(),
        compared: 0,
        max_abs_error: 0.0,
        worst_tensor: String::new(),
        max_tolerance_used: 0.0,
        failures: Vec::new(),
    };
    let steps = golden.steps()?;
    let alpha_zero = model.config().class.is_alpha_zero();
    if alpha_zero != golden.has("step.other_agent_logits") {
        report.failures.push(format!(
            "other_agent_logits: the model {} them, the golden file {}",
            if alpha_zero { "outputs" } else { "has no" },
            if golden.has("step.other_agent_logits") {
                "has them"
            } else {
                "does not"
            }
        ));
    }
    let mut state: Option<RecurrentState> = None;
    for t in 0..steps {
        let (out, trace) = model.forward_traced(&golden.inputs(t, 1)?, state.as_ref())?;
        let row = |name: &str| golden.get(name).map(|g| g.narrow(0, t, 1));
        report.compare(
            &format!("step.flat_logits[{t}]"),
            &out.flat_logits,
            &row("step.flat_logits")?,
        );
        report.compare(&format!("step.value[{t}]"), &out.value, &row("step.value")?);
        report.compare(
            &format!("step.goal_logits[{t}]"),
            &out.goal_logits,
            &row("step.goal_logits")?,
        );
        if let (Some(got), true) = (
            &out.other_agent_logits,
            golden.has("step.other_agent_logits"),
        ) {
            report.compare(
                &format!("step.other_agent_logits[{t}]"),
                got,
                &row("step.other_agent_logits")?,
            );
        }
        if t == 0 {
            let one = |name: &str| golden.get(name).map(|g| g.unsqueeze(0));
            report.compare(
                "step0.embedded_obs",
                &trace.embedded,
                &one("step0.embedded_obs")?,
            );
            report.compare(
                "step0.backbone_out",
                &trace.backbone_out,
                &one("step0.backbone_out")?,
            );
            report.compare(
                "step0.action_grid_logits",
                &out.action_grid,
                &one("step0.action_grid_logits")?,
            );
            compare_state(&mut report, golden, "step0", &out.state)?;
        }
        state = Some(out.state);
    }
    if let Some(state) = &state {
        compare_state(&mut report, golden, "final", state)?;
    }
    let out = model.forward(&golden.inputs(0, steps)?, None)?;
    report.compare(
        "batch.flat_logits",
        &out.flat_logits,
        golden.get("batch.flat_logits")?,
    );
    report.compare("batch.value", &out.value, golden.get("batch.value")?);
    report.compare(
        "batch.goal_logits",
        &out.goal_logits,
        golden.get("batch.goal_logits")?,
    );
    if let (Some(got), true) = (
        &out.other_agent_logits,
        golden.has("batch.other_agent_logits"),
    ) {
        report.compare(
            "batch.other_agent_logits",
            got,
            golden.get("batch.other_agent_logits")?,
        );
    }
    Ok(report)
}

fn compare_state(
    report: &mut GoldenReport,
    golden: &GoldenFile,
    prefix: &str,
    state: &RecurrentState,
) -> Result<(), NnError> {
    let expected = (0..)
        .take_while(|k| golden.has(&format!("{prefix}.state_out.{k}")))
        .count();
    if expected != state.tensors().len() {
        report.failures.push(format!(
            "{prefix}.state_out: the model returns {} state tensors, the golden file has {expected}",
            state.tensors().len()
        ));
    }
    for (k, got) in state.tensors().iter().enumerate().take(expected) {
        let name = format!("{prefix}.state_out.{k}");
        report.compare(&name, got, &golden.get(&name)?.unsqueeze(0));
    }
    Ok(())
}

/// The golden files (`*.safetensors`) of a folder, sorted by name.
pub fn golden_files(dir: &Path) -> Result<Vec<PathBuf>, NnError> {
    let entries = std::fs::read_dir(dir).map_err(|source| NnError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    Ok(files)
}
