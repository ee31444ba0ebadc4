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
//! allowed is remembered and not walked to again for that cell for a while
//! ([`FAILURE_MEMORY`] moves).

use std::collections::{HashMap, VecDeque};

use super::AgentError;
use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::block::BlockId;
use crate::sim::config::{Abilities, Config};
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::mask::MaskCache;
use crate::sim::obs::{CURRENT_PLAYER, NO_ONE, Observation, WorldChannel};
use crate::sim::viewpoint::REACH;

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

/// Moves for which a feet cell from which an edit failed is not tried again
/// for it.
const FAILURE_MEMORY: u64 = 200;

/// The walking and acting half of a scripted agent (see the module docs).
#[derive(Debug)]
pub struct Walker {
    abilities: Abilities,
    layout: FlatLayout,
    masks: MaskCache,
    /// (feet cell, target cell) pairs from which the target was not editable,
    /// with the move at which that was seen.
    failed: HashMap<(Cell, Cell), u64>,
    /// Moves made so far.
    moves_made: u64,
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
            failed: HashMap::new(),
            moves_made: 0,
            first_move: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    /// Forgets the last episode.
    pub fn reset(&mut self) {
        self.masks = MaskCache::default();
        self.failed.clear();
        self.moves_made = 0;
    }

    /// The action making progress on `wanted` (most wanted first): the first edit
    /// the mask allows now, else a step towards one (or a NOOP while another
    /// player blocks the path); `None` when no wanted edit is possible or
    /// reachable from here, so that the owner can want something else.
    pub fn try_act(&mut self, obs: &Observation, wanted: &[WantedEdit]) -> Option<Action> {
        if wanted.is_empty() {
            return None;
        }
        let size = obs.size();
        // With line of sight, as the env judges places and breaks.
        self.masks.update(obs, self.abilities, &self.layout, true);
        // A failure is remembered for a while only: the world changes (a wall
        // comes down, a player moves away), but forgetting at every change
        // would send the walker back to the same dead ends whenever its
        // partner edits anything.
        self.moves_made += 1;
        let now = self.moves_made;
        self.failed.retain(|_, seen| now - *seen < FAILURE_MEMORY);
        let allowed = |walker: &Self, a: Action| {
            walker
                .layout
                .flat(a)
                .is_some_and(|i| walker.masks.mask()[i])
        };
        let feet = own_feet(obs);
        let encloses = |e: &WantedEdit| {
            matches!(e.kind, EditKind::Place(_))
                && feet.is_some_and(|f| self.would_enclose(obs, f, e.cell))
        };
        if let Some(edit) = wanted
            .iter()
            .find(|e| allowed(self, e.action(size)) && !encloses(e))
        {
            return Some(edit.action(size));
        }
        if self.abilities.teleportation {
            // Teleporting players act from anywhere: nothing wanted is possible.
            return None;
        }
        let feet = feet?;
        // From here, every wanted edit that looked reachable was not allowed.
        for e in wanted {
            if within_reach(feet, e.cell) {
                self.failed.insert((feet, e.cell), now);
            }
        }
        let kind = self.first_step(obs, feet, wanted)?;
        Some(if allowed(self, move_action(kind)) {
            move_action(kind)
        } else {
            // The mask disagrees with the path (a player moved in the way):
            // wait a step rather than bump into it.
            Action::NOOP
        })
    }

    /// [`Walker::try_act`], with NOOP when nothing wanted is possible.
    pub fn act(&mut self, obs: &Observation, wanted: &[WantedEdit]) -> Action {
        self.try_act(obs, wanted).unwrap_or(Action::NOOP)
    }

    /// Whether placing a block at `cell` would leave a player standing at `feet`
    /// no cell to move to (walled in, it could never reach anything else).
    fn would_enclose(&self, obs: &Observation, feet: Cell, cell: Cell) -> bool {
        let size = obs.size();
        let blocks = obs.channel(WorldChannel::CurrentBlocks);
        let air = |c: Cell| c != cell && size.checked_index(c).is_none_or(|i| blocks[i.get()] == 0);
        !self.moves().iter().any(|kind| {
            let (dx, dy, dz) = kind.move_delta().expect("a move");
            let next = feet.offset(dx, dy, dz);
            size.contains(next) && next.y >= 1 && air(next) && air(next.above())
        })
    }

    /// The moves a player can make: up and down only when it flies.
    fn moves(&self) -> &'static [ActionType] {
        if self.abilities.flying {
            &ActionType::MOVES
        } else {
            &[
                ActionType::MovePosX,
                ActionType::MoveNegX,
                ActionType::MovePosZ,
                ActionType::MoveNegZ,
            ]
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
                !self.failed.contains_key(&(at, e.cell))
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
        let moves = self.moves();
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

/// Whether `cell` is within reach of a player standing at `feet`, as the mask
/// measures it: squared distance from the head cell at most `REACH²` (integer
/// cells, so 20).
pub fn within_reach(feet: Cell, cell: Cell) -> bool {
    let reach2 = (REACH * REACH).floor() as i32;
    let d = [cell.x - feet.x, cell.y - (feet.y + 1), cell.z - feet.z];
    d.iter().map(|v| v * v).sum::<i32>() <= reach2
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
