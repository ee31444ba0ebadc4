//! `crop_air`, `crop_low_density_bottom_layers` and `crop`.

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::goal::grid::{density, flat, sub_box};
use crate::goal::{GoalError, GoalGenerator, MAX_ATTEMPTS};
use crate::{Blocks, WorldSize};

/// The size asked of the inner generator by transforms that want "any size".
pub const UNBOUNDED: WorldSize = WorldSize::new(100, 100, 100);

/// `crop_air`: removes all-air slices from both ends of every axis.
#[derive(Debug)]
pub struct CropAir {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
}

/// Crops the surrounding air off a structure (ids and states). An all-air structure
/// is returned unchanged, as the reference's argmin trick does.
pub fn crop_air(goal: &Blocks) -> Blocks {
    let size = goal.size();
    let dims = size.axes();
    // Per axis, which slices hold a non-air cell.
    let mut occupied = [
        vec![false; dims[0]],
        vec![false; dims[1]],
        vec![false; dims[2]],
    ];
    for x in 0..dims[0] {
        for y in 0..dims[1] {
            for z in 0..dims[2] {
                if goal.ids()[flat(size, x, y, z)] != 0 {
                    occupied[0][x] = true;
                    occupied[1][y] = true;
                    occupied[2][z] = true;
                }
            }
        }
    }
    let mut start = [0; 3];
    let mut extent = dims;
    for a in 0..3 {
        if let (Some(first), Some(last)) = (
            occupied[a].iter().position(|&o| o),
            occupied[a].iter().rposition(|&o| o),
        ) {
            start[a] = first;
            extent[a] = last + 1 - first;
        }
    }
    sub_box(goal, start, WorldSize::from(extent))
}

impl GoalGenerator for CropAir {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        Ok(crop_air(&self.inner.generate(size, rng)?))
    }
}

/// A `density_threshold` configuration (default 0.1, as `crop_low_density_bottom_layers`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DensityThreshold {
    /// Layers with a non-air fraction below this are "low density".
    pub density_threshold: f64,
}

impl Default for DensityThreshold {
    fn default() -> Self {
        Self {
            density_threshold: 0.1,
        }
    }
}

/// `crop_low_density_bottom_layers`: drops the bottom layers when they are all below
/// the density threshold and the layer above them is not.
#[derive(Debug)]
pub struct CropLowDensityBottomLayers {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: DensityThreshold,
}

/// The rule of [`CropLowDensityBottomLayers`] (ids and states kept).
pub fn crop_low_density_bottom_layers(goal: &Blocks, threshold: f64) -> Blocks {
    let size = goal.size();
    let layer_cells = (size.width * size.depth) as f64;
    let layer_density: Vec<f64> = (0..size.height)
        .map(|y| {
            let mut count = 0usize;
            for x in 0..size.width {
                for z in 0..size.depth {
                    count += usize::from(goal.ids()[flat(size, x, y, z)] != 0);
                }
            }
            count as f64 / layer_cells
        })
        .collect();
    let mut cut = None;
    for y in 0..size.height.saturating_sub(1) {
        if layer_density[..=y].iter().all(|&d| d < threshold) && layer_density[y + 1] >= threshold {
            cut = Some(y + 1);
        }
    }
    match cut {
        Some(cut) => sub_box(
            goal,
            [0, cut, 0],
            WorldSize::new(size.width, size.height - cut, size.depth),
        ),
        None => goal.clone(),
    }
}

impl GoalGenerator for CropLowDensityBottomLayers {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let goal = self.inner.generate(size, rng)?;
        Ok(crop_low_density_bottom_layers(
            &goal,
            self.config.density_threshold,
        ))
    }
}

/// Configuration of [`Crop`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CropConfig {
    /// Largest accepted relative density difference between crop and structure.
    pub density_threshold: f64,
    /// Crop from the bottom of the structure.
    pub tethered_to_ground: bool,
    /// Crop a single z slice.
    pub wall: bool,
}

impl Default for CropConfig {
    fn default() -> Self {
        Self {
            density_threshold: 0.25,
            tethered_to_ground: true,
            wall: false,
        }
    }
}

/// `crop`: a random crop of a large structure whose density is within
/// `density_threshold` (relative) of the whole structure's.
#[derive(Debug)]
pub struct Crop {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: CropConfig,
}

/// How many crop offsets the reference tries per structure.
const CROP_RETRIES: usize = 20;

