//! Statistics of goal structures, to compare generated houses with real ones.
//!
//! [`GoalStats`] describes one goal: the shares of each block type among its
//! blocks, its fill ratio (non-air share of its bounding box) and its height profile
//! (per layer, the non-air share of the bounding box's footprint). [`StatsSummary`]
//! averages them over many goals, each goal counting equally. [`PartShares`] splits
//! a raw house into bottom, walls and top, which is how the procedural house
//! generator's default material tables were measured.
//!
//! Goals out of the env's transform chains carry the ground: `add_grass` turns the
//! air of layer 0 into dirt. [`Ground::Layer0Dirt`] leaves that dirt out, so a
//! house's statistics do not depend on how much ground surrounds it. A house's own
//! dirt in layer 0 is left out with it, as a player cannot tell them apart either.

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::goal::grid::flat;
use crate::goal::{GoalConfig, GoalError};
use crate::{BlockId, Blocks, NUM_BLOCKS, WorldSize};

/// The size of the goal structures an env of `world` asks for with unlimited
/// blocks: the world less a one-cell border ([`crate::Env::goal_structure_size`]).
pub fn structure_size(world: WorldSize) -> WorldSize {
    WorldSize::new(
        world.width.saturating_sub(2),
        world.height.saturating_sub(2),
        world.depth.saturating_sub(2),
    )
}

/// `count` goals of `config` for an env of `world`, drawn from one rng seeded with
/// `seed` (the same seed gives the same goals).
pub fn sample_goals(
    config: &GoalConfig,
    world: WorldSize,
    count: usize,
    seed: u64,
) -> Result<Vec<Blocks>, GoalError> {
    let mut generator = config.build()?;
    let mut rng = StdRng::seed_from_u64(seed);
    let size = structure_size(world);
    (0..count)
        .map(|_| generator.generate(size, &mut rng))
        .collect()
}

/// The mean statistics of `goals` out of a transform chain (ground left out).
pub fn summarize(goals: &[Blocks]) -> StatsSummary {
    let stats: Vec<GoalStats> = goals
        .iter()
        .map(|g| GoalStats::of(g, Ground::Layer0Dirt))
        .collect();
    StatsSummary::of(&stats)
}

/// A goal drawn as text, one block of lines per layer from the top down: one
/// character per cell, x across and z down (`.` air, `#` ground dirt in layer 0,
/// otherwise the block's initial: `c`obblestone, `g`lass, `l`og, `p`lanks,
/// `s`tone, `b` stone brick, `w`ool, `d`irt, `B`edrock).
pub fn render_layers(goal: &Blocks) -> String {
    let size = goal.size();
    let mut out = String::new();
    for y in (0..size.height).rev() {
        out.push_str(&format!("y={y}\n"));
        for z in 0..size.depth {
            for x in 0..size.width {
                let id = BlockId(goal.ids()[flat(size, x, y, z)]);
                out.push(match id {
                    BlockId::AIR => '.',
                    BlockId::DIRT if y == 0 => '#',
                    BlockId::DIRT => 'd',
                    BlockId::BEDROCK => 'B',
                    BlockId::COBBLESTONE => 'c',
                    BlockId::GLASS => 'g',
                    BlockId::LOG => 'l',
                    BlockId::PLANKS => 'p',
                    BlockId::STONE => 's',
                    BlockId::STONEBRICK => 'b',
                    BlockId::WOOL => 'w',
                    _ => '?',
                });
            }
            out.push('\n');
        }
    }
    out
}

/// Which cells count as ground rather than structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ground {
    /// None: every non-air cell is structure (raw houses).
    None,
    /// Dirt in layer y = 0 is ground (goals after `add_grass`).
    Layer0Dirt,
}

/// The statistics of one goal.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalStats {
    /// Structure cells of each block id.
    pub counts: [usize; NUM_BLOCKS],
    /// The bounding box of the structure cells, `(min, max)` inclusive per axis
    /// (`None` for a goal without structure).
    pub bbox: Option<([usize; 3], [usize; 3])>,
    /// Structure cells over the bounding box's volume (0 without structure).
    pub fill_ratio: f64,
    /// For each layer y of the goal, structure cells in that layer over the
    /// bounding box's footprint (x by z extent).
    pub height_profile: Vec<f64>,
}

