//! The golden episode file format: gzip JSON Lines with a header, step lines and a
//! footer (`../shared/reference/golden/README.md`).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A golden file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The file cannot be opened or read (including a corrupt gzip stream).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A line is not valid JSON or a field has the wrong shape.
    #[error("{path}:{line}: field `{field}`: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Path of the field within the line.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The file's structure is wrong (missing header or footer, ...).
    #[error("{path}: {message}")]
    Structure {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A float that the goldens may write as `"NaN"`, `"Infinity"` or `"-Infinity"`.
pub use crate::jsonl::Float as JsonFloat;

/// Base64 of a raw byte array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct B64(pub Vec<u8>);

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(Self)
            .map_err(|e| serde::de::Error::custom(format!("bad base64: {e}")))
    }
}

/// Block ids and states of a world-sized array.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenBlocks {
    /// C-order uint8 ids.
    pub blocks: B64,
    /// C-order uint8 states.
    pub block_states: B64,
}

/// A recorded environment state.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenState {
    /// C-order uint8 ids.
    pub blocks: B64,
    /// C-order uint8 states.
    pub block_states: B64,
    /// C-order int8 player indices (-1 = nobody).
    pub last_interacted: B64,
    /// Feet positions.
    pub player_locations: Vec<[f64; 3]>,
    /// Per player, 36 slots of `[block_id, count]`.
    pub inventories: Vec<Vec<[i64; 2]>>,
    /// The env timestep.
    pub timestep: u64,
    /// No-progress counter.
    pub timesteps_with_no_progress: u64,
    /// Per player best goal percentage.
    pub maximum_goal_percentages: Vec<JsonFloat>,
}

/// A recorded observation.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenObs {
    /// `(6, W, H, D)` uint8, base64.
    pub world_obs: B64,
    /// `(P, 10)` counts.
    pub inventory_obs: Vec<Vec<i64>>,
    /// The timestep.
    pub timestep: i64,
}

/// Recorded masks: sorted valid flat indices.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenMasks {
    /// The C implementation without line of sight.
    pub no_los: Vec<usize>,
    /// The C implementation with line of sight.
    pub los: Vec<usize>,
    /// The Python implementation, where it differs from `no_los`.
    #[serde(default)]
    pub no_los_python: Option<Vec<usize>>,
}

/// A recorded per-player info dict.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenInfo {
    /// Matching cells.
    pub goal_similarity: JsonFloat,
    /// The player's goal percentage.
    pub goal_percentage: JsonFloat,
    /// Goal-dependent reward.
    pub goal_dependent_reward: JsonFloat,
    /// Goal-independent reward.
    pub goal_independent_reward: JsonFloat,
    /// Own reward.
    pub own_reward: JsonFloat,
    /// own_reward_prop.
    pub own_reward_prop: JsonFloat,
    /// Processed action tuple.
    pub attempted_action: [i64; 3],
    /// Effective action tuple.
    pub action: [i64; 3],
    /// Whether the action was correct.
    pub action_correct: bool,
}

/// One player's recorded action.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenAction {
    /// The tuple passed to `step`.
    pub tuple: [i64; 3],
    /// Its flat index, if the type is in the flat space.
    pub flat: Option<usize>,
}

/// One recorded viewpoint search.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenAttempt {
    /// Who acted.
    pub player: usize,
    /// 1 = place, 2 = break.
    pub action_type: u8,
    /// Target cell.
    pub location: [i32; 3],
    /// Number of candidates.
    pub num_candidates: usize,
    /// Chosen index.
    #[serde(default)]
    pub chosen: Option<usize>,
    /// Seed passed to `random.Random`.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Chosen viewpoint.
    #[serde(default)]
    pub viewpoint: Option<[f64; 3]>,
    /// Chosen click point.
    #[serde(default)]
    pub click: Option<[f64; 3]>,
}

/// A reference agent's declaration in the header.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenAgent {
    /// Agent class or driver name.
    pub agent: String,
    /// Its config.
    #[serde(default)]
    pub agent_config: Value,
    /// Its seed.
    #[serde(default)]
    pub agent_seed: Option<u64>,
}

/// The header line.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenHeader {
    /// Always 1.
    pub format_version: u32,
    /// Episode id.
    pub episode_id: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// The full config.
    pub env_config: Value,
    /// Global timestep during the episode.
    pub global_timestep: u64,
    /// Size of the flat action space.
    pub num_flat_actions: usize,
    /// Per player agents.
    pub agents: Vec<GoldenAgent>,
    /// Palette column.
    pub palette_x: i32,
    /// The goal.
    pub goal: GoldenBlocks,
    /// Partial-credit similarity at reset.
    pub initial_goal_similarities: Vec<JsonFloat>,
    /// State after reset.
    pub initial_state: GoldenState,
    /// Observations after reset.
    pub initial_obs: Vec<GoldenObs>,
    /// Masks of the initial observations.
    pub initial_masks: Vec<GoldenMasks>,
    /// Infos returned by reset.
    pub initial_infos: Vec<GoldenInfo>,
}

