//! `mbag bench env`: the reference's speed scenarios (`../shared/reference/SPEED.md`)
//! run in one process, timed the same way: "env" is a step plus every player's
//! observation (the reference's `step` returns them), "policy" is the players' masks
//! (uniform scenarios; sampling is not timed) or the agents' `act`.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::agents::{Agent, build_agent};
use crate::sim::action::Action;
use crate::sim::config::Config;
use crate::sim::env::Env;
use crate::sim::goal::{GoalConfig, GoalError, GoalGenerator, Subset};
use crate::sim::mask;
use crate::vecenv::{EpisodeStarter, MaskMode, VecEnv};

/// Who chooses the actions of a rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// Uniform over the valid flat actions of each player's mask.
    Uniform {
        /// Use line-of-sight masks.
        line_of_sight: bool,
    },
    /// A reference agent class.
    Agent(&'static str),
}

/// One rollout kind.
#[derive(Clone, Copy, Debug)]
pub struct Rollout {
    /// Its name (as in the reference's bench script).
    pub name: &'static str,
    /// Number of players.
    pub players: usize,
    /// Teleportation instead of walking.
    pub teleportation: bool,
    /// Who acts.
    pub actor: Actor,
}

/// The rollouts of the reference bench.
pub const ROLLOUTS: [Rollout; 6] = [
    Rollout {
        name: "walk_uniform",
        players: 2,
        teleportation: false,
        actor: Actor::Uniform {
            line_of_sight: false,
        },
    },
    Rollout {
        name: "walk_uniform_los",
        players: 2,
        teleportation: false,
        actor: Actor::Uniform {
            line_of_sight: true,
        },
    },
    Rollout {
        name: "teleport_uniform",
        players: 2,
        teleportation: true,
        actor: Actor::Uniform {
            line_of_sight: false,
        },
    },
    Rollout {
        name: "lowest_block_1p",
        players: 1,
        teleportation: true,
        actor: Actor::Agent("LowestBlockAgent"),
    },
    Rollout {
        name: "lowest_block_2p",
        players: 2,
        teleportation: true,
        actor: Actor::Agent("LowestBlockAgent"),
    },
    Rollout {
        name: "random_agent_2p_walk",
        players: 2,
        teleportation: false,
        actor: Actor::Agent("RandomAgent"),
    },
];

/// A scenario: a rollout and which of its parts are timed.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// The key in `speed_baseline.json`.
    pub key: &'static str,
    /// The rollout it times.
    pub rollout: &'static str,
    /// Whether the policy part (masks or agents) counts.
    pub with_policy: bool,
}

/// The scenarios of SPEED.md.
pub const SCENARIOS: [Scenario; 7] = [
    Scenario {
        key: "uniform_valid_2p_walk_env_step_only",
        rollout: "walk_uniform",
        with_policy: false,
    },
    Scenario {
        key: "uniform_valid_2p_walk_with_masks",
        rollout: "walk_uniform",
        with_policy: true,
    },
    Scenario {
        key: "uniform_valid_2p_walk_with_los_masks",
        rollout: "walk_uniform_los",
        with_policy: true,
    },
    Scenario {
        key: "uniform_valid_2p_teleport_with_masks",
        rollout: "teleport_uniform",
        with_policy: true,
    },
    Scenario {
        key: "lowest_block_agent_1p_teleport",
        rollout: "lowest_block_1p",
        with_policy: true,
    },
    Scenario {
        key: "lowest_block_agent_2p_teleport",
        rollout: "lowest_block_2p",
        with_policy: true,
    },
    Scenario {
        key: "random_agent_2p_walk",
        rollout: "random_agent_2p_walk",
        with_policy: true,
    },
];

/// Time spent in one repetition of a rollout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    /// In `step` plus observations.
    pub env: Duration,
    /// In masks or agents.
    pub policy: Duration,
}

/// The paper-like config of the bench: 11x10x10, infinite blocks, random starts,
/// horizon 1500, place_wrong -1.
pub fn bench_config(players: usize, teleportation: bool) -> Config {
    Config::from_json(&json!({
        "num_players": players,
        "horizon": 1500,
        "world_size": [11, 10, 10],
        "random_start_locations": true,
        "rewards": {"place_wrong": -1},
        "players": vec![json!({}); players],
        "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": true},
    }))
    .expect("the bench config is valid")
}

/// The goal generator of the bench: the CraftAssist train houses through the
/// human-study chain, reading houses from `houses_dir`.
pub fn bench_goals(houses_dir: &std::path::Path) -> Result<Box<dyn GoalGenerator>, GoalError> {
    GoalConfig::human_study_in(Subset::Train, houses_dir).build()
}

fn sample_uniform(mask: &[bool], rng: &mut StdRng) -> usize {
    let n = mask.iter().filter(|&&m| m).count();
    mask::nth_valid(mask, rng.random_range(0..n.max(1))).unwrap_or(0)
}

