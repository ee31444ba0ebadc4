//! The JSON config of `mbag train assistant`: the env (with its goals), the
//! network, the search, the training loop and the loss weights. Defaults are the
//! paper's (Table 14 of `../shared/papers/assistancezero.txt`); unknown keys are
//! errors that name the key.
//!
//! ```text
//! {
//!   "env": {...},                     // the reference's env config dict (goals included)
//!   "model": {"template": "../shared/models/paper_assistant_small.json",
//!             "model_class": "...", "custom_model_config": {...}},
//!   "mcts": {"num_simulations": 100, ...},   // MctsConfig keys
//!   "training": {"iterations": 500, "num_envs": 256, ...},
//!   "loss": {"policy": 1, "value": 0.01, "goal": 3,
//!            "prev_goal_kl": [[0, 0], [1, 30]], "other_action": 1}
//! }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::AssistantError;
use super::selfplay::AssistantPlays;
use crate::mcts::MctsConfig;
use crate::nn::ModelConfig;
use crate::sim::config::Config;
use crate::sim::goal::GoalConfig;

/// The whole config file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantTrainConfig {
    /// The env config as the reference's dict (partial; defaults fill the rest).
    /// Player 0 is the human, player 1 the assistant.
    pub env: Value,
    /// The network to train.
    pub model: ModelSpec,
    /// The search's settings ([`MctsConfig`] keys; `gamma` defaults to
    /// `training.gamma`).
    #[serde(default)]
    pub mcts: Map<String, Value>,
    /// The loop's settings.
    #[serde(default)]
    pub training: TrainingSettings,
    /// The loss weights.
    #[serde(default)]
    pub loss: LossWeights,
    /// Held-out goal prediction, measured as training goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationSettings>,
}

/// How the goal head is scored on goals no training sees: episodes of the
/// human model building held-out goals with the assistant standing by, played
/// once at the start of the run; every `every` iterations the goal head's
/// per-voxel cross-entropy and accuracy on them are logged beside those of the
/// block-frequency baseline (each voxel predicted with the block shares of
/// the training goals).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationSettings {
    /// The goals: `"held_out"` (every house under `houses` through the
    /// human-study chain, as `--goals held_out`) or an env-style pair
    /// `{"goal_generator": ..., "goal_generator_config": ...}`.
    pub goals: Value,
    /// The houses folder for `"held_out"`, from the working directory.
    #[serde(default = "default_houses")]
    pub houses: PathBuf,
    /// Episodes played.
    #[serde(default = "default_validation_episodes")]
    pub episodes: usize,
    /// Steps of each (from its start).
    #[serde(default = "default_validation_steps")]
    pub steps: usize,
    /// Score every this many iterations (and after the last).
    #[serde(default = "default_validation_every")]
    pub every: u64,
    /// Goals drawn from the training generator for the baseline's shares.
    #[serde(default = "default_baseline_goals")]
    pub baseline_goals: usize,
    /// Seeds the episodes and the baseline's goals.
    #[serde(default)]
    pub seed: u64,
}

fn default_houses() -> PathBuf {
    PathBuf::from("../shared/data/houses")
}
fn default_validation_episodes() -> usize {
    8
}
fn default_validation_steps() -> usize {
    256
}
fn default_validation_every() -> u64 {
    5
}
fn default_baseline_goals() -> usize {
    200
}

impl ValidationSettings {
    /// The goal config the settings name.
    pub fn goal_config(&self) -> Result<GoalConfig, String> {
        match &self.goals {
            Value::String(s) if s == "held_out" => Ok(GoalConfig::held_out(&self.houses)),
            Value::Object(map) => {
                let name = map
                    .get("goal_generator")
                    .and_then(Value::as_str)
                    .ok_or("validation.goals: an object needs a goal_generator name")?;
                let config = map
                    .get("goal_generator_config")
                    .cloned()
                    .unwrap_or(json!({}));
                GoalConfig::from_env(name, &config).map_err(|e| format!("validation.goals: {e}"))
            }
            other => Err(format!(
                "validation.goals: \"held_out\" or {{\"goal_generator\", \"goal_generator_config\"}}, not {other}"
            )),
        }
    }
}

/// Which network to build.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// A model config JSON (e.g. `../shared/models/paper_assistant_full.json`)
    /// whose `model_class` and `custom_model_config` are the starting point.
    /// Relative paths are taken from the working directory, as agent specs are.
    pub template: Option<PathBuf>,
    /// The reference's model class (overrides the template's).
    pub model_class: Option<String>,
    /// `custom_model_config` keys over the template's.
    #[serde(default)]
    pub custom_model_config: Map<String, Value>,
    /// Weights a fresh run starts from: a saved model's config (e.g. a
    /// pretraining run's `model.json`) whose network has exactly this one's
    /// tensors and shapes. A resumed run keeps its checkpoint's weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<PathBuf>,
}

