//! A scripted human: a handle a test uses to play a human player in a running
//! mission. Each action changes the world and records the input `events` the
//! mod's `ObservationFromHuman` would report for it.
//!
//! Places and breaks take time as a person's do, because what the daemon can
//! detect depends on it: the player turns onto the cell over [`AIM_TICKS`] of
//! its client's ticks (so observations show the crosshair on the cell before
//! the click), a place happens on the tick `use` is pressed, and a break holds
//! `attack` for the ticks Minecraft digs the block ([`McBlock::dig_ticks`]);
//! each button is released a tick after its effect. The player aims at the
//! cell's centre rather than at a neighbour's face, so a place needs no
//! support, and mouse deltas are the turn divided by 0.15 degrees per unit,
//! which is Minecraft's rate at the default sensitivity only approximately.

use tokio::sync::oneshot;

use crate::mod_patch::BlockAction;

use super::blocks::McBlock;
use super::ray::look_at;
use super::server::{WorldHandle, WorldRequest};
use super::world::{GameMode, HumanEvent, World};

/// Client ticks a scripted person takes to turn onto a cell before clicking.
/// People aim over several frames; the detector, like the reference's,
/// attributes a place or break to the player whose crosshair was on the cell
/// in an observation with the button held, so a turn and click within one tick
/// would leave a break unattributed.
pub const AIM_TICKS: u32 = 4;

/// A mouse button, by the command name `ObservationFromHuman` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Button {
    /// The left button: `attack` (break).
    Attack,
    /// The right button: `use` (place).
    Use,
}

impl Button {
    /// The key command's name in the mod's events.
    pub fn command(self) -> &'static str {
        match self {
            Self::Attack => "attack",
            Self::Use => "use",
        }
    }
}

