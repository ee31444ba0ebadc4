//! The Mission XML that MBAG generates, as a typed value (MBAG_INTEGRATION.md §2).
//!
//! A [`Mission`] holds everything the reference's `_get_mission_spec_xml` output
//! depends on: the goal and current block grids (world-sized, `[x][y][z]`), the
//! players with their kind (AI or human) and name, the optional spectator with its
//! video size, and whether walls restrict the players (`restrict_players`). The
//! palette of limited-blocks mode is part of the grids (column `x = W-1`), since
//! the XML sees it only as blocks. The reference has no time limit and no quit
//! producers, so neither has this type.
//!
//! The document for one role ([`MissionDocument`]) adds `forceReset`, `true` only
//! for role 0. It renders byte for byte as the reference does
//! ([`MissionDocument::render`], in `render.rs`) and parses back
//! ([`MissionDocument::parse`], in `parse.rs`); a parsed document renders to an
//! equivalent document, and anything else is a [`MissionError`] naming where.

mod parse;
mod render;

use std::fmt;
use std::str::FromStr;

use crate::grid::{BlockGrid, WorldSize};
use crate::xml::ReadError;

/// A mission role: the index of an AgentSection, and of the client that plays it.
/// Players come first (player i is role i), then the spectator if there is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Role(pub u32);

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Whether a client builds a new world for the mission (`forceReset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorldReset {
    /// `forceReset="true"`: role 0, whose client hosts the server.
    Force,
    /// `forceReset="false"`: every other role, which joins role 0's world.
    Keep,
}

impl WorldReset {
    /// What the reference sets for a role: a new world for role 0 only.
    pub fn for_role(role: Role) -> Self {
        if role.0 == 0 { Self::Force } else { Self::Keep }
    }

    fn as_xml(self) -> &'static str {
        match self {
            Self::Force => "true",
            Self::Keep => "false",
        }
    }
}

/// Who controls a player, which decides its observation producers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlayerKind {
    /// An AI agent: no human-event or system observations, and no chat unless
    /// asked for ([`Player::with_chat`]; the reference's AIs have none).
    Ai,
    /// A human at the keyboard: also `ObservationFromChat`, `ObservationFromHuman`
    /// and `ObservationFromSystem`.
    Human,
}

/// A Minecraft player name: 1 to 16 characters from `[A-Za-z0-9_]`, Minecraft's
/// rule. MBAG uses names in `/give <name>` and `/clear <name>` commands, and the
/// mod's skins are keyed by the names `human` and `assistant`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlayerName(String);

/// A string that is not a valid [`PlayerName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad player name {0:?}: needs 1 to 16 characters from [A-Za-z0-9_]")]
pub struct BadPlayerName(pub String);

impl PlayerName {
    /// The longest name Minecraft accepts.
    pub const MAX_LEN: usize = 16;

    /// A name, checked.
    pub fn new(name: &str) -> Result<Self, BadPlayerName> {
        let valid = (1..=Self::MAX_LEN).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if valid {
            Ok(Self(name.to_owned()))
        } else {
            Err(BadPlayerName(name.to_owned()))
        }
    }

    /// The reference's rule: a configured name cut to its first 16 characters.
    pub fn truncated(name: &str) -> Result<Self, BadPlayerName> {
        let cut: String = name.chars().take(Self::MAX_LEN).collect();
        Self::new(&cut).map_err(|_| BadPlayerName(name.to_owned()))
    }

    /// The reference's name for a player without one: `player_{index}`.
    pub fn default_for(index: usize) -> Self {
        Self::truncated(&format!("player_{index}")).expect("`player_<digits>` is a valid name")
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlayerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PlayerName {
    type Err = BadPlayerName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// One player's AgentSection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Player {
    /// The in-game name.
    pub name: PlayerName,
    /// AI or human.
    pub kind: PlayerKind,
    /// Whether the section has `ObservationFromChat`: private so that a human
    /// always has it ([`Player::observes_chat`]).
    chat: bool,
}

impl Player {
    /// An AI player, as the reference writes it (no chat observations).
    pub fn ai(name: PlayerName) -> Self {
        Self {
            name,
            kind: PlayerKind::Ai,
            chat: false,
        }
    }

    /// A human player.
    pub fn human(name: PlayerName) -> Self {
        Self {
            name,
            kind: PlayerKind::Human,
            chat: true,
        }
    }

    /// The same player observing chat (`ObservationFromChat`, which also
    /// reports titles): an AI's own connection then hears what the other
    /// players say. Humans observe chat anyway. The reference's missions never
    /// give an AI chat; the section is its AI section with this one producer
    /// added after `ObservationFromFullStats`, where the human section has it.
    pub fn with_chat(mut self) -> Self {
        self.chat = true;
        self
    }

    /// Whether the player observes chat: every human, and AIs
    /// [`with_chat`](Self::with_chat).
    pub fn observes_chat(&self) -> bool {
        self.chat || self.kind == PlayerKind::Human
    }
}

/// The size of the spectator's video frames. Malmo refuses a width not divisible
/// by 4 or a height not divisible by 2 (`MISSION_BAD_VIDEO_REQUEST`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VideoSize {
    width: u32,
    height: u32,
}

/// A video size Malmo would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("video size {width}x{height}: width must be a positive multiple of 4, height of 2")]
pub struct BadVideoSize {
    /// Requested width.
    pub width: u32,
    /// Requested height.
    pub height: u32,
}

impl VideoSize {
    /// The reference's spectator video, 1920×1080.
    pub const FULL_HD: VideoSize = VideoSize {
        width: 1920,
        height: 1080,
    };

    /// A size, checked as Malmo checks it.
    pub fn new(width: u32, height: u32) -> Result<Self, BadVideoSize> {
        if width == 0 || height == 0 || !width.is_multiple_of(4) || !height.is_multiple_of(2) {
            return Err(BadVideoSize { width, height });
        }
        Ok(Self { width, height })
    }

    /// Frame width in pixels.
    pub fn width(self) -> u32 {
        self.width
    }

    /// Frame height in pixels.
    pub fn height(self) -> u32 {
        self.height
    }
}

/// The spectator's AgentSection (the reference's `use_spectator`): a camera named
/// `spectator` with a `VideoProducer` and no observation producers. It has no
/// `MissionQuitCommands` either, so `quit` does not end it (MBAG_INTEGRATION.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Spectator {
    /// The video frames it sends.
    pub video: VideoSize,
}

impl Spectator {
    /// The spectator's in-game name.
    pub const NAME: &'static str = "spectator";
}

impl Default for Spectator {
    /// The reference's spectator: 1920×1080 video.
    fn default() -> Self {
        Self {
            video: VideoSize::FULL_HD,
        }
    }
}

/// Whether walls keep the players in the build area (the reference's
/// `malmo.restrict_players`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Boundary {
    /// No walls (the reference's default).
    #[default]
    Open,
    /// A bedrock wall at `x = W` between the build area and the goal copy, barrier
    /// walls on the other three sides and a barrier ceiling at `y = H + 1`.
    Walled,
}

