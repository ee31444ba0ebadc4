//! Comparing the simulator with Minecraft, and repairing what differs
//! (MBAG_INTEGRATION.md §6 and §8).
//!
//! # Policy
//!
//! Minecraft is the ground truth for everything humans can change; the simulator is
//! the ground truth for what MBAG itself maintains. [`compare`] lists every
//! [`Divergence`] with its [`Repair`]s:
//!
//! | what differs | repair |
//! |---|---|
//! | a build-area block (lag, an edit the detector did not attribute, a lost AI action) | the simulator takes Minecraft's block (the reference's "block discrepancy" overwrite) |
//! | the bedrock floor (y = 0) in Minecraft | Minecraft is redrawn with `/fill` (the reference does this after every AI break); the simulator keeps bedrock |
//! | the palette column (finite blocks) in Minecraft vs the goal's | Minecraft gets the `/clone` again; the simulator keeps the goal's column, which it refills itself |
//! | an inventory slot 0..=35, finite blocks only | the simulator takes Minecraft's slot (`held` is not compared: §10's 37-vs-36 rows) |
//! | an AI player's position, without teleportation, by more than 1e-4 | the simulator takes Minecraft's position |
//! | a human's feet cell | reported only: humans reach the simulator through MOVE actions, and [`crate::daemon::detect::Detector::sync_positions`] re-aligns the detector instead |
//!
//! Items a player must always have ([`MissingItems`]) and the AI's block slots with
//! infinite blocks ([`ai_inventory_repairs`]) are repaired in Minecraft with
//! `/give` and `swapInventoryItems`.
//!
//! **When** to compare ([`SyncScope`]), after each batch of observations:
//!
//! - nothing while an AI action runs (its commands may be half shown; the
//!   reference's rule);
//! - blocks otherwise, except the cells a queued human place or break targets.
//!   This is the 2023 detector's rule and deliberately wider than the current
//!   reference's (which syncs nothing while a human action is queued): a block a
//!   human removed without the detector seeing it (dug while walking) must reach
//!   the simulator before that human's queued moves into its cell, or the
//!   simulator refuses them (`tutorial_p02`, step 10953);
//! - inventories and positions only when no human action is queued either, since a
//!   queued place or pick-up is already in Minecraft's inventory but not yet in
//!   the simulator's.

use std::time::Duration;

use log::warn;
use malmo_bridge::block::Block;
use malmo_bridge::command::Command;

use super::commands::{self, Instruction, Item};
use super::detect::{Detector, MalmoState, PlayerView};
use crate::sim::action::ActionType;
use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, CellIndex, PlayerId, PlayerPos};
use crate::sim::inventory::Slot;
use crate::sim::state::EnvState;

/// How far an AI position may differ before it is overwritten (the reference's).
pub const POSITION_TOLERANCE: f64 = 1e-4;

/// One way in which the simulator and Minecraft differ.
#[derive(Clone, Debug, PartialEq)]
pub enum Divergence {
    /// A build-area block.
    Block {
        /// The cell.
        cell: Cell,
        /// The simulator's block.
        simulator: BlockId,
        /// Minecraft's block.
        minecraft: BlockId,
    },
    /// The floor (y = 0) is not bedrock in Minecraft.
    Floor {
        /// The cell.
        cell: Cell,
        /// Minecraft's block.
        minecraft: BlockId,
    },
    /// Minecraft's palette column differs from the goal's.
    Palette {
        /// The cell.
        cell: Cell,
        /// The goal's (and simulator's) block.
        goal: BlockId,
        /// Minecraft's block.
        minecraft: BlockId,
    },
    /// An inventory slot (finite blocks).
    Inventory {
        /// Whose inventory.
        player: PlayerId,
        /// The slot, 0..=35.
        slot: usize,
        /// The simulator's slot.
        simulator: Slot,
        /// Minecraft's slot.
        minecraft: Slot,
    },
    /// An AI player's position (no teleportation).
    AiPosition {
        /// Who.
        player: PlayerId,
        /// The simulator's position.
        simulator: PlayerPos,
        /// Minecraft's position.
        minecraft: PlayerPos,
    },
    /// A human's feet cell (reported, not repaired).
    HumanPosition {
        /// Who.
        player: PlayerId,
        /// The simulator's cell.
        simulator: Cell,
        /// Minecraft's cell.
        minecraft: Cell,
    },
}

/// One repair: an edit of the simulator's state, or commands for Minecraft.
#[derive(Clone, Debug, PartialEq)]
pub enum Repair {
    /// Set a simulator block (state 0).
    SetBlock {
        /// The cell.
        cell: Cell,
        /// The block.
        block: BlockId,
    },
    /// Set a simulator inventory slot.
    SetSlot {
        /// Whose inventory.
        player: PlayerId,
        /// The slot.
        slot: usize,
        /// The new content.
        value: Slot,
    },
    /// Set a simulator player position.
    SetPosition {
        /// Who.
        player: PlayerId,
        /// The position.
        position: PlayerPos,
    },
    /// Send commands to Minecraft.
    Minecraft(Vec<Instruction>),
}

