//! The emulated Minecraft world of one mission: blocks, players and their
//! inventories. It is owned by one task ([`super::server`]) and changed only there.
//!
//! What is modelled, and how it departs from Minecraft:
//!
//! * **Blocks**: the flat world (bedrock at y = 0, grass at y = 1, air above, in
//!   every column) with the mission's DrawingDecorator on top: the walls of
//!   `restrict_players`, the goal copy at `x + W + 1` and the build area. Every
//!   block is a full cube.
//! * **Blueprint and error blocks are not materialised.** The fork hides both
//!   from every observation (grids read blueprints as `air` and error blocks as
//!   their base type; rays pass through blueprints and report error blocks' base
//!   type), and placing into a blueprint replaces it. A world holding only the
//!   real blocks therefore gives the same grids and rays; the difference is only
//!   visible on a screen. The goal copy is protected from players' `use` and
//!   `attack` as the BuildBattleDecorator protects it.
//! * **No physics**: no gravity, no collisions while moving, no flight state
//!   (`jump` is accepted and echoed), no item entities. Teleports and moves put a
//!   player exactly where asked. A block cannot be placed into a player's
//!   bounding box (0.6 × 1.8), as in Minecraft.
//! * **Breaking** is instant. In survival a broken block goes straight into the
//!   breaker's inventory as silk touch would drop it (MBAG gives humans silk-touch
//!   tools; grass gives dirt); bedrock and barrier cannot be broken. Creative
//!   players break anything and get nothing.
//! * **Block changes** (the patched mod's `block_changes`) are logged for every
//!   player's place and break; their `tick` is the most observations any player
//!   has had, standing in for the server's total world time.
//! * **Time** stands still at 1000 (MBAG missions set `AllowPassageOfTime`
//!   false); statistics other than position, time alive and distance travelled
//!   keep their starting values.

use std::collections::{HashMap, VecDeque};

use crate::block::Block;
use crate::grid::WorldSize;
use crate::mission::{Boundary, Mission, PlayerKind};
use crate::mod_patch::{BlockAction, BlockChange, ModFlavour};

use super::blocks::{McBlock, max_stack};

/// The world time MBAG missions start at and keep.
pub const WORLD_TIME: i64 = 1000;

/// Slots in a player's inventory: 0-8 hotbar, 9-35 main, 36-39 armour, 40 off-hand.
pub const INVENTORY_SLOTS: usize = 41;

/// One inventory slot.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Stack {
    /// Item name; empty for an empty slot (reported as `air`).
    pub item: String,
    /// How many.
    pub size: u32,
}

impl Stack {
    /// Whether the slot holds nothing.
    pub fn is_empty(&self) -> bool {
        self.size == 0 || self.item.is_empty()
    }

    /// The name the mod reports (`air` when empty).
    pub fn item_name(&self) -> &str {
        if self.is_empty() { "air" } else { &self.item }
    }

    fn take(&mut self, n: u32) -> u32 {
        let taken = n.min(self.size);
        self.size -= taken;
        if self.size == 0 {
            self.item.clear();
        }
        taken
    }
}

/// A player's game mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameMode {
    /// Survival (`/gamemode 0`): blocks are used up, reach 4.5.
    Survival,
    /// Creative (`/gamemode 1`, every MBAG AgentSection's start): reach 5.
    Creative,
    /// Adventure (`/gamemode 2`).
    Adventure,
    /// Spectator (`/gamemode 3`): cannot place or break.
    Spectator,
}

impl GameMode {
    /// The name in "Your game mode has been updated to … Mode".
    pub fn display(self) -> &'static str {
        match self {
            Self::Survival => "Survival",
            Self::Creative => "Creative",
            Self::Adventure => "Adventure",
            Self::Spectator => "Spectator",
        }
    }

    /// Block reach: 5 in creative, 4.5 otherwise.
    pub fn reach(self) -> f64 {
        if self == Self::Creative { 5.0 } else { 4.5 }
    }
}

/// Which handlers an AgentSection has, which decides what it observes and which
/// commands it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    /// An MBAG player (AI or human).
    Player(PlayerKind),
    /// The spectator: movement, jump and chat only, no observations, no quit.
    Spectator,
}

