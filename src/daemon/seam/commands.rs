//! Assistant actions and mission set-up as Malmo commands (MBAG_INTEGRATION.md §5),
//! exactly as the reference sends them (`captures/agenthost_vs_fakemod_2p.txt`).
//!
//! Everything here returns [`Instruction`]s: a command for one agent, or a pause the
//! reference takes between commands. The reference also sleeps 10 ms after every
//! command (`send_command`); that spacing is the caller's and is not listed.

use std::time::Duration;

use malmo_bridge::block::Block;
use malmo_bridge::command::{Command, Number};
use serde_json::Value;

use crate::sim::action::ActionType;
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::{PlayerPos, WorldSize};

/// One step of a command sequence.
#[derive(Clone, Debug, PartialEq)]
pub enum Instruction {
    /// Send `command` through agent `agent` (a player index, or the spectator's
    /// index `num_players`).
    Send {
        /// The agent index.
        agent: usize,
        /// The command.
        command: Command,
    },
    /// Wait before the next instruction.
    Sleep(Duration),
}

fn send(agent: usize, command: Command) -> Instruction {
    Instruction::Send { agent, command }
}

fn sleep_ms(ms: u64) -> Instruction {
    Instruction::Sleep(Duration::from_millis(ms))
}

fn chat(text: impl Into<String>) -> Command {
    Command::Chat(text.into())
}

/// A command-file item spec that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ItemError {
    /// `give_items` holds something that is not `{"id": ..., "count": ..., ...}`.
    #[error("give_items entry {0} is not an item with a string id and an integer count")]
    Malformed(String),
}

/// One enchantment of an item to give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enchantment {
    /// The enchantment id (33 silk touch, 34 unbreaking).
    pub id: i64,
    /// Its level (the reference's default is 32767).
    pub level: i64,
}

/// An item a player must always have (`give_items`, or a block with infinite
/// blocks), given with `/give` (§5.1, §5.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The Minecraft item id (`diamond_pickaxe`, `planks`, ...).
    pub id: String,
    /// How many.
    pub count: i64,
    /// Enchantments, in order.
    pub enchantments: Vec<Enchantment>,
}

impl Item {
    /// Reads one `give_items` entry of the reference's config.
    pub fn from_json(value: &Value) -> Result<Self, ItemError> {
        let bad = || ItemError::Malformed(value.to_string());
        let id = value.get("id").and_then(Value::as_str).ok_or_else(bad)?;
        let count = value.get("count").and_then(Value::as_i64).ok_or_else(bad)?;
        let enchantments = match value.get("enchantments") {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|e| {
                    Ok(Enchantment {
                        id: e.get("id").and_then(Value::as_i64).ok_or_else(bad)?,
                        level: e.get("level").and_then(Value::as_i64).unwrap_or(32767),
                    })
                })
                .collect::<Result<_, ItemError>>()?,
        };
        Ok(Self {
            id: id.to_owned(),
            count,
            enchantments,
        })
    }

    /// One block of a type, as given to humans with infinite blocks.
    pub fn block(block: Block) -> Self {
        Self {
            id: block.name().to_owned(),
            count: 1,
            enchantments: Vec::new(),
        }
    }
}

/// The Minecraft name of player `p`: `player_name` or `player_{p}`, cut to 16
/// characters (Minecraft's limit).
pub fn player_name(config: &Config, p: usize) -> String {
    let name = config.players[p]
        .player_name
        .clone()
        .unwrap_or_else(|| format!("player_{p}"));
    name.chars().take(16).collect()
}

/// `/give <name> <id> <count> 0[ {ench: [...]}]` (`_get_give_command`).
pub fn give_item(name: &str, item: &Item) -> Command {
    let mut text = format!("/give {name} {} {} 0", item.id, item.count);
    if !item.enchantments.is_empty() {
        let list: Vec<String> = item
            .enchantments
            .iter()
            .map(|e| format!("{{id: {}, lvl: {}}}", e.id, e.level))
            .collect();
        text.push_str(&format!(" {{ench: [{}]}}", list.join(",")));
    }
    chat(text)
}

/// What player `p` must always have (§5.3): `give_items`, then for humans with
/// infinite blocks one of each placeable block.
pub fn always_have(config: &Config, p: usize) -> Result<Vec<Item>, ItemError> {
    let player = &config.players[p];
    let mut items = player
        .give_items
        .iter()
        .map(Item::from_json)
        .collect::<Result<Vec<_>, _>>()?;
    if config.abilities.inf_blocks && player.is_human {
        items.extend(Block::PLACEABLE.into_iter().map(Item::block));
    }
    Ok(items)
}

