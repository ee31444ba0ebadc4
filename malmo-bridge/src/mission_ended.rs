//! The MissionEnded document the mod sends on the agent's mission-control port when
//! a mission ends (PROTOCOL.md §5), rendered as the mod's JAXB classes write it.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use crate::mission_init::MALMO_NAMESPACE;
use crate::xml::{Element, Node, ReadError, escape_text};

/// How a mission ended (`MissionResult` in `MissionEnded.xsd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissionEndedStatus {
    /// `ENDED`: every agent quit, or a quit producer fired.
    Ended,
    /// `PLAYER_DIED`.
    PlayerDied,
    /// `AGENT_QUIT`.
    AgentQuit,
    /// `MOD_FAILED_TO_INSTANTIATE_HANDLERS`.
    ModFailedToInstantiateHandlers,
    /// `MOD_HAS_NO_WORLD_LOADED`.
    ModHasNoWorldLoaded,
    /// `MOD_FAILED_TO_CREATE_WORLD`.
    ModFailedToCreateWorld,
    /// `MOD_HAS_NO_AGENT_AVAILABLE`.
    ModHasNoAgentAvailable,
    /// `MOD_SERVER_UNREACHABLE`.
    ModServerUnreachable,
    /// `MOD_SERVER_ABORTED_MISSION`.
    ModServerAbortedMission,
    /// `MOD_CONNECTION_FAILED`: a role > 0 could not join role 0's server.
    ModConnectionFailed,
    /// `MOD_CRASHED`.
    ModCrashed,
}

impl MissionEndedStatus {
    /// Every status, in the schema's order.
    pub const ALL: [MissionEndedStatus; 11] = [
        Self::Ended,
        Self::PlayerDied,
        Self::AgentQuit,
        Self::ModFailedToInstantiateHandlers,
        Self::ModHasNoWorldLoaded,
        Self::ModFailedToCreateWorld,
        Self::ModHasNoAgentAvailable,
        Self::ModServerUnreachable,
        Self::ModServerAbortedMission,
        Self::ModConnectionFailed,
        Self::ModCrashed,
    ];

    /// The status as written in the document.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ended => "ENDED",
            Self::PlayerDied => "PLAYER_DIED",
            Self::AgentQuit => "AGENT_QUIT",
            Self::ModFailedToInstantiateHandlers => "MOD_FAILED_TO_INSTANTIATE_HANDLERS",
            Self::ModHasNoWorldLoaded => "MOD_HAS_NO_WORLD_LOADED",
            Self::ModFailedToCreateWorld => "MOD_FAILED_TO_CREATE_WORLD",
            Self::ModHasNoAgentAvailable => "MOD_HAS_NO_AGENT_AVAILABLE",
            Self::ModServerUnreachable => "MOD_SERVER_UNREACHABLE",
            Self::ModServerAbortedMission => "MOD_SERVER_ABORTED_MISSION",
            Self::ModConnectionFailed => "MOD_CONNECTION_FAILED",
            Self::ModCrashed => "MOD_CRASHED",
        }
    }

    /// Whether MalmoPython reports this end as an error ("Mission ended
    /// abnormally"): every status but `ENDED` and `PLAYER_DIED`.
    pub fn is_abnormal(self) -> bool {
        !matches!(self, Self::Ended | Self::PlayerDied)
    }
}

impl fmt::Display for MissionEndedStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MissionEndedStatus {
    type Err = MissionEndedError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| MissionEndedError::UnknownStatus(s.to_owned()))
    }
}

/// An `xs:decimal` kept as written (JAXB writes `BigDecimal`s, whose text a float
/// would not reproduce): an optional sign, digits, an optional fraction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decimal(String);

/// Text that is not an `xs:decimal`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a decimal number: {0:?}")]
pub struct BadDecimal(pub String);

impl Decimal {
    /// The value as a float.
    pub fn value(&self) -> f64 {
        self.0.parse().expect("a checked decimal parses as f64")
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Decimal {
    type Err = BadDecimal;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
            return Err(BadDecimal(s.to_owned()));
        }
        Ok(Self(s.to_owned()))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One dimension of the final reward.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RewardValue {
    /// The reward dimension (`xs:int`, at least 0).
    pub dimension: u32,
    /// The reward.
    pub value: Decimal,
}

/// The final reward (`Reward`), one value per dimension. MBAG missions have no
/// reward producers, so the mod leaves it out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reward {
    /// The values, at least one.
    pub values: Vec<RewardValue>,
}

/// Per frame type, how much video the mod sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VideoData {
    /// `VIDEO`, `DEPTH_MAP`, `LUMINANCE` or `COLOUR_MAP`.
    pub frame_type: String,
    /// Frames sent.
    pub frames_sent: i32,
    /// Average frames per second sent.
    pub average_fps_sent: Decimal,
    /// Frames received, if reported.
    pub frames_received: Option<i32>,
    /// Frames written, if reported.
    pub frames_written: Option<i32>,
}

/// `MissionDiagnostics`; required, since MalmoPython treats a MissionEnded without
/// it as a parse error and leaves the mission running.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct MissionDiagnostics {
    /// One entry per video channel.
    pub video: Vec<VideoData>,
}

