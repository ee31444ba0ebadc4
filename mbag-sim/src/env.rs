//! The environment: reset and step, orchestrating the rules of the other modules
//! (ENV_SPEC sections 3, 5, 7 and 8).
//!
//! # Tuples the reference does not expect
//!
//! The env takes any [`ActionTuple`] and treats it as the reference's `step` does:
//!
//! - An action type outside 0..=9 falls through every branch of `_step_player`: a
//!   no-op with the no-op reward, `attempted_action` the tuple as given, `action`
//!   NOOP, nothing else touched (no block, position, inventory or last-interacted
//!   change; it is not a GIVE, so it is processed after the GIVEs).
//! - Fields a type does not use are ignored whatever they hold, and echoed in
//!   `attempted_action` and, when the action took effect, `action`.
//! - A location index outside the world is an error
//!   ([`StepError::LocationOutOfRange`]) for every type, NOOP and unknown types
//!   included, as the reference's `MbagAction` decodes it with `np.unravel_index`,
//!   which raises. A player who does not act this step (`timestep_skip`) is not
//!   checked: the reference replaces the tuple by `(0, 0, 0)` before decoding it.
//! - A PLACE or GIVE whose block id is outside 0..=9 is a no-op wherever the
//!   reference makes it one (the inventory holds none of it, or it is not a
//!   placeable block), and an error ([`StepError::BlockOutOfRange`]) where the
//!   reference would corrupt its state or raise, a deliberate difference:
//!   a human's PLACE in walking mode with infinite blocks is written into the
//!   reference's `uint8` grid without any check (numpy 1.21 wraps it to a byte, so
//!   most ids become blocks outside the table; mbag refuses every such tuple, even
//!   one whose target holds another player and would be a no-op there), and an AI's
//!   GIVE to another player in reach indexes the giver's per-block counts with the
//!   id (`IndexError`, or for -10..=-1 Python's negative indexing, which reads
//!   another block's count and, when it is 0, writes the id into an empty slot of
//!   the recipient's inventory).
//!
//! Every check is made before anything changes, so a step that fails leaves the
//! env as it was (the reference raises part-way through its step).

use super::action::{Action, ActionTuple, ActionType, FlatLayout};
use super::block::{BlockId, Blocks};
use super::config::{Config, RewardValues};
use super::coords::{Cell, CellIndex, PlayerId, PlayerPos, WorldSize};
use super::goal::{GoalError, GoalGenerator};
use super::inventory::{Inventory, Slot};
use super::obs::{CURRENT_PLAYER, Observation, WorldChannel};
use super::pyhash::{PyRandom, PythonHash, Seeding};
use super::state::{EnvState, GoalMatch, NO_INTERACTION, cell_similarity};
use super::viewpoint::{
    self, Candidate, CandidateSet, Interaction, Meanwhile, ObstacleRows, SearchWorld,
};

/// Seeding steps run per standing position a teleport search visits once it has
/// found a candidate: a LowestBlock search visits about 150, so most of the
/// chain's 1,247 steps run alongside it; a uniformly random target's search
/// visits about 45 and leaves most for the end of the step (a search that finds
/// nothing wastes none). 8 measured best of 4 to 12.
const SEEDING_STEPS_PER_POSITION: usize = 8;

/// A teleport choice's seeding, run alongside its search once the search has
/// found a candidate: only then is there a choice to seed (a search that finds
/// nothing wastes neither the hash nor any seeding).
struct SeedAlongside<'a> {
    state: Alongside<'a>,
    /// What the seed hashes (ENV_SPEC 6.4): the world's block ids with the change
    /// made (`block` at `at`), and the timestep.
    ids: &'a [u8],
    at: CellIndex,
    block: BlockId,
    timestep: u64,
    hash: PythonHash,
    seed: Option<i64>,
}

enum Alongside<'a> {
    Waiting(&'a mut PyRandom),
    Seeding(Seeding<'a>),
    Begun,
}

impl<'a> SeedAlongside<'a> {
    fn new(
        rng: &'a mut PyRandom,
        ids: &'a [u8],
        at: CellIndex,
        block: BlockId,
        timestep: u64,
        hash: PythonHash,
    ) -> Self {
        Self {
            state: Alongside::Waiting(rng),
            ids,
            at,
            block,
            timestep,
            hash,
            seed: None,
        }
    }

    #[inline(never)]
    fn begin(&mut self) {
        if let Alongside::Waiting(rng) = std::mem::replace(&mut self.state, Alongside::Begun) {
            let seed = self.hash.hash_bytes_int_tuple_with(
                self.ids,
                self.at.get(),
                self.block.0,
                self.timestep,
            );
            rng.begin_seed(seed);
            self.seed = Some(seed);
            self.state = Alongside::Seeding(rng.seeding());
        }
    }

    /// The choice's seed if the search `found` candidates (its generator seeded
    /// or being seeded), else `None`.
    fn finish(mut self, found: bool) -> Option<i64> {
        if found {
            self.begin();
        }
        self.seed
    }
}

impl Meanwhile for SeedAlongside<'_> {
    #[inline(always)]
    fn run_some(&mut self) {
        match &mut self.state {
            Alongside::Seeding(seeding) => seeding.run_some::<SEEDING_STEPS_PER_POSITION>(),
            _ => self.begin(),
        }
    }
}

/// Most blocks one GIVE moves.
pub const BLOCKS_TO_GIVE: i32 = 5;

/// What a player's action did, as the reference's per-player info dict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepInfo {
    /// Matching cells after all actions of the step (no partial credit).
    pub goal_similarity: f64,
    /// This player's goal percentage after all actions (partial credit).
    pub goal_percentage: f64,
    /// Reward that depends on the goal.
    pub goal_dependent_reward: f64,
    /// Reward that does not (noop/action/get_resources).
    pub goal_independent_reward: f64,
    /// `goal_dependent_reward + goal_independent_reward`.
    pub own_reward: f64,
    /// The player's `own_reward_prop` now.
    pub own_reward_prop: f64,
    /// The tuple processed, as given (NOOP for a player skipped by `timestep_skip`).
    pub attempted_action: ActionTuple,
    /// The action that took effect: NOOP if the attempt did nothing, otherwise
    /// `attempted_action` typed, with a field its type does not use read as 0 when
    /// out of range. [`StepInfo::action_tuple`] is the reference's `action`.
    pub action: Action,
    /// A successful place/break that moved the world towards the goal.
    pub action_correct: bool,
}

