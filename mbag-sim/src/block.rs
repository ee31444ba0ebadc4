//! The ten MBAG block types and dense block grids.

use std::fmt;
use std::str::FromStr;

use super::coords::{Cell, CellIndex, WorldSize};

/// A block type id, `0..NUM_BLOCKS` for real blocks.
///
/// The goal generators also use [`BlockId::AUTO`] (255) internally as a placeholder
/// that is filled before a goal reaches the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BlockId(pub u8);

/// The number of real block types.
pub const NUM_BLOCKS: usize = 10;

impl BlockId {
    /// Air: the empty cell.
    pub const AIR: Self = Self(0);
    /// Bedrock: the unbreakable floor (and Malmo's `barrier`).
    pub const BEDROCK: Self = Self(1);
    /// Dirt (Malmo's `grass` maps here too).
    pub const DIRT: Self = Self(2);
    /// Cobblestone.
    pub const COBBLESTONE: Self = Self(3);
    /// Glass.
    pub const GLASS: Self = Self(4);
    /// Log.
    pub const LOG: Self = Self(5);
    /// Planks.
    pub const PLANKS: Self = Self(6);
    /// Stone.
    pub const STONE: Self = Self(7);
    /// Stone bricks.
    pub const STONEBRICK: Self = Self(8);
    /// Wool.
    pub const WOOL: Self = Self(9);
    /// Placeholder used only inside goal generation ("auto").
    pub const AUTO: Self = Self(255);

    /// The placeable blocks, in the ascending order the reference iterates them.
    pub const PLACEABLE: [Self; 8] = [
        Self::DIRT,
        Self::COBBLESTONE,
        Self::GLASS,
        Self::LOG,
        Self::PLANKS,
        Self::STONE,
        Self::STONEBRICK,
        Self::WOOL,
    ];

    const NAMES: [&'static str; NUM_BLOCKS] = [
        "air",
        "bedrock",
        "dirt",
        "cobblestone",
        "glass",
        "log",
        "planks",
        "stone",
        "stonebrick",
        "wool",
    ];

    /// Whether a player may place this block (ids 2..=9).
    #[inline]
    pub const fn is_placeable(self) -> bool {
        self.0 >= 2 && self.0 <= 9
    }

    /// Whether a player may break this block (not air, not bedrock).
    #[inline]
    pub const fn is_breakable(self) -> bool {
        self.0 >= 2
    }

    /// Whether this is air.
    #[inline]
    pub const fn is_air(self) -> bool {
        self.0 == 0
    }

    /// The block of a Minecraft name (`planks`, `air`, ...), if it is one of
    /// MBAG's ten.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|&n| n == name)
            .map(|i| Self(i as u8))
    }

    /// The block's Minecraft name, or `None` for an id outside the table.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Self::AUTO => Some("auto"),
            _ => Self::NAMES.get(usize::from(self.0)).copied(),
        }
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "block#{}", self.0),
        }
    }
}

/// A block name that is not in the MBAG block table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown block name {0:?}")]
pub struct UnknownBlockName(pub String);

impl FromStr for BlockId {
    type Err = UnknownBlockName;

    /// Looks a name up, accepting the reference's aliases `barrier` (bedrock),
    /// `grass` (dirt) and `auto` (the goal-generation placeholder).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "barrier" => Ok(Self::BEDROCK),
            "grass" => Ok(Self::DIRT),
            "auto" => Ok(Self::AUTO),
            _ => Self::NAMES
                .iter()
                .position(|&n| n == name)
                .map(|i| Self(i as u8))
                .ok_or_else(|| UnknownBlockName(name.to_owned())),
        }
    }
}

/// A dense grid of block ids and block states, C order over `(x, y, z)`.
///
/// Used for the world, the goal and goal structures. States are carried everywhere
/// for parity but are always 0 in practice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    size: WorldSize,
    ids: Vec<u8>,
    states: Vec<u8>,
}

impl Blocks {
    /// A grid full of air.
    pub fn air(size: WorldSize) -> Self {
        Self {
            size,
            ids: vec![0; size.num_cells()],
            states: vec![0; size.num_cells()],
        }
    }

