//! JSON Lines conventions shared by the golden files and the recordings: floats
//! that may be non-finite, and finding `.jsonl` / `.jsonl.gz` files below folders.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A float that JSON may not hold as a number: NaN and the infinities are written
/// as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` (a goal percentage is NaN
/// when the goal was complete at reset), everything else as a number that reads
/// back bit for bit.
#[derive(Clone, Copy, Debug, Default)]
pub struct Float(pub f64);

impl PartialEq for Float {
    /// Bitwise equality on values, with NaN equal to NaN: recordings are compared
    /// exactly, and a NaN recorded is a NaN reproduced.
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || (self.0.is_nan() && other.0.is_nan())
    }
}

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() {
            s.serialize_f64(v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if v > 0.0 {
            s.serialize_str("Infinity")
        } else {
            s.serialize_str("-Infinity")
        }
    }
}

impl<'de> Deserialize<'de> for Float {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(v) => Ok(Self(v)),
            Raw::Str(s) => match s.as_str() {
                "NaN" => Ok(Self(f64::NAN)),
                "Infinity" => Ok(Self(f64::INFINITY)),
                "-Infinity" => Ok(Self(f64::NEG_INFINITY)),
                _ => Err(serde::de::Error::custom(format!("not a float: {s:?}"))),
            },
        }
    }
}

impl fmt::Display for Float {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// Lists JSON Lines files: files as given, folders expanded (recursively) to
/// their `*.jsonl` and `*.jsonl.gz` files, sorted per folder. An unreadable
/// folder is returned with its error.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, (PathBuf, io::Error)> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found).map_err(|e| (path.clone(), e))?;
            found.sort();
            out.extend(found);
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl.gz") || n.ends_with(".jsonl"))
        {
            out.push(path);
        }
    }
    Ok(())
}
