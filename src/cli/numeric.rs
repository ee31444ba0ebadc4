//! Numeric command-line values, each validated once here with its accepted
//! range, for every subcommand: a value out of range or malformed is a clap
//! usage error (exit 2) naming the argument and the range, never a panic later
//! (`Duration::from_secs_f64(1e30)`) and never a silent replacement.
//!
//! Durations are [`Seconds`] or [`Millis`]; counts are [`Count`]s whose range
//! is stated where the argument is declared, through the named ranges below so
//! that the same kind of quantity has the same limits everywhere.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

use crate::sim::coords::WorldSize;

/// The longest duration any argument accepts: a week, far above every real use
/// and far below where `Duration` and `Instant` arithmetic overflow.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A positive, finite duration of at most [`MAX_SECONDS`], given in seconds
/// (`0.8`, `120`). NaN, infinities, zero and negative values are refused.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Seconds(Duration);

impl Seconds {
    /// The duration.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// The duration in seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let expected = format!("expected seconds greater than 0 and at most {MAX_SECONDS}");
        let value: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a number; {expected}"))?;
        // `!(value > 0.0)` also catches NaN.
        if !(value > 0.0 && value <= MAX_SECONDS) {
            return Err(format!("{text} is out of range; {expected}"));
        }
        Ok(Self(Duration::from_secs_f64(value)))
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// Parses a [`Seconds`] argument (for `value_parser`).
pub fn seconds(text: &str) -> Result<Seconds, String> {
    text.parse()
}

/// Parses a share in [0, 1] (for `value_parser`), such as the least part of a
/// house built.
pub fn share(text: &str) -> Result<f64, String> {
    number_in(text, "expected a share from 0 to 1", |v| {
        (0.0..=1.0).contains(&v)
    })
}

/// Parses a finite number greater than 0 and at most a million (for
/// `value_parser`), such as a smoothing weight or a temperature.
pub fn positive(text: &str) -> Result<f64, String> {
    number_in(
        text,
        "expected a number greater than 0 and at most 1000000",
        |v| v.is_finite() && v > 0.0 && v <= 1e6,
    )
}

/// Parses a probability in (0, 1] (for `value_parser`): 0 is left out because
/// an option that never fires is better left off.
pub fn probability(text: &str) -> Result<f64, String> {
    number_in(
        text,
        "expected a probability greater than 0 and at most 1",
        |v| v.is_finite() && v > 0.0 && v <= 1.0,
    )
}

/// A number that `accept`s, or an error saying what was `expected`.
fn number_in(text: &str, expected: &str, accept: impl Fn(f64) -> bool) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number; {expected}"))?;
    if accept(value) {
        Ok(value)
    } else {
        Err(format!("{text} is out of range; {expected}"))
    }
}

/// A whole number in a range stated by the argument, converted to `T`.
///
/// The message for a bad value names the range: `0 is out of range; expected
/// a whole number from 1 to 1024`. Built with [`count`].
pub struct Count<T> {
    range: RangeInclusive<u64>,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Count<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Count({:?})", self.range)
    }
}

impl<T> Clone for Count<T> {
    fn clone(&self) -> Self {
        Self {
            range: self.range.clone(),
            _type: PhantomData,
        }
    }
}

/// A [`Count`] parser accepting `range` (for `value_parser`).
pub fn count<T>(range: RangeInclusive<u64>) -> Count<T> {
    Count {
        range,
        _type: PhantomData,
    }
}

impl<T> Count<T>
where
    T: TryFrom<u64> + 'static,
{
    /// Parses `text` as a whole number in the range.
    pub fn parse(&self, text: &str) -> Result<T, String> {
        let (lo, hi) = (*self.range.start(), *self.range.end());
        let expected = format!("expected a whole number from {lo} to {hi}");
        let value: u64 = match text.trim().parse() {
            Ok(v) => v,
            // All digits but too big for u64: out of range, not malformed.
            Err(_)
                if !text.trim().is_empty() && text.trim().bytes().all(|b| b.is_ascii_digit()) =>
            {
                return Err(format!("{text} is out of range; {expected}"));
            }
            Err(_) => return Err(format!("{text:?} is not a whole number; {expected}")),
        };
        if !self.range.contains(&value) {
            return Err(format!("{value} is out of range; {expected}"));
        }
        T::try_from(value).map_err(|_| format!("{value} is out of range; {expected}"))
    }
}

impl<T> clap::builder::TypedValueParser for Count<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // Through a plain function parser, so clap writes its usual "invalid
        // value 'X' for '--arg <N>': ..." naming the argument.
        let range = self.range.clone();
        let parse = move |text: &str| count::<T>(range.clone()).parse(text);
        clap::builder::TypedValueParser::parse_ref(&parse, cmd, arg, value)
    }
}

