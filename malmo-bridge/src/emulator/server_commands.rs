//! Server commands typed into chat (`chat /give …`), with the feedback the
//! player sees in `Chat`. Only what MBAG's set-up and repairs use is handled:
//! `/give`, `/clear`, `/fill`, `/clone`, `/gamemode`, `/gamerule`, `/title`.
//!
//! Simplified: selectors are player names, `@p` (the sender), `@a` (everyone),
//! `@r` and `@e` (the first player); coordinates may be absolute or `~`-relative
//! to the sender's feet; item data values and NBT (enchantments) are accepted and
//! ignored. Feedback follows `sendCommandFeedback`; errors are always shown.

use super::blocks::{McBlock, display_name, item_name};
use super::world::{GameMode, World};

/// Minecraft's limit on `/fill` and `/clone` volumes.
const MAX_VOLUME: i64 = 32768;

impl World {
    /// Says `text` as player `role`: a server command if it starts with `/`, a chat
    /// line `<name> text` to everyone otherwise.
    pub fn chat(&mut self, role: usize, text: &str) {
        match text.strip_prefix('/') {
            Some(command) => {
                let (feedback, error) = match self.server_command(role, command) {
                    Ok(Some(message)) => (Some(message), None),
                    Ok(None) => (None, None),
                    Err(message) => (None, Some(message)),
                };
                if let Some(message) = feedback.filter(|_| self.send_command_feedback) {
                    self.players[role].chat.push(message);
                }
                if let Some(message) = error {
                    log::debug!("role {role}: /{command}: {message}");
                    self.players[role].chat.push(message);
                }
            }
            None => {
                let line = format!("<{}> {text}", self.players[role].name);
                self.broadcast(&line);
            }
        }
    }

    /// Runs one server command; the feedback on success, the error otherwise.
    fn server_command(&mut self, role: usize, command: &str) -> Result<Option<String>, String> {
        let args: Vec<&str> = command.split_whitespace().collect();
        let Some((&name, args)) = args.split_first() else {
            return Err(UNKNOWN.into());
        };
        match name {
            "give" => self.give(role, args),
            "clear" => self.clear(role, args),
            "fill" => self.fill_command(role, args),
            "clone" => self.clone_command(role, args),
            "gamemode" => self.gamemode(role, args),
            "gamerule" => self.gamerule(args),
            "title" => self.title(role, args, command),
            _ => Err(UNKNOWN.into()),
        }
    }

    /// The roles a selector names.
    fn select(&self, role: usize, selector: Option<&str>) -> Result<Vec<usize>, String> {
        match selector {
            None | Some("@p" | "@s") => Ok(vec![role]),
            Some("@a") => Ok((0..self.players.len()).collect()),
            Some("@r" | "@e") => Ok(vec![0]),
            Some(name) => self
                .role_of(name)
                .map(|r| vec![r])
                .ok_or_else(|| "That player cannot be found".to_owned()),
        }
    }

