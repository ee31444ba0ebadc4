//! Executing the agent's commands in the world (PROTOCOL.md §4.1), for the
//! handlers MBAG's AgentSections have.
//!
//! A command is *handled* when a handler of the section accepts it; handled
//! commands are echoed in the next observation's `CommandsSinceLastObservation`
//! as the lower-case verb, a space and the parameters (`setyaw 35.0`, `quit `).
//! Anything else (an unknown verb, a verb the section has no handler for, bad
//! parameters) is dropped silently, as the mod drops it.

use crate::command::Command;
use crate::mod_patch::BlockAction;

use super::blocks::McBlock;
use super::world::{AgentKind, GameMode, World};

/// What executing one command line did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No handler took it.
    Dropped,
    /// Handled.
    Handled,
    /// Handled, and it was `quit`: this agent has finished.
    Quit,
}

impl World {
    /// Executes one command line from the agent of `role`.
    pub fn execute(&mut self, role: usize, line: &str) -> Outcome {
        let Ok(command) = line.parse::<Command>() else {
            log::debug!("role {role}: dropped unparsable command {line:?}");
            return Outcome::Dropped;
        };
        let spectator = self.players[role].kind == AgentKind::Spectator;
        let is_quit = matches!(command, Command::Quit);
        let handled = match command {
            Command::Teleport { x, y, z } => {
                self.players[role].move_to([x.value(), y.value(), z.value()]);
                true
            }
            Command::SetYaw(v) => {
                self.players[role].yaw = v.value() as f32;
                true
            }
            Command::SetPitch(v) => {
                self.players[role].pitch = v.value() as f32;
                true
            }
            // Accepted by HumanLevelCommands; flight is not modelled.
            Command::Jump(_) => true,
            Command::Chat(ref text) => {
                self.chat(role, text);
                true
            }
            // The spectator's section has no inventory, discrete-movement or quit
            // handlers.
            _ if spectator => false,
            Command::Hotbar { key, pressed } => {
                if pressed {
                    self.players[role].selected = usize::from(key - 1);
                }
                true
            }
            Command::SwapInventoryItems(a, b) => {
                let (a, b) = (usize::from(a), usize::from(b));
                let inventory = &mut self.players[role].inventory;
                if a < inventory.len() && b < inventory.len() {
                    inventory.swap(a, b);
                    true
                } else {
                    false
                }
            }
            Command::Use => {
                self.use_item(role);
                true
            }
            Command::Attack => {
                self.attack(role);
                true
            }
            Command::Quit => true,
            Command::Other { .. } => false,
        };
        if !handled {
            log::debug!("role {role}: no handler for {line:?}");
            return Outcome::Dropped;
        }
        let (verb, params) = line.split_once(' ').unwrap_or((line, ""));
        let echo = format!("{} {params}", verb.to_ascii_lowercase());
        self.players[role].echoes.push(echo);
        if is_quit {
            Outcome::Quit
        } else {
            Outcome::Handled
        }
    }

    /// `use`: places the selected block against the face under the crosshair,
    /// within reach. Returns the cell placed into.
    pub fn use_item(&mut self, role: usize) -> Option<[i32; 3]> {
        let mode = self.players[role].mode;
        if matches!(mode, GameMode::Spectator | GameMode::Adventure) {
            return None;
        }
        let Some(hit) = self.ray(role, mode.reach()) else {
            log::debug!("role {role}: use: no block under the crosshair within reach");
            return None;
        };
        if hit.normal == [0; 3] {
            log::debug!("role {role}: use: the eye is inside {:?}", hit.cell);
            return None;
        }
        let target = [0, 1, 2].map(|a| hit.cell[a] + hit.normal[a]);
        let stack = self.players[role].selected_stack().clone();
        let Some(block) = McBlock::from_name(stack.item_name()).filter(|b| *b != McBlock::Air)
        else {
            log::debug!(
                "role {role}: use: no block in the hand ({:?})",
                stack.item_name()
            );
            return None;
        };
        if self.block(target) != McBlock::Air || self.in_goal_area(target) || self.occupied(target)
        {
            log::debug!(
                "role {role}: use: hit {:?} face {:?}; {target:?} is not free",
                hit.cell,
                hit.normal
            );
            return None;
        }
        log::debug!(
            "role {role}: use: placed {block:?} at {target:?} (against {:?} face {:?})",
            hit.cell,
            hit.normal
        );
        self.set_block(target, block);
        self.record_change(role, BlockAction::Place, target, block);
        if mode == GameMode::Survival {
            let stack = self.players[role].selected_stack();
            stack.size -= 1;
            if stack.size == 0 {
                stack.item.clear();
            }
        }
        Some(target)
    }