impl StepInfo {
    fn idle(goal_similarity: f64, goal_percentage: f64, own_reward_prop: f64) -> Self {
        Self {
            goal_similarity,
            goal_percentage,
            goal_dependent_reward: 0.0,
            goal_independent_reward: 0.0,
            own_reward: 0.0,
            own_reward_prop,
            attempted_action: ActionTuple::NOOP,
            action: Action::NOOP,
            action_correct: false,
        }
    }

    /// The reference's `info["action"]`: `attempted_action` as given if it took
    /// effect, else `(0, 0, 0)`.
    pub fn action_tuple(&self) -> ActionTuple {
        if self.action.kind == ActionType::Noop {
            ActionTuple::NOOP
        } else {
            self.attempted_action
        }
    }
}

/// One viewpoint search run by the env (recorded only when tracing is on).
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceBreakAttempt {
    /// Who acted.
    pub player: PlayerId,
    /// Place or break.
    pub kind: Interaction,
    /// The target cell.
    pub location: Cell,
    /// How many (viewpoint, click) candidates the search found.
    pub num_candidates: usize,
    /// With candidates: the chosen index, the hash seed and the candidate.
    pub chosen: Option<(usize, i64, Candidate)>,
}

/// A teleporting place or break of this step, whose destination is picked at the
/// step's end.
#[derive(Clone, Debug)]
struct Teleport {
    player: usize,
    kind: Interaction,
    location: Cell,
    /// The choice's seed; `None` if the search found no candidate.
    seed: Option<i64>,
}

/// The result of one step, for every player.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StepOutcome {
    /// Reward returned to each player.
    pub rewards: Vec<f64>,
    /// Whether the episode ended (the same for everyone).
    pub done: bool,
    /// Per-player infos.
    pub infos: Vec<StepInfo>,
}

/// A step that cannot be taken. The env is left as it was.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    /// One action per player is required.
    #[error("step needs one action per player: got {got} actions for {expected} players")]
    WrongActionCount {
        /// Number of players.
        expected: usize,
        /// Number of actions given.
        got: usize,
    },
    /// A location index outside the world (the reference's `np.unravel_index`
    /// raises), whatever the action type.
    #[error(
        "player {player}'s action {action}: location index {} is outside the {size} world (0..{})",
        action.location,
        size.num_cells()
    )]
    LocationOutOfRange {
        /// Who acted.
        player: PlayerId,
        /// The tuple as given.
        action: ActionTuple,
        /// The world size.
        size: WorldSize,
    },
    /// A PLACE or GIVE with a block id outside 0..=9 where the reference would
    /// corrupt its state or raise (see the module docs).
    #[error(
        "player {player}'s action {action}: block id {} is not one of 0..=9, and {use_}",
        action.block
    )]
    BlockOutOfRange {
        /// Who acted.
        player: PlayerId,
        /// The tuple as given.
        action: ActionTuple,
        /// What the reference would do with the id.
        use_: UnsafeBlockUse,
    },
}

impl StepError {
    /// The player whose tuple was refused, if the error is about one.
    pub fn player(&self) -> Option<PlayerId> {
        match self {
            Self::WrongActionCount { .. } => None,
            Self::LocationOutOfRange { player, .. } | Self::BlockOutOfRange { player, .. } => {
                Some(*player)
            }
        }
    }
}

/// Where the reference would use an out-of-range block id unchecked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeBlockUse {
    /// A human's PLACE in walking mode with infinite blocks.
    #[error(
        "a human's place in walking mode with infinite blocks would write it into the world \
         unchecked"
    )]
    HumanPlace,
    /// An AI's GIVE to another player within reach.
    #[error(
        "a give from an AI player to another player in reach would index the giver's block \
         counts with it"
    )]
    Give,
}

/// Two players' markers landed on one cell of an observation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("players overlap at {cell} in {observer}'s observation")]
pub struct PlayersOverlapping {
    /// Whose observation.
    pub observer: PlayerId,
    /// Where.
    pub cell: Cell,
}

/// The random draws of a reset: the first episode's random length and random start
/// positions.
///
/// Every [`rand::Rng`] is one. The Python wheel supplies another that draws with
/// Python's `random.randrange`, so that a script seeding `random` gets the
/// reference's start positions.
pub trait ResetDraws {
    /// A start coordinate in `0..n` (`n` > 0).
    fn coordinate(&mut self, n: usize) -> usize;
    /// A first timestep in `0..horizon` (`horizon` > 0).
    fn first_timestep(&mut self, horizon: u64) -> u64;
}

impl<R: rand::Rng> ResetDraws for R {
    fn coordinate(&mut self, n: usize) -> usize {
        self.random_range(0..n)
    }

    fn first_timestep(&mut self, horizon: u64) -> u64 {
        self.random_range(0..horizon)
    }
}

/// The MBAG environment.
#[derive(Clone, Debug)]
pub struct Env {
    config: Config,
    size: WorldSize,
    layout: FlatLayout,
    global_timestep: u64,
    rewards: Vec<RewardValues>,
    goal: Blocks,
    state: EnvState,
    goal_match: GoalMatch,
    initial_goal_similarities: Vec<f64>,
    is_first_episode: bool,
    any_step_since_reset: bool,
    trace: Option<Vec<PlaceBreakAttempt>>,
    outcome: StepOutcome,
    /// Reused buffer for the processing order of a step.
    order: Vec<usize>,
    /// Reused buffer for walking viewpoint candidates (traced episodes only).
    candidates: Vec<Candidate>,
    /// Per player, reused buffers for teleport viewpoint candidates: a step's
    /// searches are kept until its end, when destinations are picked.
    teleport_candidates: Vec<CandidateSet>,
    /// Per player, the generator that picks among its teleport candidates, seeded
    /// anew for each choice (kept to reuse its state's memory).
    teleport_rngs: Vec<PyRandom>,
    /// This step's teleporting place/break attempts, in the order they were made.
    teleports: Vec<Teleport>,
    /// The world's obstacles as bit rows, for teleport searches.
    obstacles: ObstacleRows,
    /// The `hash(bytes)` of the Python whose reference this env matches: teleport
    /// choices are seeded with it.
    python_hash: PythonHash,
}

/// The search's view of the env in walking mode: other players' feet and head
/// cells are obstacles.
struct WalkingWorld<'a> {
    blocks: &'a Blocks,
    positions: &'a [PlayerPos],
    me: usize,
}