impl GoalStats {
    /// Measures `goal`, leaving out `ground`.
    pub fn of(goal: &Blocks, ground: Ground) -> Self {
        let size = goal.size();
        let ids = goal.ids();
        let is_structure = |x: usize, y: usize, z: usize| {
            let id = ids[flat(size, x, y, z)];
            id != BlockId::AIR.0
                && !(ground == Ground::Layer0Dirt && y == 0 && id == BlockId::DIRT.0)
        };
        let mut counts = [0; NUM_BLOCKS];
        let mut layers = vec![0usize; size.height];
        let mut bbox: Option<([usize; 3], [usize; 3])> = None;
        for x in 0..size.width {
            for y in 0..size.height {
                for z in 0..size.depth {
                    if !is_structure(x, y, z) {
                        continue;
                    }
                    let id = usize::from(ids[flat(size, x, y, z)]);
                    if let Some(count) = counts.get_mut(id) {
                        *count += 1;
                    }
                    layers[y] += 1;
                    let p = [x, y, z];
                    bbox = Some(match bbox {
                        None => (p, p),
                        Some((lo, hi)) => (
                            std::array::from_fn(|a| lo[a].min(p[a])),
                            std::array::from_fn(|a| hi[a].max(p[a])),
                        ),
                    });
                }
            }
        }
        let extent = |a: usize| bbox.map_or(0, |(lo, hi)| hi[a] - lo[a] + 1);
        let footprint = (extent(0) * extent(2)) as f64;
        let total: usize = layers.iter().sum();
        let ratio = |n: usize, d: f64| if d > 0.0 { n as f64 / d } else { 0.0 };
        Self {
            counts,
            bbox,
            fill_ratio: ratio(total, footprint * extent(1) as f64),
            height_profile: layers.iter().map(|&n| ratio(n, footprint)).collect(),
        }
    }

    /// Structure cells in all.
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The share of each block id among the structure cells (all 0 without any).
    pub fn shares(&self) -> [f64; NUM_BLOCKS] {
        shares(&self.counts)
    }

    /// The bounding box's extents `[x, y, z]` (zeros without structure).
    pub fn extents(&self) -> [usize; 3] {
        self.bbox.map_or([0; 3], |(lo, hi)| {
            std::array::from_fn(|a| hi[a] - lo[a] + 1)
        })
    }
}

fn shares(counts: &[usize; NUM_BLOCKS]) -> [f64; NUM_BLOCKS] {
    let total: usize = counts.iter().sum();
    if total == 0 {
        return [0.0; NUM_BLOCKS];
    }
    counts.map(|c| c as f64 / total as f64)
}

/// Means of [`GoalStats`] over goals of one height, each goal counting equally.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsSummary {
    /// How many goals.
    pub goals: usize,
    /// Mean per-goal block shares.
    pub shares: [f64; NUM_BLOCKS],
    /// Mean fill ratio.
    pub fill_ratio: f64,
    /// Standard deviation of the fill ratio over the goals.
    pub fill_ratio_std: f64,
    /// Mean structure cells per goal.
    pub blocks: f64,
    /// Mean bounding-box extents `[x, y, z]`.
    pub extents: [f64; 3],
    /// Mean height profile (layers a goal lacks count as 0).
    pub height_profile: Vec<f64>,
}

impl StatsSummary {
    /// Averages `stats` (an empty slice gives zeros).
    pub fn of(stats: &[GoalStats]) -> Self {
        let n = stats.len().max(1) as f64;
        let mean = |f: &dyn Fn(&GoalStats) -> f64| stats.iter().map(f).sum::<f64>() / n;
        let fill_ratio = mean(&|s| s.fill_ratio);
        let height = stats
            .iter()
            .map(|s| s.height_profile.len())
            .max()
            .unwrap_or(0);
        Self {
            goals: stats.len(),
            shares: std::array::from_fn(|b| mean(&|s| s.shares()[b])),
            fill_ratio,
            fill_ratio_std: mean(&|s| (s.fill_ratio - fill_ratio).powi(2)).sqrt(),
            blocks: mean(&|s| s.total() as f64),
            extents: std::array::from_fn(|a| mean(&|s| s.extents()[a] as f64)),
            height_profile: (0..height)
                .map(|y| mean(&|s| s.height_profile.get(y).copied().unwrap_or(0.0)))
                .collect(),
        }
    }
}

