//! Scoring goal predictions on partly built houses: per-voxel cross-entropy and
//! accuracy beside the block-frequency and current-world baselines, the air
//! cells where the prediction is sure enough for a place to pay (and how often
//! it is right there), a calibration table, and the bare rule "a run of two
//! equal blocks continues" for comparison.

use serde::Serialize;

use super::GoalModel;
use super::context::WorldView;
use crate::sim::block::{Blocks, NUM_BLOCKS};
use crate::sim::coords::{Cell, CellIndex};

/// Confidence levels scored: 2/3, where a place starts to pay, and higher.
pub const CONFIDENCE_LEVELS: [f64; 4] = [2.0 / 3.0, 0.8, 0.9, 0.97];

/// Calibration bins over the best block's probability in air cells.
pub const CALIBRATION_BINS: usize = 10;

/// A world as someone left it, with the goal it was heading for.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The current blocks.
    pub world: Blocks,
    /// The goal.
    pub goal: Blocks,
    /// Cells a player has placed or broken in, where known (a human model's
    /// builds): an air cell someone touched was most often cleared on purpose,
    /// and no place of an assistant's helps there.
    pub touched: Option<Vec<bool>>,
}

impl Observation {
    /// An observation of `world` towards `goal` (same size).
    ///
    /// # Panics
    /// If the sizes differ.
    pub fn new(world: Blocks, goal: Blocks) -> Self {
        assert_eq!(world.size(), goal.size(), "world and goal sizes differ");
        Self {
            world,
            goal,
            touched: None,
        }
    }

    /// The same with the cells players touched (one flag per cell).
    ///
    /// # Panics
    /// If there is not one flag per cell.
    pub fn with_touched(mut self, touched: Vec<bool>) -> Self {
        assert_eq!(
            touched.len(),
            self.world.size().num_cells(),
            "one flag per cell"
        );
        self.touched = Some(touched);
        self
    }

    /// The world as the model reads it.
    pub fn view(&self) -> WorldView<'_> {
        WorldView::new(self.world.size(), self.world.ids())
    }

    /// The share of the goal's work done: of the cells where the goal differs
    /// from the initial world, those that hold the goal's block now.
    pub fn built_fraction(&self) -> f64 {
        let initial = Blocks::initial_world(self.goal.size());
        let (mut todo, mut done) = (0usize, 0usize);
        for ((&g, &i), &w) in self
            .goal
            .ids()
            .iter()
            .zip(initial.ids())
            .zip(self.world.ids())
        {
            if g != i {
                todo += 1;
                done += usize::from(w == g);
            }
        }
        done as f64 / todo.max(1) as f64
    }
}

/// Air cells the prediction gives one block more than a probability.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Confident {
    /// The probability the best non-air block must exceed.
    pub level: f64,
    /// Such cells per observation.
    pub per_observation: f64,
    /// Share of them whose goal is that block (NaN when there are none).
    pub precision: f64,
}

/// One calibration bin: air cells whose best non-air block's probability
/// falls in `[low, low + 0.1)`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Bin {
    /// The bin's lower edge.
    pub low: f64,
    /// Cells in it.
    pub cells: usize,
    /// Their mean predicted probability.
    pub predicted: f64,
    /// The share whose goal is that block.
    pub observed: f64,
}

/// A predictor's scores on a set of observations.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scores {
    /// Observations scored.
    pub observations: usize,
    /// Mean cross-entropy per voxel, in nats.
    pub cross_entropy: f64,
    /// Share of voxels whose most likely block is the goal's.
    pub accuracy: f64,
    /// Mean cross-entropy over the cells that are air now.
    pub air_cross_entropy: f64,
    /// Places per confidence level of [`CONFIDENCE_LEVELS`].
    pub confident: Vec<Confident>,
    /// The same over the air cells no player has touched (all air cells where
    /// the observations do not say).
    pub confident_untouched: Vec<Confident>,
    /// Calibration of the air cells' best non-air block.
    pub calibration: Vec<Bin>,
}

/// The baselines on the same observations.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Baselines {
    /// Every voxel predicted with the block shares of the training goals.
    pub frequency_cross_entropy: f64,
    /// The frequency baseline's accuracy (the commonest block everywhere).
    pub frequency_accuracy: f64,
    /// "The goal is the world as it stands".
    pub current_world_accuracy: f64,
    /// "A run of two equal blocks continues" in an air cell: cells per
    /// observation where it names a block.
    pub runs_per_observation: f64,
    /// How often that block is the goal's.
    pub runs_precision: f64,
}