impl SearchWorld for WalkingWorld<'_> {
    fn size(&self) -> WorldSize {
        self.blocks.size()
    }
    #[inline]
    fn ids(&self) -> &[u8] {
        self.blocks.ids()
    }
    #[inline]
    fn is_obstacle_player(&self, x: i32, y: i32, z: i32) -> bool {
        // The reference truncates positions with a C int cast.
        self.positions.iter().enumerate().any(|(q, o)| {
            let (ox, oy, oz) = (o.x as i32, o.y as i32, o.z as i32);
            q != self.me && x == ox && z == oz && (y == oy || y == oy + 1)
        })
    }
}

/// The search's view in teleportation mode: players are never obstacles.
struct TeleportWorld<'a>(&'a Blocks, &'a ObstacleRows);

impl SearchWorld for TeleportWorld<'_> {
    fn size(&self) -> WorldSize {
        self.0.size()
    }
    #[inline]
    fn ids(&self) -> &[u8] {
        self.0.ids()
    }
    #[inline]
    fn is_obstacle_player(&self, _: i32, _: i32, _: i32) -> bool {
        false
    }
    fn obstacle_rows(&self) -> Option<&ObstacleRows> {
        Some(self.1)
    }
}

impl Env {
    /// An environment for a config, holding an all-air goal until the first reset.
    pub fn new(config: Config) -> Self {
        let size = config.world_size;
        let num_players = config.num_players;
        let rewards = config
            .players
            .iter()
            .map(|p| p.rewards.values_at(0))
            .collect();
        let blocks = Blocks::initial_world(size);
        let goal = Blocks::air(size);
        let goal_match = GoalMatch::count(&blocks, &goal);
        let mut obstacles = ObstacleRows::default();
        if config.abilities.teleportation {
            // Builds the teleport search's tables for this world size now (once per
            // process), rather than in the first step.
            obstacles.sync_blocks(size, blocks.ids());
        }
        Self {
            layout: FlatLayout::new(size, config.abilities),
            size,
            global_timestep: 0,
            rewards,
            goal,
            state: EnvState {
                blocks,
                last_interacted: vec![NO_INTERACTION; size.num_cells()],
                player_positions: vec![PlayerPos::default(); num_players],
                inventories: vec![Inventory::default(); num_players],
                timestep: 0,
                timesteps_with_no_progress: 0,
                maximum_goal_percentages: vec![0.0; num_players],
            },
            goal_match,
            initial_goal_similarities: vec![0.0; num_players],
            is_first_episode: true,
            any_step_since_reset: true,
            trace: None,
            outcome: StepOutcome {
                rewards: vec![0.0; num_players],
                done: false,
                infos: vec![StepInfo::idle(0.0, 0.0, 0.0); num_players],
            },
            order: Vec::with_capacity(num_players),
            candidates: Vec::new(),
            teleport_candidates: vec![CandidateSet::default(); num_players],
            teleport_rngs: vec![PyRandom::new(0); num_players],
            teleports: Vec::with_capacity(num_players),
            obstacles,
            python_hash: PythonHash::default(),
            config,
        }
    }

    /// The `hash(bytes)` that seeds teleport choices (ENV_SPEC 6.4).
    pub fn python_hash(&self) -> PythonHash {
        self.python_hash
    }

