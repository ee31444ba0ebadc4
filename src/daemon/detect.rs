//! Human-action detection (MBAG_INTEGRATION.md §4): Minecraft's observations in,
//! environment actions for the human players out.
//!
//! [`MalmoState`] is the reference's `MalmoState`: what Minecraft shows (blocks,
//! per-player positions, inventories, crosshair targets, held buttons), updated
//! from one [`Observation`] at a time into [`StateDiff`]s. [`Detector`] turns
//! those diffs into [`HumanAction`]s with the reference's `get_human_actions`
//! semantics (attribution through `last_breaking`/`last_placing`, the nearest-player
//! fallback, unit moves, `blocks_on_ground` bookkeeping and GIVE_BLOCK), ignores the
//! diffs an AI action announced ([`Detector::expect`]), and queues one action per
//! human per environment step ([`Detector::next_action`]).
//!
//! Decisions where the reference is ambiguous or where we deviate (each one is
//! checked by the parity test on the real recordings, `tests/integration/detect_parity.rs`):
//!
//! 1. **Crosshair of this and the previous observation.** A held `use`/`attack`
//!    marks the block under the crosshair in this observation (the current
//!    reference) *and* the one of the player's previous observation (the 2023
//!    detector that recorded the episodes). The client's ray runs ahead of the
//!    server's grid: in `tutorial_p04` (env step 59084) the crosshair already
//!    passes through the block being broken when the grid still shows it, so the
//!    current reference alone misses that break.
//! 2. **Moves before block changes.** Actions from one observation are emitted as
//!    moves, then place/break, then gives. The current reference emits block changes
//!    first; the 2023 detector emitted moves first, and only that order lets the
//!    simulator replay a jump-and-place-below (the place would otherwise target the
//!    cell the player still stands in).
//! 3. **Moves start from where the simulator will be.** Each human's moves are
//!    counted from a tracked cell: the truncated Minecraft position as the reference
//!    does, re-aligned by [`Detector::sync_positions`] to the simulator's cell
//!    after a batch of observations, when that player has no queued action (the
//!    2023 detector's `sync_human_state`, which also ran only in steps with
//!    observations). Without it, a move the simulator refused (`tutorial_p04`,
//!    step 13288: a drop into a dug hole) is undone later by an opposite move the
//!    simulator does take, and the two positions drift apart for good.
//! 4. **Unknown block names** (the reference raises `KeyError` and ends the
//!    episode) are logged and the cell keeps its previous value. A grid of the wrong
//!    length is a [`DetectError`].
//! 5. **Missing inventory keys** (an observation without `InventorySlot_*`) keep
//!    the previous inventory; a missing `held` slot reads as empty (§10).
//! 6. **Actions attributed to AI players** (the nearest-player fallback considers
//!    every player, §10) are returned by [`Detector::observe`] but never queued:
//!    in the reference nobody consumes them either.
//! 7. **Inventory rows**: block counts use slots 0..=35 only; `held` is kept for the
//!    always-have check (§4.2, §5.3).

use std::collections::VecDeque;

use super::seam::observation::{Button, ChangeKind, GridSizeError, ItemStack, Observation};
use log::{debug, warn};

use crate::sim::action::{Action, ActionType};
use crate::sim::block::{BlockId, Blocks, NUM_BLOCKS};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, CellIndex, PlayerId, PlayerPos, WorldSize};
use crate::sim::inventory::{NUM_SLOTS, Slot};

/// Eye height above the feet, used to tell which side of a face the viewer is on.
const EYE_HEIGHT: f64 = 1.6;

/// How far a position may be from an expected one and still be it: Minecraft
/// keeps positions as doubles and a teleport puts a flying player exactly
/// where asked, so only the printing of the command's numbers can differ (the
/// divergence checks' tolerance, the reference's).
pub const POSITION_TOLERANCE: f64 = 1e-4;

/// What the detector needs to know about the episode.
#[derive(Clone, Debug, PartialEq)]
pub struct DetectorConfig {
    /// The world size.
    pub size: WorldSize,
    /// Per player, whether a human plays it.
    pub humans: Vec<bool>,
    /// Infinite blocks (no palette, no GIVE_BLOCK).
    pub inf_blocks: bool,
}

impl DetectorConfig {
    /// The detector's view of an environment config.
    pub fn from_config(config: &Config) -> Self {
        Self {
            size: config.world_size,
            humans: config.players.iter().map(|p| p.is_human).collect(),
            inf_blocks: config.abilities.inf_blocks,
        }
    }

    /// The number of players.
    pub fn num_players(&self) -> usize {
        self.humans.len()
    }

    /// The palette column's x (`W - 1`), when blocks are finite.
    pub fn palette_x(&self) -> Option<i32> {
        (!self.inf_blocks).then(|| self.size.width as i32 - 1)
    }
}

/// An observation the detector cannot read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DetectError {
    /// The `world` grid does not have one entry per cell.
    #[error(transparent)]
    GridSize(#[from] GridSizeError),
    /// The player index is not one of the episode's players.
    #[error("no player {0} in this episode")]
    UnknownPlayer(PlayerId),
}

/// What Minecraft shows of one player.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerView {
    /// Inventory slots 0..=35 (block id and count; any non-block item reads as
    /// air with count 0, as in the reference).
    pub inventory: [Slot; NUM_SLOTS],
    /// The stack on the mouse cursor, read as the slots are.
    pub held: Slot,
    /// Item names and counts of every slot and `held`, as reported (for the
    /// always-have check, which also counts tools).
    pub items: Vec<ItemStack>,
    /// Feet position.
    pub position: PlayerPos,
    /// The world cell under the crosshair, within reach.
    pub looking_at: Option<Cell>,
    /// The cell under the crosshair in this player's previous observation.
    pub previous_looking_at: Option<Cell>,
    /// The attack button is held.
    pub is_breaking: bool,
    /// The use button is held.
    pub is_placing: bool,
}

