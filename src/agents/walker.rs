//! Walking to where an edit can be made, and making it: the legs of the goal-aware
//! scripted agents (the `oracle` assistant, the robustness tests' scripted
//! persons).
//!
//! Each move, [`Walker::act`] takes the edits its owner wants, most wanted first,
//! and makes the first one the line-of-sight mask allows. When none is allowed it
//! walks one step along a shortest path (breadth-first over the feet cells a
//! player can stand in, moving as the env moves players) to the nearest feet cell
//! from which some wanted edit looks reachable. A reach estimate can be wrong (a
//! wall in the line of sight): a feet cell from which an edit turned out not to be
//! allowed is remembered and not walked to again for that cell, until the walker
//! runs out of places to try.

use std::collections::{HashSet, VecDeque};

use super::AgentError;
use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::block::BlockId;
use crate::sim::config::{Abilities, Config};
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::mask::MaskCache;
use crate::sim::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};
use crate::sim::viewpoint::{EYE_HEIGHT, REACH};

/// What to do at a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EditKind {
    /// Place this block.
    Place(BlockId),
    /// Break whatever is there.
    Break,
}

/// An edit an agent wants made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WantedEdit {
    /// The cell.
    pub cell: Cell,
    /// The edit.
    pub kind: EditKind,
}

impl WantedEdit {
    /// The env action making this edit.
    pub fn action(self, size: WorldSize) -> Action {
        let location = size.index(self.cell);
        match self.kind {
            EditKind::Place(block) => Action {
                kind: ActionType::PlaceBlock,
                location,
                block,
            },
            EditKind::Break => Action {
                kind: ActionType::BreakBlock,
                location,
                block: BlockId::AIR,
            },
        }
    }
}

/// Feet cells from which reach is estimated to be enough: the eye within this
/// distance of the target cell's centre (the env's reach, [`REACH`], is measured
/// to the face clicked, which can be half a block nearer).
const REACH_ESTIMATE: f64 = REACH - 0.25;

/// The walking and acting half of a scripted agent (see the module docs).
#[derive(Debug)]
pub struct Walker {
    abilities: Abilities,
    layout: FlatLayout,
    masks: MaskCache,
    /// (feet cell, target cell) pairs from which the target was not editable.
    failed: HashSet<(Cell, Cell)>,
    /// Breadth-first search buffers: the first move that reached each cell.
    first_move: Vec<Option<ActionType>>,
    queue: VecDeque<Cell>,
}

