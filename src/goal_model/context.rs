//! What the context model reads around a cell: the blocks at fixed offsets in
//! the current world, packed into one key per level of detail.
//!
//! Houses look the same turned a quarter or mirrored, so the horizontal part of
//! a context is read in all eight orientations of the square and the smallest
//! packing is kept: a wall corner teaches the same thing whichever way it faces,
//! and the counts behind each key are eight times denser than they would be.
//!
//! The levels, from the coarsest (always known) to the finest:
//!
//! | level | reads |
//! |---|---|
//! | 0 | the cell's block and its height |
//! | 1 | + the blocks above and below, and where the cell lies against what is built |
//! | 2 | + the blocks at the cell's mirror images across the middle of what is built (houses are often symmetric) |
//! | 3 | + the block two below and the four horizontal neighbours |
//! | 4 | + the neighbours two away and the horizontal neighbours of the block below |
//! | 5 | + the four diagonal neighbours and the horizontal neighbours of the block above |

use crate::sim::block::NUM_BLOCKS;
use crate::sim::coords::{Cell, WorldSize};

/// The code of a cell outside the world.
pub const OUTSIDE: u8 = NUM_BLOCKS as u8;

/// Levels of detail, coarsest first.
pub const LEVELS: usize = 6;

/// The keys of a cell, one per level, coarsest first.
pub type Keys = [u128; LEVELS];

/// The horizontal unit steps in turning order: +x, +z, -x, -z.
const SIDES: [(i32, i32); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];
/// The diagonal steps, the `j`th between side `j` and side `j + 1`.
const DIAGONALS: [(i32, i32); 4] = [(1, 1), (-1, 1), (-1, -1), (1, -1)];

/// A world's blocks as the model reads them, with the box of what has been
/// built above the ground.
#[derive(Debug, Clone, Copy)]
pub struct WorldView<'a> {
    size: WorldSize,
    ids: &'a [u8],
    built: Option<BuiltBox>,
}

/// The horizontal extent and top of the blocks above the ground layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BuiltBox {
    min_x: i32,
    max_x: i32,
    min_z: i32,
    max_z: i32,
    top: i32,
}

impl<'a> WorldView<'a> {
    /// A view of `ids` (C order, `size.num_cells()` of them).
    ///
    /// # Panics
    /// If `ids` is not one id per cell of `size`.
    pub fn new(size: WorldSize, ids: &'a [u8]) -> Self {
        assert_eq!(ids.len(), size.num_cells(), "one block id per cell");
        let mut built: Option<BuiltBox> = None;
        for cell in size.cells() {
            // The two ground layers (bedrock, dirt) are there before anyone builds.
            if cell.y < 2 || ids[size.index(cell).0 as usize] == 0 {
                continue;
            }
            let b = built.get_or_insert(BuiltBox {
                min_x: cell.x,
                max_x: cell.x,
                min_z: cell.z,
                max_z: cell.z,
                top: cell.y,
            });
            b.min_x = b.min_x.min(cell.x);
            b.max_x = b.max_x.max(cell.x);
            b.min_z = b.min_z.min(cell.z);
            b.max_z = b.max_z.max(cell.z);
            b.top = b.top.max(cell.y);
        }
        Self { size, ids, built }
    }

    /// The world's size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The block at `(x, y, z)`, or [`OUTSIDE`].
    #[inline]
    fn at(&self, x: i32, y: i32, z: i32) -> u8 {
        let cell = Cell::new(x, y, z);
        match self.size.checked_index(cell) {
            Some(i) => self.ids[i.0 as usize],
            None => OUTSIDE,
        }
    }

    /// Where `cell` lies against the built box: 0 when nothing is built; else
    /// outside, on the edge or inside the box horizontally (1-3), times three
    /// heights (at most the top, one above it, higher), all in one code below 16.
    fn placement(&self, cell: Cell) -> u8 {
        let Some(b) = self.built else {
            return 0;
        };
        let horizontal = if cell.x < b.min_x
            || cell.x > b.max_x
            || cell.z < b.min_z
            || cell.z > b.max_z
        {
            0
        } else if cell.x == b.min_x || cell.x == b.max_x || cell.z == b.min_z || cell.z == b.max_z {
            1
        } else {
            2
        };
        let height = (cell.y - b.top).clamp(0, 2) as u8;
        1 + horizontal * 3 + height
    }