impl PlayerView {
    /// Block counts over slots 0..=35 (the reference's
    /// `get_block_counts_in_inventory`; `held` does not count).
    pub fn block_counts(&self) -> [i32; NUM_BLOCKS] {
        let mut counts = [0; NUM_BLOCKS];
        for slot in &self.inventory {
            counts[usize::from(slot.block.0)] += slot.count;
        }
        counts
    }
}

/// One change between two Minecraft states (the reference's `MalmoStateDiff`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StateDiff {
    /// A world cell changed.
    Block {
        /// The cell.
        cell: Cell,
        /// Its block before.
        before: BlockId,
        /// Its block now.
        after: BlockId,
    },
    /// A player moved (any change of the float position).
    Location {
        /// Who.
        player: PlayerId,
        /// Position before.
        before: PlayerPos,
        /// Position now.
        after: PlayerPos,
    },
    /// A player's count of one block type (slots 0..=35) changed.
    Inventory {
        /// Whose inventory.
        player: PlayerId,
        /// Which block.
        block: BlockId,
        /// The count before.
        before: i32,
        /// The count now.
        after: i32,
    },
}

/// What Minecraft shows, as far as MBAG cares (the reference's `MalmoState`).
#[derive(Clone, Debug, PartialEq)]
pub struct MalmoState {
    /// The build area's blocks (block states are always 0).
    pub blocks: Blocks,
    /// Every player's view.
    pub players: Vec<PlayerView>,
    /// Per cell, who last held attack while looking at it.
    pub last_breaking: Vec<Option<PlayerId>>,
    /// Per cell, who last held use while looking at it.
    pub last_placing: Vec<Option<PlayerId>>,
}

/// Whether the world grid of `player`'s observations is read: every player sees
/// the same world, and the reference reads player 0's only.
pub fn reads_world(player: PlayerId) -> bool {
    player.0 == 0
}

/// The player's cell as the reference computes it: `int()` truncates towards zero.
fn truncated_cell(pos: PlayerPos) -> Cell {
    Cell::new(pos.x as i32, pos.y as i32, pos.z as i32)
}

impl MalmoState {
    /// The state the reference starts from: the simulator's blocks and positions,
    /// empty inventories (one of each placeable block in slot k with infinite blocks).
    pub fn new(config: &DetectorConfig, blocks: Blocks, positions: &[PlayerPos]) -> Self {
        let mut inventory = [Slot::default(); NUM_SLOTS];
        if config.inf_blocks {
            for id in BlockId::PLACEABLE {
                inventory[usize::from(id.0)] = Slot {
                    block: id,
                    count: 1,
                };
            }
        }
        let cells = config.size.num_cells();
        Self {
            blocks,
            players: positions
                .iter()
                .map(|&position| PlayerView {
                    inventory,
                    held: Slot::default(),
                    items: Vec::new(),
                    position,
                    looking_at: None,
                    previous_looking_at: None,
                    is_breaking: false,
                    is_placing: false,
                })
                .collect(),
            last_breaking: vec![None; cells],
            last_placing: vec![None; cells],
        }
    }

    /// Applies one observation of `player` (§4.2) and returns the diffs in the
    /// reference's order: blocks (x, then y, then z), location, inventory.
    pub fn update(
        &mut self,
        config: &DetectorConfig,
        player: PlayerId,
        obs: &Observation,
    ) -> Result<Vec<StateDiff>, DetectError> {
        let p = player.0;
        if p >= self.players.len() {
            return Err(DetectError::UnknownPlayer(player));
        }
        let mut diffs = Vec::new();
        if reads_world(player) {
            self.update_blocks(config.size, obs, &mut diffs)?;
        }

        let view = &mut self.players[p];
        let before = view.position;
        let after = PlayerPos::new(
            obs.position[0].unwrap_or(before.x),
            obs.position[1].unwrap_or(before.y),
            obs.position[2].unwrap_or(before.z),
        );
        if after != before {
            diffs.push(StateDiff::Location {
                player,
                before,
                after,
            });
        }
        view.position = after;

        let (placing, breaking) = if config.humans[p] {
            let mut placing = view.is_placing;
            let mut breaking = view.is_breaking;
            for change in &obs.buttons {
                match change.button {
                    Button::Use => {
                        view.is_placing = change.pressed;
                        placing |= change.pressed;
                    }
                    Button::Attack => {
                        view.is_breaking = change.pressed;
                        breaking |= change.pressed;
                    }
                }
            }
            (placing, breaking)
        } else {
            // An AI presses buttons only through commands, echoed once.
            view.is_placing = obs.echoed_use;
            view.is_breaking = obs.echoed_attack;
            (view.is_placing, view.is_breaking)
        };

        view.previous_looking_at = view.looking_at;
        view.looking_at = looking_at(config.size, obs, after);
        // Decision 1: this observation's target and the previous one's.
        let targets = [view.looking_at, view.previous_looking_at];
        for (i, cell) in targets.into_iter().enumerate() {
            let Some(cell) = cell else { continue };
            if i == 1 && targets[0] == Some(cell) {
                continue;
            }
            let index = config.size.index(cell).0 as usize;
            if breaking {
                self.last_breaking[index] = Some(player);
            }
            if placing {
                self.last_placing[index] = Some(player);
            }
        }

        let view = &mut self.players[p];
        if let Some(inventory) = &obs.inventory {
            let before = view.block_counts();
            view.inventory = inventory.slots;
            view.held = inventory.held;
            view.items.clone_from(&inventory.items);
            let after = view.block_counts();
            for (b, (&was, &now)) in before.iter().zip(&after).enumerate() {
                if was != now {
                    diffs.push(StateDiff::Inventory {
                        player,
                        block: BlockId(b as u8),
                        before: was,
                        after: now,
                    });
                }
            }
        }
        Ok(diffs)
    }

