//! A scripted human: a handle a test uses to play a human player in a running
//! mission. Each action changes the world and records the input `events` the
//! mod's `ObservationFromHuman` would report for it.
//!
//! Simplified: actions act on the named cell directly, and the player turns to
//! look at it first (so `LineOfSight` shows the cell, as MBAG's detector
//! expects); mouse deltas are the turn divided by 0.15 degrees per unit, which is
//! Minecraft's rate at the default sensitivity only approximately.

use tokio::sync::oneshot;

use crate::mod_patch::BlockAction;

use super::blocks::McBlock;
use super::ray::look_at;
use super::server::{WorldHandle, WorldRequest};
use super::world::{GameMode, HumanEvent, World};

/// One thing a scripted human does.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanAction {
    /// Place the selected hotbar block into this cell.
    Place([i32; 3]),
    /// Break the block in this cell.
    Break([i32; 3]),
    /// Walk (teleport) the feet to this position.
    MoveTo([f64; 3]),
    /// Turn to this yaw and pitch.
    Look {
        /// Yaw in degrees.
        yaw: f32,
        /// Pitch in degrees.
        pitch: f32,
    },
    /// Select hotbar slot 0..=8.
    SelectHotbar(usize),
    /// Say this in chat (`/` for a server command).
    Chat(String),
}

/// Why a scripted human could not act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HumanError {
    /// The mission's world is gone.
    #[error("the mission has ended")]
    WorldGone,
    /// No player has this name.
    #[error("no player named {0:?} in the mission")]
    NoSuchPlayer(String),
    /// The selected hotbar slot holds no block.
    #[error("hotbar slot {0} holds no block to place")]
    NothingToPlace(usize),
    /// The cell is not free (a block or a player is there).
    #[error("cell {0:?} is not free")]
    CellTaken([i32; 3]),
    /// The cell is in the protected goal copy.
    #[error("cell {0:?} lies in the goal copy, which players cannot change")]
    Protected([i32; 3]),
    /// The player's game mode or the block forbids breaking it.
    #[error("cannot break {block} at {cell:?}")]
    Unbreakable {
        /// The cell.
        cell: [i32; 3],
        /// Its block.
        block: &'static str,
    },
    /// The game mode forbids building.
    #[error("a player in {0:?} mode cannot build")]
    CannotBuild(GameMode),
    /// A hotbar slot outside 0..=8.
    #[error("hotbar slot {0} is not 0..=8")]
    BadSlot(usize),
}

/// A handle acting as one human player of a running mission.
#[derive(Clone, Debug)]
pub struct ScriptedHuman {
    name: String,
    world: WorldHandle,
}

impl ScriptedHuman {
    pub(crate) fn new(name: &str, world: WorldHandle) -> Self {
        Self {
            name: name.to_owned(),
            world,
        }
    }

    /// The player's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Does one action.
    pub async fn act(&self, action: HumanAction) -> Result<(), HumanError> {
        let (reply, rx) = oneshot::channel();
        let request = WorldRequest::Human {
            name: self.name.clone(),
            action,
            reply,
        };
        self.world
            .request(request)
            .await
            .map_err(|_| HumanError::WorldGone)?;
        rx.await.map_err(|_| HumanError::WorldGone)?
    }

    /// Places the selected hotbar block into `cell`.
    pub async fn place_block(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        self.act(HumanAction::Place(cell)).await
    }

    /// Breaks the block in `cell`.
    pub async fn break_block(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        self.act(HumanAction::Break(cell)).await
    }

    /// Moves the feet to `pos`.
    pub async fn move_to(&self, pos: [f64; 3]) -> Result<(), HumanError> {
        self.act(HumanAction::MoveTo(pos)).await
    }

    /// Turns to `yaw` and `pitch`.
    pub async fn look(&self, yaw: f32, pitch: f32) -> Result<(), HumanError> {
        self.act(HumanAction::Look { yaw, pitch }).await
    }

    /// Selects hotbar slot `slot` (0..=8).
    pub async fn select_hotbar(&self, slot: usize) -> Result<(), HumanError> {
        self.act(HumanAction::SelectHotbar(slot)).await
    }

    /// Says `text` in chat.
    pub async fn chat(&self, text: &str) -> Result<(), HumanError> {
        self.act(HumanAction::Chat(text.to_owned())).await
    }
}

impl World {
    /// Applies a scripted human's action.
    pub(crate) fn human_act(&mut self, name: &str, action: HumanAction) -> Result<(), HumanError> {
        let role = self
            .role_of(name)
            .ok_or_else(|| HumanError::NoSuchPlayer(name.to_owned()))?;
        match action {
            HumanAction::Place(cell) => {
                let mode = self.players[role].mode;
                if matches!(mode, GameMode::Spectator | GameMode::Adventure) {
                    return Err(HumanError::CannotBuild(mode));
                }
                let slot = self.players[role].selected;
                let block = McBlock::from_name(self.players[role].inventory[slot].item_name())
                    .filter(|b| *b != McBlock::Air)
                    .ok_or(HumanError::NothingToPlace(slot))?;
                if self.in_goal_area(cell) {
                    return Err(HumanError::Protected(cell));
                }
                if self.block(cell) != McBlock::Air || self.occupied(cell) {
                    return Err(HumanError::CellTaken(cell));
                }
                self.aim(role, cell);
                self.set_block(cell, block);
                self.record_change(role, BlockAction::Place, cell, block);
                if mode == GameMode::Survival {
                    self.players[role].selected_stack().size -= 1;
                    if self.players[role].selected_stack().size == 0 {
                        self.players[role].selected_stack().item.clear();
                    }
                }
                self.press(role, "use");
            }
            HumanAction::Break(cell) => {
                if self.in_goal_area(cell) {
                    return Err(HumanError::Protected(cell));
                }
                self.aim(role, cell);
                let block = self.block(cell);
                if !self.break_block(role, cell) {
                    return Err(HumanError::Unbreakable {
                        cell,
                        block: block.name(),
                    });
                }
                self.press(role, "attack");
            }
            HumanAction::MoveTo(pos) => {
                self.players[role].move_to(pos);
                self.press(role, "forward");
            }
            HumanAction::Look { yaw, pitch } => self.turn(role, yaw, pitch),
            HumanAction::SelectHotbar(slot) => {
                if slot > 8 {
                    return Err(HumanError::BadSlot(slot));
                }
                self.players[role].selected = slot;
                self.press(role, &format!("hotbar.{}", slot + 1));
            }
            HumanAction::Chat(text) => self.chat(role, &text),
        }
        Ok(())
    }

    fn aim(&mut self, role: usize, cell: [i32; 3]) {
        let centre = cell.map(|c| f64::from(c) + 0.5);
        let (yaw, pitch) = look_at(self.players[role].eye(), centre);
        self.turn(role, yaw, pitch);
    }

    fn turn(&mut self, role: usize, yaw: f32, pitch: f32) {
        let player = &mut self.players[role];
        let dx = (f64::from(yaw - player.yaw) / 0.15).round() as i64;
        let dy = (f64::from(player.pitch - pitch) / 0.15).round() as i64;
        player.yaw = yaw;
        player.pitch = pitch;
        if dx != 0 || dy != 0 {
            player.events.push(HumanEvent::Mouse { dx, dy });
        }
    }

    fn press(&mut self, role: usize, command: &str) {
        for pressed in [true, false] {
            self.players[role].events.push(HumanEvent::Key {
                command: command.to_owned(),
                pressed,
            });
        }
    }
}