/// A raw house's block shares in three parts by height: its lowest non-air layer
/// (`bottom`), the layers in the top third of its non-air height (`top`, from
/// relative height 2/3 up), and the layers between (`walls`).
#[derive(Debug, Clone, PartialEq)]
pub struct PartShares {
    /// Shares among the bottom layer's blocks.
    pub bottom: [f64; NUM_BLOCKS],
    /// Shares among the wall layers' blocks.
    pub walls: [f64; NUM_BLOCKS],
    /// Shares among the top layers' blocks.
    pub top: [f64; NUM_BLOCKS],
}

impl PartShares {
    /// Measures a house, leaving out `ground`.
    pub fn of(house: &Blocks, ground: Ground) -> Self {
        let size = house.size();
        let ids = house.ids();
        let is_house = |x: usize, y: usize, z: usize| {
            let id = ids[flat(size, x, y, z)];
            id != BlockId::AIR.0
                && usize::from(id) < NUM_BLOCKS
                && !(ground == Ground::Layer0Dirt && y == 0 && id == BlockId::DIRT.0)
        };
        let layer_has_blocks =
            |y: usize| (0..size.width).any(|x| (0..size.depth).any(|z| is_house(x, y, z)));
        let lo = (0..size.height).find(|&y| layer_has_blocks(y));
        let hi = (0..size.height).rev().find(|&y| layer_has_blocks(y));
        let mut parts = [[0usize; NUM_BLOCKS]; 3];
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let height = (hi - lo + 1) as f64;
            for x in 0..size.width {
                for y in lo..=hi {
                    for z in 0..size.depth {
                        if !is_house(x, y, z) {
                            continue;
                        }
                        let id = usize::from(ids[flat(size, x, y, z)]);
                        let part = if y == lo {
                            0
                        } else if (y - lo) as f64 / height >= 2.0 / 3.0 {
                            2
                        } else {
                            1
                        };
                        parts[part][id] += 1;
                    }
                }
            }
        }
        Self {
            bottom: shares(&parts[0]),
            walls: shares(&parts[1]),
            top: shares(&parts[2]),
        }
    }

    /// The mean over houses, each counting equally.
    pub fn mean(all: &[Self]) -> Self {
        let n = all.len().max(1) as f64;
        let mean = |f: &dyn Fn(&Self) -> [f64; NUM_BLOCKS]| -> [f64; NUM_BLOCKS] {
            std::array::from_fn(|b| all.iter().map(|p| f(p)[b]).sum::<f64>() / n)
        };
        Self {
            bottom: mean(&|p| p.bottom),
            walls: mean(&|p| p.walls),
            top: mean(&|p| p.top),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorldSize;
    use crate::goal::grid::from_ids;

    #[test]
    fn counts_shares_fill_and_profile_without_the_ground() {
        // 3x2x1: layer 0 dirt, cobblestone, dirt; layer 1 air, glass, air.
        let goal = from_ids(WorldSize::new(3, 2, 1), vec![2, 0, 3, 4, 2, 0]);
        let s = GoalStats::of(&goal, Ground::Layer0Dirt);
        assert_eq!(s.total(), 2);
        assert_eq!(s.bbox, Some(([1, 0, 0], [1, 1, 0])));
        assert_eq!(s.fill_ratio, 1.0);
        assert_eq!(s.height_profile, vec![1.0, 1.0]);
        assert_eq!(s.shares()[3], 0.5);
        let raw = GoalStats::of(&goal, Ground::None);
        assert_eq!(raw.total(), 4);
        assert_eq!(raw.fill_ratio, 4.0 / 6.0);
        assert_eq!(raw.height_profile, vec![1.0, 1.0 / 3.0]);
        let summary = StatsSummary::of(&[s, raw]);
        assert_eq!(summary.goals, 2);
        assert!((summary.shares[2] - 0.25).abs() < 1e-12);
        assert!((summary.blocks - 3.0).abs() < 1e-12);
    }

    #[test]
    fn splits_a_house_into_bottom_walls_and_top() {
        // A 1x4x1 column: stone, planks, planks, log (log is at relative height 3/4).
        let house = from_ids(WorldSize::new(1, 5, 1), vec![7, 6, 6, 5, 0]);
        let p = PartShares::of(&house, Ground::None);
        assert_eq!(p.bottom[7], 1.0);
        assert_eq!(p.walls[6], 1.0);
        assert_eq!(p.top[5], 1.0);
    }
}