    fn update_blocks(
        &mut self,
        size: WorldSize,
        obs: &Observation,
        diffs: &mut Vec<StateDiff>,
    ) -> Result<(), DetectError> {
        let grid = match &obs.world {
            None => return Ok(()),
            Some(Err(e)) => return Err(e.clone().into()),
            Some(Ok(grid)) => grid,
        };
        // Iterate in C order over (x, y, z) so diffs come in np.argwhere order.
        for cell in size.cells() {
            let Some(after) = grid.get(cell) else {
                continue;
            };
            let before = self.blocks.get(cell);
            if after != before {
                self.blocks.set(cell, after);
                diffs.push(StateDiff::Block {
                    cell,
                    before,
                    after,
                });
            }
        }
        if obs.unknown_cells > 0 {
            warn!(
                "{} cells of the world grid hold no MBAG block; they keep their previous value",
                obs.unknown_cells
            );
        }
        Ok(())
    }
}

/// The world cell under the crosshair (§4.2 step 4): a hit on an integral
/// coordinate at or behind the viewer's side is the far face of the block before it.
fn looking_at(size: WorldSize, obs: &Observation, pos: PlayerPos) -> Option<Cell> {
    let [hit_x, hit_y, hit_z] = obs.block_hit?;
    let near = |hit: f64, viewer: f64| {
        if hit <= viewer && hit.fract() == 0.0 {
            hit - 1.0
        } else {
            hit
        }
    };
    let x = near(hit_x, pos.x);
    let y = near(hit_y, pos.y + EYE_HEIGHT);
    let z = near(hit_z, pos.z);
    let inside = |v: f64, n: usize| 0.0 <= v && v < n as f64;
    (inside(x, size.width) && inside(y, size.height) && inside(z, size.depth))
        .then(|| Cell::new(x as i32, y as i32, z as i32))
}

/// How many unused block-change events the detector keeps.
const MAX_ATTRIBUTIONS: usize = 64;

/// The most human actions queued per player. The loop takes one per step, and a
/// person produces a handful per observation at most, so a full queue means
/// minutes of backlog or a flood of forged observations: further actions are
/// dropped (the earliest are kept, so the queue stays a consistent prefix of
/// what the person did) and the next sync repairs the world from Minecraft.
pub const MAX_QUEUED_ACTIONS: usize = 1024;

/// An environment action detected for a player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanAction {
    /// Who acts.
    pub player: PlayerId,
    /// The action.
    pub action: Action,
}

/// The reference's detection thread without the thread: [`MalmoState`] plus the
/// bookkeeping that turns its diffs into queued human actions.
#[derive(Clone, Debug)]
pub struct Detector {
    config: DetectorConfig,
    state: MalmoState,
    /// Per player and block, blocks that player dropped and still owns (negative
    /// while a placement waits for its inventory diff).
    blocks_on_ground: Vec<[i32; NUM_BLOCKS]>,
    /// Per player, the cell its queued moves lead to (decision 3).
    tracked: Vec<Cell>,
    queues: Vec<VecDeque<Action>>,
    expected: Vec<StateDiff>,
    /// Player names, to read the patched mod's block-change events.
    names: Vec<String>,
    /// The patched mod's word on who changed a cell, not yet used; the same
    /// change reaches every observer, so only sequence numbers above the last
    /// one seen are new.
    attributions: Vec<(CellIndex, PlayerId, bool)>,
    last_seq: u64,
    /// Places and breaks attributed by the mod's events rather than inferred.
    attributed_by_mod: u64,
    /// Human actions dropped because their player's queue was full.
    dropped: u64,
}

impl Detector {
    /// A detector for an episode starting from the simulator's blocks and positions.
    pub fn new(config: DetectorConfig, blocks: Blocks, positions: &[PlayerPos]) -> Self {
        let n = config.num_players();
        assert_eq!(positions.len(), n, "one position per player");
        Self {
            state: MalmoState::new(&config, blocks, positions),
            blocks_on_ground: vec![[0; NUM_BLOCKS]; n],
            tracked: positions.iter().map(|&p| truncated_cell(p)).collect(),
            queues: vec![VecDeque::new(); n],
            expected: Vec::new(),
            names: Vec::new(),
            attributions: Vec::new(),
            last_seq: 0,
            attributed_by_mod: 0,
            dropped: 0,
            config,
        }
    }

    /// Names the players (in Minecraft), so that the patched mod's block-change
    /// events (`block_changes`, naming who placed or broke each block) decide
    /// attribution exactly. Without names, or with the stock mod, attribution is
    /// inferred from crosshairs and distances as the reference does.
    pub fn with_player_names(mut self, names: Vec<String>) -> Self {
        self.names = names;
        self
    }

    /// How many places and breaks the mod's events attributed.
    pub fn attributed_by_mod(&self) -> u64 {
        self.attributed_by_mod
    }

    /// How many human actions were dropped because their player already had
    /// [`MAX_QUEUED_ACTIONS`] queued.
    pub fn dropped_actions(&self) -> u64 {
        self.dropped
    }

    /// The detector's configuration.
    pub fn config(&self) -> &DetectorConfig {
        &self.config
    }

    /// What Minecraft shows now.
    pub fn state(&self) -> &MalmoState {
        &self.state
    }

