//! Observations: what one player sees (ENV_SPEC section 9).

use super::block::NUM_BLOCKS;
use super::coords::WorldSize;

/// The channels of the world observation, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum WorldChannel {
    /// Current block ids.
    CurrentBlocks = 0,
    /// Current block states.
    CurrentBlockStates = 1,
    /// Goal block ids (zero when the goal is hidden from this player).
    GoalBlocks = 2,
    /// Goal block states (zero when hidden).
    GoalBlockStates = 3,
    /// Player markers (walking mode only): 1 = me, 2.. = the others in index order.
    PlayerLocations = 4,
    /// Who last placed or broke each cell, with the same markers; 0 = nobody.
    LastInteracted = 5,
}

/// Number of world-observation channels.
pub const NUM_WORLD_CHANNELS: usize = 6;
/// Marker of the observing player in channels 4 and 5.
pub const CURRENT_PLAYER: u8 = 1;
/// Marker of nobody.
pub const NO_ONE: u8 = 0;

/// One player's observation: the `(6, W, H, D)` world array, the `(P, 10)` inventory
/// counts (own row first) and the timestep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    size: WorldSize,
    num_players: usize,
    /// `(6, W, H, D)` uint8 array, C order (channel-major).
    pub world: Vec<u8>,
    /// `(P, 10)` block counts: row 0 the observer, then the others in index order.
    pub inventory: Vec<i32>,
    /// The env timestep.
    pub timestep: i32,
}

impl Observation {
    /// An all-zero observation, to be filled by the env.
    pub fn new(size: WorldSize, num_players: usize) -> Self {
        Self {
            size,
            num_players,
            world: vec![0; NUM_WORLD_CHANNELS * size.num_cells()],
            inventory: vec![0; num_players * NUM_BLOCKS],
            timestep: 0,
        }
    }

    /// An observation from raw arrays.
    ///
    /// # Panics
    /// If the arrays do not have the sizes above.
    pub fn from_raw(
        size: WorldSize,
        num_players: usize,
        world: Vec<u8>,
        inventory: Vec<i32>,
        timestep: i32,
    ) -> Self {
        assert_eq!(world.len(), NUM_WORLD_CHANNELS * size.num_cells());
        assert_eq!(inventory.len(), num_players * NUM_BLOCKS);
        Self {
            size,
            num_players,
            world,
            inventory,
            timestep,
        }
    }

    /// The world size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The number of players.
    pub fn num_players(&self) -> usize {
        self.num_players
    }

    /// One channel of the world array, C order over (x, y, z).
    #[inline]
    pub fn channel(&self, channel: WorldChannel) -> &[u8] {
        let n = self.size.num_cells();
        let c = channel as usize;
        &self.world[c * n..(c + 1) * n]
    }

    /// One channel, mutably.
    #[inline]
    pub fn channel_mut(&mut self, channel: WorldChannel) -> &mut [u8] {
        let n = self.size.num_cells();
        let c = channel as usize;
        &mut self.world[c * n..(c + 1) * n]
    }

    /// A row of the inventory array: 0 = the observer.
    #[inline]
    pub fn inventory_row(&self, row: usize) -> &[i32] {
        &self.inventory[row * NUM_BLOCKS..(row + 1) * NUM_BLOCKS]
    }
}
