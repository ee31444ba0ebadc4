//! Samples to tensors: the network's inputs and the loss's targets.

use tch::{Device, Kind, Tensor};

use super::loss::Targets;
use super::replay::{Sample, bit, from_bf16};
use crate::nn::{NnError, ObsBatch};
use crate::sim::block::NUM_BLOCKS;

/// The inputs and targets of `samples`, each weighted by `weights` (0 for
/// padding), over `n_actions` flat actions, on `device`. The goal KL's targets
/// are included only if every sample kept its played goal logits.
pub fn inputs_and_targets(
    samples: &[&Sample],
    weights: &[f32],
    n_actions: usize,
    device: Device,
) -> Result<(ObsBatch, Targets), NnError> {
    assert_eq!(samples.len(), weights.len(), "one weight per sample");
    let observations: Vec<_> = samples.iter().map(|s| &s.observation).collect();
    let prev: Vec<usize> = samples.iter().map(|s| s.prev_action as usize).collect();
    let inputs = ObsBatch::from_observations(&observations, Some(&prev), device)?;
    let b = samples.len();
    let mut policy = vec![0f32; b * n_actions];
    let mut valid = vec![false; b * n_actions];
    let mut human = vec![0f32; b * n_actions];
    for (i, s) in samples.iter().enumerate() {
        let row = i * n_actions;
        for &(a, p) in &s.policy {
            policy[row + a as usize] = p;
        }
        for (a, p) in s.human_target() {
            human[row + a as usize] = p;
        }
        for (a, v) in valid[row..row + n_actions].iter_mut().enumerate() {
            *v = bit(&s.valid, a);
        }
    }
    let size = samples[0].observation.size();
    let [x, y, z] = size.axes().map(|a| a as i64);
    let cells = size.num_cells();
    let goal: Vec<i64> = samples
        .iter()
        .flat_map(|s| s.goal.iter().map(|&g| i64::from(g)))
        .collect();
    let played_goal_logits = samples
        .iter()
        .all(|s| s.played_goal_logits.is_some())
        .then(|| {
            let logits: Vec<f32> = samples
                .iter()
                .flat_map(|s| {
                    s.played_goal_logits
                        .as_deref()
                        .unwrap_or_default()
                        .iter()
                        .map(|&h| from_bf16(h))
                })
                .collect();
            debug_assert_eq!(logits.len(), b * NUM_BLOCKS * cells);
            Tensor::from_slice(&logits)
                .reshape([b as i64, NUM_BLOCKS as i64, x, y, z])
                .to_device(device)
        });
    let floats = |f: &dyn Fn(&Sample) -> f32| {
        let v: Vec<f32> = samples.iter().map(|s| f(s)).collect();
        Tensor::from_slice(&v).to_device(device)
    };
    let targets = Targets {
        policy: Tensor::from_slice(&policy)
            .reshape([b as i64, n_actions as i64])
            .to_device(device),
        valid: Tensor::from_slice(&valid)
            .reshape([b as i64, n_actions as i64])
            .to_device(device),
        value: floats(&|s| s.value_target),
        goal: Tensor::from_slice(&goal)
            .reshape([b as i64, x, y, z])
            .to_device(device),
        played_goal_logits,
        human_policy: Tensor::from_slice(&human)
            .reshape([b as i64, n_actions as i64])
            .to_device(device),
        weight: Tensor::from_slice(weights)
            .to_kind(Kind::Float)
            .to_device(device),
    };
    Ok((inputs, targets))
}

/// The same targets for several batches, concatenated in order (a recurrent
/// unroll's time steps).
pub fn cat_targets(parts: Vec<Targets>) -> Targets {
    let cat =
        |f: &dyn Fn(&Targets) -> &Tensor| Tensor::cat(&parts.iter().map(f).collect::<Vec<_>>(), 0);
    let played = parts
        .iter()
        .map(|t| t.played_goal_logits.as_ref())
        .collect::<Option<Vec<_>>>()
        .map(|v| Tensor::cat(&v, 0));
    Targets {
        policy: cat(&|t| &t.policy),
        valid: cat(&|t| &t.valid),
        value: cat(&|t| &t.value),
        goal: cat(&|t| &t.goal),
        played_goal_logits: played,
        human_policy: cat(&|t| &t.human_policy),
        weight: cat(&|t| &t.weight),
    }
}
