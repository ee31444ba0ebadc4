//! Model configs: the JSON files beside the weights (`../shared/models/<name>.json`),
//! read into typed values. The whole JSON is kept, so a saved checkpoint carries the
//! reference's config unchanged and stays interchangeable with the shared models.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::error::NnError;
use crate::sim::action::FlatLayout;
use crate::sim::config::Abilities;
use crate::sim::coords::WorldSize;

/// The reference model classes (`model_class` in the JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelClass {
    /// `mbag_convolutional_model`: the paper's human model.
    Convolutional,
    /// `mbag_convolutional_alpha_zero_model`: the paper's assistant, with the
    /// other-agent action head.
    ConvolutionalAlphaZero,
    /// `mbag_transformer_model`.
    Transformer,
    /// `mbag_transformer_alpha_zero_model`.
    TransformerAlphaZero,
}

impl ModelClass {
    /// The class of a `model_class` string.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "mbag_convolutional_model" => Self::Convolutional,
            "mbag_convolutional_alpha_zero_model" => Self::ConvolutionalAlphaZero,
            "mbag_transformer_model" => Self::Transformer,
            "mbag_transformer_alpha_zero_model" => Self::TransformerAlphaZero,
            _ => return None,
        })
    }

    /// The `model_class` string.
    pub fn name(self) -> &'static str {
        match self {
            Self::Convolutional => "mbag_convolutional_model",
            Self::ConvolutionalAlphaZero => "mbag_convolutional_alpha_zero_model",
            Self::Transformer => "mbag_transformer_model",
            Self::TransformerAlphaZero => "mbag_transformer_alpha_zero_model",
        }
    }

    /// Whether the backbone is a transformer (else convolutional).
    pub fn is_transformer(self) -> bool {
        matches!(self, Self::Transformer | Self::TransformerAlphaZero)
    }

    /// Whether the model has the other-agent action head.
    pub fn is_alpha_zero(self) -> bool {
        matches!(
            self,
            Self::ConvolutionalAlphaZero | Self::TransformerAlphaZero
        )
    }
}