/// Which text the renderer produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissionLayout {
    /// The reference's string with its leading newline and indentation removed, so
    /// that strict parsers such as xmllint accept it (the `role*.xml` examples).
    Reference,
    /// The reference's string exactly, starting with `\n` and eight spaces before
    /// the XML declaration (the `reference-raw.xml` example).
    ReferenceRaw,
}

/// Why a mission cannot be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissionError {
    /// The goal and current grids differ in size.
    #[error("goal grid is {goal} but the current grid is {current}")]
    GridSizes {
        /// The goal's size.
        goal: WorldSize,
        /// The current grid's size.
        current: WorldSize,
    },
    /// A mission needs at least one player.
    #[error("a mission needs at least one player")]
    NoPlayers,
    /// The document is not readable as a mission.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A `DrawBlock` names a block MBAG does not have.
    #[error("{path}: {name:?} is not an MBAG block")]
    UnknownBlock {
        /// The DrawBlock's path.
        path: String,
        /// Its `type`.
        name: String,
    },
    /// A `DrawBlock` lies neither in the build area nor in the goal copy.
    #[error("{path}: block at ({x}, {y}, {z}) is outside the build area and the goal copy")]
    BlockOutside {
        /// The DrawBlock's path.
        path: String,
        /// x.
        x: i64,
        /// y.
        y: i64,
        /// z.
        z: i64,
    },
    /// Two `DrawBlock`s set the same cell.
    #[error("{path}: cell ({x}, {y}, {z}) is drawn twice")]
    DuplicateBlock {
        /// The second DrawBlock's path.
        path: String,
        /// x.
        x: i64,
        /// y.
        y: i64,
        /// z.
        z: i64,
    },
    /// An AgentSection's handlers are neither a player's nor the spectator's.
    #[error("{path}: handlers [{}] are neither an MBAG player's nor the spectator's", found.join(", "))]
    UnknownAgent {
        /// The AgentSection's path.
        path: String,
        /// Its handler elements.
        found: Vec<String>,
    },
    /// The spectator's section is not the last one.
    #[error("{path}: the spectator must be the last AgentSection")]
    SpectatorNotLast {
        /// The spectator section's path.
        path: String,
    },
    /// A player's name is not valid.
    #[error("{path}: {source}")]
    PlayerName {
        /// The Name element's path.
        path: String,
        /// What is wrong.
        source: BadPlayerName,
    },
    /// The spectator's video size is not valid.
    #[error("{path}: {source}")]
    VideoSize {
        /// The VideoProducer's path.
        path: String,
        /// What is wrong.
        source: BadVideoSize,
    },
}

