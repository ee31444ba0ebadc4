//! `mbag train bc`'s config file: JSON, every key typed, unknown keys rejected
//! with the key's path (`configs/train/*.json` are examples).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::stream::{DEFAULT_ACTION_DELAY_S, NoopRows};
use crate::recording::header::Role;
use crate::train::error::TrainError;
use crate::train::optim::{AdamConfig, LrSchedule};

/// The `custom_model_config` keys the reference's models take (those the
/// networks read, plus masking options the agents read).
const NET_KEYS: &[&str] = &[
    "embedding_size",
    "use_extra_features",
    "mask_goal",
    "mask_other_players",
    "num_layers",
    "hidden_size",
    "num_action_layers",
    "num_value_layers",
    "scale_obs",
    "vf_scale",
    "use_prev_action",
    "use_prev_blocks",
    "use_relative_position",
    "use_goal_action_prior",
    "use_predicted_goal_action_prior",
    "use_prev_other_agent_action",
    "hidden_channels",
    "filter_size",
    "num_conv_1_layers",
    "use_resnet",
    "use_groupnorm",
    "dropout",
    "use_fc_after_embedding",
    "interleave_lstm_every",
    "lstm_size",
    "position_embedding_size",
    "num_heads",
    "use_separated_transformer",
    "interleave_lstm",
    "norm_first",
    "num_inventory_obs",
    "use_per_location_lstm",
    "mask_action_distribution",
    "line_of_sight_masking",
];

/// A behaviour-cloning run's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BcConfig {
    /// The network to train.
    pub model: ModelSpec,
    /// Which data to learn from and how to split it.
    #[serde(default)]
    pub data: DataConfig,
    /// Steps per training sequence: the LSTMs are unrolled over this many steps
    /// from a zero state (RLlib's `max_seq_len`, 64 in the paper); episodes are
    /// cut into sequences of this length.
    pub seq_len: usize,
    /// Steps (samples) per optimizer step (`sgd_minibatch_size`, 128 in the
    /// paper); a batch holds `max(1, batch_size / seq_len)` sequences.
    pub batch_size: usize,
    /// Passes over the training sequences.
    pub epochs: u64,
    /// Stop after this many optimizer steps even if epochs remain.
    #[serde(default)]
    pub max_steps: Option<u64>,
    /// Adam's settings. Its `schedule` counts optimizer steps; see also
    /// `lr_schedule_by_progress`.
    pub optimizer: AdamConfig,
    /// A learning-rate factor as a function of training progress (0 = start, 1 =
    /// the last step): `[[progress, factor], ...]`, piecewise linear. Replaces
    /// `optimizer.schedule` (the paper: `[[0, 1], [0.5, 0.1], [1, 0.1]]`, i.e.
    /// 1e-3 decayed linearly to 1e-4 over the first half).
    #[serde(default)]
    pub lr_schedule_by_progress: Option<Vec<(f64, f64)>>,
    /// The seed of the split, the data order, the augmentation and dropout.
    #[serde(default)]
    pub seed: u64,
    /// Log training metrics every this many steps.
    #[serde(default = "default_log_every")]
    pub log_every: u64,
    /// Validate every this many steps (0: at each epoch's end). Always at the end.
    #[serde(default)]
    pub validate_every: u64,
    /// Write a checkpoint every this many steps. Always at the end.
    #[serde(default = "default_checkpoint_every")]
    pub checkpoint_every: u64,
    /// Checkpoints kept (the newest).
    #[serde(default = "default_keep")]
    pub keep_checkpoints: usize,
    /// Sequences per forward pass in validation.
    #[serde(default = "default_valid_sequences")]
    pub validation_sequences_per_batch: usize,
}

fn default_log_every() -> u64 {
    10
}
fn default_checkpoint_every() -> u64 {
    500
}
fn default_keep() -> usize {
    3
}
fn default_valid_sequences() -> usize {
    4
}

