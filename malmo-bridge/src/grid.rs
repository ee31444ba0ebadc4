//! World-sized grids of MBAG blocks, indexed `[x][y][z]` as MBAG's numpy arrays are.
//!
//! Coordinates here are grid cells of the build area: `0 <= x < W` (east),
//! `0 <= y < H` (up), `0 <= z < D` (south). They are also the Minecraft block
//! coordinates of the build area, since MBAG puts its origin at (0, 0, 0).

use std::fmt;

use crate::block::Block;

/// The extents of an MBAG world: width (x), height (y) and depth (z), each at
/// least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorldSize {
    width: u32,
    height: u32,
    depth: u32,
}

/// Why a world size or a grid cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// An extent is zero.
    #[error("world size {width}x{height}x{depth} has an empty extent")]
    EmptyExtent {
        /// Requested width.
        width: u32,
        /// Requested height.
        height: u32,
        /// Requested depth.
        depth: u32,
    },
    /// A flat array does not hold one value per cell.
    #[error("{found} values for a {size} grid of {expected} cells")]
    WrongLength {
        /// The grid's size.
        size: WorldSize,
        /// Cells in the grid.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A value is no MBAG block id.
    #[error("cell {index}: {id} is no MBAG block id")]
    BadBlockId {
        /// C-order index of the cell.
        index: usize,
        /// The value.
        id: u8,
    },
}

impl WorldSize {
    /// A size from its extents; each must be at least 1.
    pub fn new(width: u32, height: u32, depth: u32) -> Result<Self, GridError> {
        if width == 0 || height == 0 || depth == 0 {
            return Err(GridError::EmptyExtent {
                width,
                height,
                depth,
            });
        }
        Ok(Self {
            width,
            height,
            depth,
        })
    }

    /// Extent along x.
    pub const fn width(self) -> u32 {
        self.width
    }

    /// Extent along y (up).
    pub const fn height(self) -> u32 {
        self.height
    }

    /// Extent along z.
    pub const fn depth(self) -> u32 {
        self.depth
    }

    /// The number of cells, `W*H*D`.
    pub fn num_cells(self) -> usize {
        self.width as usize * self.height as usize * self.depth as usize
    }

    /// Whether the cell lies inside the grid.
    pub fn contains(self, x: i64, y: i64, z: i64) -> bool {
        (0..i64::from(self.width)).contains(&x)
            && (0..i64::from(self.height)).contains(&y)
            && (0..i64::from(self.depth)).contains(&z)
    }

    /// The C-order index of a cell, `(x*H + y)*D + z` (numpy's `ravel` of `[x][y][z]`).
    fn index(self, x: u32, y: u32, z: u32) -> usize {
        assert!(
            x < self.width && y < self.height && z < self.depth,
            "cell ({x}, {y}, {z}) outside {self}"
        );
        (x as usize * self.height as usize + y as usize) * self.depth as usize + z as usize
    }
}

impl fmt::Display for WorldSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.width, self.height, self.depth)
    }
}

/// A dense grid of blocks over a [`WorldSize`], stored in C order over `(x, y, z)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockGrid {
    size: WorldSize,
    blocks: Vec<Block>,
}

impl BlockGrid {
    /// A grid where every cell is `block`.
    pub fn filled(size: WorldSize, block: Block) -> Self {
        Self {
            size,
            blocks: vec![block; size.num_cells()],
        }
    }

    /// What the mission's flat world generator builds before anything is drawn:
    /// bedrock at y = 0, dirt (Minecraft's grass) at y = 1, air above. This is also
    /// MBAG's initial world.
    pub fn flat(size: WorldSize) -> Self {
        Self::from_fn(size, |_, y, _| match y {
            0 => Block::Bedrock,
            1 => Block::Dirt,
            _ => Block::Air,
        })
    }

    /// A grid whose cell `(x, y, z)` is `f(x, y, z)`.
    pub fn from_fn(size: WorldSize, mut f: impl FnMut(u32, u32, u32) -> Block) -> Self {
        let mut blocks = Vec::with_capacity(size.num_cells());
        for x in 0..size.width {
            for y in 0..size.height {
                for z in 0..size.depth {
                    blocks.push(f(x, y, z));
                }
            }
        }
        Self { size, blocks }
    }

    /// A grid from MBAG block ids in C order (a raveled `[x][y][z]` numpy array).
    pub fn from_mbag_ids(size: WorldSize, ids: &[u8]) -> Result<Self, GridError> {
        if ids.len() != size.num_cells() {
            return Err(GridError::WrongLength {
                size,
                expected: size.num_cells(),
                found: ids.len(),
            });
        }
        let blocks = ids
            .iter()
            .enumerate()
            .map(|(index, &id)| Block::from_mbag_id(id).ok_or(GridError::BadBlockId { index, id }))
            .collect::<Result<_, _>>()?;
        Ok(Self { size, blocks })
    }

