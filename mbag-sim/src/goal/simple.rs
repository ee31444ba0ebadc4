//! The fixed and random generators: `basic`, `simple_overhang`, `tutorial`, `random`
//! and `set_goal` (ENV_SPEC 12.1).

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use super::components::{Connectivity, label};
use super::grid::{Grid, fits, flat};
use super::{GoalError, GoalGenerator};
use crate::{BlockId, Blocks, WorldSize};

fn fill_where(blocks: &mut Blocks, id: BlockId, mut pick: impl FnMut(usize, usize, usize) -> bool) {
    let size = blocks.size();
    for x in 0..size.width {
        for y in 0..size.height {
            for z in 0..size.depth {
                if pick(x, y, z) {
                    blocks.ids_mut()[flat(size, x, y, z)] = id.0;
                }
            }
        }
    }
}

/// `basic`: layers y = 0 and 1 cobblestone, air above; exactly the requested size.
#[derive(Debug, Clone, Default)]
pub struct Basic;

impl GoalGenerator for Basic {
    fn generate(&mut self, size: WorldSize, _rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mut goal = Blocks::air(size);
        fill_where(&mut goal, BlockId::COBBLESTONE, |_, y, _| y < 2);
        Ok(goal)
    }
}

/// `simple_overhang`: a dirt floor, and at z = D/2 a cobblestone column at x = 0, a
/// cobblestone row at y = H-2 and one more cobblestone at (W-1, H-3).
#[derive(Debug, Clone, Default)]
pub struct SimpleOverhang;

impl GoalGenerator for SimpleOverhang {
    fn generate(&mut self, size: WorldSize, _rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let [w, h, d] = size.axes();
        if h < 3 || w == 0 || d == 0 {
            return Err(GoalError::SizeTooSmall {
                what: "simple_overhang",
                size,
                reason: "needs height >= 3 and non-empty width and depth",
            });
        }
        let mid = d / 2;
        let mut goal = Blocks::air(size);
        fill_where(&mut goal, BlockId::DIRT, |_, y, _| y == 0);
        fill_where(&mut goal, BlockId::COBBLESTONE, |x, y, z| {
            z == mid && (x == 0 || y == h - 2 || (x == w - 1 && y == h - 3))
        });
        Ok(goal)
    }
}

/// `tutorial`: a small house filling the requested size (height >= 4): stone floor,
/// planks walls on z = 0, z = D-1 and x = 0 with glass above them, log corner posts
/// and a cobblestone roof at y = 3. The x = W-1 side is open between its corners.
#[derive(Debug, Clone, Default)]
pub struct Tutorial;

impl GoalGenerator for Tutorial {
    fn generate(&mut self, size: WorldSize, _rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let [w, h, d] = size.axes();
        if h < 4 || w == 0 || d == 0 {
            return Err(GoalError::SizeTooSmall {
                what: "tutorial",
                size,
                reason: "needs height >= 4 and non-empty width and depth",
            });
        }
        let mut goal = Blocks::air(size);
        // The wall cells of layers 1 and 2: the z = 0 and z = D-1 rows without their
        // ends, and the x = 0 row without its ends. Corners get logs afterwards.
        let wall = |x: usize, z: usize| {
            ((z == 0 || z == d - 1) && x >= 1 && x + 1 < w) || (x == 0 && z >= 1 && z + 1 < d)
        };
        let corner = |x: usize, z: usize| (x == 0 || x == w - 1) && (z == 0 || z == d - 1);
        fill_where(&mut goal, BlockId::STONE, |_, y, _| y == 0);
        fill_where(&mut goal, BlockId::PLANKS, |x, y, z| y == 1 && wall(x, z));
        fill_where(&mut goal, BlockId::LOG, |x, y, z| {
            (y == 1 || y == 2) && corner(x, z)
        });
        fill_where(&mut goal, BlockId::GLASS, |x, y, z| y == 2 && wall(x, z));
        fill_where(&mut goal, BlockId::COBBLESTONE, |_, y, _| y == 3);
        Ok(goal)
    }
}

/// Configuration of [`RandomGoal`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomConfig {
    /// Probability that a cell is filled before the connectivity pruning.
    pub filled_prop: f64,
}

impl Default for RandomConfig {
    fn default() -> Self {
        Self { filled_prop: 0.6 }
    }
}

