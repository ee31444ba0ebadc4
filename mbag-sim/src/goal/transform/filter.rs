//! The filters: `single_cc_filter`, `density_filter` and `min_size_filter`. Each draws
//! goals from its inner generator until one passes (at most [`MAX_ATTEMPTS`]).

use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::largest_cc::ConnectivityConfig;
use crate::goal::components::{Connectivity, label};
use crate::goal::grid::{Grid, density, flat};
use crate::goal::{GoalError, GoalGenerator, MAX_ATTEMPTS};
use crate::{Blocks, WorldSize};

fn draw_until(
    what: &'static str,
    inner: &mut dyn GoalGenerator,
    size: WorldSize,
    rng: &mut dyn RngCore,
    mut accept: impl FnMut(&Blocks) -> bool,
) -> Result<Blocks, GoalError> {
    for _ in 0..MAX_ATTEMPTS {
        let goal = inner.generate(size, rng)?;
        if accept(&goal) {
            return Ok(goal);
        }
        log::info!("{what} rejected goal");
    }
    Err(GoalError::Exhausted {
        what,
        attempts: MAX_ATTEMPTS,
        size,
    })
}

/// Whether every non-air cell belongs to a component (of the non-air cells alone)
/// that touches layer y = 0.
pub fn is_single_cc(goal: &Blocks, connectivity: Connectivity) -> bool {
    let size = goal.size();
    let mask = Grid::from_fn(size.axes(), |x, y, z| goal.ids()[flat(size, x, y, z)] != 0);
    let (labels, count) = label(&mask, connectivity);
    let mut grounded = vec![false; count as usize + 1];
    if size.height > 0 {
        for x in 0..size.width {
            for z in 0..size.depth {
                grounded[labels.get(x, 0, z) as usize] = true;
            }
        }
    }
    labels
        .data()
        .iter()
        .all(|&l| l == 0 || grounded[l as usize])
}

/// `single_cc_filter`: accepts goals whose blocks all connect to the ground (a
/// 1x1x1 goal always passes).
#[derive(Debug)]
pub struct SingleCcFilter {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: ConnectivityConfig,
}

impl GoalGenerator for SingleCcFilter {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let connectivity = self.config.connectivity;
        draw_until("single_cc_filter", self.inner.as_mut(), size, rng, |goal| {
            goal.size() == WorldSize::new(1, 1, 1) || is_single_cc(goal, connectivity)
        })
    }
}

/// Configuration of [`DensityFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DensityFilterConfig {
    /// Smallest accepted non-air fraction.
    pub min_density: f64,
    /// Largest accepted non-air fraction.
    pub max_density: f64,
}

impl Default for DensityFilterConfig {
    fn default() -> Self {
        Self {
            min_density: 0.0,
            max_density: 1.0,
        }
    }
}

/// `density_filter`: accepts goals whose non-air fraction is in range.
#[derive(Debug)]
pub struct DensityFilter {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: DensityFilterConfig,
}

impl GoalGenerator for DensityFilter {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let DensityFilterConfig {
            min_density,
            max_density,
        } = self.config;
        draw_until("density_filter", self.inner.as_mut(), size, rng, |goal| {
            let d = density(goal);
            min_density <= d && d <= max_density
        })
    }
}

/// Configuration of [`MinSizeFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MinSizeFilterConfig {
    /// The smallest accepted extents.
    pub min_size: WorldSize,
}

impl Default for MinSizeFilterConfig {
    fn default() -> Self {
        Self {
            min_size: WorldSize::new(1, 1, 1),
        }
    }
}

/// `min_size_filter`: accepts goals at least `min_size` on every axis.
#[derive(Debug)]
pub struct MinSizeFilter {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: MinSizeFilterConfig,
}

impl GoalGenerator for MinSizeFilter {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let min = self.config.min_size;
        draw_until("min_size_filter", self.inner.as_mut(), size, rng, |goal| {
            crate::goal::grid::fits(min, goal.size())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;
    use crate::goal::simple::SetGoal;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn floating() -> Blocks {
        // 1x3x1: ground block, gap, floating block.
        from_ids(WorldSize::new(1, 3, 1), vec![3, 0, 3])
    }

    #[test]
    fn single_cc_detects_floating_blocks() {
        assert!(!is_single_cc(&floating(), Connectivity::Six));
        assert!(is_single_cc(
            &from_ids(WorldSize::new(1, 2, 1), vec![3, 3]),
            Connectivity::Six
        ));
        // Diagonal support counts with 18-connectivity.
        let diag = from_ids(WorldSize::new(2, 2, 1), vec![3, 0, 0, 3]);
        assert!(!is_single_cc(&diag, Connectivity::Six));
        assert!(is_single_cc(&diag, Connectivity::Eighteen));
    }

    #[test]
    fn filters_reject_until_exhausted() {
        let mut rng = StdRng::seed_from_u64(0);
        let mut f = SingleCcFilter {
            inner: Box::new(SetGoal {
                goals: vec![floating()],
            }),
            config: ConnectivityConfig::default(),
        };
        assert!(matches!(
            f.generate(WorldSize::new(3, 3, 3), &mut rng),
            Err(GoalError::Exhausted {
                what: "single_cc_filter",
                ..
            })
        ));
        let mut d = DensityFilter {
            inner: Box::new(SetGoal {
                goals: vec![floating()],
            }),
            config: DensityFilterConfig {
                min_density: 0.5,
                max_density: 1.0,
            },
        };
        assert!(d.generate(WorldSize::new(3, 3, 3), &mut rng).is_ok());
        d.config.min_density = 0.7;
        assert!(d.generate(WorldSize::new(3, 3, 3), &mut rng).is_err());
        let mut m = MinSizeFilter {
            inner: Box::new(SetGoal {
                goals: vec![floating()],
            }),
            config: MinSizeFilterConfig {
                min_size: WorldSize::new(1, 3, 1),
            },
        };
        assert!(m.generate(WorldSize::new(3, 3, 3), &mut rng).is_ok());
        m.config.min_size = WorldSize::new(2, 1, 1);
        assert!(m.generate(WorldSize::new(3, 3, 3), &mut rng).is_err());
    }
}
