//! Episode metrics exactly as the reference's `calculate_metrics` (ENV_SPEC
//! section 14): counts of effective actions, accuracies, reward sums and per-minute
//! snapshots.

use serde_json::{Map, Value, json};

use crate::sim::action::ActionType;
use crate::sim::config::Config;
use crate::sim::env::StepInfo;

/// Running per-player counters; also the content of a per-minute snapshot.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PlayerCounters {
    /// Effective actions per type id (a palette break is counted separately).
    pub num_actions: [u64; 10],
    /// BREAKs in the palette column (palette mode).
    pub num_break_palette: u64,
    /// Successful, goal-improving places.
    pub num_correct_place_block: u64,
    /// Successful, non-harmful breaks.
    pub num_correct_break_block: u64,
    /// Attempted non-NOOP actions that did nothing.
    pub num_unintentional_noop: u64,
    /// Sum of own rewards.
    pub own_reward: f64,
    /// Sum of goal-dependent rewards.
    pub goal_dependent_reward: f64,
    /// Sum of goal-independent rewards.
    pub goal_independent_reward: f64,
}

/// One player's metrics for an episode.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerMetrics {
    /// Totals over the episode.
    pub totals: PlayerCounters,
    /// `own_reward_prop` of the last step.
    pub own_reward_prop: f64,
    /// Snapshots of the counters at the first step of each minute (minute >= 1).
    pub per_minute: Vec<(u64, PlayerCounters)>,
}

impl PlayerMetrics {
    /// Correct places / places (NaN if none).
    pub fn place_block_accuracy(&self) -> f64 {
        ratio(
            self.totals.num_correct_place_block,
            self.totals.num_actions[ActionType::PlaceBlock.id() as usize],
        )
    }

    /// Correct breaks / breaks (NaN if none).
    pub fn break_block_accuracy(&self) -> f64 {
        ratio(
            self.totals.num_correct_break_block,
            self.totals.num_actions[ActionType::BreakBlock.id() as usize],
        )
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

/// Team-level values at the first step of a minute.
#[derive(Clone, Debug, PartialEq)]
pub struct MinuteSnapshot {
    /// The minute (0-based).
    pub minute: u64,
    /// Player 0's goal percentage.
    pub goal_percentage: f64,
    /// Goal similarity.
    pub goal_similarity: f64,
    /// `W*H*D - goal_similarity`.
    pub goal_distance: f64,
    /// Player 0's cumulative reward.
    pub reward: f64,
}

/// Metrics of one episode.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeMetrics {
    /// Final goal similarity.
    pub goal_similarity: f64,
    /// `W*H*D - goal_similarity`.
    pub goal_distance: f64,
    /// Player 0's final goal percentage.
    pub goal_percentage: f64,
    /// Sum of player 0's rewards.
    pub reward: f64,
    /// Per player.
    pub player_metrics: Vec<PlayerMetrics>,
    /// Per minute, team values.
    pub per_minute: Vec<MinuteSnapshot>,
}

/// Python's float floor division `a // b` (it differs from `floor(a / b)` when the
/// quotient rounds up to an integer).
fn py_floordiv(a: f64, b: f64) -> f64 {
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut floor = div.floor();
        if div - floor > 0.5 {
            floor += 1.0;
        }
        floor
    } else {
        0f64.copysign(a / b)
    }
}

/// The minute of step `t` without Malmo: `(t + 1) * action_delay // 60`.
pub fn minute_of_step(t: u64, action_delay: f64) -> u64 {
    py_floordiv((t + 1) as f64 * action_delay, 60.0) as u64
}

