//! Environment configuration, with the reference's defaults and merge rules.
//!
//! A config is written as the reference's nested JSON dict. [`Config::from_json`]
//! fills in missing keys exactly like `MbagEnv.get_config` (ENV_SPEC section 2) and
//! rejects unknown keys, naming the path of the offending field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::coords::WorldSize;

/// Most players an episode can have (observation markers are bytes).
pub const MAX_PLAYERS: usize = 64;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key is unknown, a value has the wrong type, or a required key is missing.
    #[error("config field `{path}`: {message}")]
    Field {
        /// Dotted path of the field, e.g. `players[1].rewards.noop`.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The values are well-typed but inconsistent.
    #[error("invalid config: {0}")]
    Invalid(String),
}

/// A reward value: a constant or a piecewise-linear schedule over the global timestep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RewardSchedule {
    /// The same value at every timestep.
    Constant(f64),
    /// `[[t, value], ...]` with `t` ascending, interpolated linearly. The times are
    /// kept as written (the config round-trips); they are truncated to integers
    /// where the schedule is evaluated, as the reference's `int(t)` does.
    Piecewise(Vec<(f64, f64)>),
}

impl RewardSchedule {
    /// The value at global timestep `t` (ENV_SPEC 2, "Reward schedules").
    ///
    /// As the reference's `PiecewiseSchedule`: endpoint times truncated toward zero
    /// (`int(t)`: `[[0.9, a], [10.5, b]]` interpolates between 0 and 10), the first
    /// segment with `t_l <= t < t_r` gives `v_l + alpha * (v_r - v_l)` with
    /// `alpha = (t - t_l) / (t_r - t_l)` (the same three roundings in the same
    /// order), and a `t` outside every segment (before the first point too) gets
    /// the **last** value. The global timestep and the truncated times are
    /// integers, so `t - t_l` and `t_r - t_l` are exact as in Python's ints.
    pub fn value_at(&self, t: u64) -> f64 {
        match self {
            Self::Constant(v) => *v,
            Self::Piecewise(points) => {
                let t = t as f64;
                for pair in points.windows(2) {
                    let ((tl, vl), (tr, vr)) = (pair[0], pair[1]);
                    let (tl, tr) = (tl.trunc(), tr.trunc());
                    if tl <= t && t < tr {
                        let alpha = (t - tl) / (tr - tl);
                        return vl + alpha * (vr - vl);
                    }
                }
                points.last().map_or(0.0, |&(_, v)| v)
            }
        }
    }

    /// The reference's checks when it builds a schedule: a list needs at least one
    /// point (`value[-1][-1]`), times ascending as written (`idxes == sorted(idxes)`,
    /// before truncation) and convertible by `int()` (finite).
    fn check(&self, path: &str) -> Result<(), ConfigError> {
        let Self::Piecewise(points) = self else {
            return Ok(());
        };
        let invalid = |m: &str| Err(ConfigError::Invalid(format!("{path}: {m}")));
        if points.is_empty() {
            return invalid("a schedule needs at least one [t, value] point");
        }
        if points.iter().any(|&(t, _)| !t.is_finite()) {
            return invalid("schedule times must be finite");
        }
        if points.windows(2).any(|w| w[1].0 < w[0].0) {
            return invalid("schedule times must be ascending");
        }
        Ok(())
    }
}

/// The reward terms (ENV_SPEC section 7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardsConfig {
    /// Added to the goal-independent reward of an action that did nothing.
    pub noop: RewardSchedule,
    /// Added to the goal-independent reward of an action that did something.
    pub action: RewardSchedule,
    /// Added to the goal-dependent reward of a successful place/break that did not help.
    pub incorrect_action: RewardSchedule,
    /// Partial credit for a non-air block of the wrong type where a block belongs.
    pub place_wrong: RewardSchedule,
    /// Weight of a player's own reward against the team reward.
    pub own_reward_prop: RewardSchedule,
    /// Paid per block type newly gained by breaking the palette.
    pub get_resources: RewardSchedule,
}

/// The reward values of one player at one global timestep.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct RewardValues {
    /// See [`RewardsConfig::noop`].
    pub noop: f64,
    /// See [`RewardsConfig::action`].
    pub action: f64,
    /// See [`RewardsConfig::incorrect_action`].
    pub incorrect_action: f64,
    /// See [`RewardsConfig::place_wrong`].
    pub place_wrong: f64,
    /// See [`RewardsConfig::own_reward_prop`].
    pub own_reward_prop: f64,
    /// See [`RewardsConfig::get_resources`].
    pub get_resources: f64,
}

