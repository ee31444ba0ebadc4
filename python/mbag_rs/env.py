"""``MbagEnv``: the reference's environment API over mbag's simulator.

The constructor takes the reference's config dict (partial configs are completed with
its defaults and merge rules), and ``reset``/``step`` return what the reference's do:
per player, observations ``(world_obs uint8 (6, W, H, D), inventory_obs int32
(P, 10), timestep int32 0-d)``, rewards, dones and info dicts with the same keys.

Randomness is drawn as in the reference, so that scripts that seed Python's
``random`` and numpy's global generator keep working: start positions and the random
first-episode length come from ``random.randrange`` exactly as the reference draws
them. The ``random`` and ``set_goal`` goal generators draw from ``numpy.random`` and
``random`` as the reference's do (the same seeds, the same goals); the other
generators with randomness (house datasets, transforms) draw from mbag's own streams,
seeded from ``numpy.random``: reproducible, but not the reference's goals.
"""

import base64
import copy
import glob
import importlib
import json
import os
import random
import sys
from datetime import datetime
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from . import _native
from .actions import MbagAction, MbagActionTuple
from .blocks import MinecraftBlocks

MbagConfigDict = Dict[str, Any]
MbagInfoDict = Dict[str, Any]
MbagObs = Tuple[np.ndarray, np.ndarray, np.ndarray]

# The reference's goal generator classes, by class name, and the registry names
# mbag's simulator implements them under. A class of another name generates its
# goals in Python.
GOAL_GENERATOR_CLASS_NAMES: Dict[str, str] = {
    "BasicGoalGenerator": "basic",
    "RandomGoalGenerator": "random",
    "SimpleOverhangGoalGenerator": "simple_overhang",
    "TutorialGoalGenerator": "tutorial",
    "GrabcraftGoalGenerator": "grabcraft",
    "CraftAssistGoalGenerator": "craftassist",
    "SetGoalGenerator": "set_goal",
    "TransformedGoalGenerator": "TransformedGoalGenerator",
}

ALL_GOAL_GENERATORS: List[str] = list(_native.goal_generator_names())


def _jsonable(value: Any, path: str) -> Any:
    """``value`` with tuples as lists and numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(getattr(value, "blocks", None), np.ndarray):
        # A structure (the reference's MinecraftBlocks or this package's), as mbag's
        # configs write one: its size and base64 C-order ids and states.
        blocks, states = _structure_arrays(value)
        return {
            "size": list(blocks.shape),
            "blocks": base64.b64encode(blocks.tobytes()).decode("ascii"),
            "block_states": base64.b64encode(states.tobytes()).decode("ascii"),
        }
    raise TypeError(f"config field `{path}` holds {value!r}, which mbag_rs cannot read")


def _structure_arrays(structure: Any) -> Tuple[np.ndarray, np.ndarray]:
    """A structure's block ids and states as C-order uint8 arrays (all states 0 where
    it has none)."""
    blocks = np.ascontiguousarray(structure.blocks, dtype=np.uint8)
    states = getattr(structure, "block_states", None)
    states = np.zeros_like(blocks) if states is None else np.ascontiguousarray(states, dtype=np.uint8)
    return blocks, states


def _volume(blocks: np.ndarray, block_states: np.ndarray) -> MinecraftBlocks:
    # Looked up at call time, so that a test harness may substitute the reference's
    # MinecraftBlocks (and MbagAction) for this package's.
    volume = MinecraftBlocks(blocks.shape)
    volume.blocks = blocks
    volume.block_states = block_states
    return volume


class _Structure(NamedTuple):
    """A generated structure's block ids and states, what ``reset`` places."""

    blocks: np.ndarray
    block_states: np.ndarray


class _NumpyRandomGoals:
    """The ``random`` goal generator with numpy's global generator drawing, in the
    reference's order (every cell's fill, then every cell's block id), so that
    ``np.random.seed`` gives the reference's goals; the pruning to the parts that
    stand on the ground runs in Rust."""

    def __init__(self, config: Dict[str, Any]):
        self.config = {"filled_prop": 0.6, **(config or {})}

    def generate_goal(self, size: Tuple[int, int, int]) -> _Structure:
        filled = np.random.rand(*size) < self.config["filled_prop"]
        # Ids 2..9: every block but air and bedrock.
        ids = np.random.randint(len(MinecraftBlocks.ID2NAME) - 2, size=size) + 2
        blocks = _native.random_goal(filled, ids.astype(np.uint8))
        return _Structure(blocks, np.zeros_like(blocks))


