//! Fault specs: one of the [`Faults`] hooks, when it fires and on which client,
//! as a value ([`EmulatorConfig::faults`](super::EmulatorConfig::faults)) or as
//! text (`mbag malmo emulator --fault`, parsed here with [`FromStr`]).
//!
//! # Syntax
//!
//! `KIND[:CHANNEL][=VALUE][@WHEN][#CLIENT]`, for example `exit@2s`,
//! `delay:observations=200ms@10`, `corrupt:mission-control=hostile-length@1s#1`.
//!
//! | kind | channel | value | what the client does |
//! |---|---|---|---|
//! | `drop` | any | — | closes the mission's connection on the channel |
//! | `delay` | `mission-control`, `observations`, `commands` | a duration (required) | waits that long before every write (commands: every line read) from then on |
//! | `truncate` | `mission-control`, `observations` | — | writes the next frame cut off halfway, then closes the connection |
//! | `corrupt` | `mission-control`, `observations` | `garbage` (default) or `hostile-length` | writes garbage instead of the next frame |
//! | `malformed-json` | — | — | sends the next observation as well-framed but cut JSON |
//! | `stop-pings` | — | — | stops pinging mission control |
//! | `exit` | — | — | vanishes mid-mission: every connection closes, no MissionEnded |
//! | `fail-world-creation` | — | a message (optional) | role 0's next world creation fails with `MOD_FAILED_TO_CREATE_WORLD` |
//! | `mod-version` | — | a version (required) | answers control requests as a mod of that Malmo version |
//!
//! Channels are `mission-control`, `observations`, `rewards`, `video` and
//! `commands` ([`FaultChannel`]). The emulator writes no frames on `rewards`
//! (MBAG has no reward handlers) or `video` (no frames are rendered), so only
//! `drop` takes them.
//!
//! `@WHEN` counts from the start of a mission on the client (its echo sent and
//! its data connections open): `@N` after the mission's Nth tick (one tick per
//! observation, 50 ms at the mod's rate; `@0` as it starts), `@2s`, `@1.5s` or
//! `@500ms` that long after it starts. A scheduled fault fires once, in the
//! first mission that lasts until its `WHEN`. Without `@WHEN` a fault is armed
//! as the emulator starts and fires at its first chance (a one-shot fault at the
//! first mission's first tick or write). `fail-world-creation` and
//! `mod-version` act before a mission starts, so they take no `@WHEN`.
//!
//! `#CLIENT` picks the client by its index in the pool (default `#0`, the
//! client of role 0). A value cannot contain `@` or `#`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::faults::{Corruption, FaultChannel, Faults};

/// Every channel, in the order the syntax lists them.
const ALL_CHANNELS: [FaultChannel; 5] = [
    FaultChannel::MissionControl,
    FaultChannel::Observations,
    FaultChannel::Rewards,
    FaultChannel::Video,
    FaultChannel::Commands,
];

/// The channels the emulator delays: those it writes on, and commands, whose
/// lines it reads.
const DELAYED_CHANNELS: [FaultChannel; 3] = [
    FaultChannel::MissionControl,
    FaultChannel::Observations,
    FaultChannel::Commands,
];

/// The channels the emulator writes frames on.
const FRAME_CHANNELS: [FaultChannel; 2] =
    [FaultChannel::MissionControl, FaultChannel::Observations];

/// The message of a `fail-world-creation` given none.
pub const DEFAULT_WORLD_CREATION_FAILURE: &str = "fault injected by the emulator";