    /// Registers the diffs an AI action will cause, so that they are not taken for
    /// human actions (§4.1 step 3, §5 step 1).
    pub fn expect(&mut self, diffs: impl IntoIterator<Item = StateDiff>) {
        self.expected.extend(diffs);
    }

    /// What Minecraft will show once the AI commands still queued have run: the
    /// latest observations with the block changes and moves of the expected,
    /// not yet seen, AI diffs applied in order. An AI action dispatched now
    /// runs after those commands, so its expectations and its aim are taken
    /// from this, not from the view at dispatch. (Inventory counts are left as
    /// observed: nothing predicted from them needs more than the view.)
    pub fn predicted_state(&self) -> MalmoState {
        let mut state = self.state.clone();
        for diff in &self.expected {
            match *diff {
                StateDiff::Block { cell, after, .. } => {
                    if let Some(index) = self.config.size.checked_index(cell) {
                        state.blocks.set_at(index, after);
                    }
                }
                StateDiff::Location { player, after, .. } => {
                    if let Some(view) = state.players.get_mut(player.0) {
                        view.position = after;
                    }
                }
                StateDiff::Inventory { .. } => {}
            }
        }
        state
    }

    /// The cells and players that AI actions in flight will still change: the
    /// subjects of the expected diffs not seen yet (a give's two players, a
    /// move's player, a place's or break's cell and, with finite blocks, its
    /// player's inventory).
    pub fn in_flight(&self) -> (Vec<CellIndex>, Vec<PlayerId>) {
        let (mut cells, mut players) = (Vec::new(), Vec::new());
        for diff in &self.expected {
            match *diff {
                StateDiff::Block { cell, .. } => {
                    if let Some(index) = self.config.size.checked_index(cell) {
                        cells.push(index);
                    }
                }
                StateDiff::Location { player, .. } | StateDiff::Inventory { player, .. } => {
                    players.push(player);
                }
            }
        }
        (cells, players)
    }

    /// Whether `diff` is what expected AI diffs announced; if so they are used
    /// up. A diff shows where a thing is now, and one observation can cover
    /// several commands (two teleports within one tick show as one move), so a
    /// diff matches an expectation by its end (the cell's new block, the
    /// player's new position within [`POSITION_TOLERANCE`], the new count),
    /// and the earlier expectations of the same cell, player or count, which
    /// Minecraft passed through on the way, are used up with it. Where a thing
    /// was before is not compared: it is Minecraft's, not a prediction.
    fn take_expected(&mut self, diff: &StateDiff) -> bool {
        let same_thing = |e: &StateDiff| match (*e, *diff) {
            (StateDiff::Block { cell: a, .. }, StateDiff::Block { cell: b, .. }) => a == b,
            (StateDiff::Location { player: a, .. }, StateDiff::Location { player: b, .. }) => {
                a == b
            }
            (
                StateDiff::Inventory {
                    player: a,
                    block: x,
                    ..
                },
                StateDiff::Inventory {
                    player: b,
                    block: y,
                    ..
                },
            ) => a == b && x == y,
            _ => false,
        };
        let ends_here = |e: &StateDiff| match (*e, *diff) {
            (StateDiff::Block { after: a, .. }, StateDiff::Block { after: b, .. }) => a == b,
            (StateDiff::Location { after: a, .. }, StateDiff::Location { after: b, .. }) => {
                [(a.x, b.x), (a.y, b.y), (a.z, b.z)]
                    .iter()
                    .all(|(u, v)| (u - v).abs() <= POSITION_TOLERANCE)
            }
            (StateDiff::Inventory { after: a, .. }, StateDiff::Inventory { after: b, .. }) => {
                a == b
            }
            _ => false,
        };
        let Some(last) = self
            .expected
            .iter()
            .position(|e| same_thing(e) && ends_here(e))
        else {
            return false;
        };
        let mut k = 0;
        self.expected.retain(|e| {
            let passed = k <= last && same_thing(e);
            k += 1;
            !passed
        });
        true
    }

    /// Forgets the expected diffs not seen yet and returns them (the reference
    /// warns about each 0.2 s after the AI action's commands).
    pub fn take_unseen_expected(&mut self) -> Vec<StateDiff> {
        std::mem::take(&mut self.expected)
    }

    /// Applies one observation, in receive order across players, and returns the
    /// actions it implies, in emission order. Actions of human players are also
    /// queued for [`Detector::next_action`].
    pub fn observe(
        &mut self,
        player: PlayerId,
        obs: &Observation,
    ) -> Result<Vec<HumanAction>, DetectError> {
        self.read_block_changes(obs);
        let diffs = self.state.update(&self.config, player, obs)?;
        let mut moves = Vec::new();
        let mut others = Vec::new();
        for diff in diffs {
            if self.take_expected(&diff) {
                if let StateDiff::Block { cell, after, .. } = diff {
                    // The AI's own change: its event is used up too.
                    let index = self.config.size.index(cell);
                    self.attributions
                        .retain(|&(c, _, b)| !(c == index && b == (after == BlockId::AIR)));
                }
                continue;
            }
            match diff {
                StateDiff::Block {
                    cell,
                    before,
                    after,
                } => others.extend(self.block_action(cell, before, after)),
                StateDiff::Location { player, after, .. } => self.moves(player, after, &mut moves),
                StateDiff::Inventory {
                    player,
                    block,
                    before,
                    after,
                } => self.inventory_actions(player, block, before, after, &mut others),
            }
        }
        // Decision 2: moves first.
        moves.append(&mut others);
        for a in &moves {
            let queue = &mut self.queues[a.player.0];
            if !self.config.humans[a.player.0] {
                debug!(
                    "dropping {:?} attributed to AI player {}",
                    a.action, a.player
                );
            } else if queue.len() < MAX_QUEUED_ACTIONS {
                queue.push_back(a.action);
            } else {
                self.dropped += 1;
                // The first drop and then every thousandth: a flood must not
                // flood the log too.
                if self.dropped == 1 || self.dropped.is_multiple_of(1000) {
                    warn!(
                        "player {}'s queue of human actions is full ({MAX_QUEUED_ACTIONS}): \
                         dropped {:?} ({} dropped so far); syncs bring the simulator back to Minecraft",
                        a.player, a.action, self.dropped
                    );
                }
            }
        }
        Ok(moves)
    }

