"""MbagVecEnv: many environments in one call."""

import numpy as np
import pytest

from mbag_rs import MbagActionDistribution, MbagEnv, MbagVecEnv

CONFIG = {
    "num_players": 2,
    "world_size": (6, 6, 6),
    "horizon": 5,
    "goal_generator": "random",
    "players": [{}, {}],
    "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
    "random_start_locations": True,
}


def test_shapes_masks_and_automatic_restarts():
    vec = MbagVecEnv(CONFIG, 3, num_threads=2, seed=5, masks="los")
    out = vec.observe()
    assert out["world_obs"].shape == (3, 2, 6, 6, 6, 6) and out["world_obs"].dtype == np.uint8
    assert out["inventory_obs"].shape == (3, 2, 2, 10)
    assert out["masks"].shape == (3, 2, vec.num_flat_actions)
    # Each mask is the single env's mask of the same observation.
    config = MbagEnv.get_config(CONFIG)
    for e in range(3):
        for p in range(2):
            batch = (out["world_obs"][e, p][None], out["inventory_obs"][e, p][None], out["timestep"][e, p][None])
            expected = MbagActionDistribution.get_mask_flat(config, batch, line_of_sight_masking=True)[0]
            np.testing.assert_array_equal(out["masks"][e, p], expected)
    noops = np.zeros((3, 2, 3), dtype=np.int64)
    dones = [vec.step(noops)["dones"].copy() for _ in range(5)]
    assert [d.all() for d in dones] == [False, False, False, False, True]
    after = vec.step(noops)
    assert (after["timestep"] == 1).all()  # the restarted episodes took one step


def test_same_seed_same_rollout_and_bad_actions_raise():
    a, b = MbagVecEnv(CONFIG, 2, seed=9), MbagVecEnv(CONFIG, 2, seed=9)
    np.testing.assert_array_equal(a.observe()["world_obs"], b.observe()["world_obs"])
    with pytest.raises(ValueError, match="actions has shape"):
        a.step(np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="environment 1, player 0"):
        bad = np.zeros((2, 2, 3), dtype=np.int64)
        bad[1, 0] = (2, 10**6, 0)
        a.step(bad)
    with pytest.raises(ValueError, match="num_envs"):
        MbagVecEnv(CONFIG, 0)
    with pytest.raises(ValueError, match="masks must be"):
        MbagVecEnv(CONFIG, 1, masks="sometimes")
