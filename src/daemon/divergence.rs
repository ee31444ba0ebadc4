//! Comparing the simulator with Minecraft, and repairing what differs
//! (MBAG_INTEGRATION.md §6 and §8).
//!
//! # Policy
//!
//! Minecraft is the ground truth for everything humans can change; the simulator is
//! the ground truth for what MBAG itself maintains. [`compare`] lists every
//! [`Divergence`], and one [`Repair`] for them all:
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
//! Items a player must always have and the AI's block slots with infinite
//! blocks ([`upkeep`](super::seam::upkeep)) are repaired in Minecraft with
//! `/give` and `swapInventoryItems`.
//!
//! **When to compare** ([`SyncScope`]), after each batch of observations:
//!
//! - never what an AI action in flight will still change: the cells, and the
//!   players' positions and inventories, of the expected diffs not yet seen
//!   ([`Detector::in_flight`]). The reference compares nothing while an AI
//!   action runs; with an assistant that acts every step that is almost never,
//!   so a wrong belief would persist and later actions be planned on it. The
//!   rest of the world is compared as usual;
//! - blocks, except the cells a queued human place or break targets.
//!   This is the 2023 detector's rule and deliberately wider than the current
//!   reference's (which syncs nothing while a human action is queued): a block a
//!   human removed without the detector seeing it (dug while walking) must reach
//!   the simulator before that human's queued moves into its cell, or the
//!   simulator refuses them (`tutorial_p02`, step 10953);
//! - inventories and positions only when no human action is queued either, since a
//!   queued place or pick-up is already in Minecraft's inventory but not yet in
//!   the simulator's.

use log::warn;

use super::detect::{Detector, MalmoState};
use super::seam::commands::{self, Instruction};
use crate::recording::SyncEdits;
use crate::sim::action::ActionType;
use crate::sim::block::{BlockId, Blocks};
use crate::sim::config::Config;
use crate::sim::coords::{Cell, CellIndex, PlayerId, PlayerPos};
use crate::sim::inventory::Slot;
use crate::sim::state::EnvState;

/// How far an AI position may differ before it is overwritten (the reference's).
pub use super::detect::POSITION_TOLERANCE;

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

/// What brings the two back together: edits of the simulator's state, in the
/// recording's own form (so the step records exactly what was applied, and
/// [`apply_sync`](crate::recording::apply_sync) is the one function that applies
/// them, live and in every replay), and commands for Minecraft.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Repair {
    /// Simulator edits: Minecraft's blocks (state 0), slots and AI positions.
    pub simulator: SyncEdits,
    /// Commands that restore what MBAG maintains in Minecraft (the floor and
    /// the palette); a command shared by several divergences is listed once.
    pub minecraft: Vec<Instruction>,
}

impl Repair {
    fn set_block(&mut self, cell: Cell, block: BlockId) {
        self.simulator
            .blocks
            .push([cell.x, cell.y, cell.z, i32::from(block.0)]);
        self.simulator
            .block_states
            .push([cell.x, cell.y, cell.z, 0]);
    }

    fn set_slot(&mut self, player: PlayerId, slot: usize, value: Slot) {
        self.simulator.slots.push([
            player.0 as i32,
            slot as i32,
            i32::from(value.block.0),
            value.count,
        ]);
    }

    fn set_position(&mut self, player: PlayerId, position: PlayerPos) {
        self.simulator
            .pos
            .push([player.0 as f64, position.x, position.y, position.z]);
    }
}

/// What [`compare`] found.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Report {
    /// Every divergence, blocks first (C order), then inventories, then positions.
    pub divergences: Vec<Divergence>,
    /// What repairs them.
    pub repair: Repair,
}

impl Report {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.divergences.is_empty()
    }
}

