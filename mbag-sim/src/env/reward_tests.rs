//! Rewards, infos and the no-progress counter with per-player reward overrides,
//! fractional partial credit and schedules at non-integer points (ENV_SPEC 2, 5.1,
//! 7), against values derived from the reference's formulas with plain Python
//! floats (CPython 3.11, numpy's pairwise summation written out by hand), bit for
//! bit; and the partial-credit sum's order where it rounds.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::*;
use crate::config::RewardSchedule;

/// A 5x6x5 world (150 cells) whose goal wants cobblestone in the 30 cells with
/// `x >= 2` and `y` in 2..=3, which hold planks at reset: 30 wrong-type cells, so
/// every partial-credit similarity sums 30 fractional credits among 120 ones.
/// Teleporting, infinite blocks, global timestep 30; player 0's `place_wrong` is a
/// schedule and its `own_reward_prop` 0.5, player 1 overrides `place_wrong`,
/// `incorrect_action`, and has schedules for `own_reward_prop` and `noop` (the
/// latter with non-integer endpoint times, 10.5 and 50.9, which count as 10 and
/// 50).
fn overridden_env(config_players: serde_json::Value) -> Env {
    let config = Config::from_json(&json!({
        "num_players": 2,
        "world_size": [5, 6, 5],
        "horizon": 100,
        "players": config_players,
        "rewards": {"noop": -0.1, "action": 0.05},
        "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
    }))
    .unwrap();
    let mut env = Env::new(config);
    env.set_global_timestep(30);
    let size = env.size();
    let mut goal = Blocks::air(size);
    for x in 0..5 {
        for z in 0..5 {
            goal.set(Cell::new(x, 0, z), BlockId::BEDROCK);
            goal.set(Cell::new(x, 1, z), BlockId::DIRT);
        }
    }
    let mut world = goal.clone();
    for x in 2..5 {
        for y in 2..4 {
            for z in 0..5 {
                goal.set(Cell::new(x, y, z), BlockId::COBBLESTONE);
                world.set(Cell::new(x, y, z), BlockId::PLANKS);
            }
        }
    }
    env.reset_with_goal(goal.clone(), &mut StdRng::seed_from_u64(0));
    let mut state = env.state().clone();
    state.blocks = world;
    env.restore(goal, state);
    env
}

fn players() -> serde_json::Value {
    json!([
        {"rewards": {"place_wrong": [[0, -1], [40, -0.3]], "own_reward_prop": 0.5}},
        {"rewards": {
            "place_wrong": -0.7,
            "incorrect_action": -0.25,
            "own_reward_prop": [[0, 0.2], [100, 0.9]],
            "noop": [[10.5, -0.3], [50.9, 0.1]],
        }},
    ])
}

fn at(env: &Env, kind: ActionType, x: i32, y: i32, z: i32, block: BlockId) -> Action {
    Action::new(kind, env.size().index(Cell::new(x, y, z)), block)
}

/// One player's expected info: goal-dependent, goal-independent and own reward,
/// own_reward_prop, action_correct and goal percentage.
struct Want(f64, f64, f64, f64, bool, f64);

fn check(outcome: &StepOutcome, rewards: [f64; 2], similarity: f64, want: [Want; 2]) {
    assert_eq!(outcome.rewards, rewards);
    for (p, w) in want.iter().enumerate() {
        let info = &outcome.infos[p];
        assert_eq!(info.goal_dependent_reward, w.0, "player {p}");
        assert_eq!(info.goal_independent_reward, w.1, "player {p}");
        assert_eq!(info.own_reward, w.2, "player {p}");
        assert_eq!(info.own_reward_prop, w.3, "player {p}");
        assert_eq!(info.action_correct, w.4, "player {p}");
        assert_eq!(info.goal_similarity, similarity, "player {p}");
        assert_eq!(info.goal_percentage, w.5, "player {p}");
    }
}