class _SetGoals:
    """The ``set_goal`` generator drawing as the reference's does: a structure from
    ``random.choice`` over the config's ``goals`` until one fits. Unlike the
    reference, which would draw forever, it raises if none can fit."""

    def __init__(self, config: Dict[str, Any]):
        self.goals = list(config["goals"])

    def generate_goal(self, size: Tuple[int, int, int]) -> _Structure:
        def fits(goal: Any) -> bool:
            return all(a <= b for a, b in zip(np.shape(goal.blocks), size))

        if not any(fits(goal) for goal in self.goals):
            raise _native.GoalGenerationError(
                f"set_goal: none of its {len(self.goals)} goals fits a goal area of {tuple(size)}"
            )
        while True:
            goal = random.choice(self.goals)
            if fits(goal):
                return _Structure(*_structure_arrays(goal))


# Generators whose draws the drop-in makes in Python, from the generators the
# reference's draw from.
_PYTHON_DRAWN = {"random": _NumpyRandomGoals, "set_goal": _SetGoals}


def _generator_name(generator: Any) -> Tuple[str, bool]:
    """The registry name a config's ``goal_generator`` stands for, and whether its
    goals must come from Python."""
    if isinstance(generator, str):
        return generator, False
    name = getattr(generator, "__name__", None)
    if name in GOAL_GENERATOR_CLASS_NAMES:
        return GOAL_GENERATOR_CLASS_NAMES[name], False
    if callable(generator):
        return "python", True
    raise TypeError(f"goal_generator must be a name or a goal generator class, not {generator!r}")


def _reads_raw_reference_houses(name: str, generator_config: Any) -> bool:
    """Whether a generator config points at the reference's raw house files (GrabCraft
    block lists, CraftAssist schematics) rather than mbag-house/1 files."""
    if not isinstance(generator_config, dict):
        return False
    if name in ("TransformedGoalGenerator", "transformed"):
        return _reads_raw_reference_houses(
            str(generator_config.get("goal_generator")),
            generator_config.get("goal_generator_config", {}),
        )
    # Without a data_dir the reference reads its own folders, relative to the
    # working directory (a checkout of the reference).
    data_dir = generator_config.get("data_dir", f"data/{name}")
    subset = generator_config.get("subset", "train")
    if not isinstance(data_dir, str):
        return False
    if name == "grabcraft":
        return bool(glob.glob(os.path.join(data_dir, str(subset), "*.metadata.json")))
    if name == "craftassist":
        return bool(glob.glob(os.path.join(data_dir, "houses", str(subset), "*", "schematic.npy")))
    return False


def _reference_goal_generator(name: str) -> Any:
    """The reference's generator class for ``name``, to read its raw house files."""
    try:
        goals = importlib.import_module("mbag.environment.goals")
    except ImportError as error:
        raise ValueError(
            f"goal generator {name!r} points at the reference's raw house files, which "
            "mbag reads only as mbag-house/1 files (see ../shared/data/README.md); "
            "install the reference package to read them with its own classes"
        ) from error
    if name in ("TransformedGoalGenerator", "transformed"):
        return goals.TransformedGoalGenerator
    return goals.ALL_GOAL_GENERATORS[name]


def _native_config(config: MbagConfigDict) -> Tuple[str, bool]:
    """The config as JSON for the simulator, and whether goals come from Python.

    Goals come from Python for a generator class of the caller's own, and for the
    reference's raw house files (its GrabCraft and CraftAssist directories), which
    are read through the reference's own classes.
    """
    config = dict(config)
    python_goals = False
    if "goal_generator" in config:
        name, python_goals = _generator_name(config["goal_generator"])
        config["goal_generator"] = name
        if not python_goals and _reads_raw_reference_houses(
            name, config.get("goal_generator_config")
        ):
            python_goals = True
        if python_goals:
            # Python's generator reads its own config; the simulator never does.
            config["goal_generator_config"] = {}
    return json.dumps(_jsonable(config, "")), python_goals


def _python_hash() -> str:
    """The ``hash(bytes)`` of this interpreter, which seeds teleport choices in the
    reference: SipHash-1-3 from CPython 3.11, SipHash-2-4 in 3.8 to 3.10."""
    return "sip13" if sys.version_info >= (3, 11) else "sip24"