/// Computes the metrics of an episode from its per-step infos and rewards.
///
/// `infos[t][p]` and `rewards[t][p]` are step `t`'s values. The episode must have at
/// least one step.
pub fn calculate(config: &Config, infos: &[Vec<StepInfo>], rewards: &[Vec<f64>]) -> EpisodeMetrics {
    assert!(!infos.is_empty(), "metrics need at least one step");
    let length = infos.len() as u64;
    let n = config.world_size.num_cells() as f64;
    let delay = config.malmo.action_delay;
    let palette_x = config.world_size.width as i32 - 1;
    let inf_blocks = config.abilities.inf_blocks;
    let player_metrics = (0..config.num_players)
        .map(|p| {
            let mut c = PlayerCounters::default();
            let mut per_minute: Vec<(u64, PlayerCounters)> = Vec::new();
            for t in 0..config.horizon {
                if t < length {
                    let info = &infos[t as usize][p];
                    c.own_reward += info.own_reward;
                    c.goal_dependent_reward += info.goal_dependent_reward;
                    c.goal_independent_reward += info.goal_independent_reward;
                    let a = info.action;
                    let palette = a.kind == ActionType::BreakBlock
                        && !inf_blocks
                        && a.cell(config.world_size).x == palette_x;
                    if palette {
                        c.num_break_palette += 1;
                    } else {
                        c.num_actions[a.kind.id() as usize] += 1;
                    }
                    if info.attempted_action.kind() != Some(ActionType::Noop)
                        && info.action.kind == ActionType::Noop
                    {
                        c.num_unintentional_noop += 1;
                    }
                    if info.action_correct {
                        match a.kind {
                            ActionType::PlaceBlock => c.num_correct_place_block += 1,
                            ActionType::BreakBlock => c.num_correct_break_block += 1,
                            _ => {}
                        }
                    }
                }
                let minute = minute_of_step(t, delay);
                if minute > 0 && per_minute.last().is_none_or(|&(m, _)| m != minute) {
                    per_minute.push((minute, c.clone()));
                }
            }
            PlayerMetrics {
                totals: c,
                own_reward_prop: infos[infos.len() - 1][p].own_reward_prop,
                per_minute,
            }
        })
        .collect();
    let last = &infos[infos.len() - 1][0];
    let mut per_minute: Vec<MinuteSnapshot> = Vec::new();
    let mut cumulative = 0.0;
    for t in 0..config.horizon {
        let info = &infos[t.min(length - 1) as usize][0];
        if t < length {
            cumulative += rewards[t as usize][0];
        }
        let minute = minute_of_step(t, delay);
        if per_minute.last().is_none_or(|s| s.minute != minute) {
            per_minute.push(MinuteSnapshot {
                minute,
                goal_percentage: info.goal_percentage,
                goal_similarity: info.goal_similarity,
                goal_distance: n - info.goal_similarity,
                reward: cumulative,
            });
        }
    }
    EpisodeMetrics {
        goal_similarity: last.goal_similarity,
        goal_distance: n - last.goal_similarity,
        goal_percentage: last.goal_percentage,
        // Python's `sum` of the list: 0 + r0 + r1 + ... left to right (CPython
        // 3.11, which the goldens ran on, does not compensate). Rust's `f64::sum`
        // starts from -0.0 instead, which would keep the sign of an all -0.0 list.
        reward: rewards.iter().fold(0.0, |total, r| total + r[0]),
        player_metrics,
        per_minute,
    }
}

fn float(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else if v.is_nan() {
        json!("NaN")
    } else if v > 0.0 {
        json!("Infinity")
    } else {
        json!("-Infinity")
    }
}

impl PlayerCounters {
    /// The counters under the reference's key names for a config.
    fn to_map(&self, config: &Config, suffix: &str) -> Map<String, Value> {
        let mut m = Map::new();
        for t in ActionType::ALL {
            if !t.enabled_in(config.abilities) {
                continue;
            }
            let name = t.name().to_lowercase();
            m.insert(
                format!("num_{name}{suffix}"),
                json!(self.num_actions[t.id() as usize]),
            );
            match t {
                ActionType::PlaceBlock => {
                    m.insert(
                        format!("num_correct_{name}{suffix}"),
                        json!(self.num_correct_place_block),
                    );
                }
                ActionType::BreakBlock => {
                    m.insert(
                        format!("num_correct_{name}{suffix}"),
                        json!(self.num_correct_break_block),
                    );
                }
                _ => {}
            }
        }
        m.insert(
            format!("num_unintentional_noop{suffix}"),
            json!(self.num_unintentional_noop),
        );
        if !config.abilities.inf_blocks {
            m.insert(
                format!("num_break_palette{suffix}"),
                json!(self.num_break_palette),
            );
        }
        m.insert(format!("own_reward{suffix}"), float(self.own_reward));
        m.insert(
            format!("goal_dependent_reward{suffix}"),
            float(self.goal_dependent_reward),
        );
        m.insert(
            format!("goal_independent_reward{suffix}"),
            float(self.goal_independent_reward),
        );
        m
    }
}