/// `random`: each cell filled with probability `filled_prop`; only the 6-connected
/// components touching layer y = 0 are kept, each kept cell a uniform id in 2..=9.
#[derive(Debug, Clone, Default)]
pub struct RandomGoal {
    /// Its configuration.
    pub config: RandomConfig,
}

impl GoalGenerator for RandomGoal {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mask = Grid::from_fn(size.axes(), |_, _, _| {
            rng.random::<f64>() < self.config.filled_prop
        });
        let mut goal = Blocks::air(size);
        // An id is drawn for each kept cell only, in order.
        for (i, keep) in grounded(&mask).into_iter().enumerate() {
            if keep {
                goal.ids_mut()[i] = rng.random_range(2..=9);
            }
        }
        Ok(goal)
    }
}

/// Which filled cells of `mask` (C order) are 6-connected to layer y = 0.
fn grounded(mask: &Grid<bool>) -> Vec<bool> {
    let dims = mask.dims();
    let (labels, count) = label(mask, Connectivity::Six);
    let mut touches_ground = vec![false; count as usize + 1];
    for x in 0..dims[0] {
        for z in 0..dims[2] {
            touches_ground[labels.get(x, 0, z) as usize] = true;
        }
    }
    // Label 0 is the empty cells.
    touches_ground[0] = false;
    labels
        .data()
        .iter()
        .map(|&l| touches_ground[l as usize])
        .collect()
}

/// `random`'s goal from draws made elsewhere, as the reference makes them with
/// numpy: `filled[i]` says whether cell `i` (C order over x, y, z) is filled
/// before the pruning and `ids[i]` is its block id, drawn for every cell. The
/// Python package draws them from numpy's global generator, so that a seeded
/// `numpy.random` gives the reference's goal.
///
/// # Panics
/// If `filled` or `ids` does not have a value per cell of `size`.
pub fn random_goal_from_draws(size: WorldSize, filled: &[bool], ids: &[u8]) -> Blocks {
    let cells = size.num_cells();
    assert!(
        filled.len() == cells && ids.len() == cells,
        "random_goal_from_draws: {} filled flags and {} ids for {cells} cells",
        filled.len(),
        ids.len()
    );
    let mask = Grid::from_fn(size.axes(), |x, y, z| filled[flat(size, x, y, z)]);
    let mut goal = Blocks::air(size);
    for (i, keep) in grounded(&mask).into_iter().enumerate() {
        if keep {
            goal.ids_mut()[i] = ids[i];
        }
    }
    goal
}

/// `set_goal`: a uniformly random one of a fixed list of structures, among those that
/// fit the requested size.
#[derive(Debug, Clone)]
pub struct SetGoal {
    /// The structures to choose from.
    pub goals: Vec<Blocks>,
}