/// The loop (Table 14's values by default).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainingSettings {
    /// Training iterations (collect, then SGD).
    pub iterations: u64,
    /// Environments played in parallel.
    pub num_envs: usize,
    /// Steps each environment plays per iteration (a fragment, and the longest
    /// sequence a recurrent network is unrolled over).
    pub rollout_len: usize,
    /// Replay buffer capacity in samples.
    pub replay_capacity: usize,
    /// Samples drawn from the replay buffer per iteration.
    pub samples_per_iteration: usize,
    /// Samples per SGD minibatch.
    pub minibatch_size: usize,
    /// Passes over the drawn samples per iteration.
    pub epochs: usize,
    /// Samples in the buffer before SGD starts.
    pub min_replay: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// Gradient norm clipping.
    pub grad_clip: f64,
    /// Discount of the value target (and of the search).
    pub gamma: f64,
    /// Checkpoint every this many iterations (and at the end).
    pub checkpoint_every: u64,
    /// Threads playing environments (0: the available cores).
    pub threads: usize,
    /// Seeds environments, searches, replay sampling and the network's
    /// initialisation.
    pub seed: u64,
    /// `search` (AssistanceZero) or `noop`: the assistant stands by and the
    /// network learns from the human model building alone (pretraining; set
    /// the policy and value weights to 0).
    pub assistant: AssistantPlays,
    /// Where samples come from: `self_play` (episodes with the human model) or
    /// `partial_builds` (every sample a fresh goal, part built; goal head only,
    /// see [`super::partial_builds`]).
    pub corpus: Corpus,
}

/// Where a run's samples come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corpus {
    /// Episodes of the human model and the assistant (`training.assistant`).
    #[default]
    SelfPlay,
    /// Partial builds of generated goals, `num_envs * rollout_len` per
    /// iteration: the goal head's pretraining corpus without a human model.
    PartialBuilds,
}

impl Default for TrainingSettings {
    fn default() -> Self {
        Self {
            iterations: 500,
            num_envs: 256,
            rollout_len: 64,
            replay_capacity: 262_144,
            samples_per_iteration: 65_536,
            minibatch_size: 256,
            epochs: 1,
            min_replay: 0,
            learning_rate: 1e-3,
            grad_clip: 10.0,
            gamma: 0.95,
            checkpoint_every: 10,
            threads: 0,
            seed: 0,
            assistant: AssistantPlays::Search,
            corpus: Corpus::SelfPlay,
        }
    }
}

/// A coefficient that changes linearly between points over training progress
/// (0 at the start, 1 at the last iteration), constant outside them. Written as
/// a number (constant) or a list of `[progress, value]` pairs, so that a
/// schedule written for the paper's 500 iterations scales to any run length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Schedule {
    /// The same value throughout.
    Constant(f64),
    /// `[progress, value]` points with increasing progress.
    Points(Vec<(f64, f64)>),
}

impl Schedule {
    /// The value at `progress` (a fraction of training).
    pub fn at(&self, progress: f64) -> f64 {
        match self {
            Self::Constant(v) => *v,
            Self::Points(points) => {
                let Some(&(first_x, first_y)) = points.first() else {
                    return 0.0;
                };
                if progress <= first_x {
                    return first_y;
                }
                for w in points.windows(2) {
                    let ((x0, y0), (x1, y1)) = (w[0], w[1]);
                    if progress <= x1 {
                        let t = if x1 > x0 {
                            (progress - x0) / (x1 - x0)
                        } else {
                            1.0
                        };
                        return y0 + t * (y1 - y0);
                    }
                }
                points.last().map_or(0.0, |p| p.1)
            }
        }
    }

    fn check(&self, name: &str) -> Result<(), String> {
        if let Self::Points(points) = self {
            if points.is_empty() {
                return Err(format!("loss.{name}: a schedule needs at least one point"));
            }
            if points.windows(2).any(|w| w[1].0 < w[0].0) {
                return Err(format!(
                    "loss.{name}: schedule points must have increasing progress"
                ));
            }
        }
        Ok(())
    }
}

