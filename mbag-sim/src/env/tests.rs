//! Tuples the reference does not expect (the module docs of `env`): unknown types,
//! fields out of range, and what a step does with them.

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use super::*;

const NOOP_REWARD: f64 = -0.25;
const ACTION_REWARD: f64 = 0.5;

/// A 5x6x5 env reset around a goal with one cobblestone at (2, 2, 2). Players start
/// at (0.5, 2, 0.5) and (1.5, 2, 0.5); `own_reward_prop` 1 makes each reward the
/// player's own.
fn env(teleportation: bool, inf_blocks: bool, players: Value) -> Env {
    let num_players = players.as_array().map_or(0, Vec::len);
    let config = Config::from_json(&json!({
        "num_players": num_players,
        "world_size": [5, 6, 5],
        "horizon": 100,
        "players": players,
        "rewards": {
            "noop": NOOP_REWARD,
            "action": ACTION_REWARD,
            "place_wrong": -1.0,
            "own_reward_prop": 1.0,
        },
        "abilities": {
            "teleportation": teleportation,
            "flying": true,
            "inf_blocks": inf_blocks,
        },
    }))
    .unwrap();
    let mut env = Env::new(config);
    let mut structure = Blocks::air(env.goal_structure_size());
    structure.set(Cell::new(1, 1, 1), BlockId::COBBLESTONE);
    let goal = place_goal(env.size(), &structure, inf_blocks);
    env.reset_with_goal(goal, &mut StdRng::seed_from_u64(0));
    env
}

fn two_ais() -> Value {
    json!([{}, {}])
}

fn ai_and_human() -> Value {
    json!([{}, {"is_human": true}])
}

fn loc(env: &Env, x: i32, y: i32, z: i32) -> i64 {
    env.size().index(Cell::new(x, y, z)).get() as i64
}

/// Every config the checks run in: walking or teleporting, palette or infinite
/// blocks, with an AI and a human.
fn all_envs() -> Vec<Env> {
    let mut envs = Vec::new();
    for teleportation in [false, true] {
        for inf_blocks in [false, true] {
            envs.push(env(teleportation, inf_blocks, two_ais()));
            envs.push(env(teleportation, inf_blocks, ai_and_human()));
        }
    }
    envs
}

/// Steps `env` with `tuples` and a copy of it with `as_if` instead, and checks that
/// both end in the same state with the same rewards and infos, except that the
/// first echoes `tuples` in `attempted_action` and, where it took effect, `action`.
fn check_same_as(env: &Env, tuples: &[ActionTuple], as_if: &[ActionTuple]) -> StepOutcome {
    let mut got = env.clone();
    let mut want = env.clone();
    let outcome = got.step_tuples(tuples).unwrap().clone();
    let expected = want.step_tuples(as_if).unwrap().clone();
    assert_eq!(got.state(), want.state(), "{tuples:?} vs {as_if:?}");
    assert_eq!(outcome.rewards, expected.rewards, "{tuples:?}");
    assert_eq!(outcome.done, expected.done);
    for (p, (info, want_info)) in outcome.infos.iter().zip(&expected.infos).enumerate() {
        assert_eq!(info.attempted_action, tuples[p]);
        let took_effect = want_info.action.kind != ActionType::Noop;
        assert_eq!(info.action.kind, want_info.action.kind);
        let effective = if took_effect {
            tuples[p]
        } else {
            ActionTuple::NOOP
        };
        assert_eq!(info.action_tuple(), effective);
        let echoed = StepInfo {
            attempted_action: tuples[p],
            action: info.action,
            ..*want_info
        };
        assert_eq!(*info, echoed, "player {p}: {tuples:?}");
    }
    outcome
}

#[test]
fn unknown_types_are_no_ops_that_echo_the_tuple() {
    for env in all_envs() {
        let target = loc(&env, 2, 2, 2);
        for type_id in [10, 11, 99, 1 << 40, i64::MAX, -1, -9, i64::MIN] {
            for block in [0, 3, 10, -1, 300] {
                let unknown = ActionTuple::new(type_id, target, block);
                let outcome =
                    check_same_as(&env, &[unknown, ActionTuple::NOOP], &[ActionTuple::NOOP; 2]);
                let info = &outcome.infos[0];
                assert_eq!(outcome.rewards[0], NOOP_REWARD);
                assert_eq!(info.own_reward, NOOP_REWARD);
                assert_eq!(info.goal_dependent_reward, 0.0);
                assert_eq!(info.action, Action::NOOP);
                assert_eq!(info.action_tuple(), ActionTuple::NOOP);
                assert!(!info.action_correct);
            }
        }
        // The other player's unknown type changes nothing for anyone either.
        let unknown = ActionTuple::new(42, 0, 0);
        check_same_as(&env, &[ActionTuple::NOOP, unknown], &[ActionTuple::NOOP; 2]);
        check_same_as(&env, &[unknown, unknown], &[ActionTuple::NOOP; 2]);
    }
}