/// A MissionEnded document.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MissionEnded {
    /// How the mission ended.
    pub status: MissionEndedStatus,
    /// The quit code and error text joined with `;\n`; often empty.
    pub human_readable_status: String,
    /// The final reward, if any.
    pub reward: Option<Reward>,
    /// Video statistics.
    pub diagnostics: MissionDiagnostics,
}

/// Why a MissionEnded cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissionEndedError {
    /// The document is not readable as a MissionEnded.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// `Status` is none of the schema's values.
    #[error("MissionEnded/Status: unknown status {0:?}")]
    UnknownStatus(String),
}

impl MissionEnded {
    /// A normal end (`ENDED`, no text, no reward, no video).
    pub fn ended() -> Self {
        Self {
            status: MissionEndedStatus::Ended,
            human_readable_status: String::new(),
            reward: None,
            diagnostics: MissionDiagnostics::default(),
        }
    }

    /// The document as the mod's JAXB classes write it: one line, standalone
    /// declaration, `<HumanReadableStatus></HumanReadableStatus>` when empty and
    /// `<MissionDiagnostics/>` without video entries.
    pub fn render(&self) -> String {
        let mut out = String::from(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#);
        let _ = write!(
            out,
            r#"<MissionEnded xmlns="{MALMO_NAMESPACE}"><Status>{}</Status><HumanReadableStatus>{}</HumanReadableStatus>"#,
            self.status,
            escape_text(&self.human_readable_status),
        );
        if let Some(reward) = &self.reward {
            out.push_str("<Reward>");
            for v in &reward.values {
                let _ = write!(
                    out,
                    r#"<Value dimension="{}" value="{}"/>"#,
                    v.dimension, v.value
                );
            }
            out.push_str("</Reward>");
        }
        if self.diagnostics.video.is_empty() {
            out.push_str("<MissionDiagnostics/>");
        } else {
            out.push_str("<MissionDiagnostics>");
            for video in &self.diagnostics.video {
                let _ = write!(
                    out,
                    r#"<VideoData frameType="{}" framesSent="{}" averageFpsSent="{}""#,
                    escape_text(&video.frame_type),
                    video.frames_sent,
                    video.average_fps_sent,
                );
                if let Some(n) = video.frames_received {
                    let _ = write!(out, r#" framesReceived="{n}""#);
                }
                if let Some(n) = video.frames_written {
                    let _ = write!(out, r#" framesWritten="{n}""#);
                }
                out.push_str("/>");
            }
            out.push_str("</MissionDiagnostics>");
        }
        out.push_str("</MissionEnded>");
        out
    }

    /// Reads a MissionEnded document.
    pub fn parse(xml: &str) -> Result<Self, MissionEndedError> {
        let element = Element::parse_document(xml)?;
        let root = Node::root(&element, "MissionEnded")?;
        let status = root.child_text("Status")?.trim().parse()?;
        let human_readable_status = root.child_text("HumanReadableStatus")?.to_owned();
        let reward = match root.optional_child("Reward") {
            Some(reward) => Some(Reward {
                values: reward
                    .children("Value")
                    .iter()
                    .map(|v| {
                        Ok(RewardValue {
                            dimension: v.parsed_attribute("dimension", "a non-negative integer")?,
                            value: v.parsed_attribute("value", "a decimal number")?,
                        })
                    })
                    .collect::<Result<_, ReadError>>()?,
            }),
            None => None,
        };
        let video = root
            .child("MissionDiagnostics")?
            .children("VideoData")
            .iter()
            .map(|v| {
                let optional = |name| match v.element.attribute(name) {
                    Some(_) => v.parsed_attribute(name, "an integer").map(Some),
                    None => Ok(None),
                };
                Ok(VideoData {
                    frame_type: v.attribute("frameType")?.to_owned(),
                    frames_sent: v.parsed_attribute("framesSent", "an integer")?,
                    average_fps_sent: v.parsed_attribute("averageFpsSent", "a decimal number")?,
                    frames_received: optional("framesReceived")?,
                    frames_written: optional("framesWritten")?,
                })
            })
            .collect::<Result<_, ReadError>>()?;
        Ok(Self {
            status,
            human_readable_status,
            reward,
            diagnostics: MissionDiagnostics { video },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_follow_xs_decimal() {
        for good in ["0", "-1.5", "+2.", ".5", "19.87"] {
            assert_eq!(good.parse::<Decimal>().unwrap().as_str(), good);
        }
        for bad in ["", ".", "1e5", "NaN", "1.2.3", "--1"] {
            assert!(bad.parse::<Decimal>().is_err(), "{bad}");
        }
        assert_eq!("-0.25".parse::<Decimal>().unwrap().value(), -0.25);
    }

    #[test]
    fn the_normal_end_is_the_mods_bytes() {
        let text = MissionEnded::ended().render();
        assert!(text.ends_with("<Status>ENDED</Status><HumanReadableStatus></HumanReadableStatus><MissionDiagnostics/></MissionEnded>"));
        assert_eq!(MissionEnded::parse(&text).unwrap(), MissionEnded::ended());
    }
}
