"""Actions as the reference represents them: ``(action_type, location_index, block_id)``
tuples, and :class:`MbagAction` objects in the info dicts."""

from typing import List, Mapping, Tuple

from .blocks import MinecraftBlocks

MbagActionType = int
MbagActionTuple = Tuple[int, int, int]
WorldSize = Tuple[int, int, int]


def _unravel(index: int, world_size: WorldSize) -> Tuple[int, int, int]:
    _, height, depth = world_size
    return (index // (height * depth), (index // depth) % height, index % depth)


class MbagAction:
    """One action; ``block_location`` is the location index decoded for a world size."""

    NOOP = 0
    PLACE_BLOCK = 1
    BREAK_BLOCK = 2
    MOVE_POS_X = 3
    MOVE_NEG_X = 4
    MOVE_POS_Y = 5
    MOVE_NEG_Y = 6
    MOVE_POS_Z = 7
    MOVE_NEG_Z = 8
    GIVE_BLOCK = 9
    NUM_ACTION_TYPES = 10
    ACTION_TYPES: List[int] = list(range(10))
    ACTION_TYPE_NAMES = {
        0: "NOOP",
        1: "PLACE_BLOCK",
        2: "BREAK_BLOCK",
        3: "MOVE_POS_X",
        4: "MOVE_NEG_X",
        5: "MOVE_POS_Y",
        6: "MOVE_NEG_Y",
        7: "MOVE_POS_Z",
        8: "MOVE_NEG_Z",
        9: "GIVE_BLOCK",
    }
    BLOCK_ID_ACTION_TYPES = [PLACE_BLOCK, GIVE_BLOCK]
    BLOCK_LOCATION_ACTION_TYPES = [PLACE_BLOCK, BREAK_BLOCK, GIVE_BLOCK]
    MOVE_ACTION_TYPES = [3, 4, 5, 6, 7, 8]
    MOVE_ACTION_DELTAS: Mapping[int, Tuple[int, int, int]] = {
        3: (1, 0, 0),
        4: (-1, 0, 0),
        5: (0, 1, 0),
        6: (0, -1, 0),
        7: (0, 0, 1),
        8: (0, 0, -1),
    }

    def __init__(self, action_tuple: MbagActionTuple, world_size: WorldSize):
        self.action_type, self.block_location_index, self.block_id = action_tuple
        self.block_location = _unravel(self.block_location_index, tuple(world_size))
        self._world_size = tuple(world_size)

    def __str__(self) -> str:
        parts = [MbagAction.ACTION_TYPE_NAMES[self.action_type]]
        if self.action_type in MbagAction.BLOCK_ID_ACTION_TYPES:
            parts.append(MinecraftBlocks.ID2NAME[self.block_id])
        if self.action_type in MbagAction.BLOCK_LOCATION_ACTION_TYPES:
            parts.append(str(self.block_location))
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"MbagAction<{self}>"

    def to_tuple(self) -> MbagActionTuple:
        return (self.action_type, self.block_location_index, self.block_id)

    def __eq__(self, other: object) -> bool:
        # Any action object with to_tuple compares, the reference's included.
        to_tuple = getattr(other, "to_tuple", None)
        if to_tuple is None:
            return NotImplemented
        return self.to_tuple() == tuple(to_tuple())

    def __hash__(self) -> int:
        return hash(self.to_tuple())

    @classmethod
    def noop_action(cls) -> "MbagAction":
        return cls((MbagAction.NOOP, 0, 0), (1, 1, 1))

    def is_palette(self, inf_blocks: bool) -> bool:
        """Whether the action's location is on the palette column (limited blocks only)."""
        return self.block_location[0] == self._world_size[0] - 1 and not inf_blocks
