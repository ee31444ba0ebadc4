//! Reduced precision on the CPU, used only where a model keeps its choices.
//!
//! bfloat16 convolutions run about 1.4x as many samples a second as `f32` at
//! batch 16 and above on the project's 2-core machines (`mbag bench nn
//! --precision f32,bf16`), but its 8-bit mantissa moves some trained models'
//! logits by whole units (`mbag nn verify-golden --precision bf16`: 4.2 for
//! `bc_human_inf_blocks`, 0.02 for `paper_assistant_small`). So the format is
//! chosen per model by [`check`]: on a fixed set of states the model itself
//! visits, the reduced copy must choose the same moves and stay within
//! [`Tolerance`] of `f32` on every head the search reads; and where the model
//! has reference outputs (a shared model's golden file, [`golden_file_of`]),
//! every output must stay within [`Tolerance::golden`] of them. A model that
//! fails stays in `f32`.
//!
//! int8 is not offered: libtorch computes quantized 3D convolutions only
//! through its quantized module API (packed weights, `quantized::conv3d`),
//! which tch does not bind, and the networks' LSTMs and attention have no
//! quantized CPU kernels there at all.

use std::fmt;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tch::Device;

use super::golden::{GoldenFile, verify_loaded};
use super::{Model, NnError, ObsBatch, Precision, host_f32};
use crate::sim::action::FlatLayout;
use crate::sim::config::Config;
use crate::sim::env::Env;
use crate::sim::goal::GoalConfig;
use crate::sim::mask;
use crate::sim::obs::Observation;

/// How close the reduced format must stay to `f32`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Largest total variation between the two masked policies of a state.
    pub policy_tv: f64,
    /// Largest difference of the value estimates.
    pub value: f64,
    /// Largest difference of one cell's goal-block probability.
    pub goal: f64,
    /// Two chosen moves count as the same when `f32` gives them log-probabilities
    /// this close (a near-tie that either format may break).
    pub tie: f64,
    /// Largest absolute error against the reference's golden outputs (every
    /// tensor of the golden file: logits, value, goal, states).
    pub golden: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self {
            policy_tv: 0.02,
            value: 0.02,
            goal: 0.02,
            tie: 0.05,
            golden: 0.1,
        }
    }
}

/// What [`check`] found for one model and format.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionCheck {
    /// The model's name.
    pub model: String,
    /// The format checked.
    pub precision: Precision,
    /// States compared.
    pub states: usize,
    /// States where both formats chose the same move (near-ties included).
    pub same_moves: usize,
    /// Largest total variation between the masked policies.
    pub policy_tv: f64,
    /// Largest value difference.
    pub value_error: f64,
    /// Largest goal-probability difference (0 for models without a goal head).
    pub goal_error: f64,
    /// Largest error against the golden outputs, if the model has a golden file.
    pub golden_error: Option<f64>,
    /// What exceeded the tolerance; empty when the format may be used.
    pub failures: Vec<String>,
}

impl PrecisionCheck {
    /// Whether the model may compute in the checked format.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl fmt::Display for PrecisionCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {} ({}/{} moves the same, policy TV {:.4}, value {:.4}, goal {:.4}, goldens {}; int8 not offered)",
            self.model,
            self.precision,
            if self.passed() {
                "used"
            } else {
                "not used, f32 kept"
            },
            self.same_moves,
            self.states,
            self.policy_tv,
            self.value_error,
            self.goal_error,
            self.golden_error
                .map_or_else(|| "none".to_owned(), |e| format!("{e:.4}")),
        )?;
        for failure in &self.failures {
            write!(f, "\n  {failure}")?;
        }
        Ok(())
    }
}

/// How a served model's number format is chosen on the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FormatChoice {
    /// bfloat16 where [`check`] passes, else `f32` ([`choose_on_cpu`]).
    #[default]
    Checked,
    /// Always `f32` (the reference's bits; what the goldens hold).
    F32,
}

impl std::str::FromStr for FormatChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "checked" | "auto" => Ok(Self::Checked),
            "f32" => Ok(Self::F32),
            _ => Err(format!(
                "unknown format choice {s:?} (expected checked or f32)"
            )),
        }
    }
}