/// One thing a scripted human does.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanAction {
    /// Turn onto this cell's centre and place the selected hotbar block into it,
    /// pressing `use` (a right click places on the tick it is pressed; release
    /// it with [`HumanAction::Release`]).
    Place([i32; 3]),
    /// The end of a dig: turn onto this cell's centre and break its block
    /// (`attack` is pressed and released separately).
    Break([i32; 3]),
    /// Turn `1 / steps` of the way from the current look toward a point from
    /// which `button` would act on `cell` (the whole way when `steps` is 1):
    /// for a break a point on the cell's faces, for a place one on a face of a
    /// solid neighbour touching it, that the player's ray reaches in its game
    /// mode's reach through the world as it is.
    TurnToward {
        /// The cell to act on.
        cell: [i32; 3],
        /// Which button will act.
        button: Button,
        /// Turns left, this one included.
        steps: u32,
    },
    /// Press and hold a button.
    Press(Button),
    /// Release a button.
    Release(Button),
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
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    /// A block stands where the player would move.
    #[error("a block stands in the way of a move to {0:?}")]
    Blocked([f64; 3]),
    /// No point of the cell (for a break) or of a face it could be placed
    /// against (for a place) is in the player's sight and reach.
    #[error("cell {0:?} is out of sight or reach")]
    OutOfReach([i32; 3]),
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
        let name = self.name.clone();
        self.ask(|reply| WorldRequest::Human {
            name,
            action,
            reply,
        })
        .await
    }

    /// Waits until this player's client has ticked `ticks` more times (each
    /// tick is one observation).
    pub async fn wait_ticks(&self, ticks: u32) -> Result<(), HumanError> {
        let name = self.name.clone();
        self.ask(|reply| WorldRequest::AwaitTicks { name, ticks, reply })
            .await
    }

    /// Sends the world the request `make` builds around a reply channel and
    /// waits for its answer; a world that has stopped answers `WorldGone`.
    async fn ask(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<(), HumanError>>) -> WorldRequest,
    ) -> Result<(), HumanError> {
        let (reply, rx) = oneshot::channel();
        self.world
            .request(make(reply))
            .await
            .map_err(|_| HumanError::WorldGone)?;
        rx.await.map_err(|_| HumanError::WorldGone)?
    }

    /// Turns over [`AIM_TICKS`] ticks, one step per tick, until `button` would
    /// act on `cell` ([`HumanAction::TurnToward`]).
    pub async fn aim_at(&self, cell: [i32; 3], button: Button) -> Result<(), HumanError> {
        for steps in (1..=AIM_TICKS).rev() {
            self.act(HumanAction::TurnToward {
                cell,
                button,
                steps,
            })
            .await?;
            self.wait_ticks(1).await?;
        }
        Ok(())
    }

    /// Aims at `cell`, then places the selected hotbar block into it with a
    /// right click held for one tick.
    pub async fn place_block(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        self.aim_at(cell, Button::Use).await?;
        self.place_aimed(cell).await
    }

    /// The click of [`ScriptedHuman::place_block`], once aimed.
    pub async fn place_aimed(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        self.act(HumanAction::Place(cell)).await?;
        self.release_after_a_tick(Button::Use).await
    }

    /// Aims at `cell`, then digs its block: `attack` held for the ticks
    /// Minecraft takes in the player's game mode, released a tick after the
    /// block breaks.
    pub async fn break_block(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        self.aim_at(cell, Button::Attack).await?;
        self.dig_aimed(cell).await
    }

    /// The dig of [`ScriptedHuman::break_block`], once aimed.
    pub async fn dig_aimed(&self, cell: [i32; 3]) -> Result<(), HumanError> {
        let player = self
            .world
            .player(&self.name)
            .await
            .map_err(|_| HumanError::WorldGone)?
            .ok_or_else(|| HumanError::NoSuchPlayer(self.name.clone()))?;
        let name = self
            .world
            .block(cell)
            .await
            .map_err(|_| HumanError::WorldGone)?;
        let block = McBlock::from_name(name).unwrap_or(McBlock::Air);
        let dig = match player.mode {
            GameMode::Survival | GameMode::Creative => block.dig_ticks(player.mode),
            GameMode::Adventure | GameMode::Spectator => None,
        };
        let Some(dig) = dig else {
            return Err(HumanError::Unbreakable {
                cell,
                block: block.name(),
            });
        };
        self.act(HumanAction::Press(Button::Attack)).await?;
        if dig > 0 {
            self.wait_ticks(dig).await?;
        }
        match self.act(HumanAction::Break(cell)).await {
            Ok(()) => self.release_after_a_tick(Button::Attack).await,
            Err(e) => {
                // Someone else changed the cell during the dig.
                self.act(HumanAction::Release(Button::Attack)).await?;
                Err(e)
            }
        }
    }

    async fn release_after_a_tick(&self, button: Button) -> Result<(), HumanError> {
        self.wait_ticks(1).await?;
        self.act(HumanAction::Release(button)).await
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
                self.set_block(cell, block);
                self.record_change(role, BlockAction::Place, cell, block);
                if mode == GameMode::Survival {
                    self.players[role].selected_stack().size -= 1;
                    if self.players[role].selected_stack().size == 0 {
                        self.players[role].selected_stack().item.clear();
                    }
                }
                self.key(role, Button::Use.command(), true);
            }
            HumanAction::Break(cell) => {
                if self.in_goal_area(cell) {
                    return Err(HumanError::Protected(cell));
                }
                let block = self.block(cell);
                if !self.break_block(role, cell) {
                    return Err(HumanError::Unbreakable {
                        cell,
                        block: block.name(),
                    });
                }
            }
            HumanAction::TurnToward {
                cell,
                button,
                steps,
            } => {
                let point = self
                    .aim_point(role, cell, button)
                    .ok_or(HumanError::OutOfReach(cell))?;
                let player = &self.players[role];
                let (yaw, pitch) = look_at(player.eye(), point);
                // The shorter way round, a fraction of it per step.
                let dyaw = (yaw - player.yaw + 180.0).rem_euclid(360.0) - 180.0;
                let dpitch = pitch - player.pitch;
                let f = 1.0 / steps.max(1) as f32;
                let yaw = if steps <= 1 {
                    yaw
                } else {
                    (player.yaw + dyaw * f).rem_euclid(360.0)
                };
                let pitch = if steps <= 1 {
                    pitch
                } else {
                    player.pitch + dpitch * f
                };
                self.turn(role, yaw, pitch);
            }
            HumanAction::Press(button) => self.key(role, button.command(), true),
            HumanAction::Release(button) => self.key(role, button.command(), false),
            HumanAction::MoveTo(pos) => {
                // A person walks or flies; no block lets them through.
                if self.box_blocked(pos) {
                    return Err(HumanError::Blocked(pos));
                }
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

    /// Whether a player's box (0.6 wide, 1.8 tall) with its feet at `pos` would
    /// overlap a block.
    fn box_blocked(&self, pos: [f64; 3]) -> bool {
        let lo = [pos[0] - 0.3, pos[1], pos[2] - 0.3];
        let hi = [pos[0] + 0.3, pos[1] + 1.8, pos[2] + 0.3];
        // Cells the open box overlaps: a box ending exactly on a cell's face
        // does not enter it.
        let first = lo.map(|v| v.floor() as i32);
        let last = hi.map(|v| v.ceil() as i32 - 1);
        (first[0]..=last[0]).any(|x| {
            (first[1]..=last[1])
                .any(|y| (first[2]..=last[2]).any(|z| self.block([x, y, z]) != McBlock::Air))
        })
    }

    /// The point a person at `role`'s eye would aim at for `button` to act on
    /// `cell` (see [`HumanAction::TurnToward`]): face points nearest the eye
    /// first, each checked by casting the ray Minecraft will cast, with the
    /// angles as floats.
    fn aim_point(&self, role: usize, cell: [i32; 3], button: Button) -> Option<[f64; 3]> {
        let player = &self.players[role];
        let eye = player.eye();
        let reach = player.mode.reach();
        let mut points = Vec::new();
        for axis in 0..3 {
            for side in [-1, 1] {
                let mut neighbour = cell;
                neighbour[axis] += side;
                if button == Button::Use && self.block(neighbour) == McBlock::Air {
                    continue;
                }
                // The plane between the cell and this neighbour; points kept
                // off the face's edges, where rounding decides the cell.
                let plane = f64::from(cell[axis]) + if side > 0 { 1.0 } else { 0.0 };
                let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                for a in [0.5, 0.25, 0.75, 0.1, 0.9] {
                    for b in [0.5, 0.25, 0.75, 0.1, 0.9] {
                        let mut point = [0.0; 3];
                        point[axis] = plane;
                        point[u] = f64::from(cell[u]) + a;
                        point[v] = f64::from(cell[v]) + b;
                        points.push(point);
                    }
                }
            }
        }
        let distance = |p: &[f64; 3]| (0..3).map(|a| (p[a] - eye[a]).powi(2)).sum::<f64>();
        points.sort_by(|p, q| distance(p).total_cmp(&distance(q)));
        points.into_iter().find(|&point| {
            let (yaw, pitch) = look_at(eye, point);
            let dir = super::ray::look_vector(yaw, pitch);
            let solid = |c: [i32; 3]| self.block(c) != McBlock::Air;
            super::ray::cast(eye, dir, reach, solid).is_some_and(|hit| match button {
                Button::Attack => hit.cell == cell,
                Button::Use => {
                    hit.normal != [0; 3] && (0..3).all(|a| hit.cell[a] + hit.normal[a] == cell[a])
                }
            })
        })
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
            self.key(role, command, pressed);
        }
    }

    fn key(&mut self, role: usize, command: &str, pressed: bool) {
        self.players[role].events.push(HumanEvent::Key {
            command: command.to_owned(),
            pressed,
        });
    }
}