    /// The blocks at `cell`'s mirror images across the built box's middle in x
    /// and in z, smaller first (a quarter turn swaps the axes); [`OUTSIDE`]
    /// when nothing is built or the cell lies outside the box.
    fn mirrors(&self, cell: Cell) -> [u8; 2] {
        let Some(b) = self.built else {
            return [OUTSIDE; 2];
        };
        if cell.x < b.min_x || cell.x > b.max_x || cell.z < b.min_z || cell.z > b.max_z {
            return [OUTSIDE; 2];
        }
        let x = self.at(b.min_x + b.max_x - cell.x, cell.y, cell.z);
        let z = self.at(cell.x, cell.y, b.min_z + b.max_z - cell.z);
        [x.min(z), x.max(z)]
    }

    /// The keys of `cell`, coarsest level first.
    pub fn keys(&self, cell: Cell) -> Keys {
        let Cell { x, y, z } = cell;
        let centre = self.at(x, y, z);
        let below = self.at(x, y - 1, z);
        let above = self.at(x, y + 1, z);
        let below2 = self.at(x, y - 2, z);
        let ring = |dy: i32, reach: i32| -> [u8; 4] {
            SIDES.map(|(dx, dz)| self.at(x + dx * reach, y + dy, z + dz * reach))
        };
        let sides = ring(0, 1);
        let far = ring(0, 2);
        let sides_below = ring(-1, 1);
        let sides_above = ring(1, 1);
        let diagonals = DIAGONALS.map(|(dx, dz)| self.at(x + dx, y, z + dz));

        let mut packed = Packed::default();
        packed.push(centre);
        packed.push(y.clamp(0, 15) as u8);
        let level0 = packed.finish(0);
        packed.push(below);
        packed.push(above);
        packed.push(self.placement(cell));
        let level1 = packed.finish(1);
        for code in self.mirrors(cell) {
            packed.push(code);
        }
        let level2 = packed.finish(2);
        packed.push(below2);
        let level3 = packed.finish_with(3, &[Group::Sides(sides)]);
        let level4 = packed.finish_with(
            4,
            &[
                Group::Sides(sides),
                Group::Sides(far),
                Group::Sides(sides_below),
            ],
        );
        let level5 = packed.finish_with(
            5,
            &[
                Group::Sides(sides),
                Group::Sides(far),
                Group::Sides(sides_below),
                Group::Sides(sides_above),
                Group::Diagonals(diagonals),
            ],
        );
        [level0, level1, level2, level3, level4, level5]
    }
}

/// Four horizontal readings, in the turning order of [`SIDES`] or
/// [`DIAGONALS`].
#[derive(Clone, Copy)]
enum Group {
    Sides([u8; 4]),
    Diagonals([u8; 4]),
}

/// Four-bit codes packed into a key, the level in the top bits.
#[derive(Default)]
struct Packed {
    bits: u128,
    used: u32,
}

impl Packed {
    fn push(&mut self, code: u8) {
        debug_assert!(code < 16);
        self.bits |= u128::from(code) << self.used;
        self.used += 4;
    }

    fn finish(&self, level: u8) -> u128 {
        self.bits | (u128::from(level) << 124)
    }

    /// The key with `groups` appended in the orientation that packs smallest.
    fn finish_with(&self, level: u8, groups: &[Group]) -> u128 {
        let mut best = u128::MAX;
        for turn in 0..4 {
            for mirrored in [false, true] {
                let mut bits = self.bits;
                let mut used = self.used;
                for group in groups {
                    for i in 0..4 {
                        let code = match group {
                            Group::Sides(v) => v[side_after(turn, mirrored, i)],
                            Group::Diagonals(v) => v[diagonal_after(turn, mirrored, i)],
                        };
                        bits |= u128::from(code) << used;
                        used += 4;
                    }
                }
                debug_assert!(used <= 124, "a key overflows its bits");
                best = best.min(bits);
            }
        }
        best | (u128::from(level) << 124)
    }
}