/// What a fault does: one [`Faults`] hook with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// [`Faults::drop_connection`]: `drop:CHANNEL`.
    Drop(FaultChannel),
    /// [`Faults::delay`]: `delay:CHANNEL=DURATION`.
    Delay {
        /// The delayed channel.
        channel: FaultChannel,
        /// The delay before every write (commands: every line read).
        by: Duration,
    },
    /// [`Faults::truncate_next_frame`]: `truncate:CHANNEL`.
    Truncate(FaultChannel),
    /// [`Faults::corrupt_next_frame`]: `corrupt:CHANNEL[=garbage|hostile-length]`.
    Corrupt {
        /// The channel whose next frame is replaced.
        channel: FaultChannel,
        /// What is written instead.
        how: Corruption,
    },
    /// [`Faults::malformed_json`]: `malformed-json`.
    MalformedJson,
    /// [`Faults::stop_pings`]: `stop-pings`.
    StopPings,
    /// [`Faults::exit_mid_mission`]: `exit`.
    Exit,
    /// [`Faults::fail_world_creation`] with this message:
    /// `fail-world-creation[=MESSAGE]`.
    FailWorldCreation(String),
    /// [`Faults::answer_as_version`] with this version: `mod-version=VERSION`.
    ModVersion(String),
}

impl FaultKind {
    /// Every kind's name, as the syntax spells it.
    pub const NAMES: [&'static str; 9] = [
        "drop",
        "delay",
        "truncate",
        "corrupt",
        "malformed-json",
        "stop-pings",
        "exit",
        "fail-world-creation",
        "mod-version",
    ];

    /// Its name, as the syntax spells it (one of [`Self::NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Drop(_) => "drop",
            Self::Delay { .. } => "delay",
            Self::Truncate(_) => "truncate",
            Self::Corrupt { .. } => "corrupt",
            Self::MalformedJson => "malformed-json",
            Self::StopPings => "stop-pings",
            Self::Exit => "exit",
            Self::FailWorldCreation(_) => "fail-world-creation",
            Self::ModVersion(_) => "mod-version",
        }
    }

    /// Whether it acts during a mission (and so can be scheduled with `@WHEN`);
    /// world-creation and version faults act before one.
    pub fn acts_in_mission(&self) -> bool {
        !matches!(self, Self::FailWorldCreation(_) | Self::ModVersion(_))
    }

    /// The channel it acts on, if it takes one.
    pub fn channel(&self) -> Option<FaultChannel> {
        match self {
            Self::Drop(channel)
            | Self::Truncate(channel)
            | Self::Delay { channel, .. }
            | Self::Corrupt { channel, .. } => Some(*channel),
            _ => None,
        }
    }

    /// Sets the hook on a client's faults.
    pub fn apply(&self, faults: &Faults) {
        match self {
            Self::Drop(channel) => faults.drop_connection(*channel),
            Self::Delay { channel, by } => faults.delay(*channel, Some(*by)),
            Self::Truncate(channel) => faults.truncate_next_frame(*channel),
            Self::Corrupt { channel, how } => faults.corrupt_next_frame(*channel, *how),
            Self::MalformedJson => faults.malformed_json(),
            Self::StopPings => faults.stop_pings(true),
            Self::Exit => faults.exit_mid_mission(),
            Self::FailWorldCreation(message) => faults.fail_world_creation(Some(message)),
            Self::ModVersion(version) => faults.answer_as_version(Some(version)),
        }
    }
}

/// When a fault is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultWhen {
    /// As the emulator starts (no `@WHEN`): it fires at its first chance.
    EmulatorStart,
    /// After this many ticks of a mission (`@N`; 0: as the mission starts).
    Ticks(u64),
    /// This long after a mission starts (`@2s`, `@500ms`).
    After(Duration),
}

/// One fault to inject: what, when, and on which client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// The hook and its arguments.
    pub kind: FaultKind,
    /// When it is set.
    pub when: FaultWhen,
    /// The client, by its index in the pool.
    pub client: usize,
}

impl FaultSpec {
    /// A fault set on client 0 as the emulator starts.
    pub fn at_start(kind: FaultKind) -> Self {
        Self {
            kind,
            when: FaultWhen::EmulatorStart,
            client: 0,
        }
    }
}

