//! Distribution agents (the reference's Noop, Movement, Random and LowestBlock
//! agents): they fill a distribution over the reference's 28 action
//! channels (ENV_SPEC 4.3), flatten it to the config's flat action space and sample a
//! flat action with their own seeded generator.
//!
//! The arithmetic follows the reference step by step (same divisions, sums in numpy's
//! pairwise order) so that the flat probabilities agree with the recorded ones to the
//! last few ulps. The sampling stream itself is not numpy's (`default_rng` plus
//! `multinomial` is impractical to reproduce): only the distribution is at parity.

use std::fmt;
use std::ops::Range;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::action::{Action, ActionType, FlatLayout};
use crate::block::{BlockId, NUM_BLOCKS};
use crate::config::{Abilities, Config};
use crate::coords::WorldSize;
use crate::obs::{Observation, WorldChannel};
use crate::{mask, numpy};

/// A distribution agent that cannot play in an env config (as the reference refuses).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{agent} cannot be used here: {reason}")]
pub struct Unsupported {
    /// The agent's reference class name.
    pub agent: &'static str,
    /// Why.
    pub reason: &'static str,
}

/// Number of action channels: NOOP, 10 PLACE, BREAK, 6 MOVE, 10 GIVE.
pub const NUM_CHANNELS: usize = 28;

/// The channels of an action type: one per block id for PLACE and GIVE, else one.
pub fn channels_of(kind: ActionType) -> Range<usize> {
    let start = match kind {
        ActionType::Noop => 0,
        ActionType::PlaceBlock => 1,
        ActionType::BreakBlock => 1 + NUM_BLOCKS,
        ActionType::GiveBlock => 8 + NUM_BLOCKS,
        // The six moves follow BREAK in id order.
        m => 2 + NUM_BLOCKS + usize::from(m.id() - ActionType::MovePosX.id()),
    };
    let len = if kind.uses_block() { NUM_BLOCKS } else { 1 };
    start..start + len
}

/// A dense distribution (or any per-action value) over the 28 channels and all cells:
/// a `(28, W, H, D)` float64 array in C order, as `MbagActionDistribution` uses.
#[derive(Clone, PartialEq)]
pub struct ChannelDist {
    size: WorldSize,
    values: Vec<f64>,
}

impl fmt::Debug for ChannelDist {
    // Tens of thousands of values would drown any panic message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nonzero = self.values.iter().filter(|&&v| v != 0.0).count();
        f.debug_struct("ChannelDist")
            .field("size", &self.size)
            .field("nonzero", &nonzero)
            .finish()
    }
}

impl ChannelDist {
    /// An all-zero array for a world size.
    pub fn new(size: WorldSize) -> Self {
        Self {
            size,
            values: vec![0.0; NUM_CHANNELS * size.num_cells()],
        }
    }

    /// The world size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// Sets every value to zero.
    pub fn clear(&mut self) {
        self.values.fill(0.0);
    }

