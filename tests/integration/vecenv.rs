//! The vectorised API gives exactly what stepping each environment alone gives,
//! whatever the number of threads, including across episode restarts.

use mbag::sim::env::Env;
use mbag::sim::goal::{GoalConfig, GoalGenerator};
use mbag::sim::{Action, Config, mask};
use mbag::vecenv::{EpisodeStarter, MaskMode, VecEnv};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

fn config() -> Config {
    Config::from_json(&json!({
        "num_players": 2,
        "world_size": [8, 7, 8],
        "horizon": 40,
        "random_start_locations": true,
        "rewards": {"place_wrong": -1},
        "players": [{}, {}],
        "abilities": {"teleportation": false, "flying": true, "inf_blocks": true},
    }))
    .unwrap()
}

fn goals() -> Box<dyn GoalGenerator> {
    GoalConfig::from_env("tutorial", &json!({}))
        .unwrap()
        .build()
        .unwrap()
}

fn starter() -> Box<dyn EpisodeStarter> {
    let mut goals = goals();
    Box::new(move |env: &mut Env, rng: &mut StdRng| env.reset(goals.as_mut(), rng).unwrap())
}

/// The k-th valid action of a mask, k drawn from a per-(step, env, player) seed, so
/// every run picks the same actions from the same masks.
fn pick(mask: &[bool], step: usize, env: usize, player: usize) -> usize {
    let mut rng = StdRng::seed_from_u64((step * 1000 + env * 10 + player) as u64);
    let valid: Vec<usize> = (0..mask.len()).filter(|&i| mask[i]).collect();
    valid[rng.random_range(0..valid.len())]
}

/// Per step and env: rewards, dones and the first player's observation bytes.
type Trace = Vec<Vec<(Vec<f64>, bool, Vec<u8>)>>;

fn run_vec(threads: usize, envs: usize, steps: usize) -> Trace {
    let config = config();
    let mut v = VecEnv::new(&config, envs, threads, MaskMode::LineOfSight, 9, |_| {
        starter()
    });
    let mut actions = vec![Action::NOOP; envs * 2];
    let mut trace = Vec::new();
    for step in 0..steps {
        v.for_each(|i, slot| {
            for p in 0..2 {
                actions[i * 2 + p] = slot
                    .env
                    .layout()
                    .action(pick(slot.mask(p), step, i, p))
                    .unwrap();
            }
        });
        v.step(&actions).unwrap();
        let mut row = Vec::new();
        v.for_each(|_, slot| {
            row.push((
                slot.rewards.clone(),
                slot.done,
                slot.observations[0].world.clone(),
            ))
        });
        trace.push(row);
    }
    trace
}

fn run_plain(envs: usize, steps: usize) -> Trace {
    let config = config();
    let mut all: Vec<(Env, StdRng, Box<dyn GoalGenerator>)> = (0..envs)
        .map(|i| {
            let mut env = Env::new(config.clone());
            let mut rng = StdRng::seed_from_u64(9 + i as u64);
            let mut g = goals();
            env.reset(g.as_mut(), &mut rng).unwrap();
            (env, rng, g)
        })
        .collect();
    let mut trace = Vec::new();
    let mut obs = all[0].0.new_observation();
    let mut mask_buf = vec![false; all[0].0.layout().len()];
    for step in 0..steps {
        let mut row = Vec::new();
        for (i, (env, rng, g)) in all.iter_mut().enumerate() {
            let mut actions = [Action::NOOP; 2];
            for (p, a) in actions.iter_mut().enumerate() {
                env.observe(p, &mut obs).unwrap();
                mask::compute(&obs, config.abilities, env.layout(), true, &mut mask_buf);
                *a = env.layout().action(pick(&mask_buf, step, i, p)).unwrap();
            }
            let outcome = env.step(&actions).unwrap().clone();
            if outcome.done {
                env.reset(g.as_mut(), rng).unwrap();
            }
            env.observe(0, &mut obs).unwrap();
            row.push((outcome.rewards, outcome.done, obs.world.clone()));
        }
        trace.push(row);
    }
    trace
}

#[test]
fn vecenv_matches_sequential_stepping_on_any_thread_count() {
    let (envs, steps) = (5, 90);
    let plain = run_plain(envs, steps);
    assert!(
        plain.iter().flatten().any(|(_, done, _)| *done),
        "episodes restart during the test"
    );
    assert_eq!(run_vec(1, envs, steps), plain);
    assert_eq!(run_vec(2, envs, steps), plain);
    // Uneven chunks (2, 2, 1), and slots taken over from other chunks.
    assert_eq!(run_vec(3, envs, steps), plain);
}

#[test]
fn vecenv_rejects_a_wrong_number_of_actions() {
    let mut v = VecEnv::new(&config(), 3, 2, MaskMode::None, 0, |_| starter());
    let err = v.step(&[Action::NOOP; 5]).unwrap_err();
    assert!(
        err.to_string().contains("got 5 actions for 6 players"),
        "{err}"
    );
}