/// One human input event for `ObservationFromHuman`.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanEvent {
    /// A key or mouse button pressed or released (`command` as the mod names it:
    /// `forward`, `use`, `attack`, `hotbar.3`, …).
    Key {
        /// The command name.
        command: String,
        /// Pressed or released.
        pressed: bool,
    },
    /// A mouse movement, in the mod's units.
    Mouse {
        /// Horizontal delta.
        dx: i64,
        /// Vertical delta.
        dy: i64,
    },
}

/// One player (or the spectator) in the world.
#[derive(Clone, Debug)]
pub struct PlayerState {
    /// The in-game name.
    pub name: String,
    /// Its handlers.
    pub kind: AgentKind,
    /// Feet position.
    pub pos: [f64; 3],
    /// Yaw in degrees (a Java float in the mod).
    pub yaw: f32,
    /// Pitch in degrees.
    pub pitch: f32,
    /// Game mode.
    pub mode: GameMode,
    /// The 41 inventory slots.
    pub inventory: Vec<Stack>,
    /// The fork's `held` stack (on the cursor while an inventory screen is open);
    /// nothing in the emulator opens screens, so it stays empty unless set.
    pub held: Stack,
    /// The selected hotbar slot, 0..=8.
    pub selected: usize,
    /// Joined the server.
    pub joined: bool,
    /// Finished (quit, or its client went away).
    pub finished: bool,
    /// Commands handled since the last observation, as the mod echoes them.
    pub(crate) echoes: Vec<String>,
    /// Whether its section has `ObservationFromChat` (every human; an AI
    /// only when its mission asks for chat).
    pub(crate) observes_chat: bool,
    /// Chat lines received since the last observation.
    pub(crate) chat: Vec<String>,
    /// Titles and subtitles received since the last observation.
    pub(crate) titles: Vec<String>,
    pub(crate) subtitles: Vec<String>,
    /// Human input events since the last observation.
    pub(crate) events: Vec<HumanEvent>,
    /// Ticks observed, for `TimeAlive`.
    pub(crate) ticks: i64,
    /// Centimetres moved, for `DistanceTravelled`.
    pub(crate) travelled: f64,
    /// The last block change this player's observations reported (patched mod).
    pub(crate) changes_seen: u64,
}

impl PlayerState {
    fn new(name: &str, kind: AgentKind, pos: [f64; 3], yaw: f32) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            pos,
            yaw,
            pitch: 0.0,
            mode: GameMode::Creative,
            inventory: vec![Stack::default(); INVENTORY_SLOTS],
            held: Stack::default(),
            selected: 0,
            joined: false,
            finished: false,
            echoes: Vec::new(),
            observes_chat: kind == AgentKind::Player(PlayerKind::Human),
            chat: Vec::new(),
            titles: Vec::new(),
            subtitles: Vec::new(),
            events: Vec::new(),
            ticks: 0,
            travelled: 0.0,
            changes_seen: 0,
        }
    }

    /// Whether this is a human player (chat, events and system observations).
    pub fn is_human(&self) -> bool {
        self.kind == AgentKind::Player(PlayerKind::Human)
    }

    /// The eye position.
    pub fn eye(&self) -> [f64; 3] {
        [
            self.pos[0],
            self.pos[1] + f64::from(super::ray::EYE_HEIGHT),
            self.pos[2],
        ]
    }

    /// Moves the feet to `pos`, counting the distance travelled.
    pub fn move_to(&mut self, pos: [f64; 3]) {
        let d: f64 = (0..3).map(|a| (pos[a] - self.pos[a]).powi(2)).sum();
        self.travelled += d.sqrt() * 100.0;
        self.pos = pos;
    }

    /// Adds items as Minecraft's `addItemStackToInventory` does: first onto
    /// stacks of the same item with room (the selected slot, the off-hand, then
    /// slots 0-35), then into the first empty slots 0-35. Returns how many found
    /// no room (Minecraft would drop them; the emulator discards them).
    pub fn add_items(&mut self, item: &str, mut count: u32) -> u32 {
        let max = max_stack(item);
        let order = [self.selected, 40].into_iter().chain(0..36);
        for slot in order.collect::<Vec<_>>() {
            let stack = &mut self.inventory[slot];
            if count > 0 && !stack.is_empty() && stack.item == item && stack.size < max {
                let added = count.min(max - stack.size);
                stack.size += added;
                count -= added;
            }
        }
        for slot in 0..36 {
            let stack = &mut self.inventory[slot];
            if count > 0 && stack.is_empty() {
                let added = count.min(max);
                *stack = Stack {
                    item: item.to_owned(),
                    size: added,
                };
                count -= added;
            }
        }
        count
    }

    /// Removes up to `max` (all if `None`) of `item` (any item if `None`) from
    /// every slot and the cursor; returns how many were (or, with `max` = 0, would
    /// be) removed, as `/clear` counts.
    pub fn clear_items(&mut self, item: Option<&str>, max: Option<u32>) -> u32 {
        let matches = |s: &Stack| !s.is_empty() && item.is_none_or(|i| s.item == i);
        if max == Some(0) {
            let held = std::iter::once(&self.held);
            return self
                .inventory
                .iter()
                .chain(held)
                .filter(|s| matches(s))
                .map(|s| s.size)
                .sum();
        }
        let mut left = max.unwrap_or(u32::MAX);
        let mut removed = 0;
        for stack in self
            .inventory
            .iter_mut()
            .chain(std::iter::once(&mut self.held))
        {
            if left > 0 && matches(stack) {
                let n = stack.take(left);
                left -= n;
                removed += n;
            }
        }
        removed
    }

    /// The selected hotbar stack.
    pub fn selected_stack(&mut self) -> &mut Stack {
        &mut self.inventory[self.selected]
    }
}