/// What [`compare`] found.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Report {
    /// Every divergence, blocks first (C order), then inventories, then positions.
    pub divergences: Vec<Divergence>,
    /// The repairs, in the order to apply them; a Minecraft command shared by
    /// several divergences (one `/fill`, one `/clone`) is listed once.
    pub repairs: Vec<Repair>,
}

impl Report {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.divergences.is_empty()
    }
}

/// What may be synced now (decision 8 of the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SyncScope {
    /// Compare blocks (false while an AI action runs).
    pub blocks: bool,
    /// Cells a queued human place or break targets: their change is on its way as
    /// an action, so they are left alone.
    pub skip_cells: Vec<CellIndex>,
    /// Compare inventories and positions (only when no human action is queued and
    /// no AI action runs, the reference's rule).
    pub inventories_and_positions: bool,
}

impl SyncScope {
    /// The scope the detector's queues allow, given whether an AI action is running.
    /// Logs the reference's warning when an AI action holds the sync back.
    pub fn new(detector: &Detector, ai_action_running: bool) -> Self {
        let queued = detector.any_queued();
        if ai_action_running {
            if !queued {
                warn!("AI actions are still running; environment and Malmo may be out of sync");
            }
            return Self::default();
        }
        let skip_cells = (0..detector.config().num_players())
            .flat_map(|p| detector.queued(PlayerId(p)))
            .filter(|a| matches!(a.kind, ActionType::PlaceBlock | ActionType::BreakBlock))
            .map(|a| a.location)
            .collect();
        Self {
            blocks: true,
            skip_cells,
            inventories_and_positions: !queued,
        }
    }

    /// Everything (no action queued or running).
    pub fn everything() -> Self {
        Self {
            blocks: true,
            skip_cells: Vec::new(),
            inventories_and_positions: true,
        }
    }
}

fn equal_slots(a: Slot, b: Slot) -> bool {
    // An emptied simulator slot keeps a stale id; Minecraft reads it as air.
    (a.count == 0 && b.count == 0) || a == b
}

/// Compares the simulator (`state`, with its `goal`) with Minecraft (`minecraft`)
/// and lists the divergences and repairs of the module's policy.
pub fn compare(
    config: &Config,
    goal: &Blocks,
    state: &EnvState,
    minecraft: &MalmoState,
    scope: &SyncScope,
) -> Report {
    let size = config.world_size;
    let palette_x = (!config.abilities.inf_blocks).then(|| size.width as i32 - 1);
    let mut report = Report::default();
    let (mut floor, mut palette) = (false, false);
    let cells = size
        .cells()
        .filter(|&c| scope.blocks && !scope.skip_cells.contains(&size.index(c)));
    for cell in cells {
        let sim = state.blocks.get(cell);
        let mc = minecraft.blocks.get(cell);
        if cell.y == 0 && mc != BlockId::BEDROCK {
            report.divergences.push(Divergence::Floor {
                cell,
                minecraft: mc,
            });
            floor = true;
            continue;
        }
        if Some(cell.x) == palette_x && mc != goal.get(cell) {
            report.divergences.push(Divergence::Palette {
                cell,
                goal: goal.get(cell),
                minecraft: mc,
            });
            palette = true;
            continue;
        }
        if sim != mc {
            warn!("block discrepancy at {cell}: expected {sim} but received {mc} from Malmo");
            report.divergences.push(Divergence::Block {
                cell,
                simulator: sim,
                minecraft: mc,
            });
            report.repairs.push(Repair::SetBlock { cell, block: mc });
        }
    }
    if floor {
        let mut fill = commands::boundaries(config, 0);
        fill.truncate(1);
        report.repairs.push(Repair::Minecraft(fill));
    }
    if palette {
        report
            .repairs
            .push(Repair::Minecraft(commands::copy_palette(size)));
    }

    if !scope.inventories_and_positions {
        return report;
    }
    if !config.abilities.inf_blocks {
        for (p, (inventory, view)) in state.inventories.iter().zip(&minecraft.players).enumerate() {
            for (slot, (&sim, &mc)) in inventory.slots().iter().zip(&view.inventory).enumerate() {
                if !equal_slots(sim, mc) {
                    report.divergences.push(Divergence::Inventory {
                        player: PlayerId(p),
                        slot,
                        simulator: sim,
                        minecraft: mc,
                    });
                    report.repairs.push(Repair::SetSlot {
                        player: PlayerId(p),
                        slot,
                        value: mc,
                    });
                }
            }
        }
    }

    for (p, (&sim, view)) in state
        .player_positions
        .iter()
        .zip(&minecraft.players)
        .enumerate()
    {
        let mc = view.position;
        let player = PlayerId(p);
        if config.players[p].is_human {
            let (s, m) = (sim.feet_cell(), mc.feet_cell());
            if s != m {
                report.divergences.push(Divergence::HumanPosition {
                    player,
                    simulator: s,
                    minecraft: m,
                });
            }
        } else if !config.abilities.teleportation
            && [(sim.x, mc.x), (sim.y, mc.y), (sim.z, mc.z)]
                .iter()
                .any(|(a, b)| (a - b).abs() > POSITION_TOLERANCE)
        {
            report.divergences.push(Divergence::AiPosition {
                player,
                simulator: sim,
                minecraft: mc,
            });
            report.repairs.push(Repair::SetPosition {
                player,
                position: mc,
            });
        }
    }
    report
}

