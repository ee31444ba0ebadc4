"""The reference environment as the oracle: the same seeded episodes through the
reference's MbagEnv and mbag_rs.MbagEnv, every return value compared.

Skipped (with the reason shown by ``pytest -rs``) where the reference is not
installed; ``scripts/setup`` installs it into ``.deps/python`` from the copy of its
public source in ``../shared/reference/bench``.
"""

import os
import random

import numpy as np
import pytest

ref_env = pytest.importorskip(
    "mbag.environment.mbag_env",
    reason="SKIPPED: the reference package `mbag` is not installed in this Python",
)
ref_dist = pytest.importorskip("mbag.agents.action_distributions")

import mbag_rs  # noqa: E402
from mbag.environment.blocks import MinecraftBlocks  # noqa: E402


def structure(size, block):
    """A box of the reference's MinecraftBlocks: ``block`` with an air corner."""
    goal = MinecraftBlocks(size)
    goal.blocks[:] = block
    goal.blocks[0, -1, 0] = MinecraftBlocks.AIR
    return goal


SCENARIOS = {
    "walking_palette_basic": {
        "num_players": 2,
        "world_size": (6, 6, 6),
        "goal_generator": "basic",
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": False},
    },
    "walking_inf_overhang": {
        "num_players": 2,
        "world_size": (7, 6, 6),
        "goal_generator": "simple_overhang",
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
        "rewards": {"place_wrong": -1, "noop": -0.2},
    },
    "walking_three_players_tutorial": {
        "num_players": 3,
        "world_size": (8, 7, 8),
        "goal_generator": "tutorial",
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": False},
        "players": [{}, {"is_human": True, "timestep_skip": 2}, {"goal_visible": False}],
    },
    # The random generator draws from numpy in Python, as the reference's does.
    "walking_random_goals": {
        "num_players": 2,
        "world_size": (6, 5, 7),
        "goal_generator": "random",
        "goal_generator_config": {"filled_prop": 0.4},
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
    },
    # set_goal draws with random.choice in Python, retrying a goal too large.
    "walking_set_goals": {
        "num_players": 2,
        "world_size": (6, 5, 7),
        "goal_generator": "set_goal",
        "goal_generator_config": {
            "goals": [structure((2, 2, 2), 3), structure((9, 9, 9), 4), structure((4, 3, 2), 5)]
        },
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
    },
    "randomized_first_length": {
        "num_players": 1,
        "world_size": (5, 6, 5),
        "goal_generator": "basic",
        "randomize_first_episode_length": True,
        "horizon": 80,
        "abilities": {"teleportation": False, "flying": True, "inf_blocks": True},
    },
}

# Teleport destinations come from hash((bytes, int)), whose bytes hash changed in
# CPython 3.11 (SipHash-2-4 before, 1-3 since); mbag_rs follows the interpreter it
# runs in, so these are compared on every version.
TELEPORT_SCENARIOS = {
    "teleport_palette_basic": {
        "num_players": 2,
        "world_size": (6, 6, 6),
        "goal_generator": "basic",
        "abilities": {"teleportation": True, "flying": True, "inf_blocks": False},
    },
}
SCENARIOS.update(TELEPORT_SCENARIOS)


def full(name):
    config = dict(SCENARIOS[name])
    config.setdefault("players", [{}] * config["num_players"])
    config.setdefault("horizon", 60)
    config["random_start_locations"] = True
    return config


def same_obs(a, b, where):
    for i, (x, y) in enumerate(zip(a, b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"{where} obs[{i}]")
        assert np.asarray(x).dtype == np.asarray(y).dtype, f"{where} obs[{i}] dtype"


def same_info(a, b, where):
    assert set(a) == set(b), where
    for key in a:
        if key == "timestamp":
            continue
        x, y = a[key], b[key]
        if hasattr(x, "to_tuple"):
            x, y = x.to_tuple(), y.to_tuple()
        assert x == y or (x != x and y != y), f"{where} info[{key!r}]: {x!r} != {y!r}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_seeded_episode_matches_the_reference(name, seed):
    # The reference salts hash(bytes) per process unless PYTHONHASHSEED=0, so its
    # teleport destinations are reproducible (and comparable) only then.
    if name in TELEPORT_SCENARIOS and os.environ.get("PYTHONHASHSEED") != "0":
        pytest.skip(
            "SKIPPED: teleport destinations of the reference depend on hash(bytes), "
            "deterministic only with PYTHONHASHSEED=0 (scripts/test sets it); "
            f"PYTHONHASHSEED is {os.environ.get('PYTHONHASHSEED')!r}"
        )
    config = full(name)
    random.seed(seed)
    np.random.seed(seed)
    reference = ref_env.MbagEnv(config)
    ref_obs, ref_infos = reference.reset()
    random.seed(seed)
    np.random.seed(seed)
    ours = mbag_rs.MbagEnv(config)
    obs, infos = ours.reset()
    assert ours.config == reference.config
    for p in range(config["num_players"]):
        same_obs(ref_obs[p], obs[p], f"reset player {p}")
        same_info(ref_infos[p], infos[p], f"reset player {p}")
    mapping = ref_dist.MbagActionDistribution.get_action_mapping(reference.config)
    chooser = random.Random(1000 + seed)
    for t in range(config["horizon"]):
        actions = []
        for p in range(config["num_players"]):
            batch = tuple(np.asarray(x)[None] for x in ref_obs[p])
            for los in (False, True):
                ref_mask = ref_dist.MbagActionDistribution.get_mask_flat(
                    reference.config, batch, line_of_sight_masking=los
                )
                our_mask = mbag_rs.MbagActionDistribution.get_mask_flat(
                    ours.config, batch, line_of_sight_masking=los
                )
                np.testing.assert_array_equal(ref_mask, our_mask, err_msg=f"t={t} p={p} los={los}")
            valid = np.flatnonzero(ref_mask[0])
            # Now and then an invalid action, which both must refuse alike.
            flat = chooser.choice(valid) if chooser.random() < 0.9 else chooser.randrange(len(mapping))
            actions.append(tuple(int(v) for v in mapping[flat]))
        ref_obs, ref_rewards, ref_dones, ref_infos = reference.step(actions)
        obs, rewards, dones, infos = ours.step(actions)
        assert rewards == ref_rewards, f"t={t}"
        assert dones == ref_dones, f"t={t}"
        for p in range(config["num_players"]):
            same_obs(ref_obs[p], obs[p], f"t={t} player {p}")
            same_info(ref_infos[p], infos[p], f"t={t} player {p}")
        assert ours.player_locations == list(reference.player_locations), f"t={t}"
        if ref_dones[0]:
            break