impl fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Checked => "checked",
            Self::F32 => "f32",
        })
    }
}

/// Rollouts the states come from, and their length.
const EPISODES: u64 = 2;
const STEPS: usize = 40;
/// Every this many steps each player's observation is kept.
const KEEP_EVERY: usize = 4;

/// The golden file of a shared model config (`<dir>/golden/<name>.safetensors`
/// beside `<dir>/<name>.json`), if there is one.
pub fn golden_file_of(config_path: &Path) -> Option<PathBuf> {
    let name = config_path.file_stem()?;
    let golden = config_path
        .parent()?
        .join("golden")
        .join(name)
        .with_extension("safetensors");
    golden.is_file().then_some(golden)
}

/// Compares `model` (in `f32`) with a copy computing in `precision` on the fixed
/// states of [`states`], and on `golden`'s inputs against its outputs if given.
pub fn check(
    model: &Model,
    precision: Precision,
    tolerance: &Tolerance,
    golden: Option<&Path>,
) -> Result<PrecisionCheck, NnError> {
    let reference = if model.precision() == Precision::F32 {
        None
    } else {
        Some(model.inference_copy(Precision::F32)?)
    };
    let reference = reference.as_ref().unwrap_or(model);
    let reduced = model.inference_copy(precision)?;
    let states = states(reference)?;
    let layout = *reference.layout();
    let los = reference.config().line_of_sight_masking();
    let want = outputs(reference, &states)?;
    let got = outputs(&reduced, &states)?;
    let mut result = PrecisionCheck {
        model: model.config().name.clone(),
        precision,
        states: states.len(),
        same_moves: 0,
        policy_tv: 0.0,
        value_error: 0.0,
        goal_error: 0.0,
        golden_error: None,
        failures: Vec::new(),
    };
    if let Some(path) = golden {
        let report = verify_loaded(&reduced, &GoldenFile::read(path)?)?;
        result.golden_error = Some(report.max_abs_error);
        if report.max_abs_error > tolerance.golden {
            result.failures.push(format!(
                "goldens: {:.4} > {} ({})",
                report.max_abs_error, tolerance.golden, report.worst_tensor
            ));
        }
    }
    let mut valid = vec![false; layout.len()];
    for (i, obs) in states.iter().enumerate() {
        mask::compute(obs, model.config().abilities, &layout, los, &mut valid);
        let p = masked_log_probs(&want.policy[i], &valid);
        let q = masked_log_probs(&got.policy[i], &valid);
        let tv = 0.5
            * p.iter()
                .zip(&q)
                .map(|(a, b)| (a.exp() - b.exp()).abs())
                .sum::<f64>();
        result.policy_tv = result.policy_tv.max(tv);
        let (a, b) = (argmax(&p), argmax(&q));
        if a == b || (p[a] - p[b]).abs() <= tolerance.tie {
            result.same_moves += 1;
        }
        result.value_error = result
            .value_error
            .max(f64::from((want.value[i] - got.value[i]).abs()));
        if let (Some(w), Some(g)) = (&want.goal, &got.goal) {
            result.goal_error = result.goal_error.max(goal_error(&w[i], &g[i]));
        }
    }
    let limits = [
        (
            "policy total variation",
            result.policy_tv,
            tolerance.policy_tv,
        ),
        ("value", result.value_error, tolerance.value),
        ("goal probability", result.goal_error, tolerance.goal),
    ];
    for (what, got, limit) in limits {
        if got > limit {
            result.failures.push(format!(
                "{what}: {got:.4} > {limit} (largest over the states)"
            ));
        }
    }
    if result.same_moves < result.states {
        result.failures.push(format!(
            "{} of {} states choose another move",
            result.states - result.same_moves,
            result.states
        ));
    }
    Ok(result)
}