/// A valid index by rejection (not exactly uniform over few tries, which does not
/// matter for throughput), so that choosing actions on the caller stays cheap.
fn sample_valid_quickly(mask: &[bool], rng: &mut StdRng) -> usize {
    for _ in 0..64 {
        let i = rng.random_range(0..mask.len());
        if mask[i] {
            return i;
        }
    }
    0
}

/// Runs one repetition of a rollout for `steps` steps; reset times are appended to
/// `reset_times` (seconds).
pub fn rollout(
    r: &Rollout,
    seed: u64,
    steps: usize,
    goals: &mut dyn GoalGenerator,
    reset_times: &mut Vec<f64>,
) -> Result<Timing, GoalError> {
    let config = bench_config(r.players, r.teleportation);
    let mut env = Env::new(config.clone());
    let mut rng = StdRng::seed_from_u64(seed);
    let mut agents: Vec<Box<dyn Agent>> = match r.actor {
        Actor::Agent(name) => (0..r.players)
            .map(|_| build_agent(name, &serde_json::Value::Null, &config).expect("a known agent"))
            .collect(),
        Actor::Uniform { .. } => Vec::new(),
    };
    let mut obs: Vec<_> = (0..r.players).map(|_| env.new_observation()).collect();
    // Rollouts keep a mask cache per player, as the vectorised API does, and read
    // each mask where the cache keeps it.
    let mut caches = vec![mask::MaskCache::default(); r.players];
    let mut actions = vec![Action::NOOP; r.players];
    let mut reset =
        |env: &mut Env, agents: &mut Vec<Box<dyn Agent>>, obs: &mut Vec<_>, rng: &mut StdRng| {
            for agent in agents.iter_mut() {
                agent.reset(rng.random());
            }
            let t = Instant::now();
            env.reset(goals, rng)?;
            for (p, o) in obs.iter_mut().enumerate() {
                let _ = env.observe(p, o);
            }
            reset_times.push(t.elapsed().as_secs_f64());
            Ok::<(), GoalError>(())
        };
    reset(&mut env, &mut agents, &mut obs, &mut rng)?;
    let mut timing = Timing::default();
    for _ in 0..steps {
        let t0 = Instant::now();
        match r.actor {
            Actor::Uniform { line_of_sight } => {
                for (cache, obs) in caches.iter_mut().zip(&obs) {
                    cache.update(obs, config.abilities, env.layout(), line_of_sight);
                }
            }
            Actor::Agent(_) => {
                for (p, agent) in agents.iter_mut().enumerate() {
                    actions[p] = agent.act(&obs[p]);
                }
            }
        }
        let t1 = Instant::now();
        if let Actor::Uniform { .. } = r.actor {
            for p in 0..r.players {
                let flat = sample_uniform(caches[p].mask(), &mut rng);
                actions[p] = env.layout().action(flat).expect("a flat index of the mask");
            }
        }
        let t2 = Instant::now();
        let done = env.step(&actions).expect("one action per player").done;
        for (p, o) in obs.iter_mut().enumerate() {
            let _ = env.observe(p, o);
        }
        let t3 = Instant::now();
        timing.policy += t1 - t0;
        timing.env += t3 - t2;
        if done {
            reset(&mut env, &mut agents, &mut obs, &mut rng)?;
        }
    }
    Ok(timing)
}

/// Throughput of the vectorised API on one thread and on many, measured in
/// alternating rounds (see [`vecenv_scaling`]).
#[derive(Clone, Debug)]
pub struct VecEnvScaling {
    /// Threads of the many-thread measurement.
    pub threads: usize,
    /// Env-steps per second of each round on one thread.
    pub one: Vec<f64>,
    /// Env-steps per second of each round on `threads` threads.
    pub many: Vec<f64>,
}

impl VecEnvScaling {
    /// The median of each round's ratio many/one: rounds side by side see the same
    /// load from other processes, so this is steadier than a ratio of medians.
    pub fn median_ratio(&self) -> f64 {
        let mut ratios: Vec<f64> = self
            .many
            .iter()
            .zip(&self.one)
            .map(|(m, o)| m / o)
            .collect();
        median(&mut ratios)
    }
}

/// The median of `values` (NaN for none).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// A vectorised env for the bench: `num_envs` walking 2-player environments with
/// no-line-of-sight masks computed on the workers.
fn bench_vecenv(
    num_envs: usize,
    num_threads: usize,
    houses_dir: &std::path::Path,
) -> Result<VecEnv, GoalError> {
    let config = bench_config(2, false);
    // Build one generator per env up front so errors surface here.
    let mut generators = (0..num_envs)
        .map(|_| bench_goals(houses_dir).map(Some))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VecEnv::new(
        &config,
        num_envs,
        num_threads,
        MaskMode::NoLineOfSight,
        1,
        |i| {
            let mut goals = generators[i].take().expect("one generator per env");
            let starter = move |env: &mut Env, rng: &mut StdRng| {
                if let Err(e) = env.reset(goals.as_mut(), rng) {
                    log::error!("goal generation failed: {e}");
                }
            };
            Box::new(starter) as Box<dyn EpisodeStarter>
        },
    ))
}