/// Why a fault spec does not parse; each names the part that is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultSpecError {
    /// Nothing was given.
    #[error("empty fault: expected KIND[:CHANNEL][=VALUE][@WHEN][#CLIENT], e.g. exit@2s")]
    Empty,
    /// The kind is none of [`FaultKind::NAMES`].
    #[error("unknown fault kind {kind:?}: expected one of {}", FaultKind::NAMES.join(", "))]
    UnknownKind {
        /// What was given.
        kind: String,
    },
    /// A kind that acts on a channel was given none.
    #[error("{kind} needs a channel: {kind}:CHANNEL, CHANNEL one of {allowed}")]
    MissingChannel {
        /// The kind.
        kind: &'static str,
        /// The channels it takes.
        allowed: String,
    },
    /// A kind that acts on no channel was given one.
    #[error("{kind} takes no channel (got {channel:?})")]
    UnexpectedChannel {
        /// The kind.
        kind: &'static str,
        /// What was given.
        channel: String,
    },
    /// The channel is none of the five.
    #[error("unknown channel {channel:?}: expected one of {}", channel_list(&ALL_CHANNELS))]
    UnknownChannel {
        /// What was given.
        channel: String,
    },
    /// The kind cannot act on that channel (the emulator never writes there).
    #[error(
        "{kind} cannot act on {channel}: the emulator writes nothing there; use one of {allowed}"
    )]
    ChannelNotAllowed {
        /// The kind.
        kind: &'static str,
        /// The channel given, as the syntax spells it.
        channel: &'static str,
        /// The channels it takes.
        allowed: String,
    },
    /// A kind that needs a value was given none.
    #[error("{kind} needs {what}, e.g. {example}")]
    MissingValue {
        /// The kind.
        kind: &'static str,
        /// What the value is.
        what: &'static str,
        /// A spec that gives one.
        example: &'static str,
    },
    /// A kind that takes no value was given one.
    #[error("{kind} takes no =VALUE (got {value:?})")]
    UnexpectedValue {
        /// The kind.
        kind: &'static str,
        /// What was given.
        value: String,
    },
    /// A duration that does not parse.
    #[error("bad duration {text:?}: expected milliseconds (200ms) or seconds (2s, 1.5s)")]
    BadDuration {
        /// What was given.
        text: String,
    },
    /// A corruption that is neither `garbage` nor `hostile-length`.
    #[error("bad corruption {text:?}: expected garbage or hostile-length")]
    BadCorruption {
        /// What was given.
        text: String,
    },
    /// An `@WHEN` that does not parse.
    #[error(
        "bad @WHEN {text:?}: expected ticks into the mission (@30) or a time after it starts (@2s, @500ms)"
    )]
    BadWhen {
        /// What was given.
        text: String,
    },
    /// An `@WHEN` on a fault that acts before any mission.
    #[error(
        "{kind} acts before a mission starts (it is armed as the emulator starts): remove the @{when}"
    )]
    WhenBeforeMission {
        /// The kind.
        kind: &'static str,
        /// The `WHEN` given.
        when: String,
    },
    /// A `#CLIENT` that is not a client index.
    #[error("bad #CLIENT {text:?}: expected a client's index in the pool (#0, #1, ...)")]
    BadClient {
        /// What was given.
        text: String,
    },
}

fn channel_list(channels: &[FaultChannel]) -> String {
    channels
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `2s`, `1.5s` or `200ms`.
fn parse_duration(text: &str) -> Result<Duration, FaultSpecError> {
    let bad = || FaultSpecError::BadDuration {
        text: text.to_owned(),
    };
    if let Some(ms) = text.strip_suffix("ms") {
        if !ms.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    let secs = text.strip_suffix('s').ok_or_else(bad)?;
    // Digits with at most one point: no signs, exponents, `inf` or `NaN`.
    let digits = secs.bytes().filter(u8::is_ascii_digit).count();
    let points = secs.bytes().filter(|&b| b == b'.').count();
    if digits == 0 || digits + points != secs.len() || points > 1 {
        return Err(bad());
    }
    let secs: f64 = secs.parse().map_err(|_| bad())?;
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// The shortest text [`parse_duration`] reads back as `d`.
struct DurationText(Duration);

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 && d.as_secs() > 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}ms", d.as_millis())
        } else {
            write!(f, "{}s", d.as_secs_f64())
        }
    }
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(FaultSpecError::Empty);
        }
        let (s, client) = match s.rsplit_once('#') {
            Some((rest, text)) => {
                let client = text
                    .parse::<usize>()
                    .ok()
                    .filter(|_| text.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| FaultSpecError::BadClient {
                        text: text.to_owned(),
                    })?;
                (rest, client)
            }
            None => (s, 0),
        };
        let (s, when) = match s.rsplit_once('@') {
            Some((rest, text)) => (rest, Some(text)),
            None => (s, None),
        };
        let (head, value) = match s.split_once('=') {
            Some((head, value)) => (head, Some(value)),
            None => (s, None),
        };
        let (name, channel) = match head.split_once(':') {
            Some((name, channel)) => (name, Some(channel)),
            None => (head, None),
        };
        let kind = parse_kind(name, channel, value)?;
        let when = match when {
            None => FaultWhen::EmulatorStart,
            Some(text) if !kind.acts_in_mission() => {
                return Err(FaultSpecError::WhenBeforeMission {
                    kind: kind.name(),
                    when: text.to_owned(),
                });
            }
            Some(text) => parse_when(text)?,
        };
        Ok(Self { kind, when, client })
    }
}

