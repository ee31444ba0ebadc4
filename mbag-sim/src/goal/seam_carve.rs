//! `seam_carve`: shrinks a structure by deleting, one at a time, the axis-aligned
//! slice whose removal costs least (ENV_SPEC 12.2).
//!
//! The cost of a slice is `density_coefficient * density(slice) +
//! position_coefficient * (rms_after - rms_before)`, where `rms` is the root mean
//! square distance between each remaining cell's original relative position (a
//! `linspace(0, 1, n)` per axis, fixed at the start) and a fresh uniform grid over the
//! current size. Ties go to the first axis/index, so near-equal costs must round like
//! the reference's numpy: the mean is numpy's float64 sum over the `(x, y, z, 3)`
//! array in C order (pairwise summation in blocks of 8192 elements, the blocks added
//! in sequence) divided by the element count.

use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::grid::flat;
use super::{GoalError, GoalGenerator};
use crate::{Blocks, WorldSize, numpy};

/// Configuration of [`SeamCarve`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SeamCarveConfig {
    /// Weight of the position-distortion term.
    pub position_coefficient: f64,
    /// Weight of the slice-density term.
    pub density_coefficient: f64,
    /// The size asked of the inner generator.
    pub max_original_size: WorldSize,
}

impl Default for SeamCarveConfig {
    fn default() -> Self {
        Self {
            position_coefficient: 1.0,
            density_coefficient: 1.0,
            max_original_size: WorldSize::new(100, 100, 100),
        }
    }
}

/// `seam_carve`: removes low-cost slices until the structure fits.
#[derive(Debug)]
pub struct SeamCarve {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: SeamCarveConfig,
}

impl GoalGenerator for SeamCarve {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let goal = self.inner.generate(self.config.max_original_size, rng)?;
        seam_carve(goal, size, &self.config)
    }
}

/// numpy's `linspace(0, 1, n)`: `i * (1 / (n - 1))`, the last value exactly 1.
fn linspace(n: usize) -> Vec<f64> {
    if n <= 1 {
        return vec![0.0; n];
    }
    let step = 1.0 / (n - 1) as f64;
    let mut v: Vec<f64> = (0..n).map(|i| i as f64 * step + 0.0).collect();
    v[n - 1] = 1.0;
    v
}

/// The RMS distance between original positions `orig` (per axis) and a uniform grid
/// of the same shape, as the reference computes it with numpy.
fn position_rms(orig: &[Vec<f64>; 3], buffer: &mut Vec<f64>) -> f64 {
    let squares: Vec<Vec<f64>> = orig
        .iter()
        .map(|o| {
            let lin = linspace(o.len());
            o.iter().zip(&lin).map(|(a, b)| (a - b) * (a - b)).collect()
        })
        .collect();
    buffer.clear();
    for &sx in &squares[0] {
        for &sy in &squares[1] {
            for &sz in &squares[2] {
                buffer.extend_from_slice(&[sx, sy, sz]);
            }
        }
    }
    (numpy::sum(buffer) / buffer.len() as f64).sqrt()
}

fn slice_density(goal: &Blocks, axis: usize, index: usize) -> f64 {
    let size = goal.size();
    let dims = size.axes();
    let mut count = 0usize;
    let mut cells = 0usize;
    for x in 0..dims[0] {
        for y in 0..dims[1] {
            for z in 0..dims[2] {
                if [x, y, z][axis] == index {
                    cells += 1;
                    count += usize::from(goal.ids()[flat(size, x, y, z)] != 0);
                }
            }
        }
    }
    count as f64 / cells as f64
}

fn delete_slice(goal: &Blocks, axis: usize, index: usize) -> Blocks {
    let size = goal.size();
    let dims = size.axes();
    let mut new_dims = dims;
    new_dims[axis] -= 1;
    let mut ids = Vec::with_capacity(new_dims.iter().product());
    let mut states = Vec::with_capacity(ids.capacity());
    for x in 0..dims[0] {
        for y in 0..dims[1] {
            for z in 0..dims[2] {
                if [x, y, z][axis] != index {
                    let i = flat(size, x, y, z);
                    ids.push(goal.ids()[i]);
                    states.push(goal.states()[i]);
                }
            }
        }
    }
    Blocks::from_raw(WorldSize::from(new_dims), ids, states)
}

/// Deletes the cheapest slices of `goal` (ids and states) until it fits `size`.
///
/// A target with an empty extent is refused: the reference's costs become NaN there
/// and it ends up deleting slices of the wrong axis until it fails.
pub fn seam_carve(
    mut goal: Blocks,
    size: WorldSize,
    config: &SeamCarveConfig,
) -> Result<Blocks, GoalError> {
    if size.axes().contains(&0) && !super::grid::fits(goal.size(), size) {
        return Err(GoalError::EmptyTarget {
            what: "seam_carve",
            size,
        });
    }
    let dims = goal.size().axes();
    let mut orig = [linspace(dims[0]), linspace(dims[1]), linspace(dims[2])];
    let target = size.axes();
    let mut buffer = Vec::new();
    loop {
        let current = goal.size().axes();
        let too_big: Vec<usize> = (0..3).filter(|&a| current[a] > target[a]).collect();
        if too_big.is_empty() {
            return Ok(goal);
        }
        let before = position_rms(&orig, &mut buffer);
        let mut best = (0, 0);
        let mut best_cost = f64::INFINITY;
        for &axis in &too_big {
            for index in 0..current[axis] {
                let mut sliced = orig.clone();
                sliced[axis].remove(index);
                let after = position_rms(&sliced, &mut buffer);
                let cost = config.density_coefficient * slice_density(&goal, axis, index)
                    + config.position_coefficient * (after - before);
                if cost < best_cost {
                    best_cost = cost;
                    best = (axis, index);
                }
            }
        }
        goal = delete_slice(&goal, best.0, best.1);
        orig[best.0].remove(best.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;

    #[test]
    fn linspace_matches_numpy() {
        assert_eq!(linspace(5), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(linspace(1), vec![0.0]);
    }

    #[test]
    fn removes_empty_slices_first() {
        // 1x1x4 line [stone, air, stone, stone] carved to depth 3: the air slice goes.
        let g = from_ids(WorldSize::new(1, 1, 4), vec![7, 0, 7, 7]);
        let out = seam_carve(g, WorldSize::new(1, 1, 3), &SeamCarveConfig::default()).unwrap();
        assert_eq!(out.ids(), &[7, 7, 7]);
        let g = from_ids(WorldSize::new(1, 1, 2), vec![7, 0]);
        assert!(seam_carve(g, WorldSize::new(1, 1, 0), &SeamCarveConfig::default()).is_err());
        // Already small enough: unchanged.
        let g = from_ids(WorldSize::new(1, 1, 2), vec![7, 0]);
        assert_eq!(
            seam_carve(
                g.clone(),
                WorldSize::new(2, 2, 2),
                &SeamCarveConfig::default()
            )
            .unwrap(),
            g
        );
    }
}