/// On the CPU, switches the model loaded from `config_path` to bfloat16 if
/// [`check`] passes with the default tolerance (and its golden file, if any);
/// returns the check (`None` on other devices, whose formats are chosen with
/// `--precision`).
///
/// The check runs on a thread of its own: libtorch's CPU kernels give each
/// calling thread an OpenMP team, and a team left on the caller's thread
/// competes with the inference thread's (a bf16 policy move took 7 ms instead
/// of 2.8 ms). The team ends with the thread.
pub fn choose_on_cpu(
    model: &mut Model,
    config_path: &Path,
) -> Result<Option<PrecisionCheck>, NnError> {
    std::thread::scope(|scope| scope.spawn(|| choose_here(model, config_path)).join())
        .map_err(|_| NnError::ServiceThread("the number-format check panicked".into()))?
}

fn choose_here(model: &mut Model, config_path: &Path) -> Result<Option<PrecisionCheck>, NnError> {
    if model.device() != Device::Cpu || model.precision() != Precision::F32 {
        return Ok(None);
    }
    let golden = golden_file_of(config_path);
    let result = check(
        model,
        Precision::Bf16,
        &Tolerance::default(),
        golden.as_deref(),
    )?;
    if result.passed() {
        model.set_precision(Precision::Bf16)?;
    }
    Ok(Some(result))
}

/// The states a model is checked on: every player's observation every
/// [`KEEP_EVERY`] steps of two seeded episodes in the model's own world, each
/// player sampling the model's masked `f32` policy (so the states are ones it
/// visits), the goal a fixed `basic` house.
pub fn states(model: &Model) -> Result<Vec<Observation>, NnError> {
    let config = model.config();
    let players = config.num_players.max(1);
    let size = config.world_size;
    let env_config = Config::from_json(&json!({
        "num_players": players,
        "horizon": STEPS + 1,
        "world_size": [size.width, size.height, size.depth],
        "random_start_locations": true,
        "players": (0..players).map(|p| json!({"player_name": format!("p{p}")})).collect::<Vec<_>>(),
        "abilities": {
            "teleportation": config.abilities.teleportation,
            "flying": config.abilities.flying,
            "inf_blocks": config.abilities.inf_blocks,
        },
    }))
    .map_err(|e| NnError::BadInput {
        model: config.name.clone(),
        input: "env",
        message: e.to_string(),
    })?;
    let goal_error = |message: String| NnError::BadInput {
        model: config.name.clone(),
        input: "goal",
        message,
    };
    let mut goals = GoalConfig::from_env("basic", &json!({}))
        .map_err(|e| goal_error(e.to_string()))?
        .build()
        .map_err(|e| goal_error(e.to_string()))?;
    let layout = FlatLayout::new(size, config.abilities);
    let los = model.config().line_of_sight_masking();
    let mut valid = vec![false; layout.len()];
    let mut env = Env::new(env_config);
    let mut kept = Vec::new();
    for episode in 0..EPISODES {
        let mut rng = StdRng::seed_from_u64(0x5eed ^ episode);
        env.reset(goals.as_mut(), &mut rng)
            .map_err(|e| goal_error(e.to_string()))?;
        for step in 0..STEPS {
            let mut observations = Vec::with_capacity(players);
            for p in 0..players {
                let mut obs = env.new_observation();
                env.observe(p, &mut obs).map_err(|e| NnError::BadInput {
                    model: config.name.clone(),
                    input: "observation",
                    message: e.to_string(),
                })?;
                observations.push(obs);
            }
            let policy = outputs(model, &observations)?.policy;
            let mut actions = Vec::with_capacity(players);
            for (obs, logits) in observations.iter().zip(&policy) {
                mask::compute(obs, config.abilities, &layout, los, &mut valid);
                let log_probs = masked_log_probs(logits, &valid);
                let flat = sample(&log_probs, &mut rng);
                actions.push(layout.action(flat).map_err(|e| NnError::BadInput {
                    model: config.name.clone(),
                    input: "action",
                    message: e.to_string(),
                })?);
            }
            if step % KEEP_EVERY == 0 {
                kept.extend(observations);
            }
            let outcome = env.step(&actions).map_err(|e| NnError::BadInput {
                model: config.name.clone(),
                input: "step",
                message: e.to_string(),
            })?;
            if outcome.done {
                break;
            }
        }
    }
    Ok(kept)
}

