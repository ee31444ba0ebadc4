//! Comparing simulator values with recorded ones, and describing the first mismatch.

use std::fmt;

/// Where and how a replay first differed from the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The step index (`None` for the reset / header).
    pub step: Option<usize>,
    /// The field, e.g. `infos[1].goal_percentage`.
    pub field: String,
    /// What the golden file says.
    pub expected: String,
    /// What the simulator produced.
    pub got: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(t) => write!(f, "step {t}")?,
            None => write!(f, "reset")?,
        }
        write!(
            f,
            ", field {}: expected {}, got {}",
            self.field, self.expected, self.got
        )
    }
}

/// Relative tolerance for sums that numpy adds pairwise (ENV_SPEC / golden README).
pub const REL_TOL: f64 = 1e-9;

/// Float equality as the golden README asks: exact, NaN equal to NaN, or within a
/// relative 1e-9.
pub fn floats_match(expected: f64, got: f64) -> bool {
    if expected == got || (expected.is_nan() && got.is_nan()) {
        return true;
    }
    expected.is_finite()
        && got.is_finite()
        && (expected - got).abs() <= REL_TOL * expected.abs().max(got.abs()).max(1.0)
}

/// Collects the first mismatch of a replay.
#[derive(Debug, Default)]
pub struct Checker {
    step: Option<usize>,
    first: Option<Mismatch>,
    floats: FloatCounts,
}

/// How many floats a replay compared, and how many of them were bit-identical
/// (same bits, or both NaN) rather than only within [`REL_TOL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatCounts {
    /// Floats compared.
    pub checked: usize,
    /// Of those, bit-identical ones.
    pub exact: usize,
}

impl std::ops::AddAssign for FloatCounts {
    fn add_assign(&mut self, other: Self) {
        self.checked += other.checked;
        self.exact += other.exact;
    }
}

impl Checker {
    /// Sets the step that following checks belong to.
    pub fn at_step(&mut self, step: Option<usize>) {
        self.step = step;
    }

    /// Whether a mismatch was found.
    pub fn failed(&self) -> bool {
        self.first.is_some()
    }

    /// The floats compared so far.
    pub fn float_counts(&self) -> FloatCounts {
        self.floats
    }

    /// The first mismatch, if any.
    pub fn into_mismatch(self) -> Option<Mismatch> {
        self.first
    }

    /// Records a mismatch unless one was already found.
    pub fn fail(
        &mut self,
        field: impl Into<String>,
        expected: impl fmt::Display,
        got: impl fmt::Display,
    ) {
        if self.first.is_none() {
            self.first = Some(Mismatch {
                step: self.step,
                field: field.into(),
                expected: expected.to_string(),
                got: got.to_string(),
            });
        }
    }

    /// Checks two floats (see [`floats_match`]), counting the bit-identical ones.
    pub fn float(&mut self, field: impl Into<String>, expected: f64, got: f64) {
        self.floats.checked += 1;
        if expected.to_bits() == got.to_bits() || (expected.is_nan() && got.is_nan()) {
            self.floats.exact += 1;
        }
        if !floats_match(expected, got) {
            self.fail(field, format!("{expected:?}"), format!("{got:?}"));
        }
    }

    /// Checks two values for equality.
    pub fn eq<T: PartialEq + fmt::Debug>(&mut self, field: impl Into<String>, expected: T, got: T) {
        if expected != got {
            self.fail(field, format!("{expected:?}"), format!("{got:?}"));
        }
    }

    /// Checks two byte arrays (3-D grids), naming the first differing index.
    pub fn bytes(&mut self, field: &str, expected: &[u8], got: &[u8]) {
        if expected.len() != got.len() {
            self.fail(format!("{field} (length)"), expected.len(), got.len());
        } else if let Some(i) = expected.iter().zip(got).position(|(a, b)| a != b) {
            self.fail(format!("{field}[{i}]"), expected[i], got[i]);
        }
    }

    /// Checks two sorted index lists (masks), naming the first difference.
    pub fn index_set(&mut self, field: &str, expected: &[usize], got: &[usize]) {
        if expected == got {
            return;
        }
        let missing = expected.iter().find(|i| got.binary_search(i).is_err());
        let extra = got.iter().find(|i| expected.binary_search(i).is_err());
        self.fail(
            field,
            format!("{} valid actions", expected.len()),
            format!(
                "{} valid actions (first missing: {missing:?}, first extra: {extra:?})",
                got.len()
            ),
        );
    }
}

impl Checker {
    /// Compares two JSON values recursively (numbers with [`floats_match`], `"NaN"`
    /// strings as floats), naming the first differing key path.
    pub fn json(&mut self, field: &str, expected: &serde_json::Value, got: &serde_json::Value) {
        use serde_json::Value;
        let as_float = |v: &Value| match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "Infinity" => Some(f64::INFINITY),
                "-Infinity" => Some(f64::NEG_INFINITY),
                _ => None,
            },
            _ => None,
        };
        match (expected, got) {
            (Value::Object(e), Value::Object(g)) => {
                for (k, ev) in e {
                    match g.get(k) {
                        Some(gv) => self.json(&format!("{field}.{k}"), ev, gv),
                        None => self.fail(format!("{field}.{k}"), ev, "(missing)"),
                    }
                }
                if let Some(k) = g.keys().find(|k| !e.contains_key(*k)) {
                    self.fail(format!("{field}.{k}"), "(absent)", &g[k]);
                }
            }
            (Value::Array(e), Value::Array(g)) => {
                if e.len() != g.len() {
                    self.fail(format!("{field} (length)"), e.len(), g.len());
                }
                for (i, (ev, gv)) in e.iter().zip(g).enumerate() {
                    self.json(&format!("{field}[{i}]"), ev, gv);
                }
            }
            _ => match (as_float(expected), as_float(got)) {
                (Some(e), Some(g)) => self.float(field, e, g),
                _ if expected == got => {}
                _ => self.fail(field, expected, got),
            },
        }
    }
}
