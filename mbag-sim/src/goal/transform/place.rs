//! `randomly_place`, `add_grass` and `remove_invisible_non_dirt`.

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::goal::grid::{fits, flat};
use crate::goal::{GoalError, GoalGenerator};
use crate::{BlockId, Blocks, WorldSize};

/// `randomly_place`: the inner structure placed in an all-air grid of exactly the
/// requested size, at y = 0 and uniformly random x and z offsets.
#[derive(Debug)]
pub struct RandomlyPlace {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
}

/// Copies `structure` (ids and states) into an air grid of `size` at `(dx, 0, dz)`.
pub fn place_at(
    structure: &Blocks,
    size: WorldSize,
    dx: usize,
    dz: usize,
) -> Result<Blocks, GoalError> {
    let s = structure.size();
    if !fits(WorldSize::new(s.width + dx, s.height, s.depth + dz), size) {
        return Err(GoalError::DoesNotFit {
            what: "randomly_place",
            structure: s,
            size,
        });
    }
    let mut out = Blocks::air(size);
    for x in 0..s.width {
        for y in 0..s.height {
            let src = flat(s, x, y, 0);
            let dst = flat(size, x + dx, y, dz);
            out.ids_mut()[dst..dst + s.depth].copy_from_slice(&structure.ids()[src..src + s.depth]);
            out.states_mut()[dst..dst + s.depth]
                .copy_from_slice(&structure.states()[src..src + s.depth]);
        }
    }
    Ok(out)
}

impl GoalGenerator for RandomlyPlace {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let structure = self.inner.generate(size, rng)?;
        let s = structure.size();
        if !fits(s, size) {
            return Err(GoalError::DoesNotFit {
                what: "randomly_place",
                structure: s,
                size,
            });
        }
        let dx = rng.random_range(0..=size.width - s.width);
        let dz = rng.random_range(0..=size.depth - s.depth);
        place_at(&structure, size, dx, dz)
    }
}

/// How [`AddGrass`] adds dirt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddGrassMode {
    /// Air cells of layer 0 become dirt.
    #[default]
    Surround,
    /// All of layer 0 becomes dirt.
    Replace,
    /// Generate one layer lower and put a dirt layer below.
    Concatenate,
}

/// Configuration of [`AddGrass`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AddGrassConfig {
    /// How dirt is added.
    pub mode: AddGrassMode,
}

/// `add_grass`: dirt on the bottom layer.
#[derive(Debug)]
pub struct AddGrass {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: AddGrassConfig,
}

/// Applies the `surround` or `replace` rule to layer 0 (ids only, as the reference).
pub fn add_grass_in_place(goal: &mut Blocks, replace: bool) {
    let size = goal.size();
    if size.height == 0 {
        return;
    }
    for x in 0..size.width {
        for z in 0..size.depth {
            let i = flat(size, x, 0, z);
            if replace || goal.ids()[i] == BlockId::AIR.0 {
                goal.ids_mut()[i] = BlockId::DIRT.0;
            }
        }
    }
}

/// Puts `goal` on top of a new dirt layer (ids and states copied; the dirt has state 0).
pub fn concatenate_grass(goal: &Blocks) -> Blocks {
    let s = goal.size();
    let size = WorldSize::new(s.width, s.height + 1, s.depth);
    let mut out = Blocks::air(size);
    for x in 0..s.width {
        for z in 0..s.depth {
            out.ids_mut()[flat(size, x, 0, z)] = BlockId::DIRT.0;
        }
        for y in 0..s.height {
            let src = flat(s, x, y, 0);
            let dst = flat(size, x, y + 1, 0);
            out.ids_mut()[dst..dst + s.depth].copy_from_slice(&goal.ids()[src..src + s.depth]);
            out.states_mut()[dst..dst + s.depth]
                .copy_from_slice(&goal.states()[src..src + s.depth]);
        }
    }
    out
}

impl GoalGenerator for AddGrass {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        match self.config.mode {
            AddGrassMode::Concatenate => {
                let Some(lower) = size.height.checked_sub(1) else {
                    return Err(GoalError::SizeTooSmall {
                        what: "add_grass",
                        size,
                        reason: "concatenate needs height >= 1",
                    });
                };
                let smaller = self
                    .inner
                    .generate(WorldSize::new(size.width, lower, size.depth), rng)?;
                Ok(concatenate_grass(&smaller))
            }
            mode => {
                let mut goal = self.inner.generate(size, rng)?;
                add_grass_in_place(&mut goal, mode == AddGrassMode::Replace);
                Ok(goal)
            }
        }
    }
}

