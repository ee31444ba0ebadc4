//! Adam over a [`VarStore`]'s trainable tensors, with state that can be saved and
//! restored (tch's `nn::Optimizer` keeps its moments inside libtorch, out of
//! reach, so a resumed run would restart them from zero).
//!
//! The update is PyTorch's `torch.optim.Adam` (bias-corrected moments, `eps`
//! added after the square root); `weight_decay` is decoupled as in `AdamW`.
//! Gradients are first clipped by their global norm, as
//! `torch.nn.utils.clip_grad_norm_` does (RLlib's `grad_clip`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use super::error::TrainError;

/// Adam's hyperparameters, as they appear in training configs (unknown keys are
/// rejected).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamConfig {
    /// The base learning rate, multiplied by the schedule's factor.
    pub lr: f64,
    /// The first moment's decay.
    #[serde(default = "default_beta1")]
    pub beta1: f64,
    /// The second moment's decay.
    #[serde(default = "default_beta2")]
    pub beta2: f64,
    /// Added to the second moment's square root.
    #[serde(default = "default_eps")]
    pub eps: f64,
    /// Decoupled weight decay (`AdamW`): each step multiplies every weight by
    /// `1 - lr * weight_decay`. 0 = plain Adam.
    #[serde(default)]
    pub weight_decay: f64,
    /// Clip the gradients' global L2 norm to this (`None` = no clipping).
    #[serde(default)]
    pub grad_clip: Option<f64>,
    /// The learning-rate schedule.
    #[serde(default)]
    pub schedule: LrSchedule,
}

fn default_beta1() -> f64 {
    0.9
}
fn default_beta2() -> f64 {
    0.999
}
fn default_eps() -> f64 {
    1e-8
}

impl AdamConfig {
    /// Plain Adam at `lr` with PyTorch's defaults.
    pub fn new(lr: f64) -> Self {
        Self {
            lr,
            beta1: default_beta1(),
            beta2: default_beta2(),
            eps: default_eps(),
            weight_decay: 0.0,
            grad_clip: None,
            schedule: LrSchedule::Constant,
        }
    }

    /// The learning rate at optimizer step `step` (0-based: the first update).
    pub fn lr_at(&self, step: u64) -> f64 {
        self.lr * self.schedule.factor(step)
    }
}

/// A factor on the base learning rate as a function of the optimizer step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LrSchedule {
    /// Always 1.
    #[default]
    Constant,
    /// Piecewise linear through `points` (`[step, factor]`, steps increasing),
    /// held constant before the first and after the last point (RLlib's
    /// `lr_schedule`, as factors).
    Piecewise {
        /// The `[step, factor]` points.
        points: Vec<(u64, f64)>,
    },
    /// Linear warm-up from 0 over `warmup_steps`, then a cosine decay to
    /// `final_factor` at `total_steps`, held after.
    Cosine {
        /// Steps of linear warm-up.
        #[serde(default)]
        warmup_steps: u64,
        /// The step at which the decay ends.
        total_steps: u64,
        /// The factor from `total_steps` on.
        #[serde(default)]
        final_factor: f64,
    },
}

impl LrSchedule {
    /// The factor at `step`.
    pub fn factor(&self, step: u64) -> f64 {
        match self {
            Self::Constant => 1.0,
            Self::Piecewise { points } => {
                let Some(&(first_step, first)) = points.first() else {
                    return 1.0;
                };
                if step <= first_step {
                    return first;
                }
                for w in points.windows(2) {
                    let ((s0, f0), (s1, f1)) = (w[0], w[1]);
                    if step <= s1 {
                        let t = (step - s0) as f64 / (s1 - s0).max(1) as f64;
                        return f0 + t * (f1 - f0);
                    }
                }
                points.last().map_or(1.0, |p| p.1)
            }
            Self::Cosine {
                warmup_steps,
                total_steps,
                final_factor,
            } => {
                if step < *warmup_steps {
                    return (step + 1) as f64 / *warmup_steps as f64;
                }
                if step >= *total_steps {
                    return *final_factor;
                }
                let span = (total_steps - warmup_steps).max(1) as f64;
                let t = (step - warmup_steps) as f64 / span;
                final_factor + (1.0 - final_factor) * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
            }
        }
    }

