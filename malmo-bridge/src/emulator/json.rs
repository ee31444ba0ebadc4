//! Writing observation JSON as the mod's gson does: compact, keys in producer
//! order, and numbers in Java's `Double.toString` / `Float.toString` forms
//! (`2.0`, `270.0`, `5.91814E-9`).
//!
//! Java 8 (Minecraft 1.11.2's JVM) sometimes prints more digits than the shortest
//! round-trip form; this writer prints the shortest form, as Java 19 and later do.

use std::fmt::Write as _;

/// Java's `Double.toString`.
pub fn java_double(v: f64) -> String {
    java_number(
        v,
        (1e-3..1e7).contains(&v.abs()),
        format!("{v:?}"),
        format!("{v:e}"),
    )
}

/// Java's `Float.toString` (yaw and pitch are floats in the mod).
pub fn java_float(v: f32) -> String {
    java_number(
        f64::from(v),
        (1e-3..1e7).contains(&v.abs()),
        format!("{v:?}"),
        format!("{v:e}"),
    )
}

fn java_number(v: f64, plain: bool, debug: String, sci: String) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    if plain {
        // Rust's `{:?}` is the shortest round-trip form and keeps `.0`, and stays
        // in plain notation over Java's plain range.
        return debug;
    }
    // Rust writes `5.91814e-9` or `1e20`; Java writes `5.91814E-9` and `1.0E20`.
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

/// A JSON string literal as gson escapes it (it also escapes `<`, `>`, `&`, `=`
/// and `'` for HTML safety by default).
pub fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '=' | '\'' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An object being written key by key.
#[derive(Debug)]
pub struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    /// Opens an object at the end of `out`.
    pub fn new(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, first: true }
    }

    /// Writes a key and returns the buffer for its value.
    pub fn key(&mut self, key: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(key, self.out);
        self.out.push(':');
        self.out
    }

    /// A string value.
    pub fn str(&mut self, key: &str, value: &str) {
        string(value, self.key(key));
    }

    /// An integer value.
    pub fn int(&mut self, key: &str, value: i64) {
        let _ = write!(self.key(key), "{value}");
    }

    /// A Java double.
    pub fn double(&mut self, key: &str, value: f64) {
        let text = java_double(value);
        self.key(key).push_str(&text);
    }

    /// A Java float.
    pub fn float(&mut self, key: &str, value: f32) {
        let text = java_float(value);
        self.key(key).push_str(&text);
    }

    /// A boolean.
    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key).push_str(if value { "true" } else { "false" });
    }

    /// An array of strings.
    pub fn strings<'s>(&mut self, key: &str, values: impl IntoIterator<Item = &'s str>) {
        let out = self.key(key);
        out.push('[');
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(v, out);
        }
        out.push(']');
    }

    /// Closes the object.
    pub fn finish(self) {
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_java_does() {
        for (v, text) in [
            (2.0, "2.0"),
            (270.0, "270.0"),
            (5.91814e-9, "5.91814E-9"),
            (0.5, "0.5"),
            (3.6200000047683716, "3.6200000047683716"),
            (1e7, "1.0E7"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(java_double(v), text, "{v}");
        }
        assert_eq!(java_float(39.600044), "39.600044");
        assert_eq!(java_float(272.25034), "272.25034");
        assert_eq!(java_float(0.0), "0.0");
    }

    #[test]
    fn objects_are_compact_and_escaped() {
        let mut out = String::new();
        let mut o = ObjectWriter::new(&mut out);
        o.str("a", "x\"<y>");
        o.int("b", 3);
        o.strings("c", ["p", "q"]);
        o.bool("d", true);
        o.finish();
        assert_eq!(
            out,
            r#"{"a":"x\"\u003cy\u003e","b":3,"c":["p","q"],"d":true}"#
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["a"], "x\"<y>");
    }
}