/// `remove_invisible_non_dirt`: layer-0 blocks covered by a layer-1 block other than
/// air or glass become dirt.
#[derive(Debug)]
pub struct RemoveInvisibleNonDirt {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
}

/// The rule of [`RemoveInvisibleNonDirt`], in place (ids only). A structure less than
/// two layers high is an error, as in the reference (`IndexError`).
pub fn remove_invisible_non_dirt(goal: &mut Blocks) -> Result<(), GoalError> {
    let size = goal.size();
    if size.height < 2 {
        return Err(GoalError::SizeTooSmall {
            what: "remove_invisible_non_dirt",
            size,
            reason: "needs height >= 2",
        });
    }
    for x in 0..size.width {
        for z in 0..size.depth {
            let above = goal.ids()[flat(size, x, 1, z)];
            let visible = above == BlockId::AIR.0 || above == BlockId::GLASS.0;
            let i = flat(size, x, 0, z);
            if !visible && goal.ids()[i] != BlockId::AIR.0 {
                goal.ids_mut()[i] = BlockId::DIRT.0;
            }
        }
    }
    Ok(())
}

impl GoalGenerator for RemoveInvisibleNonDirt {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mut goal = self.inner.generate(size, rng)?;
        remove_invisible_non_dirt(&mut goal)?;
        Ok(goal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;
    use crate::goal::simple::SetGoal;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn column() -> Blocks {
        // 1x3x2: x=0: (y0: stone, air) (y1: planks, glass) (y2: air, air)
        from_ids(WorldSize::new(1, 3, 2), vec![7, 0, 6, 4, 0, 0])
    }

    #[test]
    fn randomly_place_stays_inside_and_on_the_ground() {
        let mut t = RandomlyPlace {
            inner: Box::new(SetGoal {
                goals: vec![column()],
            }),
        };
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..10 {
            let out = t.generate(WorldSize::new(3, 4, 3), &mut rng).unwrap();
            assert_eq!(out.size(), WorldSize::new(3, 4, 3));
            assert_eq!(out.count_non_air(), 3);
        }
        let placed = place_at(&column(), WorldSize::new(2, 3, 3), 1, 1).unwrap();
        assert_eq!(placed.ids()[flat(placed.size(), 1, 0, 1)], 7);
        assert_eq!(placed.ids()[flat(placed.size(), 1, 1, 2)], 4);
        assert!(place_at(&column(), WorldSize::new(1, 3, 2), 1, 0).is_err());
    }

    #[test]
    fn add_grass_modes() {
        let mut g = column();
        add_grass_in_place(&mut g, false);
        assert_eq!(g.ids(), &[7, 2, 6, 4, 0, 0]);
        let mut g = column();
        add_grass_in_place(&mut g, true);
        assert_eq!(g.ids(), &[2, 2, 6, 4, 0, 0]);
        let g = concatenate_grass(&column());
        assert_eq!(g.size(), WorldSize::new(1, 4, 2));
        assert_eq!(g.ids(), &[2, 2, 7, 0, 6, 4, 0, 0]);

        let mut t = AddGrass {
            inner: Box::new(SetGoal {
                goals: vec![column()],
            }),
            config: AddGrassConfig {
                mode: AddGrassMode::Concatenate,
            },
        };
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(
            t.generate(WorldSize::new(1, 4, 2), &mut rng)
                .unwrap()
                .size()
                .height,
            4
        );
        assert!(
            t.generate(WorldSize::new(1, 3, 2), &mut rng).is_err(),
            "inner gets height 2"
        );
    }

    #[test]
    fn remove_invisible_keeps_blocks_under_air_and_glass() {
        let mut g = from_ids(WorldSize::new(1, 2, 3), vec![7, 7, 0, 6, 4, 0]);
        remove_invisible_non_dirt(&mut g).unwrap();
        assert_eq!(g.ids(), &[2, 7, 0, 6, 4, 0]);
        let mut flat_goal = from_ids(WorldSize::new(1, 1, 1), vec![7]);
        assert!(remove_invisible_non_dirt(&mut flat_goal).is_err());
    }
}
