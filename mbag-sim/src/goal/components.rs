//! Connected-component labelling with the numbering of `cc3d` (the reference's
//! `connected-components-3d` 3.12.3).
//!
//! cc3d numbers the components of a C-order array 1, 2, ... in the order in which
//! their first cell appears in a C-order scan; background is 0. The reference breaks
//! ties by label (`largest_cc`), so that numbering is part of the semantics. A flood
//! fill started from each unlabelled cell met in a C-order scan gives exactly it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::grid::Grid;

/// Which neighbours are connected: faces (6), faces and edges (18), or all 26.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(try_from = "u32", into = "u32")]
pub enum Connectivity {
    /// Neighbours sharing a face.
    #[default]
    Six,
    /// Neighbours sharing a face or an edge.
    Eighteen,
    /// Neighbours sharing a face, an edge or a corner.
    TwentySix,
}

/// A connectivity value other than 6, 18 or 26.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("connectivity must be 6, 18 or 26, not {0}")]
pub struct BadConnectivity(pub u32);

impl TryFrom<u32> for Connectivity {
    type Error = BadConnectivity;

    fn try_from(value: u32) -> Result<Self, Self::Error> {
        match value {
            6 => Ok(Self::Six),
            18 => Ok(Self::Eighteen),
            26 => Ok(Self::TwentySix),
            other => Err(BadConnectivity(other)),
        }
    }
}

impl From<Connectivity> for u32 {
    fn from(c: Connectivity) -> Self {
        match c {
            Connectivity::Six => 6,
            Connectivity::Eighteen => 18,
            Connectivity::TwentySix => 26,
        }
    }
}

impl Connectivity {
    /// The neighbour offsets of this connectivity.
    fn offsets(self) -> Vec<[isize; 3]> {
        let max_nonzero = match self {
            Self::Six => 1,
            Self::Eighteen => 2,
            Self::TwentySix => 3,
        };
        let mut offsets = Vec::new();
        for dx in -1..=1isize {
            for dy in -1..=1isize {
                for dz in -1..=1isize {
                    let nonzero = [dx, dy, dz].iter().filter(|&&d| d != 0).count();
                    if nonzero >= 1 && nonzero <= max_nonzero {
                        offsets.push([dx, dy, dz]);
                    }
                }
            }
        }
        offsets
    }
}

/// Labels the `true` cells of `mask` in cc3d's numbering; returns the labels and the
/// number of components.
pub fn label(mask: &Grid<bool>, connectivity: Connectivity) -> (Grid<u32>, u32) {
    let dims = mask.dims();
    let offsets = connectivity.offsets();
    let mut labels = Grid::filled(dims, 0u32);
    let mut next = 0u32;
    let mut queue = VecDeque::new();
    for x in 0..dims[0] {
        for y in 0..dims[1] {
            for z in 0..dims[2] {
                if !mask.get(x, y, z) || labels.get(x, y, z) != 0 {
                    continue;
                }
                next += 1;
                labels.set(x, y, z, next);
                queue.push_back([x, y, z]);
                while let Some(cell) = queue.pop_front() {
                    for off in &offsets {
                        let Some(n) = neighbour(cell, *off, dims) else {
                            continue;
                        };
                        if mask.get(n[0], n[1], n[2]) && labels.get(n[0], n[1], n[2]) == 0 {
                            labels.set(n[0], n[1], n[2], next);
                            queue.push_back(n);
                        }
                    }
                }
            }
        }
    }
    (labels, next)
}

fn neighbour(cell: [usize; 3], off: [isize; 3], dims: [usize; 3]) -> Option<[usize; 3]> {
    let mut out = [0; 3];
    for a in 0..3 {
        let v = cell[a].checked_add_signed(off[a])?;
        if v >= dims[a] {
            return None;
        }
        out[a] = v;
    }
    Some(out)
}

/// The number of 4-connected components of the `true` cells of a 2-D mask
/// (`mask[i][j]`), which is what the reference reads off `cc3d`'s maximum label.
pub fn count_components_2d<const N: usize>(mask: &[[bool; N]; N]) -> usize {
    // A fixed stack: this runs for every border cell of every thinning sweep, where
    // a heap allocation per component dominated goal generation.
    const MAX_CELLS: usize = 64;
    assert!(
        N * N <= MAX_CELLS,
        "count_components_2d handles grids up to 8x8"
    );
    let mut seen = [[false; N]; N];
    let mut count = 0;
    let mut stack = [(0usize, 0usize); MAX_CELLS];
    for i in 0..N {
        for j in 0..N {
            if !mask[i][j] || seen[i][j] {
                continue;
            }
            count += 1;
            seen[i][j] = true;
            stack[0] = (i, j);
            let mut top = 1;
            while top > 0 {
                top -= 1;
                let (a, b) = stack[top];
                let candidates = [
                    (a.wrapping_sub(1), b),
                    (a + 1, b),
                    (a, b.wrapping_sub(1)),
                    (a, b + 1),
                ];
                for (p, q) in candidates {
                    if p < N && q < N && mask[p][q] && !seen[p][q] {
                        seen[p][q] = true;
                        stack[top] = (p, q);
                        top += 1;
                    }
                }
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_follows_c_order_first_appearance() {
        // Same check as cc3d on a C-order array: (0,0,2) -> 1, (0,2,0) -> 2, (2,0,0) -> 3.
        let mut mask = Grid::filled([3, 3, 3], false);
        mask.set(2, 0, 0, true);
        mask.set(0, 0, 2, true);
        mask.set(0, 2, 0, true);
        let (labels, n) = label(&mask, Connectivity::Six);
        assert_eq!(n, 3);
        assert_eq!(labels.get(0, 0, 2), 1);
        assert_eq!(labels.get(0, 2, 0), 2);
        assert_eq!(labels.get(2, 0, 0), 3);
    }

    #[test]
    fn connectivity_counts_edges_and_corners() {
        let mut edge = Grid::filled([2, 2, 1], false);
        edge.set(0, 0, 0, true);
        edge.set(1, 1, 0, true);
        assert_eq!(label(&edge, Connectivity::Six).1, 2);
        assert_eq!(label(&edge, Connectivity::Eighteen).1, 1);
        let mut corner = Grid::filled([2, 2, 2], false);
        corner.set(0, 0, 0, true);
        corner.set(1, 1, 1, true);
        assert_eq!(label(&corner, Connectivity::Eighteen).1, 2);
        assert_eq!(label(&corner, Connectivity::TwentySix).1, 1);
    }

    #[test]
    fn counts_2d_components() {
        let mask = [
            [true, false, true],
            [false, false, true],
            [true, true, false],
        ];
        assert_eq!(count_components_2d(&mask), 3);
        assert_eq!(count_components_2d(&[[false; 3]; 3]), 0);
    }

    #[test]
    fn rejects_bad_connectivity() {
        assert_eq!(Connectivity::try_from(8), Err(BadConnectivity(8)));
        assert_eq!(Connectivity::try_from(18), Ok(Connectivity::Eighteen));
    }
}