fn parse_when(text: &str) -> Result<FaultWhen, FaultSpecError> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map(FaultWhen::Ticks)
            .map_err(|_| FaultSpecError::BadWhen {
                text: text.to_owned(),
            });
    }
    parse_duration(text)
        .map(FaultWhen::After)
        .map_err(|_| FaultSpecError::BadWhen {
            text: text.to_owned(),
        })
}

fn parse_channel(
    kind: &'static str,
    text: Option<&str>,
    allowed: &[FaultChannel],
) -> Result<FaultChannel, FaultSpecError> {
    let Some(text) = text else {
        return Err(FaultSpecError::MissingChannel {
            kind,
            allowed: channel_list(allowed),
        });
    };
    let channel = ALL_CHANNELS
        .into_iter()
        .find(|c| c.name() == text)
        .ok_or_else(|| FaultSpecError::UnknownChannel {
            channel: text.to_owned(),
        })?;
    if !allowed.contains(&channel) {
        return Err(FaultSpecError::ChannelNotAllowed {
            kind,
            channel: channel.name(),
            allowed: channel_list(allowed),
        });
    }
    Ok(channel)
}

fn parse_kind(
    name: &str,
    channel: Option<&str>,
    value: Option<&str>,
) -> Result<FaultKind, FaultSpecError> {
    let kind = FaultKind::NAMES
        .into_iter()
        .find(|n| *n == name)
        .ok_or_else(|| FaultSpecError::UnknownKind {
            kind: name.to_owned(),
        })?;
    let no_channel = || match channel {
        Some(channel) => Err(FaultSpecError::UnexpectedChannel {
            kind,
            channel: channel.to_owned(),
        }),
        None => Ok(()),
    };
    let no_value = || match value {
        Some(value) => Err(FaultSpecError::UnexpectedValue {
            kind,
            value: value.to_owned(),
        }),
        None => Ok(()),
    };
    let needed = |what, example| {
        value
            .filter(|v| !v.is_empty())
            .ok_or(FaultSpecError::MissingValue {
                kind,
                what,
                example,
            })
    };
    Ok(match kind {
        "drop" => {
            let channel = parse_channel(kind, channel, &ALL_CHANNELS)?;
            no_value()?;
            FaultKind::Drop(channel)
        }
        "delay" => {
            let channel = parse_channel(kind, channel, &DELAYED_CHANNELS)?;
            let by = parse_duration(needed("its duration", "delay:observations=200ms@10")?)?;
            FaultKind::Delay { channel, by }
        }
        "truncate" => {
            let channel = parse_channel(kind, channel, &FRAME_CHANNELS)?;
            no_value()?;
            FaultKind::Truncate(channel)
        }
        "corrupt" => {
            let channel = parse_channel(kind, channel, &FRAME_CHANNELS)?;
            let how = match value {
                None => Corruption::Garbage,
                Some(text) => [Corruption::Garbage, Corruption::HostileLength]
                    .into_iter()
                    .find(|how| how.name() == text)
                    .ok_or_else(|| FaultSpecError::BadCorruption {
                        text: text.to_owned(),
                    })?,
            };
            FaultKind::Corrupt { channel, how }
        }
        "malformed-json" | "stop-pings" | "exit" => {
            no_channel()?;
            no_value()?;
            match kind {
                "malformed-json" => FaultKind::MalformedJson,
                "stop-pings" => FaultKind::StopPings,
                _ => FaultKind::Exit,
            }
        }
        "fail-world-creation" => {
            no_channel()?;
            FaultKind::FailWorldCreation(
                value
                    .filter(|v| !v.is_empty())
                    .unwrap_or(DEFAULT_WORLD_CREATION_FAILURE)
                    .to_owned(),
            )
        }
        _ => {
            no_channel()?;
            FaultKind::ModVersion(
                needed("the version to answer as", "mod-version=0.37.0")?.to_owned(),
            )
        }
    })
}