/// `tp x y z` for a position the simulator computed by moves from a start
/// position: the reference keeps y as a Python int there (`tp 0.5 2 0.5`), so an
/// integral y prints without `.0`, while x and z print as floats.
pub fn teleport(pos: PlayerPos) -> Command {
    let y = if pos.y.fract() == 0.0 && pos.y.abs() < 1e15 {
        Number::Int(pos.y as i64)
    } else {
        Number::Float(pos.y)
    };
    Command::Teleport {
        x: Number::Float(pos.x),
        y,
        z: Number::Float(pos.z),
    }
}

/// `tp x y z` with every coordinate a float (viewpoints chosen by the search, used
/// with teleportation).
pub fn teleport_float(pos: [f64; 3]) -> Command {
    Command::Teleport {
        x: Number::Float(pos[0]),
        y: Number::Float(pos[1]),
        z: Number::Float(pos[2]),
    }
}

/// Mission set-up (§5.1, `_setup_malmo_mission` and `copy_palette_from_goal`),
/// from the moment the mission has started: flight for AI players, teleports to the
/// start positions, the always-have items, game modes, command feedback off, and
/// the palette clone when blocks are finite. The reference then starts its threads
/// and sleeps `action_delay`, which is the caller's.
pub fn setup(config: &Config, starts: &[PlayerPos]) -> Result<Vec<Instruction>, ItemError> {
    let mut out = vec![sleep_ms(1000)];
    for (p, &start) in starts.iter().enumerate() {
        if !config.players[p].is_human {
            // A double tap on jump starts creative flight.
            for _ in 0..2 {
                out.extend([
                    send(p, Command::Jump(true)),
                    sleep_ms(100),
                    send(p, Command::Jump(false)),
                    sleep_ms(100),
                ]);
            }
        }
        out.extend([send(p, teleport(start)), sleep_ms(100)]);
        let name = player_name(config, p);
        for item in always_have(config, p)? {
            out.extend([send(p, give_item(&name, &item)), sleep_ms(200)]);
        }
    }
    for p in 0..starts.len() {
        if config.players[p].is_human {
            out.push(send(p, chat("/gamemode 0")));
        }
        out.push(send(p, chat("/gamerule sendCommandFeedback false")));
    }
    out.push(sleep_ms(1000));
    if !config.abilities.inf_blocks {
        out.extend(copy_palette(config.world_size));
    }
    Ok(out)
}

/// `/clone` of the goal's palette column into the build area, through player 0
/// (`copy_palette_from_goal`).
pub fn copy_palette(size: WorldSize) -> Vec<Instruction> {
    let (w, h, d) = (size.width, size.height, size.depth);
    let palette_x = w - 1;
    let goal_x = palette_x + w + 1;
    vec![
        send(
            0,
            chat(format!(
                "/clone {goal_x} 0 0 {goal_x} {} {} {palette_x} 0 0",
                h - 1,
                d - 1
            )),
        ),
        sleep_ms(100),
    ]
}

/// The per-step goal percentage title (§5.2), for every agent that sees the goal;
/// `spectator` is the spectator's agent index, if there is one.
pub fn goal_percentage(
    config: &Config,
    percentage: f64,
    spectator: Option<usize>,
) -> Vec<Instruction> {
    let percent = (percentage * 100.0) as i64;
    let text = format!(
        "/title @p actionbar {{\"text\": \"Goal completion: {percent}%\", \"fadeIn\": \"0s\", \"stay\": \"2s\", \"fadeOut\": \"0s\"}}"
    );
    (0..config.num_players)
        .filter(|&p| config.players[p].goal_visible)
        .chain(spectator)
        .map(|agent| send(agent, chat(text.clone())))
        .collect()
}

/// Where the AI places from: the hotbar slot to press, and the swaps around `use`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceSource {
    /// Infinite blocks: block `b` lives in slot `b` and is swapped into slot 0 and
    /// back (`swapInventoryItems 0 b`).
    Infinite,
    /// Finite blocks, first slot holding the block is in the hotbar (0..=8).
    Hotbar(u8),
    /// Finite blocks, first slot `slot` (>= 9) is swapped into hotbar slot `hotbar`
    /// (the reference picks `hotbar` at random).
    Swap {
        /// Inventory slot holding the block.
        slot: u8,
        /// Hotbar slot it is swapped into.
        hotbar: u8,
    },
}