    /// Notes the new events of the patched mod's block-change log.
    fn read_block_changes(&mut self, obs: &Observation) {
        for change in &obs.block_changes {
            if change.seq <= self.last_seq {
                continue;
            }
            self.last_seq = change.seq;
            let Some(p) = self.names.iter().position(|n| *n == change.player) else {
                warn!("a block change by {:?}, who is not a player", change.player);
                continue;
            };
            let cell = change.cell;
            if !self.config.size.contains(cell) {
                continue;
            }
            let broke = match change.kind {
                ChangeKind::Place => false,
                ChangeKind::Break => true,
                ChangeKind::Other => continue,
            };
            self.attributions
                .push((self.config.size.index(cell), PlayerId(p), broke));
        }
        // Events whose change never showed in the world (undone within a tick)
        // must not linger and attribute a later change.
        let excess = self.attributions.len().saturating_sub(MAX_ATTRIBUTIONS);
        self.attributions.drain(..excess);
    }

    /// The mod's attribution of a change at `index`, if it sent one.
    fn mod_attribution(&mut self, index: CellIndex, broke: bool) -> Option<PlayerId> {
        let k = self
            .attributions
            .iter()
            .position(|&(c, _, b)| c == index && b == broke)?;
        self.attributed_by_mod += 1;
        Some(self.attributions.remove(k).1)
    }

    fn block_action(&mut self, cell: Cell, before: BlockId, after: BlockId) -> Option<HumanAction> {
        let index = self.config.size.index(cell);
        let i = index.0 as usize;
        if after == BlockId::AIR {
            let breaker = match self.mod_attribution(index, true) {
                Some(p) => p,
                None => self.state.last_breaking[i]?,
            };
            self.blocks_on_ground[breaker.0][usize::from(before.0)] += 1;
            return Some(HumanAction {
                player: breaker,
                action: Action::new(ActionType::BreakBlock, index, after),
            });
        }
        if Some(cell.x) == self.config.palette_x() {
            // The palette is refilled by /clone; not a human's doing.
            return None;
        }
        let placer = match self.mod_attribution(index, false) {
            Some(p) => p,
            None => self.state.last_placing[i].or_else(|| self.nearest_player(cell))?,
        };
        self.blocks_on_ground[placer.0][usize::from(after.0)] -= 1;
        Some(HumanAction {
            player: placer,
            action: Action::new(ActionType::PlaceBlock, index, after),
        })
    }

    /// The player nearest to a block's integer corner, of any kind (§10).
    fn nearest_player(&self, cell: Cell) -> Option<PlayerId> {
        let mut best: Option<(f64, usize)> = None;
        for (p, view) in self.state.players.iter().enumerate() {
            let d = (view.position.x - f64::from(cell.x)).powi(2)
                + (view.position.y - f64::from(cell.y)).powi(2)
                + (view.position.z - f64::from(cell.z)).powi(2);
            if best.is_none_or(|(b, _)| d < b) {
                best = Some((d, p));
            }
        }
        best.map(|(_, p)| PlayerId(p))
    }

    fn moves(&mut self, player: PlayerId, after: PlayerPos, out: &mut Vec<HumanAction>) {
        let target = truncated_cell(after);
        let current = &mut self.tracked[player.0];
        let axes = [
            (
                target.x - current.x,
                ActionType::MovePosX,
                ActionType::MoveNegX,
            ),
            (
                target.y - current.y,
                ActionType::MovePosY,
                ActionType::MoveNegY,
            ),
            (
                target.z - current.z,
                ActionType::MovePosZ,
                ActionType::MoveNegZ,
            ),
        ];
        for (delta, pos, neg) in axes {
            let kind = if delta > 0 { pos } else { neg };
            for _ in 0..delta.unsigned_abs() {
                out.push(HumanAction {
                    player,
                    action: Action::new(kind, Default::default(), BlockId::AIR),
                });
            }
        }
        *current = target;
    }

    fn inventory_actions(
        &mut self,
        player: PlayerId,
        block: BlockId,
        before: i32,
        after: i32,
        out: &mut Vec<HumanAction>,
    ) {
        let b = usize::from(block.0);
        let p = player.0;
        self.blocks_on_ground[p][b] += before - after;
        if self.config.inf_blocks || self.blocks_on_ground[p][b] >= 0 {
            return;
        }
        // Picked up more than it dropped: the rest came from other players.
        let cell = truncated_cell(self.state.players[p].position);
        match self.config.size.checked_index(cell) {
            Some(index) => {
                for o in (0..self.config.num_players()).filter(|&o| o != p) {
                    while self.blocks_on_ground[o][b] > 0 && self.blocks_on_ground[p][b] < 0 {
                        out.push(HumanAction {
                            player: PlayerId(o),
                            action: Action::new(ActionType::GiveBlock, index, block),
                        });
                        self.blocks_on_ground[o][b] -= 1;
                        self.blocks_on_ground[p][b] += 1;
                    }
                }
            }
            None => warn!("player {player} picked up {block} outside the world at {cell}"),
        }
        if self.blocks_on_ground[p][b] < 0 {
            warn!(
                "player {player} unexpectedly has {} {block} blocks on the ground",
                self.blocks_on_ground[p][b]
            );
        }
    }