/// A copy of one player's state, for tests and the CLI.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerSnapshot {
    /// The in-game name.
    pub name: String,
    /// Feet position.
    pub pos: [f64; 3],
    /// Yaw in degrees.
    pub yaw: f32,
    /// Pitch in degrees.
    pub pitch: f32,
    /// Game mode.
    pub mode: GameMode,
    /// The 41 slots.
    pub inventory: Vec<Stack>,
    /// The selected hotbar slot.
    pub selected: usize,
}

/// The world of one mission.
#[derive(Debug)]
pub struct World {
    size: WorldSize,
    /// Cells that differ from the flat world.
    blocks: HashMap<[i32; 3], McBlock>,
    /// One per role, in role order.
    pub(crate) players: Vec<PlayerState>,
    /// `/gamerule sendCommandFeedback`.
    pub(crate) send_command_feedback: bool,
    /// Other game rules, as set.
    pub(crate) rules: HashMap<String, String>,
    /// Which mod is emulated: only the patched one reports block changes.
    pub(crate) mod_flavour: ModFlavour,
    /// The latest block changes players made, oldest first, as the patched mod's
    /// server log keeps them.
    pub(crate) block_log: VecDeque<BlockChange>,
}

/// How many block changes the patched mod's server keeps for observers.
pub const BLOCK_LOG_CAPACITY: usize = 4096;