    /// Checks the schedule's shape; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::Constant => Ok(()),
            Self::Piecewise { points } => {
                if points.windows(2).any(|w| w[1].0 <= w[0].0) {
                    return Err("schedule.points: steps must increase".into());
                }
                Ok(())
            }
            Self::Cosine {
                warmup_steps,
                total_steps,
                ..
            } => {
                if warmup_steps > total_steps {
                    return Err("schedule: warmup_steps exceeds total_steps".into());
                }
                Ok(())
            }
        }
    }
}

/// What one [`Adam::step`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepStats {
    /// The gradients' global L2 norm before clipping.
    pub grad_norm: f64,
    /// The learning rate used.
    pub lr: f64,
}

/// Adam over every trainable variable of a [`VarStore`] (BatchNorm's running
/// statistics are not trainable and are left to the forward pass).
#[derive(Debug)]
pub struct Adam {
    config: AdamConfig,
    /// The trainable variables by state-dict name (sorted, so saved state lines
    /// up with the variables whatever order the store lists them in).
    params: Vec<(String, Tensor)>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    step: u64,
}

impl Adam {
    /// An optimizer for the trainable variables of `vs`, with zero moments.
    pub fn new(vs: &VarStore, config: AdamConfig) -> Self {
        let params: Vec<(String, Tensor)> = vs
            .variables()
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let zeros = || -> Vec<Tensor> { params.iter().map(|(_, p)| p.zeros_like()).collect() };
        Self {
            m: zeros(),
            v: zeros(),
            params,
            config,
            step: 0,
        }
    }

    /// The hyperparameters.
    pub fn config(&self) -> &AdamConfig {
        &self.config
    }

    /// Updates taken so far.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// The learning rate the next step will use.
    pub fn current_lr(&self) -> f64 {
        self.config.lr_at(self.step)
    }

    /// Clears every gradient (before the next `backward`).
    pub fn zero_grad(&mut self) {
        for (_, p) in &mut self.params {
            p.zero_grad();
        }
    }

    /// `zero_grad`, `loss.backward()` and [`Adam::step`].
    pub fn backward_step(&mut self, loss: &Tensor) -> StepStats {
        self.zero_grad();
        loss.backward();
        self.step()
    }

    /// One update from the gradients the last `backward` left. Variables without
    /// a gradient (unused by the loss) keep their moments and values.
    pub fn step(&mut self) -> StepStats {
        let _guard = tch::no_grad_guard();
        let grads: Vec<Option<Tensor>> = self
            .params
            .iter()
            .map(|(_, p)| {
                let g = p.grad();
                g.defined().then_some(g)
            })
            .collect();
        let squares: Vec<Tensor> = grads
            .iter()
            .flatten()
            .map(|g| g.to_kind(Kind::Float).square().sum(Kind::Float))
            .collect();
        let grad_norm = if squares.is_empty() {
            0.0
        } else {
            Tensor::stack(&squares, 0)
                .sum(Kind::Float)
                .sqrt()
                .double_value(&[])
        };
        let clip = match self.config.grad_clip {
            Some(max) if grad_norm > max => max / (grad_norm + 1e-6),
            _ => 1.0,
        };
        let lr = self.current_lr();
        self.step += 1;
        let c = &self.config;
        let t = self.step as i32;
        let bias1 = 1.0 - c.beta1.powi(t);
        let bias2 = 1.0 - c.beta2.powi(t);
        for (i, grad) in grads.into_iter().enumerate() {
            let Some(mut g) = grad else { continue };
            if clip != 1.0 {
                g = &g * clip;
            }
            let p = &mut self.params[i].1;
            let _ = self.m[i]
                .g_mul_scalar_(c.beta1)
                .g_add_(&(&g * (1.0 - c.beta1)));
            let _ = self.v[i]
                .g_mul_scalar_(c.beta2)
                .g_add_(&(g.square() * (1.0 - c.beta2)));
            if c.weight_decay != 0.0 {
                let _ = p.g_mul_scalar_(1.0 - lr * c.weight_decay);
            }
            let denom = (&self.v[i] / bias2).sqrt() + c.eps;
            let update = (&self.m[i] / &denom) * (lr / bias1);
            let _ = p.g_sub_(&update);
        }
        StepStats { grad_norm, lr }
    }