/// Per-player overrides and schedules through four steps, one of them after the
/// global timestep moved past player 0's last endpoint: every reward, info and the
/// no-progress bookkeeping equal the reference's values exactly.
#[test]
fn per_player_overrides_and_schedules_give_the_reference_values() {
    let mut env = overridden_env(players());
    // place_wrong(30) = -0.4750000000000001 for player 0; numpy's pairwise sum of
    // the credits is 105.75 (Python's left-to-right sum: 105.75000000000017).
    assert_eq!(env.initial_goal_similarities(), &[105.75, 99.0]);
    let infos = env.reset_infos();
    assert_eq!(infos[0].goal_percentage, 0.0);
    assert_eq!(infos[1].own_reward_prop, 0.410_000_000_000_000_03);

    use ActionType::{BreakBlock, Noop, PlaceBlock};
    let noop = Action::NOOP;
    let air = BlockId::AIR;
    // Both break a wrong-type block: correct for both, each at its own credit.
    let step = [
        at(&env, BreakBlock, 2, 3, 2, air),
        at(&env, BreakBlock, 3, 3, 2, air),
    ];
    let outcome = env.step(&step).unwrap().clone();
    assert!(outcome.infos.iter().all(|i| i.action.kind == BreakBlock));
    check(
        &outcome,
        [0.900_000_000_000_000_1, 1.059_750_000_000_000_2],
        120.0,
        [
            Want(
                0.475_000_000_000_000_1,
                0.05,
                0.525_000_000_000_000_1,
                0.5,
                true,
                0.021_468_926_553_672_06,
            ),
            Want(
                0.7,
                0.05,
                0.75,
                0.410_000_000_000_000_03,
                true,
                0.027_450_980_392_156_696,
            ),
        ],
    );
    assert_eq!(env.state().timesteps_with_no_progress, 0);

    // The host moves the global timestep: player 0's place_wrong is now the last
    // value, -0.3, while the percentages keep the similarities of the reset.
    env.set_global_timestep(45);
    let step = [
        at(&env, PlaceBlock, 2, 3, 2, BlockId::COBBLESTONE),
        at(&env, PlaceBlock, 3, 3, 2, BlockId::DIRT),
    ];
    let outcome = env.step(&step).unwrap().clone();
    assert!(outcome.infos.iter().all(|i| i.action.kind == PlaceBlock));
    check(
        &outcome,
        [0.600_000_000_000_000_1, -0.390_749_999_999_999_93],
        121.0,
        [
            Want(1.0, 0.05, 1.05, 0.5, true, 0.148_022_598_870_056_75),
            Want(
                -0.95,
                0.05,
                -0.899_999_999_999_999_9,
                0.515,
                false,
                0.033_333_333_333_333_11,
            ),
        ],
    );

    // Player 1's noop reward is its schedule at 45 between 10 and 50.
    let step = [at(&env, BreakBlock, 4, 3, 4, air), noop];
    let outcome = env.step(&step).unwrap().clone();
    check(
        &outcome,
        [0.375, 0.219_750_000_000_000_03],
        121.0,
        [
            Want(0.3, 0.05, 0.35, 0.5, true, 0.154_802_259_887_005_86),
            Want(
                0.0,
                0.050_000_000_000_000_044,
                0.050_000_000_000_000_044,
                0.515,
                false,
                0.047_058_823_529_411_6,
            ),
        ],
    );
    assert_eq!(env.state().timesteps_with_no_progress, 0);

    // No progress: the counter counts, the maxima stay.
    let outcome = env.step(&[noop, noop]).unwrap().clone();
    assert!(outcome.infos.iter().all(|i| i.action.kind == Noop));
    check(
        &outcome,
        [-0.074_999_999_999_999_98, 0.001_500_000_000_000_043],
        121.0,
        [
            Want(0.0, -0.1, -0.1, 0.5, false, 0.154_802_259_887_005_86),
            Want(
                0.0,
                0.050_000_000_000_000_044,
                0.050_000_000_000_000_044,
                0.515,
                false,
                0.047_058_823_529_411_6,
            ),
        ],
    );
    assert_eq!(env.state().timesteps_with_no_progress, 1);
    assert_eq!(
        env.state().maximum_goal_percentages,
        [0.154_802_259_887_005_86, 0.047_058_823_529_411_6]
    );
}

/// Integer-valued credits too large for exact partial sums: the cells are summed
/// in numpy's order, not as `matching + place_wrong * wrong_type`.
#[test]
fn huge_integer_credits_are_summed_in_numpys_order() {
    let pw = 2f64.powi(53) + 2.0;
    let env = overridden_env(json!([{"rewards": {"place_wrong": pw}}, {}]));
    let credits: Vec<f64> = env
        .state()
        .blocks
        .ids()
        .iter()
        .zip(env.goal().ids())
        .map(|(&w, &g)| cell_similarity(BlockId(w), BlockId(g), pw))
        .collect();
    let counted = 120.0 + pw * 30.0;
    let summed = crate::numpy::sum(&credits);
    assert_ne!(counted, summed, "the example must tell the orders apart");
    assert_eq!(env.initial_goal_similarities()[0], summed);
    // Integer credits with exact partial sums keep the O(1) count.
    assert!(counts_are_exact(-1.0, 150));
    assert!(counts_are_exact(-1e6, 150));
    assert!(!counts_are_exact(pw, 150));
    assert!(!counts_are_exact(-0.475, 150));
    assert!(!counts_are_exact(-0.0, 150));
    assert!(!counts_are_exact(f64::NAN, 150));
    assert!(!counts_are_exact(f64::INFINITY, 150));
}

/// With no wrong-type cell no credit is `place_wrong`, so even a NaN one leaves
/// the similarity the matching count (the reference assigns it to no cell).
#[test]
fn credits_without_wrong_type_cells_ignore_place_wrong() {
    let mut config = overridden_env(players()).config().clone();
    config.players[0].rewards.place_wrong = RewardSchedule::Constant(f64::NAN);
    let mut env = Env::new(config);
    let mut structure = Blocks::air(env.goal_structure_size());
    structure.set(Cell::new(1, 1, 1), BlockId::COBBLESTONE);
    let goal = place_goal(env.size(), &structure, true);
    env.reset_with_goal(goal, &mut StdRng::seed_from_u64(0));
    // The goal's air structure replaces 9 dirt cells, and wants one cobblestone.
    assert_eq!(env.initial_goal_similarities()[0], 140.0);
    assert_eq!(env.reset_infos()[0].goal_percentage, 0.0);
}