impl EpisodeMetrics {
    /// The metrics as the reference's JSON dict (the golden footers' `metrics`).
    pub fn to_reference_json(&self, config: &Config) -> Value {
        let players: Vec<Value> = self
            .player_metrics
            .iter()
            .map(|pm| {
                let mut m = pm.totals.to_map(config, "");
                m.insert("own_reward_prop".into(), float(pm.own_reward_prop));
                let mut per_minute = Map::new();
                for (minute, c) in &pm.per_minute {
                    per_minute.extend(c.to_map(config, &format!("_{minute}_min")));
                }
                m.insert("per_minute_metrics".into(), Value::Object(per_minute));
                m.insert(
                    "break_block_accuracy".into(),
                    float(pm.break_block_accuracy()),
                );
                m.insert(
                    "place_block_accuracy".into(),
                    float(pm.place_block_accuracy()),
                );
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("goal_similarity".into(), float(self.goal_similarity));
        m.insert("goal_distance".into(), float(self.goal_distance));
        m.insert("goal_percentage".into(), float(self.goal_percentage));
        m.insert("player_metrics".into(), Value::Array(players));
        m.insert("reward".into(), float(self.reward));
        for s in &self.per_minute {
            m.insert(
                format!("goal_percentage_{}_min", s.minute),
                float(s.goal_percentage),
            );
            m.insert(
                format!("goal_similarity_{}_min", s.minute),
                float(s.goal_similarity),
            );
            m.insert(
                format!("goal_distance_{}_min", s.minute),
                float(s.goal_distance),
            );
            m.insert(format!("reward_{}_min", s.minute), float(s.reward));
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floordiv_matches_python() {
        assert_eq!(py_floordiv(60.0, 60.0), 1.0);
        assert_eq!(py_floordiv(59.99999999999999, 60.0), 0.0);
        assert_eq!(minute_of_step(74, 0.8), 1);
        assert_eq!(minute_of_step(73, 0.8), 0);
    }

    /// Reward sums run left to right from Python's int 0, as `sum(reward_history)`
    /// and the `+=` loops of `calculate_metrics` do.
    #[test]
    fn reward_sums_follow_pythons_order() {
        let config = Config::from_json(&json!({"horizon": 10})).unwrap();
        let info = |own_reward: f64| StepInfo {
            goal_similarity: 0.0,
            goal_percentage: 0.0,
            goal_dependent_reward: 0.0,
            goal_independent_reward: own_reward,
            own_reward,
            own_reward_prop: 0.0,
            attempted_action: crate::sim::action::ActionTuple::NOOP,
            action: crate::sim::action::Action::NOOP,
            action_correct: false,
        };
        // Python: sum([-0.0, -0.0]) == 0.0 (0 + -0.0 is 0.0); Rust's f64 `sum` is -0.0.
        let m = calculate(
            &config,
            &[vec![info(-0.0)], vec![info(-0.0)]],
            &[vec![-0.0], vec![-0.0]],
        );
        assert!(m.reward == 0.0 && m.reward.is_sign_positive());
        // Left to right: ten 0.1s make 0.9999999999999999 (numpy's pairwise sum
        // and Python 3.12's compensated one make 1.0).
        let infos = vec![vec![info(0.1)]; 10];
        let rewards = vec![vec![0.1]; 10];
        let m = calculate(&config, &infos, &rewards);
        assert_eq!(m.reward, 0.999_999_999_999_999_9);
        assert_eq!(
            m.player_metrics[0].totals.own_reward,
            0.999_999_999_999_999_9
        );
    }
}