impl fmt::Display for FaultSpec {
    /// The spec as [`FromStr`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(channel) = self.kind.channel() {
            write!(f, ":{}", channel.name())?;
        }
        match &self.kind {
            FaultKind::Delay { by, .. } => write!(f, "={}", DurationText(*by))?,
            FaultKind::Corrupt { how, .. } => write!(f, "={}", how.name())?,
            FaultKind::FailWorldCreation(text) | FaultKind::ModVersion(text) => {
                write!(f, "={text}")?;
            }
            _ => {}
        }
        match self.when {
            FaultWhen::EmulatorStart => {}
            FaultWhen::Ticks(n) => write!(f, "@{n}")?,
            FaultWhen::After(d) => write!(f, "@{}", DurationText(d))?,
        }
        if self.client != 0 {
            write!(f, "#{}", self.client)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> FaultSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn error(s: &str) -> String {
        match s.parse::<FaultSpec>() {
            Ok(spec) => panic!("{s} parsed as {spec:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_kind_parses_with_its_arguments() {
        let cases = [
            ("drop:rewards", FaultKind::Drop(FaultChannel::Rewards)),
            (
                "delay:commands=1.5s",
                FaultKind::Delay {
                    channel: FaultChannel::Commands,
                    by: Duration::from_millis(1500),
                },
            ),
            (
                "truncate:mission-control",
                FaultKind::Truncate(FaultChannel::MissionControl),
            ),
            (
                "corrupt:observations",
                FaultKind::Corrupt {
                    channel: FaultChannel::Observations,
                    how: Corruption::Garbage,
                },
            ),
            (
                "corrupt:mission-control=hostile-length",
                FaultKind::Corrupt {
                    channel: FaultChannel::MissionControl,
                    how: Corruption::HostileLength,
                },
            ),
            ("malformed-json", FaultKind::MalformedJson),
            ("stop-pings", FaultKind::StopPings),
            ("exit", FaultKind::Exit),
            (
                "fail-world-creation",
                FaultKind::FailWorldCreation(DEFAULT_WORLD_CREATION_FAILURE.into()),
            ),
            (
                "fail-world-creation=disk full",
                FaultKind::FailWorldCreation("disk full".into()),
            ),
            ("mod-version=0.37.0", FaultKind::ModVersion("0.37.0".into())),
        ];
        let mut names: Vec<_> = cases.iter().map(|(_, k)| k.name()).collect();
        names.dedup();
        assert_eq!(names, FaultKind::NAMES, "every kind has a case");
        for (text, kind) in cases {
            assert_eq!(parse(text), FaultSpec::at_start(kind), "{text}");
        }
    }

    #[test]
    fn when_and_client_are_read() {
        let spec = parse("delay:observations=200ms@10");
        assert_eq!(spec.when, FaultWhen::Ticks(10));
        assert_eq!(
            spec.kind,
            FaultKind::Delay {
                channel: FaultChannel::Observations,
                by: Duration::from_millis(200)
            }
        );
        assert_eq!(
            parse("exit@2s").when,
            FaultWhen::After(Duration::from_secs(2))
        );
        assert_eq!(
            parse("exit@500ms").when,
            FaultWhen::After(Duration::from_millis(500))
        );
        assert_eq!(
            parse("exit@0.25s").when,
            FaultWhen::After(Duration::from_millis(250))
        );
        assert_eq!(parse("exit@0").when, FaultWhen::Ticks(0));
        let spec = parse("stop-pings@30#2");
        assert_eq!((spec.when, spec.client), (FaultWhen::Ticks(30), 2));
        assert_eq!(parse("mod-version=0.30.0#1").client, 1);
    }

    #[test]
    fn display_reads_back() {
        for text in [
            "drop:video@3",
            "delay:mission-control=2s@1500ms",
            "delay:observations=1500ms",
            "truncate:observations@0",
            "corrupt:observations=garbage#1",
            "corrupt:mission-control=hostile-length@2s",
            "malformed-json@20",
            "stop-pings@1s",
            "exit",
            "fail-world-creation=disk full#3",
            "mod-version=0.37.0",
        ] {
            let spec = parse(text);
            assert_eq!(spec.to_string(), text);
            assert_eq!(parse(&spec.to_string()), spec);
        }
        let odd = FaultSpec {
            when: FaultWhen::After(Duration::from_micros(1500)),
            ..FaultSpec::at_start(FaultKind::Exit)
        };
        assert_eq!(parse(&odd.to_string()), odd);
    }

    #[test]
    fn malformed_specs_say_what_is_wrong() {
        let cases = [
            ("", "empty fault"),
            (
                "explode",
                "unknown fault kind \"explode\": expected one of drop, delay",
            ),
            (
                "drop",
                "drop needs a channel: drop:CHANNEL, CHANNEL one of mission-control",
            ),
            (
                "drop:obs",
                "unknown channel \"obs\": expected one of mission-control, observations",
            ),
            (
                "exit:observations",
                "exit takes no channel (got \"observations\")",
            ),
            (
                "truncate:commands",
                "truncate cannot act on commands: the emulator writes nothing there; use one of mission-control, observations",
            ),
            ("delay:rewards=1s", "delay cannot act on rewards"),
            (
                "delay:observations",
                "delay needs its duration, e.g. delay:observations=200ms@10",
            ),
            ("delay:observations=", "delay needs its duration"),
            ("delay:observations=fast", "bad duration \"fast\""),
            ("delay:observations=-1s", "bad duration \"-1s\""),
            ("delay:observations=200", "bad duration \"200\""),
            ("drop:video=now", "drop takes no =VALUE (got \"now\")"),
            (
                "corrupt:observations=zeros",
                "bad corruption \"zeros\": expected garbage or hostile-length",
            ),
            (
                "exit@soon",
                "bad @WHEN \"soon\": expected ticks into the mission (@30)",
            ),
            ("exit@", "bad @WHEN \"\""),
            ("exit@-5", "bad @WHEN \"-5\""),
            ("exit@1e3s", "bad @WHEN \"1e3s\""),
            (
                "fail-world-creation@2s",
                "fail-world-creation acts before a mission starts (it is armed as the emulator starts): remove the @2s",
            ),
            (
                "mod-version",
                "mod-version needs the version to answer as, e.g. mod-version=0.37.0",
            ),
            ("exit#one", "bad #CLIENT \"one\": expected a client's index"),
            ("exit#+1", "bad #CLIENT \"+1\""),
        ];
        for (text, message) in cases {
            let got = error(text);
            assert!(got.starts_with(message), "{text:?}: {got}");
        }
    }

    #[test]
    fn apply_sets_the_hook() {
        let faults = Faults::default();
        parse("exit").kind.apply(&faults);
        assert!(faults.take_exit());
        parse("delay:commands=20ms").kind.apply(&faults);
        assert_eq!(
            faults.delay_of(FaultChannel::Commands),
            Some(Duration::from_millis(20))
        );
        parse("corrupt:observations=hostile-length")
            .kind
            .apply(&faults);
        assert_eq!(
            faults.take_corrupt(FaultChannel::Observations),
            Some(Corruption::HostileLength)
        );
        parse("fail-world-creation=no disk").kind.apply(&faults);
        assert_eq!(
            faults.take_fail_world_creation().as_deref(),
            Some("no disk")
        );
        parse("mod-version=0.1.0").kind.apply(&faults);
        assert_eq!(faults.mod_version().as_deref(), Some("0.1.0"));
    }
}