/// The network: a reference model class and its `custom_model_config`. The
/// environment part of the model's config (world size, abilities, players) comes
/// from the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `model_class`, e.g. `mbag_convolutional_model`.
    pub class: String,
    /// `custom_model_config`, checked when the model is built (see
    /// `../shared/models/ARCHITECTURE.md` for every key).
    pub net: Value,
}

/// Where the examples come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// Whose actions to imitate: `human` (the builder) or `assistant`.
    #[serde(default = "default_role")]
    pub role: Role,
    /// Episode ids held out for validation; if empty, `validation_fraction` of
    /// the episodes, chosen with the seed.
    #[serde(default)]
    pub validation_episodes: Vec<String>,
    /// Share of episodes held out when none are named.
    #[serde(default = "default_fraction")]
    pub validation_fraction: f64,
    /// Cross-validation by episode: hold out fold `index` of `of` (the
    /// episodes shuffled with the seed, every `of`-th one from `index`) in
    /// place of `validation_fraction`. Runs with the same seed and `of` and
    /// each `index` see every episode held out exactly once.
    #[serde(default)]
    pub fold: Option<Fold>,
    /// Permute the placeable block types per sequence (the paper's data
    /// augmentation).
    #[serde(default = "yes")]
    pub augment: bool,
    /// Which lines of a recording become the player's rows: `own` (default, the
    /// reference's stream: the player's actions with idle NOOP rows before
    /// them), `every_step` (every line, for simulator recordings) or
    /// `actions_only`.
    #[serde(default)]
    pub noop_rows: NoopRows,
    /// Seconds of a person's time per env step (the reference's Malmo
    /// `action_delay`), for idle rows derived from wall-clock gaps.
    #[serde(default = "default_action_delay")]
    pub action_delay_s: f64,
}

/// One fold of a k-fold cross-validation by episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fold {
    /// Which fold is held out, from 0.
    pub index: usize,
    /// How many folds.
    pub of: usize,
}

impl std::str::FromStr for Fold {
    type Err = String;

    /// `K/N`: fold K (from 0) of N.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a fold K/N with 0 <= K < N and N >= 2 (e.g. 0/5)");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let fold = Self {
            index: k.trim().parse().map_err(|_| bad())?,
            of: n.trim().parse().map_err(|_| bad())?,
        };
        fold.check().map_err(|_| bad())?;
        Ok(fold)
    }
}

impl std::fmt::Display for Fold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

impl Fold {
    fn check(&self) -> Result<(), String> {
        if self.of < 2 || self.index >= self.of {
            return Err(format!(
                "data.fold must have 0 <= index < of and of >= 2, not {}/{}",
                self.index, self.of
            ));
        }
        Ok(())
    }
}

fn default_action_delay() -> f64 {
    DEFAULT_ACTION_DELAY_S
}

fn default_role() -> Role {
    Role::Human
}
fn default_fraction() -> f64 {
    0.2
}
fn yes() -> bool {
    true
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            role: default_role(),
            validation_episodes: Vec::new(),
            validation_fraction: default_fraction(),
            fold: None,
            augment: true,
            noop_rows: NoopRows::default(),
            action_delay_s: DEFAULT_ACTION_DELAY_S,
        }
    }
}

impl BcConfig {
    /// Reads and checks a config file.
    pub fn read(path: &Path) -> Result<Self, TrainError> {
        let text = std::fs::read_to_string(path).map_err(TrainError::io(path))?;
        Self::parse(&text, path)
    }