    /// All values, channel-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// All values, mutably.
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }

    fn span(&self, channels: Range<usize>) -> Range<usize> {
        let n = self.size.num_cells();
        channels.start * n..channels.end * n
    }

    /// A contiguous run of channels (each `W*H*D` values, C order).
    pub fn channels(&self, channels: Range<usize>) -> &[f64] {
        &self.values[self.span(channels)]
    }

    /// A contiguous run of channels, mutably.
    pub fn channels_mut(&mut self, channels: Range<usize>) -> &mut [f64] {
        let span = self.span(channels);
        &mut self.values[span]
    }

    /// Sets the array to 1 where a flat mask is valid and 0 elsewhere. Location-free
    /// actions (NOOP, moves) are valid in every cell or none, as in the reference's
    /// C mask; disabled action types stay 0.
    pub fn fill_from_mask(&mut self, mask: &[bool], layout: &FlatLayout) {
        assert_eq!(mask.len(), layout.len(), "mask of another layout");
        self.clear();
        let n = self.size.num_cells();
        for kind in ActionType::ALL {
            let Some(offset) = layout.offset(kind) else {
                continue;
            };
            let out = self.channels_mut(channels_of(kind));
            if kind.uses_location() {
                let len = out.len();
                for (v, &m) in out.iter_mut().zip(&mask[offset..offset + len]) {
                    *v = f64::from(u8::from(m));
                }
            } else if mask[offset] {
                debug_assert_eq!(out.len(), n);
                out.fill(1.0);
            }
        }
    }

    /// Flattens to the config's flat action space: location channels are copied,
    /// location-free ones summed over all cells (`MbagActionDistribution.to_flat`);
    /// channels of disabled types are dropped. Zero entries are left out.
    pub fn to_flat(&self, layout: &FlatLayout, out: &mut FlatDist) {
        out.entries.clear();
        out.len = layout.len();
        for kind in ActionType::ALL {
            let Some(offset) = layout.offset(kind) else {
                continue;
            };
            let values = self.channels(channels_of(kind));
            if kind.uses_location() {
                out.entries.extend(
                    values
                        .iter()
                        .enumerate()
                        .filter(|&(_, &v)| v != 0.0)
                        .map(|(i, &v)| (offset + i, v)),
                );
            } else {
                let total = numpy::sum(values);
                if total != 0.0 {
                    out.entries.push((offset, total));
                }
            }
        }
    }
}

/// A sparse distribution over the flat action space: the non-zero entries in
/// ascending index order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatDist {
    len: usize,
    entries: Vec<(usize, f64)>,
}

impl FlatDist {
    /// The distribution proportional to `weights` (one per flat action; zero,
    /// negative and non-finite weights get no mass), empty if no weight is
    /// positive.
    pub fn from_weights(weights: &[f64]) -> Self {
        let ok = |w: f64| w.is_finite() && w > 0.0;
        let total: f64 = weights.iter().copied().filter(|&w| ok(w)).sum();
        let entries = if total > 0.0 {
            weights
                .iter()
                .enumerate()
                .filter(|&(_, &w)| ok(w))
                .map(|(i, &w)| (i, w / total))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            len: weights.len(),
            entries,
        }
    }

    /// The size of the flat action space (0 before the first flattening).
    pub fn space_len(&self) -> usize {
        self.len
    }

    /// The non-zero `(flat_index, probability)` entries, ascending by index.
    pub fn entries(&self) -> &[(usize, f64)] {
        &self.entries
    }

    /// The number of non-zero entries (the reference's `flat_dist_nnz`).
    pub fn nnz(&self) -> usize {
        self.entries.len()
    }

    /// The probability of a flat action (0 if it is not in the support).
    pub fn prob(&self, flat: usize) -> f64 {
        self.entries
            .binary_search_by_key(&flat, |&(i, _)| i)
            .map_or(0.0, |k| self.entries[k].1)
    }

    /// Draws a flat index with probability proportional to the entries, `None` if
    /// there is no positive finite mass.
    pub fn sample(&self, rng: &mut impl Rng) -> Option<usize> {
        let total: f64 = self.entries.iter().map(|&(_, p)| p).sum();
        if !(total.is_finite() && total > 0.0) {
            return None;
        }
        let mut u = rng.random::<f64>() * total;
        for &(i, p) in &self.entries {
            if u < p {
                return Some(i);
            }
            u -= p;
        }
        // Rounding can leave u just above the last cumulative mass.
        self.entries
            .iter()
            .rev()
            .find(|&&(_, p)| p > 0.0)
            .map(|e| e.0)
    }
}

/// How a distribution agent fills its 28-channel distribution.
pub trait Policy: fmt::Debug + Send + Sized {
    /// The reference class name.
    const NAME: &'static str;

    /// The policy for an env config, or why the reference refuses it.
    fn for_config(config: &Config) -> Result<Self, Unsupported>;

    /// Fills `dist` (already zeroed) for `obs`.
    fn fill(&mut self, obs: &Observation, layout: &FlatLayout, dist: &mut ChannelDist);

