//! `area_sample`: scales large structures down to the requested size (ENV_SPEC 12.2).
//!
//! Steps: optionally mark walkable paths ([`paths::find_paths`]); optionally
//! interpolate by a non-power-of-two factor ([`zoom::zoom_argmax`], bit-exact with
//! scipy); halve while still too large (2x2x2 majority); turn paths back into gaps
//! and fill placeholders ([`paths::recreate_paths`]).

pub mod paths;
pub mod zoom;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::grid::{Grid, fits, flat};
use super::transform::crop::UNBOUNDED;
use super::{GoalError, GoalGenerator, MAX_ATTEMPTS};
use crate::{Blocks, WorldSize};

use paths::{PATH, find_paths, recreate_paths};
use zoom::{ZoomOrder, zoom_argmax};

/// Configuration of [`AreaSample`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AreaSampleConfig {
    /// Largest factor by which a structure may be scaled down; larger ones are rejected.
    pub max_scaling_factor: f64,
    /// Interpolate to scale by factors that are not powers of two.
    pub interpolate: bool,
    /// The spline order of the interpolation (0 = nearest, 1 = linear; only these are
    /// supported, see [`AreaSampleConfig::validate`]).
    pub interpolation_order: u32,
    /// Let the y factor differ from the x/z factor (within `max_scaling_factor_ratio`).
    pub scale_y_independently: bool,
    /// Largest ratio between the y and the x/z factors.
    pub max_scaling_factor_ratio: f64,
    /// Keep walkable paths (doors, stairs) walkable.
    pub preserve_paths: bool,
}

impl Default for AreaSampleConfig {
    fn default() -> Self {
        Self {
            max_scaling_factor: 4.0,
            interpolate: true,
            interpolation_order: 1,
            scale_y_independently: true,
            max_scaling_factor_ratio: 1.5,
            preserve_paths: true,
        }
    }
}

impl AreaSampleConfig {
    /// Checks the options this implementation supports: spline orders 0 and 1 (the
    /// higher orders need scipy's spline prefilter, which is not reproduced).
    pub fn validate(&self) -> Result<(), String> {
        self.zoom_order().map(|_| ())
    }

    fn zoom_order(&self) -> Result<ZoomOrder, String> {
        match self.interpolation_order {
            0 => Ok(ZoomOrder::Nearest),
            1 => Ok(ZoomOrder::Linear),
            other => Err(format!(
                "interpolation_order {other} is not supported (only 0 and 1)"
            )),
        }
    }

    /// The per-axis zoom of the interpolation step, as the reference's `_get_zoom`.
    pub fn zoom(&self, structure: WorldSize, target: WorldSize, iterations: u32) -> [f64; 3] {
        let total = 2f64.powi(iterations as i32);
        let s = structure.axes();
        let t = target.axes();
        let raw: Vec<f64> = (0..3)
            .map(|a| {
                let ratio = t[a] as f64 / s[a] as f64;
                (if ratio < 1.0 { ratio } else { 1.0 }) * total
            })
            .collect();
        if self.scale_y_independently {
            let xz = raw[0].min(raw[2]);
            let y = raw[1].min(xz * self.max_scaling_factor_ratio);
            let xz = xz.min(y * self.max_scaling_factor_ratio);
            [xz, y, xz]
        } else {
            let all = raw[0].min(raw[1]).min(raw[2]);
            [all; 3]
        }
    }
}

/// `area_sample`: draws structures of any size (rejecting those more than
/// `max_scaling_factor` times too large) and scales them down to fit.
#[derive(Debug)]
pub struct AreaSample {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: AreaSampleConfig,
}

impl GoalGenerator for AreaSample {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let factor = self.config.max_scaling_factor;
        for _ in 0..MAX_ATTEMPTS {
            let structure = self.inner.generate(UNBOUNDED, rng)?;
            let s = structure.size().axes();
            let t = size.axes();
            if (0..3).all(|a| s[a] as f64 / factor <= t[a] as f64) {
                return scale_down(structure, size, &self.config);
            }
        }
        Err(GoalError::Exhausted {
            what: "area_sample",
            attempts: MAX_ATTEMPTS,
            size,
        })
    }
}