class MbagEnv:
    """The MBAG environment (the reference's ``mbag.environment.mbag_env.MbagEnv``)."""

    BLOCKS_TO_GIVE = 5

    def __init__(self, config: MbagConfigDict):
        self.config = self.get_config(config)
        config_json, python_goals = _native_config(self.config)
        # `random` and `set_goal` draw from Python's global generators here, as the
        # reference's do, so that seeded generators give the reference's goals.
        drawn = None if python_goals else _PYTHON_DRAWN.get(_generator_name(self.config["goal_generator"])[0])
        self._env = _native.NativeEnv(config_json, python_goals or drawn is not None, python_hash=_python_hash())
        self.goal_generator: Optional[Any] = None
        if drawn is not None:
            self.goal_generator = drawn(self.config["goal_generator_config"])
        elif python_goals:
            generator = self.config["goal_generator"]
            if isinstance(generator, str) or generator.__name__ in GOAL_GENERATOR_CLASS_NAMES:
                generator = _reference_goal_generator(_generator_name(generator)[0])
            self.goal_generator = generator(self.config["goal_generator_config"])
        self._world_size: Tuple[int, int, int] = tuple(self.config["world_size"])
        self._num_players: int = self.config["num_players"]
        self.world_obs_shape = (6,) + self._world_size
        self.observation_space, self.action_space = self._spaces()
        self.is_first_episode = True
        self._infos: List[MbagInfoDict] = []

    def _spaces(self) -> Tuple[Any, Any]:
        """gymnasium's (or gym's) spaces, as the reference declares them; ``None``
        when neither is installed."""
        try:
            from gymnasium import spaces
        except ImportError:
            try:
                from gym import spaces  # type: ignore[no-redef]
            except ImportError:
                return None, None
        cells = int(np.prod(self._world_size))
        observation_space = spaces.Tuple(
            (
                spaces.Box(0, 255, self.world_obs_shape, dtype=np.uint8),
                spaces.Box(0, 36 * 64, (self._num_players, 10), dtype=np.int32),
                spaces.Box(0, 0x7FFFFFFF, (), dtype=np.int32),
            )
        )
        action_space = spaces.Tuple(
            (spaces.Discrete(10), spaces.Discrete(cells), spaces.Discrete(10))
        )
        return observation_space, action_space

    @staticmethod
    def get_config(partial_config: MbagConfigDict) -> MbagConfigDict:
        """The full config: the reference's defaults where keys are missing, merged by
        its rules. The argument is not modified."""
        partial = copy.deepcopy(partial_config)
        config_json, python_goals = _native_config(partial)
        full = json.loads(_native.full_config(config_json))
        full["world_size"] = tuple(full["world_size"])
        generator = partial.get("goal_generator")
        if generator is not None and not isinstance(generator, str):
            # Keep the class the caller gave, as the reference does.
            full["goal_generator"] = generator
        keeps_objects = python_goals or (generator is not None and _generator_name(generator)[0] == "set_goal")
        if keeps_objects and "goal_generator_config" in partial:
            # The caller's objects (structures, classes), as the reference keeps them.
            full["goal_generator_config"] = partial["goal_generator_config"]
        return full

    # --- episode ---------------------------------------------------------------

    def update_global_timestep(self, global_timestep: int) -> None:
        self._env.global_timestep = int(global_timestep)

    @property
    def global_timestep(self) -> int:
        return self._env.global_timestep

    @global_timestep.setter
    def global_timestep(self, value: int) -> None:
        self._env.global_timestep = int(value)

    def reset(self, *, force_regenerate_goal: bool = False) -> Tuple[List[MbagObs], List[MbagInfoDict]]:
        """A new episode: observations and infos of every player."""
        if self.goal_generator is not None and (
            force_regenerate_goal or self._env.needs_new_goal()
        ):
            structure = self.goal_generator.generate_goal(self._env.goal_structure_size())
            self._env.reset_with_structure(
                np.ascontiguousarray(structure.blocks, dtype=np.uint8),
                np.ascontiguousarray(structure.block_states, dtype=np.uint8),
                random.randrange,
            )
        else:
            goal_seed = int(np.random.randint(0, 2**63 - 1, dtype=np.int64))
            self._env.reset(goal_seed, force_regenerate_goal, random.randrange)
        obs = [self._observe(p) for p in range(self._num_players)]
        infos = self._reset_infos()
        return obs, infos

    def step(
        self, action_tuples: List[MbagActionTuple]
    ) -> Tuple[List[MbagObs], List[float], List[bool], List[MbagInfoDict]]:
        """Every player's action at once; observations, rewards, dones and infos."""
        try:
            # Tuples of ints (the reference's action tuples) go straight through.
            obs, rewards, dones, infos = self._env.step(action_tuples, MbagAction, datetime.now())
        except TypeError:
            # Anything else indexable (numpy rows, lists) is converted first.
            actions = [(int(a[0]), int(a[1]), int(a[2])) for a in action_tuples]
            obs, rewards, dones, infos = self._env.step(actions, MbagAction, datetime.now())
        if dones[0]:
            self.is_first_episode = False
        return obs, rewards, dones, infos

    def _observe(self, player: int) -> MbagObs:
        return self._env.observe(player)

    def _get_player_obs(self, player_index: int) -> MbagObs:
        return self._observe(player_index)

    def _reset_infos(self) -> List[MbagInfoDict]:
        return self._env.reset_infos(MbagAction, datetime.now())

    # --- state -----------------------------------------------------------------

    @property
    def timestep(self) -> int:
        return self._env.timestep

    @property
    def palette_x(self) -> int:
        return self._env.palette_x

    @property
    def current_blocks(self) -> MinecraftBlocks:
        return _volume(*self._env.current_blocks())

    @property
    def goal_blocks(self) -> MinecraftBlocks:
        return _volume(*self._env.goal_blocks())

    @property
    def player_locations(self) -> List[Tuple[float, float, float]]:
        return self._env.player_locations()

    @property
    def player_directions(self) -> List[Tuple[float, float]]:
        # Directions change only when Minecraft is attached, which mbag_rs never is.
        return [(0, 0)] * self._num_players

    @property
    def player_inventories(self) -> List[np.ndarray]:
        return self._env.player_inventories()

    @property
    def last_interacted(self) -> np.ndarray:
        return self._env.last_interacted()

    def get_state(self) -> Dict[str, Any]:
        """The reference's state dict (copies: changing them does not change the env)."""
        return {
            "current_blocks": self.current_blocks,
            "goal_blocks": self.goal_blocks,
            "player_locations": list(self.player_locations),
            "player_directions": list(self.player_directions),
            "player_inventories": self.player_inventories,
            "last_interacted": self.last_interacted,
            "timestep": self.timestep,
        }

    def set_state_no_obs(self, state: Dict[str, Any]) -> None:
        """Replaces the state with a dict like ``get_state``'s (the reference's
        objects work too: anything with ``blocks`` and ``block_states``)."""
        if self.config["truncate_on_no_progress_timesteps"]:
            raise RuntimeError(
                "Environment state does not include the information necessary "
                "to implement truncate_on_no_progress_timesteps=True."
            )
        self._set_state(state, restart=False)

    def reset_to_state(self, state: Dict[str, Any]) -> Tuple[List[MbagObs], List[MbagInfoDict]]:
        """Starts an episode from a state dict like ``get_state``'s (goal included),
        as ``reset`` starts one from a generated goal: the goal percentages count from
        this state. Not in the reference; for replaying recorded episodes."""
        self._set_state(state, restart=True)
        obs = [self._observe(p) for p in range(self._num_players)]
        return obs, self._reset_infos()

    def _set_state(self, state: Dict[str, Any], restart: bool) -> None:
        for key in ("player_locations", "player_directions", "player_inventories"):
            if len(state[key]) != self._num_players:
                raise ValueError(
                    f"{key} has length {len(state[key])} but expected {self._num_players}"
                )
        current, goal = state["current_blocks"], state["goal_blocks"]
        self._env.set_state(
            np.asarray(current.blocks, dtype=np.uint8),
            np.asarray(current.block_states, dtype=np.uint8),
            np.asarray(goal.blocks, dtype=np.uint8),
            np.asarray(goal.block_states, dtype=np.uint8),
            [tuple(float(c) for c in loc) for loc in state["player_locations"]],
            [np.asarray(inv, dtype=np.int32) for inv in state["player_inventories"]],
            np.asarray(state["last_interacted"], dtype=np.int8),
            int(state["timestep"]),
            restart,
        )

    def set_state(self, state: Dict[str, Any]) -> List[MbagObs]:
        self.set_state_no_obs(state)
        return [self._observe(p) for p in range(self._num_players)]


DEFAULT_CONFIG: MbagConfigDict = MbagEnv.get_config({})
