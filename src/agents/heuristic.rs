//! Deterministic builders of ENV_SPEC section 13: LayerBuilderAgent (up to one
//! uniform choice per step), PriorityQueueAgent and MirrorBuildingAgent.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Agent, Internals};
use crate::sim::action::{Action, ActionType};
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::{Cell, CellIndex, WorldSize};
use crate::sim::obs::{Observation, WorldChannel};
use crate::sim::pyhash::PyRandom;

/// Picks an index uniformly among `n` candidates: the reference's `random.choice`.
///
/// The reference draws from Python's process-global `random`, whose state depends on
/// everything else the process did; it cannot be reproduced in general, so the
/// choice is injectable: a seeded generator for play, a script for replays.
pub trait Chooser: fmt::Debug + Send {
    /// An index in `0..n` (`n > 0`).
    fn choose(&mut self, n: usize) -> usize;

    /// Called by the agent's reset with the agent's seed.
    fn reseed(&mut self, seed: u64);
}

/// Uniform choices from a seeded [`StdRng`].
#[derive(Debug)]
pub struct RngChooser(StdRng);

impl RngChooser {
    /// A chooser seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(StdRng::seed_from_u64(seed))
    }
}

impl Chooser for RngChooser {
    fn choose(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }

    fn reseed(&mut self, seed: u64) {
        self.0 = StdRng::seed_from_u64(seed);
    }
}

/// Python's own `random.Random(seed).choice` index stream, for reproducing a
/// reference run whose global `random` was seeded right before the episode.
#[derive(Debug)]
pub struct PyRandomChooser(PyRandom);

impl PyRandomChooser {
    /// `random.Random(seed)`.
    pub fn new(seed: i64) -> Self {
        Self(PyRandom::new(seed))
    }
}

impl Chooser for PyRandomChooser {
    fn choose(&mut self, n: usize) -> usize {
        self.0.choice_index(n)
    }

    fn reseed(&mut self, seed: u64) {
        // Python seeds with the integer's absolute value; a u64 seed above i64::MAX
        // is folded, which only matters for seeds no reference run uses.
        self.0 = PyRandom::new(seed as i64);
    }
}

/// Replays recorded choices in order (e.g. a golden file's `chosen` values).
///
/// When the script runs out it answers 0 and remembers that it did, so a caller can
/// tell a replay that asked for more choices than were recorded.
#[derive(Clone, Debug, Default)]
pub struct ScriptedChooser {
    script: VecDeque<usize>,
    overrun: bool,
}

impl ScriptedChooser {
    /// A chooser answering `choices` in order.
    pub fn new(choices: impl IntoIterator<Item = usize>) -> Self {
        Self {
            script: choices.into_iter().collect(),
            overrun: false,
        }
    }

    /// Whether a choice was asked for after the script ran out.
    pub fn overrun(&self) -> bool {
        self.overrun
    }
}

impl Chooser for ScriptedChooser {
    fn choose(&mut self, _n: usize) -> usize {
        self.script.pop_front().unwrap_or_else(|| {
            self.overrun = true;
            0
        })
    }

    fn reseed(&mut self, _seed: u64) {}
}

/// One uniform choice of [`LayerBuilderAgent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// How many mismatched cells the layer had.
    pub num_candidates: usize,
    /// The index the chooser returned.
    pub chosen: usize,
}

fn obs_cell_index(size: WorldSize, x: usize, y: usize, z: usize) -> usize {
    (x * size.height + y) * size.depth + z
}

fn location(size: WorldSize, x: usize, y: usize, z: usize) -> CellIndex {
    size.index(Cell::new(x as i32, y as i32, z as i32))
}

/// Builds the goal one layer at a time from the bottom: while the current layer's
/// ids and states equal the goal's, move up; then fix a uniformly chosen mismatched
/// cell of the layer (PLACE its goal id on air, else BREAK). NOOP once above the top.
#[derive(Debug)]
pub struct LayerBuilderAgent {
    size: WorldSize,
    chooser: Box<dyn Chooser>,
    current_layer: usize,
    last_choice: Option<Choice>,
    candidates: Vec<(usize, usize)>,
}

impl LayerBuilderAgent {
    /// An agent choosing with a seeded [`RngChooser`].
    pub fn new(config: &Config) -> Self {
        Self::with_chooser(config, Box::new(RngChooser::new(0)))
    }

