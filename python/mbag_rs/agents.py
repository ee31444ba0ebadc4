"""The reference's distribution agents, run in Rust: ``NoopAgent``, ``MovementAgent``,
``RandomAgent`` and ``LowestBlockAgent``, with the reference's agent API
(``Agent(agent_config, env_config)``, ``reset(seed=...)``, ``get_action(obs)``).

Their distributions are the reference's (checked against its recorded ones by mbag's
golden tests); their random streams are their own. ``MbagVecEnv(agents=[...])``
seats them inside the vectorised env instead.
"""

import random
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _native
from .env import MbagConfigDict, MbagEnv, _native_config


class MbagAgent:
    """An agent for one player; ``get_action`` answers an observation with an action
    tuple."""

    NAME = ""

    def __init__(self, agent_config: Dict[str, Any], env_config: MbagConfigDict):
        self.agent_config = agent_config
        self.env_config = MbagEnv.get_config(env_config)
        config_json, _ = _native_config(self.env_config)
        self._agent = _native.NativeAgent(self.NAME, config_json)

    def reset(self, seed: Optional[int] = None) -> None:
        """Starts an episode; without a seed, one is drawn from Python's ``random``."""
        self._agent.reset(int(seed) if seed is not None else random.getrandbits(63))

    def get_action(self, obs) -> Tuple[int, int, int]:
        world, inventory, timestep = obs
        return self._agent.act(
            np.ascontiguousarray(world, dtype=np.uint8),
            np.ascontiguousarray(inventory, dtype=np.int32),
            int(timestep),
        )


class NoopAgent(MbagAgent):
    """Always NOOP."""

    NAME = "NoopAgent"


class MovementAgent(MbagAgent):
    """One of the six moves, uniformly."""

    NAME = "MovementAgent"


class RandomAgent(MbagAgent):
    """Uniform over action types, then over each type's valid actions."""

    NAME = "RandomAgent"


class LowestBlockAgent(MbagAgent):
    """Breaks, then places, the lowest mismatched blocks first (teleportation and
    infinite blocks only, as in the reference)."""

    NAME = "LowestBlockAgent"


ALL_AGENTS = {cls.NAME: cls for cls in (NoopAgent, MovementAgent, RandomAgent, LowestBlockAgent)}