#[test]
fn a_valid_action_works_after_an_unknown_type() {
    let mut env = env(false, true, two_ais());
    let before = env.state().clone();
    env.step_tuples(&[ActionTuple::new(10, 0, 0), ActionTuple::new(-3, 7, 300)])
        .unwrap();
    assert_eq!(env.state().blocks, before.blocks);
    assert_eq!(env.state().player_positions, before.player_positions);
    assert_eq!(env.state().last_interacted, before.last_interacted);
    assert_eq!(env.state().timestep, before.timestep + 1);
    let place = ActionTuple::new(1, loc(&env, 2, 2, 2), 3);
    let outcome = env
        .step_tuples(&[place, ActionTuple::new(3, 0, 0)])
        .unwrap()
        .clone();
    assert_eq!(
        env.state().blocks.get(Cell::new(2, 2, 2)),
        BlockId::COBBLESTONE
    );
    assert_eq!(
        env.state().last_interacted[loc(&env, 2, 2, 2) as usize],
        0,
        "the place is recorded as player 0's"
    );
    assert_eq!(outcome.infos[0].action_tuple(), place);
    assert!(outcome.infos[0].action_correct);
    assert_eq!(outcome.rewards[0], 1.0 + ACTION_REWARD);
    assert_eq!(
        env.state().player_positions[1],
        PlayerPos::new(2.5, 2.0, 0.5)
    );
    assert_eq!(outcome.rewards[1], ACTION_REWARD);
}

#[test]
fn unknown_types_are_not_gives_in_the_processing_order() {
    // Player 1's GIVE goes first whatever player 0's unknown type is, so the
    // outcome is that of NOOP then GIVE.
    let mut env = env(false, false, two_ais());
    let mut state = env.state().clone();
    state.inventories[1].try_give(BlockId::STONE, 3);
    env.set_state(state);
    let give = ActionTuple::new(9, loc(&env, 0, 2, 0), 7);
    let outcome = check_same_as(
        &env,
        &[ActionTuple::new(9 + 1, 0, 0), give],
        &[ActionTuple::NOOP, give],
    );
    assert_eq!(outcome.infos[1].action_tuple(), give);
}

#[test]
fn unused_fields_are_ignored_and_echoed() {
    for env in all_envs() {
        let dirt = loc(&env, 2, 1, 2);
        for block in [10, -1, 300, i64::MIN] {
            // A break ignores the block id, and the effective action echoes it too.
            let odd = ActionTuple::new(2, dirt, block);
            let outcome = check_same_as(
                &env,
                &[odd, ActionTuple::NOOP],
                &[ActionTuple::new(2, dirt, 0), ActionTuple::NOOP],
            );
            let info = &outcome.infos[0];
            assert_eq!(info.action.kind, ActionType::BreakBlock, "{odd}");
            assert_eq!(info.action.block, BlockId::AIR);
            assert_eq!(info.action_tuple(), odd);
            // Moves and NOOP ignore location and block.
            let up = ActionTuple::new(5, 17, block);
            let outcome = check_same_as(
                &env,
                &[up, ActionTuple::NOOP],
                &[ActionTuple::new(5, 0, 0), ActionTuple::NOOP],
            );
            if !env.config().abilities.teleportation {
                assert_eq!(outcome.infos[0].action_tuple(), up);
            }
            let noop = ActionTuple::new(0, 17, block);
            let outcome = check_same_as(&env, &[noop, ActionTuple::NOOP], &[ActionTuple::NOOP; 2]);
            assert_eq!(outcome.infos[0].action_tuple(), ActionTuple::NOOP);
        }
    }
}

#[test]
fn locations_out_of_range_are_errors_for_every_type() {
    let mut env = env(false, false, json!([{}, {"timestep_skip": 2}]));
    let n = env.size().num_cells() as i64;
    let before = env.state().clone();
    for type_id in [0, 1, 2, 3, 9, 10, -1] {
        for location in [n, n + 1, -1, i64::MIN, i64::MAX] {
            let bad = ActionTuple::new(type_id, location, 2);
            let err = env.step_tuples(&[ActionTuple::NOOP, bad]).unwrap_err();
            assert_eq!(
                err,
                StepError::LocationOutOfRange {
                    player: PlayerId(1),
                    action: bad,
                    size: env.size(),
                }
            );
            assert_eq!(err.player(), Some(PlayerId(1)));
            let message = err.to_string();
            assert!(
                message.contains(&format!("location index {location} is outside"))
                    && message.contains("player 1")
                    && message.contains(&bad.to_string()),
                "{message}"
            );
            assert_eq!(*env.state(), before, "a refused step changes nothing");
        }
    }
    // At timestep 1 player 1 does not act: the reference replaces the tuple by
    // NOOP before decoding it, so its location is never looked at.
    env.step_tuples(&[ActionTuple::NOOP; 2]).unwrap();
    let bad = ActionTuple::new(1, n, 2);
    let outcome = env.step_tuples(&[ActionTuple::NOOP, bad]).unwrap();
    assert_eq!(outcome.infos[1].attempted_action, ActionTuple::NOOP);
    assert_eq!(outcome.rewards[1], NOOP_REWARD);
}