    /// The MBAG block ids in C order.
    pub fn mbag_ids(&self) -> Vec<u8> {
        self.blocks.iter().map(|b| b.mbag_id()).collect()
    }

    /// The grid's size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The block at a cell.
    ///
    /// # Panics
    /// If the cell lies outside the grid.
    pub fn get(&self, x: u32, y: u32, z: u32) -> Block {
        self.blocks[self.size.index(x, y, z)]
    }

    /// Sets the block at a cell.
    ///
    /// # Panics
    /// If the cell lies outside the grid.
    pub fn set(&mut self, x: u32, y: u32, z: u32, block: Block) {
        let index = self.size.index(x, y, z);
        self.blocks[index] = block;
    }

    /// Every cell with its block, in C order (x slowest, z fastest), which is the
    /// order of numpy's `ndenumerate` and so of the reference's `DrawBlock`s.
    pub fn cells(&self) -> impl Iterator<Item = (u32, u32, u32, Block)> + '_ {
        let (h, d) = (self.size.height, self.size.depth);
        self.blocks.iter().enumerate().map(move |(i, &b)| {
            let i = i as u32;
            (i / (h * d), i / d % h, i % d, b)
        })
    }

    /// Whether the reference draws this cell's block into the mission: it skips
    /// `air`, `bedrock` at y = 0 and `dirt` at y = 1, which the flat world supplies
    /// (MBAG_INTEGRATION.md §2).
    pub fn is_drawn(y: u32, block: Block) -> bool {
        !matches!(
            (y, block),
            (_, Block::Air) | (0, Block::Bedrock) | (1, Block::Dirt)
        )
    }

    /// The grid as Minecraft builds it from the mission: the flat world with every
    /// drawn cell on top. It differs from `self` only where `self` has air at
    /// y = 0 or 1, which the reference cannot draw, so the flat world's bedrock or
    /// grass (dirt) stays there.
    pub fn as_drawn(&self) -> Self {
        let mut drawn = self.clone();
        for (x, y, z, block) in self.cells() {
            if block == Block::Air && y <= 1 {
                drawn.set(x, y, z, Self::flat_block(y));
            }
        }
        drawn
    }

    fn flat_block(y: u32) -> Block {
        match y {
            0 => Block::Bedrock,
            1 => Block::Dirt,
            _ => Block::Air,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_run_in_c_order_and_match_get() {
        let size = WorldSize::new(3, 4, 5).unwrap();
        let grid = BlockGrid::from_fn(size, |x, y, z| {
            Block::ALL[((x + 2 * y + 3 * z) % 10) as usize]
        });
        let cells: Vec<_> = grid.cells().collect();
        assert_eq!(cells.len(), 60);
        assert_eq!(cells[1], (0, 0, 1, grid.get(0, 0, 1)));
        assert_eq!(cells[5], (0, 1, 0, grid.get(0, 1, 0)));
        assert_eq!(cells[20], (1, 0, 0, grid.get(1, 0, 0)));
        for (x, y, z, b) in cells {
            assert_eq!(grid.get(x, y, z), b);
        }
        let again = BlockGrid::from_mbag_ids(size, &grid.mbag_ids()).unwrap();
        assert_eq!(again, grid);
    }

    #[test]
    fn bad_sizes_and_ids_are_refused() {
        assert!(WorldSize::new(0, 1, 1).is_err());
        let size = WorldSize::new(1, 1, 2).unwrap();
        assert_eq!(
            BlockGrid::from_mbag_ids(size, &[0]),
            Err(GridError::WrongLength {
                size,
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            BlockGrid::from_mbag_ids(size, &[0, 12]),
            Err(GridError::BadBlockId { index: 1, id: 12 })
        );
    }

    #[test]
    fn air_on_the_floor_layers_is_drawn_as_the_flat_world() {
        let size = WorldSize::new(2, 3, 1).unwrap();
        let grid = BlockGrid::filled(size, Block::Air);
        let drawn = grid.as_drawn();
        assert_eq!(drawn, BlockGrid::flat(size));
        assert!(!BlockGrid::is_drawn(0, Block::Bedrock));
        assert!(BlockGrid::is_drawn(1, Block::Bedrock));
        assert!(!BlockGrid::is_drawn(1, Block::Dirt));
        assert!(BlockGrid::is_drawn(0, Block::Dirt));
    }
}
