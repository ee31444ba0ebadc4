//! Actions: the ten action types, action tuples and the flat action encoding.

use std::fmt;

use super::block::{BlockId, NUM_BLOCKS};
use super::config::Abilities;
use super::coords::{Cell, CellIndex, WorldSize};

/// The kind of an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ActionType {
    /// Do nothing.
    Noop = 0,
    /// Place a block at a cell.
    PlaceBlock = 1,
    /// Break the block at a cell.
    BreakBlock = 2,
    /// Walk one cell towards +x.
    MovePosX = 3,
    /// Walk one cell towards -x.
    MoveNegX = 4,
    /// Fly one cell up.
    MovePosY = 5,
    /// Fly one cell down.
    MoveNegY = 6,
    /// Walk one cell towards +z.
    MovePosZ = 7,
    /// Walk one cell towards -z.
    MoveNegZ = 8,
    /// Give blocks to the player whose feet are in a cell.
    GiveBlock = 9,
}

impl ActionType {
    /// All types in id order.
    pub const ALL: [Self; 10] = [
        Self::Noop,
        Self::PlaceBlock,
        Self::BreakBlock,
        Self::MovePosX,
        Self::MoveNegX,
        Self::MovePosY,
        Self::MoveNegY,
        Self::MovePosZ,
        Self::MoveNegZ,
        Self::GiveBlock,
    ];

    /// The six moves, in id order.
    pub const MOVES: [Self; 6] = [
        Self::MovePosX,
        Self::MoveNegX,
        Self::MovePosY,
        Self::MoveNegY,
        Self::MovePosZ,
        Self::MoveNegZ,
    ];

    /// The type with this id, if any.
    pub fn from_id(id: i64) -> Option<Self> {
        usize::try_from(id)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// The numeric id used in tuples.
    #[inline]
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// Whether the action targets a cell.
    #[inline]
    pub const fn uses_location(self) -> bool {
        matches!(self, Self::PlaceBlock | Self::BreakBlock | Self::GiveBlock)
    }

    /// Whether the action names a block type.
    #[inline]
    pub const fn uses_block(self) -> bool {
        matches!(self, Self::PlaceBlock | Self::GiveBlock)
    }

    /// The cell delta of a move, `None` for other types.
    pub const fn move_delta(self) -> Option<(i32, i32, i32)> {
        match self {
            Self::MovePosX => Some((1, 0, 0)),
            Self::MoveNegX => Some((-1, 0, 0)),
            Self::MovePosY => Some((0, 1, 0)),
            Self::MoveNegY => Some((0, -1, 0)),
            Self::MovePosZ => Some((0, 0, 1)),
            Self::MoveNegZ => Some((0, 0, -1)),
            _ => None,
        }
    }

    /// Whether this is one of the six moves.
    #[inline]
    pub const fn is_move(self) -> bool {
        self.move_delta().is_some()
    }

    /// The reference's upper-case name, e.g. `PLACE_BLOCK`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Noop => "NOOP",
            Self::PlaceBlock => "PLACE_BLOCK",
            Self::BreakBlock => "BREAK_BLOCK",
            Self::MovePosX => "MOVE_POS_X",
            Self::MoveNegX => "MOVE_NEG_X",
            Self::MovePosY => "MOVE_POS_Y",
            Self::MoveNegY => "MOVE_NEG_Y",
            Self::MovePosZ => "MOVE_POS_Z",
            Self::MoveNegZ => "MOVE_NEG_Z",
            Self::GiveBlock => "GIVE_BLOCK",
        }
    }

    /// Whether a config enables this type: moves only without teleportation, GIVE
    /// only without infinite blocks. Disabled types are accepted by the env as no-ops
    /// but have no flat index.
    pub const fn enabled_in(self, abilities: Abilities) -> bool {
        match self {
            Self::GiveBlock => !abilities.inf_blocks,
            t if t.is_move() => !abilities.teleportation,
            _ => true,
        }
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An action tuple `(action_type, location_index, block_id)`, validated against a
/// world size. Fields a type does not use are kept (the env echoes them in
/// `attempted_action`) but ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Action {
    /// What to do.
    pub kind: ActionType,
    /// The target cell (meaningful for place, break and give).
    pub location: CellIndex,
    /// The block type (meaningful for place and give).
    pub block: BlockId,
}

/// An action tuple that no environment of this size can take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The action type is not 0..=9.
    #[error("action type {0} is not one of 0..=9")]
    UnknownType(i64),
    /// The location index is outside the world (the reference fails in `unravel_index`).
    #[error("location index {index} is outside a {size} world (0..{})", size.num_cells())]
    LocationOutOfRange {
        /// The given index.
        index: i64,
        /// The world size.
        size: WorldSize,
    },
    /// The block id is not 0..=9.
    #[error("block id {0} is not one of 0..=9")]
    UnknownBlock(i64),
    /// A flat index beyond the flat action space.
    #[error("flat action {index} is outside the flat action space of {size} actions")]
    FlatOutOfRange {
        /// The given index.
        index: usize,
        /// The size of the space.
        size: usize,
    },
}

impl Action {
    /// The no-op `(0, 0, 0)`.
    pub const NOOP: Self = Self {
        kind: ActionType::Noop,
        location: CellIndex(0),
        block: BlockId::AIR,
    };

    /// An action from its parts.
    pub const fn new(kind: ActionType, location: CellIndex, block: BlockId) -> Self {
        Self {
            kind,
            location,
            block,
        }
    }

