//! The ten MBAG block types and their Minecraft names (MBAG_INTEGRATION.md §3).
//!
//! MBAG writes blocks into mission XML by its `ID2NAME` table and reads the mod's
//! grids and inventories by `NAME2ID`, which accepts two extra names: `barrier`
//! (the walls) reads as bedrock and `grass` (the flat world's top layer) as dirt.
//! Variants and colours are ignored both ways (`log` is oak, `wool` is white).

use std::fmt;
use std::str::FromStr;

/// One MBAG block type. The discriminant is the MBAG block id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Block {
    /// `air`, id 0.
    Air = 0,
    /// `bedrock`, id 1 (also read from `barrier`).
    Bedrock = 1,
    /// `dirt`, id 2 (also read from `grass`).
    Dirt = 2,
    /// `cobblestone`, id 3.
    Cobblestone = 3,
    /// `glass`, id 4.
    Glass = 4,
    /// `log` (oak), id 5.
    Log = 5,
    /// `planks` (oak), id 6.
    Planks = 6,
    /// `stone`, id 7.
    Stone = 7,
    /// `stonebrick`, id 8.
    StoneBrick = 8,
    /// `wool` (white), id 9.
    Wool = 9,
}

/// A block name that is not in MBAG's `ID2NAME` table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an MBAG block name: {0:?}")]
pub struct UnknownBlockName(pub String);

impl Block {
    /// Every block, in id order.
    pub const ALL: [Block; 10] = [
        Block::Air,
        Block::Bedrock,
        Block::Dirt,
        Block::Cobblestone,
        Block::Glass,
        Block::Log,
        Block::Planks,
        Block::Stone,
        Block::StoneBrick,
        Block::Wool,
    ];

    /// The blocks a player may place (ids 2 to 9), in id order: also the order of
    /// the palette column when blocks are limited.
    pub const PLACEABLE: [Block; 8] = [
        Block::Dirt,
        Block::Cobblestone,
        Block::Glass,
        Block::Log,
        Block::Planks,
        Block::Stone,
        Block::StoneBrick,
        Block::Wool,
    ];

    /// The MBAG block id.
    pub const fn mbag_id(self) -> u8 {
        self as u8
    }

    /// The block with this MBAG id (`auto` = 255 is internal to MBAG and has none).
    pub fn from_mbag_id(id: u8) -> Option<Block> {
        Self::ALL.get(usize::from(id)).copied()
    }

    /// The Minecraft name MBAG writes (`ID2NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            Block::Air => "air",
            Block::Bedrock => "bedrock",
            Block::Dirt => "dirt",
            Block::Cobblestone => "cobblestone",
            Block::Glass => "glass",
            Block::Log => "log",
            Block::Planks => "planks",
            Block::Stone => "stone",
            Block::StoneBrick => "stonebrick",
            Block::Wool => "wool",
        }
    }

    /// The block a name from the mod's grids or inventories stands for (`NAME2ID`):
    /// the `ID2NAME` names plus `barrier` (bedrock) and `grass` (dirt). Any other
    /// name is `None`; the reference crashes on it (MBAG_INTEGRATION.md §10).
    pub fn from_observed_name(name: &str) -> Option<Block> {
        // Spelled out rather than searched: this runs for every cell of every grid
        // of every observation.
        Some(match name {
            "air" => Block::Air,
            "bedrock" | "barrier" => Block::Bedrock,
            "dirt" | "grass" => Block::Dirt,
            "cobblestone" => Block::Cobblestone,
            "glass" => Block::Glass,
            "log" => Block::Log,
            "planks" => Block::Planks,
            "stone" => Block::Stone,
            "stonebrick" => Block::StoneBrick,
            "wool" => Block::Wool,
            _ => return None,
        })
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Block {
    type Err = UnknownBlockName;

    /// Parses an `ID2NAME` name exactly, the inverse of [`Block::name`]. Use
    /// [`Block::from_observed_name`] for what the mod reports.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| UnknownBlockName(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_round_trip() {
        for (id, block) in Block::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(block.mbag_id()), id);
            assert_eq!(Block::from_mbag_id(block.mbag_id()), Some(block));
            assert_eq!(block.name().parse(), Ok(block));
            assert_eq!(Block::from_observed_name(block.name()), Some(block));
        }
        assert_eq!(Block::from_mbag_id(10), None);
        assert_eq!(Block::from_mbag_id(255), None);
    }

    #[test]
    fn observed_names_fold_barrier_and_grass() {
        assert_eq!(Block::from_observed_name("barrier"), Some(Block::Bedrock));
        assert_eq!(Block::from_observed_name("grass"), Some(Block::Dirt));
        assert_eq!(Block::from_observed_name("tallgrass"), None);
        // Writing never produces the extra names, so parsing them strictly fails.
        assert!("grass".parse::<Block>().is_err());
    }
}
