//! The header line: what was played, by whom, from which start.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::codec::{B64, rfc3339_utc};

/// The format tag of every recording's header.
pub const FORMAT: &str = "mbag-recording/1";

/// How the episode came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Humans played in Minecraft with assistants (the daemon's `play`).
    Play,
    /// Minecraft was recorded without agents acting (the daemon's `record`).
    Record,
    /// Agents played in Minecraft while people watched (the daemon's `watch`).
    Watch,
    /// Agents played in the simulator alone.
    Simulated,
    /// Converted from another format (the shared human data).
    Converted,
}

/// Where the episode came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// How it came about.
    pub kind: SourceKind,
    /// A sentence for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whatever identifies the origin (for conversions: the source file and its
    /// header fields that have no place here), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Value>,
}

/// A player's part in the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The builder whose goal it is.
    Human,
    /// The helper who does not see the goal.
    Assistant,
}

/// Who chose a player's actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Controller {
    /// A person in Minecraft.
    Person,
    /// An agent (see [`PlayerEntry::agent`]).
    Agent,
}

/// A network model file used by an agent, pinned by its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// The path as given on the command line.
    pub path: String,
    /// Lower-case hex SHA-256 of the file's bytes.
    pub sha256: String,
}

impl ModelRef {
    /// Hashes a model file (its config JSON and, next to it, the weights are what
    /// an agent spec names; callers hash each file they load).
    pub fn hash_file(path: &Path) -> std::io::Result<Self> {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(Self {
            path: path.display().to_string(),
            sha256: hex(&hasher.finalize()),
        })
    }
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One player of the episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerEntry {
    /// The player index (its position in every per-player list).
    pub index: usize,
    /// Human or assistant.
    pub role: Role,
    /// Person or agent.
    pub controller: Controller,
    /// The agent spec (`heuristic:lowest_block`, `az:PATH?sims=20`, ...), for agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model files of a network agent, with their hashes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelRef>,
    /// Anything else worth knowing about the seat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A world-sized grid of block ids and block states, C order `[x][y][z]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridRecord {
    /// uint8 block ids, base64.
    pub blocks: B64,
    /// uint8 block states, base64.
    pub block_states: B64,
}

/// The state the first step starts from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitialRecord {
    /// uint8 block ids, base64, C order.
    pub blocks: B64,
    /// uint8 block states, base64, C order.
    pub block_states: B64,
    /// int8 last-interacted player per cell (-1 nobody), base64, C order.
    pub li: B64,
    /// Per player, the feet position `[x, y, z]` as the env keeps it (floats).
    pub pos: Vec<[f64; 3]>,
    /// Per player, the 36 inventory slots as `[block_id, count]`.
    pub inventories: Vec<Vec<[i32; 2]>>,
    /// The env timestep before the first step.
    #[serde(default)]
    pub timestep: u64,
}

/// The header: line 1 of every recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The `mbag` version that wrote the file.
    pub mbag_version: String,
    /// When the file was created, RFC 3339 UTC.
    pub created: String,
    /// A name for the episode, unique within a dataset.
    pub episode_id: String,
    /// How the episode came about.
    pub source: Source,
    /// The complete env config (every key filled in), as the reference's dict.
    pub config: Value,
    /// The global timestep reward schedules were evaluated at.
    #[serde(default)]
    pub global_timestep: u64,
    /// Size of the config's flat action space (a check on the layout).
    pub num_flat_actions: usize,
    /// The goal, world-sized.
    pub goal: GridRecord,
    /// The state before the first step.
    pub initial: InitialRecord,
    /// One entry per player.
    pub players: Vec<PlayerEntry>,
}

impl Header {
    /// A header stamped with this build's version and the current time; the other
    /// fields are the caller's.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        episode_id: String,
        source: Source,
        config: Value,
        global_timestep: u64,
        num_flat_actions: usize,
        goal: GridRecord,
        initial: InitialRecord,
        players: Vec<PlayerEntry>,
    ) -> Self {
        Self {
            format: FORMAT.to_owned(),
            mbag_version: env!("CARGO_PKG_VERSION").to_owned(),
            created: rfc3339_utc(super::codec::now_unix_s()),
            episode_id,
            source,
            config,
            global_timestep,
            num_flat_actions,
            goal,
            initial,
            players,
        }
    }
}
