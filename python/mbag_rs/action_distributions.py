"""Action masks and the flat action space (the reference's
``mbag.agents.action_distributions.MbagActionDistribution``)."""

from typing import Callable, Dict, List, Set, Tuple, Union

import numpy as np

from . import _native
from .actions import MbagAction, MbagActionTuple
from .blocks import MinecraftBlocks

_NB = MinecraftBlocks.NUM_BLOCKS


class MbagActionDistribution:
    """Distributions over actions, as ``(NUM_CHANNELS, W, H, D)`` arrays or flat
    arrays over the config's action space, and the masks of valid actions."""

    NUM_CHANNELS = MbagAction.NUM_ACTION_TYPES + len(MbagAction.BLOCK_ID_ACTION_TYPES) * (_NB - 1)
    NOOP = 0
    PLACE_BLOCK = slice(1, 1 + _NB)
    BREAK_BLOCK = 1 + _NB
    MOVE_POS_X = 2 + _NB
    MOVE_NEG_X = 3 + _NB
    MOVE_POS_Y = 4 + _NB
    MOVE_NEG_Y = 5 + _NB
    MOVE_POS_Z = 6 + _NB
    MOVE_NEG_Z = 7 + _NB
    GIVE_BLOCK = slice(8 + _NB, 8 + 2 * _NB)
    ACTION_TYPE2CHANNEL: Dict[int, Union[int, slice]] = {
        MbagAction.NOOP: NOOP,
        MbagAction.PLACE_BLOCK: PLACE_BLOCK,
        MbagAction.BREAK_BLOCK: BREAK_BLOCK,
        MbagAction.MOVE_POS_X: MOVE_POS_X,
        MbagAction.MOVE_NEG_X: MOVE_NEG_X,
        MbagAction.MOVE_POS_Y: MOVE_POS_Y,
        MbagAction.MOVE_NEG_Y: MOVE_NEG_Y,
        MbagAction.MOVE_POS_Z: MOVE_POS_Z,
        MbagAction.MOVE_NEG_Z: MOVE_NEG_Z,
        MbagAction.GIVE_BLOCK: GIVE_BLOCK,
    }
    CHANNELS: List[Tuple[int, int]] = [
        (t, b)
        for t in MbagAction.ACTION_TYPES
        for b in (range(_NB) if t in MbagAction.BLOCK_ID_ACTION_TYPES else [0])
    ]

    @staticmethod
    def _layout(config) -> List[Tuple[int, int, int, int]]:
        abilities = config["abilities"]
        return _native.flat_layout(
            tuple(config["world_size"]),
            bool(abilities["teleportation"]),
            bool(abilities["inf_blocks"]),
        )

    @staticmethod
    def get_valid_action_types(config) -> Set[int]:
        return {t for t, _, _, _ in MbagActionDistribution._layout(config)}

    @staticmethod
    def get_action_mapping(config) -> np.ndarray:
        """``(N, 3)``: the action tuple of every flat action."""
        parts = []
        for action_type, _, num_blocks, num_locations in MbagActionDistribution._layout(config):
            part = np.empty((num_blocks * num_locations, 3), dtype=int)
            part[:, 0] = action_type
            part[:, 1] = np.tile(np.arange(num_locations), num_blocks)
            part[:, 2] = np.repeat(np.arange(num_blocks), num_locations)
            parts.append(part)
        return np.concatenate(parts, axis=0)

    @staticmethod
    def get_flat_action(config, action: MbagActionTuple) -> int:
        """The flat index of an action tuple (fields its type does not use count as 0)."""
        action_type, location, block_id = (int(a) for a in action)
        if action_type not in MbagAction.BLOCK_ID_ACTION_TYPES:
            block_id = 0
        if action_type not in MbagAction.BLOCK_LOCATION_ACTION_TYPES:
            location = 0
        for t, offset, _, num_locations in MbagActionDistribution._layout(config):
            if t == action_type:
                return offset + block_id * num_locations + location
        raise ValueError(f"action type {action_type} is not in this config's action space")

    @staticmethod
    def to_flat(config, probs: np.ndarray, reduction: Callable = np.sum) -> np.ndarray:
        """``(B, NUM_CHANNELS, W, H, D)`` to ``(B, N)``: location actions one entry per
        cell, the others reduced over the world with ``reduction``."""
        batch = probs.shape[0]
        pieces = []
        for action_type, _, _, _ in MbagActionDistribution._layout(config):
            channel = MbagActionDistribution.ACTION_TYPE2CHANNEL[action_type]
            if action_type in MbagAction.BLOCK_LOCATION_ACTION_TYPES:
                pieces.append(probs[:, channel].reshape((batch, -1)))
            else:
                pieces.append(reduction(probs[:, channel], axis=(-3, -2, -1)).reshape((batch, -1)))
        return np.concatenate(pieces, axis=1)

    @staticmethod
    def get_mask_flat(config, obs, *, line_of_sight_masking: bool = False) -> np.ndarray:
        """``(B, N)`` bool: which flat actions are valid for a batch of observations
        ``(world_obs (B, 6, W, H, D), inventory_obs (B, P, 10), timestep (B,))``."""
        world_obs, inventory_obs, timestep = obs
        abilities = config["abilities"]
        return _native.mask_flat(
            np.ascontiguousarray(world_obs, dtype=np.uint8),
            np.ascontiguousarray(inventory_obs, dtype=np.int32),
            np.ascontiguousarray(np.asarray(timestep).reshape(-1), dtype=np.int64),
            bool(abilities["teleportation"]),
            bool(abilities["inf_blocks"]),
            bool(line_of_sight_masking),
        )

    @staticmethod
    def get_mask(config, obs, *, line_of_sight_masking: bool = False) -> np.ndarray:
        """``(B, NUM_CHANNELS, W, H, D)`` bool: the flat mask spread over channels;
        an action without a location is valid at every cell or at none."""
        flat = MbagActionDistribution.get_mask_flat(
            config, obs, line_of_sight_masking=line_of_sight_masking
        )
        world_obs = obs[0]
        batch, _, width, height, depth = world_obs.shape
        mask = np.zeros((batch, MbagActionDistribution.NUM_CHANNELS, width, height, depth), dtype=bool)
        for action_type, offset, num_blocks, num_locations in MbagActionDistribution._layout(config):
            channel = MbagActionDistribution.ACTION_TYPE2CHANNEL[action_type]
            piece = flat[:, offset : offset + num_blocks * num_locations]
            if action_type in MbagAction.BLOCK_LOCATION_ACTION_TYPES:
                shape = (batch, num_blocks, width, height, depth) if num_blocks > 1 else (batch, width, height, depth)
                mask[:, channel] = piece.reshape(shape)
            else:
                mask[:, channel] = piece[:, :1, None, None]
        return mask