/// The crop of `crop_size` at `start` (ids only, states 0; outside is air).
pub fn crop_at(goal: &Blocks, start: [usize; 3], crop_size: WorldSize) -> Blocks {
    let src = goal.size();
    let mut out = Blocks::air(crop_size);
    for x in 0..crop_size.width {
        for y in 0..crop_size.height {
            for z in 0..crop_size.depth {
                let (sx, sy, sz) = (start[0] + x, start[1] + y, start[2] + z);
                if sx < src.width && sy < src.height && sz < src.depth {
                    out.ids_mut()[flat(crop_size, x, y, z)] = goal.ids()[flat(src, sx, sy, sz)];
                }
            }
        }
    }
    out
}

impl GoalGenerator for Crop {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        for _ in 0..MAX_ATTEMPTS {
            let goal = self.inner.generate(UNBOUNDED, rng)?;
            let struct_density = density(&goal);
            if struct_density == 0.0 || struct_density.is_nan() {
                continue;
            }
            let g = goal.size();
            let crop_size = WorldSize::new(
                size.width.min(g.width),
                size.height.min(g.height),
                if self.config.wall {
                    1
                } else {
                    size.depth.min(g.depth)
                },
            );
            let y_range = if self.config.tethered_to_ground {
                0
            } else {
                g.height - crop_size.height
            };
            // With `wall` the crop depth can exceed the structure's; the reference's
            // randint then fails, which we report as not fitting.
            let Some(z_range) = g.depth.checked_sub(crop_size.depth) else {
                return Err(GoalError::DoesNotFit {
                    what: "crop",
                    structure: g,
                    size: crop_size,
                });
            };
            for _ in 0..CROP_RETRIES {
                let start = [
                    rng.random_range(0..=g.width - crop_size.width),
                    rng.random_range(0..=y_range),
                    rng.random_range(0..=z_range),
                ];
                let crop = crop_at(&goal, start, crop_size);
                if (density(&crop) - struct_density).abs() / struct_density
                    <= self.config.density_threshold
                {
                    return Ok(crop);
                }
            }
            log::info!("crop was unable to find a valid crop");
        }
        Err(GoalError::Exhausted {
            what: "crop",
            attempts: MAX_ATTEMPTS,
            size,
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

    #[test]
    fn crop_air_trims_every_axis() {
        // 3x3x3 with a single block at (1, 2, 0).
        let mut ids = vec![0; 27];
        ids[flat(WorldSize::new(3, 3, 3), 1, 2, 0)] = 5;
        let out = crop_air(&from_ids(WorldSize::new(3, 3, 3), ids));
        assert_eq!(out.size(), WorldSize::new(1, 1, 1));
        assert_eq!(out.ids(), &[5]);
        let empty = from_ids(WorldSize::new(2, 2, 2), vec![0; 8]);
        assert_eq!(crop_air(&empty), empty);
    }

    #[test]
    fn low_density_bottom_layers_are_cut() {
        // 2x4x2: layer 0 has 0/4, layer 1 has 1/4, layer 2 4/4, layer 3 0/4.
        let size = WorldSize::new(2, 4, 2);
        let mut ids = vec![0; 16];
        ids[flat(size, 0, 1, 0)] = 3;
        for x in 0..2 {
            for z in 0..2 {
                ids[flat(size, x, 2, z)] = 3;
            }
        }
        let goal = from_ids(size, ids);
        let out = crop_low_density_bottom_layers(&goal, 0.3);
        assert_eq!(out.size(), WorldSize::new(2, 2, 2));
        assert_eq!(out.count_non_air(), 4);
        // With threshold 0.25, layer 1 is not low density and layer 0 is cut alone.
        assert_eq!(crop_low_density_bottom_layers(&goal, 0.25).size().height, 3);
        // Nothing low density: unchanged.
        assert_eq!(crop_low_density_bottom_layers(&goal, 0.0), goal);
    }

    #[test]
    fn crop_keeps_density_close() {
        let size = WorldSize::new(6, 2, 6);
        let ids = (0..72).map(|i| if i % 2 == 0 { 3 } else { 0 }).collect();
        let mut t = Crop {
            inner: Box::new(SetGoal {
                goals: vec![from_ids(size, ids)],
            }),
            config: CropConfig::default(),
        };
        let mut rng = StdRng::seed_from_u64(5);
        let out = t.generate(WorldSize::new(4, 4, 4), &mut rng).unwrap();
        assert_eq!(out.size(), WorldSize::new(4, 2, 4));
        assert!((density(&out) - 0.5).abs() / 0.5 <= 0.25);

        let mut empty = Crop {
            inner: Box::new(SetGoal {
                goals: vec![Blocks::air(size)],
            }),
            config: CropConfig::default(),
        };
        assert!(matches!(
            empty.generate(WorldSize::new(4, 4, 4), &mut rng),
            Err(GoalError::Exhausted { what: "crop", .. })
        ));
    }
}
