//! `uniform_block_type` and `mirror`.

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::goal::grid::flat;
use crate::goal::{GoalError, GoalGenerator};
use crate::{BlockId, Blocks, WorldSize};

/// Configuration of [`UniformBlockType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UniformBlockTypeConfig {
    /// The id every non-air cell gets (default 2, dirt).
    pub block_type: u8,
}

impl Default for UniformBlockTypeConfig {
    fn default() -> Self {
        Self {
            block_type: BlockId::DIRT.0,
        }
    }
}

/// `uniform_block_type`: every non-air cell becomes `block_type`.
#[derive(Debug)]
pub struct UniformBlockType {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
    /// Its configuration.
    pub config: UniformBlockTypeConfig,
}

/// Sets every non-air id to `block_type` (states kept).
pub fn uniform_block_type(goal: &mut Blocks, block_type: BlockId) {
    for id in goal.ids_mut() {
        if *id != BlockId::AIR.0 {
            *id = block_type.0;
        }
    }
}

impl GoalGenerator for UniformBlockType {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mut goal = self.inner.generate(size, rng)?;
        uniform_block_type(&mut goal, BlockId(self.config.block_type));
        Ok(goal)
    }
}

/// `mirror`: the left half copied mirrored onto the right half.
#[derive(Debug)]
pub struct Mirror {
    /// The inner generator.
    pub inner: Box<dyn GoalGenerator>,
}

/// For x < W/2, copies slice x onto slice W-1-x (ids only).
pub fn mirror_x(goal: &mut Blocks) {
    let size = goal.size();
    let slice = size.height * size.depth;
    for x in 0..size.width / 2 {
        let src = flat(size, x, 0, 0);
        let dst = flat(size, size.width - 1 - x, 0, 0);
        goal.ids_mut().copy_within(src..src + slice, dst);
    }
}

impl GoalGenerator for Mirror {
    fn generate(&mut self, size: WorldSize, rng: &mut dyn RngCore) -> Result<Blocks, GoalError> {
        let mut goal = self.inner.generate(size, rng)?;
        mirror_x(&mut goal);
        Ok(goal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::grid::from_ids;

    #[test]
    fn uniform_keeps_air() {
        let mut g = from_ids(WorldSize::new(1, 1, 4), vec![0, 3, 9, 0]);
        uniform_block_type(&mut g, BlockId::STONEBRICK);
        assert_eq!(g.ids(), &[0, 8, 8, 0]);
    }

    #[test]
    fn mirror_copies_left_half() {
        let mut g = from_ids(WorldSize::new(5, 1, 1), vec![1, 2, 3, 4, 5]);
        mirror_x(&mut g);
        assert_eq!(g.ids(), &[1, 2, 3, 2, 1]);
        let mut even = from_ids(WorldSize::new(4, 1, 2), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        mirror_x(&mut even);
        assert_eq!(even.ids(), &[1, 2, 3, 4, 3, 4, 1, 2]);
    }
}
