//! AI actions into Malmo commands (MBAG_INTEGRATION.md §5): a pure function of
//! the action the simulator executed, Minecraft's view and a random source,
//! returning the commands and the changes Minecraft will show for them.
//!
//! Keeping it pure lets it be tested without sockets and keeps the lockstep
//! loop about time alone: the loop asks, logs why an action is not sent, queues
//! the commands and registers the expected changes with the detector.

use rand::Rng;

use super::detect::{AiEffect, DetectorConfig, MalmoState, StateDiff, expected_diffs};
use super::seam::aim;
use super::seam::commands::{self, Instruction, PlaceBreak, PlaceSource};
use super::seam::upkeep;
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
                    let repairs = upkeep::ai_inventory_repairs(config, p, &view.now.players[p]);
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

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use serde_json::json;

    use super::*;
    use crate::sim::block::Blocks;
    use crate::sim::env::Env;

    /// One flying AI in a 5x5x5 world, at its start, with tracing on.
    fn env(teleportation: bool, inf_blocks: bool) -> Env {
        let config = Config::from_json(&json!({
            "num_players": 1,
            "world_size": [5, 5, 5],
            "players": [{"is_human": false}],
            "abilities": {"teleportation": teleportation, "flying": true, "inf_blocks": inf_blocks},
        }))
        .unwrap();
        let mut env = Env::new(config);
        env.set_tracing(true);
        let goal = Blocks::initial_world(env.size());
        env.reset_with_goal(goal, &mut StdRng::seed_from_u64(1));
        env
    }

    fn lines(instructions: &[Instruction]) -> Vec<String> {
        instructions
            .iter()
            .filter_map(|i| match i {
                Instruction::Send { command, .. } => Some(command.to_string()),
                Instruction::Sleep(_) => None,
            })
            .collect()
    }

    /// Steps `action` and translates it against Minecraft showing `minecraft`.
    fn run(env: &mut Env, action: Action, minecraft: &MalmoState) -> Result<Translation, NotSent> {
        let outcome = env.step(&[action]).unwrap().clone();
        let detector = DetectorConfig::from_config(env.config());
        let executed = Executed {
            player: 0,
            action: outcome.infos[0].action,
            attempt: env
                .place_break_attempts()
                .iter()
                .find(|a| a.chosen.is_some()),
            given: None,
            position: env.state().player_positions[0],
        };
        let view = View {
            now: minecraft,
            predicted: minecraft,
            settled: true,
        };
        translate(
            env.config(),
            &detector,
            &executed,
            view,
            &mut StdRng::seed_from_u64(0),
        )
    }

    fn minecraft_as(env: &Env) -> MalmoState {
        MalmoState::new(
            &DetectorConfig::from_config(env.config()),
            env.state().blocks.clone(),
            &env.state().player_positions,
        )
    }

    #[test]
    fn a_place_is_aimed_clicked_and_expected() {
        let mut env = env(true, true);
        let minecraft = minecraft_as(&env);
        let cell = Cell::new(2, 2, 2);
        let place = Action::new(
            ActionType::PlaceBlock,
            env.size().index(cell),
            BlockId::PLANKS,
        );
        let sent = run(&mut env, place, &minecraft).expect("sent");
        assert_eq!(
            sent.effect,
            AiEffect::Place {
                cell,
                block: BlockId::PLANKS
            }
        );
        assert_eq!(
            sent.expected,
            [StateDiff::Block {
                cell,
                before: BlockId::AIR,
                after: BlockId::PLANKS
            }]
        );
        let lines = lines(&sent.instructions);
        assert!(lines[0].starts_with("tp "), "{lines:?}");
        assert!(lines[1].starts_with("setYaw ") && lines[2].starts_with("setPitch "));
        assert!(lines.iter().any(|l| l == "use 1"), "{lines:?}");
        assert!(!sent.reordered_slots);
    }

    #[test]
    fn a_place_minecraft_already_shows_filled_is_not_clicked() {
        let mut env = env(true, true);
        let mut minecraft = minecraft_as(&env);
        let cell = Cell::new(2, 2, 2);
        // A person placed there; the simulator has not seen it yet.
        minecraft.blocks.set(cell, BlockId::DIRT);
        let place = Action::new(
            ActionType::PlaceBlock,
            env.size().index(cell),
            BlockId::PLANKS,
        );
        assert_eq!(
            run(&mut env, place, &minecraft),
            Err(NotSent::Overtaken {
                kind: Interaction::Place,
                cell,
                there: BlockId::DIRT
            })
        );
    }

    #[test]
    fn a_break_expects_the_block_minecraft_shows() {
        let mut env = env(true, true);
        let cell = Cell::new(2, 1, 2);
        let mut minecraft = minecraft_as(&env);
        // Minecraft shows a different block there than the simulator: the
        // expectation follows Minecraft.
        minecraft.blocks.set(cell, BlockId::STONE);
        let brk = Action::new(ActionType::BreakBlock, env.size().index(cell), BlockId::AIR);
        let sent = run(&mut env, brk, &minecraft).expect("sent");
        assert_eq!(
            sent.expected,
            [StateDiff::Block {
                cell,
                before: BlockId::STONE,
                after: BlockId::AIR
            }]
        );
        assert!(lines(&sent.instructions).iter().any(|l| l == "attack 1"));
    }

    #[test]
    fn a_move_teleports_to_the_new_position_and_a_noop_sends_nothing() {
        let mut env = env(false, true);
        let minecraft = minecraft_as(&env);
        let before = env.state().player_positions[0];
        let step = Action::new(ActionType::MovePosX, Default::default(), BlockId::AIR);
        let sent = run(&mut env, step, &minecraft).expect("sent");
        let after = env.state().player_positions[0];
        assert_ne!(before, after);
        assert_eq!(sent.effect, AiEffect::Move { to: after });
        assert!(lines(&sent.instructions)[0].starts_with("tp "));
        assert_eq!(run(&mut env, Action::NOOP, &minecraft), Err(NotSent::Noop));
    }

    #[test]
    fn finite_blocks_place_from_the_slot_minecraft_shows() {
        let mut env = env(true, false);
        let mut minecraft = minecraft_as(&env);
        let cell = Cell::new(2, 2, 2);
        let place = Action::new(
            ActionType::PlaceBlock,
            env.size().index(cell),
            BlockId::PLANKS,
        );
        // The simulator's player has none, so the step does nothing; Minecraft
        // has none either: nothing is sent.
        assert_eq!(run(&mut env, place, &minecraft), Err(NotSent::Noop));
        // With planks in the simulator but not in Minecraft, the place is not
        // clicked (the divergence checks reconcile the two).
        let mut state = env.state().clone();
        state.inventories[0].try_give(BlockId::PLANKS, 3);
        env.set_state(state);
        assert_eq!(
            run(&mut env, place, &minecraft),
            Err(NotSent::NoBlock(BlockId::PLANKS))
        );
        // In hotbar slot 4 in Minecraft: pressed there.
        minecraft.players[0].inventory[4] = crate::sim::inventory::Slot {
            block: BlockId::PLANKS,
            count: 3,
        };
        let next = Cell::new(1, 2, 2);
        let place = Action::new(
            ActionType::PlaceBlock,
            env.size().index(next),
            BlockId::PLANKS,
        );
        let sent = run(&mut env, place, &minecraft).expect("sent");
        assert!(lines(&sent.instructions).iter().any(|l| l == "hotbar.5 1"));
    }
}