/// Scores `model` (with its own smoothing) on `observations`.
pub fn score_model(model: &GoalModel, observations: &[Observation]) -> Scores {
    score_with(observations, |view, out| {
        let size = view.size();
        for (i, p) in out.iter_mut().enumerate() {
            *p = model.probabilities(&view.keys(size.cell(CellIndex(i as u32))));
        }
    })
}

/// Scores any per-cell predictor: `predict(view, out)` fills one distribution
/// per cell.
pub fn score_with(
    observations: &[Observation],
    mut predict: impl FnMut(&WorldView<'_>, &mut [[f64; NUM_BLOCKS]]),
) -> Scores {
    let (mut ce, mut right, mut voxels) = (0.0f64, 0usize, 0usize);
    let (mut air_ce, mut air_cells) = (0.0f64, 0usize);
    let mut confident = [0usize; CONFIDENCE_LEVELS.len()];
    let mut confident_right = [0usize; CONFIDENCE_LEVELS.len()];
    let mut untouched = [0usize; CONFIDENCE_LEVELS.len()];
    let mut untouched_right = [0usize; CONFIDENCE_LEVELS.len()];
    let mut bins = [(0usize, 0.0f64, 0usize); CALIBRATION_BINS];
    let mut probs = Vec::new();
    for o in observations {
        let view = o.view();
        let cells = view.size().num_cells();
        probs.clear();
        probs.resize(cells, [0.0; NUM_BLOCKS]);
        predict(&view, &mut probs);
        for (i, p) in probs.iter().enumerate() {
            let goal = usize::from(o.goal.ids()[i]);
            let loss = -p[goal].max(1e-12).ln();
            ce += loss;
            let argmax = argmax(p);
            right += usize::from(argmax == goal);
            voxels += 1;
            if o.world.ids()[i] != 0 {
                continue;
            }
            air_ce += loss;
            air_cells += 1;
            let best = argmax_from(p, 1);
            let pb = p[best];
            let hit = best == goal;
            let fresh = o.touched.as_ref().is_none_or(|t| !t[i]);
            for (k, &level) in CONFIDENCE_LEVELS.iter().enumerate() {
                if pb > level {
                    confident[k] += 1;
                    confident_right[k] += usize::from(hit);
                    if fresh {
                        untouched[k] += 1;
                        untouched_right[k] += usize::from(hit);
                    }
                }
            }
            let bin = ((pb * CALIBRATION_BINS as f64) as usize).min(CALIBRATION_BINS - 1);
            bins[bin].0 += 1;
            bins[bin].1 += pb;
            bins[bin].2 += usize::from(hit);
        }
    }
    let n = observations.len().max(1) as f64;
    Scores {
        observations: observations.len(),
        cross_entropy: ce / voxels.max(1) as f64,
        accuracy: right as f64 / voxels.max(1) as f64,
        air_cross_entropy: air_ce / air_cells.max(1) as f64,
        confident: per_level(&confident, &confident_right, n),
        confident_untouched: per_level(&untouched, &untouched_right, n),
        calibration: bins
            .iter()
            .enumerate()
            .map(|(k, &(cells, sum, hits))| Bin {
                low: k as f64 / CALIBRATION_BINS as f64,
                cells,
                predicted: sum / cells.max(1) as f64,
                observed: ratio(hits, cells),
            })
            .collect(),
    }
}

/// [`Confident`] per level of [`CONFIDENCE_LEVELS`] from the cells counted at
/// each and those right, over `observations` observations.
fn per_level(cells: &[usize], right: &[usize], observations: f64) -> Vec<Confident> {
    CONFIDENCE_LEVELS
        .iter()
        .zip(cells.iter().zip(right))
        .map(|(&level, (&cells, &right))| Confident {
            level,
            per_observation: cells as f64 / observations,
            precision: ratio(right, cells),
        })
        .collect()
}

/// The baselines on `observations`, with block `shares` from training goals.
pub fn baselines(observations: &[Observation], shares: &[f64; NUM_BLOCKS]) -> Baselines {
    let commonest = argmax(shares);
    let (mut ce, mut freq_right, mut world_right, mut voxels) = (0.0, 0usize, 0usize, 0usize);
    let (mut runs, mut runs_right) = (0usize, 0usize);
    for o in observations {
        let size = o.world.size();
        for (i, (&g, &w)) in o.goal.ids().iter().zip(o.world.ids()).enumerate() {
            ce -= shares[usize::from(g)].max(1e-12).ln();
            freq_right += usize::from(usize::from(g) == commonest);
            world_right += usize::from(g == w);
            voxels += 1;
            if w == 0
                && let Some(b) = run_continues(&o.world, size.cell(CellIndex(i as u32)))
            {
                runs += 1;
                runs_right += usize::from(b == g);
            }
        }
    }
    let n = observations.len().max(1) as f64;
    Baselines {
        frequency_cross_entropy: ce / voxels.max(1) as f64,
        frequency_accuracy: freq_right as f64 / voxels.max(1) as f64,
        current_world_accuracy: world_right as f64 / voxels.max(1) as f64,
        runs_per_observation: runs as f64 / n,
        runs_precision: ratio(runs_right, runs),
    }
}

/// Block shares over the cells of `goals`, each block kept above zero.
pub fn block_shares(goals: &[&Blocks]) -> [f64; NUM_BLOCKS] {
    let mut counts = [1.0f64; NUM_BLOCKS];
    for g in goals {
        for &b in g.ids() {
            counts[usize::from(b)] += 1.0;
        }
    }
    let total: f64 = counts.iter().sum();
    counts.map(|c| c / total)
}

/// The block two equal placed blocks in a line point at `cell` with (above
/// the ground, horizontally or from below), if any.
fn run_continues(world: &Blocks, cell: Cell) -> Option<u8> {
    if cell.y < 2 {
        return None;
    }
    for (dx, dy, dz) in [(1, 0, 0), (-1, 0, 0), (0, 0, 1), (0, 0, -1), (0, -1, 0)] {
        let one = world.checked_get(Cell::new(cell.x + dx, cell.y + dy, cell.z + dz));
        let two = world.checked_get(Cell::new(cell.x + 2 * dx, cell.y + 2 * dy, cell.z + 2 * dz));
        if let (Some(a), Some(b)) = (one, two)
            && a == b
            && a.is_placeable()
            && (cell.y + 2 * dy) >= 2
        {
            return Some(a.0);
        }
    }
    None
}

fn argmax(p: &[f64]) -> usize {
    argmax_from(p, 0)
}

/// The index of the largest of `p[from..]`.
fn argmax_from(p: &[f64], from: usize) -> usize {
    (from..p.len())
        .max_by(|&a, &b| p[a].total_cmp(&p[b]))
        .unwrap_or(from)
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::block::BlockId;
    use crate::sim::coords::WorldSize;

    #[test]
    fn a_predictor_that_knows_the_goal_is_perfect_and_sure() {
        let size = WorldSize::new(5, 5, 5);
        let world = Blocks::initial_world(size);
        let mut goal = world.clone();
        goal.set(Cell::new(2, 2, 2), BlockId::PLANKS);
        let set = vec![Observation::new(world, goal.clone())];
        let scores = score_with(&set, |_, out| {
            for (i, p) in out.iter_mut().enumerate() {
                *p = [0.0; NUM_BLOCKS];
                p[usize::from(goal.ids()[i])] = 1.0;
            }
        });
        assert_eq!(scores.accuracy, 1.0);
        assert!(scores.cross_entropy < 1e-9);
        assert_eq!(scores.confident[0].per_observation, 1.0);
        assert_eq!(scores.confident[0].precision, 1.0);
        assert_eq!(set[0].built_fraction(), 0.0);
    }

    #[test]
    fn runs_point_along_their_line() {
        let size = WorldSize::new(6, 5, 5);
        let mut world = Blocks::initial_world(size);
        world.set(Cell::new(1, 2, 2), BlockId::LOG);
        world.set(Cell::new(2, 2, 2), BlockId::LOG);
        assert_eq!(
            run_continues(&world, Cell::new(3, 2, 2)),
            Some(BlockId::LOG.0)
        );
        assert_eq!(
            run_continues(&world, Cell::new(0, 2, 2)),
            Some(BlockId::LOG.0)
        );
        assert_eq!(run_continues(&world, Cell::new(3, 2, 3)), None);
        // The ground is not a run.
        assert_eq!(run_continues(&world, Cell::new(3, 1, 3)), None);
    }
}