    /// Seeds teleport choices with `hash` from now on: the reference's choices
    /// follow the interpreter it runs in, SipHash-1-3 (the default, the goldens'
    /// CPython 3.11) or SipHash-2-4 (CPython 3.8 to 3.10).
    pub fn set_python_hash(&mut self, hash: PythonHash) {
        self.python_hash = hash;
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The world size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The number of players.
    pub fn num_players(&self) -> usize {
        self.config.num_players
    }

    /// The flat action layout of this config.
    pub fn layout(&self) -> &FlatLayout {
        &self.layout
    }

    /// The goal (world-sized, including the unchanged border and the palette).
    pub fn goal(&self) -> &Blocks {
        &self.goal
    }

    /// The current state.
    pub fn state(&self) -> &EnvState {
        &self.state
    }

    /// The palette column `x = W - 1`.
    pub fn palette_x(&self) -> i32 {
        self.size.width as i32 - 1
    }

    /// The global timestep at which reward schedules are evaluated.
    pub fn global_timestep(&self) -> u64 {
        self.global_timestep
    }

    /// Sets the global timestep (the reference's `update_global_timestep`).
    pub fn set_global_timestep(&mut self, t: u64) {
        self.global_timestep = t;
        self.rewards = self
            .config
            .players
            .iter()
            .map(|p| p.rewards.values_at(t))
            .collect();
    }

    /// Per player, the partial-credit similarity at reset.
    pub fn initial_goal_similarities(&self) -> &[f64] {
        &self.initial_goal_similarities
    }

    /// Turns the recording of viewpoint searches on or off. With it on, walking-mode
    /// searches enumerate every candidate (instead of stopping at the first) so the
    /// counts and choices can be compared with the reference.
    pub fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The viewpoint searches of the last step (empty unless tracing).
    pub fn place_break_attempts(&self) -> &[PlaceBreakAttempt] {
        self.trace.as_deref().unwrap_or(&[])
    }

    /// Whether the next reset generates a new goal (the reference keeps the goal when
    /// reset twice without a step in between).
    pub fn needs_new_goal(&self) -> bool {
        self.any_step_since_reset
    }

    /// Resets the episode as the reference does: a new goal from `generator` unless
    /// no step was taken since the last reset (then the goal is kept), start
    /// positions, inventories.
    pub fn reset(
        &mut self,
        generator: &mut dyn GoalGenerator,
        rng: &mut impl rand::Rng,
    ) -> Result<(), GoalError> {
        let goal = if self.needs_new_goal() {
            self.generate_goal(generator, rng)?
        } else {
            self.goal.clone()
        };
        self.reset_with_goal(goal, rng);
        Ok(())
    }

    /// A new world-sized goal from `generator`, as [`Env::reset`] makes one
    /// (for [`Env::reset_with_goal`] where a reset must not keep the old goal).
    pub fn generate_goal(
        &self,
        generator: &mut dyn GoalGenerator,
        rng: &mut impl rand::Rng,
    ) -> Result<Blocks, GoalError> {
        let structure = generator.generate(self.goal_structure_size(), rng)?;
        Ok(place_goal(
            self.size,
            &structure,
            self.config.abilities.inf_blocks,
        ))
    }

    /// The size a goal structure may have: the world less a one-cell border (and the
    /// palette column when blocks are limited).
    pub fn goal_structure_size(&self) -> WorldSize {
        let s = self.size;
        let border = if self.config.abilities.inf_blocks {
            2
        } else {
            3
        };
        WorldSize::new(s.width - border, s.height - 2, s.depth - 2)
    }

    /// Resets the episode around `goal` (already placed in a world-sized grid, see
    /// [`place_goal`]). `rng` draws the random first-episode length and random start
    /// positions when the config asks for them.
    pub fn reset_with_goal(&mut self, goal: Blocks, rng: &mut impl ResetDraws) {
        let timestep = if self.is_first_episode && self.config.randomize_first_episode_length {
            rng.first_timestep(self.config.horizon.max(1))
        } else {
            0
        };
        let blocks = Blocks::initial_world(self.size);
        let positions = self.start_positions(&blocks, rng);
        let mut inventories = vec![Inventory::default(); self.num_players()];
        if self.config.abilities.inf_blocks {
            // Humans get one of each block for Minecraft's hotbar; it shows in
            // observations.
            for (inv, p) in inventories.iter_mut().zip(&self.config.players) {
                if p.is_human {
                    for b in BlockId::PLACEABLE {
                        inv.set_slot(usize::from(b.0), Slot { block: b, count: 1 });
                    }
                }
            }
        }
        let state = EnvState {
            blocks,
            last_interacted: vec![NO_INTERACTION; self.size.num_cells()],
            player_positions: positions,
            inventories,
            timestep,
            timesteps_with_no_progress: 0,
            maximum_goal_percentages: vec![0.0; self.num_players()],
        };
        self.restore(goal, state);
    }

    /// Restores a recorded episode start: goal, state and global timestep, then the
    /// derived quantities (palette copy, initial similarities, maximum percentages).
    pub fn restore(&mut self, goal: Blocks, mut state: EnvState) {
        assert_eq!(goal.size(), self.size, "goal must be world-sized");
        self.goal = goal;
        self.any_step_since_reset = false;
        if !self.config.abilities.inf_blocks {
            copy_palette(&mut state.blocks, &self.goal, self.palette_x());
        }
        self.goal_match = GoalMatch::count(&state.blocks, &self.goal);
        self.state = state;
        self.initial_goal_similarities = (0..self.num_players())
            .map(|p| self.partial_similarity(p))
            .collect();
        self.state.maximum_goal_percentages = (0..self.num_players())
            .map(|p| self.goal_percentage(p))
            .collect();
        self.state.timesteps_with_no_progress = 0;
        if let Some(trace) = &mut self.trace {
            trace.clear();
        }
    }

    /// Replaces the state mid-episode (e.g. to continue a search from a snapshot),
    /// keeping the goal and the initial similarities.
    pub fn set_state(&mut self, state: EnvState) {
        self.goal_match = GoalMatch::count(&state.blocks, &self.goal);
        self.state = state;
    }

    /// Replaces the goal and the state mid-episode, as the reference's `set_state`
    /// does: the initial similarities of the last reset stay.
    pub fn set_goal_and_state(&mut self, goal: Blocks, state: EnvState) {
        assert_eq!(goal.size(), self.size, "goal must be world-sized");
        self.goal = goal;
        self.set_state(state);
    }

    /// Where every player starts in `blocks`: drawn at random where a player
    /// fits (two free cells, no overlap) when the config asks for random start
    /// locations, else the reference's fixed row. Also lets corpora that build
    /// worlds directly put the players somewhere plausible.
    pub fn start_positions(&self, blocks: &Blocks, rng: &mut impl ResetDraws) -> Vec<PlayerPos> {
        let size = self.size;
        if !self.config.random_start_locations {
            return (0..self.num_players())
                .map(|i| {
                    PlayerPos::new(
                        (i % size.width) as f64 + 0.5,
                        2.0,
                        (i / size.width) as f64 + 0.5,
                    )
                })
                .collect();
        }
        let mut placed: Vec<PlayerPos> = Vec::with_capacity(self.num_players());
        for _ in 0..self.num_players() {
            loop {
                let pos = PlayerPos::new(
                    rng.coordinate(size.width) as f64 + 0.5,
                    rng.coordinate(size.height) as f64,
                    rng.coordinate(size.depth) as f64 + 0.5,
                );
                if is_valid_player_space(blocks, pos, &placed, None) {
                    placed.push(pos);
                    break;
                }
            }
        }
        placed
    }

    /// Player `p`'s similarity with partial credit: the reference's numpy sum over
    /// every cell's credit (ENV_SPEC 7.1), bit for bit.
    ///
    /// The incremental counts give numpy's result in O(1) whenever every partial
    /// sum numpy forms is exact, whatever its order: with no wrong-type cell (the
    /// sum is the matching count, even for a NaN or infinite `place_wrong`, which
    /// then multiplies no cell), or with an integer `place_wrong` (the usual -1 or
    /// 0) small enough that `cells * max(1, |place_wrong|) <= 2^53`. Otherwise (a
    /// fractional one such as -0.475 from a schedule, a huge or non-finite one, or
    /// -0.0, whose sign an all-wrong-type world would keep) the cells are summed in
    /// numpy's pairwise order: the no-progress counter compares percentages with
    /// `>`, so even the last bit matters.
    fn partial_similarity(&self, p: usize) -> f64 {
        let place_wrong = self.rewards[p].place_wrong;
        let counts = &self.goal_match;
        if counts.wrong_type == 0 {
            return counts.similarity();
        }
        if counts_are_exact(place_wrong, self.size.num_cells()) {
            return counts.partial_similarity(place_wrong);
        }
        let (world, goal) = (self.state.blocks.ids(), self.goal.ids());
        super::numpy::sum_of(world.len(), |i| {
            cell_similarity(BlockId(world[i]), BlockId(goal[i]), place_wrong)
        })
    }

    /// Player `p`'s goal percentage on the current world.
    pub fn goal_percentage(&self, p: usize) -> f64 {
        let s = self.partial_similarity(p);
        let s0 = self.initial_goal_similarities[p];
        (s - s0) / (self.size.num_cells() as f64 - s0)
    }

    /// Matching cells of the current world (no partial credit).
    pub fn goal_similarity(&self) -> f64 {
        self.goal_match.similarity()
    }

    /// Whether the world equals the goal (ids and states).
    pub fn goal_completed(&self) -> bool {
        self.goal_match.matching == self.size.num_cells()
            && self.state.blocks.states() == self.goal.states()
    }

    /// Per-player infos of a fresh reset.
    pub fn reset_infos(&self) -> Vec<StepInfo> {
        (0..self.num_players())
            .map(|p| {
                StepInfo::idle(
                    self.goal_similarity(),
                    self.goal_percentage(p),
                    self.rewards[p].own_reward_prop,
                )
            })
            .collect()
    }

    /// Takes one step with one action per player. A typed action is always
    /// accepted, so the only error is a wrong number of actions.
    pub fn step(&mut self, actions: &[Action]) -> Result<&StepOutcome, StepError> {
        self.step_any(actions)
    }

    /// Takes one step with one tuple per player, any integers, as the reference's
    /// `step` does (see the module docs for tuples outside the ten types or out of
    /// range).
    pub fn step_tuples(&mut self, actions: &[ActionTuple]) -> Result<&StepOutcome, StepError> {
        self.step_any(actions)
    }

    fn step_any<A: Copy + Into<ActionTuple>>(
        &mut self,
        actions: &[A],
    ) -> Result<&StepOutcome, StepError> {
        let n = self.num_players();
        if actions.len() != n {
            return Err(StepError::WrongActionCount {
                expected: n,
                got: actions.len(),
            });
        }
        for (p, &a) in actions.iter().enumerate() {
            if self.acts_now(p) {
                self.check_tuple(p, a.into())?;
            }
        }
        if let Some(trace) = &mut self.trace {
            trace.clear();
        }
        // GIVE actions go first; otherwise players act in index order. Like the
        // reference, this looks at the tuple even of a player who does not act.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let gives = |p: usize| actions[p].into().kind() == Some(ActionType::GiveBlock);
        for first in [true, false] {
            order.extend((0..n).filter(|&p| gives(p) == first));
        }
        let mut total_reward = 0.0;
        for &p in &order {
            let action = if self.acts_now(p) {
                actions[p].into()
            } else {
                ActionTuple::NOOP
            };
            let info = self.step_player(p, action);
            total_reward += info.own_reward;
            self.outcome.infos[p] = info;
        }
        self.order = order;
        if !self.teleports.is_empty() {
            self.pick_teleport_destinations();
        }
        let similarity = self.goal_similarity();
        for p in 0..n {
            self.outcome.infos[p].goal_similarity = similarity;
            self.outcome.infos[p].goal_percentage = self.goal_percentage(p);
        }
        self.state.timestep += 1;
        if !self.config.abilities.inf_blocks {
            self.repair_palette();
        }
        self.state.timesteps_with_no_progress += 1;
        for p in 0..n {
            let pct = self.outcome.infos[p].goal_percentage;
            if pct > self.state.maximum_goal_percentages[p] {
                self.state.maximum_goal_percentages[p] = pct;
                self.state.timesteps_with_no_progress = 0;
            }
        }
        for p in 0..n {
            let a = self.rewards[p].own_reward_prop;
            let own_reward = self.outcome.infos[p].own_reward;
            self.outcome.rewards[p] = a * own_reward + (1.0 - a) * total_reward;
        }
        let done = self.is_done();
        self.outcome.done = done;
        if done {
            self.is_first_episode = false;
        }
        self.any_step_since_reset = true;
        Ok(&self.outcome)
    }

    /// Whether player `p` acts this timestep (`timestep_skip`).
    fn acts_now(&self, p: usize) -> bool {
        let skip = u64::from(self.config.players[p].timestep_skip);
        self.state.timestep.is_multiple_of(skip)
    }

    /// The checks of a tuple made before the step changes anything (module docs).
    fn check_tuple(&self, p: usize, action: ActionTuple) -> Result<(), StepError> {
        let player = PlayerId(p);
        let location = action
            .cell_index(self.size)
            .map_err(|_| StepError::LocationOutOfRange {
                player,
                action,
                size: self.size,
            })?;
        if action.block_id().is_some() {
            return Ok(());
        }
        let abilities = self.config.abilities;
        let is_human = self.config.players[p].is_human;
        let unsafe_use = match action.kind() {
            Some(ActionType::PlaceBlock)
                if is_human && abilities.inf_blocks && !abilities.teleportation =>
            {
                Some(UnsafeBlockUse::HumanPlace)
            }
            // GIVEs are processed before anything moves, so the positions now are
            // the ones the give will see.
            Some(ActionType::GiveBlock)
                if !is_human
                    && !abilities.inf_blocks
                    && self.give_recipient(p, self.size.cell(location)).is_some() =>
            {
                Some(UnsafeBlockUse::Give)
            }
            _ => None,
        };
        match unsafe_use {
            Some(use_) => Err(StepError::BlockOutOfRange {
                player,
                action,
                use_,
            }),
            None => Ok(()),
        }
    }

    fn is_done(&self) -> bool {
        let mut done = self.state.timestep >= self.config.horizon;
        if self.config.terminate_on_goal_completion {
            done = done || self.goal_completed();
        }
        if let Some(limit) = self.config.truncate_on_no_progress_timesteps {
            done = done || self.state.timesteps_with_no_progress >= limit;
        }
        done
    }

    /// Copies the palette column back from the goal if anything in it changed.
    fn repair_palette(&mut self) {
        let x = self.palette_x() as usize;
        let slice = self.size.height * self.size.depth;
        let range = x * slice..(x + 1) * slice;
        if self.state.blocks.ids()[range.clone()] == self.goal.ids()[range.clone()] {
            return;
        }
        for i in range {
            let idx = CellIndex(i as u32);
            let before = self.state.blocks.id_at(idx);
            let after = self.goal.id_at(idx);
            self.goal_match.update(&self.goal, idx, before, after);
            self.state.blocks.ids_mut()[i] = after.0;
            self.state.blocks.states_mut()[i] = self.goal.states()[i];
        }
    }

    /// The typed action the env carries out for a checked tuple, `None` for a
    /// no-op: an unknown type, or a PLACE or GIVE whose block id is outside 0..=9
    /// (no inventory holds such a block and none is placeable, so the reference's
    /// checks fail; `check_tuple` refused the cases it does not check). An unused
    /// field out of range is read as air.
    fn resolve(&self, tuple: ActionTuple) -> Option<Action> {
        let kind = tuple.kind()?;
        let location = tuple.cell_index(self.size).ok()?;
        let block = match tuple.block_id() {
            Some(block) => block,
            None if kind.uses_block() => return None,
            None => BlockId::AIR,
        };
        Some(Action::new(kind, location, block))
    }

    fn step_player(&mut self, p: usize, tuple: ActionTuple) -> StepInfo {
        let rewards = self.rewards[p];
        let mut goal_dependent = 0.0;
        let mut goal_independent = 0.0;
        let mut action_correct = false;
        let abilities = self.config.abilities;
        let resolved = self.resolve(tuple);
        let noop = match resolved {
            None
            | Some(Action {
                kind: ActionType::Noop,
                ..
            }) => true,
            Some(
                action @ Action {
                    kind: ActionType::PlaceBlock | ActionType::BreakBlock,
                    ..
                },
            ) => {
                let cell = action.cell(self.size);
                let prev = self.state.blocks.id_at(action.location);
                let palette_break = action.kind == ActionType::BreakBlock
                    && cell.x == self.palette_x()
                    && !abilities.inf_blocks;
                let types_before = if palette_break {
                    self.state.inventories[p].num_types_held()
                } else {
                    0
                };
                let noop = !self.place_break(p, action, cell);
                if palette_break {
                    let types_after = self.state.inventories[p].num_types_held();
                    goal_independent +=
                        (types_after as f64 - types_before as f64) * rewards.get_resources;
                } else {
                    let goal = self.goal.id_at(action.location);
                    let new = self.state.blocks.id_at(action.location);
                    goal_dependent += cell_similarity(new, goal, rewards.place_wrong)
                        - cell_similarity(prev, goal, rewards.place_wrong);
                    action_correct = match action.kind {
                        ActionType::PlaceBlock => goal_dependent > 0.0,
                        _ => goal_dependent >= 0.0,
                    };
                    if !noop && !action_correct {
                        goal_dependent += rewards.incorrect_action;
                    }
                }
                noop
            }
            Some(Action { kind, .. }) if kind.is_move() => {
                abilities.teleportation || !self.try_move(p, kind)
            }
            Some(
                action @ Action {
                    kind: ActionType::GiveBlock,
                    ..
                },
            ) => abilities.inf_blocks || self.give(p, action) == 0,
            Some(_) => unreachable!("every action type is handled above"),
        };
        goal_independent += if noop { rewards.noop } else { rewards.action };
        StepInfo {
            goal_similarity: 0.0,
            goal_percentage: 0.0,
            goal_dependent_reward: goal_dependent,
            goal_independent_reward: goal_independent,
            own_reward: goal_dependent + goal_independent,
            own_reward_prop: rewards.own_reward_prop,
            attempted_action: tuple,
            action: match resolved {
                Some(action) if !noop => action,
                _ => Action::NOOP,
            },
            action_correct: action_correct && !noop,
        }
    }

    /// Places or breaks; returns whether it happened (ENV_SPEC 5.3).
    fn place_break(&mut self, p: usize, action: Action, cell: Cell) -> bool {
        let inf_blocks = self.config.abilities.inf_blocks;
        let place = action.kind == ActionType::PlaceBlock;
        let broken = self.state.blocks.id_at(action.location);
        if !inf_blocks {
            let inv = &self.state.inventories[p];
            let ok = if place {
                inv.count(action.block) >= 1
            } else {
                inv.has_room_for(broken, 1)
            };
            if !ok {
                return false;
            }
        }
        let new_block = if place { action.block } else { BlockId::AIR };
        let is_human = self.config.players[p].is_human;
        let kind = if place {
            Interaction::Place
        } else {
            Interaction::Break
        };
        if self.config.abilities.teleportation {
            if !self.cheap_checks_pass(place, broken, action.block) {
                return false;
            }
            let mut candidates = std::mem::take(&mut self.teleport_candidates[p]);
            self.obstacles
                .sync_blocks(self.size, self.state.blocks.ids());
            let mut alongside = SeedAlongside::new(
                &mut self.teleport_rngs[p],
                self.state.blocks.ids(),
                action.location,
                new_block,
                self.state.timestep,
                self.python_hash,
            );
            viewpoint::teleport_candidates(
                &TeleportWorld(&self.state.blocks, &self.obstacles),
                kind,
                cell,
                &mut candidates,
                &mut alongside,
            );
            let found = !candidates.is_empty();
            let seed = alongside.finish(found);
            self.teleport_candidates[p] = candidates;
            // The choice is made at the end of the step
            // (`pick_teleport_destinations`): nothing in between reads positions.
            if found {
                self.set_block(action.location, new_block);
            }
            self.teleports.push(Teleport {
                player: p,
                kind,
                location: cell,
                seed,
            });
            if !found {
                return false;
            }
        } else {
            if self.collides_with_other_player(p, cell) {
                return false;
            }
            if !is_human {
                if !self.cheap_checks_pass(place, broken, action.block) {
                    return false;
                }
                let world = WalkingWorld {
                    blocks: &self.state.blocks,
                    positions: &self.state.player_positions,
                    me: p,
                };
                let me = self.state.player_positions[p];
                let feet = Some([me.x, me.y, me.z]);
                if self.trace.is_some() {
                    let mut candidates = std::mem::take(&mut self.candidates);
                    viewpoint::candidates_into(&world, kind, cell, feet, &mut candidates);
                    let chosen =
                        self.apply_choice(p, kind, cell, action.location, new_block, &candidates);
                    self.candidates = candidates;
                    if chosen.is_none() {
                        return false;
                    }
                } else {
                    if !viewpoint::any_candidate(&world, kind, cell, feet) {
                        return false;
                    }
                    self.set_block(action.location, new_block);
                }
            } else {
                // Humans' edits in walking mode always succeed: Minecraft already
                // checked them.
                self.set_block(action.location, new_block);
            }
        }
        self.state.last_interacted[action.location.get()] = p as i8;
        if !inf_blocks {
            let inv = &mut self.state.inventories[p];
            let done = if place {
                inv.try_take(action.block, 1)
            } else {
                inv.try_give(broken, 1)
            };
            debug_assert!(done, "inventory precheck passed");
        }
        true
    }

    /// After a walking player's viewpoint search in a traced episode: with
    /// candidates, updates the block, then picks one the reference's way (seeded by
    /// the updated world) and returns it, recording the search. (Teleports pick
    /// theirs at the end of the step: `pick_teleport_destinations`.)
    fn apply_choice(
        &mut self,
        p: usize,
        kind: Interaction,
        cell: Cell,
        location: CellIndex,
        new_block: BlockId,
        candidates: &[Candidate],
    ) -> Option<Candidate> {
        if candidates.is_empty() {
            self.record_attempt(p, kind, cell, 0, None);
            return None;
        }
        self.set_block(location, new_block);
        let (index, seed) = self.choose_candidate(candidates.len());
        let chosen = candidates[index];
        self.record_attempt(p, kind, cell, candidates.len(), Some((index, seed, chosen)));
        Some(chosen)
    }

    /// Picks where this step's teleporting players land (ENV_SPEC 6.4) and records
    /// their attempts, in the order they were made. Each player's generator was
    /// seeded (mostly during its search) when it acted. GIVEs, the only actions
    /// that read positions, go before any place or break.
    fn pick_teleport_destinations(&mut self) {
        let mut teleports = std::mem::take(&mut self.teleports);
        // Two generators with seeding left (their searches were short) finish it
        // side by side.
        let mut seeded = teleports
            .iter()
            .filter(|t| t.seed.is_some())
            .map(|t| t.player);
        if let (Some(a), Some(b)) = (seeded.next(), seeded.next()) {
            let (low, high) = self.teleport_rngs.split_at_mut(a.max(b));
            low[a.min(b)].seeding().finish_both(high[0].seeding());
        }
        for t in teleports.drain(..) {
            let candidates = &self.teleport_candidates[t.player];
            let num_candidates = candidates.len();
            let chosen = t.seed.map(|seed| {
                let index = self.teleport_rngs[t.player].choice_index(num_candidates);
                (index, seed, candidates.get(index))
            });
            if let Some((_, _, candidate)) = chosen {
                let [x, y, z] = candidate.feet();
                self.state.player_positions[t.player] = PlayerPos::new(x, y, z);
            }
            self.record_attempt(t.player, t.kind, t.location, num_candidates, chosen);
        }
        self.teleports = teleports;
    }

    /// The checks before any search: place only into air and only placeable blocks;
    /// break only breakable blocks.
    fn cheap_checks_pass(&self, place: bool, current: BlockId, block: BlockId) -> bool {
        if place {
            current.is_air() && block.is_placeable()
        } else {
            current.is_breakable()
        }
    }

    fn choose_candidate(&self, n: usize) -> (usize, i64) {
        let seed = self
            .python_hash
            .hash_bytes_int_tuple(self.state.blocks.ids(), self.state.timestep);
        (PyRandom::new(seed).choice_index(n), seed)
    }

    fn record_attempt(
        &mut self,
        p: usize,
        kind: Interaction,
        location: Cell,
        num_candidates: usize,
        chosen: Option<(usize, i64, Candidate)>,
    ) {
        if let Some(trace) = &mut self.trace {
            trace.push(PlaceBreakAttempt {
                player: PlayerId(p),
                kind,
                location,
                num_candidates,
                chosen,
            });
        }
    }

    fn set_block(&mut self, i: CellIndex, id: BlockId) {
        let before = self.state.blocks.id_at(i);
        self.goal_match.update(&self.goal, i, before, id);
        self.state.blocks.set_at(i, id);
    }

    /// Whether `cell` is the feet or head cell of a player other than `p` (the
    /// reference compares floats: `x == ox - 0.5`).
    fn collides_with_other_player(&self, p: usize, cell: Cell) -> bool {
        self.state
            .player_positions
            .iter()
            .enumerate()
            .any(|(q, o)| q != p && occupies(*o, cell, false))
    }

    fn try_move(&mut self, p: usize, kind: ActionType) -> bool {
        let (dx, dy, dz) = kind.move_delta().expect("a move");
        let me = self.state.player_positions[p];
        // The reference snaps with int() (truncation) before moving.
        let target = PlayerPos::new(
            me.x.trunc() + 0.5 + f64::from(dx),
            me.y.trunc() + f64::from(dy),
            me.z.trunc() + 0.5 + f64::from(dz),
        );
        let ignore_others = self.config.players[p].is_human;
        let others: &[PlayerPos] = if ignore_others {
            &[]
        } else {
            &self.state.player_positions
        };
        if !is_valid_player_space(&self.state.blocks, target, others, Some(p)) {
            return false;
        }
        self.state.player_positions[p] = target;
        true
    }

    /// The player a GIVE by `giver` to `cell` reaches: an AI in walking mode must be
    /// within one cell of it, and the first player whose feet are there must not be
    /// the giver.
    fn give_recipient(&self, giver: usize, cell: Cell) -> Option<usize> {
        let recipient_pos = PlayerPos::centred_in(cell);
        let g = self.state.player_positions[giver];
        if !self.config.players[giver].is_human
            && !self.config.abilities.teleportation
            && ((g.x - recipient_pos.x).abs() > 1.0
                || (g.y - recipient_pos.y).abs() > 1.0
                || (g.z - recipient_pos.z).abs() > 1.0)
        {
            return None;
        }
        self.state
            .player_positions
            .iter()
            .position(|q| {
                (q.x - recipient_pos.x).abs() < 0.5
                    && (q.y - recipient_pos.y).abs() < 0.5
                    && (q.z - recipient_pos.z).abs() < 0.5
            })
            .filter(|&recipient| recipient != giver)
    }

    /// Gives blocks; returns how many moved (0 = no-op) (ENV_SPEC 5.5).
    fn give(&mut self, giver: usize, action: Action) -> i32 {
        let Some(recipient) = self.give_recipient(giver, action.cell(self.size)) else {
            return 0;
        };
        let giver_is_human = self.config.players[giver].is_human;
        let n = if giver_is_human {
            1
        } else {
            BLOCKS_TO_GIVE.min(self.state.inventories[giver].count(action.block))
        };
        let ok = self.state.inventories[giver].count(action.block) >= n
            && self.state.inventories[recipient].has_room_for(action.block, n);
        if !ok {
            return 0;
        }
        self.state.inventories[giver].try_take(action.block, n);
        self.state.inventories[recipient].try_give(action.block, n);
        n
    }

    /// Writes player `p`'s observation into `obs`.
    pub fn observe(&self, p: usize, obs: &mut Observation) -> Result<(), PlayersOverlapping> {
        let n = self.size.num_cells();
        debug_assert_eq!(obs.size(), self.size);
        let blocks = &self.state.blocks;
        obs.world[..n].copy_from_slice(blocks.ids());
        obs.world[n..2 * n].copy_from_slice(blocks.states());
        if self.config.players[p].goal_visible {
            obs.world[2 * n..3 * n].copy_from_slice(self.goal.ids());
            obs.world[3 * n..4 * n].copy_from_slice(self.goal.states());
        } else {
            obs.world[2 * n..4 * n].fill(0);
        }
        let locations = obs.channel_mut(WorldChannel::PlayerLocations);
        locations.fill(0);
        if !self.config.abilities.teleportation {
            let check = self.config.check_for_overlapping_players
                && !self.config.malmo.use_malmo
                && !self.config.players.iter().any(|q| q.is_human);
            let order = (0..self.num_players()).filter(|&q| q != p).chain([p]);
            for q in order {
                let feet = self.state.player_positions[q].feet_cell();
                let mut cells = [feet, feet.above()];
                let count = if (feet.y + 1) < self.size.height as i32 {
                    2
                } else {
                    1
                };
                for cell in &mut cells[..count] {
                    let i = self.size.index(*cell).get();
                    if check && locations[i] != 0 {
                        return Err(PlayersOverlapping {
                            observer: PlayerId(p),
                            cell: *cell,
                        });
                    }
                    locations[i] = marker_of(p, q);
                }
            }
        }
        // Map each player index to its marker (see `marker_of`); -1 (nobody) gives 0.
        // Written as byte arithmetic and selects so that it vectorises.
        let me = p as i8;
        let last = obs.channel_mut(WorldChannel::LastInteracted);
        for (o, &li) in last.iter_mut().zip(&self.state.last_interacted) {
            let shifted = (li as u8).wrapping_add(1) + u8::from(li >= 0 && li < me);
            *o = if li == me { CURRENT_PLAYER } else { shifted };
        }
        for (row, q) in std::iter::once(p)
            .chain((0..self.num_players()).filter(|&q| q != p))
            .enumerate()
        {
            let counts = self.state.inventories[q].counts();
            obs.inventory[row * counts.len()..(row + 1) * counts.len()].copy_from_slice(&counts);
        }
        obs.timestep = self.state.timestep as i32;
        Ok(())
    }

    /// A fresh observation buffer of the right size.
    pub fn new_observation(&self) -> Observation {
        Observation::new(self.size, self.num_players())
    }
}

/// Player `q`'s marker in `p`'s observation: `p` is 1, the others 2, 3, ... in
/// index order.
#[inline]
/// Whether `matching + place_wrong * wrong_type` is exactly numpy's pairwise sum of
/// `cells` credits (1, `place_wrong` or 0): every partial sum in any order is then
/// an integer of magnitude at most `cells * max(1, |place_wrong|) <= 2^53`, so none
/// rounds. A `-0.0` is left to the cell sum, which alone keeps its sign.
fn counts_are_exact(place_wrong: f64, cells: usize) -> bool {
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53
    place_wrong.fract() == 0.0
        && !(place_wrong == 0.0 && place_wrong.is_sign_negative())
        && cells as f64 * place_wrong.abs().max(1.0) <= EXACT_INTEGERS
}

fn marker_of(p: usize, q: usize) -> u8 {
    match q.cmp(&p) {
        std::cmp::Ordering::Equal => CURRENT_PLAYER,
        std::cmp::Ordering::Less => q as u8 + 2,
        std::cmp::Ordering::Greater => q as u8 + 1,
    }
}

/// Whether `pos` occupies `cell` as feet or head (or the cell below the feet when
/// `below_feet`), with the reference's float comparisons.
fn occupies(pos: PlayerPos, cell: Cell, below_feet: bool) -> bool {
    let (cx, cy, cz) = (f64::from(cell.x), f64::from(cell.y), f64::from(cell.z));
    cx == pos.x - 0.5
        && cz == pos.z - 0.5
        && (cy == pos.y || cy == pos.y + 1.0 || (below_feet && cy == pos.y - 1.0))
}

/// Whether a player may stand with its feet in `feet`: the feet cell in the
/// world, feet and head air (a head above the world is fine), and no player whose
/// feet are in `others` within one cell vertically in the same column. The rule
/// the env moves and starts players by, for code that places players itself.
pub fn player_fits(blocks: &Blocks, feet: Cell, others: &[Cell]) -> bool {
    let size = blocks.size();
    size.contains(feet)
        && blocks.get(feet).is_air()
        && (feet.y >= size.height as i32 - 1 || blocks.get(feet.above()).is_air())
        && !others
            .iter()
            .any(|o| o.x == feet.x && o.z == feet.z && (o.y - feet.y).abs() <= 1)
}

/// Whether a player may stand at `pos`: feet cell in the world, feet and head air
/// (a head above the world is fine), and (unless `others` is empty) no other player
/// within one cell vertically in the same column. `me` is skipped in `others`.
fn is_valid_player_space(
    blocks: &Blocks,
    pos: PlayerPos,
    others: &[PlayerPos],
    me: Option<usize>,
) -> bool {
    let feet = pos.feet_cell();
    if !player_fits(blocks, feet, &[]) {
        return false;
    }
    !others
        .iter()
        .enumerate()
        .any(|(q, o)| Some(q) != me && occupies(*o, feet, true))
}

/// Copies the palette column `x` (ids and states) from the goal into the world.
fn copy_palette(world: &mut Blocks, goal: &Blocks, x: i32) {
    let size = world.size();
    let slice = size.height * size.depth;
    let range = x as usize * slice..(x as usize + 1) * slice;
    world.ids_mut()[range.clone()].copy_from_slice(&goal.ids()[range.clone()]);
    world.states_mut()[range.clone()].copy_from_slice(&goal.states()[range]);
}

/// Places a generated goal structure into a world-sized goal: the structure starts at
/// (1, 1, 1) over the initial world, and in palette mode the palette goes in column
/// `x = W-1` at `y = 2` (ENV_SPEC 3.1).
pub fn place_goal(size: WorldSize, structure: &Blocks, inf_blocks: bool) -> Blocks {
    let mut goal = Blocks::initial_world(size);
    let s = structure.size();
    for x in 0..s.width.min(size.width.saturating_sub(1)) {
        for y in 0..s.height.min(size.height.saturating_sub(1)) {
            for z in 0..s.depth.min(size.depth.saturating_sub(1)) {
                let from = Cell::new(x as i32, y as i32, z as i32);
                let to = from.offset(1, 1, 1);
                goal.set_with_state(to, structure.get(from), structure.state(from));
            }
        }
    }
    if !inf_blocks {
        let x = size.width as i32 - 1;
        for (z, b) in BlockId::PLACEABLE.iter().enumerate().take(size.depth) {
            goal.set(Cell::new(x, 2, z as i32), *b);
        }
    }
    goal
}

#[cfg(test)]
mod python_hash_tests;
#[cfg(test)]
mod reward_tests;
#[cfg(test)]
mod tests;
