"""Many environments stepped in one call (threads in Rust, the GIL released)."""

import os
from typing import Any, Dict, Optional, Sequence

import numpy as np

from . import _native
from .env import MbagConfigDict, MbagEnv, _native_config, _python_hash


class MbagVecEnv:
    """``num_envs`` copies of one config; episodes restart by themselves when they end.

    ``step`` takes ``(num_envs, num_players, 3)`` action tuples and returns a dict of
    numpy arrays: ``world_obs`` ``(E, P, 6, W, H, D)``, ``inventory_obs``
    ``(E, P, P, 10)``, ``timestep`` ``(E, P)``, ``rewards`` and ``goal_percentage``
    ``(E, P)``, ``dones`` ``(E,)``, ``episode_returns`` ``(E, P)`` (of the episodes
    that just ended) and, with ``masks="no_los"`` or ``"los"``, ``masks``
    ``(E, P, N)``. Environment ``i`` draws from seed ``seed + i``.

    ``agents`` seats agents inside the env, one entry per player: the name of one of
    the package's agents (``"LowestBlockAgent"``, ``"RandomAgent"``, ...) plays that
    player in every environment, ``None`` leaves it to the caller. The seated players'
    rows of ``actions`` are ignored, and ``step`` adds ``actions`` ``(E, P, 3)``: what
    every player did.

    The arrays are allocated once and refilled by every ``step`` and ``observe`` (as
    in other vectorised envs): copy what must outlive the next call. ``step`` writes
    them with the GIL released, each env's rows as soon as that env has stepped, so
    another thread must not read them while a step runs.
    """

    def __init__(
        self,
        config: MbagConfigDict,
        num_envs: int,
        *,
        num_threads: Optional[int] = None,
        seed: int = 0,
        masks: str = "none",
        agents: Optional[Sequence[Optional[str]]] = None,
    ):
        self.config = MbagEnv.get_config(config)
        config_json, python_goals = _native_config(self.config)
        if python_goals:
            raise ValueError(
                "MbagVecEnv generates goals in Rust: give goal_generator as a name or one "
                "of the reference's goal generator classes"
            )
        threads = num_threads if num_threads is not None else min(num_envs, os.cpu_count() or 1)
        self._vec = _native.NativeVecEnv(
            config_json,
            num_envs,
            threads,
            seed,
            masks,
            python_hash=_python_hash(),
            agents=None if agents is None else [None if a is None else str(a) for a in agents],
        )
        self.num_envs = num_envs
        self.num_players = self.config["num_players"]
        self.num_flat_actions = self._vec.num_flat_actions

    def observe(self) -> Dict[str, np.ndarray]:
        """The current observations (and masks) without stepping."""
        return self._vec.observe()

    def step(self, actions: Any) -> Dict[str, np.ndarray]:
        return self._vec.step(np.ascontiguousarray(actions, dtype=np.int64))