/// `custom_model_config`: the network's hyperparameters, with the reference's
/// defaults for keys a config leaves out. Keys that only matter for training or
/// masking (`dropout`, `line_of_sight_masking`, ...) are read where typed here and
/// ignored otherwise.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct NetConfig {
    /// Width of both embedding tables.
    pub embedding_size: i64,
    /// Add the "current block == goal block" channel.
    #[serde(default)]
    pub use_extra_features: bool,
    /// Leave the goal blocks out of the input (the assistant cannot see the goal).
    #[serde(default)]
    pub mask_goal: bool,
    /// Hide the other players: only own markers and inventory row 0.
    #[serde(default)]
    pub mask_other_players: bool,
    /// Backbone depth, LSTM layers included.
    pub num_layers: usize,
    /// Width of the heads and (transformers) of the backbone.
    pub hidden_size: i64,
    /// Number of 1x1x1 convs in the action heads.
    pub num_action_layers: usize,
    /// Number of linear layers in the value head.
    pub num_value_layers: usize,
    /// Scale inventory counts by 1/64 and the timestep by 1/1000.
    #[serde(default)]
    pub scale_obs: bool,
    /// Factor on the value head's output.
    #[serde(default = "one")]
    pub vf_scale: f64,
    /// Add the previous action as a 28-channel grid (the paper's human model).
    #[serde(default)]
    pub use_prev_action: bool,
    /// Unsupported: a second block embedding of the previous blocks.
    #[serde(default)]
    pub use_prev_blocks: bool,
    /// mbag's extension (not in the reference): three channels giving each
    /// voxel's offset from the observing player, divided by the world's size
    /// along that axis (zeros when the player is not in the observation). A
    /// small network's receptive field does not reach across the world, so
    /// without them it cannot tell in which direction the work lies; with them
    /// one 1x1x1 layer can (moves are scored as a log-sum-exp over voxels).
    #[serde(default)]
    pub use_relative_position: bool,
    /// mbag's extension (not in the reference), for models that see the goal:
    /// two learned weights that add to the action grid "place the goal's block
    /// in this empty cell" and "break this cell, which differs from the goal".
    /// The rule that explains 97% of people's places costs a small network
    /// many epochs to find through a random block permutation; given as a
    /// prior, the network learns where and when instead.
    #[serde(default)]
    pub use_goal_action_prior: bool,
    /// mbag's extension (not in the reference), for assistants that do not see
    /// the goal: the same two priors read from the network's own goal head.
    /// Two learned weights scale `log p(block)` on placing each block in an
    /// empty cell and `log p(not the current block)` on breaking a cell, where
    /// `p` is the goal head's (detached) prediction. An untrained policy then
    /// already places what the goal head is sure of and leaves alone the blocks
    /// it believes correct, and self-play learns when to trust it; without the
    /// prior a CPU-scale run spends its first hours breaking correct blocks.
    #[serde(default)]
    pub use_predicted_goal_action_prior: bool,
    /// Unsupported: the other player's previous action as input.
    #[serde(default)]
    pub use_prev_other_agent_action: bool,
    /// Conv: width of the backbone.
    pub hidden_channels: Option<i64>,
    /// Conv: kernel size of the non-1x1x1 layers.
    pub filter_size: Option<i64>,
    /// Conv: how many of the first layers use 1x1x1 kernels.
    #[serde(default)]
    pub num_conv_1_layers: usize,
    /// Conv: residual blocks where the width allows.
    #[serde(default)]
    pub use_resnet: bool,
    /// Conv, unsupported: GroupNorm instead of BatchNorm.
    #[serde(default)]
    pub use_groupnorm: bool,
    /// Conv: Dropout3d probability inside residual blocks, in training only
    /// (0.7 in the paper's human model).
    #[serde(default)]
    pub dropout: f64,
    /// Conv: a 1x1x1 conv from the embedding to `hidden_size` before the backbone.
    #[serde(default)]
    pub use_fc_after_embedding: bool,
    /// Conv: an LSTM at every layer `i` with `(i + 1) % k == 0` (0 = none).
    #[serde(default)]
    pub interleave_lstm_every: usize,
    /// Width of the per-voxel LSTMs (must equal the backbone width here).
    pub lstm_size: Option<i64>,
    /// Transformer: width of the learned position embedding.
    pub position_embedding_size: Option<i64>,
    /// Transformer: attention heads.
    pub num_heads: Option<i64>,
    /// Transformer: attend along one axis per layer (else over all voxels).
    #[serde(default)]
    pub use_separated_transformer: bool,
    /// Transformer: an LSTM at every fourth layer.
    #[serde(default)]
    pub interleave_lstm: bool,
    /// Transformer, unsupported: pre-norm layers.
    #[serde(default)]
    pub norm_first: bool,
}

fn one() -> f64 {
    1.0
}

/// A model's complete config: what the network looks like and which environment it
/// plays in.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// The model's name (`name`).
    pub name: String,
    /// The weights file, relative to the config's folder (`weights`).
    pub weights: Option<String>,
    /// The network class.
    pub class: ModelClass,
    /// The world size the model was built for.
    pub world_size: WorldSize,
    /// The env's abilities, which decide the flat action layout.
    pub abilities: Abilities,
    /// Number of players in the env.
    pub num_players: usize,
    /// Inventory rows the embedding reads (`resolved.num_inventory_obs`).
    pub num_inventory_obs: usize,
    /// The network hyperparameters.
    pub net: NetConfig,
    /// The parameter count the JSON states (`resolved.num_parameters`), if any.
    pub stated_num_parameters: Option<usize>,
    /// The whole JSON document, written back unchanged (bar `name` and `weights`)
    /// when a checkpoint is saved.
    pub json: Value,
}

impl ModelConfig {
    /// The model's `line_of_sight_masking`: the action mask it was trained
    /// with (false when the config does not say).
    pub fn line_of_sight_masking(&self) -> bool {
        self.json["custom_model_config"]["line_of_sight_masking"]
            .as_bool()
            .unwrap_or(false)
    }