    /// An agent choosing with `chooser`.
    pub fn with_chooser(config: &Config, chooser: Box<dyn Chooser>) -> Self {
        Self {
            size: config.world_size,
            chooser,
            current_layer: 0,
            last_choice: None,
            candidates: Vec::new(),
        }
    }

    /// The layer (y) being built.
    pub fn current_layer(&self) -> usize {
        self.current_layer
    }

    /// The chooser, e.g. to inspect a [`ScriptedChooser`] after a replay.
    pub fn chooser(&self) -> &dyn Chooser {
        self.chooser.as_ref()
    }

    fn layer_done(&self, obs: &Observation, y: usize) -> bool {
        let size = self.size;
        let [ids, states, goal_ids, goal_states] = [
            WorldChannel::CurrentBlocks,
            WorldChannel::CurrentBlockStates,
            WorldChannel::GoalBlocks,
            WorldChannel::GoalBlockStates,
        ]
        .map(|c| obs.channel(c));
        (0..size.width).all(|x| {
            (0..size.depth).all(|z| {
                let i = obs_cell_index(size, x, y, z);
                ids[i] == goal_ids[i] && states[i] == goal_states[i]
            })
        })
    }
}

impl Agent for LayerBuilderAgent {
    fn name(&self) -> &'static str {
        "LayerBuilderAgent"
    }

    fn reset(&mut self, seed: u64) {
        self.current_layer = 0;
        self.last_choice = None;
        self.chooser.reseed(seed);
    }

    fn act(&mut self, obs: &Observation) -> Action {
        let size = self.size;
        while self.current_layer < size.height && self.layer_done(obs, self.current_layer) {
            self.current_layer += 1;
        }
        self.last_choice = None;
        if self.current_layer == size.height {
            return Action::NOOP;
        }
        let y = self.current_layer;
        let ids = obs.channel(WorldChannel::CurrentBlocks);
        let goal = obs.channel(WorldChannel::GoalBlocks);
        self.candidates.clear();
        for x in 0..size.width {
            for z in 0..size.depth {
                let i = obs_cell_index(size, x, y, z);
                if ids[i] != goal[i] {
                    self.candidates.push((x, z));
                }
            }
        }
        // A layer whose ids match but whose states do not has no candidate; the
        // reference's random.choice raises on the empty list there. Goals never carry
        // states that differ from the world's, so this is a NOOP rather than a panic.
        let n = self.candidates.len();
        if n == 0 {
            return Action::NOOP;
        }
        let chosen = self.chooser.choose(n);
        self.last_choice = Some(Choice {
            num_candidates: n,
            chosen,
        });
        // A scripted chooser may answer out of range; the recorded choice shows it.
        let (x, z) = self.candidates[chosen.min(n - 1)];
        let i = obs_cell_index(size, x, y, z);
        let loc = location(size, x, y, z);
        if ids[i] == BlockId::AIR.0 {
            Action::new(ActionType::PlaceBlock, loc, BlockId(goal[i]))
        } else {
            Action::new(ActionType::BreakBlock, loc, BlockId::AIR)
        }
    }

    fn internals(&self) -> Internals<'_> {
        Internals::LayerBuilder {
            choice: self.last_choice,
            current_layer: self.current_layer,
        }
    }
}

/// An entry of [`PriorityQueueAgent`]'s queue: `(y, (x, z))`, ordered like the
/// reference's heap tuples.
pub type QueueEntry = (usize, (usize, usize));

/// Works through mismatched cells lowest layer first, exploring the neighbours of
/// each cell it visits (ENV_SPEC section 13).
///
/// The reference keeps a `heapq` list. It never holds duplicates: seeding adds
/// distinct cells, neighbour pushes check membership, and the one unchecked push
/// re-adds the cell just popped. So an ordered set pops the same minimum and its
/// iteration order is the reference's `sorted(heap)`.
#[derive(Clone, Debug)]
pub struct PriorityQueueAgent {
    size: WorldSize,
    seeding: bool,
    frontier: BTreeSet<QueueEntry>,
}

