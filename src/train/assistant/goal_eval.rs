//! Scoring the goal head on goals no training sees (item 3 of the recipe: the
//! goal head must beat the block-frequency baseline before search is trusted
//! with it).
//!
//! The held-out set is played once: the human model builds held-out goals while
//! the assistant stands by, and each step's assistant observation (goal hidden)
//! is kept with the true goal. The network is scored on it as it is trained:
//! fragments unrolled from the zero state, as pretraining trains them, each
//! voxel's goal logits against the true block (cross-entropy in nats, and the
//! share of voxels whose most likely block is right). The baseline predicts every
//! voxel with the block shares of goals drawn from the training generator.

use rand::SeedableRng;
use rand::rngs::StdRng;
use tch::{Kind, Tensor};

use super::AssistantError;
use super::config::{ResolvedConfig, ValidationSettings};
use super::replay::{Fragment, Sample};
use super::selfplay::{AssistantPlays, SelfPlay, SelfPlaySettings};
use crate::agents::spec::{AgentFactory, AgentSpec};
use crate::nn::{InferenceService, Model, ObsBatch, ServiceConfig};
use crate::sim::block::NUM_BLOCKS;
use crate::sim::env::Env;

/// Fragments scored per forward pass.
const FRAGMENTS_PER_PASS: usize = 32;

/// Per-voxel goal prediction quality.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoalScores {
    /// Mean cross-entropy per voxel, in nats.
    pub cross_entropy: f64,
    /// Share of voxels whose most likely block is the goal's.
    pub accuracy: f64,
    /// Per confidence level of [`CONFIDENCE_LEVELS`], the places the head is
    /// that sure of.
    pub confident: [ConfidentPlaces; CONFIDENCE_LEVELS.len()],
}

/// The air cells where the goal head gives one block more than a probability:
/// at 2/3 and above, placing it has positive expected reward with `place_wrong`
/// -1 (a correct block +1; a wrong one -2 where the goal is air, -1 where it is
/// another block), so an assistant can only help there; the higher levels show
/// whether the head's confidence means anything on these goals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfidentPlaces {
    /// The probability the best block must exceed.
    pub level: f64,
    /// Such cells per observation.
    pub per_observation: f64,
    /// Share of them whose goal is that block (NaN if there are none): above
    /// 2/3, placing them gains on average.
    pub precision: f64,
}

/// The confidence levels scored: 2/3, where placing starts to pay, and higher.
pub const CONFIDENCE_LEVELS: [f64; 4] = [2.0 / 3.0, 0.8, 0.9, 0.97];

/// The held-out episodes and the baseline's block shares.
#[derive(Debug)]
pub struct HeldOutGoals {
    fragments: Vec<Fragment>,
    shares: [f64; NUM_BLOCKS],
    samples: usize,
}

impl HeldOutGoals {
    /// Plays the held-out episodes with `model` behind the inference service
    /// (only the value head's bootstrap uses it; the assistant does not act) and
    /// draws the baseline's training goals. Returns the model with the set.
    pub fn collect(
        config: &ResolvedConfig,
        settings: &ValidationSettings,
        human: &AgentSpec,
        factory: &dyn AgentFactory,
        model: Model,
        line_of_sight: bool,
        threads: usize,
    ) -> Result<(Model, Self), AssistantError> {
        let goals = settings
            .goal_config()
            .map_err(|message| AssistantError::Config {
                path: "validation".into(),
                message,
            })?;
        let mut selfplay = SelfPlay::new(
            &SelfPlaySettings {
                env: config.env.clone(),
                goals,
                human: human.clone(),
                mcts: config.mcts.clone(),
                num_envs: settings.episodes,
                threads,
                seed: settings.seed ^ 0x005e_ed0f_4e1d,
                line_of_sight,
                gamma: config.file.training.gamma,
                assistant: AssistantPlays::Noop,
                starts: None,
            },
            factory,
            false,
        )?;
        let service = InferenceService::spawn(model, ServiceConfig::default())?;
        let collected = selfplay.collect(service.handle(), settings.steps);
        let (model, _) = service.shutdown_into_model()?;
        let fragments = collected?.fragments;
        let samples = fragments.iter().map(|f| f.samples.len()).sum();
        let shares = training_block_shares(config, settings)?;
        Ok((
            model,
            Self {
                fragments,
                shares,
                samples,
            },
        ))
    }