/// The mission MBAG generates, the same for every role.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mission {
    goal: BlockGrid,
    current: BlockGrid,
    players: Vec<Player>,
    spectator: Option<Spectator>,
    boundary: Boundary,
}

impl Mission {
    /// A mission with these grids and players, no spectator and no walls.
    ///
    /// The grids are kept as Minecraft will build them ([`BlockGrid::as_drawn`]):
    /// the reference cannot draw air at y = 0 or 1, where the flat world has
    /// bedrock and grass, so such cells become bedrock or dirt here. That is what
    /// makes `parse(render(m)) == m` hold for every mission.
    pub fn new(
        goal: &BlockGrid,
        current: &BlockGrid,
        players: Vec<Player>,
    ) -> Result<Self, MissionError> {
        if goal.size() != current.size() {
            return Err(MissionError::GridSizes {
                goal: goal.size(),
                current: current.size(),
            });
        }
        if players.is_empty() {
            return Err(MissionError::NoPlayers);
        }
        Ok(Self {
            goal: goal.as_drawn(),
            current: current.as_drawn(),
            players,
            spectator: None,
            boundary: Boundary::Open,
        })
    }

    /// The same mission with a spectator (or without one).
    pub fn with_spectator(mut self, spectator: Option<Spectator>) -> Self {
        self.spectator = spectator;
        self
    }