    /// Draws a flat index from the same distribution as [`Policy::fill`] without
    /// building it, or `None` to fall back to building it. Only the probabilities
    /// must agree, not the random stream.
    fn sample_direct(
        &mut self,
        _obs: &Observation,
        _layout: &FlatLayout,
        _rng: &mut StdRng,
    ) -> Option<usize> {
        None
    }
}

/// An agent that samples its action from a [`Policy`]'s distribution with its own
/// seeded generator.
///
/// With an all-zero distribution it takes the *last* flat action, as the reference
/// does: numpy's `multinomial` gives the last category whatever mass the others
/// leave, so `argmax` of its draw lands there.
#[derive(Debug)]
pub struct DistributionAgent<P> {
    policy: P,
    layout: FlatLayout,
    channels: ChannelDist,
    flat: FlatDist,
    rng: StdRng,
    /// Build the exact distribution on every action (for inspection), instead of
    /// sampling directly.
    record: bool,
}

/// Always NOOP.
pub type NoopAgent = DistributionAgent<Noop>;
/// Each of the six moves with probability 1/6.
pub type MovementAgent = DistributionAgent<Movement>;
/// Uniform over action types, then over each type's valid actions.
pub type RandomAgent = DistributionAgent<Random>;
/// Breaks, then places, the lowest mismatched blocks first.
pub type LowestBlockAgent = DistributionAgent<LowestBlock>;

impl<P: Policy> DistributionAgent<P> {
    /// An agent for an env config, seeded with 0 until [`DistributionAgent::reset`].
    pub fn new(config: &Config) -> Result<Self, Unsupported> {
        Ok(Self {
            policy: P::for_config(config)?,
            layout: FlatLayout::new(config.world_size, config.abilities),
            channels: ChannelDist::new(config.world_size),
            flat: FlatDist::default(),
            rng: StdRng::seed_from_u64(0),
            record: false,
        })
    }

    /// The flat distribution of the last action (kept only while recording internals,
    /// see [`DistributionAgent::set_recording`]).
    pub fn last_distribution(&self) -> &FlatDist {
        &self.flat
    }

    /// Computes the flat distribution for `obs` without sampling.
    pub fn distribution(&mut self, obs: &Observation) -> &FlatDist {
        self.channels.clear();
        self.policy.fill(obs, &self.layout, &mut self.channels);
        self.channels.to_flat(&self.layout, &mut self.flat);
        &self.flat
    }
}

impl<P: Policy> DistributionAgent<P> {
    /// The reference class name.
    pub fn name(&self) -> &'static str {
        P::NAME
    }

    /// Starts an episode: reseeds the agent's generator.
    pub fn reset(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
        self.flat = FlatDist::default();
    }

    /// Samples the action for `obs`: straight from the policy where it can, else
    /// from the whole distribution (always while recording).
    pub fn act(&mut self, obs: &Observation) -> Action {
        let direct = if self.record {
            None
        } else {
            self.policy.sample_direct(obs, &self.layout, &mut self.rng)
        };
        let flat = direct.unwrap_or_else(|| {
            self.distribution(obs);
            self.flat
                .sample(&mut self.rng)
                .unwrap_or(self.layout.len() - 1)
        });
        self.layout
            .action(flat)
            .expect("sampled indices lie in the flat space")
    }

    /// Whether to build the exact distribution on every action (for inspection).
    pub fn set_recording(&mut self, on: bool) {
        self.record = on;
    }

    /// Whether [`DistributionAgent::set_recording`] is on.
    pub fn recording(&self) -> bool {
        self.record
    }
}

/// [`NoopAgent`]'s policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Noop;

impl Policy for Noop {
    const NAME: &'static str = "NoopAgent";

    fn for_config(_: &Config) -> Result<Self, Unsupported> {
        Ok(Self)
    }

    fn fill(&mut self, _: &Observation, _: &FlatLayout, dist: &mut ChannelDist) {
        dist.channels_mut(channels_of(ActionType::Noop))[0] = 1.0;
    }
}

