//! `largest_cc`: keep the largest connected component, counting everything that
//! touches the ground as one component.

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::goal::components::{Connectivity, label};
use crate::goal::grid::{Grid, flat};
use crate::goal::{GoalError, GoalGenerator};
use crate::{Blocks, WorldSize};

/// A `connectivity` configuration (default 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectivityConfig {
    /// 6, 18 or 26.
    pub connectivity: Connectivity,
}

/// `largest_cc`: cells outside the largest component become air.
#[derive(Debug)]
pub struct LargestCc {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: ConnectivityConfig,
}

/// Keeps only the largest component of the non-air cells, labelled together with a
/// virtual solid layer below y = 0 (and an empty one above the top). Sizes count
/// cells inside the structure only; ties go to the lowest cc3d label. Only ids change.
pub fn largest_cc(goal: &mut Blocks, connectivity: Connectivity) {
    let size = goal.size();
    let [w, h, d] = size.axes();
    let mask = Grid::from_fn([w, h + 2, d], |x, y, z| {
        y == 0 || (y <= h && goal.ids()[flat(size, x, y - 1, z)] != 0)
    });
    let (labels, count) = label(&mask, connectivity);
    let mut counts = vec![0usize; count as usize + 1];
    for x in 0..w {
        for y in 1..=h {
            for z in 0..d {
                let l = labels.get(x, y, z) as usize;
                if l != 0 {
                    counts[l] += 1;
                }
            }
        }
    }
    // numpy argmax over [0, count_1, count_2, ...]: the first maximum.
    let mut keep = 0;
    for (l, &c) in counts.iter().enumerate() {
        if c > counts[keep] {
            keep = l;
        }
    }
    for x in 0..w {
        for y in 0..h {
            for z in 0..d {
                if labels.get(x, y + 1, z) as usize != keep {
                    goal.ids_mut()[flat(size, x, y, z)] = 0;
                }
            }
        }
    }
}

impl GoalGenerator for LargestCc {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mut goal = self.inner.generate(size, rng)?;
        largest_cc(&mut goal, self.config.connectivity);
        Ok(goal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;

    #[test]
    fn grounded_cells_form_one_component() {
        // 3x3x1: two separate grounded columns (x=0 and x=2) and a floating block at
        // (1, 2). The columns count together (3 cells) against the floater (1 cell).
        let size = WorldSize::new(3, 3, 1);
        let mut ids = vec![0; 9];
        ids[flat(size, 0, 0, 0)] = 3;
        ids[flat(size, 0, 1, 0)] = 3;
        ids[flat(size, 2, 0, 0)] = 3;
        ids[flat(size, 1, 2, 0)] = 5;
        let mut goal = from_ids(size, ids);
        largest_cc(&mut goal, Connectivity::Six);
        assert_eq!(goal.count_non_air(), 3);
        assert_eq!(goal.ids()[flat(size, 1, 2, 0)], 0);
        // With 18-connectivity the floater touches (0, 1) diagonally and stays.
        let mut ids = vec![0; 9];
        ids[flat(size, 0, 1, 0)] = 3;
        ids[flat(size, 0, 0, 0)] = 3;
        ids[flat(size, 1, 2, 0)] = 5;
        let mut goal = from_ids(size, ids);
        largest_cc(&mut goal, Connectivity::Eighteen);
        assert_eq!(goal.count_non_air(), 3);
    }

    #[test]
    fn larger_floating_component_wins_and_ties_go_to_lower_label() {
        // 1x5x3: a grounded cell at (0,0,0); floating pairs at y=2..3, z=2 and y=4, z=0..1.
        let size = WorldSize::new(1, 5, 3);
        let mut ids = vec![0; 15];
        ids[flat(size, 0, 0, 0)] = 3;
        ids[flat(size, 0, 2, 2)] = 4;
        ids[flat(size, 0, 3, 2)] = 4;
        ids[flat(size, 0, 4, 0)] = 6;
        ids[flat(size, 0, 4, 1)] = 6;
        let mut goal = from_ids(size, ids);
        largest_cc(&mut goal, Connectivity::Six);
        // Both floaters have 2 cells; the one met first in C order (y=2) wins.
        assert_eq!(goal.count_non_air(), 2);
        assert_eq!(goal.ids()[flat(size, 0, 2, 2)], 4);
    }
}
