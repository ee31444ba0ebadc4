//! The environment model the search plans in: the simulator started from what the
//! searching player observes, with goal-dependent rewards estimated from the
//! network's goal prediction when the goal is hidden (the paper's equation 4).

use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::block::{BlockId, Blocks, NUM_BLOCKS};
use crate::sim::config::{Config, RewardValues};
use crate::sim::coords::{CellIndex, PlayerPos};
use crate::sim::env::{Env, StepInfo};
use crate::sim::inventory::{Inventory, NUM_SLOTS, STACK_SIZE, Slot};
use crate::sim::mask;
use crate::sim::obs::{NO_ONE, Observation, WorldChannel};
use crate::sim::state::{EnvState, NO_INTERACTION, cell_similarity};

/// Rebuilds an environment state from player `me`'s observation, as the
/// reference's `mbag_obs_to_state` does.
///
/// What the observation cannot tell is filled in the reference's way: a player
/// without a marker (teleporting, or out of the world) stands at the origin, block
/// counts become full stacks in block-id order, and the progress counters start
/// afresh.
pub fn state_from_observation(obs: &Observation, me: usize) -> EnvState {
    let size = obs.size();
    let num_players = obs.num_players();
    // Marker k + 1 is the k-th player in "me first, then the others in index
    // order".
    let by_tag: Vec<usize> = std::iter::once(me)
        .chain((0..num_players).filter(|&p| p != me))
        .collect();
    let markers = obs.channel(WorldChannel::PlayerLocations);
    let mut player_positions = vec![PlayerPos::default(); num_players];
    for (tag, &player) in by_tag.iter().enumerate() {
        let marker = (tag + 1) as u8;
        // The feet are the lowest of the (at most two) marked cells.
        let feet = markers
            .iter()
            .enumerate()
            .filter(|&(_, &m)| m == marker)
            .map(|(i, _)| size.cell(CellIndex(i as u32)))
            .min_by_key(|c| c.y);
        if let Some(cell) = feet {
            player_positions[player] = PlayerPos::centred_in(cell);
        }
    }
    let last_interacted = obs
        .channel(WorldChannel::LastInteracted)
        .iter()
        .map(|&m| match m {
            NO_ONE => NO_INTERACTION,
            // Markers of players this env does not have count as player 0, as in
            // the reference.
            m if usize::from(m) > num_players => 0,
            m => by_tag[usize::from(m) - 1] as i8,
        })
        .collect();
    let mut inventories = vec![Inventory::default(); num_players];
    for (tag, &player) in by_tag.iter().enumerate() {
        inventories[player] = inventory_from_counts(obs.inventory_row(tag));
    }
    EnvState {
        blocks: Blocks::from_raw(
            size,
            obs.channel(WorldChannel::CurrentBlocks).to_vec(),
            obs.channel(WorldChannel::CurrentBlockStates).to_vec(),
        ),
        last_interacted,
        player_positions,
        inventories,
        timestep: obs.timestep.max(0) as u64,
        timesteps_with_no_progress: 0,
        maximum_goal_percentages: vec![0.0; num_players],
    }
}

/// Full stacks in block-id order, then the remainder; more than the slots hold
/// is dropped (an observation cannot show more).
fn inventory_from_counts(counts: &[i32]) -> Inventory {
    let mut slots = [Slot::default(); NUM_SLOTS];
    let mut next = 0;
    for (id, &count) in counts.iter().enumerate() {
        let mut left = count;
        while left > 0 && next < NUM_SLOTS {
            let n = left.min(STACK_SIZE);
            slots[next] = Slot {
                block: BlockId(id as u8),
                count: n,
            };
            left -= n;
            next += 1;
        }
    }
    Inventory::from_slots(slots)
}

/// The expected goal-dependent reward of `action` for a player with reward values
/// `rewards`, when the goal block at its target is distributed as `goal_probs`
/// and the target held `before` (the reference's
/// `_get_predicted_goal_dependent_reward`).
///
/// Only place and break earn goal-dependent reward; breaking the palette
/// (without infinite blocks) earns none.
pub fn expected_goal_reward(
    action: Action,
    before: BlockId,
    goal_probs: &[f32; NUM_BLOCKS],
    rewards: &RewardValues,
    palette_break: bool,
) -> f64 {
    let after = match action.kind {
        ActionType::PlaceBlock => action.block,
        ActionType::BreakBlock if !palette_break => BlockId::AIR,
        _ => return 0.0,
    };
    let mut reward = 0.0;
    let mut p_incorrect = 0.0;
    for (g, &p) in goal_probs.iter().enumerate() {
        let goal = BlockId(g as u8);
        let gain = cell_similarity(after, goal, rewards.place_wrong)
            - cell_similarity(before, goal, rewards.place_wrong);
        reward += gain * f64::from(p);
        // Unlike the env's `action_correct`, the search counts a break that
        // leaves similarity unchanged as incorrect.
        if gain <= 0.0 {
            p_incorrect += f64::from(p);
        }
    }
    reward + rewards.incorrect_action * p_incorrect
}

