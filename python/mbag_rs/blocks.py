"""Volumes of Minecraft blocks, as the reference's ``MinecraftBlocks`` holds them:
``blocks`` and ``block_states``, uint8 arrays of the volume's size."""

from typing import Dict, List, Set, Tuple

import numpy as np

from . import _native


class MinecraftBlocks:
    """Block ids and block states of a ``(W, H, D)`` volume."""

    ID2NAME: List[str] = list(_native.block_names())
    NAME2ID: Dict[str, int] = {
        **{name: block_id for block_id, name in enumerate(ID2NAME)},
        # Names Minecraft uses for blocks the game treats as these.
        "barrier": 1,
        "grass": 2,
        "auto": 255,
    }
    AIR = 0
    BEDROCK = 1
    AUTO = 255
    NUM_BLOCKS = len(ID2NAME)
    PLACEABLE_BLOCK_NAMES: Set[str] = set(ID2NAME[2:])
    PLACEABLE_BLOCK_IDS: Set[int] = set(range(2, len(ID2NAME)))
    NUM_PLACEABLE_BLOCKS = len(PLACEABLE_BLOCK_IDS)
    SOLID_BLOCK_NAMES: Set[str] = set(ID2NAME[1:])
    SOLID_BLOCK_IDS: Set[int] = set(range(1, len(ID2NAME)))

    def __init__(self, size: Tuple[int, int, int]):
        self.size = tuple(size)
        self.blocks = np.zeros(self.size, np.uint8)
        self.block_states = np.zeros(self.size, np.uint8)

    @classmethod
    def from_arrays(cls, blocks: np.ndarray, block_states: np.ndarray) -> "MinecraftBlocks":
        """A volume that takes ownership of two arrays of one shape."""
        volume = cls.__new__(cls)
        volume.size = tuple(blocks.shape)
        volume.blocks = blocks
        volume.block_states = block_states
        return volume

    def copy(self) -> "MinecraftBlocks":
        return MinecraftBlocks.from_arrays(self.blocks.copy(), self.block_states.copy())

    def __eq__(self, other: object) -> bool:
        if not hasattr(other, "blocks") or not hasattr(other, "block_states"):
            return NotImplemented
        return bool(np.array_equal(self.blocks, other.blocks)) and bool(
            np.array_equal(self.block_states, other.block_states)
        )

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key) -> Tuple[np.ndarray, np.ndarray]:
        return (self.blocks[key], self.block_states[key])

    def __repr__(self) -> str:
        return f"MinecraftBlocks(size={self.size})"

    def make_immutable(self) -> None:
        self.blocks.setflags(write=False)
        self.block_states.setflags(write=False)

    def is_valid_block_location(self, location: Tuple[int, int, int]) -> bool:
        return all(0 <= c < s for c, s in zip(location, self.size))