impl World {
    /// The world a mission's handlers build: the flat world, the walls, the goal
    /// copy and the build area, with every AgentSection's player at its
    /// `AgentStart` placement.
    pub fn from_mission(mission: &Mission) -> Self {
        let size = mission.world_size();
        let mut world = Self {
            size,
            blocks: HashMap::new(),
            players: Vec::new(),
            send_command_feedback: true,
            rules: HashMap::new(),
            mod_flavour: ModFlavour::Stock,
            block_log: VecDeque::new(),
        };
        let (w, h, d) = (
            size.width() as i32,
            size.height() as i32,
            size.depth() as i32,
        );
        if mission.boundary() == Boundary::Walled {
            let walls = [
                (McBlock::Bedrock, [w, 2, -1], [w, h, d]),
                (McBlock::Barrier, [-1, 2, -1], [-1, h, d]),
                (McBlock::Barrier, [-1, 2, -1], [w, h, -1]),
                (McBlock::Barrier, [-1, 2, d], [w, h, d]),
                (McBlock::Barrier, [-1, h + 1, -1], [w, h + 1, d]),
            ];
            for (block, from, to) in walls {
                world.fill(from, to, |_| Some(block));
            }
        }
        for (grid, offset) in [(mission.goal(), w + 1), (mission.current(), 0)] {
            for (x, y, z, block) in grid.cells() {
                // The reference draws only what the flat world does not already
                // have (MBAG_INTEGRATION.md §2); grass stands for dirt at y = 1.
                if block == Block::Air
                    || (y == 0 && block == Block::Bedrock)
                    || (y == 1 && block == Block::Dirt)
                {
                    continue;
                }
                world.set_block(
                    [x as i32 + offset, y as i32, z as i32],
                    McBlock::from_mbag(block),
                );
            }
        }
        for (i, player) in mission.players().iter().enumerate() {
            let mut state = PlayerState::new(
                player.name.as_str(),
                AgentKind::Player(player.kind),
                [0.5 + i as f64, 2.0, 0.5],
                270.0,
            );
            state.observes_chat = player.observes_chat();
            world.players.push(state);
        }
        if mission.spectator().is_some() {
            world.players.push(PlayerState::new(
                crate::mission::Spectator::NAME,
                AgentKind::Spectator,
                [-2.0, 2.0, -2.0],
                0.0,
            ));
        }
        world
    }

    /// The same world running `flavour` of the mod.
    pub fn with_mod_flavour(mut self, flavour: ModFlavour) -> Self {
        self.mod_flavour = flavour;
        self
    }

    /// Which mod this world runs.
    pub fn mod_flavour(&self) -> ModFlavour {
        self.mod_flavour
    }

    /// Logs a place or break by player `role`, as the patched mod's
    /// BlockChangeListener does.
    pub(crate) fn record_change(
        &mut self,
        role: usize,
        action: BlockAction,
        cell: [i32; 3],
        block: McBlock,
    ) {
        let seq = self.block_log.back().map_or(1, |c| c.seq + 1);
        let tick = self.players.iter().map(|p| p.ticks).max().unwrap_or(0);
        self.block_log.push_back(BlockChange {
            seq,
            tick,
            player: self.players[role].name.clone(),
            action,
            cell,
            block: block.name().to_owned(),
            extra: Default::default(),
        });
        if self.block_log.len() > BLOCK_LOG_CAPACITY {
            self.block_log.pop_front();
        }
    }

    /// The build area's size.
    pub fn size(&self) -> WorldSize {
        self.size
    }

    /// The flat world's block at a cell.
    fn flat(pos: [i32; 3]) -> McBlock {
        match pos[1] {
            0 => McBlock::Bedrock,
            1 => McBlock::Grass,
            _ => McBlock::Air,
        }
    }

    /// The block at a cell.
    pub fn block(&self, pos: [i32; 3]) -> McBlock {
        self.blocks
            .get(&pos)
            .copied()
            .unwrap_or_else(|| Self::flat(pos))
    }

    /// Sets a cell; returns whether it changed.
    pub fn set_block(&mut self, pos: [i32; 3], block: McBlock) -> bool {
        if self.block(pos) == block {
            return false;
        }
        if Self::flat(pos) == block {
            self.blocks.remove(&pos);
        } else {
            self.blocks.insert(pos, block);
        }
        true
    }