/// The softmax over block types of the goal logits `(10, W, H, D)` at one cell.
pub fn goal_probs_at(goal_logits: &[f32], cell: CellIndex) -> [f32; NUM_BLOCKS] {
    let cells = goal_logits.len() / NUM_BLOCKS;
    let mut logits = [0f32; NUM_BLOCKS];
    for (b, l) in logits.iter_mut().enumerate() {
        *l = goal_logits[b * cells + cell.get()];
    }
    softmax_in_place(&mut logits);
    logits
}

/// Numerically stable softmax.
pub(crate) fn softmax_in_place(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// One simulated transition, from the searching player's point of view.
#[derive(Clone, Debug)]
pub struct Transition {
    /// The state after the step.
    pub state: EnvState,
    /// The searching player's observation after the step.
    pub observation: Observation,
    /// Every player's info.
    pub infos: Vec<StepInfo>,
    /// The searching player's reward as the env computed it.
    pub env_reward: f64,
    /// Whether the episode ended.
    pub done: bool,
}

/// The simulator configured for one player's search.
#[derive(Clone, Debug)]
pub struct Planner {
    env: Env,
    me: usize,
    hidden_goal: bool,
    line_of_sight: bool,
    actions: Vec<Action>,
}

impl Planner {
    /// A planner for player `me` of `config`. With `hidden_goal` the model never
    /// sees a goal: rewards come from predictions, and the episode ends only at
    /// the horizon (a goal the player cannot see cannot be known to be complete).
    /// `line_of_sight` selects the action mask the player's network was trained
    /// with.
    pub fn new(mut config: Config, me: usize, hidden_goal: bool, line_of_sight: bool) -> Self {
        if hidden_goal {
            config.terminate_on_goal_completion = false;
            config.truncate_on_no_progress_timesteps = None;
            config.players[me].goal_visible = false;
        }
        let n = config.players.len();
        Self {
            env: Env::new(config),
            me,
            hidden_goal,
            line_of_sight,
            actions: vec![Action::NOOP; n],
        }
    }

    /// The searching player.
    pub fn me(&self) -> usize {
        self.me
    }

    /// The flat action layout.
    pub fn layout(&self) -> &FlatLayout {
        self.env.layout()
    }

    /// Number of players.
    pub fn num_players(&self) -> usize {
        self.env.num_players()
    }

    /// Player `p`'s reward values now.
    pub fn reward_values(&self, p: usize) -> RewardValues {
        self.env.config().players[p]
            .rewards
            .values_at(self.env.global_timestep())
    }

    /// Whether a break at `action` targets the palette (no goal reward).
    pub fn is_palette_break(&self, action: Action) -> bool {
        action.kind == ActionType::BreakBlock
            && !self.env.config().abilities.inf_blocks
            && action.cell(self.env.size()).x == self.env.palette_x()
    }

    /// Loads the state the search starts from, observed by `me` in `obs`.
    ///
    /// With a visible goal the goal comes from the observation. With a hidden one
    /// the model's goal is air, except for the palette column, which must match
    /// the world's or the env would repaint it.
    pub fn load_root(&mut self, obs: &Observation) -> EnvState {
        let state = state_from_observation(obs, self.me);
        let size = obs.size();
        let goal = if self.hidden_goal {
            let mut goal = Blocks::air(size);
            if !self.env.config().abilities.inf_blocks {
                let x = self.env.palette_x();
                for cell in size.cells().filter(|c| c.x == x) {
                    goal.set(cell, state.blocks.get(cell));
                }
            }
            goal
        } else {
            Blocks::from_raw(
                size,
                obs.channel(WorldChannel::GoalBlocks).to_vec(),
                obs.channel(WorldChannel::GoalBlockStates).to_vec(),
            )
        };
        self.env.set_global_timestep(state.timestep);
        self.env.restore(goal, state.clone());
        self.env.state().clone()
    }

    /// The mask of valid actions in `obs`.
    pub fn valid_actions(&self, obs: &Observation, out: &mut Vec<bool>) {
        out.clear();
        out.resize(self.layout().len(), false);
        mask::compute(
            obs,
            self.env.config().abilities,
            self.env.layout(),
            self.line_of_sight,
            out,
        );
    }

    /// Steps from `state` with `mine` for the searching player and `others` for
    /// the rest (in index order, skipping `me`).
    pub fn step(&mut self, state: &EnvState, mine: Action, others: &[Action]) -> Transition {
        self.env.set_state(state.clone());
        let mut others = others.iter();
        for p in 0..self.actions.len() {
            self.actions[p] = if p == self.me {
                mine
            } else {
                others.next().copied().unwrap_or(Action::NOOP)
            };
        }
        let outcome = self
            .env
            .step(&self.actions)
            .expect("the planner passes one action per player");
        let infos = outcome.infos.clone();
        let env_reward = outcome.rewards[self.me];
        let done = outcome.done;
        let mut observation = self.env.new_observation();
        // A search may walk players into each other; the observation still
        // shows both markers, later ones on top, which is what a mask needs.
        let _ = self.env.observe(self.me, &mut observation);
        Transition {
            state: self.env.state().clone(),
            observation,
            infos,
            env_reward,
            done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::coords::WorldSize;

    fn values(place_wrong: f64, incorrect_action: f64) -> RewardValues {
        RewardValues {
            place_wrong,
            incorrect_action,
            ..RewardValues::default()
        }
    }

    fn place(block: u8) -> Action {
        Action {
            kind: ActionType::PlaceBlock,
            location: CellIndex(0),
            block: BlockId(block),
        }
    }

    #[test]
    fn expected_reward_by_hand() {
        // Goal at the cell: air 0.5, block 3 0.3, block 4 0.2. Placing 3 on air:
        // +1 if the goal is 3, place_wrong (-1) - 0 if it is 4, 0 - 1 = -1 if air
        // (air matched before). Expected: 0.3 - 0.2 - 0.5 = -0.4. Incorrect
        // (gain <= 0) with probability 0.7, times incorrect_action -2: -1.4.
        let mut p = [0f32; NUM_BLOCKS];
        p[0] = 0.5;
        p[3] = 0.3;
        p[4] = 0.2;
        let r = expected_goal_reward(place(3), BlockId::AIR, &p, &values(-1.0, -2.0), false);
        assert!((r - (-0.4 - 1.4)).abs() < 1e-6, "{r}");
        // Breaking block 3: goal 3 loses 1, goal 4 gains 0 - (-1) = 1, air gains
        // 1: -0.3 + 0.2 + 0.5 = 0.4; incorrect with probability 0.3.
        let brk = Action {
            kind: ActionType::BreakBlock,
            ..place(0)
        };
        let r = expected_goal_reward(brk, BlockId(3), &p, &values(-1.0, -2.0), false);
        assert!((r - (0.4 - 0.6)).abs() < 1e-6, "{r}");
        assert_eq!(
            expected_goal_reward(brk, BlockId(3), &p, &values(-1.0, -2.0), true),
            0.0
        );
        assert_eq!(
            expected_goal_reward(Action::NOOP, BlockId(3), &p, &values(-1.0, -2.0), false),
            0.0
        );
    }

    #[test]
    fn goal_probs_pick_one_cell() {
        let size = WorldSize::new(2, 1, 1);
        let mut logits = vec![0f32; NUM_BLOCKS * size.num_cells()];
        logits[3 * 2 + 1] = 100.0;
        let p = goal_probs_at(&logits, CellIndex(1));
        assert!((p[3] - 1.0).abs() < 1e-6);
        let p = goal_probs_at(&logits, CellIndex(0));
        assert!((p[3] - 0.1).abs() < 1e-6);
    }

    #[test]
    fn state_round_trips_through_an_observation() {
        let config = Config::from_json(&serde_json::json!({
            "world_size": [5, 5, 5],
            "num_players": 2,
            "random_start_locations": false,
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": true},
            "players": [{}, {}],
            "goal_generator_config": {"goal_generator": "basic", "goal_generator_config": {}},
        }))
        .unwrap();
        let mut env = Env::new(config);
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
        let mut goal = Blocks::initial_world(WorldSize::new(5, 5, 5));
        goal.set(crate::sim::coords::Cell::new(2, 2, 2), BlockId(4));
        env.reset_with_goal(goal, &mut rng);
        // Someone interacted with a cell, so last_interacted is not trivial.
        let place = Action {
            kind: ActionType::PlaceBlock,
            location: WorldSize::new(5, 5, 5).index(crate::sim::coords::Cell::new(2, 2, 2)),
            block: BlockId(4),
        };
        env.step(&[Action::NOOP, place]).unwrap();
        for me in 0..2 {
            let mut obs = env.new_observation();
            env.observe(me, &mut obs).unwrap();
            let state = state_from_observation(&obs, me);
            assert_eq!(state.blocks, env.state().blocks);
            assert_eq!(state.player_positions, env.state().player_positions);
            assert_eq!(state.last_interacted, env.state().last_interacted);
            for p in 0..2 {
                assert_eq!(
                    state.inventories[p].counts(),
                    env.state().inventories[p].counts()
                );
            }
        }
    }
}
