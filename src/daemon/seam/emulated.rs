//! A human for emulated Minecraft: an agent (a heuristic or a human model)
//! choosing actions, carried out as a [`ScriptedHuman`]'s in-game edits and moves
//! so that the daemon must detect them from observations like a person's.
//!
//! The driver decides on the daemon's simulator after each step ([`StepView`]),
//! which mirrors what Minecraft shows; it acts once per step, on the step's
//! result, the way a person reacts to what just happened. It carries the choice
//! out in Minecraft's world as a person sees it: moves go from the player's
//! position there, a place into a cell Minecraft shows taken is given up, and
//! places and breaks take the ticks of a person's aim and dig
//! ([`ScriptedHuman::place_block`], [`ScriptedHuman::break_block`]). A player can
//! also be driven from a recording's actions instead ([`HumanScript::Replay`]).
//!
//! An agent-driven person also chats: before each decision it hears what the
//! others said (the step view's log), and what it says after deciding it types
//! into Minecraft's chat ([`ScriptedHuman::chat`]) before carrying the action
//! out, so that its words travel through Minecraft like a person's and the
//! daemon reads them back from the chat observations.

use std::collections::VecDeque;

use log::{debug, warn};
use malmo_bridge::block::Block;
use malmo_bridge::emulator::{Button, HumanError, ScriptedHuman, WorldHandle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::chat::conversation::Heard;
use crate::daemon::agent_thread::AgentThread;
use crate::daemon::lockstep::StepView;
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
    /// Decisions asked of the agent (or taken from the script).
    pub decided: u64,
    /// Of those, NOOPs.
    pub idle: u64,
    /// Actions carried out in Minecraft.
    pub acted: u64,
    /// Actions Minecraft refused (a cell taken, a protected cell, ...).
    pub refused: u64,
    /// Blocks placed in Minecraft (counted in `acted` too).
    pub placed: u64,
    /// Blocks broken in Minecraft (counted in `acted` too).
    pub broke: u64,
    /// Chat messages typed into Minecraft.
    pub said: u64,
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
        // The number of the next message of the chat log to hear.
        let mut next_message = 0;
        while steps.changed().await.is_ok() {
            let view = steps.borrow_and_update().clone();
            if view.closing {
                break;
            }
            if view.queued.get(player).is_some_and(|&q| q > 0) {
                // What they did last has not reached the simulator yet: a
                // person reacts to a result that includes their own action,
                // and an episode's last step must not leave actions behind.
                continue;
            }
            let (action, said) = match &mut script {
                HumanScript::Agent(agent) => {
                    let mut obs = view.env.new_observation();
                    if view.env.observe(player, &mut obs).is_err() {
                        continue;
                    }
                    let (messages, next) = view.chat.since(next_message);
                    // Its own words come back through Minecraft too.
                    let heard: Vec<Heard> = messages
                        .iter()
                        .filter(|h| h.speaker != player)
                        .cloned()
                        .collect();
                    next_message = next;
                    match agent.act(obs, heard).await {
                        Ok(t) => (t.action, t.said),
                        Err(e) => {
                            warn!("emulated human {name}: its agent failed: {e}");
                            break;
                        }
                    }
                }
                HumanScript::Replay(actions) => match actions.pop_front() {
                    Some(a) => (a, None),
                    None => break,
                },
            };
            if steps.borrow().closing {
                // Deciding took long enough for the episode to end meanwhile.
                break;
            }
            // Typing is instant next to aiming and digging: the words reach
            // Minecraft before the action does.
            if let Some(words) = said.as_deref().and_then(super::chat::clean) {
                match human.chat(&words).await {
                    Ok(()) => report.said += 1,
                    Err(HumanError::WorldGone) => break,
                    Err(e) => debug!("emulated human {name}: could not say {words:?}: {e}"),
                }
            }
            report.decided += 1;
            if action.kind == ActionType::Noop {
                report.idle += 1;
                continue;
            }
            match carry_out(&human, &world, &name, &view, &steps, action).await {
                Ok(true) => {
                    report.acted += 1;
                    match action.kind {
                        ActionType::PlaceBlock => report.placed += 1,
                        ActionType::BreakBlock => report.broke += 1,
                        _ => {}
                    }
                }
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
    steps: &watch::Receiver<StepView>,
    action: Action,
) -> Result<bool, HumanError> {
    // Aiming takes ticks; a click after the episode started closing would
    // change Minecraft after its final sync.
    let closing = || steps.borrow().closing;
    let size = view.env.size();
    let snapshot = async {
        world
            .player(name)
            .await
            .map_err(|_| HumanError::WorldGone)?
            .ok_or_else(|| HumanError::NoSuchPlayer(name.to_owned()))
    };
    match action.kind {
        ActionType::PlaceBlock => {
            let cell = size.cell(action.location);
            let at = [cell.x, cell.y, cell.z];
            // A person sees Minecraft, which can differ from the simulator's
            // view the agent decided on (a change not yet detected).
            if world.block(at).await.map_err(|_| HumanError::WorldGone)? != "air" {
                return Err(HumanError::CellTaken(at));
            }
            let wanted = Block::from_mbag_id(action.block.0).map(|b| b.name());
            let snapshot = snapshot.await?;
            let Some(slot) = snapshot.inventory[..9]
                .iter()
                .position(|s| !s.is_empty() && Some(s.item_name()) == wanted)
            else {
                debug!("emulated human {name}: no {wanted:?} in the hotbar");
                return Ok(false);
            };
            human.select_hotbar(slot).await?;
            human.aim_at(at, Button::Use).await?;
            if closing() {
                return Ok(false);
            }
            human.place_aimed(at).await?;
        }
        ActionType::BreakBlock => {
            let cell = size.cell(action.location);
            let at = [cell.x, cell.y, cell.z];
            if world.block(at).await.map_err(|_| HumanError::WorldGone)? == "air" {
                return Err(HumanError::Unbreakable {
                    cell: at,
                    block: "air",
                });
            }
            human.aim_at(at, Button::Attack).await?;
            if closing() {
                return Ok(false);
            }
            human.dig_aimed(at).await?;
        }
        ActionType::Noop | ActionType::GiveBlock => return Ok(false),
        _ => {
            let Some(delta) = move_delta(action.kind) else {
                return Ok(false);
            };
            // From where Minecraft has the player, not the simulator.
            let pos = snapshot.await?.pos;
            human
                .move_to([pos[0] + delta[0], pos[1] + delta[1], pos[2] + delta[2]])
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