impl RewardsConfig {
    /// Checks every schedule as the reference does when it builds them.
    fn check(&self, path: &str) -> Result<(), ConfigError> {
        for (key, schedule) in [
            ("noop", &self.noop),
            ("action", &self.action),
            ("incorrect_action", &self.incorrect_action),
            ("place_wrong", &self.place_wrong),
            ("own_reward_prop", &self.own_reward_prop),
            ("get_resources", &self.get_resources),
        ] {
            schedule.check(&format!("{path}.{key}"))?;
        }
        Ok(())
    }

    /// Every term evaluated at global timestep `t`.
    pub fn values_at(&self, t: u64) -> RewardValues {
        RewardValues {
            noop: self.noop.value_at(t),
            action: self.action.value_at(t),
            incorrect_action: self.incorrect_action.value_at(t),
            place_wrong: self.place_wrong.value_at(t),
            own_reward_prop: self.own_reward_prop.value_at(t),
            get_resources: self.get_resources.value_at(t),
        }
    }
}

/// One player's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayerConfig {
    /// Minecraft user name (Malmo only).
    pub player_name: Option<String>,
    /// Whether the goal appears in this player's observations.
    pub goal_visible: bool,
    /// A human player: place/break always succeed in walking mode, moves ignore others.
    pub is_human: bool,
    /// The player acts only on timesteps divisible by this (NOOP otherwise).
    pub timestep_skip: u32,
    /// This player's rewards: the global rewards overridden key by key.
    pub rewards: RewardsConfig,
    /// Items given in Minecraft at the start (Malmo only).
    pub give_items: Vec<Value>,
}

/// Settings of the Minecraft connection. The simulator ignores them; they are kept so
/// configs round-trip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MalmoConfig {
    /// Run the episode in Minecraft.
    pub use_malmo: bool,
    /// Add a spectator client.
    pub use_spectator: bool,
    /// Rotate the spectator camera.
    pub rotate_spectator: bool,
    /// Keep players inside the building area.
    pub restrict_players: bool,
    /// Where to save spectator video.
    pub video_dir: Option<String>,
    /// ssh arguments for remote Minecraft clients.
    pub ssh_args: Option<Value>,
    /// First Malmo control port.
    pub start_port: u16,
    /// Seconds between assistant actions in Minecraft.
    pub action_delay: f64,
}

/// What players can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Abilities {
    /// Place/break from anywhere by teleporting (no MOVE actions).
    pub teleportation: bool,
    /// Always true: flying is the only supported mode.
    pub flying: bool,
    /// Unlimited blocks; otherwise blocks come from the palette and GIVE exists.
    pub inf_blocks: bool,
}

/// A complete environment configuration (every key filled in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of players.
    pub num_players: usize,
    /// Maximum number of timesteps of an episode.
    pub horizon: u64,
    /// World size `[W, H, D]`.
    pub world_size: WorldSize,
    /// Start players at random valid positions.
    pub random_start_locations: bool,
    /// Start the first episode at a random timestep.
    pub randomize_first_episode_length: bool,
    /// End the episode when the world equals the goal.
    pub terminate_on_goal_completion: bool,
    /// End the episode after this many timesteps without a new best goal percentage.
    pub truncate_on_no_progress_timesteps: Option<u64>,
    /// Fail if two players' markers overlap in an observation.
    #[serde(rename = "_check_for_overlapping_players")]
    pub check_for_overlapping_players: bool,
    /// Goal generator: a registry name or `TransformedGoalGenerator`.
    pub goal_generator: String,
    /// The goal generator's own config.
    pub goal_generator_config: Value,
    /// Per-player settings, `num_players` of them.
    pub players: Vec<PlayerConfig>,
    /// Minecraft connection settings.
    pub malmo: MalmoConfig,
    /// Global rewards (players override them key by key).
    pub rewards: RewardsConfig,
    /// What players can do.
    pub abilities: Abilities,
}

