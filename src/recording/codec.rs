//! Small JSON encodings shared by the line types: base64 byte arrays, floats that
//! may be non-finite, and the shared data's 6-field action arrays.

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sim::action::{Action, ActionTuple, FlatLayout};
use crate::sim::coords::WorldSize;

/// A byte array written as standard base64 with padding (`../shared/data/README.md`
/// section 2), so a world-sized C-order array stays one short string.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct B64(pub Vec<u8>);

impl Serialize for B64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(Self)
            .map_err(|e| serde::de::Error::custom(format!("bad base64: {e}")))
    }
}

pub use crate::jsonl::Float;

/// One player's action as the shared data writes it:
/// `[action_type, x, y, z, block_id, flat_index]`. The reference's tuple is
/// `(action_type, (x*H + y)*D + z, block_id)`; `flat_index` is `null` when the tuple
/// is outside the config's flat action space (a MOVE with teleportation on, an
/// unknown type, a used field out of range).
///
/// Any tuple the env accepts has a record, since the env accepts any integers: the
/// type and block id are kept as given, and the location is unravelled with `y`
/// and `z` in range and `x` whatever it comes to, so a location outside the world
/// (which only a player the step skips may pass) has an `x` outside `0..W`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord(pub i64, pub i64, pub i64, pub i64, pub i64, pub Option<u32>);

impl ActionRecord {
    /// The record of an action or tuple in a world of `size` with flat layout
    /// `layout`.
    pub fn new(action: impl Into<ActionTuple>, size: WorldSize, layout: &FlatLayout) -> Self {
        let t: ActionTuple = action.into();
        // Sizes are far below 2^63 cells, so these do not overflow.
        let column = (size.height * size.depth) as i64;
        let depth = size.depth as i64;
        let within = t.location.rem_euclid(column);
        Self(
            t.type_id,
            t.location.div_euclid(column),
            within / depth,
            within % depth,
            t.block,
            layout.flat_tuple(t).ok().map(|f| f as u32),
        )
    }

    /// The action type id (0 NOOP ... 9 GIVE_BLOCK; any other is a no-op).
    pub fn type_id(&self) -> i64 {
        self.0
    }

    /// The tuple, for a world of `size` (the flat index is checked separately,
    /// against the layout). `y` and `z` must be in range, so each tuple has one
    /// record.
    pub fn to_tuple(&self, size: WorldSize) -> Result<ActionTuple, String> {
        let Self(type_id, x, y, z, block, _) = *self;
        let (height, depth) = (size.height as i64, size.depth as i64);
        if !(0..height).contains(&y) || !(0..depth).contains(&z) {
            return Err(format!(
                "cell [{x}, {y}, {z}]: y and z must be inside the {size} world"
            ));
        }
        let location = x
            .checked_mul(height)
            .and_then(|v| v.checked_add(y))
            .and_then(|v| v.checked_mul(depth))
            .and_then(|v| v.checked_add(z))
            .ok_or_else(|| format!("cell [{x}, {y}, {z}]: the location index overflows"))?;
        Ok(ActionTuple::new(type_id, location, block))
    }

    /// The simulator's typed action: a known type, a cell inside the world and a
    /// block id in 0..=9.
    pub fn to_action(&self, size: WorldSize) -> Result<Action, String> {
        self.to_tuple(size)?
            .to_action(size)
            .map_err(|e| e.to_string())
    }
}

/// Seconds since the Unix epoch as RFC 3339 UTC text (`2026-11-23T17:31:20.123Z`);
/// written by hand because nothing else in the crate needs a calendar library.
pub fn rfc3339_utc(unix_s: f64) -> String {
    let secs = unix_s.floor() as i64;
    let millis = ((unix_s - secs as f64) * 1000.0).floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.ffffff][Z]` as UTC seconds since the epoch. The
/// human data's times carry no zone; only their differences are used.
pub fn parse_iso_utc(text: &str) -> Option<f64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text.split_once(['T', ' '])?;
    let mut dp = date.split('-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    let mut tp = time.split(':');
    let hh: i64 = tp.next()?.parse().ok()?;
    let mm: i64 = tp.next()?.parse().ok()?;
    let ss: f64 = tp.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some((days * 86_400 + hh * 3600 + mm * 60) as f64 + ss)
}

/// Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Now, in seconds since the Unix epoch.
pub fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        let t = parse_iso_utc("2023-07-18T22:41:38.003261").unwrap();
        assert_eq!(rfc3339_utc(t), "2023-07-18T22:41:38.003Z");
        assert_eq!(parse_iso_utc("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(rfc3339_utc(951_782_400.0), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn every_tuple_has_a_record() {
        use crate::sim::config::Abilities;
        let size = WorldSize::new(5, 6, 7);
        let layout = FlatLayout::new(
            size,
            Abilities {
                teleportation: false,
                flying: true,
                inf_blocks: false,
            },
        );
        for raw in [
            [1, 0, 2],
            [9, 209, 9],
            [10, 17, 3],
            [-5, 100, -1],
            [2, 210, 300],
            [0, -1, 0],
            [99, -43, 1000],
        ] {
            let t = ActionTuple::from(raw);
            let rec = ActionRecord::new(t, size, &layout);
            assert_eq!(rec.to_tuple(size), Ok(t), "{rec:?}");
            let text = serde_json::to_string(&rec).unwrap();
            let back: ActionRecord = serde_json::from_str(&text).unwrap();
            assert_eq!(back, rec);
        }
        // In the world, the location is the cell.
        let rec = ActionRecord::new(ActionTuple::new(1, (2 * 6 + 3) * 7 + 4, 5), size, &layout);
        assert_eq!(
            rec,
            ActionRecord(
                1,
                2,
                3,
                4,
                5,
                layout
                    .flat_tuple(ActionTuple::new(1, 109, 5))
                    .ok()
                    .map(|f| f as u32)
            )
        );
        assert!(rec.5.is_some());
        assert_eq!(
            ActionRecord::new(ActionTuple::new(10, 0, 0), size, &layout).5,
            None
        );
        assert!(ActionRecord(0, 0, 6, 0, 0, None).to_tuple(size).is_err());
        assert!(
            ActionRecord(0, i64::MAX, 0, 0, 0, None)
                .to_tuple(size)
                .is_err()
        );
        assert!(ActionRecord(10, 0, 0, 0, 0, None).to_action(size).is_err());
    }

    #[test]
    fn floats_survive_json() {
        for v in [0.1, f64::NAN, f64::INFINITY, -2.5e-300] {
            let text = serde_json::to_string(&Float(v)).unwrap();
            let back: Float = serde_json::from_str(&text).unwrap();
            assert_eq!(back, Float(v), "{text}");
        }
    }
}