/// The number of halvings the interpolation stands in for:
/// `ceil(log2(max over axes of structure / target))`, at least 1 when called.
fn scaling_iterations(structure: WorldSize, target: WorldSize) -> u32 {
    let s = structure.axes();
    let t = target.axes();
    let ratio = (0..3)
        .map(|a| s[a] as f64 / t[a] as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    ratio.log2().ceil() as u32
}

/// Scales `structure` down to fit `size` (unchanged if it already fits).
pub fn scale_down(
    mut structure: Blocks,
    size: WorldSize,
    config: &AreaSampleConfig,
) -> Result<Blocks, GoalError> {
    if fits(structure.size(), size) {
        return Ok(structure);
    }
    if size.axes().contains(&0) {
        return Err(GoalError::EmptyTarget {
            what: "area_sample",
            size,
        });
    }
    let order = config
        .zoom_order()
        .map_err(|detail| GoalError::Unsupported {
            what: "area_sample",
            detail,
        })?;
    if config.preserve_paths {
        let paths = find_paths(&structure)?;
        for (id, &is_path) in structure.ids_mut().iter_mut().zip(paths.data()) {
            if is_path {
                *id = PATH;
            }
        }
    }
    if config.interpolate {
        let iterations = scaling_iterations(structure.size(), size);
        let zoom = config.zoom(structure.size(), size, iterations);
        structure = interpolate(&structure, zoom, order)?;
    }
    while !fits(structure.size(), size) {
        structure = halve(&structure);
    }
    recreate_paths(&mut structure)?;
    Ok(structure)
}

/// Zooms ids and states separately (each by argmax of the interpolated one-hot
/// indicators, see [`zoom`]).
fn interpolate(structure: &Blocks, zoom: [f64; 3], order: ZoomOrder) -> Result<Blocks, GoalError> {
    let dims = structure.size().axes();
    // The reference asserts that value 0 is present (it is the argmax fallback).
    if !structure.ids().contains(&0) {
        return Err(GoalError::NoAirToInterpolate { what: "block id" });
    }
    if !structure.states().contains(&0) {
        return Err(GoalError::NoAirToInterpolate {
            what: "block state",
        });
    }
    let (ids, out_dims) = zoom_argmax(structure.ids(), dims, zoom, order);
    let (states, _) = zoom_argmax(structure.states(), dims, zoom, order);
    Ok(Blocks::from_raw(WorldSize::from(out_dims), ids, states))
}

/// Halves every axis (rounding up): each 2x2x2 chunk becomes the path id if it holds
/// a path cell, else its most common non-air id (ties to the highest id), else air.
/// States become 0.
pub fn halve(structure: &Blocks) -> Blocks {
    let size = structure.size();
    let [w, h, d] = size.axes();
    let out = Grid::from_fn([w.div_ceil(2), h.div_ceil(2), d.div_ceil(2)], |i, j, k| {
        let mut counts = [0u32; 256];
        let mut has_path = false;
        for x in 2 * i..(2 * i + 2).min(w) {
            for y in 2 * j..(2 * j + 2).min(h) {
                for z in 2 * k..(2 * k + 2).min(d) {
                    let id = structure.ids()[flat(size, x, y, z)];
                    has_path |= id == PATH;
                    counts[usize::from(id)] += 1;
                }
            }
        }
        if has_path {
            return PATH;
        }
        counts[0] = 0;
        let mut best = 0u8;
        let mut best_count = 0;
        for (id, &c) in counts.iter().enumerate() {
            if c > 0 && c >= best_count {
                best = id as u8;
                best_count = c;
            }
        }
        best
    });
    let dims = out.dims();
    Blocks::from_raw(
        WorldSize::from(dims),
        out.data().to_vec(),
        vec![0; out.data().len()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;
    use crate::goal::simple::SetGoal;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn zoom_follows_the_reference_rules() {
        let c = AreaSampleConfig::default();
        // 15x7x15 into 9x8x8: one iteration, raw (1.2, 2, 1.0667); xz = 1.0667,
        // y = min(2, 1.6) = 1.6.
        let z = c.zoom(WorldSize::new(15, 7, 15), WorldSize::new(9, 8, 8), 1);
        assert_eq!(z, [16.0 / 15.0, 1.6, 16.0 / 15.0]);
        let same = AreaSampleConfig {
            scale_y_independently: false,
            ..c
        };
        assert_eq!(
            same.zoom(WorldSize::new(15, 7, 15), WorldSize::new(9, 8, 8), 1),
            [16.0 / 15.0; 3]
        );
        assert_eq!(
            scaling_iterations(WorldSize::new(15, 7, 15), WorldSize::new(9, 8, 8)),
            1
        );
        assert_eq!(
            scaling_iterations(WorldSize::new(16, 7, 15), WorldSize::new(4, 8, 8)),
            2
        );
        assert_eq!(
            scaling_iterations(WorldSize::new(17, 7, 15), WorldSize::new(4, 8, 8)),
            3
        );
    }

    #[test]
    fn halving_takes_the_majority_and_prefers_paths() {
        // 2x2x2 chunk with 3 stone, 3 planks, 2 air -> tie to the higher id (stone 7).
        let g = from_ids(WorldSize::new(2, 2, 2), vec![7, 7, 7, 6, 6, 6, 0, 0]);
        assert_eq!(halve(&g).ids(), &[7]);
        let g = from_ids(WorldSize::new(2, 2, 2), vec![7, 7, 7, 6, 6, 6, 0, PATH]);
        assert_eq!(halve(&g).ids(), &[PATH]);
        let g = from_ids(WorldSize::new(3, 1, 1), vec![0, 0, 5]);
        let h = halve(&g);
        assert_eq!(h.size(), WorldSize::new(2, 1, 1));
        assert_eq!(h.ids(), &[0, 5]);
    }

    #[test]
    fn fitting_structures_pass_unchanged_and_large_ones_are_rejected() {
        let g = from_ids(WorldSize::new(2, 2, 2), vec![7, 7, 0, 0, 7, 7, 0, 0]);
        let mut rng = StdRng::seed_from_u64(0);
        let mut t = AreaSample {
            inner: Box::new(SetGoal {
                goals: vec![g.clone()],
            }),
            config: AreaSampleConfig {
                max_scaling_factor: 1.5,
                ..Default::default()
            },
        };
        assert_eq!(t.generate(WorldSize::new(3, 3, 3), &mut rng).unwrap(), g);
        let out = t.generate(WorldSize::new(2, 2, 2), &mut rng).unwrap();
        assert_eq!(out, g);
        assert!(matches!(
            t.generate(WorldSize::new(1, 1, 1), &mut rng),
            Err(GoalError::Exhausted {
                what: "area_sample",
                ..
            })
        ));
    }

    #[test]
    fn unsupported_orders_and_empty_targets_are_errors() {
        let g = from_ids(WorldSize::new(4, 2, 4), vec![0; 32]);
        let cubic = AreaSampleConfig {
            interpolation_order: 3,
            ..Default::default()
        };
        assert!(cubic.validate().is_err());
        let err = scale_down(g.clone(), WorldSize::new(2, 2, 2), &cubic).unwrap_err();
        assert!(matches!(err, GoalError::Unsupported { .. }), "{err}");
        let err = scale_down(g, WorldSize::new(2, 0, 2), &AreaSampleConfig::default()).unwrap_err();
        assert_eq!(err.reference_exception(), Some("ZeroDivisionError"));
    }

    #[test]
    fn interpolation_without_air_is_an_error() {
        let g = from_ids(WorldSize::new(4, 2, 4), vec![3; 32]);
        let config = AreaSampleConfig {
            preserve_paths: false,
            ..Default::default()
        };
        let err = scale_down(g, WorldSize::new(3, 2, 3), &config).unwrap_err();
        assert_eq!(err.reference_exception(), Some("AssertionError"));
    }
}
