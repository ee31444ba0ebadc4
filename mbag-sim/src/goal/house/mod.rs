//! `procedural_house`: random houses to train on, so that the real houses can be
//! held out for evaluation.
//!
//! A house is a rectangular footprint with, bottom to top:
//!
//! * a foundation filling layer y = 0 (in the env this layer replaces the ground
//!   dirt, as the bottom layer of a real house after `randomly_place`/`add_grass`);
//! * one storey of walls, or two with an upper floor between them; each storey draws
//!   a main wall material and each of its four walls keeps it or, with
//!   `wall_variation_prob`, draws its own;
//! * optionally posts at the four corners and beams around the upper floor
//!   (`pillar_prob`);
//! * a door opening, two cells of air above the foundation in a wall, never at a
//!   corner; glass windows in the walls (`window_prob` per wall cell);
//! * a flat, gabled or pyramid (stepped) roof; a roof that needs more layers than
//!   the height left is cut off by a flat cap.
//!
//! Inside is air. The structure is the house's bounding box, at most the requested
//! size: the env's `randomly_place` and `add_grass` then put it on the ground as the
//! human-study chain does with real houses ([`super::GoalConfig::procedural_houses`]).
//! Materials are drawn per part from tables measured on the shared houses
//! ([`materials`]). Everything is drawn from the given rng, so the same rng state
//! gives the same house.

pub mod materials;

use rand::{Rng, RngCore};
use serde::Deserialize;

use super::{GoalError, GoalGenerator};
use crate::goal::grid::flat;
use crate::{BlockId, Blocks, WorldSize};
use materials::MaterialTable;

/// An inclusive range of extents, `[min, max]` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "[usize; 2]")]
pub struct Span {
    /// The smallest value.
    pub min: usize,
    /// The largest value.
    pub max: usize,
}

impl Span {
    /// `[min, max]`, which must be ordered.
    pub const fn new(min: usize, max: usize) -> Self {
        Self { min, max }
    }

    /// A uniform draw from the span cut to at most `limit` (the limit itself when it
    /// is below the span).
    fn draw_within(self, limit: usize, rng: &mut dyn RngCore) -> usize {
        let hi = self.max.min(limit);
        let lo = self.min.min(hi);
        rng.random_range(lo..=hi)
    }
}

impl TryFrom<[usize; 2]> for Span {
    type Error = String;

    fn try_from([min, max]: [usize; 2]) -> Result<Self, String> {
        if min > max {
            return Err(format!("[{min}, {max}] is not [min, max] with min <= max"));
        }
        Ok(Self { min, max })
    }
}

/// The kinds of roof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoofKind {
    /// One layer over the whole footprint.
    Flat,
    /// Two slopes stepping in from the long walls to a ridge, the short walls
    /// continued up as gables.
    Gabled,
    /// Rings stepping in from all four walls.
    Pyramid,
}

/// Relative weights of the roof kinds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoofWeights {
    /// Weight of [`RoofKind::Flat`].
    pub flat: f64,
    /// Weight of [`RoofKind::Gabled`].
    pub gabled: f64,
    /// Weight of [`RoofKind::Pyramid`].
    pub pyramid: f64,
}

impl Default for RoofWeights {
    fn default() -> Self {
        // The shared houses have two flat roofs (the CraftAssist ones), and
        // gabled or stepped ones; gabled is the commonest in Minecraft builds.
        Self {
            flat: 1.0,
            gabled: 2.0,
            pyramid: 1.0,
        }
    }
}

impl RoofWeights {
    fn draw(&self, rng: &mut dyn RngCore) -> RoofKind {
        let total = self.flat + self.gabled + self.pyramid;
        let r = rng.random::<f64>() * total;
        if r < self.flat {
            RoofKind::Flat
        } else if r < self.flat + self.gabled || self.pyramid <= 0.0 {
            RoofKind::Gabled
        } else {
            RoofKind::Pyramid
        }
    }
}