    /// A grid from raw C-order id and state arrays.
    ///
    /// # Panics
    /// If either array's length differs from `size.num_cells()`.
    pub fn from_raw(size: WorldSize, ids: Vec<u8>, states: Vec<u8>) -> Self {
        assert_eq!(ids.len(), size.num_cells(), "block ids do not fit {size}");
        assert_eq!(
            states.len(),
            size.num_cells(),
            "block states do not fit {size}"
        );
        Self { size, ids, states }
    }

    /// The initial world of every episode: bedrock at y = 0, dirt at y = 1, air above.
    pub fn initial_world(size: WorldSize) -> Self {
        let mut blocks = Self::air(size);
        for cell in size.cells() {
            let id = match cell.y {
                0 => BlockId::BEDROCK,
                1 => BlockId::DIRT,
                _ => continue,
            };
            blocks.set(cell, id);
        }
        blocks
    }

    /// The grid's size.
    #[inline]
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The raw C-order block ids.
    #[inline]
    pub fn ids(&self) -> &[u8] {
        &self.ids
    }

    /// The raw C-order block ids, mutably.
    #[inline]
    pub fn ids_mut(&mut self) -> &mut [u8] {
        &mut self.ids
    }

    /// The raw C-order block states.
    #[inline]
    pub fn states(&self) -> &[u8] {
        &self.states
    }

    /// The raw C-order block states, mutably.
    #[inline]
    pub fn states_mut(&mut self) -> &mut [u8] {
        &mut self.states
    }

    /// The id at a flat index.
    #[inline]
    pub fn id_at(&self, index: CellIndex) -> BlockId {
        BlockId(self.ids[index.get()])
    }

    /// The id of an in-grid cell.
    #[inline]
    pub fn get(&self, cell: Cell) -> BlockId {
        self.id_at(self.size.index(cell))
    }

    /// The id of a cell, or `None` outside the grid.
    #[inline]
    pub fn checked_get(&self, cell: Cell) -> Option<BlockId> {
        self.size.checked_index(cell).map(|i| self.id_at(i))
    }

    /// Sets a cell's id, with state 0.
    #[inline]
    pub fn set(&mut self, cell: Cell, id: BlockId) {
        let i = self.size.index(cell);
        self.set_at(i, id);
    }

    /// Sets the id at a flat index, with state 0.
    #[inline]
    pub fn set_at(&mut self, index: CellIndex, id: BlockId) {
        self.ids[index.get()] = id.0;
        self.states[index.get()] = 0;
    }

    /// Sets a cell's id and state.
    #[inline]
    pub fn set_with_state(&mut self, cell: Cell, id: BlockId, state: u8) {
        let i = self.size.index(cell).get();
        self.ids[i] = id.0;
        self.states[i] = state;
    }

    /// The state of an in-grid cell.
    #[inline]
    pub fn state(&self, cell: Cell) -> u8 {
        self.states[self.size.index(cell).get()]
    }

    /// The number of non-air cells.
    pub fn count_non_air(&self) -> usize {
        self.ids.iter().filter(|&&b| b != 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!("grass".parse::<BlockId>(), Ok(BlockId::DIRT));
        assert_eq!("barrier".parse::<BlockId>(), Ok(BlockId::BEDROCK));
        assert_eq!("wool".parse::<BlockId>(), Ok(BlockId::WOOL));
        assert!("lava".parse::<BlockId>().is_err());
        assert_eq!(BlockId::STONEBRICK.to_string(), "stonebrick");
    }

    #[test]
    fn initial_world_has_bedrock_and_dirt() {
        let world = Blocks::initial_world(WorldSize::new(5, 6, 5));
        assert_eq!(world.get(Cell::new(2, 0, 3)), BlockId::BEDROCK);
        assert_eq!(world.get(Cell::new(2, 1, 3)), BlockId::DIRT);
        assert_eq!(world.get(Cell::new(2, 2, 3)), BlockId::AIR);
        assert_eq!(world.count_non_air(), 50);
    }
}