/// The heads [`check`] compares, per state, on the CPU.
struct HeadOutputs {
    policy: Vec<Vec<f32>>,
    value: Vec<f32>,
    /// Goal logits per state, `(10, cells)`, if the model predicts the goal.
    goal: Option<Vec<Vec<f32>>>,
}

/// One forward pass over `states` from the zero state.
fn outputs(model: &Model, states: &[Observation]) -> Result<HeadOutputs, NnError> {
    let refs: Vec<&Observation> = states.iter().collect();
    let prev: Option<Vec<usize>> = model
        .config()
        .net
        .use_prev_action
        .then(|| vec![0; states.len()]);
    let batch = ObsBatch::from_observations(&refs, prev.as_deref(), model.device())?;
    let out = model.forward(&batch, None)?;
    let precision = model.precision();
    let host = |t: &tch::Tensor| host_f32(t, precision).map_err(NnError::from);
    let n = states.len();
    let split = |all: Vec<f32>| -> Vec<Vec<f32>> {
        let per = all.len() / n.max(1);
        all.chunks(per.max(1)).map(<[f32]>::to_vec).collect()
    };
    let goal = host(&out.goal_logits)?;
    Ok(HeadOutputs {
        policy: split(host(&out.flat_logits)?),
        value: host(&out.value)?,
        goal: (!goal.is_empty()).then(|| split(goal)),
    })
}

/// Log-softmax over the valid actions; invalid ones get `-inf`. With no valid
/// action, every action counts (the env then takes NOOP anyway).
fn masked_log_probs(logits: &[f32], valid: &[bool]) -> Vec<f64> {
    let any = valid.iter().any(|&v| v);
    let ok = |i: usize| !any || valid[i];
    let max = (0..logits.len())
        .filter(|&i| ok(i))
        .map(|i| f64::from(logits[i]))
        .fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = (0..logits.len())
        .filter(|&i| ok(i))
        .map(|i| (f64::from(logits[i]) - max).exp())
        .sum();
    let log_total = max + total.ln();
    (0..logits.len())
        .map(|i| {
            if ok(i) {
                f64::from(logits[i]) - log_total
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect()
}

fn argmax(values: &[f64]) -> usize {
    values
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, &v)| {
            if v > best.1 { (i, v) } else { best }
        })
        .0
}

fn sample(log_probs: &[f64], rng: &mut impl Rng) -> usize {
    let mut u: f64 = rng.random();
    for (i, lp) in log_probs.iter().enumerate() {
        u -= lp.exp();
        if u <= 0.0 {
            return i;
        }
    }
    argmax(log_probs)
}

/// Largest difference of one cell's block probability; `want` and `got` are
/// `(10, cells)` logits.
fn goal_error(want: &[f32], got: &[f32]) -> f64 {
    let blocks = 10;
    let cells = want.len() / blocks;
    let mut worst = 0.0f64;
    for c in 0..cells {
        let probs = |logits: &[f32]| -> Vec<f64> {
            let column: Vec<f64> = (0..blocks)
                .map(|b| f64::from(logits[b * cells + c]))
                .collect();
            let max = column.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = column.iter().map(|v| (v - max).exp()).sum();
            column.iter().map(|v| (v - max).exp() / total).collect()
        };
        let (p, q) = (probs(want), probs(got));
        for (a, b) in p.iter().zip(&q) {
            worst = worst.max((a - b).abs());
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_log_probs_ignore_invalid_actions_and_sum_to_one() {
        let p = masked_log_probs(&[1.0, 5.0, 1.0], &[true, false, true]);
        assert_eq!(p[1], f64::NEG_INFINITY);
        assert!((p[0].exp() + p[2].exp() - 1.0).abs() < 1e-12);
        assert!((p[0] - p[2]).abs() < 1e-12);
    }

    #[test]
    fn goal_error_is_the_largest_probability_gap() {
        // Two cells, ten blocks: equal logits, then one block pushed up.
        let want = vec![0.0f32; 20];
        let mut got = want.clone();
        got[1] = 10.0; // block 0 of cell 1
        let error = goal_error(&want, &got);
        assert!(error > 0.8 && error < 1.0, "{error}");
        assert_eq!(goal_error(&want, &want), 0.0);
    }
}