/// Configuration of [`ProceduralHouse`] (`procedural_house` in env configs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProceduralHouseConfig {
    /// Footprint extent along x, walls included (cut to the requested size).
    pub width: Span,
    /// Footprint extent along z, walls included (cut to the requested size).
    pub depth: Span,
    /// Wall height of a storey, in cells (cut to the height left).
    pub storey_height: Span,
    /// Probability of a second storey, where the height allows one.
    pub second_storey_prob: f64,
    /// Roof kind weights.
    pub roof: RoofWeights,
    /// Probability of corner posts (and beams around an upper floor).
    pub pillar_prob: f64,
    /// Probability that a wall cell of a window row is glass.
    pub window_prob: f64,
    /// Probability that a wall draws its own material instead of its storey's.
    pub wall_variation_prob: f64,
    /// The foundation's material.
    pub foundation_materials: MaterialTable,
    /// Wall materials (each storey draws one, varying walls draw their own).
    pub wall_materials: MaterialTable,
    /// Roof and upper-floor materials.
    pub roof_materials: MaterialTable,
    /// Post and beam materials.
    pub pillar_materials: MaterialTable,
}

impl Default for ProceduralHouseConfig {
    fn default() -> Self {
        Self {
            width: Span::new(5, 12),
            depth: Span::new(5, 12),
            storey_height: Span::new(3, 4),
            second_storey_prob: 0.4,
            roof: RoofWeights::default(),
            // The wall table's logs already count the real houses' posts.
            pillar_prob: 0.25,
            window_prob: 0.35,
            wall_variation_prob: 0.15,
            foundation_materials: materials::table(&materials::FOUNDATION),
            wall_materials: materials::table(&materials::WALLS),
            roof_materials: materials::table(&materials::ROOF),
            pillar_materials: materials::table(&materials::PILLARS),
        }
    }
}

/// The smallest extents of a house: walls around at least one interior cell, and a
/// foundation, a door two high and a roof.
pub const MIN_SIZE: WorldSize = WorldSize::new(3, 4, 3);

impl ProceduralHouseConfig {
    /// Checks what serde cannot: extents at least [`MIN_SIZE`]'s, storeys at least
    /// two high (the door), probabilities in [0, 1], roof weights non-negative with
    /// a positive sum.
    pub fn validate(&self) -> Result<(), String> {
        for (key, span, min) in [
            ("width", self.width, MIN_SIZE.width),
            ("depth", self.depth, MIN_SIZE.depth),
            ("storey_height", self.storey_height, 2),
        ] {
            if span.min < min {
                return Err(format!("{key}: the minimum {} is below {min}", span.min));
            }
        }
        for (key, p) in [
            ("second_storey_prob", self.second_storey_prob),
            ("pillar_prob", self.pillar_prob),
            ("window_prob", self.window_prob),
            ("wall_variation_prob", self.wall_variation_prob),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{key}: {p} is not a probability"));
            }
        }
        let r = self.roof;
        let weights = [r.flat, r.gabled, r.pyramid];
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) || weights.iter().sum::<f64>() <= 0.0
        {
            return Err(format!(
                "roof: weights {weights:?} must be finite, >= 0 and not all 0"
            ));
        }
        Ok(())
    }
}

/// `procedural_house`: see the module docs.
#[derive(Debug, Clone, Default)]
pub struct ProceduralHouse {
    /// Its configuration.
    pub config: ProceduralHouseConfig,
}

/// The four walls, by the side of the footprint they stand on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wall {
    /// z = 0.
    North,
    /// z = depth - 1.
    South,
    /// x = 0.
    West,
    /// x = width - 1.
    East,
}

impl Wall {
    const ALL: [Self; 4] = [Self::North, Self::South, Self::West, Self::East];

    /// The number of cells along the wall, corners included.
    fn len(self, width: usize, depth: usize) -> usize {
        match self {
            Self::North | Self::South => width,
            Self::West | Self::East => depth,
        }
    }

    /// The `(x, z)` of the wall's cell `t` along it.
    fn cell(self, t: usize, width: usize, depth: usize) -> (usize, usize) {
        match self {
            Self::North => (t, 0),
            Self::South => (t, depth - 1),
            Self::West => (0, t),
            Self::East => (width - 1, t),
        }
    }

