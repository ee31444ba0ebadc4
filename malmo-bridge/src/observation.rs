//! Observations the mod sends on the obs port: one gson-written JSON object per
//! client tick (PROTOCOL.md §4.2).
//!
//! The fields MBAG relies on are typed; every other key (grids, inventory slots,
//! keys of future mod versions) is kept as JSON in [`Observation::extra`], so an
//! observation serialises back to exactly the value it was parsed from.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mod_patch::BlockChange;

/// One observation. Absent keys are `None`; the mod omits producers' keys it has
/// nothing for (e.g. `LineOfSight` when nothing is within 50 blocks).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// The player name (`ObservationFromFullStats`).
    #[serde(rename = "Name", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Feet x position.
    #[serde(rename = "XPos", default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    /// Feet y position.
    #[serde(rename = "YPos", default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    /// Feet z position.
    #[serde(rename = "ZPos", default, skip_serializing_if = "Option::is_none")]
    pub z: Option<f64>,
    /// Yaw in degrees.
    #[serde(rename = "Yaw", default, skip_serializing_if = "Option::is_none")]
    pub yaw: Option<f64>,
    /// Pitch in degrees.
    #[serde(rename = "Pitch", default, skip_serializing_if = "Option::is_none")]
    pub pitch: Option<f64>,
    /// The selected hotbar slot, 0..=8.
    #[serde(
        rename = "currentItemIndex",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub current_item_index: Option<i64>,
    /// What the crosshair points at, if anything within 50 blocks.
    #[serde(
        rename = "LineOfSight",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub line_of_sight: Option<LineOfSight>,
    /// Commands the mod executed since the last observation, as echoed.
    #[serde(
        rename = "CommandsSinceLastObservation",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub commands: Option<Vec<String>>,
    /// Input events of a human player (mouse, keys), or the block events of older
    /// recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Value>>,
    /// Received chat lines.
    #[serde(rename = "Chat", default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<Vec<String>>,
    /// The patched mod's version string (`mod-patch/` 0001; absent from the stock
    /// mod).
    #[serde(
        rename = "mbag_mod_version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub mod_version: Option<String>,
    /// Block changes since this observer's last list, naming the player
    /// (`mod-patch/` 0003; absent from the stock mod and when there are none).
    #[serde(
        rename = "block_changes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub block_changes: Option<Vec<BlockChange>>,
    /// Every other key: grids (`"<name>": [block names]`), `InventorySlot_*`,
    /// statistics, tick rates.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The block or entity under the crosshair.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct LineOfSight {
    /// `block`, `entity` or `item`.
    #[serde(rename = "hitType")]
    pub hit_type: String,
    /// Hit point x.
    pub x: f64,
    /// Hit point y.
    pub y: f64,
    /// Hit point z.
    pub z: f64,
    /// The block or entity type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Within the player's reach.
    #[serde(rename = "inRange")]
    pub in_range: bool,
    /// Distance from the eye.
    pub distance: f64,
    /// Other keys (colour, variant, facing, `prop_*`, yaw, pitch, stackSize).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An observation that is not a JSON object of the expected shape.
#[derive(Debug, thiserror::Error)]
#[error("malformed observation: {0}")]
pub struct ObservationError(#[from] serde_json::Error);

/// One inventory slot as the flat `InventorySlot_<i>_*` keys describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventorySlot {
    /// Item name (`air` when empty).
    pub item: String,
    /// Stack size.
    pub size: i64,
}

impl Observation {
    /// Parses one observation frame's payload.
    pub fn parse(payload: &[u8]) -> Result<Self, ObservationError> {
        Ok(serde_json::from_slice(payload)?)
    }

    /// A grid by its mission name (e.g. `world`, `goal`): block names, y outermost,
    /// then z, then x innermost.
    pub fn grid(&self, name: &str) -> Option<Vec<&str>> {
        self.extra
            .get(name)?
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect()
    }

    /// Inventory slot `index` (0-8 hotbar, 9-35 main, 36-39 armour, 40 off-hand),
    /// if the observation has it.
    pub fn inventory_slot(&self, index: usize) -> Option<InventorySlot> {
        let item = self
            .extra
            .get(&format!("InventorySlot_{index}_item"))?
            .as_str()?;
        let size = self
            .extra
            .get(&format!("InventorySlot_{index}_size"))?
            .as_i64()?;
        Some(InventorySlot {
            item: item.to_owned(),
            size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_human_observation_parses_and_round_trips() {
        let text = r#"{"world":["bedrock","dirt","air"],"InventorySlot_0_size":1,"InventorySlot_0_item":"dirt","currentItemIndex":0,"Name":"player_0","XPos":0.5,"YPos":2.0,"ZPos":0.5,"Pitch":0.0,"Yaw":270.0,"LineOfSight":{"hitType":"block","x":6.0,"y":3.62,"z":0.5,"type":"bedrock","inRange":false,"distance":5.5},"serverTicksPerSecond":5.91814E-9,"CommandsSinceLastObservation":["tp 0.5 2 0.5"]}"#;
        let obs = Observation::parse(text.as_bytes()).unwrap();
        assert_eq!(obs.grid("world").unwrap(), ["bedrock", "dirt", "air"]);
        assert_eq!(obs.inventory_slot(0).unwrap().item, "dirt");
        assert_eq!(obs.yaw, Some(270.0));
        assert_eq!(obs.line_of_sight.as_ref().unwrap().kind, "bedrock");
        let original: Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&obs).unwrap(), original);
        assert!(Observation::parse(b"[1, 2]").is_err());
    }
}
