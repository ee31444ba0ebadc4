//! Commands the agent sends to the mod on the commands port, as typed values.
//!
//! One command per line: `<verb>[ <parameters>]`. Numbers are written as the MBAG
//! reference writes them with Python's `str`: integers without a point (`tp 1.5 2
//! 0.5`, where y was an int) and floats in Python's shortest repr (`setYaw 35.0`),
//! so that our bytes match the captured sessions.

use std::fmt;
use std::str::FromStr;

/// A number as Python prints it: an int, or a float in `repr` form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An integer (printed without a decimal point).
    Int(i64),
    /// A float (printed like Python's `repr`: `35.0`, `0.5`, `1e-05`).
    Float(f64),
}

impl Number {
    /// The value as a float.
    pub fn value(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(v) => f.write_str(&python_float_repr(v)),
        }
    }
}

impl FromStr for Number {
    type Err = CommandError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(i) = s.parse::<i64>() {
            return Ok(Self::Int(i));
        }
        s.parse::<f64>()
            .map(Self::Float)
            .map_err(|_| CommandError::BadNumber(s.to_owned()))
    }
}

/// Python's `repr(float)`: the shortest round-trip digits, with `.0` on integral
/// values, and scientific notation (two-digit exponent at least) outside
/// `1e-4 <= |v| < 1e16`.
pub fn python_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust's `{:e}` gives the shortest digits as `1.5e-7`; Python writes
        // `1.5e-07` (and `1e+16` with an explicit sign).
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').expect("`{:e}` has an exponent");
        let exp: i32 = exp.parse().expect("an integer exponent");
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    // `{:?}` is the shortest round-trip form and keeps `.0` on integral values.
    format!("{v:?}")
}

/// A command line that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The line is empty.
    #[error("empty command line")]
    Empty,
    /// A parameter is not a number.
    #[error("not a number: {0:?}")]
    BadNumber(String),
    /// A known verb has the wrong number or kind of parameters.
    #[error("`{verb}` takes {expected}, got {got:?}")]
    BadParameters {
        /// The verb.
        verb: &'static str,
        /// What it takes.
        expected: &'static str,
        /// What was given.
        got: String,
    },
}

/// A command for the mod (see PROTOCOL.md §4.1). Verbs the reference never sends
/// are kept as [`Command::Other`].
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `tp x y z`: teleport the player.
    Teleport {
        /// x.
        x: Number,
        /// y.
        y: Number,
        /// z.
        z: Number,
    },
    /// `setYaw deg`: absolute yaw.
    SetYaw(Number),
    /// `setPitch deg`: absolute pitch.
    SetPitch(Number),
    /// `jump 1` / `jump 0`: press or release jump.
    Jump(bool),
    /// `hotbar.k 1` / `hotbar.k 0`: press or release hotbar key `k` (1..=9).
    Hotbar {
        /// The key, 1..=9.
        key: u8,
        /// Pressed (1) or released (0).
        pressed: bool,
    },
    /// `use 1`: place the held block against the face under the crosshair.
    Use,
    /// `attack 1`: break the block under the crosshair.
    Attack,
    /// `swapInventoryItems a b`: swap two inventory slots.
    SwapInventoryItems(u8, u8),
    /// `chat text`: say `text` (a `/` makes it a server command).
    Chat(String),
    /// `quit`: this agent ends its mission.
    Quit,
    /// Any other verb, with its parameters as written.
    Other {
        /// The verb as written.
        verb: String,
        /// Everything after the first space.
        parameters: String,
    },
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Teleport { x, y, z } => write!(f, "tp {x} {y} {z}"),
            Self::SetYaw(v) => write!(f, "setYaw {v}"),
            Self::SetPitch(v) => write!(f, "setPitch {v}"),
            Self::Jump(on) => write!(f, "jump {}", u8::from(*on)),
            Self::Hotbar { key, pressed } => write!(f, "hotbar.{key} {}", u8::from(*pressed)),
            Self::Use => f.write_str("use 1"),
            Self::Attack => f.write_str("attack 1"),
            Self::SwapInventoryItems(a, b) => write!(f, "swapInventoryItems {a} {b}"),
            Self::Chat(text) => write!(f, "chat {text}"),
            Self::Quit => f.write_str("quit"),
            Self::Other { verb, parameters } if parameters.is_empty() => f.write_str(verb),
            Self::Other { verb, parameters } => write!(f, "{verb} {parameters}"),
        }
    }
}

impl Command {
    /// How the mod echoes this command in `CommandsSinceLastObservation` once a
    /// handler has run it: the lower-case verb, a space, then the parameters as
    /// sent (`setyaw 35.0`, and `quit ` with a trailing space).
    pub fn echo(&self) -> String {
        let line = self.to_string();
        let (verb, params) = line.split_once(' ').unwrap_or((&line, ""));
        format!("{} {params}", verb.to_ascii_lowercase())
    }
}

