//! Observations decoded for the live loop: what the daemon reads from every frame
//! (about 20 per second per player), straight from the JSON bytes into block ids,
//! inventory slots and typed fields, without building a JSON tree.
//!
//! [`crate::observation::Observation`] keeps every key and serialises back
//! losslessly, which recordings need; this type keeps only what MBAG acts on and
//! is several times faster to read (`mbag bench bridge`).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::block::Block;
use crate::mod_patch::BlockChange;
use crate::observation::LineOfSight;

/// Inventory slots in the flat inventory: hotbar 0-8, main 9-35, armour 36-39,
/// off-hand 40.
pub const INVENTORY_SLOTS: usize = 41;

/// One inventory stack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stack {
    /// The item name (`air` when empty).
    pub item: String,
    /// How many.
    pub size: i64,
}

/// A grid of the observation, decoded: one entry per cell in the mod's order (y
/// outermost, then z, then x), `None` where the name is no MBAG block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedGrid {
    /// The grid's name in the mission (`world`, `goal`, ...).
    pub name: String,
    /// The cells.
    pub cells: Vec<Option<Block>>,
}

/// The parts of an observation MBAG acts on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodedObservation {
    /// The player name.
    pub name: Option<String>,
    /// Feet position.
    pub position: [Option<f64>; 3],
    /// Yaw in degrees.
    pub yaw: Option<f64>,
    /// Pitch in degrees.
    pub pitch: Option<f64>,
    /// The selected hotbar slot.
    pub current_item_index: Option<i64>,
    /// Every grid (array of block names) in the observation.
    pub grids: Vec<DecodedGrid>,
    /// The flat inventory, where reported.
    pub inventory: Vec<Option<Stack>>,
    /// The stack on the mouse cursor (MBAG fork; absent before June 2024).
    pub held: Option<Stack>,
    /// What the crosshair points at.
    pub line_of_sight: Option<LineOfSight>,
    /// Commands executed since the last observation, as echoed.
    pub commands: Vec<String>,
    /// A human's input events.
    pub events: Vec<HumanEvent>,
    /// Chat lines received.
    pub chat: Vec<String>,
    /// The patched mod's version string (absent from the stock mod).
    pub mod_version: Option<String>,
    /// Block changes naming the player (patched mod only; empty otherwise).
    pub block_changes: Vec<BlockChange>,
}

/// One input event of a human player (`ObservationFromHuman`).
#[derive(Clone, Debug, PartialEq)]
pub enum HumanEvent {
    /// The mouse moved or its wheel turned.
    Mouse {
        /// World time (frozen at 1000 in MBAG, so it cannot order events).
        time: i64,
        /// Horizontal movement.
        delta_x: f64,
        /// Vertical movement.
        delta_y: f64,
        /// Wheel movement.
        delta_z: f64,
    },
    /// A key or mouse button went down or up.
    Key {
        /// World time.
        time: i64,
        /// The Minecraft key binding (`forward`, `use`, `attack`, `hotbar.3`, ...).
        command: String,
        /// Pressed (true) or released.
        pressed: bool,
    },
    /// An event of another type, by its `type`.
    Other(String),
}

impl<'de> Deserialize<'de> for HumanEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Every field optional and unknown ones ignored: one flat struct is much
        // cheaper for serde than an untagged enum.
        #[derive(Deserialize)]
        struct Fields {
            #[serde(default)]
            time: i64,
            #[serde(rename = "type")]
            kind: String,
            #[serde(rename = "deltaX")]
            delta_x: Option<f64>,
            #[serde(rename = "deltaY")]
            delta_y: Option<f64>,
            #[serde(rename = "deltaZ")]
            delta_z: Option<f64>,
            command: Option<String>,
            pressed: Option<bool>,
        }
        let f = Fields::deserialize(deserializer)?;
        Ok(match (f.kind.as_str(), f.command, f.pressed) {
            ("mouse", _, _) => HumanEvent::Mouse {
                time: f.time,
                delta_x: f.delta_x.unwrap_or(0.0),
                delta_y: f.delta_y.unwrap_or(0.0),
                delta_z: f.delta_z.unwrap_or(0.0),
            },
            ("key", Some(command), Some(pressed)) => HumanEvent::Key {
                time: f.time,
                command,
                pressed,
            },
            _ => HumanEvent::Other(f.kind),
        })
    }
}