    /// Pops the next queued action of `player` (the reference hands at most one
    /// per player to each environment step).
    pub fn next_action(&mut self, player: PlayerId) -> Option<Action> {
        self.queues.get_mut(player.0)?.pop_front()
    }

    /// The actions queued for `player`.
    pub fn queued(&self, player: PlayerId) -> impl Iterator<Item = &Action> {
        self.queues[player.0].iter()
    }

    /// Whether any human action waits in a queue (the reference syncs only when
    /// none does, §6).
    pub fn any_queued(&self) -> bool {
        self.queues.iter().any(|q| !q.is_empty())
    }

    /// Decision 3: re-aligns each human with no queued action to the simulator's
    /// cell, so that its next moves start from where the simulator has it. Returns
    /// the players whose tracked cell differed.
    pub fn sync_positions(&mut self, simulator: &[PlayerPos]) -> Vec<PlayerId> {
        let mut moved = Vec::new();
        for (p, &pos) in simulator.iter().enumerate() {
            if !self.config.humans[p] || !self.queues[p].is_empty() {
                continue;
            }
            let cell = pos.feet_cell();
            if self.tracked[p] != cell {
                warn!(
                    "player {p}: the simulator has it at {cell}, its moves so far lead to {}; following the simulator",
                    self.tracked[p]
                );
                self.tracked[p] = cell;
                moved.push(PlayerId(p));
            }
        }
        moved
    }
}

/// What an AI action will change in Minecraft, as the simulator executed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AiEffect {
    /// A block placed at a cell.
    Place {
        /// The cell.
        cell: Cell,
        /// The block.
        block: BlockId,
    },
    /// The block at a cell broken.
    Break {
        /// The cell.
        cell: Cell,
    },
    /// A move to a new position.
    Move {
        /// The new feet position.
        to: PlayerPos,
    },
    /// `count` blocks given to another player.
    Give {
        /// Who receives them.
        recipient: PlayerId,
        /// The block.
        block: BlockId,
        /// How many.
        count: i32,
    },
}