    /// The same mission with walls (or without them).
    pub fn with_boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = boundary;
        self
    }

    /// The world size.
    pub fn world_size(&self) -> WorldSize {
        self.current.size()
    }

    /// The goal, drawn beside the build area at `x + W + 1`.
    pub fn goal(&self) -> &BlockGrid {
        &self.goal
    }

    /// The blocks of the build area at the start.
    pub fn current(&self) -> &BlockGrid {
        &self.current
    }

    /// The players; player i has role i.
    pub fn players(&self) -> &[Player] {
        &self.players
    }

    /// The spectator, whose role comes after the players'.
    pub fn spectator(&self) -> Option<Spectator> {
        self.spectator
    }

    /// Whether walls restrict the players.
    pub fn boundary(&self) -> Boundary {
        self.boundary
    }

    /// The number of AgentSections (players plus the spectator): the number of
    /// clients the mission needs.
    pub fn num_agents(&self) -> usize {
        self.players.len() + usize::from(self.spectator.is_some())
    }

    /// Every role of the mission, in order.
    pub fn roles(&self) -> impl Iterator<Item = Role> + use<> {
        (0..self.num_agents() as u32).map(Role)
    }

    /// The spectator's role, if there is a spectator.
    pub fn spectator_role(&self) -> Option<Role> {
        self.spectator.map(|_| Role(self.players.len() as u32))
    }

    /// The document the reference sends for `role`.
    pub fn document(&self, role: Role) -> MissionDocument {
        MissionDocument {
            mission: self.clone(),
            reset: WorldReset::for_role(role),
        }
    }

    /// The Mission XML for `role`, as in the `mission_*.role*.xml` examples.
    pub fn to_xml(&self, role: Role) -> String {
        render::mission_xml(self, WorldReset::for_role(role), MissionLayout::Reference)
    }
}

/// One role's mission document: the mission and its `forceReset`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MissionDocument {
    /// The mission.
    pub mission: Mission,
    /// Whether this role's client builds a new world.
    pub reset: WorldReset,
}

impl MissionDocument {
    /// The XML text, in the reference's layout.
    pub fn render(&self, layout: MissionLayout) -> String {
        render::mission_xml(&self.mission, self.reset, layout)
    }

    /// Reads a mission document: the reference's text (leading whitespace allowed),
    /// the compact form, or the mod's JAXB form inside a MissionInit echo.
    pub fn parse(xml: &str) -> Result<Self, MissionError> {
        let root = crate::xml::Element::parse_document(xml)?;
        parse::mission_document(&root)
    }

    /// The reference layout as an element tree (whitespace text included), which
    /// MissionInit re-serialises.
    pub(crate) fn to_element(&self) -> crate::xml::Element {
        let text = self.render(MissionLayout::Reference);
        crate::xml::Element::parse_document(&text).expect("the renderer writes well-formed XML")
    }

    /// Reads a `<Mission>` element (e.g. the one inside a MissionInit).
    pub(crate) fn from_element(element: &crate::xml::Element) -> Result<Self, MissionError> {
        parse::mission_document(element)
    }
}

impl FromStr for MissionDocument {
    type Err = MissionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn player_names_follow_minecraft_and_the_reference() {
        assert!(PlayerName::new("assistant").is_ok());
        assert!(PlayerName::new("").is_err());
        assert!(PlayerName::new("a b").is_err());
        assert!(PlayerName::new("seventeen_chars_x").is_err());
        assert_eq!(
            PlayerName::truncated("seventeen_chars_x").unwrap().as_str(),
            "seventeen_chars_"
        );
        assert_eq!(PlayerName::default_for(3).as_str(), "player_3");
    }

    #[test]
    fn video_sizes_are_checked_like_malmo() {
        assert!(VideoSize::new(1920, 1080).is_ok());
        assert!(VideoSize::new(1922, 1080).is_err());
        assert!(VideoSize::new(640, 481).is_err());
        assert!(VideoSize::new(0, 2).is_err());
    }

    #[test]
    fn roles_put_the_spectator_last() {
        let size = WorldSize::new(3, 4, 3).unwrap();
        let flat = BlockGrid::flat(size);
        let players = vec![Player::human(PlayerName::default_for(0))];
        let mission = Mission::new(&flat, &flat, players).unwrap();
        assert_eq!(mission.roles().count(), 1);
        let mission = mission.with_spectator(Some(Spectator::default()));
        assert_eq!(mission.spectator_role(), Some(Role(1)));
        assert_eq!(mission.num_agents(), 2);
        assert_eq!(WorldReset::for_role(Role(0)), WorldReset::Force);
        assert_eq!(WorldReset::for_role(Role(2)), WorldReset::Keep);
        assert_eq!(
            Mission::new(&flat, &flat, vec![]),
            Err(MissionError::NoPlayers)
        );
    }
}