/// Steps `vec_env` `steps` times with uniform actions chosen on the caller;
/// env-steps per second.
fn time_vecenv(
    vec_env: &mut VecEnv,
    steps: usize,
    rng: &mut StdRng,
    actions: &mut [Action],
) -> f64 {
    let start = Instant::now();
    for _ in 0..steps {
        vec_env.for_each(|i, slot| {
            for p in 0..2 {
                let flat = sample_valid_quickly(slot.mask(p), rng);
                actions[i * 2 + p] = slot.env.layout().action(flat).expect("a flat index");
            }
        });
        vec_env.step(actions).expect("one action per player");
    }
    (steps * vec_env.num_envs()) as f64 / start.elapsed().as_secs_f64()
}

/// Steps per second of the vectorised API on 1 and on `num_threads` threads:
/// `num_envs` walking 2-player environments with no-line-of-sight masks computed
/// on the workers and uniform actions chosen on the caller. Both are built first
/// and then timed in `rounds` alternating rounds of `steps` steps (after one
/// untimed round each), so that both see the same load from other processes.
pub fn vecenv_scaling(
    num_envs: usize,
    num_threads: usize,
    steps: usize,
    rounds: usize,
    houses_dir: &std::path::Path,
) -> Result<VecEnvScaling, GoalError> {
    let mut one = bench_vecenv(num_envs, 1, houses_dir)?;
    let mut many = bench_vecenv(num_envs, num_threads, houses_dir)?;
    let mut rng = StdRng::seed_from_u64(2);
    let mut actions = vec![Action::NOOP; num_envs * 2];
    time_vecenv(&mut one, steps, &mut rng, &mut actions);
    time_vecenv(&mut many, steps, &mut rng, &mut actions);
    let mut result = VecEnvScaling {
        threads: num_threads,
        one: Vec::with_capacity(rounds),
        many: Vec::with_capacity(rounds),
    };
    for _ in 0..rounds {
        result
            .one
            .push(time_vecenv(&mut one, steps, &mut rng, &mut actions));
        result
            .many
            .push(time_vecenv(&mut many, steps, &mut rng, &mut actions));
    }
    Ok(result)
}

/// What `mbag bench env` measures.
#[derive(Clone, Debug)]
pub struct EnvBench {
    /// Repetitions per rollout, each from a fresh env.
    pub reps: usize,
    /// Environment steps per repetition.
    pub steps: usize,
    /// Seed of the first repetition (repetition r uses seed + r).
    pub seed: u64,
    /// Only these rollouts (all when empty).
    pub only: Vec<String>,
    /// The folder of CraftAssist houses the goals come from.
    pub houses: std::path::PathBuf,
    /// Environments of the vectorised-API measurement.
    pub vec_envs: usize,
    /// Threads of the vectorised-API measurement, against 1.
    pub vec_threads: usize,
    /// Steps per round of the vectorised-API measurement.
    pub vec_steps: usize,
    /// Alternating rounds of the vectorised-API measurement.
    pub vec_rounds: usize,
}

/// Why `mbag bench env` could not measure.
#[derive(Debug, thiserror::Error)]
pub enum EnvBenchError {
    /// A rollout name that is not one of [`ROLLOUTS`].
    #[error("unknown rollout {name:?}; known: {known}")]
    UnknownRollout {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// Nothing to measure.
    #[error("repetitions and steps must be positive")]
    Empty,
    /// The goals could not be generated.
    #[error(transparent)]
    Goals(#[from] GoalError),
    /// A rollout failed.
    #[error("rollout {name}: {message}")]
    Rollout {
        /// The rollout.
        name: &'static str,
        /// What failed.
        message: String,
    },
}

/// One scenario's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioResult {
    /// The scenario's key in the reference's figures.
    pub key: &'static str,
    /// The slowest repetition, steps/s.
    pub min: f64,
    /// The median repetition, steps/s.
    pub median: f64,
    /// The reference's median, steps/s, where the figures have it.
    pub reference: Option<f64>,
}

impl ScenarioResult {
    /// Our median over the reference's.
    pub fn ratio(&self) -> Option<f64> {
        self.reference.map(|r| self.median / r)
    }
}

/// Resets with goal generation, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResetResult {
    /// How many were timed.
    pub count: usize,
    /// The fastest.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The reference's median.
    pub reference: f64,
}