    /// Which wall an `(x, z)` on the perimeter belongs to; corners go to the north
    /// and south walls.
    fn of(x: usize, z: usize, depth: usize) -> Self {
        if z == 0 {
            Self::North
        } else if z == depth - 1 {
            Self::South
        } else if x == 0 {
            Self::West
        } else {
            Self::East
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A house under construction: a `width x height x depth` grid of air.
struct Build {
    size: WorldSize,
    ids: Vec<u8>,
}

impl Build {
    fn set(&mut self, x: usize, y: usize, z: usize, id: BlockId) {
        self.ids[flat(self.size, x, y, z)] = id.0;
    }

    /// Fills the rectangle `[x0, x1] x [z0, z1]` of layer `y`.
    fn fill(&mut self, y: usize, (x0, x1): (usize, usize), (z0, z1): (usize, usize), id: BlockId) {
        for x in x0..=x1 {
            for z in z0..=z1 {
                self.set(x, y, z, id);
            }
        }
    }

    /// The structure cut to its used height.
    fn finish(self, used_height: usize) -> Blocks {
        let s = self.size;
        let size = WorldSize::new(s.width, used_height, s.depth);
        let mut ids = Vec::with_capacity(size.num_cells());
        for x in 0..s.width {
            for y in 0..used_height {
                let i = flat(s, x, y, 0);
                ids.extend_from_slice(&self.ids[i..i + s.depth]);
            }
        }
        Blocks::from_raw(size, ids, vec![0; size.num_cells()])
    }
}

/// One storey: its lowest wall layer, its wall height and each wall's material.
struct Storey {
    base: usize,
    height: usize,
    walls: [BlockId; 4],
}

impl ProceduralHouse {
    /// A generator with `config`.
    pub fn new(config: ProceduralHouseConfig) -> Self {
        Self { config }
    }

    fn storey(&self, base: usize, height: usize, rng: &mut dyn RngCore) -> Storey {
        let c = &self.config;
        let main = c.wall_materials.draw(rng);
        let walls = std::array::from_fn(|_| {
            if rng.random::<f64>() < c.wall_variation_prob {
                c.wall_materials.draw(rng)
            } else {
                main
            }
        });
        Storey {
            base,
            height,
            walls,
        }
    }

    /// Draws the house, given the structure size limit `size`.
    fn build(&self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        if size.width < MIN_SIZE.width || size.height < MIN_SIZE.height || size.depth < 3 {
            return Err(GoalError::SizeTooSmall {
                what: "procedural_house",
                size,
                reason: "needs at least 3x4x3",
            });
        }
        let c = &self.config;
        let width = c.width.draw_within(size.width, rng);
        let depth = c.depth.draw_within(size.depth, rng);
        let mut b = Build {
            size: WorldSize::new(width, size.height, depth),
            ids: vec![0; width * size.height * depth],
        };
        let (w1, d1) = (width - 1, depth - 1);

        // Heights: the foundation, storeys and at least one roof layer must fit.
        let first_height = c.storey_height.draw_within(size.height - 2, rng);
        let mut storeys = vec![self.storey(1, first_height, rng)];
        // Room above the first storey for a floor, two-high walls and a roof layer.
        let above = size.height - 1 - first_height - 1;
        if above >= 3 && rng.random::<f64>() < c.second_storey_prob {
            // Above the second storey: one roof layer at least.
            let height = c.storey_height.draw_within(above - 1, rng);
            storeys.push(self.storey(1 + first_height + 1, height, rng));
        }
        let pillars = (rng.random::<f64>() < c.pillar_prob).then(|| c.pillar_materials.draw(rng));

        b.fill(0, (0, w1), (0, d1), c.foundation_materials.draw(rng));
        for (i, storey) in storeys.iter().enumerate() {
            if i > 0 {
                // The upper floor, on beams where there are posts.
                let y = storey.base - 1;
                b.fill(y, (0, w1), (0, d1), c.roof_materials.draw(rng));
                if let Some(beam) = pillars {
                    for x in 0..width {
                        b.set(x, y, 0, beam);
                        b.set(x, y, d1, beam);
                    }
                    for z in 0..depth {
                        b.set(0, y, z, beam);
                        b.set(w1, y, z, beam);
                    }
                }
            }
            for y in storey.base..storey.base + storey.height {
                for wall in Wall::ALL {
                    for t in 0..wall.len(width, depth) {
                        let (x, z) = wall.cell(t, width, depth);
                        b.set(x, y, z, storey.walls[Wall::of(x, z, depth).index()]);
                    }
                }
                if let Some(post) = pillars {
                    for (x, z) in [(0, 0), (0, d1), (w1, 0), (w1, d1)] {
                        b.set(x, y, z, post);
                    }
                }
            }
        }

        // Windows: a row one above each storey's base (two rows in tall storeys),
        // away from the corners and from the door.
        let door_wall = Wall::ALL[rng.random_range(0..4)];
        let door_at = rng.random_range(1..door_wall.len(width, depth) - 1);
        for storey in &storeys {
            let rows = if storey.height >= 4 { 2 } else { 1 };
            for wall in Wall::ALL {
                for t in 1..wall.len(width, depth) - 1 {
                    let near_door =
                        storey.base == 1 && wall == door_wall && t.abs_diff(door_at) <= 1;
                    if near_door || rng.random::<f64>() >= c.window_prob {
                        continue;
                    }
                    let (x, z) = wall.cell(t, width, depth);
                    for y in
                        storey.base + 1..(storey.base + 1 + rows).min(storey.base + storey.height)
                    {
                        b.set(x, y, z, BlockId::GLASS);
                    }
                }
            }
        }
        let (x, z) = door_wall.cell(door_at, width, depth);
        b.set(x, 1, z, BlockId::AIR);
        b.set(x, 2, z, BlockId::AIR);

        let top = storeys.last().expect("one storey at least");
        let roof_base = top.base + top.height;
        let kind = c.roof.draw(rng);
        let material = c.roof_materials.draw(rng);
        let used = roof_base + self.roof(&mut b, roof_base, kind, material, &top.walls);
        Ok(b.finish(used))
    }

    /// Builds the roof from layer `base` up; returns its number of layers.
    fn roof(
        &self,
        b: &mut Build,
        base: usize,
        kind: RoofKind,
        material: BlockId,
        walls: &[BlockId; 4],
    ) -> usize {
        let (width, depth) = (b.size.width, b.size.depth);
        let room = b.size.height - base;
        match kind {
            RoofKind::Flat => {
                b.fill(base, (0, width - 1), (0, depth - 1), material);
                1
            }
            RoofKind::Pyramid => {
                for k in 0..room {
                    let (x0, x1, z0, z1) = (k, width - 1 - k, k, depth - 1 - k);
                    // Close with a full layer when the rectangle has no inside left
                    // or the height runs out.
                    if x1 - x0 < 2 || z1 - z0 < 2 || k + 1 == room {
                        b.fill(base + k, (x0, x1), (z0, z1), material);
                        return k + 1;
                    }
                    b.fill(base + k, (x0, x1), (z0, z0), material);
                    b.fill(base + k, (x0, x1), (z1, z1), material);
                    b.fill(base + k, (x0, x0), (z0, z1), material);
                    b.fill(base + k, (x1, x1), (z0, z1), material);
                }
                room
            }
            RoofKind::Gabled => {
                // The slopes rise from the long walls; the ridge runs along the
                // longer axis.
                let along_x = width >= depth;
                let span = if along_x { depth } else { width };
                let length = if along_x { width } else { depth };
                let (gable_a, gable_b) = if along_x {
                    (walls[Wall::West.index()], walls[Wall::East.index()])
                } else {
                    (walls[Wall::North.index()], walls[Wall::South.index()])
                };
                let mut set = |y: usize, along: usize, across: usize, id: BlockId| {
                    if along_x {
                        b.set(along, y, across, id);
                    } else {
                        b.set(across, y, along, id);
                    }
                };
                for k in 0..room {
                    let (lo, hi) = (k, span - 1 - k);
                    let y = base + k;
                    if hi - lo < 2 || k + 1 == room {
                        for along in 0..length {
                            for across in lo..=hi {
                                set(y, along, across, material);
                            }
                        }
                        return k + 1;
                    }
                    for along in 0..length {
                        set(y, along, lo, material);
                        set(y, along, hi, material);
                    }
                    for across in lo + 1..hi {
                        set(y, 0, across, gable_a);
                        set(y, length - 1, across, gable_b);
                    }
                }
                room
            }
        }
    }
}

impl GoalGenerator for ProceduralHouse {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        self.build(size, rng)
    }
}

#[cfg(test)]
mod tests;