/// Applies the simulator edits of `repairs` to `state` (Minecraft commands are the
/// caller's to send). Afterwards the caller hands the state back to the
/// environment (`Env::set_state`), which recounts the goal match.
pub fn apply(state: &mut EnvState, repairs: &[Repair]) {
    for repair in repairs {
        match *repair {
            Repair::SetBlock { cell, block } => state.blocks.set_with_state(cell, block, 0),
            Repair::SetSlot {
                player,
                slot,
                value,
            } => state.inventories[player.0].set_slot(slot, value),
            Repair::SetPosition { player, position } => state.player_positions[player.0] = position,
            Repair::Minecraft(_) => {}
        }
    }
}

/// With infinite blocks, the AI keeps block k in slot k (k = 2..=9). Returns the
/// commands that restore that from its observed inventory
/// (`_ensure_inventory_is_correctly_organized`): a swap when the block is
/// elsewhere, a `/give` when it is gone (the caller re-checks after the next
/// observation, as the reference loops).
pub fn ai_inventory_repairs(config: &Config, agent: usize, view: &PlayerView) -> Vec<Instruction> {
    let mut slots: Vec<BlockId> = view.inventory.iter().map(|s| s.block).collect();
    let name = commands::player_name(config, agent);
    let mut out = Vec::new();
    for block in Block::PLACEABLE {
        let k = usize::from(block.mbag_id());
        let id = BlockId(block.mbag_id());
        if slots[k] == id {
            continue;
        }
        warn!(
            "inventory discrepancy at slot {k}: expected {id} but received {} from Malmo",
            slots[k]
        );
        match slots.iter().position(|&b| b == id) {
            Some(from) => {
                out.push(Instruction::Send {
                    agent,
                    command: Command::SwapInventoryItems(k as u8, from as u8),
                });
                slots.swap(k, from);
            }
            None => out.push(Instruction::Send {
                agent,
                command: Command::Chat(format!("/give {name} {} 1", block.name())),
            }),
        }
    }
    out
}

/// The always-have check (§5.3): items whose total count by name in a player's
/// latest observation falls below the required count, re-given once missing for
/// [`MissingItems::GRACE`].
#[derive(Clone, Debug, Default)]
pub struct MissingItems {
    /// Per player, the missing items and since when (time since any fixed origin).
    since: Vec<Vec<(Duration, Item)>>,
}

impl MissingItems {
    /// How long an item may be missing before it is given again (a block being
    /// placed or dragged is briefly missing).
    pub const GRACE: Duration = Duration::from_millis(100);

    /// A tracker for `num_players` players.
    pub fn new(num_players: usize) -> Self {
        Self {
            since: vec![Vec::new(); num_players],
        }
    }

    /// Checks player `p`'s latest observed items at time `now` against `required`
    /// and returns the `/give` commands due.
    pub fn check(
        &mut self,
        config: &Config,
        p: usize,
        view: &PlayerView,
        required: &[Item],
        now: Duration,
    ) -> Vec<Instruction> {
        let mut missing: Vec<Item> = Vec::new();
        for item in required {
            let have: i64 = view
                .items
                .iter()
                .filter(|s| s.item == item.id)
                .map(|s| s.size)
                .sum();
            if have < item.count {
                missing.push(item.clone());
            }
        }
        let old = std::mem::take(&mut self.since[p]);
        let mut due = Vec::new();
        for (t, item) in old {
            if let Some(i) = missing.iter().position(|m| m.id == item.id) {
                missing.remove(i);
                if now.saturating_sub(t) >= Self::GRACE {
                    due.push(item);
                } else {
                    self.since[p].push((t, item));
                }
            }
        }
        self.since[p].extend(missing.into_iter().map(|m| (now, m)));
        let name = commands::player_name(config, p);
        due.iter()
            .map(|item| Instruction::Send {
                agent: p,
                command: commands::give_item(&name, item),
            })
            .collect()
    }
}
