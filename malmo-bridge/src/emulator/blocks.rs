//! The blocks and items of the emulated world, by their Minecraft names.
//!
//! MBAG's [`Block`] has ten types and folds `grass` into dirt and `barrier` into
//! bedrock; the mod reports them apart (`"grass"` in grids at y = 1, `"barrier"` in
//! the walls), so the world keeps the Minecraft types. Items are plain names
//! (`diamond_pickaxe`), with the stack limits and display names MBAG's set-up
//! commands need.

use crate::block::Block;

/// A block type of the emulated world, named as the mod names it in grids and rays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum McBlock {
    /// `air`.
    Air,
    /// `bedrock`: the floor at y = 0 and the wall before the goal copy.
    Bedrock,
    /// `barrier`: the invisible walls of `restrict_players`.
    Barrier,
    /// `grass`: the flat world's top layer at y = 1.
    Grass,
    /// `dirt`.
    Dirt,
    /// `cobblestone`.
    Cobblestone,
    /// `glass`.
    Glass,
    /// `log` (oak).
    Log,
    /// `planks` (oak).
    Planks,
    /// `stone`.
    Stone,
    /// `stonebrick`.
    StoneBrick,
    /// `wool` (white).
    Wool,
}

impl McBlock {
    const ALL: [McBlock; 12] = [
        Self::Air,
        Self::Bedrock,
        Self::Barrier,
        Self::Grass,
        Self::Dirt,
        Self::Cobblestone,
        Self::Glass,
        Self::Log,
        Self::Planks,
        Self::Stone,
        Self::StoneBrick,
        Self::Wool,
    ];

    /// The resource name without namespace, as grids and `LineOfSight` report it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Air => "air",
            Self::Bedrock => "bedrock",
            Self::Barrier => "barrier",
            Self::Grass => "grass",
            Self::Dirt => "dirt",
            Self::Cobblestone => "cobblestone",
            Self::Glass => "glass",
            Self::Log => "log",
            Self::Planks => "planks",
            Self::Stone => "stone",
            Self::StoneBrick => "stonebrick",
            Self::Wool => "wool",
        }
    }

    /// The block a command or item names (`minecraft:` prefix allowed).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.strip_prefix("minecraft:").unwrap_or(name);
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// How Minecraft draws an MBAG block from the mission XML.
    pub fn from_mbag(block: Block) -> Self {
        Self::from_name(block.name()).expect("every MBAG block name is a Minecraft block")
    }

    /// What breaking it in survival gives. The reference hands humans silk-touch
    /// tools, so blocks drop themselves, except grass, which drops dirt.
    pub fn drop(self) -> Option<Self> {
        match self {
            Self::Air | Self::Bedrock | Self::Barrier => None,
            Self::Grass => Some(Self::Dirt),
            other => Some(other),
        }
    }

    /// Whether a survival player can break it (bedrock and barrier are unbreakable).
    pub fn breakable_in_survival(self) -> bool {
        !matches!(self, Self::Air | Self::Bedrock | Self::Barrier)
    }

    /// Minecraft 1.11's block hardness (`Block.blockHardness`); `None` for
    /// blocks no survival player can break.
    pub fn hardness(self) -> Option<f32> {
        Some(match self {
            Self::Air | Self::Bedrock | Self::Barrier => return None,
            Self::Glass => 0.3,
            Self::Grass => 0.6,
            Self::Dirt => 0.5,
            Self::Wool => 0.8,
            Self::Stone | Self::StoneBrick => 1.5,
            Self::Cobblestone | Self::Log | Self::Planks => 2.0,
        })
    }

    /// Ticks a player in `mode` holds attack before the block breaks, counted
    /// after the tick of the press. Creative breaks on the press (0). In survival
    /// Minecraft adds `speed / hardness / 30` of damage per tick and breaks the
    /// block at 1; MBAG's people carry diamond tools (speed 8), and glass, which
    /// no tool speeds up, digs at speed 1.
    pub fn dig_ticks(self, mode: super::world::GameMode) -> Option<u32> {
        let hardness = self.hardness()?;
        if mode == super::world::GameMode::Creative {
            return Some(0);
        }
        let speed = if self == Self::Glass { 1.0 } else { 8.0 };
        let per_tick = speed / hardness / 30.0;
        // The tick that reaches 1 breaks the block; it is the last one counted.
        Some((1.0 / per_tick).ceil() as u32)
    }

    /// The extra `LineOfSight` keys the mod writes for this block type between
    /// `type` and `inRange`, as seen in the real recording (log, planks, stone,
    /// dirt, grass) and by Malmo's colour rule for wool.
    pub(crate) fn ray_properties(self) -> &'static [(&'static str, Prop)] {
        match self {
            Self::Grass => &[("prop_snowy", Prop::Bool(false))],
            Self::Dirt => &[
                ("prop_snowy", Prop::Bool(false)),
                ("prop_variant", Prop::Str("dirt")),
            ],
            Self::Log => &[("variant", Prop::Str("oak")), ("prop_axis", Prop::Str("y"))],
            Self::Planks => &[("variant", Prop::Str("oak"))],
            Self::Stone => &[("variant", Prop::Str("stone"))],
            Self::Wool => &[("colour", Prop::Str("WHITE"))],
            _ => &[],
        }
    }
}