    /// Samples (assistant observations) in the set.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The block-frequency baseline on the set.
    pub fn baseline(&self) -> GoalScores {
        let best = (0..NUM_BLOCKS)
            .max_by(|&a, &b| self.shares[a].total_cmp(&self.shares[b]))
            .unwrap_or(0);
        let (mut ce, mut right, mut voxels) = (0.0, 0usize, 0usize);
        for s in self.fragments.iter().flat_map(|f| &f.samples) {
            for &g in s.goal.iter() {
                ce -= self.shares[g as usize].ln();
                right += usize::from(g as usize == best);
                voxels += 1;
            }
        }
        GoalScores {
            cross_entropy: ce / voxels.max(1) as f64,
            accuracy: right as f64 / voxels.max(1) as f64,
            // No block's share reaches 2/3 of a goal's cells but air's.
            confident: CONFIDENCE_LEVELS.map(|level| ConfidentPlaces {
                level,
                per_observation: 0.0,
                precision: f64::NAN,
            }),
        }
    }

    /// The share of voxels whose current block already is the goal's: what
    /// predicting "the goal is the world as it stands" would get right. Much of
    /// a goal (the ground, blocks already built) is visible; the goal head earns
    /// its keep on the rest.
    pub fn current_world_accuracy(&self) -> f64 {
        let (mut right, mut voxels) = (0usize, 0usize);
        for s in self.fragments.iter().flat_map(|f| &f.samples) {
            // Channel 0 of the world observation is the current blocks.
            let current = &s.observation.world[..s.goal.len()];
            right += current
                .iter()
                .zip(s.goal.iter())
                .filter(|(c, g)| c == g)
                .count();
            voxels += s.goal.len();
        }
        right as f64 / voxels.max(1) as f64
    }

    /// The goal head of `model` on the set (evaluation mode, no gradients).
    pub fn score(&self, model: &Model) -> Result<GoalScores, AssistantError> {
        let _no_grad = tch::no_grad_guard();
        let device = model.device();
        let (mut ce, mut right, mut voxels) = (0.0, 0.0, 0.0);
        let mut confident = [0.0f64; CONFIDENCE_LEVELS.len()];
        let mut confident_right = [0.0f64; CONFIDENCE_LEVELS.len()];
        let mut scored = 0.0f64;
        for group in self.fragments.chunks(FRAGMENTS_PER_PASS) {
            let mut state = model.initial_state(group.len());
            let steps = group.iter().map(|f| f.samples.len()).max().unwrap_or(0);
            for t in 0..steps {
                // Fragments that ended are repeated at their last step and
                // left out of the sums, so the batch keeps its rows for the
                // recurrent state.
                let batch: Vec<&Sample> = group
                    .iter()
                    .map(|f| &f.samples[t.min(f.samples.len() - 1)])
                    .collect();
                let live: Vec<f32> = group
                    .iter()
                    .map(|f| if t < f.samples.len() { 1.0 } else { 0.0 })
                    .collect();
                let observations: Vec<_> = batch.iter().map(|s| &s.observation).collect();
                let prev: Vec<usize> = batch.iter().map(|s| s.prev_action as usize).collect();
                let inputs = ObsBatch::from_observations(&observations, Some(&prev), device)?;
                let state_in = (!state.is_empty()).then_some(&state);
                let outputs = model.forward_t(&inputs, state_in, false)?;
                let goal: Vec<i64> = batch
                    .iter()
                    .flat_map(|s| s.goal.iter().map(|&g| i64::from(g)))
                    .collect();
                let logits = outputs.goal_logits.to_kind(Kind::Float);
                let shape = logits.size();
                let target = Tensor::from_slice(&goal)
                    .reshape([shape[0], shape[2], shape[3], shape[4]])
                    .to_device(device);
                let weight = Tensor::from_slice(&live).to_device(device);
                let per_voxel = -logits
                    .log_softmax(1, Kind::Float)
                    .gather(1, &target.unsqueeze(1), false)
                    .squeeze_dim(1);
                let hits = logits
                    .argmax(1, false)
                    .eq_tensor(&target)
                    .to_kind(Kind::Float);
                let cells = (shape[2] * shape[3] * shape[4]) as f64;
                let per_sample = |t: Tensor| -> f64 {
                    (t.flatten(1, -1).sum_dim_intlist(1, false, Kind::Float) * &weight)
                        .sum(Kind::Float)
                        .double_value(&[])
                };
                // The most likely non-air block in every cell that is air now.
                let current: Vec<i64> = batch
                    .iter()
                    .flat_map(|s| {
                        s.observation.world[..s.goal.len()]
                            .iter()
                            .map(|&b| i64::from(b))
                    })
                    .collect();
                let is_air = Tensor::from_slice(&current)
                    .reshape([shape[0], shape[2], shape[3], shape[4]])
                    .to_device(device)
                    .eq(0);
                let (best_p, best) = logits
                    .softmax(1, Kind::Float)
                    .narrow(1, 1, shape[1] - 1)
                    .max_dim(1, false);
                let best_right = (best + 1).eq_tensor(&target);
                for (k, &level) in CONFIDENCE_LEVELS.iter().enumerate() {
                    let places = best_p.gt(level).logical_and(&is_air);
                    let places_right = places.logical_and(&best_right).to_kind(Kind::Float);
                    confident[k] += per_sample(places.to_kind(Kind::Float));
                    confident_right[k] += per_sample(places_right);
                }
                let live_samples = f64::from(live.iter().sum::<f32>());
                scored += live_samples;
                ce += per_sample(per_voxel);
                right += per_sample(hits);
                voxels += live_samples * cells;
                state = outputs.state;
            }
        }
        Ok(GoalScores {
            cross_entropy: ce / voxels.max(1.0),
            accuracy: right / voxels.max(1.0),
            confident: std::array::from_fn(|k| ConfidentPlaces {
                level: CONFIDENCE_LEVELS[k],
                per_observation: confident[k] / scored.max(1.0),
                precision: if confident[k] > 0.0 {
                    confident_right[k] / confident[k]
                } else {
                    f64::NAN
                },
            }),
        })
    }
}

