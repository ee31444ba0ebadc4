"""mbag_rs: the MBAG environment compiled from Rust.

A drop-in for the reference's environment API: swap
``from mbag.environment.mbag_env import MbagEnv`` for ``from mbag_rs import MbagEnv``.
The package also offers the reference's masks (:class:`MbagActionDistribution`) and a
vectorised env (:class:`MbagVecEnv`) that steps many environments in one call.
"""

from ._native import GoalGenerationError, PlayersOverlappingError
from .action_distributions import MbagActionDistribution
from .actions import MbagAction, MbagActionTuple
from .agents import LowestBlockAgent, MbagAgent, MovementAgent, NoopAgent, RandomAgent
from .blocks import MinecraftBlocks
from .env import ALL_GOAL_GENERATORS, DEFAULT_CONFIG, MbagConfigDict, MbagEnv
from .vec_env import MbagVecEnv

__all__ = [
    "ALL_GOAL_GENERATORS",
    "DEFAULT_CONFIG",
    "GoalGenerationError",
    "LowestBlockAgent",
    "MbagAgent",
    "MovementAgent",
    "NoopAgent",
    "RandomAgent",
    "MbagAction",
    "MbagActionDistribution",
    "MbagActionTuple",
    "MbagConfigDict",
    "MbagEnv",
    "MbagVecEnv",
    "MinecraftBlocks",
    "PlayersOverlappingError",
]