/// A property value in a `LineOfSight` or inventory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prop {
    /// A JSON boolean.
    Bool(bool),
    /// A JSON string.
    Str(&'static str),
}

/// Items `/give` knows besides the blocks: the tools MBAG hands to humans.
const TOOLS: [(&str, &str); 4] = [
    ("diamond_pickaxe", "Diamond Pickaxe"),
    ("diamond_axe", "Diamond Axe"),
    ("diamond_shovel", "Diamond Shovel"),
    ("shears", "Shears"),
];

/// The item name of a `/give` or `/clear` argument, if the emulator knows it
/// (blocks of the world and MBAG's tools); `minecraft:` prefixes are dropped.
pub fn item_name(name: &str) -> Option<&'static str> {
    let name = name.strip_prefix("minecraft:").unwrap_or(name);
    if let Some(block) = McBlock::from_name(name).filter(|b| *b != McBlock::Air) {
        return Some(block.name());
    }
    TOOLS.iter().find(|(n, _)| *n == name).map(|(n, _)| *n)
}

/// How many of an item one slot holds: tools 1, blocks 64.
pub fn max_stack(item: &str) -> u32 {
    if TOOLS.iter().any(|(n, _)| *n == item) {
        1
    } else {
        64
    }
}

/// The English name in `/give` feedback (`Given [Diamond Pickaxe] * 1 to …`).
pub fn display_name(item: &str) -> &'static str {
    if let Some((_, display)) = TOOLS.iter().find(|(n, _)| *n == item) {
        return display;
    }
    match McBlock::from_name(item) {
        Some(McBlock::Bedrock) => "Bedrock",
        Some(McBlock::Barrier) => "Barrier",
        Some(McBlock::Grass) => "Grass Block",
        Some(McBlock::Dirt) => "Dirt",
        Some(McBlock::Cobblestone) => "Cobblestone",
        Some(McBlock::Glass) => "Glass",
        Some(McBlock::Log) => "Oak Wood",
        Some(McBlock::Planks) => "Oak Wood Planks",
        Some(McBlock::Stone) => "Stone",
        Some(McBlock::StoneBrick) => "Stone Bricks",
        Some(McBlock::Wool) => "White Wool",
        _ => "Air",
    }
}

/// The extra inventory keys (`InventorySlot_<i>_variant` / `_colour`) of an item,
/// written between `_size` and `_item` as the mod does.
pub(crate) fn item_properties(item: &str) -> &'static [(&'static str, &'static str)] {
    match McBlock::from_name(item) {
        Some(McBlock::Log | McBlock::Planks) => &[("variant", "oak")],
        Some(McBlock::Stone) => &[("variant", "stone")],
        Some(McBlock::Wool) => &[("colour", "WHITE")],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digging_takes_minecraft_ticks_in_survival_and_none_in_creative() {
        use crate::emulator::world::GameMode;
        assert_eq!(McBlock::Dirt.dig_ticks(GameMode::Survival), Some(2));
        assert_eq!(McBlock::Stone.dig_ticks(GameMode::Survival), Some(6));
        assert_eq!(McBlock::Glass.dig_ticks(GameMode::Survival), Some(9));
        assert_eq!(McBlock::Planks.dig_ticks(GameMode::Creative), Some(0));
        assert_eq!(McBlock::Bedrock.dig_ticks(GameMode::Creative), None);
    }

    #[test]
    fn names_round_trip_and_mbag_blocks_map() {
        for block in McBlock::ALL {
            assert_eq!(McBlock::from_name(block.name()), Some(block));
        }
        assert_eq!(McBlock::from_name("minecraft:grass"), Some(McBlock::Grass));
        for block in Block::ALL {
            assert_eq!(McBlock::from_mbag(block).name(), block.name());
        }
        assert_eq!(item_name("minecraft:diamond_axe"), Some("diamond_axe"));
        assert_eq!(item_name("air"), None);
        assert_eq!(max_stack("shears"), 1);
        assert_eq!(display_name("diamond_pickaxe"), "Diamond Pickaxe");
    }
}