    /// Parses and checks a config (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, TrainError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let config: Self =
            serde_path_to_error::deserialize(&mut de).map_err(|e| TrainError::Json {
                path: path.to_owned(),
                line: None,
                message: format!("{}: {}", e.path(), e.inner()),
            })?;
        config.check().map_err(|message| TrainError::Config {
            path: path.to_owned(),
            message,
        })?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        let Some(net) = self.model.net.as_object() else {
            return Err("model.net must be an object (custom_model_config)".into());
        };
        if let Some(key) = net.keys().find(|k| !NET_KEYS.contains(&k.as_str())) {
            return Err(format!(
                "model.net.{key}: unknown key (known: {})",
                NET_KEYS.join(", ")
            ));
        }
        if self.seq_len == 0 || self.batch_size == 0 {
            return Err("seq_len and batch_size must be positive".into());
        }
        if !(self.data.action_delay_s.is_finite() && self.data.action_delay_s > 0.0) {
            return Err(format!(
                "data.action_delay_s must be a positive number of seconds, not {}",
                self.data.action_delay_s
            ));
        }
        if !(0.0..1.0).contains(&self.data.validation_fraction) {
            return Err("data.validation_fraction must be in [0, 1)".into());
        }
        if let Some(fold) = &self.data.fold {
            fold.check()?;
            if !self.data.validation_episodes.is_empty() {
                return Err(
                    "data.fold and data.validation_episodes both choose the validation episodes; give one"
                        .into(),
                );
            }
        }
        if self.optimizer.lr <= 0.0 {
            return Err("optimizer.lr must be positive".into());
        }
        self.optimizer.schedule.validate()?;
        if let Some(points) = &self.lr_schedule_by_progress
            && points.windows(2).any(|w| w[1].0 <= w[0].0)
        {
            return Err("lr_schedule_by_progress: progress must increase".into());
        }
        if self.log_every == 0 || self.checkpoint_every == 0 {
            return Err("log_every and checkpoint_every must be positive".into());
        }
        Ok(())
    }

    /// Sequences per training batch.
    pub fn sequences_per_batch(&self) -> usize {
        (self.batch_size / self.seq_len).max(1)
    }

    /// Adam's settings for a run of `total_steps`, with `lr_schedule_by_progress`
    /// turned into steps.
    pub fn adam_for(&self, total_steps: u64) -> AdamConfig {
        let mut adam = self.optimizer.clone();
        if let Some(points) = &self.lr_schedule_by_progress {
            let last = total_steps.saturating_sub(1) as f64;
            let mut steps: Vec<(u64, f64)> = Vec::with_capacity(points.len());
            for &(p, f) in points {
                let s = (p.clamp(0.0, 1.0) * last).round() as u64;
                if steps.last().is_none_or(|l| l.0 < s) {
                    steps.push((s, f));
                }
            }
            adam.schedule = LrSchedule::Piecewise { points: steps };
        }
        adam
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> Value {
        serde_json::json!({
            "model": {"class": "mbag_convolutional_model", "net": {}},
            "seq_len": 64,
            "batch_size": 128,
            "epochs": 2,
            "optimizer": {"lr": 1e-3}
        })
    }

    #[test]
    fn unknown_keys_are_rejected_by_path() {
        let mut v = minimal();
        v["data"] = serde_json::json!({"augmnt": false});
        let err = BcConfig::parse(&v.to_string(), Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("data") && err.contains("augmnt"), "{err}");
        let mut v = minimal();
        v["optimizer"]["learning_rate"] = 1.0.into();
        let err = BcConfig::parse(&v.to_string(), Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("optimizer") && err.contains("learning_rate"),
            "{err}"
        );
        let mut v = minimal();
        v["model"]["net"]["hiden_size"] = 16.into();
        let err = BcConfig::parse(&v.to_string(), Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.net.hiden_size"), "{err}");
    }

    #[test]
    fn progress_schedules_become_step_schedules() {
        let mut v = minimal();
        v["lr_schedule_by_progress"] = serde_json::json!([[0, 1], [0.5, 0.1], [1, 0.1]]);
        let c = BcConfig::parse(&v.to_string(), Path::new("c.json")).unwrap();
        let adam = c.adam_for(101);
        assert_eq!(adam.lr_at(0), 1e-3);
        assert!((adam.lr_at(25) - 0.55e-3).abs() < 1e-12);
        assert!((adam.lr_at(100) - 1e-4).abs() < 1e-12);
        assert_eq!(c.sequences_per_batch(), 2);
    }

    #[test]
    fn the_shipped_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/train");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("bc_")
            {
                BcConfig::read(&path).unwrap();
                n += 1;
            }
        }
        assert!(n >= 2);
    }
}