    fn give(&mut self, role: usize, args: &[&str]) -> Result<Option<String>, String> {
        let (Some(selector), Some(item)) = (args.first(), args.get(1)) else {
            return Err("Usage: /give <player> <item> [amount] [data] [dataTag]".into());
        };
        let item =
            item_name(item).ok_or_else(|| format!("There is no such item with name {item}"))?;
        let count: u32 = match args.get(2) {
            Some(n) => n
                .parse()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| format!("'{n}' is not a valid number"))?,
            None => 1,
        };
        let mut messages = Vec::new();
        for target in self.select(role, Some(selector))? {
            let player = &mut self.players[target];
            let lost = player.add_items(item, count);
            if lost > 0 {
                log::debug!(
                    "/give: {lost} {item} found no room in {}'s inventory",
                    player.name
                );
            }
            messages.push(format!(
                "Given [{}] * {count} to {}",
                display_name(item),
                player.name
            ));
        }
        Ok(Some(messages.join("\n")))
    }

    fn clear(&mut self, role: usize, args: &[&str]) -> Result<Option<String>, String> {
        let targets = self.select(role, args.first().copied())?;
        let item = match args.get(1) {
            Some(i) => {
                Some(item_name(i).ok_or_else(|| format!("There is no such item with name {i}"))?)
            }
            None => None,
        };
        // args[2] is the data value (-1 any); it is not modelled.
        let max = match args.get(3) {
            Some(n) => {
                let n: i64 = n
                    .parse()
                    .map_err(|_| format!("'{n}' is not a valid number"))?;
                u32::try_from(n).ok()
            }
            None => None,
        };
        let mut removed = 0;
        let mut name = String::new();
        for target in targets {
            removed += self.players[target].clear_items(item, max);
            name.clone_from(&self.players[target].name);
        }
        if removed == 0 {
            return Err(format!(
                "Could not clear the inventory of {name}, no items to remove"
            ));
        }
        Ok(Some(format!(
            "Cleared the inventory of {name}, removing {removed} items"
        )))
    }

    /// Reads three coordinates, absolute or `~`-relative to the sender's feet.
    fn coordinates(&self, role: usize, args: &[&str]) -> Result<[i32; 3], String> {
        let mut out = [0; 3];
        for (a, value) in out.iter_mut().enumerate() {
            let text = args.get(a).ok_or("Usage: missing coordinates")?;
            let base = self.players[role].pos[a].floor() as i32;
            *value = match text.strip_prefix('~') {
                Some("") => base,
                Some(delta) => base + delta.parse::<f64>().map_err(|_| bad_number(text))? as i32,
                None => text.parse::<f64>().map_err(|_| bad_number(text))?.floor() as i32,
            };
        }
        Ok(out)
    }

    fn fill_command(&mut self, role: usize, args: &[&str]) -> Result<Option<String>, String> {
        if args.len() < 7 {
            return Err("Usage: /fill <x1> <y1> <z1> <x2> <y2> <z2> <block> [dataValue|state] [oldBlockHandling] [dataTag]".into());
        }
        let from = self.coordinates(role, &args[0..3])?;
        let to = self.coordinates(role, &args[3..6])?;
        let block = McBlock::from_name(args[6])
            .ok_or_else(|| format!("There is no such block with name {}", args[6]))?;
        check_volume(from, to)?;
        let mode = args.get(8).copied().unwrap_or("replace");
        let lo = [0, 1, 2].map(|a| from[a].min(to[a]));
        let hi = [0, 1, 2].map(|a| from[a].max(to[a]));
        let on_shell = |p: [i32; 3]| (0..3).any(|a| p[a] == lo[a] || p[a] == hi[a]);
        let changed = match mode {
            "keep" => {
                let mut cells = Vec::new();
                self.fill(from, to, |p| {
                    cells.push(p);
                    None
                });
                cells
                    .into_iter()
                    .filter(|&c| self.block(c) == McBlock::Air && self.set_block(c, block))
                    .count()
            }
            "hollow" => self.fill(from, to, |p| {
                Some(if on_shell(p) { block } else { McBlock::Air })
            }),
            "outline" => self.fill(from, to, |p| on_shell(p).then_some(block)),
            _ => self.fill(from, to, |_| Some(block)),
        };
        if changed == 0 {
            return Err("No blocks filled".into());
        }
        Ok(Some(format!("{changed} blocks filled")))
    }

    fn clone_command(&mut self, role: usize, args: &[&str]) -> Result<Option<String>, String> {
        if args.len() < 9 {
            return Err(
                "Usage: /clone <x1> <y1> <z1> <x2> <y2> <z2> <x> <y> <z> [maskMode] [cloneMode]"
                    .into(),
            );
        }
        let from = self.coordinates(role, &args[0..3])?;
        let to = self.coordinates(role, &args[3..6])?;
        let dest = self.coordinates(role, &args[6..9])?;
        check_volume(from, to)?;
        let lo = [0, 1, 2].map(|a| from[a].min(to[a]));
        let hi = [0, 1, 2].map(|a| from[a].max(to[a]));
        let masked = args.get(9) == Some(&"masked");
        // Read everything first, so that overlapping regions copy correctly.
        let mut copied = Vec::new();
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    let block = self.block([x, y, z]);
                    if !(masked && block == McBlock::Air) {
                        let offset = [x - lo[0], y - lo[1], z - lo[2]];
                        copied.push(([0, 1, 2].map(|a| dest[a] + offset[a]), block));
                    }
                }
            }
        }
        let count = copied.len();
        for (cell, block) in copied {
            self.set_block(cell, block);
        }
        if count == 0 {
            return Err("No blocks cloned".into());
        }
        Ok(Some(format!("{count} blocks cloned")))
    }

    fn gamemode(&mut self, role: usize, args: &[&str]) -> Result<Option<String>, String> {
        let mode = match args.first().copied() {
            Some("0" | "s" | "survival") => GameMode::Survival,
            Some("1" | "c" | "creative") => GameMode::Creative,
            Some("2" | "a" | "adventure") => GameMode::Adventure,
            Some("3" | "sp" | "spectator") => GameMode::Spectator,
            _ => return Err("Usage: /gamemode <mode> [player]".into()),
        };
        for target in self.select(role, args.get(1).copied())? {
            let player = &mut self.players[target];
            player.mode = mode;
            // The game tells the player itself whatever the game rule says.
            player.chat.push(format!(
                "Your game mode has been updated to {} Mode",
                mode.display()
            ));
        }
        Ok(None)
    }

    fn gamerule(&mut self, args: &[&str]) -> Result<Option<String>, String> {
        let (Some(&rule), Some(&value)) = (args.first(), args.get(1)) else {
            return Err("Usage: /gamerule <rule name> [value]".into());
        };
        if rule == "sendCommandFeedback" {
            self.send_command_feedback = value != "false";
        }
        self.rules.insert(rule.to_owned(), value.to_owned());
        Ok(Some(format!(
            "Game rule {rule} has been updated to {value}"
        )))
    }

    fn title(
        &mut self,
        role: usize,
        args: &[&str],
        command: &str,
    ) -> Result<Option<String>, String> {
        let (Some(&selector), Some(&action)) = (args.first(), args.get(1)) else {
            return Err(
                "Usage: /title <player> <title|subtitle|actionbar|clear|reset|times> ...".into(),
            );
        };
        let json = command
            .splitn(4, char::is_whitespace)
            .nth(3)
            .unwrap_or("")
            .trim();
        let text = serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| match v {
                serde_json::Value::String(s) => Some(s),
                v => v.get("text").and_then(|t| t.as_str()).map(str::to_owned),
            })
            .unwrap_or_default();
        for target in self.select(role, Some(selector))? {
            let player = &mut self.players[target];
            match action {
                "title" => player.titles.push(text.clone()),
                "subtitle" => player.subtitles.push(text.clone()),
                // The action bar is drawn on screen and observed by nothing.
                _ => {}
            }
        }
        Ok(Some("Title command successfully executed".into()))
    }
}