/// What may be synced now (see "When to compare" in the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SyncScope {
    /// Compare blocks.
    pub blocks: bool,
    /// Cells left alone: a queued human place or break targets them (their change
    /// is on its way as an action), or an AI action in flight will change them.
    pub skip_cells: Vec<CellIndex>,
    /// Compare inventories and positions (only when no human action is queued,
    /// the reference's rule).
    pub inventories_and_positions: bool,
    /// Players whose inventory and position are left alone: an AI action in
    /// flight will still change them.
    pub skip_players: Vec<PlayerId>,
}

impl SyncScope {
    /// The scope the detector's queues and the AI actions in flight allow.
    pub fn new(detector: &Detector) -> Self {
        let queued = detector.any_queued();
        let (mut skip_cells, skip_players) = detector.in_flight();
        skip_cells.extend(
            (0..detector.config().num_players())
                .flat_map(|p| detector.queued(PlayerId(p)))
                .filter(|a| matches!(a.kind, ActionType::PlaceBlock | ActionType::BreakBlock))
                .map(|a| a.location),
        );
        Self {
            blocks: true,
            skip_cells,
            inventories_and_positions: !queued,
            skip_players,
        }
    }

    /// Everything (no action queued or running).
    pub fn everything() -> Self {
        Self {
            blocks: true,
            skip_cells: Vec::new(),
            inventories_and_positions: true,
            skip_players: Vec::new(),
        }
    }

