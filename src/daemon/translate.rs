//! AI actions into Malmo commands (MBAG_INTEGRATION.md §5): a pure function of
//! the action the simulator executed, Minecraft's view and a random source,
//! returning the commands and the changes Minecraft will show for them.
//!
//! Keeping it pure lets it be tested without sockets and keeps the lockstep
//! loop about time alone: the loop asks, logs why an action is not sent, queues
//! the commands and registers the expected changes with the detector.

use rand::Rng;

use super::aim;
use super::commands::{self, Instruction, PlaceBreak, PlaceSource};
use super::detect::{AiEffect, DetectorConfig, MalmoState, StateDiff, expected_diffs};
use super::divergence;
use crate::sim::action::{Action, ActionType};
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::{Cell, PlayerId, PlayerPos};
use crate::sim::env::PlaceBreakAttempt;
use crate::sim::viewpoint::Interaction;

/// One AI action as the simulator executed it.
#[derive(Clone, Copy, Debug)]
pub struct Executed<'a> {
    /// The player.
    pub player: usize,
    /// The action that took effect (NOOP when the attempt did nothing).
    pub action: Action,
    /// For a place or break: the simulator's viewpoint search for it.
    pub attempt: Option<&'a PlaceBreakAttempt>,
    /// For a give: who received how many.
    pub given: Option<(usize, i32)>,
    /// The player's position after the step.
    pub position: PlayerPos,
}

/// Minecraft as the loop knows it when the action is sent.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// The latest observations.
    pub now: &'a MalmoState,
    /// `now` with the effects of the commands still queued applied: the world
    /// the click will meet.
    pub predicted: &'a MalmoState,
    /// No AI action is running, so `now` is no action's intermediate state (the
    /// AI's block slots are checked only then, as the reference checks when the
    /// action starts).
    pub settled: bool,
}

/// What to send for an action and what it will change.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    /// The commands, in order.
    pub instructions: Vec<Instruction>,
    /// The action's effect.
    pub effect: AiEffect,
    /// The changes Minecraft will show, for the detector.
    pub expected: Vec<StateDiff>,
    /// The AI's block slots were out of order and the commands reorder them
    /// first (infinite blocks).
    pub reordered_slots: bool,
}

/// Why an executed action sends no commands.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NotSent {
    /// NOOPs send nothing.
    #[error("a NOOP sends nothing")]
    Noop,
    /// The trace has no viewpoint for the place or break.
    #[error("no viewpoint recorded for its {0:?}")]
    NoViewpoint(ActionType),
    /// Minecraft already shows the outcome (a person's change the simulator
    /// had not seen when it decided); clicking would hit what lies behind.
    #[error("Minecraft already shows {there} at {cell:?}; not clicking its {kind:?}")]
    Overtaken {
        /// Place or break.
        kind: Interaction,
        /// The target.
        cell: Cell,
        /// What Minecraft shows there.
        there: BlockId,
    },
    /// No aim from the simulator's viewpoint reaches the cell in Minecraft:
    /// a click would change another cell, leaving two differences instead of
    /// one (which the divergence checks repair).
    #[error("no aim from {eye:?} reaches {cell:?} in Minecraft; not clicking its {kind:?}")]
    Unaimable {
        /// Place or break.
        kind: Interaction,
        /// The target.
        cell: Cell,
        /// The simulator's eye.
        eye: [f64; 3],
    },
    /// Finite blocks: Minecraft shows none of the block in the inventory.
    #[error("Minecraft shows no {0} in its inventory to place")]
    NoBlock(BlockId),
    /// A give that changed no inventory.
    #[error("a give that changed no inventory")]
    GiveChangedNothing,
}

/// The commands and expected changes of `executed` (see the module docs).
pub fn translate(
    config: &Config,
    detector: &DetectorConfig,
    executed: &Executed<'_>,
    view: View<'_>,
    rng: &mut impl Rng,
) -> Result<Translation, NotSent> {
    let p = executed.player;
    let done = executed.action;
    let mut instructions = Vec::new();
    let mut reordered_slots = false;
    let effect = match done.kind {
        ActionType::Noop => return Err(NotSent::Noop),
        ActionType::PlaceBlock | ActionType::BreakBlock => {
            let Some((attempt, candidate)) = executed
                .attempt
                .and_then(|a| a.chosen.as_ref().map(|(_, _, c)| (a, c)))
            else {
                return Err(NotSent::NoViewpoint(done.kind));
            };
            let cell = config.world_size.cell(done.location);
            let there = view.predicted.blocks.get(cell);
            let overtaken = match attempt.kind {
                Interaction::Break => there == BlockId::AIR,
                Interaction::Place => there != BlockId::AIR,
            };
            if overtaken {
                return Err(NotSent::Overtaken {
                    kind: attempt.kind,
                    cell,
                    there,
                });
            }
            // Cast through the world as Minecraft will have it when the click
            // comes.
            let aimed = aim::aim(
                &view.predicted.blocks,
                candidate.viewpoint,
                candidate.click,
                attempt.kind,
                cell,
                aim::CREATIVE_REACH,
            );
            if !aimed.checked {
                return Err(NotSent::Unaimable {
                    kind: attempt.kind,
                    cell,
                    eye: candidate.viewpoint,
                });
            }
            let place = PlaceBreak {
                kind: done.kind,
                block: done.block,
                yaw: aimed.yaw,
                pitch: aimed.pitch,
                teleport_to: config.abilities.teleportation.then(|| candidate.feet()),
            };
            let source = if config.abilities.inf_blocks {
                if view.settled {
                    let repairs =
                        divergence::ai_inventory_repairs(config, p, &view.now.players[p]);
                    reordered_slots = !repairs.is_empty();
                    instructions.extend(repairs);
                }
                PlaceSource::Infinite
            } else {
                let slots: Vec<(BlockId, i32)> = view.now.players[p]
                    .inventory
                    .iter()
                    .map(|s| (s.block, s.count))
                    .collect();
                let hotbar = rng.random_range(0..9u8);
                match commands::place_source(&slots, done.block, hotbar) {
                    Some(source) => source,
                    None if done.kind == ActionType::BreakBlock => PlaceSource::Hotbar(0),
                    None => return Err(NotSent::NoBlock(done.block)),
                }
            };
            instructions.extend(commands::place_break(config, p, &place, source));
            match attempt.kind {
                Interaction::Place => AiEffect::Place {
                    cell,
                    block: done.block,
                },
                Interaction::Break => AiEffect::Break { cell },
            }
        }
        ActionType::GiveBlock => {
            let Some((recipient, count)) = executed.given else {
                return Err(NotSent::GiveChangedNothing);
            };
            instructions.extend(commands::give(config, p, recipient, done.block, count));
            AiEffect::Give {
                recipient: PlayerId(recipient),
                block: done.block,
                count,
            }
        }
        _ => {
            instructions.extend(commands::move_to(p, executed.position));
            AiEffect::Move {
                to: executed.position,
            }
        }
    };
    let expected = expected_diffs(detector, view.predicted, PlayerId(p), effect);
    Ok(Translation {
        instructions,
        effect,
        expected,
        reordered_slots,
    })
}