/// An AI place or break as the simulator decided it (`MalmoPlaceBreakAIAction`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaceBreak {
    /// Place or break.
    pub kind: ActionType,
    /// The block placed (ignored for breaks).
    pub block: BlockId,
    /// Yaw from [`crate::daemon::aim`].
    pub yaw: f64,
    /// Pitch from [`crate::daemon::aim`].
    pub pitch: f64,
    /// With teleportation: the feet position to teleport to first.
    pub teleport_to: Option<[f64; 3]>,
}

/// The commands of an AI place (§5 "Place block b at loc", steps 2-6) or break
/// ("Break at loc", with the floor and wall repair and the bedrock/barrier
/// clearing). Step 1 (re-organising the inventory with infinite blocks) depends on
/// observations and is [`super::upkeep::ai_inventory_repairs`].
pub fn place_break(
    config: &Config,
    agent: usize,
    action: &PlaceBreak,
    source: PlaceSource,
) -> Vec<Instruction> {
    let mut out = Vec::new();
    if let Some(pos) = action.teleport_to {
        out.push(send(agent, teleport_float(pos)));
    }
    out.push(send(agent, Command::SetYaw(Number::Float(action.yaw))));
    out.push(send(agent, Command::SetPitch(Number::Float(action.pitch))));
    let block = Block::from_mbag_id(action.block.0).unwrap_or(Block::Air);
    if action.kind == ActionType::PlaceBlock {
        let hotbar = match source {
            PlaceSource::Infinite => {
                out.push(send(agent, Command::SwapInventoryItems(0, action.block.0)));
                0
            }
            PlaceSource::Hotbar(slot) => slot,
            PlaceSource::Swap { slot, hotbar } => {
                out.push(send(agent, Command::SwapInventoryItems(hotbar, slot)));
                hotbar
            }
        };
        out.extend([
            send(
                agent,
                Command::Hotbar {
                    key: hotbar + 1,
                    pressed: true,
                },
            ),
            send(
                agent,
                Command::Hotbar {
                    key: hotbar + 1,
                    pressed: false,
                },
            ),
            sleep_ms(100),
            send(agent, Command::Use),
            sleep_ms(100),
        ]);
        if source == PlaceSource::Infinite {
            out.push(send(agent, Command::SwapInventoryItems(0, action.block.0)));
        } else {
            // Creative mode does not consume the block.
            out.push(send(agent, chat(format!("/clear @p {} 0 1", block.name()))));
        }
    } else {
        out.extend([sleep_ms(100), send(agent, Command::Attack)]);
        out.extend(boundaries(config, agent));
        out.extend([
            send(agent, chat("/clear @p barrier")),
            send(agent, chat("/clear @p bedrock")),
        ]);
    }
    out
}

/// The floor and, with `restrict_players`, the five walls of §2, redrawn with
/// `/fill` (`_ensure_env_boundaries`).
pub fn boundaries(config: &Config, agent: usize) -> Vec<Instruction> {
    let size = config.world_size;
    let (w, h, d) = (size.width as i64, size.height as i64, size.depth as i64);
    let mut texts = vec![format!("/fill 0 0 0 {} 0 {} bedrock", w - 1, d - 1)];
    if config.malmo.restrict_players {
        texts.extend([
            format!("/fill {w} 2 -1 {w} {h} {d} bedrock"),
            format!("/fill -1 2 -1 -1 {h} {d} barrier"),
            format!("/fill -1 2 -1 {w} {h} -1 barrier"),
            format!("/fill -1 2 {d} {w} {h} {d} barrier"),
            format!("/fill -1 {} -1 {w} {} {d} barrier", h + 1, h + 1),
        ]);
    }
    texts.into_iter().map(|t| send(agent, chat(t))).collect()
}

/// An AI move without teleportation: `tp` to the new position (the AI flies).
pub fn move_to(agent: usize, new_position: PlayerPos) -> Vec<Instruction> {
    vec![send(agent, teleport(new_position))]
}

/// An AI give (`_handle_ai_give_action`): `/clear` through the giver, then
/// `/give` through the recipient.
pub fn give(
    config: &Config,
    giver: usize,
    recipient: usize,
    block: BlockId,
    count: i32,
) -> Vec<Instruction> {
    let name = block.name().unwrap_or("air");
    vec![
        send(
            giver,
            chat(format!(
                "/clear {} {name} 0 {count}",
                player_name(config, giver)
            )),
        ),
        send(
            recipient,
            chat(format!(
                "/give {} {name} {count}",
                player_name(config, recipient)
            )),
        ),
    ]
}

