"""The reference's golden episodes (../shared/reference/golden) replayed through
mbag_rs.MbagEnv: every reward, done, info, state, observation and mask must match."""

import base64
import gzip
import json
import math

import numpy as np
import pytest

from mbag_rs import MbagActionDistribution, MbagEnv, MinecraftBlocks

INFO_FLOATS = [
    "goal_similarity",
    "goal_percentage",
    "goal_dependent_reward",
    "goal_independent_reward",
    "own_reward",
    "own_reward_prop",
]


def array(text, shape, dtype=np.uint8):
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(shape)


def number(value):
    return float(value) if not isinstance(value, str) else float(value.replace("Infinity", "inf"))


def close(a, b):
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def state_dict(state, goal, size, num_players):
    return {
        "current_blocks": volume(state["blocks"], state["block_states"], size),
        "goal_blocks": goal,
        "player_locations": [tuple(p) for p in state["player_locations"]],
        "player_directions": [(0, 0)] * num_players,
        "player_inventories": [np.array(inv, dtype=np.int32) for inv in state["inventories"]],
        "last_interacted": array(state["last_interacted"], size, np.int8),
        "timestep": state["timestep"],
    }


def volume(blocks, states, size):
    v = MinecraftBlocks(size)
    v.blocks, v.block_states = array(blocks, size).copy(), array(states, size).copy()
    return v


def compare_obs(env_config, size, recorded_obs, recorded_masks, got_obs):
    for p, (rec, got) in enumerate(zip(recorded_obs, got_obs)):
        world = array(rec["world_obs"], (6,) + size)
        np.testing.assert_array_equal(got[0], world, err_msg=f"player {p} world_obs")
        np.testing.assert_array_equal(got[1], np.array(rec["inventory_obs"], dtype=np.int32))
        assert int(got[2]) == rec["timestep"]
        batch = (got[0][None], got[1][None], got[2][None])
        for key, los in (("no_los", False), ("los", True)):
            mask = MbagActionDistribution.get_mask_flat(env_config, batch, line_of_sight_masking=los)[0]
            assert list(np.flatnonzero(mask)) == recorded_masks[p][key], f"player {p} {key} mask"


def replay(path):
    with gzip.open(path, "rt") as f:
        lines = [json.loads(line) for line in f]
    header, steps = lines[0], [l for l in lines[1:] if l["kind"] == "step"]
    config = dict(header["env_config"])
    # The goal is given; the generator is never run.
    config["goal_generator"] = "basic"
    config["goal_generator_config"] = {}
    env = MbagEnv(config)
    # The goldens were recorded on CPython 3.11 (GENERATE.md), whose hash(bytes)
    # seeded their teleport destinations, whatever Python replays them.
    env._env.python_hash = "sip13"
    size = tuple(config["world_size"])
    num_players = config["num_players"]
    env.update_global_timestep(header["global_timestep"])
    goal = volume(header["goal"]["blocks"], header["goal"]["block_states"], size)
    obs, infos = env.reset_to_state(state_dict(header["initial_state"], goal, size, num_players))
    compare_obs(env.config, size, header["initial_obs"], header["initial_masks"], obs)
    for step in steps:
        actions = [tuple(a["tuple"]) for a in step["actions"]]
        obs, rewards, dones, infos = env.step(actions)
        where = f"{header['episode_id']} step {step['t']}"
        assert all(close(a, number(b)) for a, b in zip(rewards, step["rewards"])), where
        assert dones == step["dones"], where
        for got, rec in zip(infos, step["infos"]):
            for key in INFO_FLOATS:
                assert close(got[key], number(rec[key])), f"{where} {key}"
            assert got["attempted_action"].to_tuple() == tuple(rec["attempted_action"]), where
            assert got["action"].to_tuple() == tuple(rec["action"]), where
            assert got["action_correct"] == rec["action_correct"], where
        state = env.get_state()
        rec_state = step["state"]
        assert state["current_blocks"] == volume(rec_state["blocks"], rec_state["block_states"], size), where
        assert state["player_locations"] == [tuple(p) for p in rec_state["player_locations"]], where
        assert state["timestep"] == rec_state["timestep"], where
        if "obs" in step:
            compare_obs(env.config, size, step["obs"], step["masks"], obs)
    return len(steps)


def test_every_golden_episode_replays_exactly(shared):
    episodes = sorted((shared / "reference" / "golden" / "episodes").glob("*.jsonl.gz"))
    assert episodes, "no golden episodes found"
    total = sum(replay(path) for path in episodes)
    assert total == 8162