/// The reference's default config, as JSON.
fn default_config() -> Value {
    json!({
        "num_players": 1,
        "horizon": 50,
        "world_size": [5, 5, 5],
        "random_start_locations": false,
        "randomize_first_episode_length": false,
        "terminate_on_goal_completion": true,
        "truncate_on_no_progress_timesteps": null,
        "_check_for_overlapping_players": true,
        "goal_generator": "TransformedGoalGenerator",
        "goal_generator_config": {
            "goal_generator": "random",
            "goal_generator_config": {},
            "transforms": [{"transform": "add_grass"}],
        },
        "players": [{}],
        "malmo": {
            "use_malmo": false,
            "use_spectator": false,
            "rotate_spectator": true,
            "restrict_players": false,
            "video_dir": null,
            "ssh_args": null,
            "start_port": 10000,
            "action_delay": 0.8,
        },
        "rewards": {
            "noop": 0.0,
            "action": 0.0,
            "incorrect_action": 0.0,
            "place_wrong": 0.0,
            "own_reward_prop": 0.0,
            "get_resources": 0.0,
        },
        "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
    })
}

fn default_player() -> Value {
    json!({
        "player_name": null,
        "goal_visible": true,
        "is_human": false,
        "timestep_skip": 1,
        "rewards": {},
        "give_items": [],
    })
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ConfigError> {
    value.as_object().ok_or_else(|| ConfigError::Field {
        path: path.to_owned(),
        message: format!("expected an object, got {value}"),
    })
}

/// Overrides `base`'s keys with `over`'s (one level deep).
fn merge_shallow(base: &Value, over: &Value, path: &str) -> Result<Value, ConfigError> {
    let mut merged = object(base, path)?.clone();
    for (k, v) in object(over, path)? {
        merged.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(merged))
}

impl Config {
    /// Builds a full config from a possibly partial JSON dict, with the reference's
    /// defaults and merge rules: top-level keys replace the defaults (so a given
    /// `abilities` must be complete), `malmo` and `rewards` merge key by key, every
    /// player merges with the player defaults, and each player's rewards are the
    /// global rewards overridden by its own.
    pub fn from_json(partial: &Value) -> Result<Self, ConfigError> {
        let defaults = default_config();
        let mut full = merge_shallow(&defaults, partial, "")?;
        for key in ["malmo", "rewards"] {
            let merged = merge_shallow(&defaults[key], &full[key], key)?;
            full[key] = merged;
        }
        let players = full["players"]
            .as_array()
            .ok_or_else(|| ConfigError::Field {
                path: "players".into(),
                message: "expected a list of player dicts".into(),
            })?
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = format!("players[{i}]");
                let mut player = merge_shallow(&default_player(), p, &path)?;
                player["rewards"] = merge_shallow(
                    &full["rewards"],
                    &player["rewards"],
                    &format!("{path}.rewards"),
                )?;
                Ok(player)
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        full["players"] = Value::Array(players);
        let config: Config =
            serde_path_to_error::deserialize(&full).map_err(|e| ConfigError::Field {
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Parses a JSON text (see [`Config::from_json`]).
    pub fn from_json_str(text: &str) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Field {
            path: String::new(),
            message: e.to_string(),
        })?;
        Self::from_json(&value)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if self.players.len() != self.num_players {
            return invalid(format!(
                "num_players is {} but {} player configs are given",
                self.num_players,
                self.players.len()
            ));
        }
        if self.num_players == 0 || self.num_players > MAX_PLAYERS {
            return invalid(format!("num_players must be 1..={MAX_PLAYERS}"));
        }
        let WorldSize {
            width,
            height,
            depth,
        } = self.world_size;
        if width < 3 || height < 3 || depth < 3 || width * height * depth > u32::MAX as usize {
            return invalid(format!(
                "world_size {} is too small (every side at least 3) or too large",
                self.world_size
            ));
        }
        if !self.abilities.flying {
            return invalid(
                "abilities.flying = false is not implemented (as in the reference)".into(),
            );
        }
        if self.malmo.video_dir.is_some() && !self.malmo.use_spectator {
            return invalid("malmo.video_dir needs malmo.use_spectator".into());
        }
        if let Some(i) = self.players.iter().position(|p| p.timestep_skip == 0) {
            return invalid(format!("players[{i}].timestep_skip must be at least 1"));
        }
        // Only the players' merged rewards become schedules in the reference; a
        // global value every player overrides is never built.
        for (i, player) in self.players.iter().enumerate() {
            player.rewards.check(&format!("players[{i}].rewards"))?;
        }
        Ok(())
    }

    /// The config as the reference's JSON dict.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("configs always serialise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_and_players_inherit_rewards() {
        let config = Config::from_json(&json!({
            "num_players": 2,
            "world_size": [11, 10, 10],
            "rewards": {"place_wrong": -1},
            "players": [{}, {"is_human": true, "rewards": {"noop": -0.5}}],
        }))
        .unwrap();
        assert_eq!(config.horizon, 50);
        assert_eq!(config.world_size, WorldSize::new(11, 10, 10));
        assert_eq!(
            config.players[0].rewards.place_wrong,
            RewardSchedule::Constant(-1.0)
        );
        assert_eq!(
            config.players[1].rewards.noop,
            RewardSchedule::Constant(-0.5)
        );
        assert_eq!(
            config.players[1].rewards.place_wrong,
            RewardSchedule::Constant(-1.0)
        );
        assert!(config.players[1].is_human);
        assert!(config.abilities.teleportation);
        // Filling is idempotent.
        assert_eq!(Config::from_json(&config.to_json()).unwrap(), config);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::from_json(&json!({"players": [{"rewardz": {}}]})).unwrap_err();
        assert!(err.to_string().contains("rewardz"), "{err}");
        let err = Config::from_json(&json!({"rewards": {"noop": "x"}})).unwrap_err();
        assert!(err.to_string().contains("rewards.noop"), "{err}");
        let err = Config::from_json(&json!({"num_players": 2})).unwrap_err();
        assert!(err.to_string().contains("num_players is 2"), "{err}");
    }

    #[test]
    fn schedules_interpolate_and_default_to_the_last_value() {
        let s = RewardSchedule::Piecewise(vec![(100.0, -0.1), (200.0, -0.3)]);
        assert_eq!(s.value_at(50), -0.3);
        assert!((s.value_at(150) - -0.2).abs() < 1e-12);
        assert_eq!(s.value_at(250), -0.3);
    }

    /// The reference's values, bit for bit, from `PiecewiseSchedule` evaluated
    /// with plain Python floats (CPython 3.11): the golden episodes' schedules and
    /// non-integer endpoint times, which `int()` truncates.
    #[test]
    fn schedules_give_the_reference_values_exactly() {
        let s = |points: &[(f64, f64)]| RewardSchedule::Piecewise(points.to_vec());
        // p48 and p50's place_wrong schedules at their global timesteps.
        assert_eq!(
            s(&[(0.0, -1.0), (40.0, -0.3)]).value_at(30),
            -0.475_000_000_000_000_1
        );
        assert_eq!(
            s(&[(0.0, -0.5), (60.0, -1.5), (120.0, -0.05)]).value_at(100),
            -0.533_333_333_333_333_4
        );
        // Times 0.9 and 10.5 are 0 and 10: alpha 0.5, not 4.1 / 9.6 (which gave
        // -0.5729166666666667).
        assert_eq!(s(&[(0.9, -1.0), (10.5, 0.0)]).value_at(5), -0.5);
        // 2.7 is 2, so t = 2 is inside the first segment (value 1.0), not before
        // it (the last value, 2.0); t = 5 = int(5.2) is past it.
        let late = s(&[(2.7, 1.0), (5.2, 2.0)]);
        assert_eq!(late.value_at(2), 1.0);
        assert_eq!(late.value_at(4), 1.0 + (2.0 / 3.0) * (2.0 - 1.0));
        assert_eq!(late.value_at(5), 2.0);
        // Equal truncated times make an empty segment, never a division by zero.
        assert_eq!(s(&[(0.2, 5.0), (0.7, 7.0)]).value_at(0), 7.0);
        assert_eq!(s(&[(3.0, 0.25)]).value_at(0), 0.25);
    }

    #[test]
    fn schedules_are_checked_as_the_reference_builds_them() {
        let with = |place_wrong: Value| {
            Config::from_json(&json!({
                "num_players": 2,
                "players": [{}, {"rewards": {"place_wrong": place_wrong}}],
            }))
        };
        assert!(with(json!([[0, -1], [10.5, 0]])).is_ok());
        // Ascending as written, ties allowed.
        assert!(with(json!([[0, -1], [0, 0]])).is_ok());
        for bad in [json!([]), json!([[10, -1], [0, 0]])] {
            let err = with(bad).unwrap_err();
            assert!(
                err.to_string().contains("players[1].rewards.place_wrong"),
                "{err}"
            );
        }
        // A global schedule every player overrides is never built.
        let config = Config::from_json(&json!({
            "rewards": {"noop": []},
            "players": [{"rewards": {"noop": -0.5}}],
        }));
        assert!(config.is_ok());
    }
}
