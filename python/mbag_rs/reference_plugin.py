"""A pytest plugin that runs the reference's own tests against mbag_rs.

``pytest -p mbag_rs.reference_plugin tests/`` in a checkout of the reference
(``cassidylaidlaw/minecraft-building-assistance-game``, installed in the same
Python): before the tests are collected, the reference's ``MbagEnv`` is replaced by
``mbag_rs.MbagEnv`` wherever the reference imports it, so every test that builds an
environment, directly or through ``MbagEvaluator`` and the agents, runs mbag's
simulator. The package's actions and block volumes become the reference's classes,
so that the tests' ``isinstance`` checks and comparisons see the objects they expect.
"""

import importlib
import sys

import mbag_rs.env as ours

_built = {"envs": 0, "steps": 0}


class _CountingEnv(ours.MbagEnv):
    """mbag_rs.MbagEnv, counting what it does so the run can show it was used."""

    def __init__(self, config):
        super().__init__(config)
        _built["envs"] += 1

    def step(self, action_tuples):
        _built["steps"] += 1
        return super().step(action_tuples)


# Modules of the reference that bind the name MbagEnv at import.
_USERS = [
    "mbag.environment.mbag_env",
    "mbag.environment",
    "mbag.evaluation.evaluator",
    "mbag.agents.mbag_agent",
]


def substitute() -> None:
    """Points the reference's MbagEnv names at mbag_rs.MbagEnv."""
    actions = importlib.import_module("mbag.environment.actions")
    blocks = importlib.import_module("mbag.environment.blocks")
    ours.MbagAction = actions.MbagAction
    ours.MinecraftBlocks = blocks.MinecraftBlocks
    for name in _USERS:
        module = importlib.import_module(name)
        module.MbagEnv = _CountingEnv
    sys.modules["mbag.environment.mbag_env"].MbagEnv = _CountingEnv


def pytest_runtest_setup(item) -> None:
    # The reference's tests draw their actions from Python's and numpy's global
    # generators without seeding them. test_line_of_sight_masking asserts that the
    # first player's LOS-masked action never becomes a NOOP, which rare draws break
    # for the reference itself (a give in the same step as the other player's move;
    # the reference and mbag_rs, stepped in lockstep from the same states, agree on
    # every such step). Seeding per test makes the run the same every time.
    import random
    import zlib

    import numpy as np

    seed = zlib.crc32(item.nodeid.encode())
    random.seed(seed)
    np.random.seed(seed)


def pytest_configure(config) -> None:
    substitute()
    config.addinivalue_line("markers", "mbag_rs: the run substitutes mbag_rs.MbagEnv")


def pytest_report_header(config) -> str:
    return "mbag_rs: the reference's MbagEnv is replaced by mbag_rs.MbagEnv"


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(
        f"mbag_rs: {_built['envs']} environments built and {_built['steps']} steps taken "
        "by mbag_rs.MbagEnv in place of the reference's"
    )
