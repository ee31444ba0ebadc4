//! Coordinates: world sizes, integer cells, flat cell indices and float player positions.
//!
//! The world is a dense `W x H x D` grid indexed `[x][y][z]` with **y up**, stored in
//! C order, so the flat index of cell `(x, y, z)` is `x*H*D + y*D + z`. Everything
//! that crosses the reference's wire formats (action tuples, golden files, model
//! inputs) uses that flat index.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The size of a world or structure: width (x), height (y), depth (z), in cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "[usize; 3]", into = "[usize; 3]")]
pub struct WorldSize {
    /// Extent along x.
    pub width: usize,
    /// Extent along y (up).
    pub height: usize,
    /// Extent along z.
    pub depth: usize,
}

impl WorldSize {
    /// A size from its three extents.
    pub const fn new(width: usize, height: usize, depth: usize) -> Self {
        Self {
            width,
            height,
            depth,
        }
    }

    /// The number of cells, `W*H*D`.
    pub const fn num_cells(self) -> usize {
        self.width * self.height * self.depth
    }

    /// The extents as an array `[W, H, D]`, for per-axis loops.
    pub const fn axes(self) -> [usize; 3] {
        [self.width, self.height, self.depth]
    }

    /// Whether the (possibly negative) cell lies inside the grid.
    #[inline]
    pub fn contains(self, cell: Cell) -> bool {
        cell.x >= 0
            && cell.y >= 0
            && cell.z >= 0
            && (cell.x as usize) < self.width
            && (cell.y as usize) < self.height
            && (cell.z as usize) < self.depth
    }

    /// The flat index of an in-grid cell.
    ///
    /// The caller guarantees `self.contains(cell)`; this is checked in debug builds.
    #[inline]
    pub fn index(self, cell: Cell) -> CellIndex {
        debug_assert!(self.contains(cell), "{cell} outside {self}");
        CellIndex(
            ((cell.x as usize * self.height + cell.y as usize) * self.depth + cell.z as usize)
                as u32,
        )
    }

    /// The flat index of a cell, or `None` if it lies outside the grid.
    #[inline]
    pub fn checked_index(self, cell: Cell) -> Option<CellIndex> {
        self.contains(cell).then(|| self.index(cell))
    }

    /// The cell of a flat index (the inverse of [`WorldSize::index`]).
    #[inline]
    pub fn cell(self, index: CellIndex) -> Cell {
        let i = index.0 as usize;
        let hd = self.height * self.depth;
        Cell::new(
            (i / hd) as i32,
            ((i % hd) / self.depth) as i32,
            (i % self.depth) as i32,
        )
    }

    /// Every cell in C order (x outermost, z innermost).
    pub fn cells(self) -> impl Iterator<Item = Cell> {
        (0..self.num_cells() as u32).map(move |i| self.cell(CellIndex(i)))
    }
}

impl From<[usize; 3]> for WorldSize {
    fn from([w, h, d]: [usize; 3]) -> Self {
        Self::new(w, h, d)
    }
}

impl From<WorldSize> for [usize; 3] {
    fn from(size: WorldSize) -> Self {
        size.axes()
    }
}

impl fmt::Display for WorldSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.width, self.height, self.depth)
    }
}

/// An integer cell position `(x, y, z)`. It may lie outside the world (neighbours,
/// move targets); [`WorldSize::contains`] tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Cell {
    /// x coordinate.
    pub x: i32,
    /// y coordinate (up).
    pub y: i32,
    /// z coordinate.
    pub z: i32,
}

/// Offsets of a cell's six face neighbours: -x, +x, -y, +y, -z, +z.
pub const FACE_OFFSETS: [(i32, i32, i32); 6] = [
    (-1, 0, 0),
    (1, 0, 0),
    (0, -1, 0),
    (0, 1, 0),
    (0, 0, -1),
    (0, 0, 1),
];

impl Cell {
    /// A cell from its coordinates.
    pub const fn new(x: i32, y: i32, z: i32) -> Self {
        Self { x, y, z }
    }

    /// This cell moved by `(dx, dy, dz)`.
    #[inline]
    pub const fn offset(self, dx: i32, dy: i32, dz: i32) -> Self {
        Self::new(self.x + dx, self.y + dy, self.z + dz)
    }

    /// The six cells sharing a face with this one, in [`FACE_OFFSETS`] order.
    #[inline]
    pub fn face_neighbours(self) -> [Self; 6] {
        FACE_OFFSETS.map(|(dx, dy, dz)| self.offset(dx, dy, dz))
    }

    /// The cell directly above.
    #[inline]
    pub const fn above(self) -> Self {
        self.offset(0, 1, 0)
    }

    /// Coordinates as an array, for per-axis loops.
    #[inline]
    pub const fn to_array(self) -> [i32; 3] {
        [self.x, self.y, self.z]
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// The flat C-order index of a cell inside a world (`x*H*D + y*D + z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CellIndex(pub u32);

impl CellIndex {
    /// The index as a `usize`, for slicing grids.
    #[inline]
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

/// A player's position: the float coordinates of its **feet**. A player occupies the
/// feet cell `floor(pos)` and the head cell above it.
///
/// Positions are compared exactly: after teleporting, the reference produces values
/// such as `2.9999999999999996`, and parity requires keeping them bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "[f64; 3]", into = "[f64; 3]")]
pub struct PlayerPos {
    /// x coordinate of the feet (cell centre is `cell + 0.5`).
    pub x: f64,
    /// y coordinate of the feet (cell bottom is the integer).
    pub y: f64,
    /// z coordinate of the feet.
    pub z: f64,
}

impl PlayerPos {
    /// A position from its coordinates.
    pub const fn new(x: f64, y: f64, z: f64) -> Self {
        Self { x, y, z }
    }

    /// The position standing in the centre of `cell`'s floor.
    pub fn centred_in(cell: Cell) -> Self {
        Self::new(
            f64::from(cell.x) + 0.5,
            f64::from(cell.y),
            f64::from(cell.z) + 0.5,
        )
    }

    /// The feet cell, `floor` of each coordinate.
    #[inline]
    pub fn feet_cell(self) -> Cell {
        Cell::new(
            self.x.floor() as i32,
            self.y.floor() as i32,
            self.z.floor() as i32,
        )
    }
}

impl From<[f64; 3]> for PlayerPos {
    fn from([x, y, z]: [f64; 3]) -> Self {
        Self::new(x, y, z)
    }
}

impl From<PlayerPos> for [f64; 3] {
    fn from(p: PlayerPos) -> Self {
        [p.x, p.y, p.z]
    }
}

/// The index of a player in an episode (0-based, the order of the config's `players`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PlayerId(pub usize);

impl fmt::Display for PlayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "player {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips_in_c_order() {
        let size = WorldSize::new(11, 10, 10);
        for (i, cell) in size.cells().enumerate() {
            assert_eq!(size.index(cell).get(), i);
        }
        assert_eq!(size.index(Cell::new(3, 2, 4)).get(), 3 * 100 + 2 * 10 + 4);
        assert!(!size.contains(Cell::new(11, 0, 0)));
        assert!(!size.contains(Cell::new(0, -1, 0)));
    }
}