    /// `attack`: breaks the block under the crosshair, within reach. Returns the
    /// cell broken.
    pub fn attack(&mut self, role: usize) -> Option<[i32; 3]> {
        let mode = self.players[role].mode;
        if matches!(mode, GameMode::Spectator | GameMode::Adventure) {
            return None;
        }
        let Some(hit) = self.ray(role, mode.reach()) else {
            log::debug!("role {role}: attack: no block under the crosshair within reach");
            return None;
        };
        let broken = self.break_block(role, hit.cell);
        if broken {
            let p = &self.players[role];
            log::debug!(
                "role {role}: attack: broke {:?} (eye {:?}, yaw {}, pitch {})",
                hit.cell,
                p.eye(),
                p.yaw,
                p.pitch
            );
        } else {
            log::debug!("role {role}: attack: {:?} may not be broken", hit.cell);
        }
        broken.then_some(hit.cell)
    }

    /// Breaks a block as player `role` would; false if it may not.
    pub(crate) fn break_block(&mut self, role: usize, cell: [i32; 3]) -> bool {
        let block = self.block(cell);
        let mode = self.players[role].mode;
        let allowed = match mode {
            GameMode::Creative => block != McBlock::Air,
            GameMode::Survival => block.breakable_in_survival(),
            _ => false,
        };
        if !allowed || self.in_goal_area(cell) {
            return false;
        }
        self.set_block(cell, McBlock::Air);
        self.record_change(role, BlockAction::Break, cell, block);
        if mode == GameMode::Survival
            && let Some(drop) = block.drop()
        {
            self.players[role].add_items(drop.name(), 1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::{BlockGrid, WorldSize};
    use crate::mission::{Mission, Player, PlayerName};

    fn world() -> World {
        let size = WorldSize::new(5, 5, 5).unwrap();
        let flat = BlockGrid::flat(size);
        let players = vec![
            Player::ai(PlayerName::new("assistant").unwrap()),
            Player::human(PlayerName::new("human").unwrap()),
        ];
        World::from_mission(&Mission::new(&flat, &flat, players).unwrap())
    }

    #[test]
    fn use_places_against_the_face_looked_at_and_attack_breaks_it() {
        let mut w = world();
        assert_eq!(w.execute(0, "tp 0.5 2 0.5"), Outcome::Handled);
        w.players[0].add_items("planks", 1);
        // Look straight down at the grass below the feet's neighbour.
        assert_eq!(w.execute(0, "tp 2.5 2 2.5"), Outcome::Handled);
        w.execute(0, "setPitch 90");
        // Blocked by the player itself.
        assert_eq!(w.use_item(0), None);
        w.execute(0, "tp 2.5 4 2.5");
        w.execute(0, "use 1");
        assert_eq!(w.block([2, 2, 2]), McBlock::Planks);
        // Creative: the block is not used up.
        assert_eq!(w.players[0].inventory[0].size, 1);
        w.execute(0, "attack 1");
        assert_eq!(w.block([2, 2, 2]), McBlock::Air);
        let echoes: Vec<_> = w.players[0].echoes.clone();
        assert_eq!(echoes[2], "setpitch 90");
        assert_eq!(echoes.last().unwrap(), "attack 1");
        assert_eq!(w.execute(0, "quit"), Outcome::Quit);
        assert_eq!(w.players[0].echoes.last().unwrap(), "quit ");
        assert_eq!(w.execute(0, "movenorth 1"), Outcome::Dropped);
        assert_eq!(w.execute(0, "tp 1 2"), Outcome::Dropped);
    }

    #[test]
    fn survival_uses_up_blocks_and_breaking_gives_them_back() {
        let mut w = world();
        w.players[1].mode = GameMode::Survival;
        w.players[1].add_items("dirt", 1);
        w.execute(1, "tp 3.5 3 3.5");
        w.execute(1, "setPitch 90");
        // Grass below at y = 1, within 4.5.
        assert_eq!(w.use_item(1), Some([3, 2, 3]));
        assert!(w.players[1].inventory[0].is_empty());
        assert_eq!(w.attack(1), Some([3, 2, 3]));
        assert_eq!(w.players[1].inventory[0].item, "dirt");
        // Bedrock cannot be broken in survival.
        w.set_block([3, 2, 3], McBlock::Bedrock);
        assert_eq!(w.attack(1), None);
    }
}
