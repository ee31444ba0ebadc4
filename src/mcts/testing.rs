//! Test support: a small world with a known goal and an oracle evaluator that
//! knows it.

use std::convert::Infallible;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::{Evaluator, LeafEvaluation, LeafQuery};
use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::block::{BlockId, Blocks, NUM_BLOCKS};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, WorldSize};
use crate::sim::env::Env;
use crate::sim::obs::{Observation, WorldChannel};

pub(crate) const SIZE: WorldSize = WorldSize::new(5, 5, 5);

/// Two players, teleporting (any reachable cell can be targeted), infinite blocks,
/// a wrong block costing `place_wrong` = -1.
pub(crate) fn config() -> Config {
    Config::from_json(&json!({
        "world_size": [5, 5, 5],
        "num_players": 2,
        "horizon": 50,
        "random_start_locations": false,
        "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
        "players": [{}, {"goal_visible": false}],
        "rewards": {"place_wrong": -1.0, "noop": 0.0, "action": 0.0},
        "goal_generator_config": {"goal_generator": "basic", "goal_generator_config": {}},
    }))
    .unwrap()
}

/// A small house: a row of stone (id 7) and one of cobblestone (id 3) on the dirt.
pub(crate) fn goal() -> Blocks {
    let mut goal = Blocks::initial_world(SIZE);
    for x in 1..4 {
        goal.set(Cell::new(x, 2, 2), BlockId(7));
        goal.set(Cell::new(x, 2, 3), BlockId(3));
    }
    goal
}

pub(crate) fn env() -> Env {
    let mut env = Env::new(config());
    env.reset_with_goal(goal(), &mut StdRng::seed_from_u64(0));
    env
}

/// Knows the goal. Its policy likes placing any non-air block on an empty goal
/// cell equally (right or wrong type), so only the reward estimates can tell the
/// search which to pick; its goal head is sure of the true goal; it expects the
/// human to NOOP.
pub(crate) struct Oracle {
    goal: Blocks,
    layout: FlatLayout,
    pub(crate) calls: usize,
    pub(crate) leaves: usize,
}

impl Oracle {
    pub(crate) fn new() -> Self {
        Self {
            goal: goal(),
            layout: FlatLayout::new(SIZE, config().abilities),
            calls: 0,
            leaves: 0,
        }
    }
}

impl Evaluator for Oracle {
    type State = ();
    type Error = Infallible;

    fn initial_state(&self) {}

    fn evaluate(
        &mut self,
        queries: &[LeafQuery<'_, ()>],
    ) -> Result<Vec<LeafEvaluation<()>>, Infallible> {
        self.calls += 1;
        self.leaves += queries.len();
        Ok(queries
            .iter()
            .map(|q| {
                let world = q.observation.channel(WorldChannel::CurrentBlocks);
                let policy_logits = (0..self.layout.len())
                    .map(|a| {
                        let action = self.layout.action(a).unwrap();
                        let i = action.location.get();
                        let empty_goal_cell = world[i] == 0 && self.goal.ids()[i] != 0;
                        if action.kind == ActionType::PlaceBlock
                            && empty_goal_cell
                            && action.block.0 != 0
                        {
                            0.0
                        } else {
                            -10.0
                        }
                    })
                    .collect();
                let cells = SIZE.num_cells();
                let mut goal_logits = vec![0f32; NUM_BLOCKS * cells];
                for (i, &g) in self.goal.ids().iter().enumerate() {
                    goal_logits[usize::from(g) * cells + i] = 30.0;
                }
                let mut leaf = noop_human_leaf(policy_logits, goal_logits);
                // As the networks' evaluator: a policy-only query gets no goal.
                if q.policy_only {
                    leaf.goal_logits = None;
                }
                leaf
            })
            .collect())
    }
}

/// A leaf with these policy and goal logits, no value, and the other player
/// sure to NOOP.
pub(crate) fn noop_human_leaf(
    policy_logits: Vec<f32>,
    goal_logits: Vec<f32>,
) -> LeafEvaluation<()> {
    let mut other = vec![-30f32; policy_logits.len()];
    other[0] = 30.0;
    LeafEvaluation {
        policy_logits,
        value: 0.0,
        goal_logits: Some(goal_logits),
        other_action_logits: Some(other),
        state: (),
    }
}

pub(crate) fn observe(env: &Env, p: usize) -> Observation {
    let mut obs = env.new_observation();
    env.observe(p, &mut obs).unwrap();
    obs
}