impl GoalGenerator for SetGoal {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        // Choosing uniformly among the fitting goals has the distribution of the
        // reference's "choose again until one fits", without its endless loop.
        let fitting: Vec<&Blocks> = self.goals.iter().filter(|g| fits(g.size(), size)).collect();
        if fitting.is_empty() {
            return Err(GoalError::NothingFits {
                what: "set_goal",
                count: self.goals.len(),
                size,
            });
        }
        Ok(fitting[rng.random_range(0..fitting.len())].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn rng() -> StdRng {
        StdRng::seed_from_u64(7)
    }

    #[test]
    fn random_from_draws_keeps_what_stands_on_the_ground_with_the_drawn_ids() {
        // A 3x3x1 column: (0, 0), (0, 1) and the floating (2, 2) are filled.
        let size = WorldSize::new(3, 3, 1);
        let filled_at = |x: usize, y: usize| [(0, 0), (0, 1), (2, 2)].contains(&(x, y));
        let filled: Vec<bool> = (0..9).map(|i| filled_at(i / 3, i % 3)).collect();
        let ids: Vec<u8> = (0..9).map(|i| 2 + i as u8 % 8).collect();
        let goal = random_goal_from_draws(size, &filled, &ids);
        let kept: Vec<(usize, u8)> = goal
            .ids()
            .iter()
            .enumerate()
            .filter(|(_, id)| **id != 0)
            .map(|(i, id)| (i, *id))
            .collect();
        assert_eq!(kept, vec![(0, ids[0]), (1, ids[1])]);
    }

    #[test]
    fn basic_has_two_cobblestone_layers() {
        let goal = Basic.generate(WorldSize::new(3, 4, 2), &mut rng()).unwrap();
        assert_eq!(goal.size(), WorldSize::new(3, 4, 2));
        assert_eq!(goal.count_non_air(), 12);
        assert_eq!(goal.get(Cell::new(2, 1, 1)), BlockId::COBBLESTONE);
        assert_eq!(goal.get(Cell::new(2, 2, 1)), BlockId::AIR);
    }

    #[test]
    fn simple_overhang_layout() {
        let goal = SimpleOverhang
            .generate(WorldSize::new(4, 5, 4), &mut rng())
            .unwrap();
        assert_eq!(goal.get(Cell::new(3, 0, 0)), BlockId::DIRT);
        assert_eq!(goal.get(Cell::new(0, 4, 2)), BlockId::COBBLESTONE);
        assert_eq!(goal.get(Cell::new(2, 3, 2)), BlockId::COBBLESTONE);
        assert_eq!(goal.get(Cell::new(3, 2, 2)), BlockId::COBBLESTONE);
        assert_eq!(goal.get(Cell::new(2, 2, 2)), BlockId::AIR);
        assert_eq!(goal.get(Cell::new(3, 4, 2)), BlockId::AIR);
        assert!(
            SimpleOverhang
                .generate(WorldSize::new(4, 2, 4), &mut rng())
                .is_err()
        );
    }

    #[test]
    fn tutorial_layout() {
        let goal = Tutorial
            .generate(WorldSize::new(5, 4, 5), &mut rng())
            .unwrap();
        assert_eq!(goal.get(Cell::new(2, 0, 2)), BlockId::STONE);
        assert_eq!(goal.get(Cell::new(2, 1, 0)), BlockId::PLANKS);
        assert_eq!(goal.get(Cell::new(0, 1, 2)), BlockId::PLANKS);
        assert_eq!(
            goal.get(Cell::new(4, 1, 2)),
            BlockId::AIR,
            "x = W-1 wall is open"
        );
        assert_eq!(goal.get(Cell::new(4, 2, 4)), BlockId::LOG);
        assert_eq!(goal.get(Cell::new(0, 2, 3)), BlockId::GLASS);
        assert_eq!(goal.get(Cell::new(4, 3, 4)), BlockId::COBBLESTONE);
        let err = Tutorial
            .generate(WorldSize::new(5, 3, 5), &mut rng())
            .unwrap_err();
        assert_eq!(err.reference_exception(), Some("IndexError"));
    }

    #[test]
    fn random_goal_keeps_only_grounded_components() {
        let mut generator = RandomGoal::default();
        let mut rng = rng();
        for _ in 0..20 {
            let goal = generator
                .generate(WorldSize::new(5, 5, 5), &mut rng)
                .unwrap();
            assert!(
                goal.ids()
                    .iter()
                    .all(|&id| id == 0 || (2..=9).contains(&id))
            );
            let mask = Grid::from_fn([5, 5, 5], |x, y, z| {
                goal.ids()[flat(goal.size(), x, y, z)] != 0
            });
            let (labels, _) = label(&mask, Connectivity::Six);
            for (i, &l) in labels.data().iter().enumerate() {
                if l == 0 {
                    continue;
                }
                let touches_ground = (0..5).any(|x| (0..5).any(|z| labels.get(x, 0, z) == l));
                assert!(touches_ground, "cell {i} floats");
            }
        }
        let mut full = RandomGoal {
            config: RandomConfig { filled_prop: 1.0 },
        };
        assert_eq!(
            full.generate(WorldSize::new(2, 3, 2), &mut rng)
                .unwrap()
                .count_non_air(),
            12
        );
    }

    #[test]
    fn set_goal_picks_a_fitting_structure() {
        let small = Blocks::air(WorldSize::new(1, 1, 1));
        let big = Blocks::air(WorldSize::new(9, 9, 9));
        let mut generator = SetGoal {
            goals: vec![big.clone(), small.clone()],
        };
        for _ in 0..10 {
            assert_eq!(
                generator
                    .generate(WorldSize::new(2, 2, 2), &mut rng())
                    .unwrap(),
                small
            );
        }
        let mut none = SetGoal { goals: vec![big] };
        assert!(matches!(
            none.generate(WorldSize::new(2, 2, 2), &mut rng()),
            Err(GoalError::NothingFits { .. })
        ));
    }
}
