//! The `oracle` assistant: a scripted agent that sees the goal and builds it,
//! the reference column of the robustness tests and the "knows the goal" baseline
//! of watch-then-help.
//!
//! It needs the goal in its observation: the runners that take agent specs show
//! the goal to its seat ([`super::AgentSpec::sees_goal`]). Each move it makes one
//! edit towards the goal, lowest layer first (wrong blocks broken before missing
//! ones are placed, as a builder needs the support below), nearest first within a
//! layer; when none is possible from where it stands it walks towards one (see
//! [`super::walker`]). It never breaks a block the goal has, never places one the
//! goal does not have, and waits when the world matches the goal. It collects no
//! resources: with finite blocks it places only what its inventory holds.

use super::walker::{EditKind, Walker, WantedEdit, own_feet, visible_goal};
use super::{Agent, AgentError, Internals};
use crate::sim::action::Action;
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::Cell;
use crate::sim::obs::{Observation, WorldChannel};

/// The goal-aware scripted assistant (see the module docs).
#[derive(Debug)]
pub struct OracleAgent {
    walker: Walker,
    wanted: Vec<WantedEdit>,
    /// The goal seen last, or the one it was given.
    goal: Vec<u8>,
    /// A goal to build instead of the true one (the random-goal baseline).
    fixed: Option<Vec<u8>>,
}

impl OracleAgent {
    /// The reference-style class name.
    pub const NAME: &'static str = "OracleAgent";

    /// An oracle for envs with `config`.
    pub fn new(config: &Config) -> Self {
        Self {
            walker: Walker::new(config),
            wanted: Vec::new(),
            goal: Vec::new(),
            fixed: None,
        }
    }

    /// An agent that builds `goal` (block ids, C order) with the oracle's skill
    /// whatever the true goal is: the "confidently wrong" baseline of
    /// watch-then-help. It needs no goal in its observation.
    pub fn with_goal(config: &Config, goal: Vec<u8>) -> Self {
        Self {
            fixed: Some(goal),
            ..Self::new(config)
        }
    }
}

/// Every edit that moves `obs`'s world towards `goal`, most wanted first.
pub fn edits_towards_goal(obs: &Observation, goal: &[u8], out: &mut Vec<WantedEdit>) {
    let size = obs.size();
    let current = obs.channel(WorldChannel::CurrentBlocks);
    out.clear();
    for cell in size.cells() {
        let i = size.index(cell).get();
        let (now, want) = (BlockId(current[i]), BlockId(goal[i]));
        if now == want {
            continue;
        }
        if !now.is_air() && now.is_breakable() {
            // A block with no face open to the air cannot be seen, so cannot be
            // broken until a neighbour is cleared.
            let exposed = cell.face_neighbours().iter().any(|n| {
                size.checked_index(*n)
                    .is_some_and(|j| current[j.get()] == BlockId::AIR.0)
            });
            if !exposed {
                continue;
            }
            out.push(WantedEdit {
                cell,
                kind: EditKind::Break,
            });
        } else if now.is_air() && want.is_placeable() {
            out.push(WantedEdit {
                cell,
                kind: EditKind::Place(want),
            });
        }
    }
    let me = own_feet(obs).unwrap_or(Cell::new(0, 0, 0));
    let distance = |c: Cell| (c.x - me.x).abs() + (c.y - me.y).abs() + (c.z - me.z).abs();
    out.sort_by_key(|e| {
        (
            e.cell.y,
            matches!(e.kind, EditKind::Place(_)),
            distance(e.cell),
        )
    });
}

impl Agent for OracleAgent {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn reset(&mut self, _seed: u64) {
        self.walker.reset();
        self.goal.clear();
    }

    fn act(&mut self, obs: &Observation) -> Action {
        self.try_act(obs).unwrap_or(Action::NOOP)
    }

    fn try_act(&mut self, obs: &Observation) -> Result<Action, AgentError> {
        let goal = match &self.fixed {
            Some(goal) => goal.as_slice(),
            None => visible_goal(obs, Self::NAME)?,
        };
        self.goal.clear();
        self.goal.extend_from_slice(goal);
        edits_towards_goal(obs, &self.goal, &mut self.wanted);
        // The lowest layer first, walking to it if need be: building whatever
        // is at hand would cover the floor before it is done. Only when none of
        // it can be reached does anything higher go.
        let Some(lowest) = self.wanted.first().map(|e| e.cell.y) else {
            return Ok(Action::NOOP);
        };
        let band = self.wanted.partition_point(|e| e.cell.y <= lowest);
        if let Some(action) = self.walker.try_act(obs, &self.wanted[..band]) {
            return Ok(action);
        }
        Ok(self.walker.act(obs, &self.wanted[band..]))
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }

    fn goal_belief(&self) -> Option<Vec<u8>> {
        (!self.goal.is_empty()).then(|| self.goal.clone())
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::sim::block::Blocks;
    use crate::sim::coords::WorldSize;
    use crate::sim::env::Env;
    use crate::sim::presets::{Game, Movement};

    fn walking(goal_visible: bool) -> Config {
        let mut config = Game::paper()
            .with_horizon(300)
            .with_movement(Movement::Walking)
            .config()
            .unwrap();
        config.randomize_first_episode_length = false;
        config.players[1].goal_visible = goal_visible;
        config
    }

    /// A two-storey L of mixed blocks, with a floating-looking upper row that
    /// needs the row below it first.
    fn goal(size: WorldSize) -> Blocks {
        let mut goal = Blocks::initial_world(size);
        for x in 2..8 {
            goal.set(Cell::new(x, 2, 6), BlockId::PLANKS);
            goal.set(Cell::new(x, 3, 6), BlockId::GLASS);
        }
        for z in 2..6 {
            goal.set(Cell::new(7, 2, z), BlockId::STONE);
        }
        goal
    }

    #[test]
    fn the_oracle_walks_and_builds_the_whole_goal_without_a_mistake() {
        let config = walking(true);
        let mut env = Env::new(config.clone());
        let goal = goal(config.world_size);
        env.reset_with_goal(goal, &mut StdRng::seed_from_u64(3));
        // A wrong block in a goal cell, for the oracle to take out first.
        let mut state = env.state().clone();
        state.blocks.set(Cell::new(4, 2, 6), BlockId::WOOL);
        env.set_state(state);
        let mut oracle = OracleAgent::new(&config);
        oracle.reset(0);
        let mut obs = env.new_observation();
        let mut steps = 0;
        let mut wrong = 0;
        while !env.goal_completed() && steps < 300 {
            env.observe(1, &mut obs).unwrap();
            let action = oracle.try_act(&obs).unwrap();
            let outcome = env.step(&[Action::NOOP, action]).unwrap();
            let did = outcome.infos[1].action;
            if did.kind == crate::sim::action::ActionType::PlaceBlock
                && env.goal().id_at(did.location) != did.block
            {
                wrong += 1;
            }
            steps += 1;
        }
        assert!(env.goal_completed(), "goal not built in {steps} steps");
        assert_eq!(wrong, 0);
    }

    #[test]
    fn a_hidden_goal_is_an_error_naming_the_setting() {
        let config = walking(false);
        let mut env = Env::new(config.clone());
        env.reset_with_goal(goal(config.world_size), &mut StdRng::seed_from_u64(3));
        let mut obs = env.new_observation();
        env.observe(1, &mut obs).unwrap();
        let err = OracleAgent::new(&config).try_act(&obs).unwrap_err();
        assert!(err.to_string().contains("goal_visible"), "{err}");
    }
}