    /// Reads a config file.
    pub fn read(path: &Path) -> Result<Self, NnError> {
        let text = std::fs::read_to_string(path).map_err(|source| NnError::Io {
            path: path.to_owned(),
            source,
        })?;
        let json: Value = serde_json::from_str(&text).map_err(|e| NnError::Config {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Self::from_json(json).map_err(|e| match e {
            NnError::Config { message, .. } => NnError::Config {
                path: path.to_owned(),
                message,
            },
            other => other,
        })
    }

    /// A config from a parsed JSON document.
    pub fn from_json(json: Value) -> Result<Self, NnError> {
        let bad = |message: String| NnError::Config {
            path: PathBuf::new(),
            message,
        };
        let get = |pointer: &str| {
            json.pointer(pointer)
                .ok_or_else(|| bad(format!("missing key {pointer}")))
        };
        let name = get("/name")?
            .as_str()
            .ok_or_else(|| bad("/name is not a string".into()))?
            .to_owned();
        let weights = json
            .pointer("/weights")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let class_name = get("/model_class")?.as_str().unwrap_or_default();
        let class = ModelClass::from_name(class_name)
            .ok_or_else(|| bad(format!("unknown /model_class {class_name:?}")))?;
        let parse = |pointer: &str| -> Result<Value, NnError> { get(pointer).cloned() };
        let size: [usize; 3] = from_value(parse("/world_size")?, "/world_size", &bad)?;
        let abilities: Abilities = from_value(
            parse("/env_config/abilities")?,
            "/env_config/abilities",
            &bad,
        )?;
        let num_players: usize = from_value(
            parse("/env_config/num_players")?,
            "/env_config/num_players",
            &bad,
        )?;
        let net: NetConfig =
            from_value(parse("/custom_model_config")?, "/custom_model_config", &bad)?;
        // `resolved.num_inventory_obs` is the reference's resolution of the default
        // (the env's player count) and of an explicit override.
        let num_inventory_obs = match json.pointer("/resolved/num_inventory_obs") {
            Some(v) => from_value(v.clone(), "/resolved/num_inventory_obs", &bad)?,
            None => json
                .pointer("/custom_model_config/num_inventory_obs")
                .and_then(Value::as_u64)
                .map_or(num_players, |n| n as usize),
        };
        let stated_num_parameters = json
            .pointer("/resolved/num_parameters")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let config = Self {
            name,
            weights,
            class,
            world_size: WorldSize::new(size[0], size[1], size[2]),
            abilities,
            num_players,
            num_inventory_obs,
            net,
            stated_num_parameters,
            json,
        };
        config.check()?;
        Ok(config)
    }

    /// Rejects options this implementation does not build, and inconsistent values.
    fn check(&self) -> Result<(), NnError> {
        let net = &self.net;
        let unsupported = [
            ("use_prev_blocks", net.use_prev_blocks),
            (
                "use_prev_other_agent_action",
                net.use_prev_other_agent_action,
            ),
            ("use_groupnorm", net.use_groupnorm),
            ("norm_first", net.norm_first),
            (
                "lstm_size != hidden width (projected LSTM)",
                !self.lstm_layer_indices().is_empty()
                    && net.lstm_size.unwrap_or(self.backbone_width()) != self.backbone_width(),
            ),
            (
                "mask_other_players with num_inventory_obs != 1",
                net.mask_other_players && self.num_inventory_obs != 1,
            ),
            (
                "use_goal_action_prior with mask_goal (the prior reads the goal)",
                net.use_goal_action_prior && net.mask_goal,
            ),
        ];
        if let Some((option, _)) = unsupported.iter().find(|(_, on)| *on) {
            return Err(NnError::Unsupported {
                model: self.name.clone(),
                option: (*option).to_owned(),
            });
        }
        let missing = |key: &str| NnError::Config {
            path: PathBuf::new(),
            message: format!(
                "/custom_model_config/{key} is required for {}",
                self.class.name()
            ),
        };
        if self.class.is_transformer() {
            if net.position_embedding_size.is_none() {
                return Err(missing("position_embedding_size"));
            }
            let heads = net.num_heads.ok_or_else(|| missing("num_heads"))?;
            if heads <= 0 || net.hidden_size % heads != 0 {
                return Err(missing("num_heads (dividing hidden_size)"));
            }
            if self.embedding_channels() > net.hidden_size {
                return Err(NnError::Config {
                    path: PathBuf::new(),
                    message: format!(
                        "{} embedding channels do not fit in hidden_size {}",
                        self.embedding_channels(),
                        net.hidden_size
                    ),
                });
            }
        } else {
            net.hidden_channels
                .ok_or_else(|| missing("hidden_channels"))?;
            net.filter_size.ok_or_else(|| missing("filter_size"))?;
        }
        Ok(())
    }

    /// The flat action layout of the model's env.
    pub fn flat_layout(&self) -> FlatLayout {
        FlatLayout::new(self.world_size, self.abilities)
    }

    /// Number of flat actions.
    pub fn n_actions(&self) -> usize {
        self.flat_layout().len()
    }

    /// Width of the per-voxel input embedding: `resolved.embedding_channels` of the
    /// JSON (for transformers including the position embedding, not the padding).
    pub fn embedding_channels(&self) -> i64 {
        let net = &self.net;
        let e = net.embedding_size;
        let inventory = if net.mask_other_players {
            10
        } else {
            10 * self.num_inventory_obs as i64
        };
        let mut c = e + e + inventory + 1 + e;
        if !net.mask_goal {
            c += e;
        }
        if net.use_extra_features {
            c += 1;
        }
        if net.use_relative_position {
            c += 3;
        }
        if net.use_prev_action {
            c += 28;
        }
        if self.class.is_transformer() {
            c += net.position_embedding_size.unwrap_or(0);
        }
        c
    }

    /// Width of the backbone's input: the fc output, the padded embedding, or the
    /// embedding itself.
    pub fn backbone_in_channels(&self) -> i64 {
        if self.class.is_transformer() || self.net.use_fc_after_embedding {
            self.net.hidden_size
        } else {
            self.embedding_channels()
        }
    }

    /// Width of the backbone's layers (and its output, which feeds the heads).
    pub fn backbone_width(&self) -> i64 {
        if self.class.is_transformer() {
            self.net.hidden_size
        } else {
            self.net.hidden_channels.unwrap_or(self.net.hidden_size)
        }
    }

    /// The backbone indices that are per-voxel LSTMs.
    pub fn lstm_layer_indices(&self) -> Vec<usize> {
        let every = if self.class.is_transformer() {
            if self.net.interleave_lstm { 4 } else { 0 }
        } else {
            self.net.interleave_lstm_every
        };
        if every == 0 {
            return Vec::new();
        }
        (0..self.net.num_layers)
            .filter(|i| (i + 1) % every == 0)
            .collect()
    }

    /// The config with another name and weights file, for saving a checkpoint.
    pub fn renamed(&self, name: &str, weights: &str) -> Self {
        let mut config = self.clone();
        config.name = name.to_owned();
        config.weights = Some(weights.to_owned());
        if let Value::Object(map) = &mut config.json {
            map.insert("name".into(), Value::String(name.to_owned()));
            map.insert("weights".into(), Value::String(weights.to_owned()));
        }
        config
    }
}

fn from_value<T: serde::de::DeserializeOwned>(
    value: Value,
    pointer: &str,
    bad: &dyn Fn(String) -> NnError,
) -> Result<T, NnError> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| bad(format!("{pointer}/{}: {}", e.path(), e.inner())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_config(name: &str) -> ModelConfig {
        let path = crate::cli::shared_dir().join(format!("models/{name}.json"));
        ModelConfig::read(&path).unwrap()
    }

    #[test]
    fn resolved_values_match_the_json() {
        for name in [
            "az_test_assistant",
            "az_test_human",
            "bc_human_inf_blocks",
            "bc_human_tutorial",
            "paper_assistant_small",
            "paper_human_small",
            "paper_assistant_full",
            "paper_human_full",
        ] {
            let c = shared_config(name);
            let resolved = &c.json["resolved"];
            assert_eq!(
                c.embedding_channels(),
                resolved["embedding_channels"].as_i64().unwrap(),
                "{name}"
            );
            let lstm: Vec<usize> =
                serde_json::from_value(resolved["lstm_layer_indices"].clone()).unwrap();
            assert_eq!(c.lstm_layer_indices(), lstm, "{name}");
            assert_eq!(c.n_actions() as u64, c.json["n_actions"].as_u64().unwrap());
            assert_eq!(
                c.class.is_alpha_zero(),
                resolved["has_other_agent_action_head"].as_bool().unwrap()
            );
            assert_eq!(
                c.backbone_width(),
                resolved["head_in_channels"].as_i64().unwrap()
            );
        }
    }

    #[test]
    fn unsupported_options_are_named() {
        let mut json = shared_config("paper_human_small").json;
        json["custom_model_config"]["use_groupnorm"] = Value::Bool(true);
        let err = ModelConfig::from_json(json).unwrap_err();
        assert!(err.to_string().contains("use_groupnorm"), "{err}");
    }
}