/// Block shares over the voxels of goals drawn from the training generator, as
/// the env places them; every block keeps a small share so that the baseline's
/// cross-entropy stays finite.
fn training_block_shares(
    config: &ResolvedConfig,
    settings: &ValidationSettings,
) -> Result<[f64; NUM_BLOCKS], AssistantError> {
    let mut goals = config.goals.build()?;
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0xba5e_11e5);
    let mut counts = [1.0f64; NUM_BLOCKS];
    for _ in 0..settings.baseline_goals {
        // A fresh env each time: a reset with no step since the last keeps the
        // goal.
        let mut env = Env::new(config.env.clone());
        env.reset(goals.as_mut(), &mut rng)?;
        for &b in env.goal().ids() {
            counts[b as usize] += 1.0;
        }
    }
    let total: f64 = counts.iter().sum();
    Ok(counts.map(|c| c / total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_predicts_the_commonest_block_with_its_shares() {
        let mut shares = [0.0; NUM_BLOCKS];
        shares[0] = 0.75;
        shares[2] = 0.25;
        let sample = |goal: Vec<u8>| Sample {
            observation: crate::sim::obs::Observation::new(
                crate::sim::coords::WorldSize::new(2, 2, 1),
                2,
            ),
            prev_action: 0,
            valid: vec![1],
            policy: vec![(0, 1.0)],
            reward: 0.0,
            value_target: 0.0,
            root_value: 0.0,
            goal: goal.into(),
            played_goal_logits: None,
            human_action: 0,
            human_policy: Vec::new(),
        };
        let set = HeldOutGoals {
            fragments: vec![Fragment {
                initial_state: None,
                samples: vec![sample(vec![0, 0, 2, 0])],
            }],
            shares,
            samples: 1,
        };
        let b = set.baseline();
        assert!((b.accuracy - 0.75).abs() < 1e-12);
        // The blank observation's world is all air (0): three of four voxels.
        assert!((set.current_world_accuracy() - 0.75).abs() < 1e-12);
        let expected = -(3.0 * 0.75f64.ln() + 0.25f64.ln()) / 4.0;
        assert!((b.cross_entropy - expected).abs() < 1e-12);
    }
}
