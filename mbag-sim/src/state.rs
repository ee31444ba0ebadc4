//! The mutable state of an episode, separate from the fixed configuration so it can
//! be snapshot and restored cheaply (replay, search).

use super::block::{BlockId, Blocks};
use super::coords::{CellIndex, PlayerPos};
use super::inventory::Inventory;

/// `last_interacted` value of a cell nobody has touched.
pub const NO_INTERACTION: i8 = -1;

/// Everything that changes during an episode.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvState {
    /// The current world.
    pub blocks: Blocks,
    /// Per cell, the index of the player who last placed or broke it, or -1.
    pub last_interacted: Vec<i8>,
    /// Feet position of every player.
    pub player_positions: Vec<PlayerPos>,
    /// Inventory of every player (unused with infinite blocks).
    pub inventories: Vec<Inventory>,
    /// The env timestep (incremented by every step).
    pub timestep: u64,
    /// Steps since some player's goal percentage last reached a new maximum.
    pub timesteps_with_no_progress: u64,
    /// Per player, the best goal percentage so far.
    pub maximum_goal_percentages: Vec<f64>,
}

/// How the current world compares with the goal, kept up to date cell by cell so that
/// similarity and percentage cost O(1) per step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GoalMatch {
    /// Cells whose block id equals the goal's.
    pub matching: usize,
    /// Cells where both world and goal are non-air but differ.
    pub wrong_type: usize,
}

impl GoalMatch {
    /// Counts from scratch.
    pub fn count(world: &Blocks, goal: &Blocks) -> Self {
        let mut m = Self::default();
        for (&w, &g) in world.ids().iter().zip(goal.ids()) {
            m.add(w, g);
        }
        m
    }

    #[inline]
    fn add(&mut self, w: u8, g: u8) {
        if w == g {
            self.matching += 1;
        } else if w != 0 && g != 0 {
            self.wrong_type += 1;
        }
    }

    #[inline]
    fn remove(&mut self, w: u8, g: u8) {
        if w == g {
            self.matching -= 1;
        } else if w != 0 && g != 0 {
            self.wrong_type -= 1;
        }
    }

    /// Records that the world cell at `i` changes from `before` to `after`.
    #[inline]
    pub fn update(&mut self, goal: &Blocks, i: CellIndex, before: BlockId, after: BlockId) {
        let g = goal.id_at(i).0;
        self.remove(before.0, g);
        self.add(after.0, g);
    }

    /// Similarity without partial credit: the number of matching cells.
    pub fn similarity(&self) -> f64 {
        self.matching as f64
    }

    /// Similarity with partial credit `place_wrong` for wrong-type blocks.
    pub fn partial_similarity(&self, place_wrong: f64) -> f64 {
        self.matching as f64 + place_wrong * self.wrong_type as f64
    }
}

/// Per-cell similarity with partial credit (ENV_SPEC 7.1).
#[inline]
pub fn cell_similarity(world: BlockId, goal: BlockId, place_wrong: f64) -> f64 {
    if world == goal {
        1.0
    } else if !world.is_air() && !goal.is_air() {
        place_wrong
    } else {
        0.0
    }
}