impl PriorityQueueAgent {
    /// Neighbour order of the reference: +z, -z, +y, -y, +x, -x.
    const NEIGHBOURS: [(i32, i32, i32); 6] = [
        (0, 0, 1),
        (0, 0, -1),
        (0, 1, 0),
        (0, -1, 0),
        (1, 0, 0),
        (-1, 0, 0),
    ];

    /// Layers seeded on the first call.
    const SEED_LAYERS: usize = 3;

    /// A fresh agent.
    pub fn new(config: &Config) -> Self {
        Self {
            size: config.world_size,
            seeding: false,
            frontier: BTreeSet::new(),
        }
    }

    /// The queue, smallest first.
    pub fn frontier(&self) -> impl Iterator<Item = &QueueEntry> {
        self.frontier.iter()
    }
}

impl Agent for PriorityQueueAgent {
    fn name(&self) -> &'static str {
        "PriorityQueueAgent"
    }

    fn reset(&mut self, _seed: u64) {
        self.seeding = false;
        self.frontier.clear();
    }

    fn act(&mut self, obs: &Observation) -> Action {
        let size = self.size;
        let ids = obs.channel(WorldChannel::CurrentBlocks);
        let goal = obs.channel(WorldChannel::GoalBlocks);
        let mismatched = |x: usize, y: usize, z: usize| {
            let i = obs_cell_index(size, x, y, z);
            ids[i] != goal[i]
        };
        if !self.seeding {
            self.seeding = true;
            // The reference indexes layers 0..3 unconditionally; lower worlds would
            // make it fail, here they just seed what exists.
            for y in 0..Self::SEED_LAYERS.min(size.height) {
                for x in 0..size.width {
                    for z in 0..size.depth {
                        if mismatched(x, y, z) {
                            self.frontier.insert((y, (x, z)));
                        }
                    }
                }
            }
        }
        let Some((y, (x, z))) = self.frontier.pop_first() else {
            return Action::NOOP;
        };
        let cell = Cell::new(x as i32, y as i32, z as i32);
        for (dx, dy, dz) in Self::NEIGHBOURS {
            let n = cell.offset(dx, dy, dz);
            if !size.contains(n) {
                continue;
            }
            let (nx, ny, nz) = (n.x as usize, n.y as usize, n.z as usize);
            if mismatched(nx, ny, nz) {
                self.frontier.insert((ny, (nx, nz)));
            }
        }
        let i = obs_cell_index(size, x, y, z);
        let loc = location(size, x, y, z);
        if ids[i] == BlockId::AIR.0 {
            // Even when the goal is air too (a cell queued as a neighbour of a
            // neighbour can match by now): the reference emits PLACE air, which fails.
            Action::new(ActionType::PlaceBlock, loc, BlockId(goal[i]))
        } else {
            if goal[i] != BlockId::AIR.0 {
                self.frontier.insert((y, (x, z)));
            }
            Action::new(ActionType::BreakBlock, loc, BlockId::AIR)
        }
    }

    fn internals(&self) -> Internals<'_> {
        Internals::PriorityQueue {
            seeding: self.seeding,
            frontier: self.frontier.iter().copied().collect(),
        }
    }
}

/// Mirrors the world across x: fills air on each side from the other, then places
/// the mirrored block at the first cell (C order) where the mirror differs.
#[derive(Clone, Debug)]
pub struct MirrorBuildingAgent {
    size: WorldSize,
    mirror: Vec<u8>,
}

impl MirrorBuildingAgent {
    /// A fresh agent.
    pub fn new(config: &Config) -> Self {
        Self {
            size: config.world_size,
            mirror: Vec::new(),
        }
    }

    /// The mirrored ids of `blocks` (one `W*H*D` C-order grid): for each x < W/2,
    /// the right slice takes the left's ids where it is air, then the left takes the
    /// (updated) right's where it is air.
    pub fn mirrored(size: WorldSize, blocks: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(blocks);
        let slice = size.height * size.depth;
        for x in 0..size.width / 2 {
            let (left, right) = (x * slice, (size.width - 1 - x) * slice);
            for k in 0..slice {
                if out[right + k] == BlockId::AIR.0 {
                    out[right + k] = out[left + k];
                }
                if out[left + k] == BlockId::AIR.0 {
                    out[left + k] = out[right + k];
                }
            }
        }
    }
}