    /// Sets every cell of the box `from..=to` (corners in any order) for which
    /// `f` gives a block; returns how many changed.
    pub fn fill(
        &mut self,
        from: [i32; 3],
        to: [i32; 3],
        mut f: impl FnMut([i32; 3]) -> Option<McBlock>,
    ) -> usize {
        let lo = [0, 1, 2].map(|a| from[a].min(to[a]));
        let hi = [0, 1, 2].map(|a| from[a].max(to[a]));
        let mut changed = 0;
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    if let Some(block) = f([x, y, z])
                        && self.set_block([x, y, z], block)
                    {
                        changed += 1;
                    }
                }
            }
        }
        changed
    }

    /// Whether a cell lies in the goal copy, which players cannot change.
    pub fn in_goal_area(&self, pos: [i32; 3]) -> bool {
        let w = self.size.width() as i32;
        let gx = pos[0] - (w + 1);
        gx >= 0
            && self
                .size
                .contains(i64::from(gx), i64::from(pos[1]), i64::from(pos[2]))
    }

    /// Whether a block at `pos` would intersect a non-spectator player.
    pub fn occupied(&self, pos: [i32; 3]) -> bool {
        let cell = pos.map(f64::from);
        self.players.iter().any(|p| {
            p.mode != GameMode::Spectator
                && p.kind != AgentKind::Spectator
                && p.pos[0] + 0.3 > cell[0]
                && p.pos[0] - 0.3 < cell[0] + 1.0
                && p.pos[1] + 1.8 > cell[1]
                && p.pos[1] < cell[1] + 1.0
                && p.pos[2] + 0.3 > cell[2]
                && p.pos[2] - 0.3 < cell[2] + 1.0
        })
    }

    /// The role of the player with this name.
    pub fn role_of(&self, name: &str) -> Option<usize> {
        self.players.iter().position(|p| p.name == name)
    }

    /// A copy of a player's state.
    pub fn snapshot(&self, role: usize) -> Option<PlayerSnapshot> {
        let p = self.players.get(role)?;
        Some(PlayerSnapshot {
            name: p.name.clone(),
            pos: p.pos,
            yaw: p.yaw,
            pitch: p.pitch,
            mode: p.mode,
            inventory: p.inventory.clone(),
            selected: p.selected,
        })
    }

    /// The block the player's crosshair is on, within `max` blocks.
    pub fn ray(&self, role: usize, max: f64) -> Option<super::ray::RayHit> {
        let p = &self.players[role];
        super::ray::cast(p.eye(), super::ray::look_vector(p.yaw, p.pitch), max, |c| {
            self.block(c) != McBlock::Air
        })
    }

    /// A chat line to every player.
    pub fn broadcast(&mut self, line: &str) {
        for p in &mut self.players {
            p.chat.push(line.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::BlockGrid;
    use crate::mission::{Player, PlayerName};

    #[test]
    fn a_mission_draws_walls_goal_and_build_area() {
        let size = WorldSize::new(3, 4, 3).unwrap();
        let mut goal = BlockGrid::flat(size);
        goal.set(1, 2, 1, Block::Planks);
        let mut current = BlockGrid::flat(size);
        current.set(0, 2, 0, Block::Wool);
        let players = vec![Player::human(PlayerName::default_for(0))];
        let mission = Mission::new(&goal, &current, players)
            .unwrap()
            .with_boundary(Boundary::Walled);
        let world = World::from_mission(&mission);
        assert_eq!(world.block([5, 2, 1]), McBlock::Planks);
        assert_eq!(world.block([0, 2, 0]), McBlock::Wool);
        assert_eq!(world.block([0, 1, 0]), McBlock::Grass);
        assert_eq!(world.block([3, 2, 1]), McBlock::Bedrock);
        assert_eq!(world.block([-1, 3, 1]), McBlock::Barrier);
        assert_eq!(world.block([1, 5, 1]), McBlock::Barrier);
        assert!(world.in_goal_area([4, 0, 0]) && !world.in_goal_area([3, 0, 0]));
        assert_eq!(world.players[0].pos, [0.5, 2.0, 0.5]);
    }

    #[test]
    fn inventory_fills_stacks_then_empty_slots_and_clears() {
        let mut p = PlayerState::new("p", AgentKind::Spectator, [0.0; 3], 0.0);
        assert_eq!(p.add_items("dirt", 70), 0);
        assert_eq!(p.inventory[0].size, 64);
        assert_eq!(p.inventory[1].size, 6);
        assert_eq!(p.add_items("shears", 2), 0);
        assert_eq!((p.inventory[2].size, p.inventory[3].size), (1, 1));
        assert_eq!(p.clear_items(Some("dirt"), Some(0)), 70);
        assert_eq!(p.clear_items(Some("dirt"), Some(65)), 65);
        assert_eq!(p.clear_items(None, None), 7);
        assert!(p.inventory.iter().all(Stack::is_empty));
    }
}