#[test]
fn block_ids_out_of_range_are_no_ops_where_the_reference_checks_them() {
    let odd_blocks = [10, 11, 255, 256, 258, -1, -10, -11, 1 << 33];
    for env in all_envs() {
        let abilities = env.config().abilities;
        let human = env.config().players[1].is_human;
        for block in odd_blocks {
            // Player 0 (an AI) places: the block is not placeable, or the inventory
            // holds none of it. A human's place is checked too, except in walking
            // mode with infinite blocks (see the next test).
            let place = ActionTuple::new(1, loc(&env, 2, 2, 2), block);
            let outcome = check_same_as(&env, &[place, ActionTuple::NOOP], &[ActionTuple::NOOP; 2]);
            assert_eq!(outcome.infos[0].action, Action::NOOP);
            let human_place_is_written = !abilities.teleportation && abilities.inf_blocks;
            if human && !human_place_is_written {
                check_same_as(&env, &[ActionTuple::NOOP, place], &[ActionTuple::NOOP; 2]);
            }
            // GIVEs to a cell where nobody stands, or by a human, who has none of
            // the block; and any GIVE with infinite blocks, where GIVE is disabled.
            let nobody = ActionTuple::new(9, loc(&env, 3, 2, 3), block);
            check_same_as(&env, &[nobody, ActionTuple::NOOP], &[ActionTuple::NOOP; 2]);
            let to_player_0 = ActionTuple::new(9, loc(&env, 0, 2, 0), block);
            if human || abilities.inf_blocks {
                check_same_as(
                    &env,
                    &[ActionTuple::NOOP, to_player_0],
                    &[ActionTuple::NOOP; 2],
                );
            }
        }
    }
}

#[test]
fn block_ids_out_of_range_are_errors_where_the_reference_would_corrupt_its_state() {
    // A human's place in walking mode with infinite blocks: the reference writes
    // the id into its grid unchecked.
    let mut env = env(false, true, ai_and_human());
    let before = env.state().clone();
    for block in [10, 258, -1] {
        let place = ActionTuple::new(1, loc(&env, 2, 2, 2), block);
        let err = env.step_tuples(&[ActionTuple::NOOP, place]).unwrap_err();
        assert_eq!(
            err,
            StepError::BlockOutOfRange {
                player: PlayerId(1),
                action: place,
                use_: UnsafeBlockUse::HumanPlace,
            }
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("block id {block} is not one of 0..=9")),
            "{message}"
        );
        assert_eq!(*env.state(), before);
    }
    // An AI's give to a player in reach: the reference indexes the giver's block
    // counts with the id.
    for players in [two_ais(), ai_and_human()] {
        let mut env = self::env(false, false, players);
        let before = env.state().clone();
        let give = ActionTuple::new(9, loc(&env, 1, 2, 0), -1);
        let err = env.step_tuples(&[give, ActionTuple::NOOP]).unwrap_err();
        assert_eq!(
            err,
            StepError::BlockOutOfRange {
                player: PlayerId(0),
                action: give,
                use_: UnsafeBlockUse::Give,
            }
        );
        assert_eq!(*env.state(), before);
        // Out of reach, the reference returns before looking at the id.
        let far = ActionTuple::new(9, loc(&env, 1, 2, 0), 10);
        let mut state = env.state().clone();
        state.player_positions[1] = PlayerPos::new(3.5, 2.0, 3.5);
        env.set_state(state);
        let far = ActionTuple {
            location: loc(&env, 3, 2, 3),
            ..far
        };
        check_same_as(&env, &[far, ActionTuple::NOOP], &[ActionTuple::NOOP; 2]);
    }
}

#[test]
fn typed_actions_and_their_tuples_step_alike() {
    for env in all_envs() {
        let actions = [
            Action::new(
                ActionType::BreakBlock,
                CellIndex(loc(&env, 1, 1, 1) as u32),
                BlockId::AIR,
            ),
            Action::new(ActionType::MovePosZ, CellIndex(0), BlockId::AIR),
        ];
        let mut typed = env.clone();
        let mut tuples = env.clone();
        let a = typed.step(&actions).unwrap().clone();
        let b = tuples
            .step_tuples(&actions.map(ActionTuple::from))
            .unwrap()
            .clone();
        assert_eq!(a, b);
        assert_eq!(typed.state(), tuples.state());
    }
}