/// [`MovementAgent`]'s policy. With teleportation the moves have no flat index, so
/// the flat distribution is empty (see [`DistributionAgent`] for what it then does).
#[derive(Clone, Copy, Debug, Default)]
pub struct Movement;

impl Policy for Movement {
    const NAME: &'static str = "MovementAgent";

    fn for_config(_: &Config) -> Result<Self, Unsupported> {
        Ok(Self)
    }

    fn fill(&mut self, _: &Observation, _: &FlatLayout, dist: &mut ChannelDist) {
        for kind in ActionType::MOVES {
            dist.channels_mut(channels_of(kind))[0] = 1.0 / 6.0;
        }
    }
}

/// [`RandomAgent`]'s policy: the no-line-of-sight mask, each action type with a
/// valid entry equally likely (every move is its own type), uniform within a type.
#[derive(Clone, Debug)]
pub struct Random {
    abilities: Abilities,
    /// Keeps the mask between calls: consecutive observations differ in a few cells.
    masks: mask::MaskCache,
}

impl Policy for Random {
    const NAME: &'static str = "RandomAgent";

    fn for_config(config: &Config) -> Result<Self, Unsupported> {
        Ok(Self {
            abilities: config.abilities,
            masks: mask::MaskCache::default(),
        })
    }

    fn fill(&mut self, obs: &Observation, layout: &FlatLayout, dist: &mut ChannelDist) {
        self.masks.update(obs, self.abilities, layout, false);
        dist.fill_from_mask(self.masks.mask(), layout);
        for kind in ActionType::ALL {
            let values = dist.channels_mut(channels_of(kind));
            let total = numpy::sum(values);
            if total > 0.0 {
                values.iter_mut().for_each(|v| *v /= total);
            }
        }
        // With no valid action at all (a walking player without its marker) this is
        // 0/0 as in the reference, which then fails to sample.
        let total = numpy::sum(dist.values());
        dist.values_mut().iter_mut().for_each(|v| *v /= total);
    }

    fn sample_direct(
        &mut self,
        obs: &Observation,
        layout: &FlatLayout,
        rng: &mut StdRng,
    ) -> Option<usize> {
        let counts = self.masks.update(obs, self.abilities, layout, false);
        // Every type with a valid entry has equal mass, spread evenly over its entries.
        let mut types = [ActionType::Noop; 10];
        let mut k = 0;
        for kind in ActionType::ALL {
            if layout.offset(kind).is_some() && counts.per_type[kind.id() as usize] > 0 {
                types[k] = kind;
                k += 1;
            }
        }
        if k == 0 {
            return None;
        }
        let kind = types[rng.random_range(0..k)];
        let offset = layout.offset(kind)?;
        let pick = rng.random_range(0..counts.per_type[kind.id() as usize]);
        let span = &self.masks.mask()[offset..offset + layout.block_len(kind)];
        mask::nth_valid(span, pick).map(|i| offset + i)
    }
}

/// [`LowestBlockAgent`]'s policy (teleportation and infinite blocks only): break a
/// lowest mismatched breakable block, else place a lowest missing block, uniformly.
#[derive(Clone, Debug)]
pub struct LowestBlock {
    abilities: Abilities,
    /// Keeps the mask between calls: consecutive observations differ in a few cells.
    masks: mask::MaskCache,
    candidates: Vec<usize>,
}

impl Policy for LowestBlock {
    const NAME: &'static str = "LowestBlockAgent";

    fn for_config(config: &Config) -> Result<Self, Unsupported> {
        if !(config.abilities.inf_blocks && config.abilities.teleportation) {
            return Err(Unsupported {
                agent: Self::NAME,
                reason: "it needs teleportation and infinite blocks (it cannot move or \
                         collect resources)",
            });
        }
        Ok(Self {
            abilities: config.abilities,
            masks: mask::MaskCache::default(),
            candidates: Vec::new(),
        })
    }

