//! A human for emulated Minecraft: an agent (a heuristic or a human model)
//! choosing actions, carried out as a [`ScriptedHuman`]'s in-game edits and moves
//! so that the daemon must detect them from observations like a person's.
//!
//! The driver sees the world through the daemon's simulator after each step
//! ([`StepView`]), which mirrors what Minecraft shows; it acts once per step, on
//! the step's result, the way a person reacts to what just happened. A player can
//! also be driven from a recording's actions instead ([`HumanScript::Replay`]).

use std::collections::VecDeque;

use log::{debug, warn};
use malmo_bridge::block::Block;
use malmo_bridge::emulator::{HumanError, ScriptedHuman, WorldHandle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::agent_thread::AgentThread;
use super::lockstep::StepView;
use crate::sim::action::{Action, ActionType};

/// Where the emulated human's actions come from.
#[derive(Debug)]
pub enum HumanScript {
    /// An agent on its own thread, on the human's observation of each step.
    Agent(AgentThread),
    /// A fixed sequence (a recording's effective actions), one per step.
    Replay(VecDeque<Action>),
}

/// What the driver did, for tests and the closing log line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverReport {
    /// Actions carried out in Minecraft.
    pub acted: u64,
    /// Actions Minecraft refused (a cell taken, a protected cell, ...).
    pub refused: u64,
}

/// Starts driving player `player` (named `name` in the mission). The task ends
/// when the loop stops publishing steps or the script runs out.
pub fn spawn(
    world: WorldHandle,
    name: &str,
    player: usize,
    mut script: HumanScript,
    mut steps: watch::Receiver<StepView>,
) -> JoinHandle<DriverReport> {
    let human = world.human(name);
    let name = name.to_owned();
    tokio::spawn(async move {
        let mut report = DriverReport::default();
        while steps.changed().await.is_ok() {
            let view = steps.borrow_and_update().clone();
            if view.closing {
                break;
            }
            let action = match &mut script {
                HumanScript::Agent(agent) => {
                    let mut obs = view.env.new_observation();
                    if view.env.observe(player, &mut obs).is_err() {
                        continue;
                    }
                    match agent.act(obs).await {
                        Ok(t) => t.action,
                        Err(e) => {
                            warn!("emulated human {name}: its agent failed: {e}");
                            break;
                        }
                    }
                }
                HumanScript::Replay(actions) => match actions.pop_front() {
                    Some(a) => a,
                    None => break,
                },
            };
            if action.kind == ActionType::Noop {
                continue;
            }
            if steps.borrow().closing {
                // Deciding took long enough for the episode to end meanwhile.
                break;
            }
            match carry_out(&human, &world, &name, &view, player, action).await {
                Ok(true) => report.acted += 1,
                Ok(false) => {}
                Err(HumanError::WorldGone) => break,
                Err(e) => {
                    debug!("emulated human {name}: Minecraft refused {action:?}: {e}");
                    report.refused += 1;
                }
            }
        }
        if let HumanScript::Agent(agent) = script {
            // Joining the thread blocks; do it off the runtime's workers.
            let _ = tokio::task::spawn_blocking(move || agent.shutdown()).await;
        }
        report
    })
}

/// Does `action` in Minecraft; `Ok(false)` for actions with no in-game form here
/// (giving blocks).
async fn carry_out(
    human: &ScriptedHuman,
    world: &WorldHandle,
    name: &str,
    view: &StepView,
    player: usize,
    action: Action,
) -> Result<bool, HumanError> {
    let size = view.env.size();
    match action.kind {
        ActionType::PlaceBlock => {
            let cell = size.cell(action.location);
            let wanted = Block::from_mbag_id(action.block.0).map(|b| b.name());
            let snapshot = world
                .player(name)
                .await
                .map_err(|_| HumanError::WorldGone)?
                .ok_or_else(|| HumanError::NoSuchPlayer(name.to_owned()))?;
            let Some(slot) = snapshot.inventory[..9]
                .iter()
                .position(|s| !s.is_empty() && Some(s.item_name()) == wanted)
            else {
                debug!("emulated human {name}: no {wanted:?} in the hotbar");
                return Ok(false);
            };
            human.select_hotbar(slot).await?;
            human.place_block([cell.x, cell.y, cell.z]).await?;
        }
        ActionType::BreakBlock => {
            let cell = size.cell(action.location);
            human.break_block([cell.x, cell.y, cell.z]).await?;
        }
        ActionType::Noop | ActionType::GiveBlock => return Ok(false),
        _ => {
            let Some(delta) = move_delta(action.kind) else {
                return Ok(false);
            };
            let pos = view.env.state().player_positions[player];
            human
                .move_to([pos.x + delta[0], pos.y + delta[1], pos.z + delta[2]])
                .await?;
        }
    }
    Ok(true)
}

/// The one-cell step of a move action.
fn move_delta(kind: ActionType) -> Option<[f64; 3]> {
    Some(match kind {
        ActionType::MovePosX => [1.0, 0.0, 0.0],
        ActionType::MoveNegX => [-1.0, 0.0, 0.0],
        ActionType::MovePosY => [0.0, 1.0, 0.0],
        ActionType::MoveNegY => [0.0, -1.0, 0.0],
        ActionType::MovePosZ => [0.0, 0.0, 1.0],
        ActionType::MoveNegZ => [0.0, 0.0, -1.0],
        _ => return None,
    })
}