/// The diffs an AI action of `player` will cause, computed from the current
/// Minecraft state (`get_state_diffs_for_ai_action`), for [`Detector::expect`].
pub fn expected_diffs(
    config: &DetectorConfig,
    state: &MalmoState,
    player: PlayerId,
    effect: AiEffect,
) -> Vec<StateDiff> {
    let counts = state.players[player.0].block_counts();
    let count = |b: BlockId| counts[usize::from(b.0)];
    let mut out = Vec::new();
    match effect {
        AiEffect::Place { cell, block } => {
            out.push(StateDiff::Block {
                cell,
                before: BlockId::AIR,
                after: block,
            });
            if !config.inf_blocks {
                out.push(StateDiff::Inventory {
                    player,
                    block,
                    before: count(block),
                    after: count(block) - 1,
                });
            }
        }
        AiEffect::Break { cell } => {
            let block = state.blocks.get(cell);
            out.push(StateDiff::Block {
                cell,
                before: block,
                after: BlockId::AIR,
            });
            if !config.inf_blocks {
                out.push(StateDiff::Inventory {
                    player,
                    block,
                    before: count(block),
                    after: count(block) + 1,
                });
            }
        }
        AiEffect::Move { to } => {
            let before = state.players[player.0].position;
            // A teleport to where the player already is changes nothing.
            if before != to {
                out.push(StateDiff::Location {
                    player,
                    before,
                    after: to,
                });
            }
        }
        AiEffect::Give {
            recipient,
            block,
            count: n,
        } => {
            let theirs = state.players[recipient.0].block_counts()[usize::from(block.0)];
            out.push(StateDiff::Inventory {
                player,
                block,
                before: count(block),
                after: count(block) - n,
            });
            out.push(StateDiff::Inventory {
                player: recipient,
                block,
                before: theirs,
                after: theirs + n,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::seam::observation::{
        ButtonChange, GridSizeError, ObservedInventory, WorldGrid,
    };

    const SIZE: WorldSize = WorldSize::new(4, 4, 4);

    fn config(humans: usize, ais: usize, inf_blocks: bool) -> DetectorConfig {
        DetectorConfig {
            size: SIZE,
            humans: [vec![true; humans], vec![false; ais]].concat(),
            inf_blocks,
        }
    }

    fn grid(blocks: &Blocks) -> Option<Result<WorldGrid, GridSizeError>> {
        Some(Ok(WorldGrid::from_blocks(blocks)))
    }

    fn at(pos: [f64; 3]) -> Observation {
        Observation {
            position: pos.map(Some),
            ..Default::default()
        }
    }

    fn key(button: Button, pressed: bool) -> ButtonChange {
        ButtonChange { button, pressed }
    }

    fn sight(hit: [f64; 3]) -> Option<[f64; 3]> {
        Some(hit)
    }

    fn moves(kinds: &[ActionType]) -> Vec<Action> {
        kinds
            .iter()
            .map(|&k| Action::new(k, Default::default(), BlockId::AIR))
            .collect()
    }

    #[test]
    fn a_full_queue_drops_further_actions_and_counts_them() {
        let world = Blocks::initial_world(SIZE);
        let mut d = Detector::new(config(1, 0, true), world, &[PlayerPos::new(0.5, 2.0, 0.5)]);
        // Stepping back and forth: one move per observation, none taken.
        let extra = 10;
        for i in 0..MAX_QUEUED_ACTIONS + extra {
            let x = if i % 2 == 0 { 1.5 } else { 0.5 };
            assert_eq!(d.observe(PlayerId(0), &at([x, 2.0, 0.5])).unwrap().len(), 1);
        }
        assert_eq!(d.queued(PlayerId(0)).count(), MAX_QUEUED_ACTIONS);
        assert_eq!(d.dropped_actions(), extra as u64);
        // The kept actions are the earliest ones, in order.
        assert_eq!(
            d.next_action(PlayerId(0)).map(|a| a.kind),
            Some(ActionType::MovePosX)
        );
    }

    #[test]
    fn break_is_attributed_through_attack_and_crosshair() {
        let world = Blocks::initial_world(SIZE);
        let mut d = Detector::new(
            config(1, 0, true),
            world.clone(),
            &[PlayerPos::new(0.5, 2.0, 0.5)],
        );
        // Looking down at (1,1,1)'s top face, pressing attack.
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.buttons = vec![key(Button::Attack, true)];
        obs.block_hit = sight([1.5, 2.0, 1.5]);
        assert_eq!(d.observe(PlayerId(0), &obs).unwrap(), vec![]);
        assert_eq!(d.state().players[0].looking_at, Some(Cell::new(1, 1, 1)));
        let mut broken = world.clone();
        broken.set(Cell::new(1, 1, 1), BlockId::AIR);
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.world = grid(&broken);
        let found = d.observe(PlayerId(0), &obs).unwrap();
        let index = SIZE.index(Cell::new(1, 1, 1));
        assert_eq!(
            found,
            vec![HumanAction {
                player: PlayerId(0),
                action: Action::new(ActionType::BreakBlock, index, BlockId::AIR),
            }]
        );
        assert_eq!(d.next_action(PlayerId(0)), Some(found[0].action));
        assert_eq!(d.next_action(PlayerId(0)), None);
    }

    #[test]
    fn place_falls_back_to_the_nearest_player_and_palette_is_ignored() {
        let world = Blocks::initial_world(SIZE);
        let positions = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(3.5, 2.0, 3.5)];
        let mut d = Detector::new(config(2, 0, false), world.clone(), &positions);
        let mut placed = world.clone();
        placed.set(Cell::new(2, 2, 3), BlockId(6));
        // The palette column x = 3 is refilled by /clone: no action.
        placed.set(Cell::new(3, 2, 0), BlockId(6));
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.world = grid(&placed);
        let found = d.observe(PlayerId(0), &obs).unwrap();
        assert_eq!(
            found,
            vec![HumanAction {
                player: PlayerId(1),
                action: Action::new(
                    ActionType::PlaceBlock,
                    SIZE.index(Cell::new(2, 2, 3)),
                    BlockId(6)
                ),
            }]
        );
    }

    #[test]
    fn moves_come_first_as_unit_moves_in_axis_order() {
        let world = Blocks::initial_world(SIZE);
        let mut d = Detector::new(
            config(1, 0, true),
            world.clone(),
            &[PlayerPos::new(0.5, 2.0, 0.5)],
        );
        let mut placed = world.clone();
        placed.set(Cell::new(0, 2, 0), BlockId(3));
        let mut obs = at([2.3, 3.0, 0.2]);
        obs.world = grid(&placed);
        let found: Vec<Action> = d
            .observe(PlayerId(0), &obs)
            .unwrap()
            .iter()
            .map(|a| a.action)
            .collect();
        let mut expected = moves(&[
            ActionType::MovePosX,
            ActionType::MovePosX,
            ActionType::MovePosY,
        ]);
        expected.push(Action::new(
            ActionType::PlaceBlock,
            SIZE.index(Cell::new(0, 2, 0)),
            BlockId(3),
        ));
        assert_eq!(found, expected);
    }

    #[test]
    fn picking_up_another_players_drop_is_their_give() {
        let mut world = Blocks::initial_world(SIZE);
        world.set(Cell::new(2, 2, 2), BlockId(9));
        let positions = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(1.5, 2.0, 2.5)];
        let mut d = Detector::new(config(2, 0, false), world.clone(), &positions);
        // Player 1 breaks the wool...
        let mut obs = at([1.5, 2.0, 2.5]);
        obs.buttons = vec![key(Button::Attack, true)];
        obs.block_hit = sight([2.0, 2.5, 2.5]);
        d.observe(PlayerId(1), &obs).unwrap();
        let mut broken = world.clone();
        broken.set(Cell::new(2, 2, 2), BlockId::AIR);
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.world = grid(&broken);
        let found = d.observe(PlayerId(0), &obs).unwrap();
        assert_eq!(found[0].action.kind, ActionType::BreakBlock);
        assert_eq!(found[0].player, PlayerId(1));
        // ...and player 0 picks it up.
        let mut obs = at([0.5, 2.0, 0.5]);
        let mut slots = [Slot::default(); NUM_SLOTS];
        slots[0] = Slot {
            block: BlockId(9),
            count: 1,
        };
        obs.inventory = Some(ObservedInventory {
            slots,
            held: Slot::default(),
            items: vec![ItemStack {
                item: "wool".into(),
                count: 1,
            }],
        });
        let found = d.observe(PlayerId(0), &obs).unwrap();
        assert_eq!(
            found,
            vec![HumanAction {
                player: PlayerId(1),
                action: Action::new(
                    ActionType::GiveBlock,
                    SIZE.index(Cell::new(0, 2, 0)),
                    BlockId(9)
                ),
            }]
        );
    }

    /// A human (player 0) and an AI (player 1) on the initial world, with
    /// infinite blocks: the config, the detector and the world.
    fn human_and_ai() -> (DetectorConfig, Detector, Blocks) {
        let world = Blocks::initial_world(SIZE);
        let positions = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(3.5, 2.0, 3.5)];
        let cfg = config(1, 1, true);
        let d = Detector::new(cfg.clone(), world.clone(), &positions);
        (cfg, d, world)
    }

    #[test]
    fn expected_ai_diffs_are_not_human_actions() {
        let (cfg, mut d, world) = human_and_ai();
        let cell = Cell::new(3, 2, 2);
        let diffs = expected_diffs(
            &cfg,
            d.state(),
            PlayerId(1),
            AiEffect::Place {
                cell,
                block: BlockId(5),
            },
        );
        d.expect(diffs);
        let mut placed = world.clone();
        placed.set(cell, BlockId(5));
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.world = grid(&placed);
        assert_eq!(d.observe(PlayerId(0), &obs).unwrap(), vec![]);
        assert!(d.take_unseen_expected().is_empty());
    }

    /// A break queued behind a place of the same cell is expected to remove the
    /// placed block, not air: expectations come from the predicted view.
    #[test]
    fn expectations_follow_the_queued_ai_actions() {
        let (cfg, mut d, _) = human_and_ai();
        let cell = Cell::new(3, 2, 2);
        let place = AiEffect::Place {
            cell,
            block: BlockId(5),
        };
        d.expect(expected_diffs(
            &cfg,
            &d.predicted_state(),
            PlayerId(1),
            place,
        ));
        let to = PlayerPos::new(2.5, 2.0, 3.5);
        d.expect(expected_diffs(
            &cfg,
            &d.predicted_state(),
            PlayerId(1),
            AiEffect::Move { to },
        ));
        let predicted = d.predicted_state();
        assert_eq!(predicted.blocks.get(cell), BlockId(5));
        assert_eq!(predicted.players[1].position, to);
        assert_eq!(
            d.state().blocks.get(cell),
            BlockId::AIR,
            "the view is untouched"
        );
        let broke = expected_diffs(&cfg, &predicted, PlayerId(1), AiEffect::Break { cell });
        assert_eq!(
            broke,
            vec![StateDiff::Block {
                cell,
                before: BlockId(5),
                after: BlockId::AIR,
            }]
        );
    }

    /// Two teleports within one tick show as one move from the first start to
    /// the last end: both expectations are used up, none is left unseen, and
    /// while they are pending the player and nothing else is in flight.
    #[test]
    fn one_observed_move_covers_the_teleports_it_passed_through() {
        let (cfg, mut d, _) = human_and_ai();
        let (a, b) = (PlayerPos::new(4.5, 2.0, 3.5), PlayerPos::new(4.5, 3.0, 3.5));
        for to in [a, b] {
            let diffs = expected_diffs(
                &cfg,
                &d.predicted_state(),
                PlayerId(1),
                AiEffect::Move { to },
            );
            d.expect(diffs);
        }
        assert_eq!(d.in_flight(), (vec![], vec![PlayerId(1), PlayerId(1)]));
        let found = d.observe(PlayerId(1), &at([b.x, b.y + 3e-5, b.z])).unwrap();
        assert_eq!(found, vec![]);
        assert!(d.take_unseen_expected().is_empty());
        // A teleport to where the player already is expects nothing.
        let stay = expected_diffs(
            &cfg,
            d.state(),
            PlayerId(1),
            AiEffect::Move {
                to: d.state().players[1].position,
            },
        );
        assert!(stay.is_empty());
    }

    /// A move that ends elsewhere is not the expected one.
    #[test]
    fn a_move_to_another_place_is_not_the_expected_one() {
        let (cfg, mut d, _) = human_and_ai();
        let to = PlayerPos::new(4.5, 2.0, 3.5);
        d.expect(expected_diffs(
            &cfg,
            d.state(),
            PlayerId(1),
            AiEffect::Move { to },
        ));
        d.observe(PlayerId(1), &at([5.5, 2.0, 3.5])).unwrap();
        assert_eq!(d.take_unseen_expected().len(), 1);
    }

    #[test]
    fn unknown_names_keep_the_cell_and_wrong_sizes_fail() {
        let world = Blocks::initial_world(SIZE);
        let mut d = Detector::new(
            config(1, 0, true),
            world.clone(),
            &[PlayerPos::new(0.5, 2.0, 0.5)],
        );
        let mut g = WorldGrid::from_blocks(&world);
        g.set(Cell::new(0, 0, 0), None);
        let mut obs = at([0.5, 2.0, 0.5]);
        obs.world = Some(Ok(g));
        obs.unknown_cells = 1;
        assert_eq!(d.observe(PlayerId(0), &obs).unwrap(), vec![]);
        assert_eq!(d.state().blocks, world);
        obs.world = Some(Err(GridSizeError {
            got: SIZE.num_cells() - 1,
            expected: SIZE.num_cells(),
            size: SIZE,
        }));
        assert!(matches!(
            d.observe(PlayerId(0), &obs),
            Err(DetectError::GridSize(_))
        ));
    }

    #[test]
    fn sync_positions_realigns_idle_humans_only() {
        let world = Blocks::initial_world(SIZE);
        let mut d = Detector::new(config(1, 0, true), world, &[PlayerPos::new(0.5, 2.0, 0.5)]);
        d.observe(PlayerId(0), &at([0.5, 1.2, 0.5])).unwrap();
        assert_eq!(
            d.next_action(PlayerId(0)).map(|a| a.kind),
            Some(ActionType::MoveNegY)
        );
        // The simulator refused the drop: follow it, so climbing out is no move.
        assert_eq!(
            d.sync_positions(&[PlayerPos::new(0.5, 2.0, 0.5)]),
            vec![PlayerId(0)]
        );
        assert_eq!(
            d.observe(PlayerId(0), &at([0.5, 2.0, 0.5])).unwrap(),
            vec![]
        );
    }
}