/// The hotbar/swap choice for a finite-blocks place from the AI's observed slots:
/// the first slot holding the block; `random_hotbar` is used only when that slot is
/// outside the hotbar. `None` when no slot holds it.
pub fn place_source(
    slots: &[(BlockId, i32)],
    block: BlockId,
    random_hotbar: u8,
) -> Option<PlaceSource> {
    let slot = slots.iter().position(|&(b, c)| b == block && c > 0)?;
    Some(if slot < 9 {
        PlaceSource::Hotbar(slot as u8)
    } else {
        PlaceSource::Swap {
            slot: slot as u8,
            hotbar: random_hotbar,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The configuration of `captures/agenthost_vs_fakemod_2p.txt`: an AI player 0
    /// and a human player 1 named `human`, 11x10x10, infinite blocks.
    fn config(inf_blocks: bool) -> Config {
        let ench = json!([{"id": 33, "level": 1}, {"id": 34, "level": 3}]);
        Config::from_json(&json!({
            "num_players": 2,
            "world_size": [11, 10, 10],
            "players": [
                {"is_human": false},
                {"is_human": true, "player_name": "human", "give_items": [
                    {"id": "diamond_pickaxe", "count": 1, "enchantments": ench},
                    {"id": "diamond_axe", "count": 1, "enchantments": ench},
                    {"id": "diamond_shovel", "count": 1, "enchantments": ench},
                    {"id": "shears", "count": 1, "enchantments": []},
                ]},
            ],
            "malmo": {"restrict_players": true},
            "abilities": {"teleportation": false, "flying": true, "inf_blocks": inf_blocks},
        }))
        .unwrap()
    }

    /// The lines sent, per agent, with the pauses dropped.
    fn lines(instructions: &[Instruction]) -> Vec<(usize, String)> {
        instructions
            .iter()
            .filter_map(|i| match i {
                Instruction::Send { agent, command } => Some((*agent, command.to_string())),
                Instruction::Sleep(_) => None,
            })
            .collect()
    }

    fn sent(agent: usize, texts: &[&str]) -> Vec<(usize, String)> {
        texts.iter().map(|t| (agent, (*t).to_owned())).collect()
    }

    #[test]
    fn setup_matches_the_capture() {
        let starts = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(1.5, 2.0, 0.5)];
        let got = setup(&config(true), &starts).unwrap();
        let ench = "{ench: [{id: 33, lvl: 1},{id: 34, lvl: 3}]}";
        let mut expected = sent(0, &["jump 1", "jump 0", "jump 1", "jump 0", "tp 0.5 2 0.5"]);
        expected.extend(sent(1, &["tp 1.5 2 0.5"]));
        for tool in ["diamond_pickaxe", "diamond_axe", "diamond_shovel"] {
            expected.push((1, format!("chat /give human {tool} 1 0 {ench}")));
        }
        expected.push((1, "chat /give human shears 1 0".into()));
        for block in [
            "dirt",
            "cobblestone",
            "glass",
            "log",
            "planks",
            "stone",
            "stonebrick",
            "wool",
        ] {
            expected.push((1, format!("chat /give human {block} 1 0")));
        }
        expected.extend(sent(0, &["chat /gamerule sendCommandFeedback false"]));
        expected.extend(sent(
            1,
            &[
                "chat /gamemode 0",
                "chat /gamerule sendCommandFeedback false",
            ],
        ));
        assert_eq!(lines(&got), expected);
        // The reference's pauses: 1 s, the jump taps, 0.1 s after tp, 0.2 s per give.
        assert_eq!(got[0], Instruction::Sleep(Duration::from_secs(1)));
        assert_eq!(
            got.last(),
            Some(&Instruction::Sleep(Duration::from_secs(1)))
        );
    }

    #[test]
    fn finite_blocks_setup_ends_with_the_palette_clone() {
        let starts = [PlayerPos::new(0.5, 2.0, 0.5), PlayerPos::new(1.5, 2.0, 0.5)];
        let got = lines(&setup(&config(false), &starts).unwrap());
        assert_eq!(
            got.last().unwrap(),
            &(0, "chat /clone 22 0 0 22 9 9 10 0 0".to_owned())
        );
        // No blocks are given with finite blocks.
        assert!(!got.iter().any(|(_, l)| l.contains("/give human dirt")));
    }

    #[test]
    fn place_and_break_match_the_capture() {
        let cfg = config(true);
        let place = PlaceBreak {
            kind: ActionType::PlaceBlock,
            block: BlockId(6),
            yaw: 35.0,
            pitch: 40.0,
            teleport_to: None,
        };
        let got = place_break(&cfg, 0, &place, PlaceSource::Infinite);
        assert_eq!(
            lines(&got),
            sent(
                0,
                &[
                    "setYaw 35.0",
                    "setPitch 40.0",
                    "swapInventoryItems 0 6",
                    "hotbar.1 1",
                    "hotbar.1 0",
                    "use 1",
                    "swapInventoryItems 0 6",
                ]
            )
        );
        let brk = PlaceBreak {
            kind: ActionType::BreakBlock,
            ..place
        };
        assert_eq!(
            lines(&place_break(&cfg, 0, &brk, PlaceSource::Infinite)),
            sent(
                0,
                &[
                    "setYaw 35.0",
                    "setPitch 40.0",
                    "attack 1",
                    "chat /fill 0 0 0 10 0 9 bedrock",
                    "chat /fill 11 2 -1 11 10 10 bedrock",
                    "chat /fill -1 2 -1 -1 10 10 barrier",
                    "chat /fill -1 2 -1 11 10 -1 barrier",
                    "chat /fill -1 2 10 11 10 10 barrier",
                    "chat /fill -1 11 -1 11 11 10 barrier",
                    "chat /clear @p barrier",
                    "chat /clear @p bedrock",
                ]
            )
        );
    }

    #[test]
    fn finite_place_uses_the_hotbar_and_clears_the_block() {
        let cfg = config(false);
        let place = PlaceBreak {
            kind: ActionType::PlaceBlock,
            block: BlockId(3),
            yaw: -90.0,
            pitch: 12.5,
            teleport_to: Some([2.5, 2.9999999999999996, 1.5]),
        };
        let mut slots = vec![(BlockId::AIR, 0); 36];
        slots[12] = (BlockId(3), 4);
        let source = place_source(&slots, BlockId(3), 4).unwrap();
        assert_eq!(
            source,
            PlaceSource::Swap {
                slot: 12,
                hotbar: 4
            }
        );
        assert_eq!(
            lines(&place_break(&cfg, 0, &place, source)),
            sent(
                0,
                &[
                    "tp 2.5 2.9999999999999996 1.5",
                    "setYaw -90.0",
                    "setPitch 12.5",
                    "swapInventoryItems 4 12",
                    "hotbar.5 1",
                    "hotbar.5 0",
                    "use 1",
                    "chat /clear @p cobblestone 0 1",
                ]
            )
        );
        slots[2] = (BlockId(3), 1);
        assert_eq!(
            place_source(&slots, BlockId(3), 4),
            Some(PlaceSource::Hotbar(2))
        );
        assert_eq!(place_source(&slots, BlockId(9), 4), None);
    }

    #[test]
    fn move_give_and_title() {
        let cfg = config(false);
        assert_eq!(
            lines(&move_to(0, PlayerPos::new(1.5, 2.0, 0.5))),
            sent(0, &["tp 1.5 2 0.5"])
        );
        assert_eq!(
            lines(&give(&cfg, 0, 1, BlockId(6), 5)),
            vec![
                (0, "chat /clear player_0 planks 0 5".to_owned()),
                (1, "chat /give human planks 5".to_owned()),
            ]
        );
        assert_eq!(
            lines(&goal_percentage(&cfg, 0.255, Some(2))),
            vec![
                (
                    0,
                    r#"chat /title @p actionbar {"text": "Goal completion: 25%", "fadeIn": "0s", "stay": "2s", "fadeOut": "0s"}"#
                        .to_owned()
                ),
                (
                    1,
                    r#"chat /title @p actionbar {"text": "Goal completion: 25%", "fadeIn": "0s", "stay": "2s", "fadeOut": "0s"}"#
                        .to_owned()
                ),
                (
                    2,
                    r#"chat /title @p actionbar {"text": "Goal completion: 25%", "fadeIn": "0s", "stay": "2s", "fadeOut": "0s"}"#
                        .to_owned()
                ),
            ]
        );
    }

    #[test]
    fn names_are_cut_and_levels_default() {
        let mut cfg = config(true);
        cfg.players[0].player_name = Some("a_very_long_player_name".into());
        assert_eq!(player_name(&cfg, 0), "a_very_long_play");
        let item =
            Item::from_json(&json!({"id": "shears", "count": 1, "enchantments": [{"id": 34}]}))
                .unwrap();
        assert_eq!(
            give_item("x", &item).to_string(),
            "chat /give x shears 1 0 {ench: [{id: 34, lvl: 32767}]}"
        );
        assert!(Item::from_json(&json!({"count": 1})).is_err());
    }
}