/// One step line.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenStep {
    /// 0-based step index.
    pub t: usize,
    /// Env timestep when the step started.
    pub timestep_before: u64,
    /// Per player actions.
    pub actions: Vec<GoldenAction>,
    /// Per player rewards.
    pub rewards: Vec<JsonFloat>,
    /// Per player dones.
    pub dones: Vec<bool>,
    /// Per player infos.
    pub infos: Vec<GoldenInfo>,
    /// The env's viewpoint searches.
    #[serde(default)]
    pub place_break_attempts: Vec<GoldenAttempt>,
    /// State after the step.
    pub state: GoldenState,
    /// Observations (on some steps).
    #[serde(default)]
    pub obs: Option<Vec<GoldenObs>>,
    /// Masks (on the same steps).
    #[serde(default)]
    pub masks: Option<Vec<GoldenMasks>>,
    /// Reference agents' internals, per player (null for drivers).
    #[serde(default)]
    pub agent_info: Option<Vec<Value>>,
}

/// The footer line.
#[derive(Clone, Debug, Deserialize)]
pub struct GoldenFooter {
    /// Number of steps.
    pub length: usize,
    /// Whether the last step was done.
    pub done: bool,
    /// Per player reward sums.
    pub total_rewards: Vec<JsonFloat>,
    /// Final goal similarity.
    pub final_goal_similarity: JsonFloat,
    /// Final per player goal percentages.
    pub final_goal_percentage: Vec<JsonFloat>,
    /// Whether world == goal at the end.
    pub goal_completed: bool,
    /// The reference's `calculate_metrics` output.
    pub metrics: Value,
}

/// A whole golden episode.
#[derive(Clone, Debug)]
pub struct GoldenEpisode {
    /// Where it was read from.
    pub path: PathBuf,
    /// The header.
    pub header: GoldenHeader,
    /// The steps, in order.
    pub steps: Vec<GoldenStep>,
    /// The footer.
    pub footer: GoldenFooter,
}

fn parse_line<T: DeserializeOwned>(
    path: &Path,
    line_no: usize,
    v: &Value,
) -> Result<T, GoldenError> {
    serde_path_to_error::deserialize(v).map_err(|e| GoldenError::Field {
        path: path.to_owned(),
        line: line_no,
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

impl GoldenEpisode {
    /// Reads a `.jsonl.gz` (or plain `.jsonl`) golden episode.
    pub fn read(path: &Path) -> Result<Self, GoldenError> {
        let io = |source| GoldenError::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(file)))
        } else {
            Box::new(std::io::BufReader::new(file))
        };
        let mut header = None;
        let mut steps = Vec::new();
        let mut footer = None;
        for (i, line) in reader.lines().enumerate() {
            let line_no = i + 1;
            let line = line.map_err(io)?;
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(&line).map_err(|e| GoldenError::Field {
                path: path.to_owned(),
                line: line_no,
                field: String::new(),
                message: format!("not valid JSON: {e}"),
            })?;
            let structure = |message: String| GoldenError::Structure {
                path: path.to_owned(),
                message: format!("line {line_no}: {message}"),
            };
            if footer.is_some() {
                return Err(structure("content after the footer".into()));
            }
            match value.get("kind").and_then(Value::as_str) {
                Some("header") if header.is_none() && steps.is_empty() => {
                    header = Some(parse_line::<GoldenHeader>(path, line_no, &value)?);
                }
                Some("step") if header.is_some() => {
                    steps.push(parse_line::<GoldenStep>(path, line_no, &value)?);
                }
                Some("footer") if header.is_some() => {
                    footer = Some(parse_line::<GoldenFooter>(path, line_no, &value)?);
                }
                Some(kind) => return Err(structure(format!("unexpected line kind {kind:?}"))),
                None => return Err(structure("line has no \"kind\"".into())),
            }
        }
        let header = header.ok_or_else(|| GoldenError::Structure {
            path: path.to_owned(),
            message: "no header line (empty or truncated file)".into(),
        })?;
        let footer = footer.ok_or_else(|| GoldenError::Structure {
            path: path.to_owned(),
            message: format!(
                "no footer after {} step lines (truncated file?)",
                steps.len()
            ),
        })?;
        if header.format_version != 1 {
            return Err(GoldenError::Structure {
                path: path.to_owned(),
                message: format!(
                    "format_version {} is not supported (expected 1)",
                    header.format_version
                ),
            });
        }
        Ok(Self {
            path: path.to_owned(),
            header,
            steps,
            footer,
        })
    }
}

/// Lists golden episode files: files as given, folders expanded to their
/// `*.jsonl.gz` / `*.jsonl` files (recursively), sorted.
pub fn collect_episode_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, GoldenError> {
    crate::jsonl::collect_files(paths).map_err(|(path, source)| GoldenError::Io { path, source })
}