const UNKNOWN: &str = "Unknown command. Try /help for a list of commands";

fn bad_number(text: &str) -> String {
    format!("'{text}' is not a valid number")
}

fn check_volume(from: [i32; 3], to: [i32; 3]) -> Result<(), String> {
    let volume: i64 = (0..3)
        .map(|a| i64::from((from[a] - to[a]).abs()) + 1)
        .product();
    if volume > MAX_VOLUME {
        return Err(format!(
            "Too many blocks in the specified area ({volume} > {MAX_VOLUME})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::emulator::blocks::McBlock;
    use crate::emulator::world::{GameMode, World};
    use crate::grid::{BlockGrid, WorldSize};
    use crate::mission::{Mission, Player, PlayerName};

    fn world() -> World {
        let size = WorldSize::new(11, 10, 10).unwrap();
        let mut goal = BlockGrid::flat(size);
        for y in 0..10 {
            goal.set(10, y, 0, crate::block::Block::Wool);
        }
        let flat = BlockGrid::flat(size);
        let players = vec![
            Player::ai(PlayerName::new("assistant").unwrap()),
            Player::human(PlayerName::new("human").unwrap()),
        ];
        World::from_mission(&Mission::new(&goal, &flat, players).unwrap())
    }

    #[test]
    fn set_up_commands_give_clear_and_switch_modes() {
        let mut w = world();
        w.chat(
            1,
            "/give human diamond_pickaxe 1 0 {ench: [{id: 33, lvl: 1},{id: 34, lvl: 3}]}",
        );
        w.chat(1, "/give human dirt 1 0");
        assert_eq!(w.players[1].inventory[0].item, "diamond_pickaxe");
        assert_eq!(w.players[1].inventory[1].item, "dirt");
        assert_eq!(
            w.players[1].chat,
            [
                "Given [Diamond Pickaxe] * 1 to human",
                "Given [Dirt] * 1 to human"
            ]
        );
        w.chat(1, "/gamemode 0");
        w.chat(1, "/gamerule sendCommandFeedback false");
        assert_eq!(w.players[1].mode, GameMode::Survival);
        assert_eq!(
            w.players[1].chat.last().unwrap(),
            "Your game mode has been updated to Survival Mode"
        );
        w.chat(0, "/give assistant planks 3");
        w.chat(0, "/clear @p planks 0 1");
        assert_eq!(w.players[0].inventory[0].size, 2);
        assert!(w.players[0].chat.is_empty());
        w.chat(0, "hello");
        assert_eq!(w.players[1].chat.last().unwrap(), "<assistant> hello");
        w.chat(0, "/nonsense");
        assert!(
            w.players[0]
                .chat
                .last()
                .unwrap()
                .starts_with("Unknown command")
        );
    }

    #[test]
    fn fill_and_clone_repair_and_copy_the_palette() {
        let mut w = world();
        w.set_block([3, 0, 3], McBlock::Air);
        w.chat(0, "/fill 0 0 0 10 0 9 bedrock");
        assert_eq!(w.block([3, 0, 3]), McBlock::Bedrock);
        w.chat(0, "/clone 22 0 0 22 9 9 10 0 0");
        assert_eq!(w.block([10, 5, 0]), McBlock::Wool);
        w.chat(0, "/fill -1 2 -1 -1 10 10 barrier");
        assert_eq!(w.block([-1, 10, 10]), McBlock::Barrier);
        w.chat(0, "/fill 0 0 0 100 100 100 stone");
        assert!(
            w.players[0]
                .chat
                .last()
                .unwrap()
                .starts_with("Too many blocks")
        );
    }
}
