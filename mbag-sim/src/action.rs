//! Actions: the ten action types, action tuples and the flat action encoding.
//!
//! An action has two types. [`ActionTuple`] is what the env accepts: any three integers, as the reference's
//! `step` does (ENV_SPEC 4.1), kept as given so `attempted_action` can echo them.
//! [`Action`] is a tuple whose type is one of the ten and whose fields are in range:
//! what agents, masks, networks and the flat layout produce and consume. An unknown
//! type therefore exists only as an `ActionTuple`; the env treats it as the reference
//! does (see [`super::env::Env::step_tuples`]).

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

/// An action tuple `(action_type, location_index, block_id)` with a known type and
/// fields in range for a world size. Fields a type does not use are kept (they are
/// part of the tuple) but ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Action {
    /// What to do.
    pub kind: ActionType,
    /// The target cell (meaningful for place, break and give).
    pub location: CellIndex,
    /// The block type (meaningful for place and give).
    pub block: BlockId,
}

/// An action tuple as given to the env: `(action_type, location_index, block_id)`,
/// any three integers. Nothing is checked here: the env decides what each field
/// means for the type (ENV_SPEC 4.1) and echoes the tuple in
/// [`super::env::StepInfo::attempted_action`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionTuple {
    /// The action type id; 0..=9 are the [`ActionType`]s, any other is a no-op.
    pub type_id: i64,
    /// The location index, `(x*H + y)*D + z`.
    pub location: i64,
    /// The block id.
    pub block: i64,
}

impl ActionTuple {
    /// The no-op `(0, 0, 0)`.
    pub const NOOP: Self = Self::new(0, 0, 0);

    /// A tuple from its fields.
    pub const fn new(type_id: i64, location: i64, block: i64) -> Self {
        Self {
            type_id,
            location,
            block,
        }
    }

    /// The fields as an array.
    pub const fn to_array(self) -> [i64; 3] {
        [self.type_id, self.location, self.block]
    }

    /// The action type, `None` for an id outside 0..=9.
    pub fn kind(self) -> Option<ActionType> {
        ActionType::from_id(self.type_id)
    }

    /// The location decoded for a world size. Every tuple the env decodes goes
    /// through this, whatever its type: the reference's `MbagAction` calls
    /// `np.unravel_index` in its constructor, which raises for an index outside the
    /// world.
    pub fn cell_index(self, size: WorldSize) -> Result<CellIndex, ActionError> {
        u32::try_from(self.location)
            .ok()
            .filter(|&i| (i as usize) < size.num_cells())
            .map(CellIndex)
            .ok_or(ActionError::LocationOutOfRange {
                index: self.location,
                size,
            })
    }

    /// The block id, `None` outside 0..=9.
    pub fn block_id(self) -> Option<BlockId> {
        u8::try_from(self.block)
            .ok()
            .filter(|&b| usize::from(b) < NUM_BLOCKS)
            .map(BlockId)
    }

    /// The typed action: a known type, a location in the world and a block id in
    /// 0..=9 (also in a field the type does not use, so the action gives this
    /// tuple back).
    pub fn to_action(self, size: WorldSize) -> Result<Action, ActionError> {
        let kind = self.kind().ok_or(ActionError::UnknownType(self.type_id))?;
        let location = self.cell_index(size)?;
        let block = self
            .block_id()
            .ok_or(ActionError::UnknownBlock(self.block))?;
        Ok(Action::new(kind, location, block))
    }
}

impl From<[i64; 3]> for ActionTuple {
    fn from([type_id, location, block]: [i64; 3]) -> Self {
        Self::new(type_id, location, block)
    }
}

impl From<ActionTuple> for [i64; 3] {
    fn from(t: ActionTuple) -> Self {
        t.to_array()
    }
}

impl From<Action> for ActionTuple {
    fn from(a: Action) -> Self {
        Self::from(a.to_tuple())
    }
}

impl fmt::Display for ActionTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.type_id, self.location, self.block)
    }
}