/// An observation frame that is not a JSON object of the expected shape.
#[derive(Debug, thiserror::Error)]
#[error("malformed observation: {0}")]
pub struct DecodeError(#[from] serde_json::Error);

impl DecodedObservation {
    /// Decodes one observation frame's payload.
    ///
    /// The top level is walked by hand so that grids (most of the bytes) are
    /// scanned once, by [`scan_grid`], instead of first by serde_json to find
    /// their end; every other value goes through serde_json. Anything unusual
    /// (escaped keys, a grid that is not plain strings) falls back to serde for
    /// the whole document, so the result never depends on the path taken.
    pub fn decode(payload: &[u8]) -> Result<Self, DecodeError> {
        match Self::decode_fast(payload) {
            Some(Ok(obs)) => Ok(obs),
            Some(Err(e)) => Err(e),
            None => Ok(serde_json::from_slice(payload)?),
        }
    }

    /// The hand-walked path; `None` when the document needs the general one.
    fn decode_fast(payload: &[u8]) -> Option<Result<Self, DecodeError>> {
        let text = std::str::from_utf8(payload).ok()?;
        let bytes = text.as_bytes();
        let skip_space = |mut i: usize| {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            i
        };
        let mut i = skip_space(0);
        if bytes.get(i) != Some(&b'{') {
            return None;
        }
        i = skip_space(i + 1);
        let mut obs = DecodedObservation::default();
        if bytes.get(i) == Some(&b'}') {
            return (skip_space(i + 1) == bytes.len()).then_some(Ok(obs));
        }
        loop {
            // A key without escapes, then a colon.
            if bytes.get(i) != Some(&b'"') {
                return None;
            }
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && bytes[end] != b'"' {
                if bytes[end] == b'\\' {
                    return None;
                }
                end += 1;
            }
            let key = text.get(start..end)?;
            i = skip_space(end + 1);
            if bytes.get(i) != Some(&b':') {
                return None;
            }
            i = skip_space(i + 1);
            let value_start = i;
            // The value: a grid is scanned here; anything else is read by serde,
            // which also says where it ends.
            let grid = (bytes.get(i) == Some(&b'[') && !is_known_key(key))
                .then(|| scan_grid_at(text, i))
                .flatten();
            if let Some((cells, end)) = grid {
                obs.grids.push(DecodedGrid {
                    name: key.to_owned(),
                    cells,
                });
                i = end;
            } else {
                let mut stream = serde_json::Deserializer::from_str(&text[value_start..])
                    .into_iter::<&RawValue>();
                let raw = match stream.next()? {
                    Ok(raw) => raw,
                    Err(e) => return Some(Err(e.into())),
                };
                i = value_start + stream.byte_offset();
                if let Err(e) = obs.set(key, raw.get()) {
                    return Some(Err(e.into()));
                }
            }
            i = skip_space(i);
            match bytes.get(i) {
                Some(b',') => i = skip_space(i + 1),
                Some(b'}') if skip_space(i + 1) == bytes.len() => return Some(Ok(obs)),
                _ => return None,
            }
        }
    }

    /// Stores one top-level value that is not a grid.
    fn set(&mut self, key: &str, json: &str) -> Result<(), serde_json::Error> {
        use serde_json::from_str;
        match key {
            "Name" => self.name = Some(from_str(json)?),
            "XPos" => self.position[0] = Some(from_str(json)?),
            "YPos" => self.position[1] = Some(from_str(json)?),
            "ZPos" => self.position[2] = Some(from_str(json)?),
            "Yaw" => self.yaw = Some(from_str(json)?),
            "Pitch" => self.pitch = Some(from_str(json)?),
            "currentItemIndex" => self.current_item_index = Some(from_str(json)?),
            "LineOfSight" => self.line_of_sight = Some(from_str(json)?),
            "CommandsSinceLastObservation" => self.commands = from_str(json)?,
            "events" => self.events = from_str(json)?,
            "Chat" => self.chat = from_str(json)?,
            "mbag_mod_version" => self.mod_version = Some(from_str(json)?),
            "block_changes" => self.block_changes = from_str(json)?,
            key => {
                if let Some((slot, field)) = inventory_key(key) {
                    let stack = self.stack_mut(slot);
                    match field {
                        "item" => stack.item = from_str(json)?,
                        "size" => stack.size = from_str(json)?,
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    fn stack_mut(&mut self, slot: Option<usize>) -> &mut Stack {
        match slot {
            Some(i) => {
                if self.inventory.len() < INVENTORY_SLOTS {
                    self.inventory.resize(INVENTORY_SLOTS, None);
                }
                self.inventory[i].get_or_insert_with(Stack::default)
            }
            None => self.held.get_or_insert_with(Stack::default),
        }
    }

    /// The grid named `name`, if present.
    pub fn grid(&self, name: &str) -> Option<&[Option<Block>]> {
        self.grids
            .iter()
            .find(|g| g.name == name)
            .map(|g| g.cells.as_slice())
    }
}

impl<'de> Deserialize<'de> for DecodedObservation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObservationVisitor)
    }
}

struct ObservationVisitor;

/// Keys with typed values; any other array-valued key may be a grid.
fn is_known_key(key: &str) -> bool {
    matches!(
        key,
        "CommandsSinceLastObservation" | "events" | "Chat" | "block_changes"
    )
}

/// Which stack an `InventorySlot_*` key is about, and which field.
fn inventory_key(key: &str) -> Option<(Option<usize>, &str)> {
    let rest = key.strip_prefix("InventorySlot_")?;
    let (slot, field) = rest.split_once('_')?;
    if slot == "held" {
        return Some((None, field));
    }
    let slot: usize = slot.parse().ok()?;
    (slot < INVENTORY_SLOTS).then_some((Some(slot), field))
}

impl<'de> Visitor<'de> for ObservationVisitor {
    type Value = DecodedObservation;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an observation object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut obs = DecodedObservation::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "Name" => obs.name = Some(map.next_value()?),
                "XPos" => obs.position[0] = Some(map.next_value()?),
                "YPos" => obs.position[1] = Some(map.next_value()?),
                "ZPos" => obs.position[2] = Some(map.next_value()?),
                "Yaw" => obs.yaw = Some(map.next_value()?),
                "Pitch" => obs.pitch = Some(map.next_value()?),
                "currentItemIndex" => obs.current_item_index = Some(map.next_value()?),
                "LineOfSight" => obs.line_of_sight = Some(map.next_value()?),
                "CommandsSinceLastObservation" => obs.commands = map.next_value()?,
                "events" => obs.events = map.next_value()?,
                "Chat" => obs.chat = map.next_value()?,
                "mbag_mod_version" => obs.mod_version = Some(map.next_value()?),
                "block_changes" => obs.block_changes = map.next_value()?,
                key => {
                    if let Some((slot, field)) = inventory_key(key) {
                        let stack = obs.stack_mut(slot);
                        match field {
                            "item" => stack.item = map.next_value()?,
                            "size" => stack.size = map.next_value()?,
                            // Colour and variant: MBAG ignores them (NAME2ID).
                            _ => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    } else {
                        // Taken raw: grids are read by a byte scanner, anything
                        // else is skipped without building it.
                        let raw: &'de RawValue = map.next_value()?;
                        if let Some(cells) = scan_grid(raw.get()) {
                            obs.grids.push(DecodedGrid {
                                name: key.to_owned(),
                                cells,
                            });
                        }
                    }
                }
            }
        }
        Ok(obs)
    }
}

/// Reads a JSON value as a grid if it is a non-empty array of strings without
/// escapes (what the mod writes for grids), `None` otherwise. The value is
/// already known to be well-formed JSON.
fn scan_grid(json: &str) -> Option<Vec<Option<Block>>> {
    let start = json.len() - json.trim_start().len();
    let (cells, end) = scan_grid_at(json, start)?;
    json[end..].trim().is_empty().then_some(cells)
}

/// [`scan_grid`] on the array that starts at `text[start] == '['`, returning the
/// cells and where the array ends (one past its `]`).
fn scan_grid_at(text: &str, start: usize) -> Option<(Vec<Option<Block>>, usize)> {
    // Byte loops: block names are a few ASCII letters, so the search routines'
    // set-up costs more than they save.
    let bytes = text.as_bytes();
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    if bytes.get(start) != Some(&b'[') {
        return None;
    }
    let mut cells = Vec::with_capacity(1024);
    let mut i = skip_space(start + 1);
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let from = i + 1;
        let len = bytes[from..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\')?;
        let to = from + len;
        if bytes[to] != b'"' {
            return None;
        }
        // Quotes are ASCII, so both ends are character boundaries.
        cells.push(Block::from_observed_name(&text[from..to]));
        i = skip_space(to + 1);
        match bytes.get(i) {
            Some(b',') => i = skip_space(i + 1),
            Some(b']') => return Some((cells, i + 1)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::Observation;

    #[test]
    fn only_arrays_of_plain_strings_are_grids() {
        assert_eq!(
            scan_grid(r#"[ "air" , "wool","x"]"#),
            Some(vec![Some(Block::Air), Some(Block::Wool), None])
        );
        for not_grid in [
            r#"[]"#,
            r#"["air",1]"#,
            r#"[{"a":"b"}]"#,
            r#""air""#,
            r#"["a\"b"]"#,
            "7",
        ] {
            assert_eq!(scan_grid(not_grid), None, "{not_grid}");
        }
    }

    #[test]
    fn patched_mod_keys_decode_on_both_paths() {
        let fast = r#"{"Name":"human","mbag_mod_version":"0.38.0+mbag.1","block_changes":[{"seq":3,"tick":40,"player":"assistant","action":"break","x":1,"y":2,"z":3,"type":"wool"}]}"#;
        // An escaped key sends the whole document down serde's path.
        let general = fast.replace(r#""Name""#, r#""N\u0061me""#);
        for text in [fast, general.as_str()] {
            let decoded = DecodedObservation::decode(text.as_bytes()).unwrap();
            let full = Observation::parse(text.as_bytes()).unwrap();
            assert_eq!(decoded.mod_version.as_deref(), Some("0.38.0+mbag.1"));
            assert_eq!(Some(decoded.block_changes.clone()), full.block_changes);
            let change = &decoded.block_changes[0];
            assert_eq!(
                (change.player.as_str(), change.cell),
                ("assistant", [1, 2, 3])
            );
            assert_eq!(change.action, crate::mod_patch::BlockAction::Break);
            assert!(decoded.grids.is_empty());
        }
    }

    #[test]
    fn decodes_what_the_lossless_reader_reads() {
        let text = r#"{"world":["bedrock","grass","air","planks","water"],"inventoriesAvailable":[{"name":"inventory","size":41}],"InventorySlot_0_size":64,"InventorySlot_0_item":"dirt","InventorySlot_0_colour":"WHITE","InventorySlot_held_size":0,"InventorySlot_held_item":"air","currentItemIndex":3,"Name":"human","XPos":0.5,"YPos":2.0,"ZPos":-1.5E-3,"Pitch":30.0,"Yaw":270.0,"LineOfSight":{"hitType":"block","x":6.0,"y":3.62,"z":0.5,"type":"bedrock","inRange":false,"distance":5.5},"CommandsSinceLastObservation":["tp 0.5 2 0.5","quit "],"events":[{"time":1000,"type":"key","command":"attack","pressed":true}],"Chat":["hello"],"serverTicksPerSecond":20.0}"#;
        let decoded = DecodedObservation::decode(text.as_bytes()).unwrap();
        let full = Observation::parse(text.as_bytes()).unwrap();
        assert_eq!(decoded.name, full.name);
        assert_eq!(decoded.position, [full.x, full.y, full.z]);
        assert_eq!((decoded.yaw, decoded.pitch), (full.yaw, full.pitch));
        assert_eq!(decoded.current_item_index, Some(3));
        assert_eq!(decoded.line_of_sight, full.line_of_sight);
        assert_eq!(Some(decoded.commands.clone()), full.commands);
        assert_eq!(
            decoded.events,
            [HumanEvent::Key {
                time: 1000,
                command: "attack".into(),
                pressed: true
            }]
        );
        assert_eq!(full.events.map(|e| e.len()), Some(1));
        assert_eq!(Some(decoded.chat.clone()), full.chat);
        assert_eq!(
            decoded.grid("world").unwrap(),
            &[
                Some(Block::Bedrock),
                Some(Block::Dirt),
                Some(Block::Air),
                Some(Block::Planks),
                None
            ]
        );
        // The inventory list is an array of objects, not a grid.
        assert_eq!(decoded.grids.len(), 1);
        assert_eq!(
            decoded.inventory[0],
            Some(Stack {
                item: "dirt".into(),
                size: 64
            })
        );
        assert_eq!(decoded.inventory.len(), INVENTORY_SLOTS);
        assert_eq!(decoded.held.as_ref().unwrap().item, "air");
        assert!(DecodedObservation::decode(b"[1, 2]").is_err());
        assert!(DecodedObservation::decode(b"{\"XPos\": \"far\"}").is_err());
    }
}