    /// Validates a raw tuple against a world size.
    pub fn from_tuple(tuple: [i64; 3], size: WorldSize) -> Result<Self, ActionError> {
        let [t, loc, block] = tuple;
        let kind = ActionType::from_id(t).ok_or(ActionError::UnknownType(t))?;
        if loc < 0 || loc as u64 >= size.num_cells() as u64 {
            return Err(ActionError::LocationOutOfRange { index: loc, size });
        }
        if !(0..NUM_BLOCKS as i64).contains(&block) {
            return Err(ActionError::UnknownBlock(block));
        }
        Ok(Self::new(kind, CellIndex(loc as u32), BlockId(block as u8)))
    }

    /// The raw tuple.
    pub fn to_tuple(self) -> [i64; 3] {
        [
            i64::from(self.kind.id()),
            i64::from(self.location.0),
            i64::from(self.block.0),
        ]
    }

    /// The target cell decoded for a world size.
    pub fn cell(self, size: WorldSize) -> Cell {
        size.cell(self.location)
    }
}

/// The flat action space of a config: one block of indices per enabled action type,
/// in type order (ENV_SPEC section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatLayout {
    num_cells: usize,
    offsets: [Option<usize>; 10],
    len: usize,
}

impl FlatLayout {
    /// The layout for a world size and abilities.
    pub fn new(size: WorldSize, abilities: Abilities) -> Self {
        let num_cells = size.num_cells();
        let mut offsets = [None; 10];
        let mut len = 0;
        for t in ActionType::ALL {
            if t.enabled_in(abilities) {
                offsets[t.id() as usize] = Some(len);
                len += Self::block_len_for(t, num_cells);
            }
        }
        Self {
            num_cells,
            offsets,
            len,
        }
    }

    fn block_len_for(t: ActionType, num_cells: usize) -> usize {
        let blocks = if t.uses_block() { NUM_BLOCKS } else { 1 };
        let cells = if t.uses_location() { num_cells } else { 1 };
        blocks * cells
    }

    /// The number of flat actions.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: NOOP is always in the space.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first flat index of a type, `None` if the config disables it.
    #[inline]
    pub fn offset(&self, t: ActionType) -> Option<usize> {
        self.offsets[t.id() as usize]
    }

    /// How many flat indices a type takes.
    pub fn block_len(&self, t: ActionType) -> usize {
        Self::block_len_for(t, self.num_cells)
    }

    /// The flat index of an action, `None` if its type is disabled. Unused fields are
    /// taken as 0.
    #[inline]
    pub fn flat(&self, action: Action) -> Option<usize> {
        let offset = self.offset(action.kind)?;
        let block = if action.kind.uses_block() {
            action.block.0 as usize
        } else {
            0
        };
        let loc = if action.kind.uses_location() {
            action.location.get()
        } else {
            0
        };
        let cells = if action.kind.uses_location() {
            self.num_cells
        } else {
            1
        };
        Some(offset + block * cells + loc)
    }

    /// The action of a flat index, with 0 in unused fields.
    pub fn action(&self, flat: usize) -> Result<Action, ActionError> {
        if flat >= self.len {
            return Err(ActionError::FlatOutOfRange {
                index: flat,
                size: self.len,
            });
        }
        let (t, offset) = ActionType::ALL
            .iter()
            .rev()
            .find_map(|&t| self.offset(t).filter(|&o| o <= flat).map(|o| (t, o)))
            .expect("offset 0 is NOOP");
        let within = flat - offset;
        let (block, loc) = if t.uses_location() {
            (within / self.num_cells, within % self.num_cells)
        } else {
            (0, 0)
        };
        Ok(Action::new(t, CellIndex(loc as u32), BlockId(block as u8)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn abilities(teleportation: bool, inf_blocks: bool) -> Abilities {
        Abilities {
            teleportation,
            flying: true,
            inf_blocks,
        }
    }

    #[test]
    fn flat_sizes_match_the_reference() {
        let s = WorldSize::new(11, 10, 10);
        assert_eq!(FlatLayout::new(s, abilities(false, true)).len(), 12_107);
        assert_eq!(FlatLayout::new(s, abilities(true, true)).len(), 12_101);
        assert_eq!(FlatLayout::new(s, abilities(false, false)).len(), 23_107);
        assert_eq!(FlatLayout::new(s, abilities(true, false)).len(), 23_101);
        let s = WorldSize::new(5, 6, 5);
        assert_eq!(FlatLayout::new(s, abilities(false, true)).len(), 1_657);
        assert_eq!(FlatLayout::new(s, abilities(true, false)).len(), 3_151);
    }

    #[test]
    fn flat_round_trips() {
        let s = WorldSize::new(6, 6, 6);
        let layout = FlatLayout::new(s, abilities(false, false));
        for flat in 0..layout.len() {
            let action = layout.action(flat).unwrap();
            assert_eq!(layout.flat(action), Some(flat));
        }
        assert_eq!(layout.offset(ActionType::MovePosX), Some(2377));
        assert_eq!(layout.offset(ActionType::GiveBlock), Some(2383));
        assert!(layout.action(layout.len()).is_err());
    }

    #[test]
    fn tuples_are_validated() {
        let s = WorldSize::new(5, 6, 5);
        assert!(Action::from_tuple([1, 149, 9], s).is_ok());
        assert_eq!(
            Action::from_tuple([10, 0, 0], s),
            Err(ActionError::UnknownType(10))
        );
        assert!(matches!(
            Action::from_tuple([1, 150, 2], s),
            Err(ActionError::LocationOutOfRange { .. })
        ));
        assert_eq!(
            Action::from_tuple([1, 0, 10], s),
            Err(ActionError::UnknownBlock(10))
        );
    }
}
