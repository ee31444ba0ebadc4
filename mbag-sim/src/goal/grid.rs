//! Small dense-array helpers shared by the goal generators and transforms.
//!
//! Goal code works on [`Blocks`] (ids and states in C order over `(x, y, z)`) and on
//! boolean masks / label arrays of arbitrary shape; [`Grid`] is that generic shape.

use crate::{Blocks, WorldSize};

/// A dense C-order 3-D array of `T` with explicit dimensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid<T> {
    dims: [usize; 3],
    data: Vec<T>,
}

impl<T: Clone> Grid<T> {
    /// A grid of `dims` filled with `value`.
    pub fn filled(dims: [usize; 3], value: T) -> Self {
        Self {
            dims,
            data: vec![value; dims[0] * dims[1] * dims[2]],
        }
    }
}

impl<T: Copy> Grid<T> {
    /// A grid whose cell `(x, y, z)` is `f(x, y, z)`.
    pub fn from_fn(dims: [usize; 3], mut f: impl FnMut(usize, usize, usize) -> T) -> Self {
        let mut data = Vec::with_capacity(dims[0] * dims[1] * dims[2]);
        for x in 0..dims[0] {
            for y in 0..dims[1] {
                for z in 0..dims[2] {
                    data.push(f(x, y, z));
                }
            }
        }
        Self { dims, data }
    }

    /// The value at `(x, y, z)` (in bounds).
    #[inline]
    pub fn get(&self, x: usize, y: usize, z: usize) -> T {
        self.data[self.index(x, y, z)]
    }

    /// Sets the value at `(x, y, z)` (in bounds).
    #[inline]
    pub fn set(&mut self, x: usize, y: usize, z: usize, value: T) {
        let i = self.index(x, y, z);
        self.data[i] = value;
    }
}

impl<T> Grid<T> {
    /// The extents along x, y and z.
    #[inline]
    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// The flat C-order index of `(x, y, z)`.
    #[inline]
    pub fn index(&self, x: usize, y: usize, z: usize) -> usize {
        (x * self.dims[1] + y) * self.dims[2] + z
    }

    /// The C-order values.
    #[inline]
    pub fn data(&self) -> &[T] {
        &self.data
    }
}

/// The flat C-order index of `(x, y, z)` in a structure of `size`.
#[inline]
pub fn flat(size: WorldSize, x: usize, y: usize, z: usize) -> usize {
    (x * size.height + y) * size.depth + z
}

/// A structure of `size` with the given ids and all states 0.
pub fn from_ids(size: WorldSize, ids: Vec<u8>) -> Blocks {
    let states = vec![0; ids.len()];
    Blocks::from_raw(size, ids, states)
}

/// The fraction of non-air cells, computed like numpy's `mean` of a boolean array
/// (an exact count divided by the number of cells). An empty structure gives NaN,
/// as numpy's mean of an empty array does.
pub fn density(blocks: &Blocks) -> f64 {
    blocks.count_non_air() as f64 / blocks.ids().len() as f64
}

/// Copies the box `start .. start + size` out of `blocks`, ids and states.
///
/// The caller guarantees the box lies inside `blocks`.
pub fn sub_box(blocks: &Blocks, start: [usize; 3], size: WorldSize) -> Blocks {
    let src = blocks.size();
    let mut ids = Vec::with_capacity(size.num_cells());
    let mut states = Vec::with_capacity(size.num_cells());
    for x in 0..size.width {
        for y in 0..size.height {
            let row = flat(src, start[0] + x, start[1] + y, start[2]);
            ids.extend_from_slice(&blocks.ids()[row..row + size.depth]);
            states.extend_from_slice(&blocks.states()[row..row + size.depth]);
        }
    }
    Blocks::from_raw(size, ids, states)
}

/// Whether a structure of `inner` fits inside `outer` on every axis.
pub fn fits(inner: WorldSize, outer: WorldSize) -> bool {
    inner.width <= outer.width && inner.height <= outer.height && inner.depth <= outer.depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_box_copies_ids_and_states() {
        let size = WorldSize::new(3, 2, 2);
        let ids: Vec<u8> = (0..12).collect();
        let states: Vec<u8> = (100..112).collect();
        let blocks = Blocks::from_raw(size, ids, states);
        let part = sub_box(&blocks, [1, 1, 0], WorldSize::new(2, 1, 2));
        assert_eq!(part.ids(), &[6, 7, 10, 11]);
        assert_eq!(part.states(), &[106, 107, 110, 111]);
    }

    #[test]
    fn density_counts_non_air() {
        let blocks = from_ids(WorldSize::new(2, 1, 2), vec![0, 3, 0, 2]);
        assert_eq!(density(&blocks), 0.5);
    }
}