/// Everything `mbag bench env` measured.
#[derive(Clone, Debug)]
pub struct EnvReport {
    /// Per selected scenario, in [`SCENARIOS`] order.
    pub scenarios: Vec<ScenarioResult>,
    /// Resets with goal generation, when any were timed.
    pub resets: Option<ResetResult>,
    /// Per selected rollout: its name, and the median microseconds per step in
    /// the env and in masks or agents.
    pub per_step_us: Vec<(&'static str, f64, f64)>,
    /// The vectorised API on 1 and on N threads.
    pub vecenv: VecEnvScaling,
    /// The reference's single env with masks, steps/s, for the vectorised API's
    /// scale.
    pub vecenv_reference: Option<f64>,
}

impl EnvReport {
    /// The slowest scenario's ratio to the reference.
    pub fn worst_ratio(&self) -> Option<f64> {
        self.scenarios
            .iter()
            .filter_map(ScenarioResult::ratio)
            .min_by(f64::total_cmp)
    }
}

/// Runs the rollouts of `bench` (repetitions outer, rollouts inner, as the
/// reference does, so slow drifts of the machine hit every rollout alike), then
/// the vectorised API, and summarises them against `baseline`. `progress` is
/// told each rollout as it starts and once per repetition of a rollout done
/// or skipped.
pub fn measure(
    bench: &EnvBench,
    baseline: &super::baseline::Baseline,
    progress: &mut dyn FnMut(Option<&'static str>),
) -> Result<EnvReport, EnvBenchError> {
    if bench.reps == 0 || bench.steps == 0 {
        return Err(EnvBenchError::Empty);
    }
    let known: Vec<&str> = ROLLOUTS.iter().map(|r| r.name).collect();
    if let Some(bad) = bench.only.iter().find(|o| !known.contains(&o.as_str())) {
        return Err(EnvBenchError::UnknownRollout {
            name: bad.clone(),
            known: known.join(", "),
        });
    }
    let selected = |name: &str| bench.only.is_empty() || bench.only.iter().any(|o| o == name);
    let mut goals = bench_goals(&bench.houses)?;
    let mut timings: Vec<Vec<Timing>> = vec![Vec::new(); ROLLOUTS.len()];
    let mut reset_times = Vec::new();
    for rep in 0..bench.reps {
        for (k, r) in ROLLOUTS.iter().enumerate() {
            if !selected(r.name) {
                progress(None);
                continue;
            }
            progress(Some(r.name));
            let t = rollout(
                r,
                bench.seed + rep as u64,
                bench.steps,
                goals.as_mut(),
                &mut reset_times,
            )
            .map_err(|e| EnvBenchError::Rollout {
                name: r.name,
                message: e.to_string(),
            })?;
            timings[k].push(t);
            progress(None);
        }
    }
    let rollout_index = |name: &str| {
        ROLLOUTS
            .iter()
            .position(|r| r.name == name)
            .expect("a known rollout")
    };
    let steps = bench.steps as f64;
    let scenarios = SCENARIOS
        .iter()
        .filter(|s| selected(s.rollout))
        .map(|s| {
            let mut rates: Vec<f64> = timings[rollout_index(s.rollout)]
                .iter()
                .map(|t| {
                    let policy = if s.with_policy {
                        t.policy
                    } else {
                        Duration::ZERO
                    };
                    steps / (t.env + policy).as_secs_f64()
                })
                .collect();
            ScenarioResult {
                key: s.key,
                min: rates.iter().copied().fold(f64::INFINITY, f64::min),
                median: median(&mut rates),
                reference: baseline.median(s.key),
            }
        })
        .collect();
    let resets = (!reset_times.is_empty()).then(|| ResetResult {
        count: reset_times.len(),
        min: reset_times.iter().copied().fold(f64::INFINITY, f64::min),
        median: median(&mut reset_times.clone()),
        reference: baseline.reset_with_goal_generation_s.median,
    });
    let per_step_us = ROLLOUTS
        .iter()
        .filter(|r| selected(r.name))
        .map(|r| {
            let t = &timings[rollout_index(r.name)];
            let mut env: Vec<f64> = t
                .iter()
                .map(|t| t.env.as_secs_f64() * 1e6 / steps)
                .collect();
            let mut pol: Vec<f64> = t
                .iter()
                .map(|t| t.policy.as_secs_f64() * 1e6 / steps)
                .collect();
            (r.name, median(&mut env), median(&mut pol))
        })
        .collect();
    let vecenv = vecenv_scaling(
        bench.vec_envs,
        bench.vec_threads,
        bench.vec_steps,
        bench.vec_rounds,
        &bench.houses,
    )?;
    Ok(EnvReport {
        scenarios,
        resets,
        per_step_us,
        vecenv,
        vecenv_reference: baseline.median("uniform_valid_2p_walk_with_masks"),
    })
}