    fn fill(&mut self, obs: &Observation, layout: &FlatLayout, dist: &mut ChannelDist) {
        let Some(kind) = self.lowest_candidates(obs, layout) else {
            dist.channels_mut(channels_of(ActionType::Noop))[0] = 1.0;
            return;
        };
        let goal = obs.channel(WorldChannel::GoalBlocks);
        let channels = channels_of(kind);
        for &i in &self.candidates {
            let channel = match kind {
                ActionType::PlaceBlock => channels.start + usize::from(goal[i]),
                _ => channels.start,
            };
            dist.channels_mut(channel..channel + 1)[i] = 1.0;
        }
        let total = numpy::sum(dist.values());
        dist.values_mut().iter_mut().for_each(|v| *v /= total);
    }

    fn sample_direct(
        &mut self,
        obs: &Observation,
        layout: &FlatLayout,
        rng: &mut StdRng,
    ) -> Option<usize> {
        let Some(kind) = self.lowest_candidates(obs, layout) else {
            return Some(0);
        };
        let i = self.candidates[rng.random_range(0..self.candidates.len())];
        let n = obs.size().num_cells();
        let offset = layout.offset(kind)?;
        Some(match kind {
            ActionType::PlaceBlock => {
                offset + usize::from(obs.channel(WorldChannel::GoalBlocks)[i]) * n + i
            }
            _ => offset + i,
        })
    }
}

/// Lists the cells of the lowest layer (y) that has any cell `wanted` (by its
/// current block, goal block and mask entry), in flat index order; returns
/// whether there was one.
fn lowest_layer(
    size: WorldSize,
    [current, goal]: [&[u8]; 2],
    valid: &[bool],
    wanted: impl Fn(u8, u8, bool) -> bool,
    out: &mut Vec<usize>,
) -> bool {
    for y in 0..size.height {
        for x in 0..size.width {
            let row = (x * size.height + y) * size.depth;
            let cells = row..row + size.depth;
            let (c, g, v) = (&current[cells.clone()], &goal[cells.clone()], &valid[cells]);
            // Branch-free over the row first: most rows hold no candidate.
            let any = c
                .iter()
                .zip(g)
                .zip(v)
                .fold(false, |acc, ((&c, &g), &v)| acc | wanted(c, g, v));
            if any {
                out.extend(
                    (0..size.depth)
                        .filter(|&z| wanted(c[z], g[z], v[z]))
                        .map(|z| row + z),
                );
            }
        }
        if !out.is_empty() {
            return true;
        }
    }
    false
}

impl LowestBlock {
    /// Fills `self.candidates` with the lowest layer's breakable wrong blocks, or
    /// else the lowest layer's placeable missing ones, and returns which kind they
    /// are; `None` if there is nothing to do.
    fn lowest_candidates(&mut self, obs: &Observation, layout: &FlatLayout) -> Option<ActionType> {
        self.masks.update(obs, self.abilities, layout, false);
        let mask = self.masks.mask();
        let size = obs.size();
        let n = size.num_cells();
        let current = obs.channel(WorldChannel::CurrentBlocks);
        let goal = obs.channel(WorldChannel::GoalBlocks);
        let break_valid = layout
            .offset(ActionType::BreakBlock)
            .map(|o| &mask[o..o + n]);
        // Every block has the same place mask here, so dirt stands for all.
        let place_valid = layout
            .offset(ActionType::PlaceBlock)
            .map(|o| &mask[o + usize::from(BlockId::DIRT.0) * n..][..n]);
        // Layer by layer from the bottom, so that only the lowest candidates are
        // listed (in flat index order): breaking first, anywhere, then placing.
        self.candidates.clear();
        if let Some(valid) = break_valid {
            let wanted = |c: u8, g: u8, v: bool| (c != g) & v;
            if lowest_layer(size, [current, goal], valid, wanted, &mut self.candidates) {
                return Some(ActionType::BreakBlock);
            }
        }
        if let Some(valid) = place_valid {
            let wanted = |c: u8, g: u8, v: bool| (c == 0) & (g != 0) & v;
            if lowest_layer(size, [current, goal], valid, wanted, &mut self.candidates) {
                return Some(ActionType::PlaceBlock);
            }
        }
        None
    }
}
