"""MbagEnv's API: configs, return values, seeding, state and errors."""

import copy
import json
import random
import sys

import numpy as np
import pytest

import mbag_rs
from mbag_rs import MbagAction, MbagActionDistribution, MbagEnv

INFO_KEYS = {
    "goal_similarity",
    "goal_percentage",
    "goal_dependent_reward",
    "goal_independent_reward",
    "own_reward",
    "own_reward_prop",
    "attempted_action",
    "action",
    "action_correct",
    "malmo_observations",
    "human_action",
    "timestamp",
}


def walking_config(**over):
    config = {
        "num_players": 2,
        "world_size": (6, 6, 6),
        "horizon": 40,
        "goal_generator": "basic",
        "players": [{}, {}],
        "random_start_locations": True,
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": False},
    }
    config.update(over)
    return config


def test_get_config_fills_defaults_and_leaves_the_argument_alone():
    partial = {"world_size": [7, 6, 5], "rewards": {"place_wrong": -1}}
    before = copy.deepcopy(partial)
    full = MbagEnv.get_config(partial)
    assert partial == before
    assert full["world_size"] == (7, 6, 5)
    assert full["horizon"] == 50 and full["num_players"] == 1
    # Global rewards merge key by key and flow into every player's rewards.
    assert full["rewards"]["place_wrong"] == -1 and full["rewards"]["noop"] == 0
    assert full["players"][0]["rewards"]["place_wrong"] == -1
    assert full["players"][0]["goal_visible"] is True
    env = MbagEnv(mbag_rs.DEFAULT_CONFIG)
    assert env.config["world_size"] == (5, 5, 5)


def test_bad_configs_raise_with_mbags_message():
    with pytest.raises(ValueError, match="num_players"):
        MbagEnv({"num_players": 2, "players": [{}]})
    with pytest.raises(ValueError, match="config field `horizn`"):
        MbagEnv({"horizn": 10})
    with pytest.raises(NotImplementedError, match="use_malmo"):
        MbagEnv({"malmo": {"use_malmo": True}})
    with pytest.raises(TypeError, match="world_size"):
        MbagEnv({"world_size": (5, object(), 5)})


def test_reset_and_step_return_the_references_types():
    env = MbagEnv(walking_config())
    obs, infos = env.reset()
    assert len(obs) == len(infos) == 2
    world, inventory, timestep = obs[0]
    assert world.shape == (6, 6, 6, 6) and world.dtype == np.uint8
    assert inventory.shape == (2, 10) and inventory.dtype == np.int32
    assert timestep.shape == () and timestep.dtype == np.int32 and int(timestep) == 0
    assert set(infos[0]) == INFO_KEYS
    assert infos[0]["goal_percentage"] == 0
    noop = (MbagAction.NOOP, 0, 0)
    obs, rewards, dones, infos = env.step([noop, noop])
    assert [type(r) for r in rewards] == [float, float]
    assert dones == [False, False]
    assert set(infos[1]) == INFO_KEYS
    assert infos[0]["action"] == MbagAction(noop, (6, 6, 6))
    assert int(obs[0][2]) == 1 and env.timestep == 1
    # Observations own their memory: changing one does not reach the env.
    obs[0][0][:] = 0
    assert env.current_blocks.blocks[0, 0, 0] == mbag_rs.MinecraftBlocks.BEDROCK


def test_episode_ends_at_the_horizon():
    env = MbagEnv(walking_config(horizon=3))
    env.reset()
    noop = (0, 0, 0)
    dones = [env.step([noop, noop])[2][0] for _ in range(3)]
    assert dones == [False, False, True]


def test_seeding_python_random_reproduces_start_positions_like_the_reference():
    def starts(seed):
        random.seed(seed)
        np.random.seed(seed)
        env = MbagEnv(walking_config())
        env.reset()
        return env.player_locations

    assert starts(3) == starts(3)
    assert len({tuple(map(tuple, starts(s))) for s in range(8)}) > 1
    # The draws come from Python's `random`: a number drawn before the reset moves
    # the players (for most seeds).
    def starts_after_one_draw(seed):
        random.seed(seed)
        np.random.seed(seed)
        env = MbagEnv(walking_config())
        random.random()
        env.reset()
        return env.player_locations

    assert any(starts_after_one_draw(s) != starts(s) for s in range(6))