/// An action tuple that is not a typed [`Action`] (or has no flat index).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The action type is not 0..=9.
    #[error("action type {0} is not one of 0..=9")]
    UnknownType(i64),
    /// The config disables the type, so it has no flat index.
    #[error("action type {0} is disabled in this config and has no flat index")]
    Disabled(ActionType),
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

    /// Validates a raw tuple against a world size ([`ActionTuple::to_action`]).
    pub fn from_tuple(tuple: [i64; 3], size: WorldSize) -> Result<Self, ActionError> {
        ActionTuple::from(tuple).to_action(size)
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
    size: WorldSize,
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
            size,
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

    /// The world size the layout is for.
    pub fn size(&self) -> WorldSize {
        self.size
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

    /// The flat index of a tuple (unused fields taken as 0, ENV_SPEC 4.2). Tuples
    /// outside the flat space are rejected: an unknown or disabled type, or a used
    /// field out of range.
    pub fn flat_tuple(&self, tuple: ActionTuple) -> Result<usize, ActionError> {
        let kind = tuple
            .kind()
            .ok_or(ActionError::UnknownType(tuple.type_id))?;
        let offset = self.offset(kind).ok_or(ActionError::Disabled(kind))?;
        let loc = if kind.uses_location() {
            tuple.cell_index(self.size)?.get()
        } else {
            0
        };
        let block = if kind.uses_block() {
            usize::from(
                tuple
                    .block_id()
                    .ok_or(ActionError::UnknownBlock(tuple.block))?
                    .0,
            )
        } else {
            0
        };
        let cells = if kind.uses_location() {
            self.num_cells
        } else {
            1
        };
        Ok(offset + block * cells + loc)
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
        assert!(matches!(
            Action::from_tuple([0, -1, 0], s),
            Err(ActionError::LocationOutOfRange { index: -1, .. })
        ));
    }

    #[test]
    fn tuples_keep_any_integers() {
        let s = WorldSize::new(5, 6, 5);
        for raw in [[10, 3, 4], [i64::MAX, 0, 0], [-1, -7, 300], [2, 149, -1]] {
            let t = ActionTuple::from(raw);
            assert_eq!(t.to_array(), raw);
            assert_eq!(
                t.to_string(),
                format!("({}, {}, {})", raw[0], raw[1], raw[2])
            );
        }
        assert_eq!(ActionTuple::new(10, 0, 0).kind(), None);
        assert_eq!(ActionTuple::new(-3, 0, 0).kind(), None);
        assert_eq!(
            ActionTuple::new(9, 0, 0).kind(),
            Some(ActionType::GiveBlock)
        );
        assert_eq!(
            ActionTuple::new(0, 149, 0).cell_index(s),
            Ok(CellIndex(149))
        );
        assert!(ActionTuple::new(0, 150, 0).cell_index(s).is_err());
        assert!(ActionTuple::new(0, i64::MIN, 0).cell_index(s).is_err());
        assert_eq!(ActionTuple::new(1, 0, 9).block_id(), Some(BlockId::WOOL));
        assert_eq!(ActionTuple::new(1, 0, 266).block_id(), None);
        let a = Action::new(ActionType::BreakBlock, CellIndex(17), BlockId::DIRT);
        assert_eq!(ActionTuple::from(a).to_action(s), Ok(a));
    }

    #[test]
    fn flat_indices_of_tuples() {
        let s = WorldSize::new(6, 6, 6);
        let layout = FlatLayout::new(s, abilities(false, false));
        for flat in 0..layout.len() {
            let t = ActionTuple::from(layout.action(flat).unwrap());
            assert_eq!(layout.flat_tuple(t), Ok(flat));
        }
        // Unused fields are taken as 0, whatever they hold.
        assert_eq!(
            layout.flat_tuple(ActionTuple::new(2, 5, 300)),
            Ok(layout.offset(ActionType::BreakBlock).unwrap() + 5)
        );
        assert_eq!(layout.flat_tuple(ActionTuple::new(0, -4, -4)), Ok(0));
        assert_eq!(
            layout.flat_tuple(ActionTuple::new(10, 0, 0)),
            Err(ActionError::UnknownType(10))
        );
        assert_eq!(
            layout.flat_tuple(ActionTuple::new(1, 0, 10)),
            Err(ActionError::UnknownBlock(10))
        );
        assert!(matches!(
            layout.flat_tuple(ActionTuple::new(9, 216, 2)),
            Err(ActionError::LocationOutOfRange { index: 216, .. })
        ));
        let teleport = FlatLayout::new(s, abilities(true, true));
        assert_eq!(
            teleport.flat_tuple(ActionTuple::new(3, 0, 0)),
            Err(ActionError::Disabled(ActionType::MovePosX))
        );
    }
}