/// The weights of the loss terms (equation 1 of the paper; Table 14).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LossWeights {
    /// λ_policy: cross-entropy from the MCTS policy to the policy head.
    pub policy: f64,
    /// λ_value: squared error of the value head against the discounted return.
    pub value: f64,
    /// λ_reward: cross-entropy of the goal head against the true goal blocks
    /// (the reward parameters θ).
    pub goal: f64,
    /// λ_prev-rew: KL between the goal predictions made when a sample was played
    /// and the current ones, over training progress.
    pub prev_goal_kl: Schedule,
    /// λ_action: negative log-likelihood of the human's action under the
    /// other-player head.
    pub other_action: f64,
}

impl Default for LossWeights {
    fn default() -> Self {
        Self {
            policy: 1.0,
            value: 0.01,
            goal: 3.0,
            prev_goal_kl: Schedule::Points(vec![(0.0, 0.0), (1.0, 30.0)]),
            other_action: 1.0,
        }
    }
}

/// Everything a training run needs, resolved from an [`AssistantTrainConfig`].
#[derive(Clone, Debug)]
pub struct ResolvedConfig {
    /// The file as read.
    pub file: AssistantTrainConfig,
    /// The 2-player env config.
    pub env: Config,
    /// Its goals.
    pub goals: GoalConfig,
    /// The search.
    pub mcts: MctsConfig,
    /// The network's config JSON (name `assistant`, no weights yet).
    pub model: ModelConfig,
}