impl Walker {
    /// A walker for envs with `config`.
    pub fn new(config: &Config) -> Self {
        Self {
            abilities: config.abilities,
            layout: FlatLayout::new(config.world_size, config.abilities),
            masks: MaskCache::default(),
            failed: HashSet::new(),
            first_move: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    /// Forgets the last episode.
    pub fn reset(&mut self) {
        self.masks = MaskCache::default();
        self.failed.clear();
    }

    /// The action making progress on `wanted` (most wanted first): the first edit
    /// the mask allows now, else a step towards one, else NOOP.
    pub fn act(&mut self, obs: &Observation, wanted: &[WantedEdit]) -> Action {
        if wanted.is_empty() {
            return Action::NOOP;
        }
        let size = obs.size();
        // With line of sight, as the env judges places and breaks.
        self.masks.update(obs, self.abilities, &self.layout, true);
        let allowed = |walker: &Self, a: Action| {
            walker
                .layout
                .flat(a)
                .is_some_and(|i| walker.masks.mask()[i])
        };
        if let Some(edit) = wanted.iter().find(|e| allowed(self, e.action(size))) {
            return edit.action(size);
        }
        if self.abilities.teleportation {
            // Teleporting players act from anywhere: nothing wanted is possible.
            return Action::NOOP;
        }
        let Some(feet) = own_feet(obs) else {
            return Action::NOOP;
        };
        // From here, every wanted edit that looked reachable was not allowed.
        for e in wanted {
            if within_reach(feet, e.cell) {
                self.failed.insert((feet, e.cell));
            }
        }
        match self.first_step(obs, feet, wanted) {
            Some(kind) if allowed(self, move_action(kind)) => move_action(kind),
            Some(_) => {
                // The mask disagrees with the path (a player moved in the way):
                // wait a step rather than bump into it.
                Action::NOOP
            }
            None => {
                // Nowhere left to try: the world may have changed since the
                // failures were seen, so try everything again next time.
                self.failed.clear();
                Action::NOOP
            }
        }
    }

    /// The first move of a shortest walk from `feet` to a feet cell from which a
    /// wanted edit looks possible, if any.
    fn first_step(
        &mut self,
        obs: &Observation,
        feet: Cell,
        wanted: &[WantedEdit],
    ) -> Option<ActionType> {
        let size = obs.size();
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let markers = obs.channel(WorldChannel::PlayerLocations);
        let others_at = |c: Cell| {
            size.checked_index(c)
                .is_some_and(|i| !matches!(markers[i.get()], NO_ONE | CURRENT_PLAYER))
        };
        let air = |c: Cell| size.checked_index(c).is_none_or(|i| blocks[i.get()] == 0);
        let standable = |c: Cell| {
            size.contains(c)
                && c.y >= 1
                && air(c)
                && air(c.above())
                && !others_at(c)
                && !others_at(c.above())
        };
        let goal_here = |at: Cell| {
            wanted.iter().any(|e| {
                !self.failed.contains(&(at, e.cell))
                    && !others_at(e.cell)
                    && within_reach(at, e.cell)
                    && match e.kind {
                        // Not inside the cell it wants to fill, and with a face
                        // to place against.
                        EditKind::Place(_) => {
                            e.cell != at
                                && e.cell != at.above()
                                && e.cell.face_neighbours().iter().any(|n| {
                                    size.checked_index(*n).is_some_and(|i| blocks[i.get()] != 0)
                                })
                        }
                        EditKind::Break => true,
                    }
            })
        };
        self.first_move.clear();
        self.first_move.resize(size.num_cells(), None);
        self.queue.clear();
        self.queue.push_back(feet);
        let mut seen = vec![false; size.num_cells()];
        seen[size.index(feet).get()] = true;
        let moves: &[ActionType] = if self.abilities.flying {
            &ActionType::MOVES
        } else {
            &[
                ActionType::MovePosX,
                ActionType::MoveNegX,
                ActionType::MovePosZ,
                ActionType::MoveNegZ,
            ]
        };
        while let Some(at) = self.queue.pop_front() {
            let first = self.first_move[size.index(at).get()];
            if let Some(first) = first
                && goal_here(at)
            {
                return Some(first);
            }
            for &kind in moves {
                let (dx, dy, dz) = kind.move_delta().expect("a move");
                let next = at.offset(dx, dy, dz);
                if !standable(next) {
                    continue;
                }
                let i = size.index(next).get();
                if !seen[i] {
                    seen[i] = true;
                    self.first_move[i] = Some(first.unwrap_or(kind));
                    self.queue.push_back(next);
                }
            }
        }
        None
    }
}

/// The move action of `kind`.
fn move_action(kind: ActionType) -> Action {
    Action {
        kind,
        ..Action::NOOP
    }
}

/// Whether the eye of a player standing at `feet` is within the reach estimate
/// of `cell`'s centre.
pub fn within_reach(feet: Cell, cell: Cell) -> bool {
    let eye = [
        f64::from(feet.x) + 0.5,
        f64::from(feet.y) + EYE_HEIGHT,
        f64::from(feet.z) + 0.5,
    ];
    let centre = cell.to_array().map(|v| f64::from(v) + 0.5);
    let d2: f64 = (0..3).map(|k| (eye[k] - centre[k]).powi(2)).sum();
    d2 <= REACH_ESTIMATE * REACH_ESTIMATE
}

/// The observer's feet cell: the lowest cell its own marker is in (walking
/// configs only; teleporting observations have no markers).
pub fn own_feet(obs: &Observation) -> Option<Cell> {
    let size = obs.size();
    let markers = obs.channel(WorldChannel::PlayerLocations);
    size.cells()
        .filter(|c| markers[size.index(*c).get()] == CURRENT_PLAYER)
        .min_by_key(|c| c.y)
}

/// The goal in `obs`, or an error naming `agent` when the observation hides it
/// (a goal shows at least its bedrock floor, so an all-air goal is a hidden one).
pub fn visible_goal<'a>(obs: &'a Observation, agent: &'static str) -> Result<&'a [u8], AgentError> {
    let goal = obs.channel(WorldChannel::GoalBlocks);
    if goal.iter().all(|&b| b == 0) {
        return Err(AgentError::Failed {
            agent,
            message: "it needs the goal in its observation, but the env hides it from \
                      this seat (goal_visible is false)"
                .into(),
        });
    }
    Ok(goal)
}
