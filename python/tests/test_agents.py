"""The package's agents: alone, and seated in the vectorised env."""

import numpy as np
import pytest

import mbag_rs
from mbag_rs import LowestBlockAgent, MbagEnv, MbagVecEnv, RandomAgent

TELEPORT = {
    "world_size": (6, 6, 6),
    "num_players": 1,
    "players": [{}],
    "horizon": 300,
    "goal_generator": "basic",
    "abilities": {"teleportation": True, "flying": True, "inf_blocks": True},
}


def test_lowest_block_agent_builds_the_goal_alone():
    env = MbagEnv(TELEPORT)
    agent = LowestBlockAgent({}, env.config)
    agent.reset(seed=0)
    (obs,), _ = env.reset()
    for _ in range(300):
        (obs,), _, (done,), (info,) = env.step([agent.get_action(obs)])
        if done:
            break
    assert info["goal_percentage"] == 1.0


def test_agents_refuse_what_the_reference_refuses_and_unknown_names():
    walking = dict(TELEPORT, abilities={"teleportation": False, "flying": True, "inf_blocks": True})
    with pytest.raises(ValueError, match="LowestBlockAgent cannot be used here"):
        LowestBlockAgent({}, walking)
    with pytest.raises(ValueError, match="unknown agent"):
        MbagVecEnv(TELEPORT, 2, agents=["CleverAgent"])
    with pytest.raises(ValueError, match="agents names 2 seats"):
        MbagVecEnv(TELEPORT, 2, agents=[None, None])


def test_random_agent_only_takes_valid_actions():
    config = dict(TELEPORT, num_players=2, players=[{}, {}], abilities={"teleportation": False, "flying": True, "inf_blocks": False})
    env = MbagEnv(config)
    agent = RandomAgent({}, env.config)
    agent.reset(seed=3)
    obs, _ = env.reset()
    for _ in range(50):
        o = obs[0]
        mask = mbag_rs.MbagActionDistribution.get_mask_flat(env.config, (o[0][None], o[1][None], o[2][None]))[0]
        action = agent.get_action(o)
        assert mask[mbag_rs.MbagActionDistribution.get_flat_action(env.config, action)], action
        obs, _, _, _ = env.step([action, (0, 0, 0)])


def test_seated_agents_play_inside_the_vectorised_env():
    vec = MbagVecEnv(dict(TELEPORT, horizon=200), 4, seed=1, agents=["LowestBlockAgent"])
    ignored = np.zeros((4, 1, 3), dtype=np.int64)
    best = np.zeros(4)
    for _ in range(200):
        out = vec.step(ignored)
        assert out["actions"].shape == (4, 1, 3)
        best = np.maximum(best, out["goal_percentage"][:, 0])
        if out["dones"].any():
            break
    # Every env's agent made progress of its own (it, not the zero actions, played).
    assert (best > 0.5).all(), best


def test_seated_agents_play_the_same_on_any_number_of_threads():
    # The agents act on the env's threads; each env's agents draw from their own
    # seeds, so the thread count changes nothing.
    def rollout(threads):
        vec = MbagVecEnv(
            dict(TELEPORT, num_players=2, players=[{}, {}], horizon=30),
            5,
            seed=3,
            num_threads=threads,
            agents=["LowestBlockAgent", "RandomAgent"],
        )
        ignored = np.zeros((5, 2, 3), dtype=np.int64)
        return [vec.step(ignored)["actions"].copy() for _ in range(40)]

    one, three = rollout(1), rollout(3)
    for t, (a, b) in enumerate(zip(one, three)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