fn switch(verb: &'static str, p: &str) -> Result<bool, CommandError> {
    match p {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err(CommandError::BadParameters {
            verb,
            expected: "1 or 0",
            got: p.to_owned(),
        }),
    }
}

impl FromStr for Command {
    type Err = CommandError;

    /// Parses a command line (without its `\n`). Verbs match case-insensitively, as
    /// the mod matches them, so the echoes in observations (`setyaw 35.0`, `quit `)
    /// parse too.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (verb, params) = line.split_once(' ').unwrap_or((line, ""));
        if verb.is_empty() {
            return Err(CommandError::Empty);
        }
        let bad = |verb: &'static str, expected: &'static str| CommandError::BadParameters {
            verb,
            expected,
            got: params.to_owned(),
        };
        let numbers = || {
            params
                .split_whitespace()
                .map(str::parse::<Number>)
                .collect::<Result<Vec<_>, _>>()
        };
        let lower = verb.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "tp" => match numbers()?.as_slice() {
                &[x, y, z] => Self::Teleport { x, y, z },
                _ => return Err(bad("tp", "three numbers")),
            },
            "setyaw" => match numbers()?.as_slice() {
                &[v] => Self::SetYaw(v),
                _ => return Err(bad("setYaw", "one number")),
            },
            "setpitch" => match numbers()?.as_slice() {
                &[v] => Self::SetPitch(v),
                _ => return Err(bad("setPitch", "one number")),
            },
            "jump" => Self::Jump(switch("jump", params)?),
            "use" => Self::Use,
            "attack" => Self::Attack,
            "quit" => Self::Quit,
            "chat" => Self::Chat(params.to_owned()),
            "swapinventoryitems" => match params
                .split_whitespace()
                .map(str::parse::<u8>)
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(v) if v.len() == 2 => Self::SwapInventoryItems(v[0], v[1]),
                _ => return Err(bad("swapInventoryItems", "two slot numbers")),
            },
            _ => match lower.strip_prefix("hotbar.").map(str::parse::<u8>) {
                Some(Ok(key)) if (1..=9).contains(&key) => Self::Hotbar {
                    key,
                    pressed: switch("hotbar", params)?,
                },
                _ => Self::Other {
                    verb: verb.to_owned(),
                    parameters: params.to_owned(),
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_python_does() {
        // Expected texts printed by CPython 3.11's repr().
        for (v, text) in [
            (35.0, "35.0"),
            (0.5, "0.5"),
            (-12.25, "-12.25"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (123456789.0, "123456789.0"),
            (0.0001, "0.0001"),
            (1e15, "1000000000000000.0"),
            (1.2345678901234567e-5, "1.2345678901234568e-05"),
        ] {
            assert_eq!(python_float_repr(v), text);
        }
        assert_eq!(Number::Int(2).to_string(), "2");
    }

    #[test]
    fn captured_commands_round_trip() {
        for line in [
            "tp 1.5 2 0.5",
            "setYaw 35.0",
            "setPitch 40.0",
            "jump 1",
            "jump 0",
            "hotbar.1 1",
            "hotbar.1 0",
            "use 1",
            "attack 1",
            "swapInventoryItems 0 6",
            "chat /give human dirt 1 0",
            "chat /fill -1 2 -1 -1 10 10 barrier",
            "quit",
        ] {
            let command: Command = line.parse().unwrap();
            assert!(!matches!(command, Command::Other { .. }), "{line}");
            assert_eq!(command.to_string(), line);
        }
    }

    #[test]
    fn echoes_parse_case_insensitively_and_errors_name_the_verb() {
        assert_eq!(
            "setyaw 35.0".parse::<Command>().unwrap(),
            Command::SetYaw(Number::Float(35.0))
        );
        assert_eq!("quit ".parse::<Command>().unwrap(), Command::Quit);
        assert_eq!(Command::Quit.echo(), "quit ");
        assert_eq!(Command::SetYaw(Number::Float(35.0)).echo(), "setyaw 35.0");
        let err = "tp 1 2".parse::<Command>().unwrap_err();
        assert!(
            err.to_string().contains("`tp` takes three numbers"),
            "{err}"
        );
        assert!(matches!(
            "tp a b c".parse::<Command>(),
            Err(CommandError::BadNumber(_))
        ));
        assert!(matches!(
            "movenorth 1".parse::<Command>().unwrap(),
            Command::Other { .. }
        ));
        assert_eq!("".parse::<Command>(), Err(CommandError::Empty));
    }
}