/// Remote self-play workers (`--ray-workers`).
pub const WORKERS: RangeInclusive<u64> = 1..=4096;
/// A remote self-play worker's index (`--index`).
pub const WORKER_INDEX: RangeInclusive<u64> = 0..=4095;
/// Threads of any kind (`--threads`, `--torch-threads`, `--lanes`, ...).
pub const THREADS: RangeInclusive<u64> = 1..=1024;
/// Episodes, goals and other repetitions of whole runs.
pub const EPISODES: RangeInclusive<u64> = 1..=1_000_000;
/// Environment steps (`--horizon`, `--max-steps`, `--steps`): up to the study's
/// 10^9 horizon.
pub const STEPS: RangeInclusive<u64> = 1..=1_000_000_000;
/// A step of a recording, 0 being before the first.
pub const STEP_INDEX: RangeInclusive<u64> = 0..=1_000_000_000;
/// Episodes of an optional part of a run, 0 skipping it.
pub const EPISODES_OR_NONE: RangeInclusive<u64> = 0..=1_000_000;
/// Every k-th item of a sequence (steps of a recording).
pub const STRIDE: RangeInclusive<u64> = 1..=1_000_000;
/// Steps between progress lines; 0 prints only the end.
pub const EVERY: RangeInclusive<u64> = 0..=1_000_000_000;
/// Search simulations per move; 0 is the policy head without search.
pub const SIMS: RangeInclusive<u64> = 0..=1_000_000;
/// Samples in one network batch.
pub const BATCH: RangeInclusive<u64> = 1..=65_536;
/// Iterations of benchmarks and training loops.
pub const ITERATIONS: RangeInclusive<u64> = 1..=1_000_000_000;
/// A training run's total iterations, where 0 saves the untrained network.
pub const TOTAL_ITERATIONS: RangeInclusive<u64> = 0..=1_000_000_000;
/// Microseconds an inference batch waits to fill: up to 10 s.
pub const WAIT_US: RangeInclusive<u64> = 0..=10_000_000;
/// Milliseconds of a timeout or delay: up to an hour.
pub const MILLIS: RangeInclusive<u64> = 0..=3_600_000;
/// Steps of delay (0: at once).
pub const DELAY_STEPS: RangeInclusive<u64> = 0..=100_000;
/// Milliseconds of a positive period (ticks, timeouts that must be able to
/// pass): up to an hour.
pub const POSITIVE_MILLIS: RangeInclusive<u64> = 1..=3_600_000;
/// Minecraft clients (players and spectator) on one machine.
pub const CLIENTS: RangeInclusive<u64> = 1..=64;
/// Players of a mission.
pub const PLAYERS: RangeInclusive<u64> = 1..=16;
/// A TCP port to listen on or connect to.
pub const PORT: RangeInclusive<u64> = 1..=65_535;
/// A port to listen on, 0 picking a free one.
pub const PORT_OR_ZERO: RangeInclusive<u64> = 0..=65_535;
/// A mission role (players, then the spectator).
pub const ROLE: RangeInclusive<u64> = 0..=16;

/// The largest side of a world (Minecraft's build height).
pub const MAX_WORLD_SIDE: usize = 256;

/// Parses `--world-size WxHxD` (or `W,H,D`), every side from 3 to
/// [`MAX_WORLD_SIDE`].
pub fn world_size(text: &str) -> Result<WorldSize, String> {
    let expected =
        format!("expected WxHxD with every side from 3 to {MAX_WORLD_SIDE}, e.g. 11x10x10");
    let dims: Vec<usize> = text
        .split(['x', ','])
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{text:?} is not WxHxD; {expected}"))?;
    match dims[..] {
        [w, h, d] if [w, h, d].iter().all(|s| (3..=MAX_WORLD_SIDE).contains(s)) => {
            Ok(WorldSize::new(w, h, d))
        }
        _ => Err(format!("{text} is out of range; {expected}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_refuse_what_a_duration_cannot_hold() {
        assert_eq!(
            seconds("0.8").unwrap().duration(),
            Duration::from_millis(800)
        );
        for bad in [
            "nan", "NaN", "inf", "-inf", "-1", "0", "-0", "1e30", "", "soon",
        ] {
            let e = seconds(bad).unwrap_err();
            assert!(e.contains("greater than 0 and at most"), "{bad}: {e}");
        }
        assert!(seconds(&MAX_SECONDS.to_string()).is_ok());
    }

    #[test]
    fn counts_name_their_range() {
        let threads = count::<usize>(THREADS);
        assert_eq!(threads.parse("4"), Ok(4));
        for bad in ["0", "1025", "-1", "1e3", "99999999999999999999999", "two"] {
            let e = threads.parse(bad).unwrap_err();
            assert!(e.contains("from 1 to 1024"), "{bad}: {e}");
        }
        assert_eq!(count::<u16>(PORT).parse("65535"), Ok(65_535));
        assert!(count::<u8>(0..=1000).parse("300").is_err());
    }

    #[test]
    fn world_sizes_are_bounded_on_every_side() {
        assert_eq!(world_size("11x10x10"), Ok(WorldSize::new(11, 10, 10)));
        assert_eq!(world_size("6,6,6"), Ok(WorldSize::new(6, 6, 6)));
        for bad in ["2x10x10", "11x10x100000", "11x10", "axbxc", "11x10x10x1"] {
            assert!(world_size(bad).is_err(), "{bad}");
        }
    }
}