    /// Whether this scope leaves out something it would compare with no AI
    /// action in flight.
    pub fn narrowed(&self) -> bool {
        !self.skip_players.is_empty() || !self.skip_cells.is_empty()
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
            report.repair.set_block(cell, mc);
        }
    }
    if floor {
        let mut fill = commands::boundaries(config, 0);
        fill.truncate(1);
        report.repair.minecraft.extend(fill);
    }
    if palette {
        report.repair.minecraft.extend(commands::copy_palette(size));
    }

    if !scope.inventories_and_positions {
        return report;
    }
    let compared = |p: usize| !scope.skip_players.contains(&PlayerId(p));
    if !config.abilities.inf_blocks {
        for (p, (inventory, view)) in state.inventories.iter().zip(&minecraft.players).enumerate() {
            if !compared(p) {
                continue;
            }
            for (slot, (&sim, &mc)) in inventory.slots().iter().zip(&view.inventory).enumerate() {
                if !equal_slots(sim, mc) {
                    report.divergences.push(Divergence::Inventory {
                        player: PlayerId(p),
                        slot,
                        simulator: sim,
                        minecraft: mc,
                    });
                    report.repair.set_slot(PlayerId(p), slot, mc);
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
        if !compared(p) {
            continue;
        }
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
            report.repair.set_position(player, mc);
        }
    }
    report
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::daemon::detect::DetectorConfig;
    use crate::recording::apply_sync;
    use crate::sim::inventory::Inventory;

    /// A 5x5x5 world, human player 0 and AI player 1.
    pub(crate) fn config(inf_blocks: bool) -> Config {
        Config::from_json(&json!({
            "num_players": 2,
            "world_size": [5, 5, 5],
            "players": [{"is_human": true, "player_name": "human"}, {"is_human": false}],
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": inf_blocks},
        }))
        .unwrap()
    }

    fn world(cfg: &Config) -> (Blocks, EnvState, MalmoState) {
        let size = cfg.world_size;
        let mut goal = Blocks::initial_world(size);
        for z in 0..5 {
            goal.set(Cell::new(4, 2, z), BlockId(2 + z as u8));
        }
        let mut blocks = Blocks::initial_world(size);
        if !cfg.abilities.inf_blocks {
            for z in 0..5 {
                blocks.set(Cell::new(4, 2, z), BlockId(2 + z as u8));
            }
        }
        let positions = vec![PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(1.5, 2.0, 0.5)];
        let state = EnvState {
            blocks: blocks.clone(),
            last_interacted: vec![-1; size.num_cells()],
            player_positions: positions.clone(),
            inventories: vec![Inventory::default(); 2],
            timestep: 0,
            timesteps_with_no_progress: 0,
            maximum_goal_percentages: vec![0.0; 2],
        };
        let malmo = MalmoState::new(&DetectorConfig::from_config(cfg), blocks, &positions);
        (goal, state, malmo)
    }

    fn lines(repair: &Repair) -> Vec<String> {
        repair
            .minecraft
            .iter()
            .filter_map(|i| match i {
                Instruction::Send { command, .. } => Some(command.to_string()),
                Instruction::Sleep(_) => None,
            })
            .collect()
    }

    #[test]
    fn equal_states_do_not_diverge() {
        for inf in [true, false] {
            let cfg = config(inf);
            let (goal, state, malmo) = world(&cfg);
            assert!(compare(&cfg, &goal, &state, &malmo, &SyncScope::everything()).is_empty());
        }
    }

    #[test]
    fn minecraft_blocks_overwrite_the_simulator() {
        let cfg = config(true);
        let (goal, mut state, mut malmo) = world(&cfg);
        let cell = Cell::new(2, 2, 2);
        malmo.blocks.set(cell, BlockId(9));
        let report = compare(&cfg, &goal, &state, &malmo, &SyncScope::everything());
        assert_eq!(
            report.divergences,
            vec![Divergence::Block {
                cell,
                simulator: BlockId::AIR,
                minecraft: BlockId(9)
            }]
        );
        apply_sync(&mut state, &report.repair.simulator).expect("valid edits");
        assert_eq!(state.blocks.get(cell), BlockId(9));
        assert!(compare(&cfg, &goal, &state, &malmo, &SyncScope::everything()).is_empty());
    }

    #[test]
    fn floor_and_palette_are_repaired_in_minecraft() {
        let cfg = config(false);
        let (goal, state, mut malmo) = world(&cfg);
        malmo.blocks.set(Cell::new(1, 0, 1), BlockId::AIR);
        malmo.blocks.set(Cell::new(3, 0, 1), BlockId(2));
        malmo.blocks.set(Cell::new(4, 2, 3), BlockId::AIR);
        let report = compare(&cfg, &goal, &state, &malmo, &SyncScope::everything());
        assert_eq!(report.divergences.len(), 3);
        assert!(matches!(
            report.divergences[2],
            Divergence::Palette {
                goal: BlockId(5),
                ..
            }
        ));
        assert_eq!(
            lines(&report.repair),
            [
                "chat /fill 0 0 0 4 0 4 bedrock",
                "chat /clone 10 0 0 10 4 4 4 0 0"
            ]
        );
        // Nothing changes in the simulator.
        let mut after = state.clone();
        apply_sync(&mut after, &report.repair.simulator).expect("valid edits");
        assert_eq!(after, state);
    }

    #[test]
    fn finite_inventories_follow_minecraft_and_held_is_ignored() {
        let cfg = config(false);
        let (goal, mut state, mut malmo) = world(&cfg);
        malmo.players[0].inventory[3] = Slot {
            block: BlockId(6),
            count: 2,
        };
        malmo.players[0].held = Slot {
            block: BlockId(7),
            count: 1,
        };
        // A stale id in an empty simulator slot is no divergence.
        let mut stale = Inventory::default();
        stale.set_slot(
            5,
            Slot {
                block: BlockId(4),
                count: 0,
            },
        );
        state.inventories[1] = stale;
        let report = compare(&cfg, &goal, &state, &malmo, &SyncScope::everything());
        assert_eq!(report.divergences.len(), 1);
        apply_sync(&mut state, &report.repair.simulator).expect("valid edits");
        assert_eq!(state.inventories[0].count(BlockId(6)), 2);
        // With infinite blocks, inventories are not compared.
        let cfg = config(true);
        assert!(
            compare(
                &cfg,
                &goal,
                &world(&cfg).1,
                &malmo,
                &SyncScope::everything()
            )
            .divergences
            .iter()
            .all(|d| !matches!(d, Divergence::Inventory { .. }))
        );
    }

    #[test]
    fn ai_positions_are_overwritten_human_ones_only_reported() {
        let cfg = config(true);
        let (goal, mut state, mut malmo) = world(&cfg);
        malmo.players[1].position = PlayerPos::new(1.5, 2.00005, 0.5);
        assert!(compare(&cfg, &goal, &state, &malmo, &SyncScope::everything()).is_empty());
        malmo.players[1].position = PlayerPos::new(1.5, 3.0, 0.5);
        malmo.players[0].position = PlayerPos::new(2.7, 2.0, 0.5);
        let report = compare(&cfg, &goal, &state, &malmo, &SyncScope::everything());
        assert_eq!(
            report.divergences,
            vec![
                Divergence::HumanPosition {
                    player: PlayerId(0),
                    simulator: Cell::new(0, 2, 0),
                    minecraft: Cell::new(2, 2, 0),
                },
                Divergence::AiPosition {
                    player: PlayerId(1),
                    simulator: PlayerPos::new(1.5, 2.0, 0.5),
                    minecraft: PlayerPos::new(1.5, 3.0, 0.5),
                },
            ]
        );
        apply_sync(&mut state, &report.repair.simulator).expect("valid edits");
        assert_eq!(state.player_positions[0], PlayerPos::new(0.5, 2.0, 0.5));
        assert_eq!(state.player_positions[1], PlayerPos::new(1.5, 3.0, 0.5));
    }

    #[test]
    fn the_scope_limits_the_comparison() {
        let cfg = config(false);
        let (goal, state, mut malmo) = world(&cfg);
        let (a, b) = (Cell::new(1, 2, 1), Cell::new(2, 2, 2));
        malmo.blocks.set(a, BlockId(3));
        malmo.blocks.set(b, BlockId(3));
        malmo.players[0].inventory[0] = Slot {
            block: BlockId(3),
            count: 1,
        };
        let scope = SyncScope {
            blocks: true,
            skip_cells: vec![cfg.world_size.index(a)],
            inventories_and_positions: false,
            skip_players: Vec::new(),
        };
        let report = compare(&cfg, &goal, &state, &malmo, &scope);
        assert_eq!(report.repair.simulator.blocks, vec![[b.x, b.y, b.z, 3]]);
        assert!(compare(&cfg, &goal, &state, &malmo, &SyncScope::default()).is_empty());
    }

    /// While an AI action is in flight, its cell and player are left alone
    /// and everything else is still compared.
    #[test]
    fn syncs_leave_out_only_what_ai_actions_in_flight_change() {
        use crate::daemon::detect::{AiEffect, Detector, DetectorConfig, expected_diffs};
        let cfg = config(true);
        let (goal, state, _) = world(&cfg);
        let dcfg = DetectorConfig::from_config(&cfg);
        let mut detector =
            Detector::new(dcfg.clone(), state.blocks.clone(), &state.player_positions);
        let placing = Cell::new(1, 2, 1);
        let effect = AiEffect::Place {
            cell: placing,
            block: BlockId(3),
        };
        detector.expect(expected_diffs(&dcfg, detector.state(), PlayerId(1), effect));
        let scope = SyncScope::new(&detector);
        assert!(scope.narrowed());
        assert_eq!(scope.skip_cells, vec![cfg.world_size.index(placing)]);
        // The simulator has the AI's place already; Minecraft does not yet, and
        // shows a block elsewhere that nobody reported.
        let mut sim = state.clone();
        sim.blocks.set(placing, BlockId(3));
        let mut malmo = detector.state().clone();
        let stray = Cell::new(2, 2, 2);
        malmo.blocks.set(stray, BlockId(4));
        let report = compare(&cfg, &goal, &sim, &malmo, &scope);
        assert_eq!(
            report.repair.simulator.blocks,
            vec![[stray.x, stray.y, stray.z, 4]]
        );
    }
}