impl Agent for MirrorBuildingAgent {
    fn name(&self) -> &'static str {
        "MirrorBuildingAgent"
    }

    fn reset(&mut self, _seed: u64) {}

    fn act(&mut self, obs: &Observation) -> Action {
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        Self::mirrored(self.size, blocks, &mut self.mirror);
        match blocks.iter().zip(&self.mirror).position(|(a, b)| a != b) {
            Some(i) => Action::new(
                ActionType::PlaceBlock,
                CellIndex(i as u32),
                BlockId(self.mirror[i]),
            ),
            None => Action::NOOP,
        }
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(size: [usize; 3]) -> Config {
        Config::from_json(&serde_json::json!({
            "world_size": size,
            "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
        }))
        .unwrap()
    }

    /// Bedrock floor, world = goal, then `edit` changes either.
    fn observation(size: WorldSize) -> Observation {
        let mut obs = Observation::new(size, 1);
        for c in size.cells() {
            if c.y == 0 {
                let i = size.index(c).get();
                obs.channel_mut(WorldChannel::CurrentBlocks)[i] = 1;
                obs.channel_mut(WorldChannel::GoalBlocks)[i] = 1;
            }
        }
        obs
    }

    fn set(obs: &mut Observation, ch: WorldChannel, c: (i32, i32, i32), id: u8) {
        let size = obs.size();
        let i = size.index(Cell::new(c.0, c.1, c.2)).get();
        obs.channel_mut(ch)[i] = id;
    }

    fn loc(size: WorldSize, c: (i32, i32, i32)) -> i64 {
        i64::from(size.index(Cell::new(c.0, c.1, c.2)).0)
    }

    #[test]
    fn layer_builder_climbs_finished_layers_and_fixes_the_chosen_cell() {
        let cfg = config([4, 4, 4]);
        let size = cfg.world_size;
        let mut obs = observation(size);
        set(&mut obs, WorldChannel::GoalBlocks, (1, 2, 0), 3);
        set(&mut obs, WorldChannel::GoalBlocks, (2, 2, 3), 5);
        set(&mut obs, WorldChannel::CurrentBlocks, (3, 2, 1), 7);
        let mut agent =
            LayerBuilderAgent::with_chooser(&cfg, Box::new(ScriptedChooser::new([1, 2, 0])));
        agent.reset(0);
        // Candidates of layer 2 in (x, z) C order: (1,0), (2,3), (3,1).
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, loc(size, (2, 2, 3)), 5]);
        assert_eq!(
            agent.internals(),
            Internals::LayerBuilder {
                choice: Some(Choice {
                    num_candidates: 3,
                    chosen: 1
                }),
                current_layer: 2
            }
        );
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [2, loc(size, (3, 2, 1)), 0]);
        // Fix everything: the agent climbs to the top and stops.
        set(&mut obs, WorldChannel::CurrentBlocks, (1, 2, 0), 3);
        set(&mut obs, WorldChannel::CurrentBlocks, (2, 2, 3), 5);
        set(&mut obs, WorldChannel::CurrentBlocks, (3, 2, 1), 0);
        assert_eq!(agent.act(&obs), Action::NOOP);
        assert_eq!(agent.current_layer(), 4);
        assert!(matches!(
            agent.internals(),
            Internals::LayerBuilder { choice: None, .. }
        ));
    }

    #[test]
    fn layer_builder_never_goes_back_down() {
        let cfg = config([3, 4, 3]);
        let size = cfg.world_size;
        let mut obs = observation(size);
        set(&mut obs, WorldChannel::GoalBlocks, (0, 2, 0), 3);
        let mut agent = LayerBuilderAgent::new(&cfg);
        agent.reset(5);
        assert_eq!(agent.act(&obs).to_tuple(), [1, loc(size, (0, 2, 0)), 3]);
        assert_eq!(agent.current_layer(), 2);
        // A lower layer goes wrong afterwards: the agent does not notice.
        set(&mut obs, WorldChannel::CurrentBlocks, (1, 1, 1), 2);
        assert_eq!(agent.act(&obs).to_tuple(), [1, loc(size, (0, 2, 0)), 3]);
        // A state mismatch also keeps a layer unfinished.
        let mut obs = observation(size);
        set(&mut obs, WorldChannel::CurrentBlockStates, (2, 0, 2), 1);
        agent.reset(5);
        assert_eq!(agent.act(&obs), Action::NOOP);
        assert_eq!(agent.current_layer(), 0);
    }

    #[test]
    fn rng_chooser_is_seeded() {
        let picks = |seed| {
            let mut c = RngChooser::new(0);
            c.reseed(seed);
            (0..30).map(|_| c.choose(7)).collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        assert!(picks(3).iter().all(|&i| i < 7));
        let mut py = PyRandomChooser::new(0);
        py.reseed((1 << 40) + 5);
        py.choose(2);
    }

    #[test]
    fn priority_queue_seeds_low_layers_and_explores_neighbours() {
        let cfg = config([3, 5, 3]);
        let size = cfg.world_size;
        let mut obs = observation(size);
        // Goal: a column at (1, 1..=3, 1); a wrong block at (0, 1, 0).
        for y in 1..=3 {
            set(&mut obs, WorldChannel::GoalBlocks, (1, y, 1), 3);
        }
        set(&mut obs, WorldChannel::CurrentBlocks, (0, 1, 0), 2);
        let mut agent = PriorityQueueAgent::new(&cfg);
        agent.reset(0);
        // Seeded with (1,(0,0)), (1,(1,1)), (2,(1,1)); (0,1,0) pops first: break it.
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [2, loc(size, (0, 1, 0)), 0]);
        assert_eq!(
            agent.internals(),
            Internals::PriorityQueue {
                seeding: true,
                frontier: vec![(1, (1, 1)), (2, (1, 1))]
            }
        );
        set(&mut obs, WorldChannel::CurrentBlocks, (0, 1, 0), 0);
        // (1,1,1) is air: place; its neighbour above is already queued.
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, loc(size, (1, 1, 1)), 3]);
        set(&mut obs, WorldChannel::CurrentBlocks, (1, 1, 1), 3);
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, loc(size, (1, 2, 1)), 3]);
        // Layer 3 was not seeded but was found as a neighbour of layer 2.
        assert!(agent.frontier().any(|&e| e == (3, (1, 1))));
    }

    #[test]
    fn priority_queue_breaks_wrong_blocks_and_requeues_them() {
        let cfg = config([3, 4, 3]);
        let size = cfg.world_size;
        let mut obs = observation(size);
        set(&mut obs, WorldChannel::GoalBlocks, (2, 1, 2), 3);
        set(&mut obs, WorldChannel::CurrentBlocks, (2, 1, 2), 4);
        let mut agent = PriorityQueueAgent::new(&cfg);
        agent.reset(0);
        assert_eq!(agent.act(&obs).to_tuple(), [2, loc(size, (2, 1, 2)), 0]);
        // Still wrong in the next observation: break again (requeued).
        assert_eq!(agent.act(&obs).to_tuple(), [2, loc(size, (2, 1, 2)), 0]);
        set(&mut obs, WorldChannel::CurrentBlocks, (2, 1, 2), 0);
        assert_eq!(agent.act(&obs).to_tuple(), [1, loc(size, (2, 1, 2)), 3]);
        assert_eq!(agent.act(&obs), Action::NOOP);
    }

    #[test]
    fn mirror_fills_right_then_left() {
        let cfg = config([5, 3, 3]);
        let size = cfg.world_size;
        let mut obs = observation(size);
        set(&mut obs, WorldChannel::CurrentBlocks, (0, 1, 0), 3);
        set(&mut obs, WorldChannel::CurrentBlocks, (3, 2, 1), 4);
        set(&mut obs, WorldChannel::CurrentBlocks, (2, 1, 1), 6);
        let mut agent = MirrorBuildingAgent::new(&cfg);
        agent.reset(0);
        // First difference in C order: (1, 2, 1) mirrors (3, 2, 1).
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, loc(size, (1, 2, 1)), 4]);
        set(&mut obs, WorldChannel::CurrentBlocks, (1, 2, 1), 4);
        let a = agent.act(&obs);
        assert_eq!(a.to_tuple(), [1, loc(size, (4, 1, 0)), 3]);
        set(&mut obs, WorldChannel::CurrentBlocks, (4, 1, 0), 3);
        // The middle column (x = 2) has no partner.
        assert_eq!(agent.act(&obs), Action::NOOP);
    }
}
