//! What mbag's patch series for the mod (`mod-patch/`, see its README) adds to
//! the wire: a version string and block changes that name the player who made
//! them.
//!
//! A patched mod answers the control request `MALMO_MBAG_VERSION` with
//! `MALMOMBAGVERSION:<version>` (the stock mod closes the connection without a
//! reply), adds `"mbag_mod_version":"<version>"` to every player's observation,
//! and adds `"block_changes":[…]` whenever the server made block changes since
//! that observer's last list. Everything else on the wire is unchanged, so
//! MalmoPython and the reference still work with a patched mod.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::block::Block;

/// The version string of the patch series in `mod-patch/` (patch 0001).
pub const PATCHED_MOD_VERSION: &str = "0.38.0+mbag.1";

/// The observation key of the version string.
pub const VERSION_KEY: &str = "mbag_mod_version";

/// The observation key of the block changes.
pub const BLOCK_CHANGES_KEY: &str = "block_changes";

/// The patch series from which block changes are reported.
pub const BLOCK_CHANGES_SINCE_SERIES: u32 = 1;

/// Which mod a Minecraft runs: the stock MBAG fork or the fork with mbag's patches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModFlavour {
    /// The MBAG fork as shipped in `mbag-malmo==0.38.0.0`: no version string, no
    /// block changes; attribution is inferred from observations.
    #[default]
    Stock,
    /// The fork with `mod-patch/` applied ([`PATCHED_MOD_VERSION`]).
    Patched,
}

/// A patched mod's version string, e.g. `0.38.0+mbag.1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchedVersion {
    /// The Malmo protocol version (`0.38.0`).
    pub malmo: String,
    /// The patch series revision.
    pub series: u32,
}

impl PatchedVersion {
    /// Parses `<malmo>+mbag.<series>`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (malmo, series) = text.split_once("+mbag.")?;
        Some(Self {
            malmo: malmo.to_owned(),
            series: series.parse().ok()?,
        })
    }

    /// Whether this mod reports block changes that the daemon can read.
    pub fn has_block_changes(&self) -> bool {
        self.malmo == crate::MALMO_VERSION && self.series >= BLOCK_CHANGES_SINCE_SERIES
    }
}

impl fmt::Display for PatchedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+mbag.{}", self.malmo, self.series)
    }
}

/// What a player did to a block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum BlockAction {
    /// `place`.
    Place,
    /// `break`.
    Break,
    /// An action of a later patch series, by its name.
    Other(String),
}

impl From<String> for BlockAction {
    fn from(name: String) -> Self {
        match name.as_str() {
            "place" => Self::Place,
            "break" => Self::Break,
            _ => Self::Other(name),
        }
    }
}

impl From<BlockAction> for String {
    fn from(action: BlockAction) -> Self {
        match action {
            BlockAction::Place => "place".into(),
            BlockAction::Break => "break".into(),
            BlockAction::Other(name) => name,
        }
    }
}

/// One block change as the patched mod reports it: who placed or broke which
/// block where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireChange", into = "WireChange")]
pub struct BlockChange {
    /// Position in the server's log (per Minecraft process, counting from 1); the
    /// same change reaches every observer with the same `seq`, and a gap means
    /// changes were lost.
    pub seq: u64,
    /// The server's total world time when it was made (ticks).
    pub tick: i64,
    /// The name of the player who made it.
    pub player: String,
    /// Place or break.
    pub action: BlockAction,
    /// The cell, in world coordinates.
    pub cell: [i32; 3],
    /// The block placed, or the block broken, named as grids name blocks.
    pub block: String,
    /// Keys of later patch series, kept so observations round-trip.
    pub extra: Map<String, Value>,
}

impl BlockChange {
    /// The block as one of MBAG's block types, if it is one.
    pub fn mbag_block(&self) -> Option<Block> {
        Block::from_observed_name(&self.block)
    }
}

/// The JSON shape of a [`BlockChange`].
#[derive(Serialize, Deserialize)]
struct WireChange {
    seq: u64,
    tick: i64,
    player: String,
    action: BlockAction,
    x: i32,
    y: i32,
    z: i32,
    #[serde(rename = "type")]
    block: String,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl From<WireChange> for BlockChange {
    fn from(w: WireChange) -> Self {
        Self {
            seq: w.seq,
            tick: w.tick,
            player: w.player,
            action: w.action,
            cell: [w.x, w.y, w.z],
            block: w.block,
            extra: w.extra,
        }
    }
}

impl From<BlockChange> for WireChange {
    fn from(c: BlockChange) -> Self {
        let [x, y, z] = c.cell;
        Self {
            seq: c.seq,
            tick: c.tick,
            player: c.player,
            action: c.action,
            x,
            y,
            z,
            block: c.block,
            extra: c.extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_say_what_they_carry() {
        let v = PatchedVersion::parse(PATCHED_MOD_VERSION).unwrap();
        assert_eq!((v.malmo.as_str(), v.series), ("0.38.0", 1));
        assert!(v.has_block_changes());
        assert_eq!(v.to_string(), PATCHED_MOD_VERSION);
        assert!(
            !PatchedVersion::parse("0.37.0+mbag.3")
                .unwrap()
                .has_block_changes()
        );
        assert_eq!(PatchedVersion::parse("0.38.0"), None);
        assert_eq!(PatchedVersion::parse("0.38.0+mbag.x"), None);
    }

    #[test]
    fn block_changes_round_trip_with_unknown_actions_and_keys() {
        let text = r#"[{"seq":7,"tick":12345,"player":"human","action":"place","x":3,"y":2,"z":-1,"type":"planks"},{"seq":8,"tick":12346,"player":"assistant","action":"replace","x":0,"y":1,"z":0,"type":"grass","facing":"up"}]"#;
        let changes: Vec<BlockChange> = serde_json::from_str(text).unwrap();
        assert_eq!(changes[0].action, BlockAction::Place);
        assert_eq!(changes[0].cell, [3, 2, -1]);
        assert_eq!(changes[0].mbag_block(), Some(Block::Planks));
        assert_eq!(changes[1].action, BlockAction::Other("replace".into()));
        assert_eq!(changes[1].mbag_block(), Some(Block::Dirt));
        let back = serde_json::to_value(&changes).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }
}