impl AssistantTrainConfig {
    /// Reads and checks a config file.
    pub fn read(path: &Path) -> Result<ResolvedConfig, AssistantError> {
        let text = std::fs::read_to_string(path).map_err(|e| AssistantError::Config {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Self::parse(&text)
            .and_then(Self::resolve)
            .map_err(|message| AssistantError::Config {
                path: path.to_owned(),
                message,
            })
    }

    /// Parses a config text (unknown keys are errors naming their path).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                e.inner().to_string()
            } else {
                format!("{path}: {}", e.inner())
            }
        })
    }

    /// Builds the env, goals, search and network configs, checking that they fit.
    pub fn resolve(self) -> Result<ResolvedConfig, String> {
        let env = Config::from_json(&self.env).map_err(|e| format!("env: {e}"))?;
        if env.num_players != 2 {
            return Err(format!(
                "env: num_players must be 2 (human, assistant), not {}",
                env.num_players
            ));
        }
        let goals = GoalConfig::from_env(&env.goal_generator, &env.goal_generator_config)
            .map_err(|e| format!("env.goal_generator_config: {e}"))?;
        let mcts = self.mcts_config()?;
        let t = &self.training;
        let positive = [
            ("iterations", t.iterations as usize),
            ("num_envs", t.num_envs),
            ("rollout_len", t.rollout_len),
            ("replay_capacity", t.replay_capacity),
            ("samples_per_iteration", t.samples_per_iteration),
            ("minibatch_size", t.minibatch_size),
            ("epochs", t.epochs),
            ("checkpoint_every", t.checkpoint_every as usize),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("training.{key} must be positive"));
        }
        if !(t.learning_rate > 0.0 && t.grad_clip > 0.0 && (0.0..=1.0).contains(&t.gamma)) {
            return Err(
                "training: learning_rate and grad_clip must be positive, gamma in [0, 1]".into(),
            );
        }
        self.loss.prev_goal_kl.check("prev_goal_kl")?;
        if t.corpus == Corpus::PartialBuilds {
            let l = &self.loss;
            if l.policy != 0.0
                || l.value != 0.0
                || l.other_action != 0.0
                || l.prev_goal_kl != Schedule::Constant(0.0)
            {
                return Err("training.corpus partial_builds has only goal targets: \
                     loss.policy, value, other_action and prev_goal_kl must be 0"
                    .into());
            }
        }
        if let Some(v) = &self.validation {
            v.goal_config()?;
            if v.episodes == 0 || v.steps == 0 || v.every == 0 || v.baseline_goals == 0 {
                return Err(
                    "validation: episodes, steps, every and baseline_goals must be positive".into(),
                );
            }
        }
        let model = self.model_config(&env, &mcts)?;
        Ok(ResolvedConfig {
            file: self,
            env,
            goals,
            mcts,
            model,
        })
    }

    fn mcts_config(&self) -> Result<MctsConfig, String> {
        let known = serde_json::to_value(MctsConfig::default()).expect("serialises");
        if let Some(key) = self.mcts.keys().find(|k| known.get(k.as_str()).is_none()) {
            return Err(format!(
                "mcts.{key}: unknown key (known: {})",
                known
                    .as_object()
                    .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ));
        }
        let mut map = self.mcts.clone();
        map.entry("gamma")
            .or_insert_with(|| json!(self.training.gamma));
        serde_path_to_error::deserialize(Value::Object(map))
            .map_err(|e| format!("mcts.{}: {}", e.path(), e.inner()))
    }

    fn model_config(&self, env: &Config, mcts: &MctsConfig) -> Result<ModelConfig, String> {
        let (mut class, mut custom) = (None, Map::new());
        if let Some(template) = &self.model.template {
            let text = std::fs::read_to_string(template)
                .map_err(|e| format!("model.template {}: {e}", template.display()))?;
            let json: Value = serde_json::from_str(&text)
                .map_err(|e| format!("model.template {}: {e}", template.display()))?;
            class = json["model_class"].as_str().map(str::to_owned);
            if let Some(map) = json["custom_model_config"].as_object() {
                custom = map.clone();
            }
        }
        if let Some(c) = &self.model.model_class {
            class = Some(c.clone());
        }
        custom.extend(self.model.custom_model_config.clone());
        let class = class.ok_or("model: give a template or a model_class")?;
        if custom.get("mask_goal").and_then(Value::as_bool) != Some(true) {
            // The assistant must not see the goal it is asked to infer; the env
            // shows it in every player's observation.
            return Err("model.custom_model_config.mask_goal must be true for an assistant".into());
        }
        let s = env.world_size;
        let json = json!({
            "name": "assistant",
            "model_class": class,
            "world_size": [s.width, s.height, s.depth],
            "n_actions": crate::sim::action::FlatLayout::new(s, env.abilities).len(),
            "env_config": env.to_json(),
            "custom_model_config": custom,
            "training_mcts_config": mcts,
            "training_gamma": mcts.gamma,
        });
        let model = ModelConfig::from_json(json).map_err(|e| format!("model: {e}"))?;
        if !model.class.is_alpha_zero() {
            return Err(format!(
                "model: {} has no head for the human's action; use an alpha-zero class",
                model.class.name()
            ));
        }
        Ok(model)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny resolved config for tests elsewhere in the module.
    pub(crate) fn tiny() -> ResolvedConfig {
        AssistantTrainConfig::parse(SMALL)
            .unwrap()
            .resolve()
            .unwrap()
    }

    const SMALL: &str = r#"{
        "env": {"num_players": 2, "world_size": [6, 6, 6], "horizon": 50,
                "goal_generator": "tutorial", "goal_generator_config": {},
                "players": [{"player_name": "human"}, {"player_name": "assistant"}],
                "abilities": {"teleportation": true, "flying": true, "inf_blocks": true}},
        "model": {"model_class": "mbag_convolutional_alpha_zero_model",
                  "custom_model_config": {"embedding_size": 8, "hidden_size": 8,
                     "hidden_channels": 8, "filter_size": 3, "num_layers": 2,
                     "num_action_layers": 1, "num_value_layers": 1,
                     "mask_goal": true}},
        "mcts": {"num_simulations": 5},
        "training": {"iterations": 3, "num_envs": 2}
    }"#;

    #[test]
    fn a_small_config_resolves_with_the_paper_defaults() {
        let c = AssistantTrainConfig::parse(SMALL)
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(c.mcts.num_simulations, 5);
        assert_eq!(c.mcts.gamma, 0.95);
        assert_eq!(c.file.training.rollout_len, 64);
        assert_eq!(c.file.loss.value, 0.01);
        assert_eq!(c.model.world_size, c.env.world_size);
        assert_eq!(c.model.json["training_mcts_config"]["num_simulations"], 5);
    }

    #[test]
    fn unknown_keys_are_named() {
        let bad = SMALL.replace("\"iterations\"", "\"iteratoins\"");
        let err = AssistantTrainConfig::parse(&bad).unwrap_err();
        assert!(
            err.contains("training") && err.contains("iteratoins"),
            "{err}"
        );
        let bad = SMALL.replace("\"num_simulations\"", "\"num_sims\"");
        let err = AssistantTrainConfig::parse(&bad)
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(err.contains("mcts.num_sims"), "{err}");
        let bad = SMALL.replace("\"mask_goal\": true", "\"mask_goal\": false");
        let err = AssistantTrainConfig::parse(&bad)
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(err.contains("mask_goal"), "{err}");
    }

    #[test]
    fn schedules_interpolate_and_hold_their_ends() {
        let s = Schedule::Points(vec![(0.0, 0.0), (0.5, 30.0)]);
        assert_eq!(s.at(0.0), 0.0);
        assert_eq!(s.at(0.25), 15.0);
        assert_eq!(s.at(0.9), 30.0);
        assert_eq!(Schedule::Constant(2.0).at(0.7), 2.0);
        let parsed: Schedule = serde_json::from_str("[[0, 1], [1, 3]]").unwrap();
        assert_eq!(parsed.at(0.5), 2.0);
    }
}