/// Which side is read `i`th once the square is turned `turn` quarters (and
/// mirrored).
fn side_after(turn: usize, mirrored: bool, i: usize) -> usize {
    if mirrored {
        (turn + 4 - i) % 4
    } else {
        (turn + i) % 4
    }
}

/// Which diagonal is read `i`th: the one between the sides read `i`th and
/// `i + 1`th.
fn diagonal_after(turn: usize, mirrored: bool, i: usize) -> usize {
    if mirrored {
        // Sides turn + 4 - i and turn + 3 - i: the diagonal after the second.
        (turn + 7 - i) % 4
    } else {
        (turn + i) % 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::block::{BlockId, Blocks};

    /// A 7x5x7 world with `blocks` placed over the initial ground.
    fn world(blocks: &[(i32, i32, i32, BlockId)]) -> Blocks {
        let mut w = Blocks::initial_world(WorldSize::new(7, 5, 7));
        for &(x, y, z, b) in blocks {
            w.set(Cell::new(x, y, z), b);
        }
        w
    }

    #[test]
    fn turned_and_mirrored_worlds_give_the_same_keys() {
        // An L of planks and a log: its turned copy (x, z) -> (z, 6 - x) and
        // its mirror (x, z) -> (6 - x, z) read the same at matching cells.
        let shape = [
            (3, 2, 3, BlockId::PLANKS),
            (4, 2, 3, BlockId::PLANKS),
            (5, 2, 3, BlockId::LOG),
            (3, 2, 4, BlockId::GLASS),
            (4, 3, 3, BlockId::STONE),
        ];
        let turn = |(x, y, z, b): (i32, i32, i32, BlockId)| (z, y, 6 - x, b);
        let mirror = |(x, y, z, b): (i32, i32, i32, BlockId)| (6 - x, y, z, b);
        let a = world(&shape);
        let t = world(&shape.map(turn));
        let m = world(&shape.map(mirror));
        let (va, vt, vm) = (
            WorldView::new(a.size(), a.ids()),
            WorldView::new(t.size(), t.ids()),
            WorldView::new(m.size(), m.ids()),
        );
        for x in 0..7 {
            for y in 0..5 {
                for z in 0..7 {
                    let keys = va.keys(Cell::new(x, y, z));
                    let (tx, _, tz, _) = turn((x, y, z, BlockId::AIR));
                    let (mx, _, mz, _) = mirror((x, y, z, BlockId::AIR));
                    assert_eq!(keys, vt.keys(Cell::new(tx, y, tz)), "turned at {x},{y},{z}");
                    assert_eq!(
                        keys,
                        vm.keys(Cell::new(mx, y, mz)),
                        "mirrored at {x},{y},{z}"
                    );
                }
            }
        }
    }

    #[test]
    fn keys_tell_levels_and_neighbourhoods_apart() {
        let a = world(&[(3, 2, 3, BlockId::PLANKS)]);
        let b = world(&[(3, 2, 3, BlockId::LOG)]);
        let (va, vb) = (
            WorldView::new(a.size(), a.ids()),
            WorldView::new(b.size(), b.ids()),
        );
        let next = Cell::new(4, 2, 3);
        let (ka, kb) = (va.keys(next), vb.keys(next));
        // Level 0 reads only the cell itself and its height: the same.
        assert_eq!(ka[0], kb[0]);
        // From level 3 on the neighbour's block is read.
        assert_ne!(ka[3], kb[3]);
        let mut all: Vec<u128> = ka.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), LEVELS, "each level keys apart");
        // A cell at the world's edge reads outside there.
        let edge = va.keys(Cell::new(0, 2, 3));
        assert_ne!(edge[3], va.keys(Cell::new(1, 2, 1))[3]);
    }
}