    /// The state as named tensors: `adam.step`, then `m.<name>` and `v.<name>` per
    /// variable (on the CPU).
    pub fn state_tensors(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![(
            "adam.step".to_owned(),
            Tensor::from_slice(&[self.step as i64]),
        )];
        for (i, (name, _)) in self.params.iter().enumerate() {
            out.push((format!("m.{name}"), self.m[i].to_device(Device::Cpu)));
            out.push((format!("v.{name}"), self.v[i].to_device(Device::Cpu)));
        }
        out
    }

    /// Writes the state as safetensors.
    pub fn save(&self, path: &Path) -> Result<(), TrainError> {
        Tensor::write_safetensors(&self.state_tensors(), path)?;
        Ok(())
    }

    /// Restores a state written by [`Adam::save`] for the same variables; a
    /// missing, extra or mis-shaped moment is an error.
    pub fn load(&mut self, path: &Path) -> Result<(), TrainError> {
        let bad = |message: String| TrainError::Checkpoint {
            path: path.to_owned(),
            message,
        };
        if !path.exists() {
            return Err(bad("optimizer state missing".into()));
        }
        let mut file: BTreeMap<String, Tensor> =
            Tensor::read_safetensors(path)?.into_iter().collect();
        let step = file
            .remove("adam.step")
            .ok_or_else(|| bad("no adam.step".into()))?;
        let step = step.int64_value(&[0]);
        let device = self.params.first().map_or(Device::Cpu, |(_, p)| p.device());
        let mut m = Vec::with_capacity(self.params.len());
        let mut v = Vec::with_capacity(self.params.len());
        for (name, p) in &self.params {
            for (prefix, out) in [("m", &mut m), ("v", &mut v)] {
                let key = format!("{prefix}.{name}");
                let t = file
                    .remove(&key)
                    .ok_or_else(|| bad(format!("no {key} for variable {name}")))?;
                if t.size() != p.size() {
                    return Err(bad(format!(
                        "{key} has shape {:?}, the variable {:?}",
                        t.size(),
                        p.size()
                    )));
                }
                out.push(t.to_kind(p.kind()).to_device(device));
            }
        }
        if let Some(extra) = file.keys().next() {
            return Err(bad(format!("{extra} matches no trainable variable")));
        }
        self.m = m;
        self.v = v;
        self.step = u64::try_from(step).map_err(|_| bad(format!("adam.step {step}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::nn::{self, Module};

    fn store(seed: i64) -> (VarStore, nn::Linear) {
        tch::manual_seed(seed);
        let vs = VarStore::new(Device::Cpu);
        let lin = nn::linear(vs.root() / "lin", 3, 2, Default::default());
        (vs, lin)
    }

    fn loss(lin: &nn::Linear) -> Tensor {
        let x = Tensor::from_slice(&[1.0f32, -2.0, 0.5, 0.25, 3.0, -1.0]).reshape([2, 3]);
        let y = Tensor::from_slice(&[0.5f32, -0.5, 1.0, 2.0]).reshape([2, 2]);
        (lin.forward(&x) - y).square().mean(Kind::Float)
    }

    fn weights(vs: &VarStore) -> Vec<f32> {
        let mut all: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.iter()
            .flat_map(|(_, t)| Vec::<f32>::try_from(t.flatten(0, -1)).unwrap())
            .collect()
    }

    #[test]
    fn the_first_step_moves_each_weight_by_lr_against_its_gradient_sign() {
        let (vs, lin) = store(1);
        let before = weights(&vs);
        let mut adam = Adam::new(&vs, AdamConfig::new(0.01));
        let l = loss(&lin);
        adam.zero_grad();
        l.backward();
        let grads: Vec<f32> = {
            let mut all: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
            all.sort_by(|a, b| a.0.cmp(&b.0));
            all.iter()
                .flat_map(|(_, t)| Vec::<f32>::try_from(t.grad().flatten(0, -1)).unwrap())
                .collect()
        };
        adam.step();
        // With zero moments, m̂ / √v̂ = g / |g|: each weight moves by lr.
        for ((b, a), g) in before.iter().zip(weights(&vs)).zip(grads) {
            let want = b - 0.01 * g.signum();
            assert!((a - want).abs() < 1e-5, "{a} vs {want}");
        }
        assert!(loss(&lin).double_value(&[]) < l.double_value(&[]));
    }

    #[test]
    fn clipping_scales_the_gradient_to_the_norm() {
        let (vs, lin) = store(2);
        let mut config = AdamConfig::new(0.1);
        config.grad_clip = Some(1e-3);
        config.beta1 = 0.0;
        config.beta2 = 0.0;
        let mut adam = Adam::new(&vs, config);
        let stats = adam.backward_step(&loss(&lin));
        assert!(stats.grad_norm > 1e-3);
        // β = 0 makes the first moment the clipped gradient itself.
        let norm: f64 = adam
            .m
            .iter()
            .map(|m| m.square().sum(Kind::Float).double_value(&[]))
            .sum::<f64>()
            .sqrt();
        assert!((norm - 1e-3).abs() < 1e-6, "{norm}");
    }

    #[test]
    fn a_restored_state_continues_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adam.safetensors");
        let mut config = AdamConfig::new(0.05);
        config.weight_decay = 0.1;
        config.schedule = LrSchedule::Piecewise {
            points: vec![(0, 1.0), (4, 0.5)],
        };
        let (vs_a, lin_a) = store(3);
        let mut a = Adam::new(&vs_a, config.clone());
        for _ in 0..5 {
            a.backward_step(&loss(&lin_a));
        }

        let (vs_b, lin_b) = store(3);
        let mut b = Adam::new(&vs_b, config.clone());
        for _ in 0..2 {
            b.backward_step(&loss(&lin_b));
        }
        b.save(&path).unwrap();
        let weights_path = dir.path().join("w.safetensors");
        vs_b.save(&weights_path).unwrap();

        let (mut vs_c, lin_c) = store(99);
        vs_c.load(&weights_path).unwrap();
        let mut c = Adam::new(&vs_c, config);
        c.load(&path).unwrap();
        assert_eq!(c.step_count(), 2);
        for _ in 0..3 {
            c.backward_step(&loss(&lin_c));
        }
        assert_eq!(weights(&vs_a), weights(&vs_c));
    }

    #[test]
    fn schedules_interpolate_and_hold() {
        let p = LrSchedule::Piecewise {
            points: vec![(10, 1.0), (20, 0.0)],
        };
        assert_eq!(p.factor(0), 1.0);
        assert_eq!(p.factor(15), 0.5);
        assert_eq!(p.factor(100), 0.0);
        let c = LrSchedule::Cosine {
            warmup_steps: 10,
            total_steps: 110,
            final_factor: 0.1,
        };
        assert_eq!(c.factor(0), 0.1);
        assert_eq!(c.factor(9), 1.0);
        assert!((c.factor(60) - 0.55).abs() < 1e-9);
        assert_eq!(c.factor(500), 0.1);
        assert!(
            LrSchedule::Piecewise {
                points: vec![(5, 1.0), (5, 0.0)]
            }
            .validate()
            .is_err()
        );
    }
}