def test_state_round_trips_and_steps_deterministically():
    config = walking_config()
    env_a, env_b = MbagEnv(config), MbagEnv(config)
    (obs, _), _ = env_a.reset(), env_b.reset()
    rng = random.Random(0)
    mapping = MbagActionDistribution.get_action_mapping(env_a.config)
    for _ in range(30):
        env_b.set_state(env_a.get_state())
        actions = []
        for p in range(2):
            o = env_a._get_player_obs(p)
            mask = MbagActionDistribution.get_mask_flat(env_a.config, (o[0][None], o[1][None], o[2][None]))[0]
            actions.append(tuple(int(v) for v in mapping[rng.choice(list(np.flatnonzero(mask)))]))
        _, rewards_a, _, _ = env_a.step(actions)
        _, rewards_b, _, _ = env_b.step(actions)
        assert rewards_a == rewards_b
        state_a, state_b = env_a.get_state(), env_b.get_state()
        assert state_a["current_blocks"] == state_b["current_blocks"]
        assert state_a["player_locations"] == state_b["player_locations"]
        for inv_a, inv_b in zip(state_a["player_inventories"], state_b["player_inventories"]):
            np.testing.assert_array_equal(inv_a, inv_b)


def test_invalid_actions_raise_value_errors_naming_the_problem():
    env = MbagEnv(walking_config())
    env.reset()
    with pytest.raises(ValueError, match="one action per player"):
        env.step([(0, 0, 0)])
    with pytest.raises(ValueError, match="location index 100000"):
        env.step([(MbagAction.BREAK_BLOCK, 100000, 0), (0, 0, 0)])
    with pytest.raises(ValueError, match="inventories"):
        state = env.get_state()
        state["player_inventories"] = state["player_inventories"][:1]
        env.set_state(state)


def test_teleport_hash_follows_the_running_interpreter():
    # The reference seeds teleport choices with this interpreter's hash(bytes).
    expected = "sip13" if sys.version_info >= (3, 11) else "sip24"
    assert MbagEnv(walking_config())._env.python_hash == expected
    config_json = json.dumps(walking_config())
    assert mbag_rs._native.NativeEnv(config_json).python_hash == expected
    for name in ("sip13", "sip24"):
        assert mbag_rs._native.NativeEnv(config_json, python_hash=name).python_hash == name
    with pytest.raises(ValueError, match='"sip13" or "sip24"'):
        mbag_rs._native.NativeEnv(config_json, python_hash="sip")
    native = mbag_rs._native.NativeEnv(config_json, python_hash="sip24")
    native.python_hash = "sip13"
    assert native.python_hash == "sip13"
    with pytest.raises(ValueError, match='"sip13" or "sip24"'):
        native.python_hash = "Sip13"
    with pytest.raises(ValueError, match='"sip13" or "sip24"'):
        mbag_rs._native.NativeVecEnv(config_json, 1, 1, 0, python_hash="fnv")


def test_python_goal_generator_classes_supply_goals():
    class Pillar:
        def __init__(self, config):
            self.block = config["block"]

        def generate_goal(self, size):
            goal = mbag_rs.MinecraftBlocks(size)
            goal.blocks[size[0] // 2, :, size[2] // 2] = self.block
            return goal

    env = MbagEnv(
        {"world_size": (5, 6, 5), "goal_generator": Pillar, "goal_generator_config": {"block": 7}}
    )
    env.reset()
    assert env.config["goal_generator"] is Pillar
    assert (env.goal_blocks.blocks == 7).sum() == 4  # the goal's four inner rows


def test_set_goal_takes_structures_in_both_envs_and_names_a_set_that_cannot_fit():
    small = mbag_rs.MinecraftBlocks((2, 2, 2))
    small.blocks[:] = 5
    big = mbag_rs.MinecraftBlocks((9, 9, 9))
    config = {
        "world_size": (6, 5, 6),
        "goal_generator": "set_goal",
        "goal_generator_config": {"goals": [big, small]},
    }
    env = MbagEnv(config)
    assert env.config["goal_generator_config"]["goals"][1] is not small  # a copy, kept as given
    for _ in range(3):
        env.reset(force_regenerate_goal=True)
        # Only the small one fits the 4x3x4 goal area.
        assert (env.goal_blocks.blocks == 5).sum() == 8
    vec = mbag_rs.MbagVecEnv(config, 2)
    assert (vec.observe()["world_obs"][:, 0, 2] == 5).sum() == 16  # goal channel, both envs
    with pytest.raises(mbag_rs.GoalGenerationError, match="none of its 1 goals fits"):
        MbagEnv(dict(config, goal_generator_config={"goals": [big]})).reset()


def test_known_goal_generator_classes_map_to_the_simulators():
    class TransformedGoalGenerator:  # stands for the reference's class of this name
        pass

    env = MbagEnv(
        {
            "world_size": (6, 6, 6),
            "goal_generator": TransformedGoalGenerator,
            "goal_generator_config": {
                "goal_generator": "simple_overhang",
                "goal_generator_config": {},
                "transforms": [{"transform": "add_grass"}],
            },
        }
    )
    env.reset()
    assert env.goal_generator is None
    assert (env.goal_blocks.blocks[1:-1, 1:-1, 1:-1] != 0).any()
